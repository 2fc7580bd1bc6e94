// Role: a trace index saved to a file and loaded back (TraceIndex::save,
// TraceIndex::load, identify_trace), so that a second `tracecorn debug` of a
// long trace starts in about a second instead of reading the whole trace.
// Layout (little endian; "vec" = u64 count then the elements):
//   "TCIDX\0\0\3"  magic and version 3
//   identity: u64 trace size, i64 mtime (ns), u64 hash of the trace's first and last 64 KiB
//   u64 arch name length, its bytes
//   u64 interval, event count, instructions, block instructions; 16 bytes: kinds seen
//   vec syscalls, vec signals, u64 first thread, vec thread changes, vec process changes,
//   vec read-only regions
//   vec pages (4096 bytes + 64 u64 known bits each: every page any checkpoint holds, once)
//   vec checkpoints (registers, pc, page ids, mappings), vec chunks (as TraceIndex::Chunk)
//   u64 delta log bytes, then the delta log (chunk offsets count from its start)
// Untrusted input: the file may be stale, damaged or someone else's: load()
// checks the identity against the trace and every count against the bytes
// left, and fails (kBadFormat, naming the offset) instead of trusting it; the
// caller then rebuilds the index from the trace.
// Threads: one (as TraceIndex).
#include <sys/stat.h>

#include <cstdio>
#include <fstream>
#include <string>

#include <zstd.h>

#include "recorder/replay/trace_index.h"
#include "recorder/replay/trace_index_state.h"

namespace tracecorn::replay {
namespace {

constexpr std::uint64_t kHashedBytes = 64 * 1024;

// Appends values to a byte buffer.
class Writer {
 public:
  void u8(std::uint8_t v) { bytes.push_back(v); }
  void u64(std::uint64_t v) {
    for (int i = 0; i < 8; ++i) bytes.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
  }
  void raw(std::span<const std::uint8_t> data) { bytes.insert(bytes.end(), data.begin(), data.end()); }
  void text(std::string_view s) {
    u64(s.size());
    raw(std::span(reinterpret_cast<const std::uint8_t*>(s.data()), s.size()));
  }
  void words(const std::vector<std::uint64_t>& values) {
    u64(values.size());
    for (auto v : values) u64(v);
  }
  void reg(const events::RegisterValue& value) {
    u64(value.index);
    u8(value.size);
    raw(std::span(value.bytes).first(std::min<std::size_t>(value.size, value.bytes.size())));
  }
  std::vector<std::uint8_t> bytes;
};

// Reads values back, failing (once, sticky) at the first read past the end.
class Reader {
 public:
  explicit Reader(std::span<const std::uint8_t> data) : data_(data) {}
  bool ok() const { return ok_; }
  std::size_t at() const { return at_; }
  std::size_t left() const { return data_.size() - at_; }
  std::uint8_t u8() { return take(1) ? data_[at_ - 1] : 0; }
  std::uint64_t u64() {
    if (!take(8)) return 0;
    std::uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v |= std::uint64_t{data_[at_ - 8 + i]} << (8 * i);
    return v;
  }
  std::span<const std::uint8_t> raw(std::uint64_t n) {
    if (n > left() || !take(static_cast<std::size_t>(n))) return {};
    return data_.subspan(at_ - n, n);
  }
  std::string text() {
    auto bytes = raw(u64());
    return std::string(bytes.begin(), bytes.end());
  }
  // A count of elements of at least `element_bytes` each: no more than what is left.
  std::uint64_t count(std::size_t element_bytes) {
    const std::uint64_t n = u64();
    if (n > left() / std::max<std::size_t>(element_bytes, 1)) ok_ = false;
    return ok_ ? n : 0;
  }
  std::vector<std::uint64_t> words() {
    std::vector<std::uint64_t> out(count(8));
    for (auto& v : out) v = u64();
    return out;
  }
  events::RegisterValue reg() {
    events::RegisterValue value;
    value.index = static_cast<std::uint16_t>(u64());
    value.size = u8();
    if (value.size > value.bytes.size()) ok_ = false;
    auto bytes = raw(ok_ ? value.size : 0);
    std::copy(bytes.begin(), bytes.end(), value.bytes.begin());
    return value;
  }

 private:
  bool take(std::size_t n) {
    if (!ok_ || n > left()) return ok_ = false;
    at_ += n;
    return true;
  }
  std::span<const std::uint8_t> data_;
  std::size_t at_ = 0;
  bool ok_ = true;
};

}  // namespace

Expected<TraceIdentity> identify_trace(const std::string& path) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) return make_error(ErrorCode::kNotFound, "cannot stat the trace", path);
  TraceIdentity identity;
  identity.size = static_cast<std::uint64_t>(info.st_size);
  identity.mtime_ns = static_cast<std::int64_t>(info.st_mtim.tv_sec) * 1000000000 + info.st_mtim.tv_nsec;
  std::ifstream in(path, std::ios::binary);
  std::vector<char> head(static_cast<std::size_t>(std::min(identity.size, kHashedBytes)));
  std::vector<char> tail(head.size());
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  in.seekg(static_cast<std::streamoff>(identity.size - tail.size()));
  in.read(tail.data(), static_cast<std::streamsize>(tail.size()));
  if (!in) return make_error(ErrorCode::kIo, "cannot read the trace", path);
  std::uint64_t hash = 1469598103934665603ull;  // FNV-1a
  for (const auto* part : {&head, &tail})
    for (const char c : *part) hash = (hash ^ static_cast<std::uint8_t>(c)) * 1099511628211ull;
  identity.content_hash = hash;
  return identity;
}

namespace {

// A fast 64-bit hash of the delta log's bytes (damage detection, not security).

void write_state(Writer& w, const TraceIndex::State& state,
                 const std::unordered_map<const TraceIndex::Page*, std::uint64_t>& page_ids) {
  w.u64(state.registers.size());
  for (std::size_t i = 0; i < state.registers.size(); ++i) {
    w.reg(state.registers[i]);
    w.u8(state.known[i] ? 1 : 0);
  }
  w.u64(state.pc);
  w.u8(state.pc_known ? 1 : 0);
  w.u64(state.pages.size());
  for (const auto& [number, page] : state.pages) {
    w.u64(number);
    w.u64(page_ids.at(page.get()));
  }
  w.u64(state.mapped.size());
  for (const auto& [start, end] : state.mapped) w.u64(start), w.u64(end);
}

}  // namespace

Status TraceIndex::save(const std::string& path, const TraceIdentity& identity) const {
  Writer w;
  w.text(arch_->name);
  for (auto v : {interval_, event_count_, instructions_, block_instructions_}) w.u64(v);
  for (bool seen : seen_) w.u8(seen ? 1 : 0);
  w.u64(syscalls_.size());
  for (const auto& call : syscalls_) {
    for (auto v : {call.event, call.pc, call.number}) w.u64(v);
    w.text(call.name);
    for (auto v : call.args) w.u64(v);
    w.u64(static_cast<std::uint64_t>(call.result));
    w.words(call.call_stack);
    w.u64(call.bytes_written);
    w.u64(call.memory_writes.size());
    for (const auto& [address, bytes] : call.memory_writes) w.u64(address), w.u64(bytes.size()), w.raw(bytes);
    w.u64(call.register_changes.size());
    for (const auto& value : call.register_changes) w.reg(value);
  }
  w.u64(signals_.size());
  for (const auto& signal : signals_) {
    for (auto v : {signal.event, std::uint64_t{signal.signal}, std::uint64_t{signal.fault}, signal.pc, signal.address})
      w.u64(v);
  }
  w.u64(first_thread_);
  w.u64(thread_changes_.size());
  for (const auto& change : thread_changes_)
    for (auto v : {change.event, std::uint64_t{static_cast<std::uint8_t>(change.change)}, std::uint64_t{change.thread},
                   std::uint64_t{change.from}})
      w.u64(v);
  w.u64(process_changes_.size());
  for (const auto& change : process_changes_) {
    for (auto v : {change.event, std::uint64_t{static_cast<std::uint8_t>(change.change)}, change.pid}) w.u64(v);
    w.text(change.trace);
    w.text(change.detail);
  }
  w.u64(initial_read_only_.size());
  for (const auto& [start, end] : initial_read_only_) w.u64(start), w.u64(end);
  w.u64(mapping_notes_.size());
  for (const auto& note : mapping_notes_) {
    for (auto v : {std::uint64_t{note.kind}, note.start, note.end, note.load_bias}) w.u64(v);
    w.text(note.path);
  }
  // Every page of every checkpoint, once.
  std::unordered_map<const Page*, std::uint64_t> page_ids;
  std::vector<const Page*> pages;
  for (const auto& checkpoint : checkpoints_)
    for (const auto& [number, page] : checkpoint->pages)
      if (page_ids.emplace(page.get(), pages.size()).second) pages.push_back(page.get());
  w.u64(pages.size());
  for (const Page* page : pages) {
    w.raw(page->bytes);
    for (auto word : page->known) w.u64(word);
  }
  w.u64(checkpoints_.size());
  for (const auto& checkpoint : checkpoints_) write_state(w, *checkpoint, page_ids);
  w.u64(chunks_.size());
  for (const auto& chunk : chunks_) {
    for (auto v : {chunk.first_event, chunk.file_offset, chunk.compressed_size, chunk.raw_size}) w.u64(v);
    w.words(chunk.pages_written);
    w.words(chunk.pages_read);
    w.u64(chunk.registers_written.size());
    for (bool written : chunk.registers_written) w.u8(written ? 1 : 0);
    w.words(chunk.instruction_pcs);
    w.u64(chunk.instructions_before);
  }
  SavedIndexHash meta_hash;
  meta_hash.add(w.bytes);

  const std::string part = path + ".part";
  std::FILE* out = std::fopen(part.c_str(), "wb");
  if (!out) return make_error(ErrorCode::kIo, "cannot write the saved index", part);
  auto fail = [&](const char* what) {
    std::fclose(out);
    std::remove(part.c_str());
    return make_error(ErrorCode::kIo, what, part);
  };
  // The header, then the delta log (copied from the temporary file, hashed on the way), then the rest.
  Writer header;
  header.raw(std::span(reinterpret_cast<const std::uint8_t*>(kSavedIndexMagic), sizeof kSavedIndexMagic));
  header.u64(identity.size);
  header.u64(static_cast<std::uint64_t>(identity.mtime_ns));
  header.u64(identity.content_hash);
  SavedIndexHash delta_hash;
  std::vector<std::uint8_t> block(1 << 20);
  if (std::fflush(spill_) != 0 || std::fseek(spill_, 0, SEEK_SET) != 0) return fail("cannot read the delta log back");
  if (std::fseek(out, static_cast<long>(kSavedIndexHeaderBytes), SEEK_SET) != 0) return fail("cannot write the saved index");
  for (std::uint64_t copied = 0; copied < delta_bytes_;) {
    const std::size_t n = std::fread(block.data(), 1, std::min<std::uint64_t>(block.size(), delta_bytes_ - copied), spill_);
    if (n == 0) return fail("cannot read the delta log back");
    delta_hash.add(std::span(block).first(n));
    if (std::fwrite(block.data(), 1, n, out) != n) return fail("cannot write the saved index");
    copied += n;
  }
  std::fseek(spill_, 0, SEEK_END);
  for (auto v : {std::uint64_t{kSavedIndexHeaderBytes}, delta_bytes_, delta_hash.finish(), std::uint64_t{w.bytes.size()},
                 meta_hash.finish()})
    header.u64(v);
  if (std::fwrite(w.bytes.data(), 1, w.bytes.size(), out) != w.bytes.size() || std::fseek(out, 0, SEEK_SET) != 0 ||
      std::fwrite(header.bytes.data(), 1, header.bytes.size(), out) != header.bytes.size())
    return fail("cannot write the saved index");
  if (std::fclose(out) != 0) {
    std::remove(part.c_str());
    return make_error(ErrorCode::kIo, "cannot write the saved index", part);
  }
  if (std::rename(part.c_str(), path.c_str()) != 0) {
    std::remove(part.c_str());
    return make_error(ErrorCode::kIo, "cannot rename the saved index into place", path);
  }
  return ok_status();
}

namespace {

bool read_syscalls(Reader& r, std::vector<SyscallRecord>& out) {
  out.resize(r.count(64));
  for (auto& call : out) {
    call.event = r.u64(), call.pc = r.u64(), call.number = r.u64();
    call.name = r.text();
    for (auto& v : call.args) v = r.u64();
    call.result = static_cast<std::int64_t>(r.u64());
    call.call_stack = r.words();
    call.bytes_written = r.u64();
    call.memory_writes.resize(r.count(16));
    for (auto& [address, bytes] : call.memory_writes) {
      address = r.u64();
      auto data = r.raw(r.u64());
      bytes.assign(data.begin(), data.end());
    }
    call.register_changes.resize(r.count(9));
    for (auto& value : call.register_changes) value = r.reg();
  }
  return r.ok();
}

std::unique_ptr<TraceIndex::State> read_state(Reader& r, const std::vector<std::shared_ptr<TraceIndex::Page>>& pages,
                                              std::size_t register_count) {
  auto state = std::make_unique<TraceIndex::State>();
  if (r.u64() != register_count) return nullptr;
  state->registers.resize(register_count);
  state->known.resize(register_count);
  for (std::size_t i = 0; i < register_count; ++i) {
    state->registers[i] = r.reg();
    state->known[i] = r.u8() != 0;
    if (state->registers[i].index != i) return nullptr;
  }
  state->pc = r.u64();
  state->pc_known = r.u8() != 0;
  for (std::uint64_t n = r.count(16); n > 0; --n) {
    const std::uint64_t number = r.u64(), id = r.u64();
    if (id >= pages.size()) return nullptr;
    state->pages[number] = pages[id];
  }
  for (std::uint64_t n = r.count(16); n > 0; --n) {
    const std::uint64_t start = r.u64();
    state->mapped[start] = r.u64();
  }
  return r.ok() ? std::move(state) : nullptr;
}

}  // namespace

Status TraceIndex::read_tables(std::span<const std::uint8_t> meta) {
  Reader r(meta);
  auto damaged = [&](const char* what) {
    return make_error(ErrorCode::kBadFormat, std::string("the saved index is damaged: ") + what, "trace index", r.at());
  };
  if (r.text() != arch_->name) return damaged("another architecture");
  interval_ = r.u64(), event_count_ = r.u64(), instructions_ = r.u64(), block_instructions_ = r.u64();
  for (bool& seen : seen_) seen = r.u8() != 0;
  if (!read_syscalls(r, syscalls_)) return damaged("syscalls");
  signals_.resize(r.count(40));
  for (auto& signal : signals_) {
    signal.event = r.u64(), signal.signal = static_cast<std::uint32_t>(r.u64()), signal.fault = r.u64() != 0;
    signal.pc = r.u64(), signal.address = r.u64();
  }
  first_thread_ = static_cast<std::uint32_t>(r.u64());
  thread_changes_.resize(r.count(32));
  std::uint64_t previous_event = 0;
  for (auto& change : thread_changes_) {
    change.event = r.u64();
    const std::uint64_t kind = r.u64(), thread = r.u64(), from = r.u64();
    if (kind < 1 || kind > 3 || thread > UINT32_MAX || from > UINT32_MAX || change.event < previous_event ||
        change.event >= event_count_)
      return damaged("threads");
    change.change = static_cast<events::ThreadChange>(kind);
    change.thread = static_cast<std::uint32_t>(thread), change.from = static_cast<std::uint32_t>(from);
    previous_event = change.event;
  }
  process_changes_.resize(r.count(40));
  previous_event = 0;
  for (auto& change : process_changes_) {
    change.event = r.u64();
    const std::uint64_t kind = r.u64();
    change.pid = r.u64();
    change.trace = r.text();
    change.detail = r.text();
    if (kind < 1 || kind > 2 || change.event < previous_event || change.event >= event_count_)
      return damaged("processes");
    change.change = static_cast<events::ProcessChange>(kind);
    previous_event = change.event;
  }
  initial_read_only_.resize(r.count(16));
  for (auto& [start, end] : initial_read_only_) start = r.u64(), end = r.u64();
  mapping_notes_.resize(r.count(40));
  for (auto& note : mapping_notes_) {
    const std::uint64_t kind = r.u64();
    if (kind > MappingNote::kUnmap) return damaged("mappings");
    note.kind = static_cast<MappingNote::Kind>(kind);
    note.start = r.u64(), note.end = r.u64(), note.load_bias = r.u64();
    note.path = r.text();
  }
  std::vector<std::shared_ptr<Page>> pages(r.count(kPageBytes));
  for (auto& page : pages) {
    page = std::make_shared<Page>();
    auto bytes = r.raw(kPageBytes);
    if (!r.ok()) return damaged("pages");
    std::copy(bytes.begin(), bytes.end(), page->bytes.begin());
    for (auto& word : page->known) word = r.u64();
  }
  const std::size_t register_count = arch_->registers.size();
  for (std::uint64_t n = r.count(16); n > 0; --n) {
    auto state = read_state(r, pages, register_count);
    if (!state) return damaged("checkpoints");
    checkpoints_.push_back(std::move(state));
  }
  chunks_.resize(r.count(64));
  for (std::size_t k = 0; k < chunks_.size(); ++k) {
    Chunk& chunk = chunks_[k];
    chunk.first_event = r.u64(), chunk.file_offset = r.u64(), chunk.compressed_size = r.u64(), chunk.raw_size = r.u64();
    chunk.pages_written = r.words();
    chunk.pages_read = r.words();
    chunk.registers_written.resize(r.count(1));
    for (std::size_t i = 0; i < chunk.registers_written.size(); ++i) chunk.registers_written[i] = r.u8() != 0;
    chunk.instruction_pcs = r.words();
    chunk.instructions_before = r.u64();
    if (chunk.first_event != k * interval_ || chunk.file_offset > delta_bytes_ ||
        chunk.compressed_size > delta_bytes_ - chunk.file_offset || chunk.raw_size > (1ull << 30) ||
        chunk.registers_written.size() != register_count)
      return damaged("chunk table");
  }
  if (!r.ok() || r.left() != 0 || interval_ == 0 || chunks_.empty() || checkpoints_.size() != chunks_.size() ||
      event_count_ > chunks_.size() * interval_)
    return damaged("tables");
  state_ = std::make_unique<State>(*checkpoints_.front());
  position_ = 0;
  return ok_status();
}

Expected<std::unique_ptr<TraceIndex>> TraceIndex::load(const std::string& path, const TraceIdentity& identity,
                                                       const arch::ArchInfo& arch) {
  std::FILE* in = std::fopen(path.c_str(), "rb");
  if (!in) return make_error(ErrorCode::kNotFound, "no saved index", path);
  std::unique_ptr<TraceIndex> index(new TraceIndex());
  index->spill_ = in;  // owned from here on
  index->arch_ = &arch;
  std::vector<std::uint8_t> head(kSavedIndexHeaderBytes);
  if (std::fread(head.data(), 1, head.size(), in) != head.size())
    return make_error(ErrorCode::kBadFormat, "the saved index is cut short", path);
  Reader r(head);
  auto magic = r.raw(sizeof kSavedIndexMagic);
  if (!std::equal(magic.begin(), magic.end(), reinterpret_cast<const std::uint8_t*>(kSavedIndexMagic)))
    return make_error(ErrorCode::kBadFormat, "not a saved index of this version", path, 0);
  if (r.u64() != identity.size || static_cast<std::int64_t>(r.u64()) != identity.mtime_ns ||
      r.u64() != identity.content_hash)
    return make_error(ErrorCode::kBadFormat, "the saved index is stale: the trace changed since it was made", path);
  const std::uint64_t delta_offset = r.u64(), delta_size = r.u64(), delta_hash = r.u64();
  const std::uint64_t meta_size = r.u64(), meta_hash = r.u64();
  struct stat info {};
  if (::fstat(::fileno(in), &info) != 0 || delta_offset != kSavedIndexHeaderBytes ||
      delta_offset + delta_size + meta_size != static_cast<std::uint64_t>(info.st_size))
    return make_error(ErrorCode::kBadFormat, "the saved index's sizes do not add up", path);
  // Hash the delta log and read the tables that follow it.
  SavedIndexHash hash;
  std::vector<std::uint8_t> block(1 << 20);
  for (std::uint64_t done = 0; done < delta_size;) {
    const std::size_t n = std::fread(block.data(), 1, std::min<std::uint64_t>(block.size(), delta_size - done), in);
    if (n == 0) return make_error(ErrorCode::kBadFormat, "the saved index is cut short", path, delta_offset + done);
    hash.add(std::span(block).first(n));
    done += n;
  }
  std::vector<std::uint8_t> meta(static_cast<std::size_t>(meta_size));
  if (std::fread(meta.data(), 1, meta.size(), in) != meta.size())
    return make_error(ErrorCode::kBadFormat, "the saved index is cut short", path, delta_offset + delta_size);
  SavedIndexHash check;
  check.add(meta);
  if (hash.finish() != delta_hash || check.finish() != meta_hash)
    return make_error(ErrorCode::kBadFormat, "the saved index is damaged (its checksum does not match)", path);
  index->spill_base_ = delta_offset;
  index->delta_bytes_ = delta_size;
  if (auto status = index->read_tables(meta); !status) {
    Error error = status.error();
    error.source = path;
    return error;
  }
  return index;
}

}  // namespace tracecorn::replay
