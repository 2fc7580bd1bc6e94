// Role: implementation of c_events.h: each payload's fields in tracecorn_event.
#include "recorder/capi/c_events.h"

#include <algorithm>
#include <cstring>
#include <variant>

namespace tracecorn::capi {
namespace {

void fill(const events::BlockEvent& block, tracecorn_event& out, std::string_view&) {
  out.address = out.pc = block.address.value;
  out.size = block.size;
  out.number = block.instruction_count;
}
void fill(const events::InstructionEvent& insn, tracecorn_event& out, std::string_view&) {
  out.address = out.pc = insn.address.value;
  out.size = insn.size;
  out.number = insn.index_in_block;
}
void fill(const events::MemoryEvent& memory, tracecorn_event& out, std::string_view&) {
  out.address = memory.address.value;
  out.size = memory.size;
  out.value = memory.value;
  out.pc = memory.pc_known ? memory.pc.value : 0;
}
void fill(const events::RegistersEvent& registers, tracecorn_event& out, std::string_view&) {
  out.pc = registers.pc.value;
  out.size = static_cast<std::uint32_t>(registers.changes.size());
}
void fill(const events::SyscallEvent& call, tracecorn_event& out, std::string_view& text) {
  out.pc = call.pc.value;
  out.number = call.number;
  out.value = static_cast<std::uint64_t>(call.result);
  text = call.name;
}
void fill(const events::FaultEvent& fault, tracecorn_event& out, std::string_view& text) {
  out.pc = fault.pc.value;
  out.address = fault.address.value;
  out.number = fault.signal;
  text = fault.description;
}
void fill(const events::ModuleLoadEvent& module, tracecorn_event& out, std::string_view& text) {
  out.address = module.start.value;
  out.value = module.end.value;
  out.number = module.load_bias;
  text = module.path;
}
void fill(const events::ExitEvent& exit, tracecorn_event& out, std::string_view&) {
  out.number = exit.by_signal ? 1 : 0;
  out.value = static_cast<std::uint64_t>(static_cast<std::int64_t>(exit.by_signal ? exit.signal : exit.code));
}
void fill(const events::GapEvent& gap, tracecorn_event& out, std::string_view& text) {
  out.value = gap.lost_events;
  text = gap.reason;
}
void fill(const events::SignalEvent& signal, tracecorn_event& out, std::string_view&) {
  out.address = signal.handler.value;
  out.value = static_cast<std::uint64_t>(static_cast<std::int64_t>(signal.code));
  out.pc = signal.interrupted_pc.value;
  out.number = signal.signal;
  out.size = signal.fault ? 1 : 0;
}
void fill(const events::ThreadEvent& change, tracecorn_event& out, std::string_view&) {
  out.value = change.from.value;
  out.number = static_cast<std::uint64_t>(change.change);
}
void fill(const events::ProcessEvent& change, tracecorn_event& out, std::string_view& text) {
  out.value = change.pid;
  out.number = static_cast<std::uint64_t>(change.change);
  text = change.trace;
}

}  // namespace

tracecorn_event c_event_of(const events::Event& event, std::string_view& text) {
  tracecorn_event out{};
  out.kind = static_cast<tracecorn_event_kind>(event.kind);
  out.sequence = event.sequence.value;
  out.thread = event.thread.value;
  text = {};
  std::visit([&](const auto& payload) { fill(payload, out, text); }, event.payload);
  return out;
}

void copy_message(std::string_view message, char* buffer, std::size_t size) noexcept {
  if (!buffer || size == 0) return;
  const std::size_t length = std::min(message.size(), size - 1);
  std::memcpy(buffer, message.data(), length);
  buffer[length] = '\0';
}

}  // namespace tracecorn::capi
