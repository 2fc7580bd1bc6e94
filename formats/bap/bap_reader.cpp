// Role: implementation of the BAP frames reader (see bap_reader.h, bap_layout.h).
// Every read goes through read_exact(), which reports a short read as the end
// of the stream; every size and offset from the file is checked against the
// limits and the other offsets before it is used.
#include "formats/bap/bap_reader.h"

#include <algorithm>
#include <cctype>
#include <cstring>

#include "formats/bap/bap_layout.h"
#include "formats/common/byte_stream.h"
#include "formats/common/read_all.h"
#include "frames.pb.h"
#include "recorder/support/hex.h"

namespace tracecorn::formats {

namespace pb = frames_pb;

namespace {

constexpr std::uint64_t kUnknownEnd = ~0ull;

std::uint64_t load_u64(const std::uint8_t* bytes) {
  std::uint64_t value = 0;
  for (int i = 7; i >= 0; --i) value = value << 8 | bytes[i];
  return value;
}

// What a meta frame says, as FramesMeta.
FramesMeta meta_of(const pb::meta_frame& meta) {
  FramesMeta out;
  out.tracer_name = meta.tracer().name();
  out.tracer_args.assign(meta.tracer().args().begin(), meta.tracer().args().end());
  out.tracer_envp.assign(meta.tracer().envp().begin(), meta.tracer().envp().end());
  out.tracer_version = meta.tracer().version();
  out.target_path = meta.target().path();
  out.target_args.assign(meta.target().args().begin(), meta.target().args().end());
  out.target_envp.assign(meta.target().envp().begin(), meta.target().envp().end());
  out.target_md5.assign(meta.target().md5sum().begin(), meta.target().md5sum().end());
  out.target_size = meta.fstats().size();
  out.target_atime = meta.fstats().atime();
  out.target_mtime = meta.fstats().mtime();
  out.target_ctime = meta.fstats().ctime();
  out.user = meta.user();
  out.host = meta.host();
  out.time = meta.time();
  out.level = meta.tracecorn_level();
  return out;
}

}  // namespace

struct FramesReader::Parsed {
  pb::frame frame;
  std::uint64_t offset = 0;  // of the frame's size field
  std::uint64_t index = 0;
};

FramesReader::FramesReader(std::unique_ptr<ByteSource> stream, std::string source)
    : stream_(std::move(stream)), source_(std::move(source)), parsed_(std::make_unique<Parsed>()) {}

FramesReader::~FramesReader() = default;

bool FramesReader::recognizes(std::span<const std::uint8_t> head) {
  return head.size() >= 8 && load_u64(head.data()) == bap::kMagic;
}

bool FramesReader::can_carry(events::EventKind kind) {
  return kind != events::EventKind::kBlock && kind != events::EventKind::kExit;
}

Error FramesReader::error_at(std::uint64_t offset, std::string message) const {
  return make_error(ErrorCode::kBadFormat,
                    std::move(message) + (header_.zstd ? " (offset in the decompressed stream)" : ""), source_, offset);
}

void FramesReader::note(std::string text) {
  if (!warning_.empty()) warning_ += "; ";
  warning_ += std::move(text);
}

void FramesReader::use_arch(const arch::ArchInfo& arch) {
  arch_ = &arch;
  info_.arch_name = arch.name;
  register_by_name_.clear();
  for (std::size_t i = 0; i < arch.registers.size(); ++i) {
    std::string name(arch.registers[i].name);
    for (char& c : name) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    register_by_name_.emplace(std::move(name), static_cast<std::uint16_t>(i));
  }
  registers_.assign(arch.registers.size(), events::RegisterValue{});
  known_.assign(arch.registers.size(), false);
}

bool FramesReader::resolve_arch(const arch::ArchInfo& candidate) {
  if (candidate.format_ids.bap_architecture != header_.architecture || candidate.format_ids.bap_machine != header_.machine)
    return false;
  if (&candidate == arch_) return true;
  // Same ids: the same register names (a byte order apart), so the registers
  // read so far keep their indexes.
  auto registers = registers_;
  auto known = known_;
  use_arch(candidate);
  if (registers.size() == registers_.size()) {
    registers_ = std::move(registers);
    known_ = std::move(known);
  }
  return true;
}

Expected<std::unique_ptr<FramesReader>> FramesReader::open(const std::string& path) {
  auto file = open_file_source(path);
  if (!file) return file.error();
  return start(std::move(*file), path);
}

Expected<std::unique_ptr<FramesReader>> FramesReader::from_bytes(std::vector<std::uint8_t> bytes, std::string source) {
  return start(make_memory_source(std::move(bytes)), std::move(source));
}

Expected<std::unique_ptr<FramesReader>> FramesReader::start(std::unique_ptr<ByteSource> stream, std::string source) {
  try {
    std::unique_ptr<FramesReader> reader(new FramesReader(std::move(stream), std::move(source)));
    if (auto status = reader->parse_header(); !status) return status.error();
    // The first frame: a key frame there is the initial state.
    auto first = reader->read_frame();
    if (!first) return first.error();
    if (*first) {
      reader->have_parsed_ = true;
      if (reader->parsed_->frame.has_key_frame()) {
        reader->have_parsed_ = false;
        if (auto status = reader->produce([](const events::Event&) {}); !status) return status.error();
      }
    }
    return reader;
  } catch (const std::exception& error) {
    return make_error(ErrorCode::kIo, std::string("cannot read the trace: ") + error.what(), source);
  }
}

bool FramesReader::read_exact(std::vector<std::uint8_t>& out, std::uint64_t n) {
  out.clear();
  // Bytes a source gave beyond what was asked (a zstd source decodes whole blocks) come first.
  const std::size_t from_carry = static_cast<std::size_t>(std::min<std::uint64_t>(n, carry_.size() - carry_pos_));
  out.insert(out.end(), carry_.begin() + static_cast<std::ptrdiff_t>(carry_pos_),
             carry_.begin() + static_cast<std::ptrdiff_t>(carry_pos_ + from_carry));
  carry_pos_ += from_carry;
  if (carry_pos_ == carry_.size()) {
    carry_.clear();
    carry_pos_ = 0;
  }
  while (out.size() < n) {
    const std::size_t want = static_cast<std::size_t>(std::min<std::uint64_t>(n - out.size(), 1u << 20));
    if (stream_->read(out, want) == 0) return false;
  }
  if (out.size() > n) {
    carry_.assign(out.begin() + static_cast<std::ptrdiff_t>(n), out.end());
    carry_pos_ = 0;
    out.resize(static_cast<std::size_t>(n));
  }
  return true;
}

bool FramesReader::seek(std::uint64_t offset) {
  carry_.clear();
  carry_pos_ = 0;
  if (!stream_->seek(offset)) return false;
  offset_ = offset;
  return true;
}

Status FramesReader::parse_header() {
  // A zstd stream is decompressed as it is read; a plain source is rewound.
  read_exact(scratch_, 4);
  if (scratch_.size() == 4 && std::equal(std::begin(kZstdMagic), std::end(kZstdMagic), scratch_.begin())) {
    header_.zstd = true;
    stream_ = make_zstd_source(make_prefix_source(scratch_, std::move(stream_)));
  } else if (!seek(0)) {
    stream_ = make_prefix_source(scratch_, std::move(stream_));
  }
  if (!read_exact(scratch_, bap::kHeaderBytes))
    return truncated("the file has " + std::to_string(scratch_.size()) + " bytes, shorter than the " +
                     std::to_string(bap::kHeaderBytes) + "-byte BAP frames header");
  const std::uint8_t* h = scratch_.data();
  if (load_u64(h + bap::kMagicOffset) != bap::kMagic)
    return make_error(ErrorCode::kBadFormat,
                      "not a BAP frames trace (expected the magic " + std::to_string(bap::kMagic) + " or a zstd stream)",
                      source_, 0);
  header_.version = load_u64(h + bap::kVersionOffset);
  if (header_.version < bap::kLowestVersion || header_.version > bap::kVersion)
    return make_error(ErrorCode::kBadFormat,
                      "unknown container version " + std::to_string(header_.version) + " (expected 1, 2 or 3)", source_,
                      bap::kVersionOffset);
  header_.architecture = load_u64(h + bap::kArchitectureOffset);
  header_.machine = load_u64(h + bap::kMachineOffset);
  header_.frame_count = load_u64(h + bap::kFrameCountOffset);
  header_.toc_offset = load_u64(h + bap::kTocOffsetOffset);
  for (const arch::ArchInfo* candidate : arch::all_archs())
    if (candidate->format_ids.bap_architecture == header_.architecture &&
        candidate->format_ids.bap_machine == header_.machine)
      arch_ = candidate;
  if (!arch_)
    return make_error(ErrorCode::kUnsupported,
                      "unsupported frame_architecture " + std::to_string(header_.architecture) + " with frame_machine " +
                          std::to_string(header_.machine) + " (tracecorn knows x86-64: 9 with 64)",
                      source_, bap::kArchitectureOffset);
  use_arch(*arch_);
  offset_ = bap::kHeaderBytes;
  const auto total = stream_->size();

  header_.has_meta = header_.version >= bap::kFirstVersionWithMeta;
  if (header_.has_meta) {
    if (auto status = read_meta_frame(total); !status) return status;
  }
  header_.first_frame_offset = offset_;
  end_offset_ = kUnknownEnd;
  if (header_.toc_offset != 0) {
    if (auto status = use_toc_offset(total); !status) return status;
  }
  info_.arch_name = arch_->name;
  info_.program = meta_.target_path;
  info_.argv = meta_.target_args;
  info_.level = meta_.level;
  return ok_status();
}

Error FramesReader::truncated(const std::string& what) const {
  return make_error(ErrorCode::kTruncated, what + (stream_->problem.empty() ? "" : " (" + stream_->problem + ")"),
                    source_, offset_);
}

// The meta frame (container versions 2 and 3): its size, then a protobuf meta_frame.
Status FramesReader::read_meta_frame(std::optional<std::uint64_t> total) {
  if (!read_exact(scratch_, 8)) return truncated("the file ends inside the meta frame's size");
  const std::uint64_t size = load_u64(scratch_.data());
  if (size > bap::kMaxFrameBytes || (total && size > *total - offset_ - 8))
    return make_error(size > bap::kMaxFrameBytes ? ErrorCode::kBadFormat : ErrorCode::kTruncated,
                      "the meta frame declares " + std::to_string(size) + " bytes (more than " +
                          (size > bap::kMaxFrameBytes ? "the limit" : "the file holds") + ")",
                      source_, offset_);
  offset_ += 8;
  if (!read_exact(scratch_, size)) return truncated("the file ends inside the meta frame");
  pb::meta_frame meta;
  if (!meta.ParsePartialFromArray(scratch_.data(), static_cast<int>(size)))
    return error_at(offset_, "the meta frame does not parse as a protobuf meta_frame");
  if (!meta.IsInitialized()) note("the meta frame lacks required fields (" + meta.InitializationErrorString() + ")");
  meta_ = meta_of(meta);
  offset_ += size;
  return ok_status();
}

// T, when the header gives one: where the frames end, unless it lies beyond
// the file (cut short); the TOC there is checked when the source can seek.
Status FramesReader::use_toc_offset(std::optional<std::uint64_t> total) {
  if (header_.toc_offset < header_.first_frame_offset)
    return make_error(ErrorCode::kBadFormat,
                      "T = " + hex(header_.toc_offset) + " points before the first frame (expected at least " +
                          hex(header_.first_frame_offset) + ")",
                      source_, bap::kTocOffsetOffset);
  if (total && header_.toc_offset > *total - 8) {
    note("T = " + hex(header_.toc_offset) + " lies beyond the end of the file (" + std::to_string(*total) +
         " bytes): the file was cut short; reading its frames up to the last complete one");
  } else {
    end_offset_ = header_.toc_offset;
    if (total) check_toc();
  }
  return ok_status();
}

// Reads the TOC at T and keeps it when it is consistent (bap_reader.h); then
// returns to the first frame. Only for sources that can seek.
void FramesReader::check_toc() {
  const std::uint64_t total = *stream_->size();
  const std::uint64_t t = header_.toc_offset;
  auto give_up = [&](std::string why) {
    note("the TOC is not used: " + why);
    header_.toc.clear();
    header_.toc_layout = FramesHeader::TocLayout::kNone;
  };
  if ((total - t - 8) % 8 != 0) {
    give_up("the TOC index at " + hex(t) + " is not a whole number of u64 entries");
  } else if (!seek(t) || !read_exact(scratch_, total - t)) {
    give_up("the TOC index at " + hex(t) + " cannot be read");
  } else {
    const std::uint64_t m = load_u64(scratch_.data());
    const std::uint64_t count = (total - t - 8) / 8;
    const std::uint64_t n = header_.frame_count;
    header_.frames_per_toc_entry = m;
    for (std::uint64_t i = 0; i < count; ++i) header_.toc.push_back(load_u64(scratch_.data() + 8 + 8 * i));
    if (m == 0) {
      give_up("m = 0 frames per TOC entry");
    } else if (count == (n + m - 1) / m) {
      header_.toc_layout = FramesHeader::TocLayout::kOurs;
    } else if (n > 0 && count == (n - 1) / m) {
      header_.toc_layout = FramesHeader::TocLayout::kLibtrace;
    } else {
      give_up(std::to_string(count) + " entries, where n = " + std::to_string(n) + " and m = " + std::to_string(m) +
              " give " + std::to_string((n + m - 1) / m) + " (ceil(n/m)) or " + std::to_string(n ? (n - 1) / m : 0) +
              " (floor((n-1)/m))");
    }
    std::uint64_t previous = 0;
    for (std::uint64_t i = 0; header_.toc_layout != FramesHeader::TocLayout::kNone && i < count; ++i) {
      const std::uint64_t entry = header_.toc[i];
      if (entry < header_.first_frame_offset || entry + 8 > t || (i > 0 && entry <= previous))
        give_up("entry " + std::to_string(i) + " (" + hex(entry) + ") is not inside the frames in increasing order");
      previous = entry;
    }
    // Entry 0 tells the layouts apart: ours points at frame 0, libtrace's at
    // frame m (found by walking m size fields from the first frame).
    if (header_.toc_layout == FramesHeader::TocLayout::kOurs && count > 0 &&
        header_.toc[0] != header_.first_frame_offset)
      give_up("entry 0 (" + hex(header_.toc[0]) + ") is not the first frame (" + hex(header_.first_frame_offset) + ")");
    if (header_.toc_layout == FramesHeader::TocLayout::kLibtrace && count > 0) {
      std::uint64_t at = header_.first_frame_offset;
      for (std::uint64_t i = 0; i < m && at + 8 <= t; ++i) {
        if (!seek(at) || !read_exact(scratch_, 8)) break;
        const std::uint64_t size = load_u64(scratch_.data());
        at = size > t - at - 8 ? t : at + 8 + size;
      }
      if (header_.toc[0] != at)
        give_up("entry 0 (" + hex(header_.toc[0]) + ") is not frame m = " + std::to_string(m) + " (" + hex(at) + ")");
    }
  }
  seek(header_.first_frame_offset);
}

Expected<bool> FramesReader::read_frame() {
  if (done_) return false;
  const std::uint64_t at = offset_;
  const std::uint64_t index = frame_index_;
  if (at == end_offset_) {
    done_ = true;
    if (index != header_.frame_count)
      note("the header says n = " + std::to_string(header_.frame_count) + " frames, the file has " +
           std::to_string(index));
    return false;
  }
  auto cut_short = [&](std::string what) {
    done_ = true;
    note("the trace ends inside frame " + std::to_string(index) + " at offset " + hex(at) + " (" + what + ")" +
         (stream_->problem.empty() ? "" : " (" + stream_->problem + ")") +
         "; read up to the last complete frame, which ends at offset " + hex(at));
    return false;
  };
  if (!read_exact(scratch_, 8)) {
    if (scratch_.empty() && end_offset_ == kUnknownEnd && stream_->problem.empty()) {
      done_ = true;
      if (header_.toc_offset == 0)
        note("the trace has no TOC (T = 0: the recording did not finish); read its " + std::to_string(index) +
             " complete frames, which end at offset " + hex(at));
      else  // cut short between two frames (T lies beyond the end: noted at open)
        note("the file ends between two frames, at offset " + hex(at) + ", before its TOC; read its " +
             std::to_string(index) + " complete frames");
      return false;
    }
    return cut_short("its size field is cut short");
  }
  const std::uint64_t size = load_u64(scratch_.data());
  if (size > bap::kMaxFrameBytes)
    return error_at(at, "frame " + std::to_string(index) + " declares " + std::to_string(size) +
                            " bytes (the limit is " + std::to_string(bap::kMaxFrameBytes) + ")");
  if (end_offset_ != kUnknownEnd && size > end_offset_ - at - 8)
    return error_at(at, "frame " + std::to_string(index) + " (" + std::to_string(size) +
                            " bytes) runs past the TOC index at T = " + hex(end_offset_) +
                            " (expected frames to end exactly at T)");
  if (const auto total = stream_->size(); total && size > *total - at - 8)
    return cut_short("it declares " + std::to_string(size) + " bytes, the file holds " + std::to_string(*total - at - 8));
  if (!read_exact(scratch_, size)) return cut_short("it declares " + std::to_string(size) + " bytes");
  parsed_->frame.Clear();
  if (!parsed_->frame.ParsePartialFromArray(scratch_.data(), static_cast<int>(size)) ||
      !parsed_->frame.IsInitialized())
    return error_at(at + 8, "frame " + std::to_string(index) +
                                " does not parse as a protobuf `frame` (or lacks a required field)");
  const pb::frame& f = parsed_->frame;
  const int kinds = f.has_std_frame() + f.has_syscall_frame() + f.has_exception_frame() + f.has_taint_intro_frame() +
                    f.has_modload_frame() + f.has_key_frame();
  if (kinds != 1)
    return error_at(at + 8, "frame " + std::to_string(index) + " sets " + std::to_string(kinds) +
                                " kinds of frame (expected exactly one)");
  parsed_->offset = at;
  parsed_->index = index;
  offset_ = at + 8 + size;
  ++frame_index_;
  return true;
}

int FramesReader::register_index(const std::string& name) const {
  const auto found = register_by_name_.find(name);
  return found == register_by_name_.end() ? -1 : found->second;
}

// produce()'s steps: one frame's events, a step for each kind of frame. It
// lives for one frame; the events' thread is the frame's. An instruction's
// steps (instruction, to_register, learn, memory) are inlined, as they were
// when produce() was one function: called apart, they cost `tracecorn stat`
// 0.6% more instructions.
class FramesReader::FrameEvents {
 public:
  FrameEvents(FramesReader& reader, const EventCallback& on_event) : reader_(reader), on_event_(on_event) {}
  Status produce(const pb::frame& f);

 private:
  // A template, so that each payload is built in the event.
  template <typename Payload>
  void emit(events::EventKind kind, Payload&& payload);
  void set_thread(std::uint64_t id) { event_.thread = events::ThreadId{static_cast<std::uint32_t>(id)}; }
  // A register operand's value as the arch table's register (zero-extended), or -1.
  int to_register(const std::string& name, const std::string& bytes, events::RegisterValue& out) const;
  void learn(const events::RegisterValue& value);
  // Our effect fields (frames.proto): the registers of a list (learnt), the memory writes.
  std::vector<events::RegisterValue> register_changes(const pb::operand_value_list& list);
  template <typename List>
  static std::vector<events::MemoryWriteEffect> memory_writes(const List& list);
  // A memory operand as MemoryEvents of 8 bytes at most.
  void memory(const pb::operand_info& operand, bool write, std::uint64_t pc, bool pc_known);
  // "<kind> frame <index>: <what>", at the frame's protobuf bytes.
  Error frame_error(const char* kind, const std::string& what) const;
  void instruction(const pb::std_frame& frame);
  Status syscall(const pb::syscall_frame& frame);
  Status exception(const pb::exception_frame& frame);
  Status process_change(const pb::exception_frame& frame);
  Status signal_or_thread(const pb::exception_frame& frame);
  void module_load(const pb::modload_frame& frame);
  void key(const pb::key_frame& frame);

  FramesReader& reader_;
  const EventCallback& on_event_;
  events::Event event_;
};

Status FramesReader::produce(const EventCallback& on_event) {
  return FrameEvents(*this, on_event).produce(parsed_->frame);
}

Status FramesReader::FrameEvents::produce(const pb::frame& f) {
  if (f.has_std_frame()) instruction(f.std_frame());
  else if (f.has_syscall_frame()) return syscall(f.syscall_frame());
  else if (f.has_exception_frame()) return exception(f.exception_frame());
  else if (f.has_modload_frame()) module_load(f.modload_frame());
  else if (f.has_key_frame()) key(f.key_frame());
  return ok_status();
}

template <typename Payload>
void FramesReader::FrameEvents::emit(events::EventKind kind, Payload&& payload) {
  event_.sequence = events::EventSequence{reader_.next_sequence_++};
  event_.kind = kind;
  event_.payload = std::forward<Payload>(payload);
  on_event_(event_);
}

[[gnu::always_inline]] inline
int FramesReader::FrameEvents::to_register(const std::string& name, const std::string& bytes,
                                           events::RegisterValue& out) const {
  const int index = reader_.register_index(name);
  if (index < 0) return -1;
  out = events::RegisterValue{};
  out.index = static_cast<std::uint16_t>(index);
  out.size = static_cast<std::uint8_t>(
      std::min<std::size_t>(reader_.arch_->registers[static_cast<std::size_t>(index)].size, 16));
  std::memcpy(out.bytes.data(), bytes.data(), std::min<std::size_t>(bytes.size(), out.size));
  return index;
}

[[gnu::always_inline]] inline
void FramesReader::FrameEvents::learn(const events::RegisterValue& value) {
  reader_.registers_[value.index] = value;
  reader_.known_[value.index] = true;
}

std::vector<events::RegisterValue> FramesReader::FrameEvents::register_changes(const pb::operand_value_list& list) {
  std::vector<events::RegisterValue> changed;
  events::RegisterValue value;
  for (const auto& operand : list.elem())
    if (operand.operand_info_specific().has_reg_operand() &&
        to_register(operand.operand_info_specific().reg_operand().name(), operand.value(), value) >= 0) {
      changed.push_back(value);
      learn(value);
    }
  return changed;
}

template <typename List>
std::vector<events::MemoryWriteEffect> FramesReader::FrameEvents::memory_writes(const List& list) {
  std::vector<events::MemoryWriteEffect> writes;
  for (const auto& write : list)
    writes.push_back({events::GuestAddress{write.address()},
                      std::span(reinterpret_cast<const std::uint8_t*>(write.bytes().data()), write.bytes().size())});
  return writes;
}

[[gnu::always_inline]] inline
void FramesReader::FrameEvents::memory(const pb::operand_info& operand, bool write, std::uint64_t pc, bool pc_known) {
  const std::uint64_t address = operand.operand_info_specific().mem_operand().address();
  const std::string& value = operand.value();
  std::size_t size = operand.bit_length() > 0 ? static_cast<std::size_t>(operand.bit_length() + 7) / 8 : value.size();
  size = std::min(size, value.size());
  for (std::size_t piece = 0; piece < size || (piece == 0 && size == 0); piece += 8) {
    events::MemoryEvent memory;
    memory.address = events::GuestAddress{address + piece};
    memory.size = static_cast<std::uint8_t>(std::min<std::size_t>(size - piece, 8));
    for (std::size_t b = 0; b < memory.size; ++b)
      memory.value |= static_cast<std::uint64_t>(static_cast<std::uint8_t>(value[piece + b])) << (8 * b);
    memory.pc = events::GuestAddress{pc};
    memory.pc_known = pc_known;
    emit(write ? events::EventKind::kMemoryWrite : events::EventKind::kMemoryRead, memory);
    if (size == 0) break;
  }
}

Error FramesReader::FrameEvents::frame_error(const char* kind, const std::string& what) const {
  return reader_.error_at(reader_.parsed_->offset + 8,
                          std::string(kind) + " frame " + std::to_string(reader_.parsed_->index) + ": " + what);
}

[[gnu::always_inline]] inline
void FramesReader::FrameEvents::instruction(const pb::std_frame& frame) {
  set_thread(frame.thread_id());
  const arch::ArchInfo& arch = *reader_.arch_;
  const std::string& raw = frame.rawbytes();
  // `mode` names the instruction set (arm: "Thumb" = 1); any other value, or none, is mode 0.
  const std::uint8_t mode =
      arch.alternate_isa && frame.has_mode() && frame.mode() == arch.alternate_isa->names[1] ? 1 : 0;
  emit(events::EventKind::kInstruction,
       events::InstructionEvent{events::GuestAddress{frame.address()}, static_cast<std::uint32_t>(raw.size()),
                                std::span(reinterpret_cast<const std::uint8_t*>(raw.data()), raw.size()), 0, mode});
  reader_.seen_instruction_ = true;
  events::RegisterValue value;
  for (const auto& operand : frame.operand_pre_list().elem()) {
    if (operand.operand_info_specific().has_mem_operand())
      memory(operand, false, frame.address(), true);
    else if (to_register(operand.operand_info_specific().reg_operand().name(), operand.value(), value) >= 0)
      learn(value);
  }
  std::vector<events::RegisterValue> changes;
  for (const auto& operand : frame.operand_post_list().elem()) {
    if (operand.operand_info_specific().has_mem_operand()) {
      memory(operand, true, frame.address(), true);
    } else if (to_register(operand.operand_info_specific().reg_operand().name(), operand.value(), value) >= 0) {
      const bool same = reader_.known_[value.index] && std::memcmp(reader_.registers_[value.index].bytes.data(),
                                                                   value.bytes.data(), value.bytes.size()) == 0;
      if (!same) changes.push_back(value);
      learn(value);
    }
  }
  if (!changes.empty())
    emit(events::EventKind::kRegisters, events::RegistersEvent{events::GuestAddress{frame.address()}, changes});
  for (const auto& operand : frame.tracecorn_unattributed().elem())
    if (operand.operand_info_specific().has_mem_operand())
      memory(operand, operand.operand_usage().written(), frame.address(), false);
}

Status FramesReader::FrameEvents::syscall(const pb::syscall_frame& frame) {
  set_thread(frame.thread_id());
  const std::vector<events::MemoryWriteEffect> writes = memory_writes(frame.tracecorn_memory_writes());
  std::vector<events::MappingEffect> mappings;
  for (const auto& change : frame.tracecorn_mapping_changes()) {
    if (change.kind() < 1 || change.kind() > 3)
      return frame_error("syscall", "mapping change kind " + std::to_string(change.kind()) +
                                        " (expected 1 map, 2 unmap or 3 protect)");
    mappings.push_back({static_cast<events::MappingChangeKind>(change.kind()), events::GuestAddress{change.start()},
                        change.length(), change.prot()});
  }
  const std::vector<events::RegisterValue> changed = register_changes(frame.tracecorn_register_changes());
  const std::vector<std::uint64_t> stack(frame.tracecorn_call_stack().begin(), frame.tracecorn_call_stack().end());
  const arch::SyscallId id = reader_.arch_->syscall_id(frame.number());
  const std::string name = id == arch::SyscallId::unknown ? "syscall_" + std::to_string(frame.number())
                                                          : std::string(arch::syscall_name(id));
  events::SyscallEvent call;
  call.pc = events::GuestAddress{frame.address()};
  call.number = frame.number();
  call.name = name;
  for (int i = 0; i < 6 && i < frame.argument_list().elem_size(); ++i)
    call.args[i] = static_cast<std::uint64_t>(frame.argument_list().elem(i));
  call.result = frame.tracecorn_result();
  call.memory_writes = writes;
  call.mapping_changes = mappings;
  call.register_changes = changed;
  call.call_stack = stack;
  emit(events::EventKind::kSyscall, call);
  return ok_status();
}

// An exception frame: one of our notes (no event), a process change, a
// signal or thread change, a gap, or else a fault.
Status FramesReader::FrameEvents::exception(const pb::exception_frame& frame) {
  set_thread(frame.thread_id());
  if (frame.tracecorn_interrupted()) {
    reader_.interrupted_ = true;  // the interruption note (bap_writer.h): no event
  } else if (frame.tracecorn_killed()) {
    // The death note: no event. (A number past 32 bits, from another writer, stays non-zero.)
    reader_.killed_by_signal_ =
        static_cast<std::uint32_t>(std::min<std::uint64_t>(frame.exception_number(), UINT32_MAX));
  } else if (frame.has_tracecorn_process_change()) {
    return process_change(frame);
  } else if (frame.has_tracecorn_signal_code() || frame.has_tracecorn_thread_change()) {
    return signal_or_thread(frame);
  } else if (frame.has_tracecorn_lost_events()) {
    emit(events::EventKind::kGap, events::GapEvent{frame.tracecorn_lost_events(), frame.tracecorn_description()});
    reader_.next_sequence_ += frame.tracecorn_lost_events();  // the lost events had these numbers
    reader_.known_.assign(reader_.known_.size(), false);
  } else {
    emit(events::EventKind::kFault,
         events::FaultEvent{events::GuestAddress{frame.from_addr()},
                            events::GuestAddress{frame.tracecorn_fault_address()},
                            static_cast<std::uint32_t>(frame.exception_number()), frame.tracecorn_description()});
  }
  return ok_status();
}

Status FramesReader::FrameEvents::process_change(const pb::exception_frame& frame) {
  const std::uint32_t change = frame.tracecorn_process_change();
  if (change < 1 || change > 2)
    return frame_error("exception", "process change " + std::to_string(change) + " (expected 1 forked or 2 exec'd)");
  emit(events::EventKind::kProcess,
       events::ProcessEvent{static_cast<events::ProcessChange>(change), frame.tracecorn_process_pid(),
                            frame.tracecorn_process_trace(), frame.tracecorn_process_detail()});
  return ok_status();
}

// Ours (frames.proto): a signal delivery or a thread change, with its effects.
Status FramesReader::FrameEvents::signal_or_thread(const pb::exception_frame& frame) {
  const std::vector<events::MemoryWriteEffect> writes = memory_writes(frame.tracecorn_memory_writes());
  const std::vector<events::RegisterValue> changed = register_changes(frame.tracecorn_register_changes());
  if (frame.has_tracecorn_signal_code()) {
    events::SignalEvent signal;
    signal.signal = static_cast<std::uint32_t>(frame.exception_number());
    signal.code = frame.tracecorn_signal_code();
    signal.sender_pid = frame.tracecorn_sender_pid();
    signal.fault_address = events::GuestAddress{frame.tracecorn_fault_address()};
    signal.interrupted_pc = events::GuestAddress{frame.from_addr()};
    signal.handler = events::GuestAddress{frame.to_addr()};
    signal.frame = events::GuestAddress{frame.tracecorn_signal_frame()};
    signal.fault = frame.tracecorn_signal_fault();
    signal.frame_writes = writes;
    signal.register_changes = changed;
    emit(events::EventKind::kSignal, signal);
    return ok_status();
  }
  const std::uint32_t change = frame.tracecorn_thread_change();
  if (change < 1 || change > 3)
    return frame_error("exception", "thread change " + std::to_string(change) +
                                        " (expected 1 created, 2 exited or 3 switched)");
  events::ThreadEvent thread;
  thread.change = static_cast<events::ThreadChange>(change);
  thread.from = events::ThreadId{static_cast<std::uint32_t>(frame.tracecorn_thread_from())};
  thread.exit_code = frame.tracecorn_thread_exit_code();
  thread.registers = changed;
  emit(events::EventKind::kThread, thread);
  return ok_status();
}

void FramesReader::FrameEvents::module_load(const pb::modload_frame& frame) {
  set_thread(frame.tracecorn_thread_id());
  const std::uint64_t high = frame.high_address();
  emit(events::EventKind::kModuleLoad,
       events::ModuleLoadEvent{events::GuestAddress{frame.low_address()},
                               events::GuestAddress{high == ~0ull ? high : high + 1}, frame.tracecorn_load_bias(),
                               frame.module_name()});
}

// No event: the register file learns its registers; the first before any
// instruction is the initial state.
void FramesReader::FrameEvents::key(const pb::key_frame& frame) {
  events::TraceInfo& info = reader_.info_;
  const bool initial = !reader_.seen_instruction_ && !info.has_initial_state;
  events::RegisterValue value;
  for (const auto& list : frame.tagged_value_lists().elem())
    for (const auto& operand : list.value_list().elem())
      if (operand.operand_info_specific().has_reg_operand() &&
          to_register(operand.operand_info_specific().reg_operand().name(), operand.value(), value) >= 0) {
        learn(value);
        if (initial) info.initial_registers.push_back(value);
      }
  if (initial) info.has_initial_state = true;
}

Expected<bool> FramesReader::next(const EventCallback& on_event) {
  try {
    if (!have_parsed_) {
      auto read = read_frame();
      if (!read) {
        done_ = true;
        return read.error();
      }
      if (!*read) return false;
    }
    have_parsed_ = false;
    if (auto status = produce(on_event); !status) {
      done_ = true;
      return status.error();
    }
    return true;
  } catch (const std::bad_alloc&) {
    done_ = true;
    return make_error(ErrorCode::kLimit, "out of memory decoding the frame", source_, offset_);
  }
}

Status FramesReader::seek_frame(std::uint64_t index) {
  try {
    toc_used_ = false;
    known_.assign(known_.size(), false);
    auto restart = [&](std::uint64_t offset, std::uint64_t frame) {
      if (!seek(offset)) return false;
      frame_index_ = frame;
      have_parsed_ = false;
      done_ = false;
      return true;
    };
    using Layout = FramesHeader::TocLayout;
    if (header_.toc_layout != Layout::kNone) {
      if (index >= header_.frame_count)
        return make_error(ErrorCode::kInvalidArgument,
                          "frame " + std::to_string(index) + " is beyond the last (n = " +
                              std::to_string(header_.frame_count) + ")",
                          source_);
      const std::uint64_t m = header_.frames_per_toc_entry;
      const std::uint64_t k = index / m;
      std::uint64_t offset = header_.first_frame_offset;
      if (header_.toc_layout == Layout::kOurs && k < header_.toc.size()) offset = header_.toc[k];
      if (header_.toc_layout == Layout::kLibtrace && k > 0 && k - 1 < header_.toc.size()) offset = header_.toc[k - 1];
      auto landed = restart(offset, k * m) ? read_frame() : Expected<bool>(false);
      if (landed && *landed) {
        have_parsed_ = true;
        toc_used_ = true;
      } else {
        note("TOC entry " + std::to_string(k) + " (" + hex(offset) + ") does not point at a frame; the TOC is not used");
        header_.toc_layout = Layout::kNone;
        restart(header_.first_frame_offset, 0);
      }
    }
    auto position = [&] { return have_parsed_ ? frame_index_ - 1 : frame_index_; };
    if (!toc_used_ && position() > index && !restart(header_.first_frame_offset, 0))
      return make_error(ErrorCode::kUnsupported,
                        "cannot seek backwards in a compressed trace (frame " + std::to_string(index) + ")", source_);
    while (position() < index) {
      if (have_parsed_) {
        have_parsed_ = false;
        continue;
      }
      auto read = read_frame();
      if (!read) return read.error();
      if (!*read)
        return make_error(ErrorCode::kInvalidArgument,
                          "frame " + std::to_string(index) + " is beyond the last (" + std::to_string(frame_index_) + ")",
                          source_);
    }
    return ok_status();
  } catch (const std::bad_alloc&) {
    return make_error(ErrorCode::kLimit, "out of memory seeking", source_, offset_);
  }
}

Status FramesReader::read_all(events::Sink& sink) { return formats::read_all(*this, sink); }

std::uint64_t FramesReader::file_bytes_read() const { return stream_->consumed(); }

}  // namespace tracecorn::formats
