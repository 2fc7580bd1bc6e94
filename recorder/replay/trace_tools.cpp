// Role: implementation of the trace tools (see trace_tools.h).
#include "recorder/replay/trace_tools.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <algorithm>
#include <variant>
#include <memory>
#include <set>

#include <fmt/format.h>

#include "formats/common/block_tracker.h"
#include "formats/common/pending_output.h"
#include "recorder/replay/read_ahead.h"

namespace tracecorn::replay {
namespace {

using events::EventKind;

std::size_t kind_index(EventKind kind) { return static_cast<std::size_t>(kind); }

// Calls on_event for every event left in `reader`; returns the reader's error.
// (In turn, without a reader thread: stat's and convert's first pass do little
// per event, so a reader thread would only add its copies: stat took 5% longer
// with it.)
template <typename OnEvent>
Status read_each(TraceReader& reader, OnEvent on_event) {
  return read_ahead(reader, on_event, [] { return false; }, /*parallel=*/false);
}

using formats::BlockTracker;

// `error` naming `output`'s final name instead of its temporary one.
Error naming_final(Error error, const formats::PendingOutput& output) {
  const std::string& from = output.write_path();
  const std::string& to = output.path();
  for (std::string* text : {&error.message, &error.source})
    for (std::size_t at = 0; from != to && (at = text->find(from, at)) != std::string::npos; at += to.size())
      text->replace(at, from.size(), to);
  return error;
}

// The sink in front of a converter's writer: gives it the reader's info with
// the level the events show, and, for a target that needs blocks (UCIR) from a
// trace without them, makes them up: each run of fall-through instructions
// becomes a block event before its instructions (the run's events are held
// until it ends: a jump, a syscall, a fault, the end).
class BlockMaker final : public events::Sink {
 public:
  BlockMaker(events::Sink& inner, std::string level, bool make_blocks)
      : inner_(inner), level_(std::move(level)), make_blocks_(make_blocks) {}
  void begin(const events::TraceInfo& info) override {
    events::TraceInfo copy = info;
    copy.level = level_;
    copy.has_initial_state = !copy.initial_registers.empty();
    inner_.begin(copy);
  }
  void on_event(const events::Event& event) override {
    if (!make_blocks_) return inner_.on_event(event);
    switch (event.kind) {
      case EventKind::kInstruction: {
        const auto& i = std::get<events::InstructionEvent>(event.payload);
        if (!held_.empty() && (i.address.value != end_ || i.mode != mode_)) emit_held_block();
        if (held_.empty()) start_ = i.address.value, mode_ = i.mode;
        end_ = i.address.value + i.size;
        code_.insert(code_.end(), i.bytes.begin(), i.bytes.end());
        hold(event, {i.bytes.begin(), i.bytes.end()}, {});
        ++count_;
        return;
      }
      case EventKind::kMemoryRead: case EventKind::kMemoryWrite:
        if (held_.empty()) return inner_.on_event(event);
        return hold(event, {}, {});
      case EventKind::kRegisters: {
        if (held_.empty()) return inner_.on_event(event);
        const auto& r = std::get<events::RegistersEvent>(event.payload);
        return hold(event, {}, {r.changes.begin(), r.changes.end()});
      }
      default:
        emit_held_block();
        return inner_.on_event(event);
    }
  }
  std::string end(const events::TraceSummary& summary) override {
    emit_held_block();
    return inner_.end(summary);
  }

 private:
  struct Held {
    events::Event event;
    std::vector<std::uint8_t> bytes;
    std::vector<events::RegisterValue> registers;
  };
  void hold(const events::Event& event, std::vector<std::uint8_t> bytes, std::vector<events::RegisterValue> registers) {
    held_.push_back(std::make_unique<Held>(Held{event, std::move(bytes), std::move(registers)}));
  }
  // The held instructions as one made-up block, then themselves.
  void emit_held_block() {
    if (held_.empty()) return;
    events::Event block;
    block.sequence = held_.front()->event.sequence;
    block.thread = held_.front()->event.thread;
    block.kind = EventKind::kBlock;
    block.payload = events::BlockEvent{events::GuestAddress{start_}, static_cast<std::uint32_t>(end_ - start_), count_, code_,
                                   mode_};
    inner_.on_event(block);
    for (auto& held : held_) {
      // Point the spans at the held copies.
      if (auto* i = std::get_if<events::InstructionEvent>(&held->event.payload)) i->bytes = held->bytes;
      if (auto* r = std::get_if<events::RegistersEvent>(&held->event.payload)) r->changes = held->registers;
      inner_.on_event(held->event);
    }
    held_.clear();
    code_.clear();
    count_ = 0;
  }
  events::Sink& inner_;
  std::string level_;
  bool make_blocks_;
  std::vector<std::unique_ptr<Held>> held_;
  std::vector<std::uint8_t> code_;
  std::uint64_t start_ = 0, end_ = 0;
  std::uint8_t mode_ = 0;  // the held instructions' instruction set (a change starts a new block)
  std::uint32_t count_ = 0;
};

// A number in C notation (0x for hex); false when `text` is not one whole.
bool parse_number(const std::string& text, std::uint64_t& value) {
  if (text.empty() || text[0] == '-' || text[0] == '+') return false;
  errno = 0;
  char* end = nullptr;
  value = std::strtoull(text.c_str(), &end, 0);
  return errno == 0 && end == text.c_str() + text.size();
}

bool in(std::uint64_t address, const std::pair<std::uint64_t, std::uint64_t>& range) {
  return address >= range.first && address < range.second;
}

}  // namespace

bool EventFilter::matches(const events::Event& event) const {
  if (!kinds[kind_index(event.kind)]) return false;
  if (event.sequence.value < first || event.sequence.value > last) return false;
  if (thread && event.thread.value != *thread) return false;
  if (!range) return true;
  return std::visit(
      [&](const auto& p) {
        using T = std::decay_t<decltype(p)>;
        if constexpr (std::is_same_v<T, events::BlockEvent> || std::is_same_v<T, events::InstructionEvent>)
          return in(p.address.value, *range);
        else if constexpr (std::is_same_v<T, events::MemoryEvent>)
          return in(p.address.value, *range) || (p.pc_known && in(p.pc.value, *range));
        else if constexpr (std::is_same_v<T, events::RegistersEvent> || std::is_same_v<T, events::SyscallEvent>)
          return in(p.pc.value, *range);
        else if constexpr (std::is_same_v<T, events::FaultEvent>)
          return in(p.pc.value, *range) || in(p.address.value, *range);
        else if constexpr (std::is_same_v<T, events::ModuleLoadEvent>)
          return p.start.value < range->second && p.end.value > range->first;
        else if constexpr (std::is_same_v<T, events::SignalEvent>)
          return in(p.interrupted_pc.value, *range) || in(p.handler.value, *range);
        else
          return false;
      },
      event.payload);
}

Expected<EventFilter> parse_event_filter(const std::string& kinds, const std::string& range, const std::string& window,
                                         const std::string& thread) {
  EventFilter filter;
  if (!thread.empty()) {
    std::uint64_t tid = 0;
    if (!parse_number(thread, tid) || tid > 0xffffffffu)
      return make_error(ErrorCode::kInvalidArgument, "--thread: expected a thread id (a number), not \"" + thread + "\"");
    filter.thread = static_cast<std::uint32_t>(tid);
  }
  if (!kinds.empty()) {
    std::fill(std::begin(filter.kinds), std::end(filter.kinds), false);
    std::size_t at = 0;
    while (at <= kinds.size()) {
      const std::size_t comma = std::min(kinds.find(',', at), kinds.size());
      const std::string word = kinds.substr(at, comma - at);
      bool known = false;
      for (std::size_t k = 1; k < events::kEventKindCount; ++k)
        if (word == events::event_kind_name(static_cast<EventKind>(k)) ||
            (word == "mem" && (k == kind_index(EventKind::kMemoryRead) || k == kind_index(EventKind::kMemoryWrite))))
          filter.kinds[k] = known = true;
      if (!known)
        return make_error(ErrorCode::kInvalidArgument,
                          "--kind: unknown event kind \"" + word +
                              "\" (block, insn, read, write, mem, regs, syscall, fault, module, exit, gap, signal, thread, process)");
      at = comma + 1;
    }
  }
  if (!range.empty()) {
    const std::size_t dash = range.find('-');
    std::uint64_t start = 0, end = 0;
    if (dash == std::string::npos || !parse_number(range.substr(0, dash), start) ||
        !parse_number(range.substr(dash + 1), end) || end <= start)
      return make_error(ErrorCode::kInvalidArgument, "--range: expected A-B with A < B, not \"" + range + "\"");
    filter.range = std::pair{start, end};
  }
  if (!window.empty()) {
    const std::size_t dash = window.find('-');
    const std::string from = window.substr(0, dash);
    const std::string to = dash == std::string::npos ? from : window.substr(dash + 1);
    if (!parse_number(from, filter.first) || (!to.empty() && !parse_number(to, filter.last)) ||
        filter.last < filter.first)
      return make_error(ErrorCode::kInvalidArgument, "--events: expected N-M, N- or N, not \"" + window + "\"");
  }
  return filter;
}

std::string level_from_kinds(const bool (&seen)[events::kEventKindCount]) {
  const bool memory = seen[kind_index(EventKind::kMemoryRead)] || seen[kind_index(EventKind::kMemoryWrite)];
  if (seen[kind_index(EventKind::kRegisters)]) return memory ? "full" : "regs";
  if (memory) return "mem";
  if (seen[kind_index(EventKind::kInstruction)]) return "insns";
  return "blocks";
}

Expected<TraceStats> compute_stats(TraceReader& reader, formats::AddressNamer* namer) {
  TraceStats stats;
  struct stat info {};
  if (::stat(reader.path().c_str(), &info) == 0) stats.file_bytes = static_cast<std::uint64_t>(info.st_size);
  BlockTracker blocks;
  std::uint64_t block_instructions = 0;
  if (namer) formats::name_initial_mappings(*namer, reader.info());
  auto on_block = [&](std::uint64_t start, std::uint64_t) {
    if (++stats.block_hits[start] > 1 || !namer) return;
    if (std::string name = namer->name(start); !name.empty()) stats.block_names[start] = std::move(name);
  };
  auto status = read_each(reader, [&](const events::Event& event) {
    const std::size_t k = kind_index(event.kind);
    ++stats.events;
    ++stats.thread_events[event.thread.value];
    if (k < events::kEventKindCount) ++stats.count[k];
    std::uint64_t bytes = 0;
    std::visit(
        [&](const auto& p) {
          using T = std::decay_t<decltype(p)>;
          if constexpr (std::is_same_v<T, events::BlockEvent>) {
            bytes = 8 + 4 + p.bytes.size();
            block_instructions += p.instruction_count;
          } else if constexpr (std::is_same_v<T, events::InstructionEvent>) {
            bytes = 8 + p.bytes.size();
            ++stats.instructions;
          } else if constexpr (std::is_same_v<T, events::MemoryEvent>) {
            bytes = 8 + p.size;
          } else if constexpr (std::is_same_v<T, events::RegistersEvent>) {
            for (const auto& r : p.changes) bytes += 2 + r.size;
          } else if constexpr (std::is_same_v<T, events::SyscallEvent>) {
            bytes = 8 * 8;
            for (const auto& w : p.memory_writes) bytes += 8 + w.bytes.size();
            for (const auto& r : p.register_changes) bytes += 2 + r.size;
            bytes += 8 * p.call_stack.size() + 24 * p.mapping_changes.size();
            ++stats.syscalls[std::string(p.name)];
          } else if constexpr (std::is_same_v<T, events::SignalEvent>) {
            bytes = 8 * 8;
            for (const auto& w : p.frame_writes) bytes += 8 + w.bytes.size();
            for (const auto& r : p.register_changes) bytes += 2 + r.size;
            ++stats.signals[p.signal];
          } else if constexpr (std::is_same_v<T, events::ThreadEvent>) {
            bytes = 16;
            for (const auto& r : p.registers) bytes += 2 + r.size;
          } else {
            bytes = 16;
          }
        },
        event.payload);
    if (k < events::kEventKindCount) stats.bytes[k] += bytes;
    blocks.feed(event, on_block);
    if (namer) formats::name_event_mappings(*namer, event);  // after the event, as the text writer does
  });
  if (!status) return status.error();
  blocks.close(on_block);
  if (!stats.instructions) stats.instructions = block_instructions;
  return stats;
}

Expected<std::vector<std::string>> convert_trace(const std::string& in, const std::string& out, TraceFormat format,
                                                 bool compress, bool progress,
                                                 const formats::ZstdCompression& zstd, int encoder_threads) {
  // Pass 1: the kinds the trace holds (its level, which some writers need).
  bool seen[events::kEventKindCount] = {};
  {
    auto reader = TraceReader::open(in);
    if (!reader) return reader.error();
    if (progress) (*reader)->show_progress("convert: looking at the events");
    auto status = read_each(**reader, [&](const events::Event& event) {
      if (kind_index(event.kind) < events::kEventKindCount) seen[kind_index(event.kind)] = true;
    });
    if (!status) return status.error();
  }
  auto reader = TraceReader::open(in);
  if (!reader) return reader.error();
  if (progress) (*reader)->show_progress("convert");
  // The one writer factory (formats/registry.h) builds the target's writer.
  const formats::FormatDescriptor& target_format = formats::descriptor(format);
  if (target_format.needs_registers && !seen[kind_index(EventKind::kRegisters)])
    return make_error(ErrorCode::kInvalidArgument,
                      "a binary trace needs per-instruction registers: this trace has none (level " +
                          level_from_kinds(seen) + ")",
                      in);
  // Written beside `out` and renamed into place once the whole trace is in it.
  auto output = formats::PendingOutput::create(out);
  if (!output) return output.error();
  const std::string& write_path = output->write_path();
  // Errors about the file being written name `out`, not its temporary name.
  auto naming_out = [&](Error error) { return naming_final(std::move(error), *output); };
  formats::WriterRequest request;
  request.path = write_path;
  request.arch = &(*reader)->arch();
  request.compress_zstd = compress;
  request.zstd = formats::with_zstd_defaults(zstd, seen[kind_index(EventKind::kRegisters)]);
  request.encoder_threads = encoder_threads;
  auto writer = formats::open_writer(target_format.name, std::move(request));
  if (!writer) return naming_out(writer.error());
  // What the target loses of what the trace has.
  std::vector<std::string> lost;
  const Capabilities& target = TraceReader::capabilities(format);
  const Capabilities& source = (*reader)->capabilities();
  for (std::size_t k = 1; k < events::kEventKindCount; ++k)
    if (seen[k] && !target.carries(static_cast<EventKind>(k)))
      lost.push_back(std::string(events::event_kind_name(static_cast<EventKind>(k))) + " events");
  if (source.initial_memory && !target.initial_memory) lost.push_back("the initial memory");
  if (seen[kind_index(EventKind::kMemoryRead)] && source.memory_read_values && !target.memory_read_values &&
      target.carries(EventKind::kMemoryRead))
    lost.push_back("memory read values (rebuilt from the written bytes when read back)");
  if (seen[kind_index(EventKind::kExit)] && source.exit_code && !target.exit_code && target.carries(EventKind::kExit))
    lost.push_back("the exit status (rebuilt from the last exit syscall)");

  const bool make_blocks = target.carries(EventKind::kBlock) && !seen[kind_index(EventKind::kBlock)] &&
                           seen[kind_index(EventKind::kInstruction)];
  for (auto& line : lost) line = std::string(trace_format_name(format)) + " cannot carry " + line;
  if (make_blocks)
    lost.push_back("the trace has no blocks: the " + std::string(trace_format_name(format)) +
                   " blocks are made up (runs of fall-through instructions)");
  BlockMaker relabel(**writer, level_from_kinds(seen), make_blocks);
  const auto status = (*reader)->read_all(relabel);
  writer->reset();  // closed before it is renamed or removed
  if (!status) return naming_out(status.error());
  if (auto complete = (*reader)->check_complete(); !complete) return complete.error();
  if (auto committed = output->commit(); !committed) return committed.error();
  return lost;
}

namespace {

// Reads the trace at `in` into the writer of the export `format` (the format
// registry's drcov or chrome) at `out`, written beside it and renamed into
// place once the whole trace was read. Returns the records the writer wrote.
Expected<std::uint64_t> export_trace(std::string_view format, const std::string& in, const std::string& out,
                                     bool progress) {
  auto reader = TraceReader::open(in);
  if (!reader) return reader.error();
  if (progress) (*reader)->show_progress(std::string(format));
  auto output = formats::PendingOutput::create(out);
  if (!output) return output.error();
  std::uint64_t written = 0;
  formats::WriterRequest request;
  request.path = output->write_path();
  request.arch = &(*reader)->arch();
  request.source_has_instructions = (*reader)->capabilities().carries(EventKind::kInstruction);
  request.source_name = in;
  request.records_written = &written;
  auto writer = formats::open_writer(format, std::move(request));
  if (!writer) return naming_final(writer.error(), *output);
  const auto status = (*reader)->read_all(**writer);
  writer->reset();  // closed before it is renamed or removed
  if (!status) return naming_final(status.error(), *output);
  if (auto complete = (*reader)->check_complete(); !complete) return complete.error();
  if (auto committed = output->commit(); !committed) return committed.error();
  return written;
}

}  // namespace

Expected<std::uint64_t> export_drcov(const std::string& in, const std::string& out, bool progress) {
  return export_trace("drcov", in, out, progress);
}

Expected<std::uint64_t> export_chrome(const std::string& in, const std::string& out, bool progress) {
  return export_trace("chrome", in, out, progress);
}

Expected<std::uint64_t> export_tenet(const std::string& in, const std::string& out, bool progress) {
  return export_trace("tenet", in, out, progress);
}

}  // namespace tracecorn::replay
