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

#include "formats/common/pending_output.h"

namespace tracecorn::replay {
namespace {

using events::EventKind;

std::size_t kind_index(EventKind kind) { return static_cast<std::size_t>(kind); }

// Calls on_event for every event left in `reader`; returns the reader's error.
template <typename OnEvent>
Status read_each(TraceReader& reader, OnEvent on_event) {
  for (;;) {
    auto more = reader.next(on_event);
    if (!more) return more.error();
    if (!*more) return ok_status();
  }
}

// Turns instruction events into blocks (runs of fall-through instructions),
// or passes block events through: on_block(start, size) once per block entered.
class BlockTracker {
 public:
  template <typename OnBlock>
  void feed(const events::Event& event, OnBlock on_block) {
    if (event.kind == EventKind::kBlock) {
      const auto& b = std::get<events::BlockEvent>(event.payload);
      have_blocks_ = true;
      on_block(b.address.value, b.size);
    } else if (event.kind == EventKind::kInstruction && !have_blocks_) {
      const auto& i = std::get<events::InstructionEvent>(event.payload);
      if (!open_ || i.address.value != end_) {
        close(on_block);
        open_ = true, start_ = i.address.value;
      }
      end_ = i.address.value + i.size;
    } else if (event.kind == EventKind::kSyscall || event.kind == EventKind::kFault) {
      close(on_block);  // a syscall ends a block
    }
  }
  template <typename OnBlock>
  void close(OnBlock on_block) {
    if (open_) on_block(start_, end_ - start_);
    open_ = false;
  }

 private:
  bool have_blocks_ = false, open_ = false;
  std::uint64_t start_ = 0, end_ = 0;
};

std::string json_string(std::string_view text) {
  std::string out = "\"";
  for (const char c : text) {
    if (c == '"' || c == '\\') out += '\\', out += c;
    else if (static_cast<unsigned char>(c) < 0x20) out += fmt::format("\\u{:04x}", static_cast<int>(c));
    else out += c;
  }
  return out + '"';
}

// An exporter's output: written beside `path` and renamed into place by
// commit() (formats/common/pending_output.h), so that a failed export leaves
// nothing behind.
class File {
 public:
  static Expected<File> open(const std::string& path) {
    auto pending = formats::PendingOutput::create(path);
    if (!pending) return pending.error();
    std::FILE* f = path == "-" ? stdout : std::fopen(pending->write_path().c_str(), "wb");
    if (!f) return make_error(ErrorCode::kIo, std::string("cannot open for writing: ") + std::strerror(errno), path);
    return File(f, std::move(*pending));
  }
  File(File&& other) noexcept : file_(other.file_), output_(std::move(other.output_)) { other.file_ = nullptr; }
  ~File() {
    if (file_ && file_ != stdout) std::fclose(file_);
  }
  void write(std::string_view text) { write(text.data(), text.size()); }
  void write(const void* data, std::size_t size) {
    if (size) std::fwrite(data, 1, size, file_);  // an empty vector's data() may be null
  }
  // Closes the file and renames it into place.
  Status commit() {
    const bool failed = std::ferror(file_) || (file_ != stdout ? std::fclose(file_) != 0 : std::fflush(file_) != 0);
    file_ = nullptr;
    if (failed) return make_error(ErrorCode::kIo, "write failed", output_.path());
    return output_.commit();
  }

 private:
  File(std::FILE* file, formats::PendingOutput output) : file_(file), output_(std::move(output)) {}
  std::FILE* file_;
  formats::PendingOutput output_;
};

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
        if (!held_.empty() && (i.address.value != end_ || i.mode != mode_)) flush();
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
        flush();
        return inner_.on_event(event);
    }
  }
  std::string end(const events::TraceSummary& summary) override {
    flush();
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
  void flush() {
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
        else
          return false;
      },
      event.payload);
}

Expected<EventFilter> parse_event_filter(const std::string& kinds, const std::string& range, const std::string& window) {
  EventFilter filter;
  if (!kinds.empty()) {
    std::fill(std::begin(filter.kinds), std::end(filter.kinds), false);
    std::size_t at = 0;
    while (at <= kinds.size()) {
      const std::size_t comma = std::min(kinds.find(',', at), kinds.size());
      const std::string word = kinds.substr(at, comma - at);
      bool known = false;
      for (std::size_t k = 1; k < 11; ++k)
        if (word == events::event_kind_name(static_cast<EventKind>(k)) ||
            (word == "mem" && (k == kind_index(EventKind::kMemoryRead) || k == kind_index(EventKind::kMemoryWrite))))
          filter.kinds[k] = known = true;
      if (!known)
        return make_error(ErrorCode::kInvalidArgument,
                          "--kind: unknown event kind \"" + word +
                              "\" (block, insn, read, write, mem, regs, syscall, fault, module, exit, gap)");
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

std::string level_from_kinds(const bool (&seen)[11]) {
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
    if (k < 11) ++stats.count[k];
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
          } else {
            bytes = 16;
          }
        },
        event.payload);
    if (k < 11) stats.bytes[k] += bytes;
    blocks.feed(event, on_block);
    if (namer) formats::name_event_mappings(*namer, event);  // after the event, as the text writer does
  });
  if (!status) return status.error();
  blocks.close(on_block);
  if (!stats.instructions) stats.instructions = block_instructions;
  return stats;
}

Expected<std::vector<std::string>> convert_trace(const std::string& in, const std::string& out, TraceFormat format,
                                                 bool compress, bool progress) {
  // Pass 1: the kinds the trace holds (its level, which some writers need).
  bool seen[11] = {};
  {
    auto reader = TraceReader::open(in);
    if (!reader) return reader.error();
    if (progress) (*reader)->show_progress("convert: looking at the events");
    auto status = read_each(**reader, [&](const events::Event& event) {
      if (kind_index(event.kind) < 11) seen[kind_index(event.kind)] = true;
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
  auto naming_out = [&](Error error) {
    for (std::string* text : {&error.message, &error.source})
      for (std::size_t at = 0; write_path != out && (at = text->find(write_path, at)) != std::string::npos;
           at += out.size())
        text->replace(at, write_path.size(), out);
    return error;
  };
  formats::WriterRequest request;
  request.path = write_path;
  request.arch = &(*reader)->arch();
  request.compress_zstd = compress;
  auto writer = formats::open_writer(target_format.name, std::move(request));
  if (!writer) return naming_out(writer.error());
  // What the target loses of what the trace has.
  std::vector<std::string> lost;
  const Capabilities& target = TraceReader::capabilities(format);
  const Capabilities& source = (*reader)->capabilities();
  for (int k = 1; k < 11; ++k)
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

Expected<std::uint64_t> export_drcov(const std::string& in, const std::string& out, bool progress) {
  auto reader = TraceReader::open(in);
  if (!reader) return reader.error();
  if (progress) (*reader)->show_progress("drcov");
  struct Module {
    std::uint64_t start, end;
    std::string path;
  };
  std::vector<Module> modules;
  std::set<std::pair<std::uint64_t, std::uint64_t>> blocks;  // start, size
  BlockTracker tracker;
  auto on_block = [&](std::uint64_t start, std::uint64_t size) { blocks.insert({start, size}); };
  auto status = read_each(**reader, [&](const events::Event& event) {
    if (event.kind == EventKind::kModuleLoad) {
      const auto& m = std::get<events::ModuleLoadEvent>(event.payload);
      modules.push_back({m.start.value, m.end.value, std::string(m.path)});
    }
    tracker.feed(event, on_block);
  });
  if (!status) return status.error();
  tracker.close(on_block);
  if (modules.empty()) {
    // Formats without module events: the initial regions backed by a file, merged per file.
    for (const auto& region : (*reader)->info().initial_memory) {
      if (region.file.empty()) continue;
      if (!modules.empty() && modules.back().path == region.file && modules.back().end == region.start.value)
        modules.back().end = region.start.value + region.size;
      else
        modules.push_back({region.start.value, region.start.value + region.size, region.file});
    }
  }
  auto file = File::open(out);
  if (!file) return file.error();
  std::vector<std::uint8_t> table;
  std::uint64_t count = 0;
  for (const auto& [start, size] : blocks) {
    for (std::size_t id = 0; id < modules.size(); ++id) {
      if (start < modules[id].start || start >= modules[id].end) continue;
      const std::uint32_t offset = static_cast<std::uint32_t>(start - modules[id].start);
      const std::uint16_t length = static_cast<std::uint16_t>(std::min<std::uint64_t>(size, 0xffff));
      const std::uint16_t module = static_cast<std::uint16_t>(id);
      for (int i = 0; i < 4; ++i) table.push_back(static_cast<std::uint8_t>(offset >> (8 * i)));
      for (int i = 0; i < 2; ++i) table.push_back(static_cast<std::uint8_t>(length >> (8 * i)));
      for (int i = 0; i < 2; ++i) table.push_back(static_cast<std::uint8_t>(module >> (8 * i)));
      ++count;
      break;
    }
  }
  file->write(fmt::format("DRCOV VERSION: 2\nDRCOV FLAVOR: drcov\nModule Table: version 2, count {}\n"
                          "Columns: id, base, end, entry, checksum, timestamp, path\n",
                          modules.size()));
  for (std::size_t id = 0; id < modules.size(); ++id)
    file->write(fmt::format(" {}, {:#018x}, {:#018x}, 0x0000000000000000, 0x00000000, 0x00000000, {}\n", id,
                            modules[id].start, modules[id].end, modules[id].path));
  file->write(fmt::format("BB Table: {} bbs\n", count));
  file->write(table.data(), table.size());
  if (auto complete = (*reader)->check_complete(); !complete) return complete.error();
  if (auto committed = file->commit(); !committed) return committed.error();
  return count;
}

Expected<std::uint64_t> export_chrome(const std::string& in, const std::string& out, bool progress) {
  auto reader = TraceReader::open(in);
  if (!reader) return reader.error();
  if (progress) (*reader)->show_progress("chrome");
  auto file = File::open(out);
  if (!file) return file.error();
  const std::uint64_t pid = (*reader)->info().process_id ? (*reader)->info().process_id : 1;  // 1 when not recorded
  std::uint64_t instructions = 0, written = 0;
  file->write("{\"displayTimeUnit\": \"ns\", \"otherData\": {\"timestamps\": \"instructions executed before the event\"},\n"
              "\"traceEvents\": [\n");
  auto emit = [&](const std::string& record) {
    file->write(written++ ? ",\n" : "");
    file->write(record);
  };
  emit(fmt::format("{{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": {}, \"tid\": {}, \"args\": {{\"name\": {}}}}}",
                   pid, pid, json_string((*reader)->info().program.empty() ? in : (*reader)->info().program)));
  auto status = read_each(**reader, [&](const events::Event& event) {
    std::visit(
        [&](const auto& p) {
          using T = std::decay_t<decltype(p)>;
          if constexpr (std::is_same_v<T, events::InstructionEvent>) {
            ++instructions;
          } else if constexpr (std::is_same_v<T, events::BlockEvent>) {
            if (!(*reader)->capabilities().carries(EventKind::kInstruction) || instructions == 0)
              instructions += p.instruction_count;
          } else if constexpr (std::is_same_v<T, events::SyscallEvent>) {
            std::string stack;
            for (const auto pc : p.call_stack) stack += fmt::format("{}\"{:#x}\"", stack.empty() ? "" : ", ", pc);
            emit(fmt::format("{{\"name\": {}, \"cat\": \"syscall\", \"ph\": \"X\", \"ts\": {}, \"dur\": 1, \"pid\": {}, "
                             "\"tid\": {}, \"args\": {{\"number\": {}, \"args\": [{}], \"result\": {}, \"pc\": \"{:#x}\", "
                             "\"event\": {}, \"stack\": [{}]}}}}",
                             json_string(p.name), instructions, pid, pid, p.number, fmt::join(p.args, ", "), p.result,
                             p.pc.value, (*reader)->index() - 1, stack));
          } else if constexpr (std::is_same_v<T, events::FaultEvent>) {
            emit(fmt::format("{{\"name\": {}, \"cat\": \"fault\", \"ph\": \"i\", \"s\": \"p\", \"ts\": {}, \"pid\": {}, "
                             "\"tid\": {}, \"args\": {{\"pc\": \"{:#x}\", \"address\": \"{:#x}\", \"signal\": {}}}}}",
                             json_string(p.description), instructions, pid, pid, p.pc.value, p.address.value, p.signal));
          } else if constexpr (std::is_same_v<T, events::ExitEvent>) {
            emit(fmt::format("{{\"name\": \"exit\", \"cat\": \"process\", \"ph\": \"i\", \"s\": \"p\", \"ts\": {}, "
                             "\"pid\": {}, \"tid\": {}, \"args\": {{\"code\": {}, \"by_signal\": {}}}}}",
                             instructions, pid, pid, p.code, p.by_signal ? "true" : "false"));
          }
        },
        event.payload);
  });
  if (!status) return status.error();
  file->write("\n]}\n");
  if (auto complete = (*reader)->check_complete(); !complete) return complete.error();
  if (auto committed = file->commit(); !committed) return committed.error();
  return written;
}

}  // namespace tracecorn::replay
