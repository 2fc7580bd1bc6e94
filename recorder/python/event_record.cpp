// Role: EventRecord and the native columns of the Python package (see
// event_record.h). Pure functions over one event; no Python here.
#include "recorder/python/event_record.h"

#include <type_traits>
#include <variant>

namespace tracecorn::python {
namespace {

using events::EventKind;

template <typename T>
std::vector<T> copied(std::span<const T> values) {
  return {values.begin(), values.end()};
}

// The kind-specific fields of `record`, from `payload`.
struct PayloadCopier {
  EventRecord& record;

  void operator()(const events::BlockEvent& block) const {
    record.pc = record.address = block.address.value;
    record.size = block.size;
    record.bytes = copied(block.bytes);
  }
  void operator()(const events::InstructionEvent& instruction) const {
    record.pc = record.address = instruction.address.value;
    record.size = instruction.size;
    record.bytes = copied(instruction.bytes);
  }
  void operator()(const events::MemoryEvent& access) const {
    if (access.pc_known) record.pc = access.pc.value;
    record.address = access.address.value;
    record.size = access.size;
    record.value = access.value;
  }
  void operator()(const events::RegistersEvent& registers) const {
    record.pc = registers.pc.value;
    record.registers = copied(registers.changes);
  }
  void operator()(const events::SyscallEvent& syscall) const {
    record.pc = syscall.pc.value;
    record.number = syscall.number;
    record.name = syscall.name;
    record.args.assign(std::begin(syscall.args), std::end(syscall.args));
    record.result = syscall.result;
    record.stack = copied(syscall.call_stack);
    record.registers = copied(syscall.register_changes);
  }
  void operator()(const events::FaultEvent& fault) const {
    record.pc = fault.pc.value;
    record.address = fault.address.value;
    record.number = fault.signal;
    record.name = fault.description;
  }
  void operator()(const events::ModuleLoadEvent& module) const {
    record.address = module.start.value;
    record.size = module.end.value - module.start.value;
    record.name = module.path;
  }
  void operator()(const events::ExitEvent& exit) const {
    if (exit.by_signal) record.number = static_cast<std::uint64_t>(exit.signal);
    else record.result = exit.code;
  }
  void operator()(const events::GapEvent& gap) const {
    record.size = gap.lost_events;
    record.name = gap.reason;
  }
  void operator()(const events::SignalEvent& signal) const {
    record.pc = signal.interrupted_pc.value;
    record.address = signal.fault_address.value;
    record.number = signal.signal;
    record.result = signal.code;
    record.registers = copied(signal.register_changes);
  }
  void operator()(const events::ThreadEvent& thread) const {
    if (thread.change == events::ThreadChange::kExited) record.result = thread.exit_code;
    record.registers = copied(thread.registers);
  }
  void operator()(const events::ProcessEvent& process) const {
    record.number = process.pid;
    record.name = process.trace;
  }
};

// Whether `kind` is one of `kinds`.
bool one_of(EventKind kind, std::initializer_list<EventKind> kinds) {
  for (EventKind candidate : kinds)
    if (candidate == kind) return true;
  return false;
}

}  // namespace

EventRecord record_of(const events::Event& event, std::uint64_t index, const arch::ArchInfo& arch) {
  EventRecord record;
  record.arch = &arch;
  record.index = index;
  record.sequence = event.sequence.value;
  record.thread = event.thread.value;
  record.kind = event.kind;
  std::visit(PayloadCopier{record}, event.payload);
  return record;
}

std::optional<Column> column_named(std::string_view name) {
  if (name == "index") return Column::kIndex;
  if (name == "seq") return Column::kSequence;
  if (name == "thread") return Column::kThread;
  if (name == "kind") return Column::kKind;
  if (name == "pc") return Column::kPc;
  if (name == "address") return Column::kAddress;
  if (name == "size") return Column::kSize;
  if (name == "value") return Column::kValue;
  return std::nullopt;
}

bool column_defined(Column column, EventKind kind) {
  switch (column) {
    case Column::kIndex:
    case Column::kSequence:
    case Column::kThread:
    case Column::kKind: return true;
    case Column::kPc:
      return one_of(kind, {EventKind::kBlock, EventKind::kInstruction, EventKind::kMemoryRead,
                           EventKind::kMemoryWrite, EventKind::kRegisters, EventKind::kSyscall, EventKind::kFault,
                           EventKind::kSignal});
    case Column::kAddress:
      return one_of(kind, {EventKind::kBlock, EventKind::kInstruction, EventKind::kMemoryRead,
                           EventKind::kMemoryWrite, EventKind::kFault});
    case Column::kSize:
      return one_of(kind, {EventKind::kBlock, EventKind::kInstruction, EventKind::kMemoryRead,
                           EventKind::kMemoryWrite});
    case Column::kValue: return one_of(kind, {EventKind::kMemoryRead, EventKind::kMemoryWrite});
  }
  return false;
}

std::uint64_t column_value(const events::Event& event, std::uint64_t index, Column column) {
  switch (column) {
    case Column::kIndex: return index;
    case Column::kSequence: return event.sequence.value;
    case Column::kThread: return event.thread.value;
    case Column::kKind: return static_cast<std::uint64_t>(event.kind);
    default: break;
  }
  return std::visit(
      [column](const auto& payload) -> std::uint64_t {
        using T = std::decay_t<decltype(payload)>;
        if constexpr (std::is_same_v<T, events::BlockEvent> || std::is_same_v<T, events::InstructionEvent>)
          return column == Column::kSize ? payload.size : payload.address.value;
        else if constexpr (std::is_same_v<T, events::MemoryEvent>)
          return column == Column::kPc      ? (payload.pc_known ? payload.pc.value : ~std::uint64_t{0})
                 : column == Column::kSize  ? payload.size
                 : column == Column::kValue ? payload.value
                                            : payload.address.value;
        else if constexpr (std::is_same_v<T, events::RegistersEvent> || std::is_same_v<T, events::SyscallEvent>)
          return payload.pc.value;
        else if constexpr (std::is_same_v<T, events::FaultEvent>)
          return column == Column::kPc ? payload.pc.value : payload.address.value;
        else if constexpr (std::is_same_v<T, events::SignalEvent>)
          return payload.interrupted_pc.value;
        else
          return 0;  // not reached: column_defined() says no
      },
      event.payload);
}

std::optional<events::EventKind> kind_named(std::string_view name) {
  for (std::size_t kind = 1; kind < events::kEventKindCount; ++kind)
    if (events::event_kind_name(static_cast<EventKind>(kind)) == name) return static_cast<EventKind>(kind);
  return std::nullopt;
}

}  // namespace tracecorn::python
