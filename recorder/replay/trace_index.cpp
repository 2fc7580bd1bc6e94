// Role: implementation of TraceIndex (see trace_index.h for the design and the
// delta log's layout).
#include "recorder/replay/trace_index.h"
#include "recorder/replay/trace_index_state.h"

#include <algorithm>
#include <cstring>
#include <map>

#include <zstd.h>

#include "recorder/replay/read_ahead.h"

namespace tracecorn::replay {
namespace {

enum Record : std::uint8_t {
  kRegister = 1, kMemory = 2, kMapping = 3, kPc = 4, kRevealed = 5, kInstructionPc = 6, kRead = 7
};

// Which pcs a chunk's instructions ran, collected cheaply: a direct-mapped
// filter drops most repeats (loops) before the list is sorted at the chunk's end.
class ChunkPcs {
 public:
  void add(std::uint64_t pc, std::vector<std::uint64_t>& out) {
    std::uint64_t& slot = recent_[(pc * 0x9e3779b97f4a7c15ull) >> (64 - kBits)];
    if (slot == pc + 1) return;
    slot = pc + 1;
    out.push_back(pc);
  }
  void reset() { recent_.fill(0); }

 private:
  static constexpr int kBits = 12;
  std::array<std::uint64_t, std::size_t{1} << kBits> recent_{};
};

void put_varint(std::vector<std::uint8_t>& out, std::uint64_t value) {
  while (value >= 0x80) {
    out.push_back(static_cast<std::uint8_t>(value | 0x80));
    value >>= 7;
  }
  out.push_back(static_cast<std::uint8_t>(value));
}

// Reads a varint at `at`; false when it runs past the end or is over-long.
bool get_varint(std::span<const std::uint8_t> bytes, std::size_t& at, std::uint64_t& value) {
  value = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (at >= bytes.size()) return false;
    const std::uint8_t byte = bytes[at++];
    value |= static_cast<std::uint64_t>(byte & 0x7f) << shift;
    if (!(byte & 0x80)) return true;
  }
  return false;
}

}  // namespace

namespace {
// Records what an AddressNamer is told (TraceIndex::name_mappings plays it back).
class MappingNotes final : public formats::AddressNamer {
 public:
  using Note = TraceIndex::MappingNote;
  explicit MappingNotes(std::vector<Note>& notes) : notes_(notes) {}
  void module_loaded(const events::ModuleLoadEvent& module) override {
    notes_.push_back({Note::kModule, module.start.value, module.end.value, module.load_bias, std::string(module.path)});
  }
  void unmapped(std::uint64_t start, std::uint64_t length) override {
    notes_.push_back({Note::kUnmap, start, length, 0, {}});
  }
  void file_mapped(std::uint64_t start, std::uint64_t end, std::string_view path) override {
    notes_.push_back({Note::kFile, start, end, 0, std::string(path)});
  }
  std::string name(std::uint64_t) override { return {}; }

 private:
  std::vector<Note>& notes_;
};
}  // namespace

void TraceIndex::name_mappings(formats::AddressNamer& namer) const {
  for (const auto& note : mapping_notes_) {
    switch (note.kind) {
      case MappingNote::kModule:
        namer.module_loaded(events::ModuleLoadEvent{{note.start}, {note.end}, note.load_bias, note.path});
        break;
      case MappingNote::kFile: namer.file_mapped(note.start, note.end, note.path); break;
      case MappingNote::kUnmap: namer.unmapped(note.start, note.end); break;
    }
  }
}

TraceIndex::~TraceIndex() {
  if (spill_) std::fclose(spill_);
}

template <typename OnRecord>
Status TraceIndex::decode(std::size_t chunk, std::span<const std::uint8_t> bytes, std::uint64_t limit,
                          OnRecord on_record) const {
  std::size_t at = 0;
  std::uint64_t event = chunks_[chunk].first_event;
  auto bad = [&](const char* what) {
    return make_error(ErrorCode::kBadFormat, std::string("delta log damaged: ") + what, "trace index", at);
  };
  while (at < bytes.size()) {
    std::uint64_t step = 0;
    if (!get_varint(bytes, at, step) || at >= bytes.size()) return bad("record header");
    event += step;
    if (event >= limit) return ok_status();
    const std::uint8_t kind = bytes[at++];
    switch (kind) {
      case kRegister: {
        if (at + 3 > bytes.size()) return bad("register");
        events::RegisterValue value;
        value.index = static_cast<std::uint16_t>(bytes[at] | bytes[at + 1] << 8);
        value.size = bytes[at + 2];
        at += 3;
        if (value.size > value.bytes.size() || at + value.size > bytes.size()) return bad("register value");
        std::memcpy(value.bytes.data(), bytes.data() + at, value.size);
        at += value.size;
        on_record(event, kind, value, 0, std::span<const std::uint8_t>{});
        break;
      }
      case kMemory: case kRevealed: case kMapping: {
        std::uint64_t address = 0, length = 0;
        if (!get_varint(bytes, at, address) || !get_varint(bytes, at, length)) return bad("memory");
        std::span<const std::uint8_t> data;
        if (kind == kMapping) {
          if (at >= bytes.size()) return bad("mapping");
          data = bytes.subspan(at, 1);
          at += 1;
        } else {
          if (length > bytes.size() - at) return bad("memory bytes");
          data = bytes.subspan(at, length);
          at += length;
        }
        on_record(event, kind, events::RegisterValue{}, address, data, length);
        break;
      }
      case kRead: {
        std::uint64_t address = 0, length = 0;
        if (!get_varint(bytes, at, address) || !get_varint(bytes, at, length)) return bad("read");
        on_record(event, kind, events::RegisterValue{}, address, std::span<const std::uint8_t>{}, length);
        break;
      }
      case kPc: case kInstructionPc: {
        std::uint64_t pc = 0;
        if (!get_varint(bytes, at, pc)) return bad("pc");
        on_record(event, kind, events::RegisterValue{}, pc, std::span<const std::uint8_t>{});
        break;
      }
      default:
        return bad("record kind");
    }
  }
  return ok_status();
}

namespace {
// Applies one decoded record to `state`.
struct Apply {
  TraceIndex::State& state;
  void operator()(std::uint64_t, std::uint8_t kind, const events::RegisterValue& value, std::uint64_t address,
                  std::span<const std::uint8_t> data, std::uint64_t length = 0) const {
    switch (kind) {
      case kRegister:
        if (value.index < state.registers.size()) {
          state.registers[value.index] = value;
          state.known[value.index] = true;
        }
        break;
      case kMemory: case kRevealed: state.write(address, data); break;
      case kMapping: state.map(address, length, data[0] != 0); break;
      case kPc: case kInstructionPc: state.pc = address, state.pc_known = true; break;
      default: break;
    }
  }
};
}  // namespace

Status TraceIndex::flush_chunk() {
  Chunk& chunk = chunks_.back();
  std::sort(chunk.pages_written.begin(), chunk.pages_written.end());
  chunk.pages_written.erase(std::unique(chunk.pages_written.begin(), chunk.pages_written.end()), chunk.pages_written.end());
  std::sort(chunk.instruction_pcs.begin(), chunk.instruction_pcs.end());
  chunk.instruction_pcs.erase(std::unique(chunk.instruction_pcs.begin(), chunk.instruction_pcs.end()),
                              chunk.instruction_pcs.end());
  std::sort(chunk.pages_read.begin(), chunk.pages_read.end());
  chunk.pages_read.erase(std::unique(chunk.pages_read.begin(), chunk.pages_read.end()), chunk.pages_read.end());
  std::vector<std::uint8_t> packed(ZSTD_compressBound(pending_.size()));
  const std::size_t size = ZSTD_compress(packed.data(), packed.size(), pending_.data(), pending_.size(), 1);
  if (ZSTD_isError(size)) return make_error(ErrorCode::kIo, std::string("zstd: ") + ZSTD_getErrorName(size), "trace index");
  chunk.file_offset = delta_bytes_;
  chunk.compressed_size = size;
  chunk.raw_size = pending_.size();
  if (size && std::fwrite(packed.data(), 1, size, spill_) != size)
    return make_error(ErrorCode::kIo, "cannot write the delta log to a temporary file", "trace index");
  delta_bytes_ += size;
  pending_.clear();
  return ok_status();
}

Expected<std::vector<std::uint8_t>> TraceIndex::load_chunk(std::size_t index) const {
  const Chunk& chunk = chunks_[index];
  std::vector<std::uint8_t> packed(chunk.compressed_size), raw(chunk.raw_size);
  if (chunk.compressed_size == 0) return raw;
  if (std::fflush(spill_) != 0 || std::fseek(spill_, static_cast<long>(spill_base_ + chunk.file_offset), SEEK_SET) != 0 ||
      std::fread(packed.data(), 1, packed.size(), spill_) != packed.size())
    return make_error(ErrorCode::kIo, "cannot read the delta log back", "trace index", chunk.file_offset);
  std::fseek(spill_, 0, SEEK_END);
  const std::size_t size = ZSTD_decompress(raw.data(), raw.size(), packed.data(), packed.size());
  if (ZSTD_isError(size) || size != raw.size())
    return make_error(ErrorCode::kBadFormat, "the delta log does not decompress", "trace index", chunk.file_offset);
  return raw;
}

const SyscallRecord* TraceIndex::syscall_before(std::uint64_t event) const {
  auto after = std::lower_bound(syscalls_.begin(), syscalls_.end(), event,
                                [](const SyscallRecord& call, std::uint64_t e) { return call.event < e; });
  return after == syscalls_.begin() ? nullptr : &*(after - 1);
}

Expected<std::unique_ptr<TraceIndex>> TraceIndex::build(TraceReader& reader, const TraceIndexOptions& options) {
  std::unique_ptr<TraceIndex> index(new TraceIndex());
  index->arch_ = &reader.arch();
  index->interval_ = std::max<std::uint64_t>(1, options.checkpoint_interval);
  index->spill_ = std::tmpfile();
  if (!index->spill_) return make_error(ErrorCode::kIo, "cannot create a temporary file for the delta log", "trace index");
  auto state = std::make_unique<State>();
  const std::size_t register_count = reader.arch().registers.size();
  state->registers.resize(register_count);
  state->known.assign(register_count, false);
  for (std::size_t i = 0; i < register_count; ++i) {
    state->registers[i].index = static_cast<std::uint16_t>(i);
    state->registers[i].size = reader.arch().registers[i].size;
  }
  const events::TraceInfo& info = reader.info();
  for (const auto& value : info.initial_registers)
    if (value.index < register_count) state->registers[value.index] = value, state->known[value.index] = true;
  for (const auto& region : info.initial_memory) {
    if ((region.prot & 5) && !(region.prot & 2))
      index->initial_read_only_.push_back({region.start.value, region.start.value + region.size});
    if (!region.bytes.empty() && region.bytes.size() != region.size) continue;
    if (region.bytes.empty() && !reader.capabilities().initial_memory) continue;
    state->mapped[region.start.value] = region.start.value + region.size;
    // Only non-zero pages are stored: a mapped byte without a page is zero.
    for (std::uint64_t offset = 0; offset < region.bytes.size(); offset += kPageBytes) {
      const std::size_t n = std::min<std::uint64_t>(kPageBytes, region.bytes.size() - offset);
      const auto* bytes = region.bytes.data() + offset;
      if (std::any_of(bytes, bytes + n, [](std::uint8_t b) { return b != 0; }))
        state->write(region.start.value + offset, std::span(bytes, n));
    }
  }
  index->state_ = std::move(state);
  MappingNotes notes(index->mapping_notes_);
  formats::name_initial_mappings(notes, info);
  TraceIndex& self = *index;
  State& now = *self.state_;
  const bool learn_from_reads = info.initial_memory.empty();

  std::uint64_t event_index = 0;
  std::vector<std::uint8_t> scratch;
  auto header = [&](std::uint8_t kind) {
    put_varint(self.pending_, event_index - self.pending_last_event_);
    self.pending_last_event_ = event_index;
    self.pending_.push_back(kind);
  };
  auto add_register = [&](const events::RegisterValue& value) {
    if (value.index >= register_count || value.size > value.bytes.size()) return;
    header(kRegister);
    self.pending_.push_back(static_cast<std::uint8_t>(value.index));
    self.pending_.push_back(static_cast<std::uint8_t>(value.index >> 8));
    self.pending_.push_back(value.size);
    self.pending_.insert(self.pending_.end(), value.bytes.begin(), value.bytes.begin() + value.size);
    self.chunks_.back().registers_written[value.index] = true;
    now.registers[value.index] = value;
    now.known[value.index] = true;
  };
  auto add_memory = [&](std::uint8_t kind, std::uint64_t address, std::span<const std::uint8_t> bytes) {
    if (bytes.empty()) return;
    header(kind);
    put_varint(self.pending_, address);
    put_varint(self.pending_, bytes.size());
    self.pending_.insert(self.pending_.end(), bytes.begin(), bytes.end());
    for (std::uint64_t page = address / kPageBytes; page <= (address + bytes.size() - 1) / kPageBytes; ++page)
      self.chunks_.back().pages_written.push_back(page);
    now.write(address, bytes);
  };
  auto add_read = [&](std::uint64_t address, std::uint64_t size) {
    if (size == 0) return;
    header(kRead);
    put_varint(self.pending_, address);
    put_varint(self.pending_, size);
    auto& pages = self.chunks_.back().pages_read;
    for (std::uint64_t page = address / kPageBytes; page <= (address + size - 1) / kPageBytes; ++page)
      if (pages.empty() || pages.back() != page) pages.push_back(page);
  };
  auto chunk_pcs = std::make_unique<ChunkPcs>();
  auto add_pc = [&](std::uint64_t pc, std::uint8_t kind = kPc) {
    if (kind == kInstructionPc) chunk_pcs->add(pc, self.chunks_.back().instruction_pcs);
    header(kind);
    put_varint(self.pending_, pc);
    now.pc = pc, now.pc_known = true;
  };
  Status failure = ok_status();
  auto on_event = [&](const events::Event& event) {
    if (event_index % self.interval_ == 0) {
      if (!self.chunks_.empty()) {
        if (auto status = self.flush_chunk(); !status && failure) failure = status;
      }
      self.chunks_.push_back(
          Chunk{event_index, 0, 0, 0, {}, {}, std::vector<bool>(register_count, false), {}, self.instructions_});
      self.pending_last_event_ = event_index;
      chunk_pcs->reset();
      self.checkpoints_.push_back(std::make_unique<State>(now));
    }
    self.seen_[static_cast<std::size_t>(event.kind)] = true;
    if (event_index == 0) self.first_thread_ = event.thread.value;
    std::visit(
        [&](const auto& p) {
          using T = std::decay_t<decltype(p)>;
          if constexpr (std::is_same_v<T, events::InstructionEvent>) {
            ++self.instructions_;
            add_pc(p.address.value, kInstructionPc);
          } else if constexpr (std::is_same_v<T, events::BlockEvent>) {
            // A block is entered before its instructions run: it gives the pc
            // only in a trace without instruction events (blocks level).
            self.block_instructions_ += p.instruction_count;
            if (!self.seen_[static_cast<std::size_t>(events::EventKind::kInstruction)]) add_pc(p.address.value);
          } else if constexpr (std::is_same_v<T, events::MemoryEvent>) {
            scratch.resize(p.size);
            // The bytes in memory: the value in the guest's byte order.
            const std::size_t count = std::min<std::size_t>(p.size, 8);
            for (std::size_t i = 0; i < count; ++i)
              scratch[i] = static_cast<std::uint8_t>(p.value >> (8 * (self.arch_->little_endian ? i : count - 1 - i)));
            if (event.kind == events::EventKind::kMemoryWrite) {
              add_memory(kMemory, p.address.value, scratch);
            } else {
              add_read(p.address.value, p.size);
            }
            if (event.kind == events::EventKind::kMemoryRead && learn_from_reads) {
              // Only the bytes nothing wrote before: the rest may have changed since the start.
              std::uint8_t one = 0;
              std::size_t run = 0;
              for (std::size_t i = 0; i <= p.size; ++i) {
                const bool unknown = i < p.size && now.read(p.address.value + i, std::span(&one, 1)) == 0;
                if (unknown) {
                  ++run;
                } else if (run) {
                  add_memory(kRevealed, p.address.value + i - run, std::span(scratch).subspan(i - run, run));
                  run = 0;
                }
              }
            }
          } else if constexpr (std::is_same_v<T, events::RegistersEvent>) {
            for (const auto& value : p.changes) add_register(value);
          } else if constexpr (std::is_same_v<T, events::SyscallEvent>) {
            SyscallRecord record;
            record.event = event_index;
            record.pc = p.pc.value;
            record.number = p.number;
            record.name = std::string(p.name);
            std::copy(std::begin(p.args), std::end(p.args), record.args);
            record.result = p.result;
            record.call_stack.assign(p.call_stack.begin(), p.call_stack.end());
            for (const auto& change : p.mapping_changes) {
              if (change.kind == events::MappingChangeKind::kProtect) continue;
              header(kMapping);
              put_varint(self.pending_, change.start.value);
              put_varint(self.pending_, change.length);
              self.pending_.push_back(change.kind == events::MappingChangeKind::kMap ? 1 : 0);
              now.map(change.start.value, change.length, change.kind == events::MappingChangeKind::kMap);
            }
            for (const auto& write : p.memory_writes) {
              add_memory(kMemory, write.address.value, write.bytes);
              record.bytes_written += write.bytes.size();
              record.memory_writes.push_back({write.address.value, {write.bytes.begin(), write.bytes.end()}});
            }
            for (const auto& value : p.register_changes) add_register(value);
            record.register_changes.assign(p.register_changes.begin(), p.register_changes.end());
            self.syscalls_.push_back(std::move(record));
          } else if constexpr (std::is_same_v<T, events::SignalEvent>) {
            // The frame the kernel wrote and the handler's registers; the handler runs next.
            for (const auto& write : p.frame_writes) add_memory(kMemory, write.address.value, write.bytes);
            for (const auto& value : p.register_changes) add_register(value);
            add_pc(p.handler.value);
            self.signals_.push_back({event_index, p.signal, p.fault, p.interrupted_pc.value, p.fault_address.value});
          } else if constexpr (std::is_same_v<T, events::FaultEvent>) {
            self.signals_.push_back({event_index, p.signal, true, p.pc.value, p.address.value});
          } else if constexpr (std::is_same_v<T, events::ThreadEvent>) {
            for (const auto& value : p.registers) add_register(value);  // a switch: the new thread's
            self.thread_changes_.push_back({event_index, p.change, event.thread.value, p.from.value});
          } else if constexpr (std::is_same_v<T, events::ProcessEvent>) {
            self.process_changes_.push_back(
                {event_index, p.change, p.pid, std::string(p.trace), std::string(p.detail)});
          }
        },
        event.payload);
    if (event.kind == events::EventKind::kModuleLoad || event.kind == events::EventKind::kSyscall)
      formats::name_event_mappings(notes, event);
    ++event_index;
  };
  // (The reader decodes on a thread of its own meanwhile: read_ahead.h.)
  if (auto status = read_ahead(reader, on_event, [&] { return !failure; }); !status) return status.error();
  if (!failure) return failure.error();
  if (self.chunks_.empty()) {
    self.chunks_.push_back(Chunk{0, 0, 0, 0, {}, {}, std::vector<bool>(register_count, false), {}, 0});
    self.checkpoints_.push_back(std::make_unique<State>(now));
  }
  if (auto status = self.flush_chunk(); !status) return status.error();
  self.event_count_ = event_index;
  self.position_ = event_index;
  return index;
}

Status TraceIndex::seek(std::uint64_t event) {
  if (event > event_count_)
    return make_error(ErrorCode::kInvalidArgument,
                      "event " + std::to_string(event) + " is beyond the trace's " + std::to_string(event_count_) + " events");
  const std::size_t chunk = std::min<std::size_t>(event / interval_, chunks_.size() - 1);
  auto raw = load_chunk(chunk);
  if (!raw) return raw.error();
  auto state = std::make_unique<State>(*checkpoints_[chunk]);
  if (auto status = decode(chunk, *raw, event, Apply{*state}); !status) return status;
  state_ = std::move(state);
  position_ = event;
  return ok_status();
}

std::optional<events::RegisterValue> TraceIndex::register_value(std::size_t index) const {
  if (index >= state_->registers.size() || !state_->known[index]) return std::nullopt;
  return state_->registers[index];
}

std::optional<std::uint64_t> TraceIndex::pc() const {
  if (!state_->pc_known) return std::nullopt;
  return state_->pc;
}

std::size_t TraceIndex::read_memory(std::uint64_t address, std::span<std::uint8_t> out) const {
  return state_->read(address, out);
}

Expected<std::optional<MemoryWriteRecord>> TraceIndex::last_write(std::uint64_t address, std::uint64_t before) {
  return previous_write(before, address, 1);
}

std::uint32_t TraceIndex::thread_at(std::uint64_t event) const {
  auto it = std::lower_bound(thread_changes_.begin(), thread_changes_.end(), event,
                             [](const ThreadChangeRecord& change, std::uint64_t e) { return change.event < e; });
  while (it != thread_changes_.begin()) {
    --it;
    if (it->change == events::ThreadChange::kSwitched) return it->thread;
  }
  return first_thread_;
}

std::vector<std::uint32_t> TraceIndex::threads_alive_at(std::uint64_t event) const {
  std::vector<std::uint32_t> alive{first_thread_};
  for (const auto& change : thread_changes_) {
    if (change.event >= event) break;
    if (change.change == events::ThreadChange::kCreated &&
        std::find(alive.begin(), alive.end(), change.thread) == alive.end())
      alive.push_back(change.thread);
    if (change.change == events::ThreadChange::kExited) std::erase(alive, change.thread);
  }
  return alive;
}

std::size_t TraceIndex::chunk_of(std::uint64_t event) const {
  return std::min<std::size_t>(event / interval_, chunks_.size() - 1);
}

bool TraceIndex::chunk_may_run(std::size_t chunk, std::span<const std::uint64_t> pcs) const {
  const auto& ran = chunks_[chunk].instruction_pcs;
  if (pcs.empty()) return !ran.empty();
  return std::any_of(pcs.begin(), pcs.end(), [&](std::uint64_t pc) { return std::binary_search(ran.begin(), ran.end(), pc); });
}

bool TraceIndex::chunk_may_touch(std::size_t chunk, std::uint64_t address, std::uint64_t length, Accesses kinds) const {
  const std::uint64_t last = (address + length - 1 < address ? ~0ull : address + length - 1) / kPageBytes;
  auto touches = [&](const std::vector<std::uint64_t>& pages) {
    auto first = std::lower_bound(pages.begin(), pages.end(), address / kPageBytes);
    return first != pages.end() && *first <= last;
  };
  return ((kinds & kWrites) && touches(chunks_[chunk].pages_written)) ||
         ((kinds & kReads) && touches(chunks_[chunk].pages_read));
}

Expected<std::uint64_t> TraceIndex::instructions_before(std::uint64_t event) {
  const std::size_t k = chunk_of(std::min(event, event_count_));
  auto raw = load_chunk(k);
  if (!raw) return raw.error();
  std::uint64_t count = chunks_[k].instructions_before;
  auto status = decode(k, *raw, event, [&](std::uint64_t, std::uint8_t kind, const events::RegisterValue&, std::uint64_t,
                                           std::span<const std::uint8_t>, std::uint64_t = 0) {
    if (kind == kInstructionPc) ++count;
  });
  if (!status) return status.error();
  return count;
}

Expected<std::optional<InstructionRecord>> TraceIndex::next_instruction(std::uint64_t from,
                                                                        std::span<const std::uint64_t> pcs) {
  if (from >= event_count_) return std::optional<InstructionRecord>{};
  for (std::size_t k = chunk_of(from); k < chunks_.size(); ++k) {
    if (!chunk_may_run(k, pcs)) continue;
    auto raw = load_chunk(k);
    if (!raw) return raw.error();
    std::optional<InstructionRecord> found;
    auto status = decode(k, *raw, ~0ull, [&](std::uint64_t event, std::uint8_t kind, const events::RegisterValue&,
                                             std::uint64_t pc, std::span<const std::uint8_t>, std::uint64_t = 0) {
      if (found || kind != kInstructionPc || event < from) return;
      if (pcs.empty() || std::binary_search(pcs.begin(), pcs.end(), pc)) found = InstructionRecord{event, pc};
    });
    if (!status) return status.error();
    if (found) return found;
  }
  return std::optional<InstructionRecord>{};
}

Expected<std::optional<InstructionRecord>> TraceIndex::previous_instruction(std::uint64_t before,
                                                                            std::span<const std::uint64_t> pcs) {
  if (before == 0) return std::optional<InstructionRecord>{};
  for (std::size_t k = chunk_of(before - 1) + 1; k-- > 0;) {
    if (!chunk_may_run(k, pcs)) continue;
    auto raw = load_chunk(k);
    if (!raw) return raw.error();
    std::optional<InstructionRecord> found;
    auto status = decode(k, *raw, before, [&](std::uint64_t event, std::uint8_t kind, const events::RegisterValue&,
                                              std::uint64_t pc, std::span<const std::uint8_t>, std::uint64_t = 0) {
      if (kind != kInstructionPc) return;
      if (pcs.empty() || std::binary_search(pcs.begin(), pcs.end(), pc)) found = InstructionRecord{event, pc};
    });
    if (!status) return status.error();
    if (found) return found;
  }
  return std::optional<InstructionRecord>{};
}

Expected<std::optional<MemoryAccessRecord>> TraceIndex::find_access(bool forward, std::uint64_t bound,
                                                                     std::uint64_t address, std::uint64_t length,
                                                                     Accesses kinds) {
  // Forward: the first access at or after `bound`; backward: the last one before it.
  if (length == 0 || (forward ? bound >= event_count_ : bound == 0)) return std::optional<MemoryAccessRecord>{};
  const std::uint64_t end = address + length < address ? ~0ull : address + length;
  const std::size_t first_chunk = chunk_of(forward ? bound : bound - 1);
  for (std::size_t n = 0; n < (forward ? chunks_.size() - first_chunk : first_chunk + 1); ++n) {
    const std::size_t k = forward ? first_chunk + n : first_chunk - n;
    if (!chunk_may_touch(k, address, length, kinds)) continue;
    auto raw = load_chunk(k);
    if (!raw) return raw.error();
    std::optional<MemoryAccessRecord> found;
    auto status = decode(k, *raw, forward ? ~0ull : bound,
                         [&](std::uint64_t event, std::uint8_t kind, const events::RegisterValue&, std::uint64_t at,
                             std::span<const std::uint8_t> data, std::uint64_t size = 0) {
                           if ((forward && (found || event < bound)) || at >= end) return;
                           const bool write = kind == kMemory;
                           if (!(write ? kinds & kWrites : kind == kRead && (kinds & kReads))) return;
                           const std::uint64_t span = write ? data.size() : size;
                           if (at + span <= address) return;
                           found = MemoryAccessRecord{event, at, span, write, {data.begin(), data.end()}};
                         });
    if (!status) return status.error();
    if (found) return found;
  }
  return std::optional<MemoryAccessRecord>{};
}

namespace {
Expected<std::optional<MemoryWriteRecord>> as_write(Expected<std::optional<MemoryAccessRecord>> access) {
  if (!access) return access.error();
  if (!*access) return std::optional<MemoryWriteRecord>{};
  return std::optional<MemoryWriteRecord>{MemoryWriteRecord{(*access)->event, (*access)->address, std::move((*access)->bytes)}};
}
}  // namespace

Expected<std::optional<MemoryWriteRecord>> TraceIndex::next_write(std::uint64_t from, std::uint64_t address,
                                                                  std::uint64_t length) {
  return as_write(find_access(true, from, address, length, kWrites));
}

Expected<std::optional<MemoryWriteRecord>> TraceIndex::previous_write(std::uint64_t before, std::uint64_t address,
                                                                      std::uint64_t length) {
  return as_write(find_access(false, before, address, length, kWrites));
}

Expected<std::optional<MemoryAccessRecord>> TraceIndex::next_access(std::uint64_t from, std::uint64_t address,
                                                                    std::uint64_t length, Accesses kinds) {
  return find_access(true, from, address, length, kinds);
}

Expected<std::optional<MemoryAccessRecord>> TraceIndex::previous_access(std::uint64_t before, std::uint64_t address,
                                                                        std::uint64_t length, Accesses kinds) {
  return find_access(false, before, address, length, kinds);
}

Expected<std::vector<MemoryWriteRecord>> TraceIndex::memory_history(std::uint64_t address, std::uint64_t length) {
  std::vector<MemoryWriteRecord> out;
  if (length == 0) return out;
  const std::uint64_t end = address + length < address ? ~0ull : address + length;
  for (std::size_t k = 0; k < chunks_.size(); ++k) {
    const auto& pages = chunks_[k].pages_written;
    auto first = std::lower_bound(pages.begin(), pages.end(), address / kPageBytes);
    if (first == pages.end() || *first > (end - 1) / kPageBytes) continue;
    auto raw = load_chunk(k);
    if (!raw) return raw.error();
    auto status = decode(k, *raw, ~0ull,
                         [&](std::uint64_t event, std::uint8_t kind, const events::RegisterValue&, std::uint64_t at,
                             std::span<const std::uint8_t> data, std::uint64_t = 0) {
                           if (kind == kMemory && at < end && at + data.size() > address)
                             out.push_back({event, at, {data.begin(), data.end()}});
                         });
    if (!status) return status.error();
  }
  return out;
}

Expected<std::vector<MemoryWriteRecord>> TraceIndex::first_reads() {
  std::vector<MemoryWriteRecord> out;
  for (std::size_t k = 0; k < chunks_.size(); ++k) {
    auto raw = load_chunk(k);
    if (!raw) return raw.error();
    auto status = decode(k, *raw, ~0ull,
                         [&](std::uint64_t event, std::uint8_t kind, const events::RegisterValue&, std::uint64_t at,
                             std::span<const std::uint8_t> data, std::uint64_t = 0) {
                           if (kind == kRevealed) out.push_back({event, at, {data.begin(), data.end()}});
                         });
    if (!status) return status.error();
  }
  return out;
}

Expected<std::vector<RegisterWriteRecord>> TraceIndex::register_history(std::size_t index) {
  std::vector<RegisterWriteRecord> out;
  for (std::size_t k = 0; k < chunks_.size(); ++k) {
    if (index >= chunks_[k].registers_written.size() || !chunks_[k].registers_written[index]) continue;
    auto raw = load_chunk(k);
    if (!raw) return raw.error();
    auto status = decode(k, *raw, ~0ull,
                         [&](std::uint64_t event, std::uint8_t kind, const events::RegisterValue& value, std::uint64_t,
                             std::span<const std::uint8_t>, std::uint64_t = 0) {
                           if (kind == kRegister && value.index == index) out.push_back({event, value});
                         });
    if (!status) return status.error();
  }
  return out;
}

Expected<std::optional<RegisterWriteRecord>> TraceIndex::previous_register_write(std::size_t index,
                                                                                 std::uint64_t before) {
  if (before == 0 || chunks_.empty()) return std::optional<RegisterWriteRecord>{};
  for (std::size_t k = chunk_of(before - 1) + 1; k-- > 0;) {
    if (index >= chunks_[k].registers_written.size() || !chunks_[k].registers_written[index]) continue;
    auto raw = load_chunk(k);
    if (!raw) return raw.error();
    std::optional<RegisterWriteRecord> last;
    auto status = decode(k, *raw, before,
                         [&](std::uint64_t event, std::uint8_t kind, const events::RegisterValue& value, std::uint64_t,
                             std::span<const std::uint8_t>, std::uint64_t = 0) {
                           if (kind == kRegister && value.index == index) last = RegisterWriteRecord{event, value};
                         });
    if (!status) return status.error();
    if (last) return last;
  }
  return std::optional<RegisterWriteRecord>{};
}

Expected<std::vector<MemoryAccessRecord>> TraceIndex::accesses_in(std::uint64_t from, std::uint64_t to) {
  std::vector<MemoryAccessRecord> out;
  if (from >= to || chunks_.empty()) return out;
  for (std::size_t k = chunk_of(from); k < chunks_.size() && chunks_[k].first_event < to; ++k) {
    auto raw = load_chunk(k);
    if (!raw) return raw.error();
    auto status = decode(k, *raw, to,
                         [&](std::uint64_t event, std::uint8_t kind, const events::RegisterValue&, std::uint64_t at,
                             std::span<const std::uint8_t> data, std::uint64_t size = 0) {
                           if (event < from) return;
                           if (kind == kMemory) out.push_back({event, at, data.size(), true, {data.begin(), data.end()}});
                           if (kind == kRead) out.push_back({event, at, size, false, {}});
                         });
    if (!status) return status.error();
  }
  return out;
}

}  // namespace tracecorn::replay
