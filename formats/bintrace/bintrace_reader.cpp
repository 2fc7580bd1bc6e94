// Role: implementation of the binary trace v1.0 reader (see bintrace_reader.h
// and bintrace_layout.h).
#include "formats/bintrace/bintrace_reader.h"

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>

#include <zstd.h>

#include "formats/bintrace/bintrace_layout.h"
#include "formats/common/byte_stream.h"
#include "formats/common/read_all.h"
#include "recorder/support/hex.h"

namespace tracecorn::formats {

namespace bt = bintrace;

// ---- where bytes come from ----

class BintraceReader::Input {
 public:
  virtual ~Input() = default;
  // Reads up to `count` bytes at the current position; returns how many.
  virtual std::size_t read(std::uint8_t* out, std::size_t count) = 0;
  std::uint64_t size = 0;      // bytes in the whole input
  std::uint64_t position = 0;  // bytes consumed
  std::uint64_t left() const { return size - position; }
};

namespace {

// The file (or memory) through the byte sources every format reader shares
// (formats/common/byte_stream.h); `total` is its size, which this reader needs
// up front (sections are checked against what the file has left).
class SourceInput final : public BintraceReader::Input {
 public:
  explicit SourceInput(std::unique_ptr<ByteSource> source, std::uint64_t total) : source_(std::move(source)) {
    size = total;
  }
  std::size_t read(std::uint8_t* out, std::size_t count) override {
    buffer_.clear();
    while (buffer_.size() < count)
      if (source_->read(buffer_, count - buffer_.size()) == 0) break;
    if (!buffer_.empty()) std::memcpy(out, buffer_.data(), buffer_.size());
    position += buffer_.size();
    return buffer_.size();
  }

 private:
  std::unique_ptr<ByteSource> source_;
  std::vector<std::uint8_t> buffer_;
};

// Bounds-checked reads from a section held in memory.
struct Cursor {
  std::span<const std::uint8_t> bytes;
  std::size_t pos = 0;
  std::uint64_t base = 0;  // file offset of bytes[0]
  std::uint64_t offset() const { return base + pos; }
  std::size_t left() const { return bytes.size() - pos; }
  bool has(std::uint64_t count) const { return count <= left(); }
  std::uint64_t le(std::size_t count) {
    const std::uint64_t value = bt::read_le(bytes.subspan(pos, count));
    pos += count;
    return value;
  }
  std::span<const std::uint8_t> take(std::size_t count) {
    auto out = bytes.subspan(pos, count);
    pos += count;
    return out;
  }
};

std::string magic_text(std::uint32_t magic) {
  std::string text;
  for (int i = 0; i < 4; ++i) {
    const char c = static_cast<char>(magic >> (8 * i));
    text += (c >= 0x20 && c < 0x7f) ? c : '?';
  }
  return text;
}

}  // namespace

// The events section's bytes, plain or through one zstd frame, read a window at
// a time and never past the section's end.
class BintraceReader::Events {
 public:
  Events(Input& input, std::uint64_t end, bool zstd) : input_(input), end_(end), start_(input.position) {
    if (zstd) {
      zstd_ = ZSTD_createDCtx();
      compressed_.resize(ZSTD_DStreamInSize());
    }
  }
  ~Events() {
    if (zstd_) ZSTD_freeDCtx(zstd_);
  }
  Events(const Events&) = delete;
  Events& operator=(const Events&) = delete;

  bool zstd() const { return zstd_ != nullptr || zstd_failed_; }
  // Makes `count` bytes available at data(); false when the section (or the
  // decompressed stream) ends before.
  bool ensure(std::size_t count) {
    while (window_.size() - pos_ < count)
      if (!fill(count)) return false;
    return true;
  }
  const std::uint8_t* data() const { return window_.data() + pos_; }
  void advance(std::size_t count) { pos_ += count; }
  // The offset of data(): in the file (plain) or in the decompressed events (zstd).
  std::uint64_t offset() const { return (zstd() ? 0 : start_) + base_ + pos_; }
  const std::string& stream_error() const { return stream_error_; }
  // Whether the section was consumed exactly (plain: up to its end; zstd: one
  // complete frame and nothing after it).
  bool finished_cleanly() {
    if (ensure(1)) return false;
    if (!zstd_) return input_.position == end_;
    return frame_complete_ && in_pos_ == in_size_ && input_.position == end_;
  }

 private:
  bool fill(std::size_t want) {
    if (pos_ > 0) {
      window_.erase(window_.begin(), window_.begin() + static_cast<std::ptrdiff_t>(pos_));
      base_ += pos_;
      pos_ = 0;
    }
    if (!zstd_) {
      const std::uint64_t left = end_ - input_.position;
      const std::size_t chunk = static_cast<std::size_t>(std::min<std::uint64_t>(std::max<std::size_t>(want, 1 << 16), left));
      if (chunk == 0) return false;
      const std::size_t old = window_.size();
      window_.resize(old + chunk);
      const std::size_t got = input_.read(window_.data() + old, chunk);
      window_.resize(old + got);
      return got > 0;
    }
    for (;;) {
      if (in_pos_ == in_size_) {
        const std::size_t chunk =
            static_cast<std::size_t>(std::min<std::uint64_t>(compressed_.size(), end_ - input_.position));
        in_size_ = chunk ? input_.read(compressed_.data(), chunk) : 0;
        in_pos_ = 0;
        if (in_size_ == 0) return false;  // the section ends (a truncated frame if !frame_complete_)
      }
      const std::size_t old = window_.size();
      window_.resize(old + ZSTD_DStreamOutSize());
      ZSTD_inBuffer in{compressed_.data(), in_size_, in_pos_};
      ZSTD_outBuffer out{window_.data() + old, ZSTD_DStreamOutSize(), 0};
      const std::size_t result = ZSTD_decompressStream(zstd_, &out, &in);
      in_pos_ = in.pos;
      window_.resize(old + out.pos);
      if (ZSTD_isError(result)) {
        stream_error_ = std::string("zstd: ") + ZSTD_getErrorName(result);
        ZSTD_freeDCtx(zstd_);
        zstd_ = nullptr;
        zstd_failed_ = true;
        in_pos_ = in_size_ = 0;
        return false;
      }
      frame_complete_ = result == 0;
      if (out.pos > 0) return true;
      if (frame_complete_ && in_pos_ == in_size_ && input_.position == end_) return false;
      if (frame_complete_) {
        // Bytes after the frame: a second frame is not ours; stop here (finished_cleanly() says so).
        return false;
      }
    }
  }

  Input& input_;
  std::uint64_t end_;
  std::uint64_t start_;
  ZSTD_DCtx* zstd_ = nullptr;
  bool zstd_failed_ = false;
  bool frame_complete_ = false;
  std::vector<std::uint8_t> compressed_;
  std::size_t in_pos_ = 0, in_size_ = 0;
  std::vector<std::uint8_t> window_;
  std::size_t pos_ = 0;
  std::uint64_t base_ = 0;
  std::string stream_error_;
};

// ---- opening ----

BintraceReader::BintraceReader(std::unique_ptr<Input> input, std::string source)
    : input_(std::move(input)), source_(std::move(source)) {}

BintraceReader::~BintraceReader() = default;

Error BintraceReader::error_at(std::uint64_t offset, std::string message) const {
  ErrorCode code = ErrorCode::kBadFormat;
  if (events_ && events_->zstd()) message = "in the decompressed events: " + message;
  return make_error(code, std::move(message), source_, offset);
}

Expected<std::unique_ptr<BintraceReader>> BintraceReader::open(const std::string& path) {
  auto source = open_file_source(path);
  if (!source) return source.error();
  const auto size = (*source)->size();
  if (!size) return make_error(ErrorCode::kIo, "cannot tell the file's size (not a regular file?)", path);
  return start(std::make_unique<SourceInput>(std::move(*source), *size), path);
}

Expected<std::unique_ptr<BintraceReader>> BintraceReader::from_bytes(std::vector<std::uint8_t> bytes,
                                                                     std::string source) {
  const std::uint64_t size = bytes.size();
  return start(std::make_unique<SourceInput>(make_memory_source(std::move(bytes)), size), std::move(source));
}

Expected<std::unique_ptr<BintraceReader>> BintraceReader::start(std::unique_ptr<Input> input, std::string source) {
  std::unique_ptr<BintraceReader> reader(new BintraceReader(std::move(input), std::move(source)));
  if (auto status = reader->parse_sections(); !status) return status.error();
  return reader;
}

bool BintraceReader::recognizes(std::span<const std::uint8_t> first_bytes) {
  if (first_bytes.size() < 9) return false;
  const std::uint64_t first = bt::read_le(first_bytes.first(8));
  if (first == bt::kMetadataMagic) return true;
  return first == 1 && (first_bytes[8] == bt::kCompressionNone || first_bytes[8] == bt::kCompressionZstd);
}

bool BintraceReader::can_carry(events::EventKind kind) {
  return kind != events::EventKind::kBlock && kind != events::EventKind::kMemoryRead;
}

Status BintraceReader::parse_sections() {
  Input& in = *input_;
  // Reads `count` bytes that must be there (the file is at least that long).
  auto take = [&](std::uint64_t count, const char* what) -> Expected<std::vector<std::uint8_t>> {
    if (count > in.left())
      return make_error(ErrorCode::kTruncated,
                        std::string(what) + " needs " + std::to_string(count) + " bytes, the file has " +
                            std::to_string(in.left()) + " left",
                        source_, in.position);
    std::vector<std::uint8_t> bytes(static_cast<std::size_t>(count));
    if (in.read(bytes.data(), bytes.size()) != bytes.size())
      return make_error(ErrorCode::kIo, std::string("short read in ") + what, source_, in.position);
    return bytes;
  };
  auto take_u64 = [&](const char* what) -> Expected<std::uint64_t> {
    auto bytes = take(8, what);
    if (!bytes) return bytes.error();
    return bt::read_le(*bytes);
  };

  // The metadata wrapper, when there is one.
  if (in.size >= 8) {
    auto head = take(8, "the first field");
    if (!head) return head.error();
    if (bt::read_le(*head) == bt::kMetadataMagic) {
      auto rest = take(bt::kMetadataBytes - 8, "the metadata header");
      if (!rest) return rest.error();
      Cursor c{*rest, 0, 8};
      metadata_.present = true;
      metadata_.version = static_cast<std::uint32_t>(c.le(4));
      metadata_.type = static_cast<std::uint32_t>(c.le(4));
      if (metadata_.version != bt::kMetadataVersion)
        return make_error(ErrorCode::kUnsupported, "metadata version " + std::to_string(metadata_.version) + " (1 expected)",
                          source_, 8);
      if (metadata_.type != bt::kMetadataTypeTrace)
        return make_error(ErrorCode::kUnsupported,
                          "metadata type " + std::to_string(metadata_.type) + " (1, a trace, expected)", source_, 12);
      std::string* strings[4] = {&metadata_.format_version, &metadata_.tool_name, &metadata_.tool_version,
                                 &metadata_.tool_info};
      for (int i = 0; i < 4; ++i) {
        const std::uint64_t at = c.offset();
        const std::uint64_t length = c.le(8);
        const std::size_t field = bt::kMetadataStringBytes[i];
        if (length > field)
          return make_error(ErrorCode::kBadFormat,
                            "metadata string of " + std::to_string(length) + " bytes in a " + std::to_string(field) +
                                "-byte field",
                            source_, at);
        auto bytes = c.take(field);
        strings[i]->assign(reinterpret_cast<const char*>(bytes.data()), static_cast<std::size_t>(length));
      }
      metadata_.unix_time = c.le(8);
      if (metadata_.format_version.rfind(bt::kFormatMajor, 0) != 0)
        return make_error(ErrorCode::kUnsupported,
                          "format version '" + metadata_.format_version + "' (only 1.x is read)", source_, 16);
      auto size = take_u64("the header section's size");
      if (!size) return size.error();
      head = std::vector<std::uint8_t>(8);
      for (int i = 0; i < 8; ++i) (*head)[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(*size >> (8 * i));
    }
    // `head` now holds the header section's size.
    const std::uint64_t header_at = in.position - 8;
    const std::uint64_t header_size = bt::read_le(*head);
    if (header_size != 1)
      return make_error(ErrorCode::kBadFormat,
                        "header section of " + std::to_string(header_size) + " bytes (1 expected: the compression)",
                        source_, header_at);
  } else {
    return make_error(ErrorCode::kTruncated, "the file is too short for a header section", source_, 0);
  }
  auto compression = take(1, "the compression scheme");
  if (!compression) return compression.error();
  compression_ = (*compression)[0];
  if (compression_ != bt::kCompressionNone && compression_ != bt::kCompressionZstd)
    return make_error(ErrorCode::kUnsupported, "compression scheme " + std::to_string(compression_) +
                                                   " (0, or our zstd extension 1)",
                      source_, in.position - 1);

  // Machine description.
  auto machine_size = take_u64("the machine description's size");
  if (!machine_size) return machine_size.error();
  const std::uint64_t machine_at = in.position;
  auto machine = take(*machine_size, "the machine description");
  if (!machine) return machine.error();
  if (auto status = parse_machine(*machine, machine_at); !status) return status;
  state_ = std::make_unique<bt::MachineState>(machine_);

  // Initial memory: the regions' bytes in order, a chunk at a time.
  auto memory_size = take_u64("the initial memory's size");
  if (!memory_size) return memory_size.error();
  std::uint64_t expected = 0;
  for (const auto& region : machine_.regions) {
    if (region.size > ~0ull - expected)
      return make_error(ErrorCode::kBadFormat, "the regions' sizes overflow 64 bits", source_, in.position - 8);
    expected += region.size;
  }
  if (*memory_size != expected)
    return make_error(ErrorCode::kBadFormat,
                      "initial memory of " + std::to_string(*memory_size) + " bytes; the regions declare " +
                          std::to_string(expected),
                      source_, in.position - 8);
  if (expected > in.left())
    return make_error(ErrorCode::kTruncated,
                      "initial memory of " + std::to_string(expected) + " bytes, the file has " +
                          std::to_string(in.left()) + " left",
                      source_, in.position);
  std::vector<std::uint8_t> chunk(1 << 20);
  for (const auto& region : machine_.regions) {
    for (std::uint64_t done = 0; done < region.size;) {
      const auto count = static_cast<std::size_t>(std::min<std::uint64_t>(chunk.size(), region.size - done));
      if (in.read(chunk.data(), count) != count)
        return make_error(ErrorCode::kIo, "short read in the initial memory", source_, in.position);
      state_->memory().write(region.start + done, std::span(chunk).first(count));
      done += count;
    }
  }

  // Initial registers.
  auto registers_size = take_u64("the initial registers' size");
  if (!registers_size) return registers_size.error();
  const std::uint64_t registers_at = in.position;
  auto registers = take(*registers_size, "the initial registers");
  if (!registers) return registers.error();
  if (auto status = parse_initial_registers(*registers, registers_at); !status) return status;

  // Events: size, count, then the events (read as they are asked for).
  auto events_size = take_u64("the events section's size");
  if (!events_size) return events_size.error();
  const std::uint64_t events_at = in.position - 8;
  if (*events_size < 8)
    return make_error(ErrorCode::kBadFormat, "events section of " + std::to_string(*events_size) +
                                                 " bytes (at least 8: the event count)",
                      source_, events_at);
  if (*events_size > in.left())
    return make_error(ErrorCode::kTruncated,
                      "events section of " + std::to_string(*events_size) + " bytes, the file has " +
                          std::to_string(in.left()) + " left",
                      source_, events_at);
  if (*events_size < in.left())
    return make_error(ErrorCode::kBadFormat,
                      std::to_string(in.left() - *events_size) + " bytes after the events section (the last one)",
                      source_, in.position + *events_size);
  auto count = take_u64("the event count");
  if (!count) return count.error();
  event_count_ = *count;
  if (compression_ == bt::kCompressionNone && event_count_ > *events_size - 8)
    return make_error(ErrorCode::kBadFormat,
                      std::to_string(event_count_) + " events cannot fit in " + std::to_string(*events_size - 8) +
                          " bytes",
                      source_, events_at + 8);
  events_ = std::make_unique<Events>(in, in.position + (*events_size - 8), compression_ == bt::kCompressionZstd);

  map_registers();
  return ok_status();
}

Status BintraceReader::parse_machine(std::span<const std::uint8_t> bytes, std::uint64_t offset) {
  Cursor c{bytes, 0, offset};
  auto fail = [&](std::uint64_t at, std::string message, ErrorCode code = ErrorCode::kBadFormat) -> Status {
    return make_error(code, "machine description: " + message, source_, at);
  };
  auto need = [&](std::uint64_t count, const std::string& what) -> bool { return c.has(count) || (void(what), false); };
  if (!need(5, "magic")) return fail(c.offset(), "too short for the magic and PHY_SIZE");
  const std::uint64_t magic_at = c.offset();
  machine_.magic = static_cast<std::uint32_t>(c.le(4));
  for (const auto* candidate : arch::all_archs())
    if (candidate->format_ids.bintrace && candidate->format_ids.bintrace->magic == machine_.magic) arch_ = candidate;
  if (!arch_) {
    std::string why;  // a magic we know, of an architecture without a description
    for (const auto* candidate : arch::all_archs())
      if (candidate->format_ids.bintrace_magic == machine_.magic && !candidate->format_ids.bintrace_missing.empty())
        why = " is " + std::string(candidate->name) + "'s: " + std::string(candidate->format_ids.bintrace_missing);
    return fail(magic_at, "architecture magic " + hex(machine_.magic) + " ('" + magic_text(machine_.magic) + "')" + why,
                ErrorCode::kUnsupported);
  }
  const std::uint64_t phy_at = c.offset();
  const unsigned phy = static_cast<unsigned>(c.le(1));
  machine_.physical_address_size = static_cast<std::uint8_t>(phy);
  if (phy < 1 || phy > 8) return fail(phy_at, "PHY_SIZE " + std::to_string(phy) + " (1 to 8)");

  // Regions.
  if (!c.has(4)) return fail(c.offset(), "ends before the region count");
  const std::uint64_t regions_at = c.offset();
  const std::uint64_t regions = c.le(4);
  if (regions * 2 * phy > c.left())
    return fail(regions_at, std::to_string(regions) + " regions need " + std::to_string(regions * 2 * phy) +
                                " bytes, " + std::to_string(c.left()) + " left");
  const std::uint64_t phy_max = phy == 8 ? ~0ull : (1ull << (8 * phy)) - 1;
  std::uint64_t previous_end = 0;
  for (std::uint64_t i = 0; i < regions; ++i) {
    const std::uint64_t at = c.offset();
    bt::MemoryRegion region{c.le(phy), c.le(phy)};
    if (region.size == 0) return fail(at, "region " + std::to_string(i) + " is empty");
    if (region.size - 1 > phy_max - region.start)
      return fail(at, "region " + std::to_string(i) + " runs past the physical address space");
    if (i > 0 && region.start < previous_end)
      return fail(at, "region " + std::to_string(i) + " at " + hex(region.start) +
                          " overlaps or precedes the previous one (regions must ascend)");
    previous_end = region.start + region.size;  // may wrap to 0 only for the very last byte of the space
    if (previous_end == 0) previous_end = ~0ull;
    machine_.regions.push_back(region);
  }

  // Registers.
  if (!c.has(4)) return fail(c.offset(), "ends before the register count");
  const std::uint64_t registers_at = c.offset();
  const std::uint64_t registers = c.le(4);
  if (registers * 5 > c.left())
    return fail(registers_at, std::to_string(registers) + " registers cannot fit in " + std::to_string(c.left()) +
                                  " bytes");
  std::vector<bool> seen(65536, false);
  for (std::uint64_t i = 0; i < registers; ++i) {
    const std::uint64_t at = c.offset();
    if (!c.has(5)) return fail(at, "register " + std::to_string(i) + " runs past the section's end");
    bt::RegisterDeclaration reg;
    reg.id = static_cast<std::uint16_t>(c.le(2));
    reg.size = static_cast<std::uint16_t>(c.le(2));
    const std::size_t length = static_cast<std::size_t>(c.le(1));
    if (!c.has(length)) return fail(c.offset(), "register " + std::to_string(i) + "'s name runs past the section's end");
    const auto name = c.take(length);
    reg.name.assign(name.begin(), name.end());
    if (seen[reg.id]) return fail(at, "register id " + std::to_string(reg.id) + " declared twice");
    seen[reg.id] = true;
    if (reg.size == 0 || reg.size > bt::kMaxRegisterBytes)
      return fail(at + 2, "register " + reg.name + " of " + std::to_string(reg.size) + " bytes (1 to 64 are read)",
                  reg.size == 0 ? ErrorCode::kBadFormat : ErrorCode::kUnsupported);
    machine_.registers.push_back(std::move(reg));
  }
  machine_.index();

  // Operations.
  if (!c.has(4)) return fail(c.offset(), "ends before the operation count");
  const std::uint64_t operations_at = c.offset();
  const std::uint64_t operations = c.le(4);
  if (operations * 5 > c.left())
    return fail(operations_at, std::to_string(operations) + " operations cannot fit in " + std::to_string(c.left()) +
                                   " bytes");
  for (std::uint64_t i = 0; i < operations; ++i) {
    const std::uint64_t at = c.offset();
    if (!c.has(4)) return fail(at, "operation " + std::to_string(i) + " runs past the section's end");
    bt::OperationDeclaration op;
    op.id = static_cast<std::uint8_t>(c.le(1));
    op.target_id = static_cast<std::uint16_t>(c.le(2));
    op.op = static_cast<std::uint8_t>(c.le(1));
    if (op.id == 0xff) return fail(at, "operation id 0xff (reserved)");
    if (seen[op.id]) return fail(at, "operation id " + std::to_string(op.id) + " is already a register or operation id");
    seen[op.id] = true;
    const int target = machine_.register_slot(op.target_id);
    if (target < 0) return fail(at + 1, "operation " + std::to_string(op.id) + " names undeclared register " +
                                            std::to_string(op.target_id));
    if (op.op > bt::kOr) return fail(at + 3, "operator " + std::to_string(op.op) + " (0 to 3)");
    const std::size_t size = machine_.registers[static_cast<std::size_t>(target)].size;
    if (!c.has(size)) return fail(c.offset(), "operation " + std::to_string(op.id) + "'s value runs past the section's end");
    const auto value = c.take(size);
    op.value.assign(value.begin(), value.end());
    machine_.operations.push_back(std::move(op));
  }
  machine_.index();

  // Static registers.
  if (!c.has(4)) return fail(c.offset(), "ends before the static register count");
  const std::uint64_t statics_at = c.offset();
  const std::uint64_t statics = c.le(4);
  if (statics * 2 > c.left())
    return fail(statics_at, std::to_string(statics) + " static registers cannot fit in " + std::to_string(c.left()) +
                                " bytes");
  for (std::uint64_t i = 0; i < statics; ++i) {
    const std::uint64_t at = c.offset();
    if (!c.has(1)) return fail(at, "static register " + std::to_string(i) + " runs past the section's end");
    const std::size_t length = static_cast<std::size_t>(c.le(1));
    if (!c.has(length + 1)) return fail(c.offset(), "static register " + std::to_string(i) + " runs past the section's end");
    const auto name = c.take(length);
    bt::StaticRegister reg;
    reg.name.assign(name.begin(), name.end());
    const std::size_t size = static_cast<std::size_t>(c.le(1));
    if (!c.has(size)) return fail(c.offset(), "static register " + reg.name + "'s value runs past the section's end");
    const auto value = c.take(size);
    reg.value.assign(value.begin(), value.end());
    for (const auto& other : machine_.statics)
      if (other.name == reg.name) return fail(at, "static register " + reg.name + " declared twice");
    machine_.statics.push_back(std::move(reg));
  }
  if (c.left() != 0) return fail(c.offset(), std::to_string(c.left()) + " bytes after the static registers");
  return ok_status();
}

Status BintraceReader::parse_initial_registers(std::span<const std::uint8_t> bytes, std::uint64_t offset) {
  Cursor c{bytes, 0, offset};
  auto fail = [&](std::uint64_t at, std::string message) -> Status {
    return make_error(ErrorCode::kBadFormat, "initial registers: " + message, source_, at);
  };
  if (!c.has(4)) return fail(c.offset(), "too short for the register count");
  const std::uint64_t count_at = c.offset();
  const std::uint64_t count = c.le(4);
  if (count * 2 > c.left())
    return fail(count_at, std::to_string(count) + " registers cannot fit in " + std::to_string(c.left()) + " bytes");
  std::vector<bool> set(machine_.registers.size(), false);
  for (std::uint64_t i = 0; i < count; ++i) {
    const std::uint64_t at = c.offset();
    if (!c.has(2)) return fail(at, "register " + std::to_string(i) + " runs past the section's end");
    const auto id = static_cast<std::uint16_t>(c.le(2));
    const int slot = machine_.register_slot(id);
    if (slot < 0) return fail(at, "unknown register id " + std::to_string(id));
    const auto index = static_cast<std::size_t>(slot);
    if (set[index]) return fail(at, "register " + machine_.registers[index].name + " initialized twice");
    set[index] = true;
    const std::size_t size = machine_.registers[index].size;
    if (!c.has(size)) return fail(c.offset(), "register " + machine_.registers[index].name + "'s value runs past the section's end");
    state_->set(index, c.take(size));
  }
  if (c.left() != 0) return fail(c.offset(), std::to_string(c.left()) + " bytes after the registers");
  for (std::size_t i = 0; i < set.size(); ++i)
    if (!set[i])
      return fail(offset, "register " + machine_.registers[i].name + " (id " + std::to_string(machine_.registers[i].id) +
                              ") is not initialized");
  return ok_status();
}

// ---- registers in the arch table's terms ----

void BintraceReader::map_registers() {
  const auto& machine = *arch_->format_ids.bintrace;
  mapping_.assign(machine_.registers.size(), Mapping::kNone);
  mapping_index_.assign(machine_.registers.size(), 0);
  arch_slot_of_.assign(machine.registers.size(), -1);
  for (std::size_t i = 0; i < machine.registers.size(); ++i) {
    const int slot = machine_.find_register(machine.registers[i].name);
    if (slot < 0) continue;
    const auto index = static_cast<std::size_t>(slot);
    arch_slot_of_[i] = slot;
    if (machine.registers[i].source == arch::BintraceRegister::Source::kTable &&
        machine.registers[i].table_index < arch_->registers.size()) {
      mapping_[index] = Mapping::kTable;
      mapping_index_[index] = machine.registers[i].table_index;
      if (machine.registers[i].name == machine.pc_register) pc_table_index_ = machine.registers[i].table_index;
    } else if (machine.registers[i].source == arch::BintraceRegister::Source::kDerived) {
      mapping_[index] = Mapping::kDerived;
    }
  }
  table_.assign(arch_->registers.size(), {});
  slot_dirty_.assign(machine_.registers.size(), false);
  dirty_slots_.clear();
  for (std::size_t i = 0; i < machine_.registers.size(); ++i) {
    slot_dirty_[i] = true;
    dirty_slots_.push_back(i);
  }
  refresh_table(nullptr);

  info_ = {};
  info_.arch_name = arch_->name;
  const std::string& tool = metadata_.tool_info;
  if (tool.rfind("level ", 0) == 0) info_.level = tool.substr(6, tool.find(',') == std::string::npos ? std::string::npos : tool.find(',') - 6);
  if (const auto at = tool.find(", program "); at != std::string::npos) info_.program = tool.substr(at + 10);
  if (const auto at = tool.find(", pid "); at != std::string::npos && at < tool.find(", program "))
    info_.process_id = std::strtoull(tool.c_str() + at + 6, nullptr, 10);
  thread_ = events::ThreadId{static_cast<std::uint32_t>(info_.process_id)};
  info_.has_initial_state = true;
  info_.initial_registers = registers();
  for (const auto& region : machine_.regions) {
    events::InitialRegion out;
    out.start = events::GuestAddress{region.start};
    out.size = region.size;
    out.prot = 7;  // the format has no protections
    info_.initial_memory.push_back(std::move(out));
  }
}

void BintraceReader::refresh_table(std::vector<events::RegisterValue>* changed) {
  const auto& machine = *arch_->format_ids.bintrace;
  struct Snapshot {
    std::uint16_t index;
    std::array<std::uint8_t, 16> bytes;
  };
  std::vector<Snapshot> before;
  bool derived = false;
  for (const std::size_t slot : dirty_slots_) {
    slot_dirty_[slot] = false;
    if (mapping_[slot] == Mapping::kTable) {
      const auto index = mapping_index_[slot];
      before.push_back({index, table_[index]});
      auto& entry = table_[index];
      entry.fill(0);
      const auto value = state_->value(slot);
      std::copy_n(value.begin(), std::min<std::size_t>({value.size(), 16, arch_->registers[index].size}), entry.begin());
    } else if (mapping_[slot] == Mapping::kDerived) {
      derived = true;
    }
  }
  dirty_slots_.clear();
  if (derived && machine.underive) {
    for (const auto index : machine.derived_inputs)
      if (index < table_.size()) before.push_back({index, table_[index]});
    std::vector<std::span<const std::uint8_t>> values(machine.registers.size());
    for (std::size_t i = 0; i < machine.registers.size(); ++i)
      if (arch_slot_of_[i] >= 0) values[i] = state_->value(static_cast<std::size_t>(arch_slot_of_[i]));
    // Missing derived registers read as zero; missing inputs keep their table value.
    std::vector<std::array<std::uint8_t, 16>> scratch = table_;
    bool complete = true;
    for (std::size_t i = 0; i < machine.registers.size(); ++i)
      if (values[i].empty() && machine.registers[i].source == arch::BintraceRegister::Source::kDerived) complete = false;
    if (complete) {
      machine.underive(values, scratch);
      // Only the derived inputs the underive sets (and that no direct copy also sets) change.
      for (const auto index : machine.derived_inputs) {
        bool copied = false;
        for (std::size_t slot = 0; slot < mapping_.size(); ++slot)
          if (mapping_[slot] == Mapping::kTable && mapping_index_[slot] == index) copied = true;
        if (!copied && index < table_.size()) table_[index] = scratch[index];
      }
    }
  }
  if (!changed) return;
  changed->clear();
  std::sort(before.begin(), before.end(), [](const Snapshot& a, const Snapshot& b) { return a.index < b.index; });
  for (std::size_t i = 0; i < before.size(); ++i) {
    if (i > 0 && before[i].index == before[i - 1].index) continue;  // the first snapshot is the old value
    const auto index = before[i].index;
    if (before[i].bytes == table_[index]) continue;
    events::RegisterValue value;
    value.index = index;
    value.size = static_cast<std::uint8_t>(std::min<std::size_t>(arch_->registers[index].size, 16));
    std::copy_n(table_[index].begin(), 16, value.bytes.begin());
    changed->push_back(value);
  }
}

std::vector<events::RegisterValue> BintraceReader::registers() const {
  std::vector<events::RegisterValue> out;
  for (std::size_t i = 0; i < table_.size(); ++i) {
    events::RegisterValue value;
    value.index = static_cast<std::uint16_t>(i);
    value.size = static_cast<std::uint8_t>(std::min<std::size_t>(arch_->registers[i].size, 16));
    std::copy_n(table_[i].begin(), 16, value.bytes.begin());
    out.push_back(value);
  }
  return out;
}

// ---- events ----

Status BintraceReader::read_diff(std::uint8_t first_byte, bool keep) {
  Events& ev = *events_;
  const unsigned phy = machine_.physical_address_size;
  std::uint8_t counts = first_byte;
  for (bool first = true;; first = false) {
    const std::uint64_t counts_at = ev.offset() - 1;
    if (!first) {
      if (!ev.ensure(1)) return error_at(ev.offset(), "the continuation diff runs past the end of the events section");
      counts = ev.data()[0];
      ev.advance(1);
    }
    const unsigned r = counts >> 4, m = counts & 0xfu;
    if (r == bt::kContinuation && m == bt::kContinuation)
      return error_at(first ? counts_at : ev.offset() - 1, "diff with both counts 0xf");
    const unsigned memory = m == bt::kContinuation ? bt::kMaxEntriesPerDiff : m;
    const unsigned registers = r == bt::kContinuation ? bt::kMaxEntriesPerDiff : r;
    for (unsigned i = 0; i < memory; ++i) {
      const std::uint64_t at = ev.offset();
      if (!ev.ensure(phy + 1)) return error_at(at, "memory entry runs past the end of the events section");
      const std::uint64_t address = bt::read_le(std::span(ev.data(), phy));
      std::uint64_t size = ev.data()[phy];
      ev.advance(phy + 1);
      if (size == bt::kLongSize) {
        if (!ev.ensure(phy)) return error_at(ev.offset(), "memory entry's size runs past the end of the events section");
        size = bt::read_le(std::span(ev.data(), phy));
        ev.advance(phy);
      }
      if (size > bt::kMaxMemoryEntryBytes)
        return error_at(at, "memory entry of " + std::to_string(size) + " bytes (the reader's limit is 1 GiB)");
      if (!machine_.covers(address, size))
        return error_at(at, "memory entry " + hex(address) + "+" + std::to_string(size) +
                                " lies outside the declared regions");
      const std::size_t offset = entry_bytes_.size();
      for (std::uint64_t done = 0; done < size;) {
        const auto chunk = static_cast<std::size_t>(std::min<std::uint64_t>(size - done, 1 << 16));
        if (!ev.ensure(chunk))
          return error_at(ev.offset(), "memory entry of " + std::to_string(size) +
                                           " bytes runs past the end of the events section");
        const std::span<const std::uint8_t> bytes(ev.data(), chunk);
        state_->memory().write(address + done, bytes);
        if (keep) entry_bytes_.insert(entry_bytes_.end(), bytes.begin(), bytes.end());
        ev.advance(chunk);
        done += chunk;
      }
      if (keep) raw_memory_.push_back({address, offset, static_cast<std::size_t>(size)});
    }
    for (unsigned i = 0; i < registers; ++i) {
      const std::uint64_t at = ev.offset();
      if (!ev.ensure(1)) return error_at(at, "register entry runs past the end of the events section");
      std::uint16_t id = ev.data()[0];
      ev.advance(1);
      if (id == bt::kLongId) {
        if (!ev.ensure(2)) return error_at(ev.offset(), "register id runs past the end of the events section");
        id = static_cast<std::uint16_t>(bt::read_le(std::span(ev.data(), 2)));
        ev.advance(2);
      }
      std::size_t slot = 0;
      if (const int op = machine_.operation_slot(id); op >= 0) {
        const auto& operation = machine_.operations[static_cast<std::size_t>(op)];
        slot = static_cast<std::size_t>(machine_.register_slot(operation.target_id));
        state_->apply(operation, slot);
      } else if (const int reg = machine_.register_slot(id); reg >= 0) {
        slot = static_cast<std::size_t>(reg);
        const std::size_t size = machine_.registers[slot].size;
        if (!ev.ensure(size))
          return error_at(ev.offset(), "value of register " + machine_.registers[slot].name +
                                           " runs past the end of the events section");
        state_->set(slot, std::span(ev.data(), size));
        ev.advance(size);
      } else {
        return error_at(at, "unknown register id " + std::to_string(id));
      }
      if (!slot_dirty_[slot]) {
        slot_dirty_[slot] = true;
        dirty_slots_.push_back(slot);
      }
    }
    if (r != bt::kContinuation && m != bt::kContinuation) return ok_status();
  }
}

Expected<bool> BintraceReader::read_event(bool keep) {
  Events& ev = *events_;
  if (keep) {
    raw_description_.clear();
    raw_memory_.clear();
    entry_bytes_.clear();
  }
  if (events_read_ == event_count_) {
    if (!ev.stream_error().empty()) return error_at(ev.offset(), ev.stream_error());
    if (!ev.finished_cleanly())
      return error_at(ev.offset(), "bytes after the " + std::to_string(event_count_) +
                                       " events the section declares (or an unfinished zstd frame)");
    return false;
  }
  const std::uint64_t at = ev.offset();
  if (!ev.ensure(1)) {
    if (!ev.stream_error().empty()) return error_at(at, ev.stream_error());
    return error_at(at, "the events section ends after " + std::to_string(events_read_) + " of its " +
                            std::to_string(event_count_) + " events");
  }
  const std::uint8_t first = ev.data()[0];
  ev.advance(1);
  if (first != bt::kNotInstruction) {
    raw_instruction_ = true;
    if (auto status = read_diff(first, keep); !status) return status.error();
  } else {
    raw_instruction_ = false;
    if (!ev.ensure(2)) return error_at(ev.offset(), "event type and description run past the end of the events section");
    const std::uint8_t type = ev.data()[0];
    if (type != bt::kOtherEvent) return error_at(ev.offset(), "unknown event type " + hex(type));
    const std::size_t length = ev.data()[1];
    ev.advance(2);
    if (!ev.ensure(length))
      return error_at(ev.offset(), "description of " + std::to_string(length) +
                                       " characters runs past the end of the events section");
    if (keep) raw_description_.assign(reinterpret_cast<const char*>(ev.data()), length);
    ev.advance(length);
    if (!ev.ensure(1)) return error_at(ev.offset(), "the event's diff runs past the end of the events section");
    const std::uint8_t counts = ev.data()[0];
    ev.advance(1);
    if (auto status = read_diff(counts, keep); !status) return status.error();
  }
  ++events_read_;
  return true;
}

void BintraceReader::emit(events::EventKind kind, const events::EventPayload& payload, const EventCallback& on_event) {
  event_.sequence = events::EventSequence{next_sequence_++};
  event_.thread = thread_;
  event_.kind = kind;
  event_.payload = payload;
  on_event(event_);
}

Expected<bool> BintraceReader::next(const EventCallback& on_event) {
  if (failed_) return false;
  // An instruction's pc and bytes are those before its diff applies.
  events::InstructionEvent instruction;
  std::uint8_t code[16] = {};
  const bool is_instruction = events_->ensure(1) && events_->data()[0] != bt::kNotInstruction &&
                              events_read_ < event_count_;
  if (is_instruction) {
    const std::uint64_t pc = bt::read_le(table_[pc_table_index_]);
    instruction.address = events::GuestAddress{pc};
    state_->memory().read(pc, code);
    if (!decoder_) {
      auto decoder = arch::InstructionDecoder::open(*arch_, false);
      if (decoder) decoder_ = std::move(*decoder);
    }
    if (decoder_) instruction.size = static_cast<std::uint8_t>(decoder_->instruction_size(code, pc, 0));
    instruction.bytes = std::span<const std::uint8_t>(code, instruction.size);
  }
  auto read = read_event(true);
  if (!read) {
    failed_ = true;
    return read.error();
  }
  if (!*read) return false;
  refresh_table(&changed_);
  if (raw_instruction_) {
    last_pc_ = instruction.address.value;
    ++instructions_read_;
    emit(events::EventKind::kInstruction, instruction, on_event);
    for (const auto& entry : raw_memory_) {
      for (std::size_t done = 0; done < entry.length; done += 8) {
        events::MemoryEvent memory;
        memory.address = events::GuestAddress{entry.address + done};
        memory.size = static_cast<std::uint8_t>(std::min<std::size_t>(8, entry.length - done));
        memory.value = bt::read_le(std::span(entry_bytes_).subspan(entry.offset + done, memory.size));
        memory.pc = instruction.address;
        memory.pc_known = true;
        emit(events::EventKind::kMemoryWrite, memory, on_event);
      }
    }
    std::erase_if(changed_, [&](const events::RegisterValue& value) { return value.index == pc_table_index_; });
    if (!changed_.empty()) emit(events::EventKind::kRegisters, events::RegistersEvent{instruction.address, changed_}, on_event);
    return true;
  }
  produce(on_event);
  return true;
}

void BintraceReader::produce(const EventCallback& on_event) {
  const std::string& text = raw_description_;
  const char* c = text.c_str();
  std::uint64_t a = 0, b = 0, d = 0;
  unsigned prot = 0;
  int used = 0;
  if (std::sscanf(c, "map %" SCNx64 " %" SCNx64 " prot %u%n", &a, &b, &prot, &used) == 3 &&
      static_cast<std::size_t>(used) == text.size()) {
    pending_mappings_.push_back({events::MappingChangeKind::kMap, events::GuestAddress{a}, b, prot});
    return;
  }
  if (std::sscanf(c, "unmap %" SCNx64 " %" SCNx64 "%n", &a, &b, &used) == 2 && static_cast<std::size_t>(used) == text.size()) {
    pending_mappings_.push_back({events::MappingChangeKind::kUnmap, events::GuestAddress{a}, b, 0});
    return;
  }
  if (std::sscanf(c, "protect %" SCNx64 " %" SCNx64 " prot %u%n", &a, &b, &prot, &used) == 3 &&
      static_cast<std::size_t>(used) == text.size()) {
    pending_mappings_.push_back({events::MappingChangeKind::kProtect, events::GuestAddress{a}, b, prot});
    return;
  }
  if (text.rfind("callstack ", 0) == 0) {
    std::size_t at = 10;
    while (at < text.size()) {
      const std::size_t end = std::min(text.find(' ', at), text.size());
      pending_stack_.push_back(std::strtoull(text.substr(at, end - at).c_str(), nullptr, 16));
      at = end + 1;
    }
    return;
  }
  if (text.rfind("syscall ", 0) == 0) {
    const std::size_t open = text.find('(');
    events::SyscallEvent call;
    std::uint64_t args[6] = {};
    long long result = 0;
    unsigned long long number = 0;
    if (open != std::string::npos &&
        std::sscanf(c + open, "(%" SCNx64 ", %" SCNx64 ", %" SCNx64 ", %" SCNx64 ", %" SCNx64 ", %" SCNx64
                              ") = %lld #%llu%n",
                    &args[0], &args[1], &args[2], &args[3], &args[4], &args[5], &result, &number, &used) == 8 &&
        open + static_cast<std::size_t>(used) == text.size()) {
      text_ = text.substr(8, open - 8);
      call.name = text_;
      call.pc = events::GuestAddress{last_pc_};
      call.number = number;
      std::copy(std::begin(args), std::end(args), call.args);
      call.result = result;
      writes_.clear();
      for (const auto& entry : raw_memory_)
        writes_.push_back({events::GuestAddress{entry.address},
                           std::span<const std::uint8_t>(entry_bytes_).subspan(entry.offset, entry.length)});
      call.memory_writes = writes_;
      call.mapping_changes = pending_mappings_;
      call.register_changes = changed_;
      call.call_stack = pending_stack_;
      emit(events::EventKind::kSyscall, call, on_event);
      pending_mappings_.clear();
      pending_stack_.clear();
      return;
    }
  }
  unsigned signal = 0;
  if (std::sscanf(c, "fault signal %u pc %" SCNx64 " address %" SCNx64 ": %n", &signal, &a, &b, &used) == 3 &&
      used > 0) {
    text_ = text.substr(static_cast<std::size_t>(used));
    emit(events::EventKind::kFault,
         events::FaultEvent{events::GuestAddress{a}, events::GuestAddress{b}, signal, text_}, on_event);
    return;
  }
  int code = 0;
  if (std::sscanf(c, "exit code %d%n", &code, &used) == 1 && static_cast<std::size_t>(used) == text.size()) {
    emit(events::EventKind::kExit, events::ExitEvent{false, code, 0}, on_event);
    return;
  }
  if (std::sscanf(c, "exit signal %d%n", &code, &used) == 1 && static_cast<std::size_t>(used) == text.size()) {
    emit(events::EventKind::kExit, events::ExitEvent{true, 0, code}, on_event);
    return;
  }
  if (std::sscanf(c, "module %" SCNx64 " %" SCNx64 " bias %" SCNx64 " %n", &a, &b, &d, &used) == 3 && used > 0) {
    text_ = text.substr(static_cast<std::size_t>(used));
    emit(events::EventKind::kModuleLoad,
         events::ModuleLoadEvent{events::GuestAddress{a}, events::GuestAddress{b}, d, text_}, on_event);
    return;
  }
  if (std::sscanf(c, "pc %" SCNx64 "%n", &a, &used) == 1 && static_cast<std::size_t>(used) == text.size())
    return;  // where the next instruction is (bintrace_writer.h): its diff set the pc, no model event
  if (std::sscanf(c, "code %" SCNx64 "%n", &a, &used) == 1 && static_cast<std::size_t>(used) == text.size())
    return;  // a block's code the guest wrote (bintrace_writer.h): its diff wrote it, no model event
  if (text == bintrace::kInterruptedNote) {
    interrupted_ = true;  // the interruption note (bintrace_layout.h): no model event
    return;
  }
  if (produce_signal_or_thread(on_event) || produce_process(on_event)) return;
  unsigned long long lost = 0;
  if (std::sscanf(c, "gap %llu: %n", &lost, &used) == 1 && used > 0) {
    text_ = text.substr(static_cast<std::size_t>(used));
    emit(events::EventKind::kGap, events::GapEvent{lost, text_}, on_event);
    return;
  }
  ++unrecognized_;
}

// "signal ..." and "thread ..." other events (bintrace_writer.h); false when
// the description is neither.
bool BintraceReader::produce_signal_or_thread(const EventCallback& on_event) {
  const std::string& text = raw_description_;
  const char* c = text.c_str();
  int used = 0;
  unsigned number = 0;
  int code = 0;
  unsigned long long sender = 0;
  std::uint64_t pc = 0, handler = 0, frame = 0, address = 0;
  if (std::sscanf(c, "signal %u code %d pc %" SCNx64 " handler %" SCNx64 " frame %" SCNx64 " sender %llu address %" SCNx64
                     "%n",
                  &number, &code, &pc, &handler, &frame, &sender, &address, &used) == 7) {
    const std::string_view rest = std::string_view(text).substr(static_cast<std::size_t>(used));
    if (!rest.empty() && rest != " fault") return false;
    writes_.clear();
    for (const auto& entry : raw_memory_)
      writes_.push_back({events::GuestAddress{entry.address},
                         std::span<const std::uint8_t>(entry_bytes_).subspan(entry.offset, entry.length)});
    events::SignalEvent signal;
    signal.signal = number;
    signal.code = code;
    signal.sender_pid = sender;
    signal.fault_address = events::GuestAddress{address};
    signal.interrupted_pc = events::GuestAddress{pc};
    signal.handler = events::GuestAddress{handler};
    signal.frame = events::GuestAddress{frame};
    signal.fault = !rest.empty();
    signal.frame_writes = writes_;
    signal.register_changes = changed_;
    emit(events::EventKind::kSignal, signal, on_event);
    return true;
  }
  unsigned change = 0;
  unsigned long long thread = 0, from = 0;
  if (std::sscanf(c, "thread %u %llu from %llu status %d%n", &change, &thread, &from, &code, &used) == 4 &&
      static_cast<std::size_t>(used) == text.size() && change >= 1 && change <= 3) {
    events::ThreadEvent event;
    event.change = static_cast<events::ThreadChange>(change);
    event.from = events::ThreadId{static_cast<std::uint32_t>(from)};
    event.exit_code = code;
    event.registers = changed_;
    const events::ThreadId running = thread_;
    thread_ = events::ThreadId{static_cast<std::uint32_t>(thread)};  // the event's own thread
    emit(events::EventKind::kThread, event, on_event);
    if (event.change != events::ThreadChange::kSwitched) {
      thread_ = running;
    } else if (thread_.value != running.value) {
      thread_last_pcs_[running.value] = last_pc_;
      const auto found = thread_last_pcs_.find(thread_.value);
      last_pc_ = found != thread_last_pcs_.end() ? found->second : 0;
    }
    return true;
  }
  return false;
}

// "process CHANGE PID trace N:NAME detail M:TEXT" (bintrace_writer.h); false
// when the description is not one.
bool BintraceReader::produce_process(const EventCallback& on_event) {
  const std::string& text = raw_description_;
  unsigned change = 0;
  unsigned long long pid = 0, trace_length = 0, detail_length = 0;
  int used = 0, more = 0;
  if (std::sscanf(text.c_str(), "process %u %llu trace %llu:%n", &change, &pid, &trace_length, &used) != 3 || used <= 0)
    return false;
  const auto trace_at = static_cast<std::size_t>(used);
  if (change < 1 || change > 2 || trace_length > text.size() - trace_at) return false;
  const std::size_t after_trace = trace_at + static_cast<std::size_t>(trace_length);
  if (std::sscanf(text.c_str() + after_trace, " detail %llu:%n", &detail_length, &more) != 1 || more <= 0) return false;
  const std::size_t detail_at = after_trace + static_cast<std::size_t>(more);
  if (detail_length != text.size() - detail_at) return false;
  text_ = text;
  const std::string_view kept = text_;
  emit(events::EventKind::kProcess,
       events::ProcessEvent{static_cast<events::ProcessChange>(change), pid,
                            kept.substr(trace_at, static_cast<std::size_t>(trace_length)), kept.substr(detail_at)},
       on_event);
  return true;
}

Status BintraceReader::read_all(events::Sink& sink) { return formats::read_all(*this, sink); }

Status BintraceReader::skip_to(std::uint64_t index) {
  if (index < events_read_)
    return make_error(ErrorCode::kInvalidArgument, "event " + std::to_string(index) + " is behind the reader (at " +
                                                       std::to_string(events_read_) + "): open the file again");
  while (events_read_ < index) {
    auto read = read_event(false);
    if (!read) {
      failed_ = true;
      return read.error();
    }
    if (!*read)
      return make_error(ErrorCode::kInvalidArgument, "the trace has only " + std::to_string(events_read_) + " events",
                        source_);
  }
  refresh_table(nullptr);
  return ok_status();
}

std::uint64_t BintraceReader::file_bytes_read() const { return input_->position; }

}  // namespace tracecorn::formats
