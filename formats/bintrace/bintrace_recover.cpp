// Role: implementation of binary trace recovery (see bintrace_recover.h).
#include "formats/bintrace/bintrace_recover.h"

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <stdexcept>

#include "formats/bintrace/bintrace_encode.h"
#include "formats/bintrace/bintrace_layout.h"
#include "formats/bintrace/bintrace_reader.h"

namespace tracecorn::formats {

namespace bt = bintrace;

namespace {

constexpr std::size_t kChunk = 1 << 20;
constexpr std::uint64_t kMaxMapBytes = 1ull << 40;

// A window on a ByteSource: bytes are pulled as parsing needs them; consumed
// ones are dropped so that the window stays small.
class Window {
 public:
  explicit Window(ByteSource& source) : source_(source) {}
  // Whether `n` more bytes are available (pulling them); false at the end of the stream.
  bool has(std::size_t n) {
    while (buffer_.size() - pos_ < n) {
      if (pos_ >= kChunk) {
        buffer_.erase(buffer_.begin(), buffer_.begin() + static_cast<std::ptrdiff_t>(pos_));
        base_ += pos_;
        pos_ = 0;
      }
      if (source_.read(buffer_, std::max(n, kChunk)) == 0) return false;
    }
    return true;
  }
  std::uint8_t u8() { return buffer_[pos_++]; }
  std::uint64_t le(std::size_t n) {
    const std::uint64_t value = bt::read_le(std::span(buffer_).subspan(pos_, n));
    pos_ += n;
    return value;
  }
  std::string text(std::size_t n) {
    std::string out(reinterpret_cast<const char*>(buffer_.data() + pos_), n);
    pos_ += n;
    return out;
  }
  // Skips `n` bytes; false when the stream ends first.
  bool skip(std::uint64_t n) {
    while (n > 0) {
      if (pos_ == buffer_.size() && !has(1)) return false;
      const auto step = static_cast<std::size_t>(std::min<std::uint64_t>(n, buffer_.size() - pos_));
      pos_ += step;
      n -= step;
    }
    return true;
  }
  std::uint64_t offset() const { return base_ + pos_; }
  // Every byte the stream has (to count what lies past a cut).
  std::uint64_t drain() {
    pos_ = buffer_.size();
    while (has(1)) pos_ = buffer_.size();
    return offset();
  }

 private:
  ByteSource& source_;
  std::vector<std::uint8_t> buffer_;
  std::size_t pos_ = 0;
  std::uint64_t base_ = 0;
};

enum class Step { kEvent, kEnd, kCut, kDamaged };

struct Scanner {
  const bt::MachineDescription& machine;
  Window& in;
  SpoolScan& scan;
  std::string damage;  // for kDamaged, with its offset

  Step fail(std::uint64_t at, const std::string& what) {
    damage = "at offset " + std::to_string(at) + ": " + what;
    return Step::kDamaged;
  }

  // One diff (with its continuations); its counts byte `counts` already read.
  Step diff(std::uint8_t counts, std::vector<bt::MemoryRegion>& touched) {
    const unsigned phy = machine.physical_address_size;
    for (bool first = true;; first = false) {
      const std::uint64_t counts_at = in.offset() - 1;
      if (!first) {
        if (!in.has(1)) return Step::kCut;
        counts = in.u8();
      }
      const unsigned r = counts >> 4, m = counts & 0xfu;
      if (r == bt::kContinuation && m == bt::kContinuation) return fail(counts_at, "a diff with both counts 0xf");
      for (unsigned i = 0, n = m == bt::kContinuation ? bt::kMaxEntriesPerDiff : m; i < n; ++i) {
        const std::uint64_t at = in.offset();
        if (!in.has(phy + 1)) return Step::kCut;
        const std::uint64_t address = in.le(phy);
        std::uint64_t size = in.u8();
        if (size == bt::kLongSize) {
          if (!in.has(phy)) return Step::kCut;
          size = in.le(phy);
        }
        if (size > bt::kMaxMemoryEntryBytes)
          return fail(at, "a memory entry of " + std::to_string(size) + " bytes (the limit is 1 GiB)");
        if (address + size < address) return fail(at, "a memory entry that wraps the address space");
        if (!in.skip(size)) return Step::kCut;
        if (size) {
          const std::uint64_t page = bt::SparseMemory::kPageBytes;
          const std::uint64_t first_page = address / page * page;
          const std::uint64_t end = (address + size - 1) / page * page + page;
          touched.push_back({first_page, end - first_page});
        }
      }
      for (unsigned i = 0, n = r == bt::kContinuation ? bt::kMaxEntriesPerDiff : r; i < n; ++i) {
        const std::uint64_t at = in.offset();
        if (!in.has(1)) return Step::kCut;
        std::uint16_t id = in.u8();
        if (id == bt::kLongId) {
          if (!in.has(2)) return Step::kCut;
          id = static_cast<std::uint16_t>(in.le(2));
        }
        if (machine.operation_slot(id) >= 0) continue;  // operations carry no value
        const int slot = machine.register_slot(id);
        if (slot < 0) return fail(at, "register id " + std::to_string(id) + " is not declared");
        if (!in.skip(machine.registers[static_cast<std::size_t>(slot)].size)) return Step::kCut;
      }
      if (r != bt::kContinuation && m != bt::kContinuation) return Step::kEvent;
    }
  }

  // One event, with what it maps and writes added to scan.touched once whole.
  Step event() {
    if (!in.has(1)) return Step::kEnd;
    const std::uint64_t at = in.offset();
    std::uint8_t first = in.u8();
    std::vector<bt::MemoryRegion> touched;
    if (first == bt::kNotInstruction) {
      if (!in.has(2)) return Step::kCut;
      const std::uint8_t type = in.u8();
      if (type != bt::kOtherEvent) return fail(at, "event type " + std::to_string(type) + " (expected 0xff, other)");
      const std::size_t length = in.u8();
      if (!in.has(length + 1)) return Step::kCut;
      const std::string description = in.text(length);
      std::uint64_t start = 0, size = 0;
      unsigned prot = 0;
      int used = 0;
      if (std::sscanf(description.c_str(), "map %" SCNx64 " %" SCNx64 " prot %u%n", &start, &size, &prot, &used) == 3 &&
          static_cast<std::size_t>(used) == description.size()) {
        if (size > kMaxMapBytes || start + size < start)
          return fail(at, "a map of " + std::to_string(size) + " bytes at " + std::to_string(start) +
                              " (the limit is 2^40 bytes, inside the address space)");
        touched.push_back({start, size});
      }
      first = in.u8();
    }
    const Step step = diff(first, touched);
    if (step == Step::kEvent) scan.touched.insert(scan.touched.end(), touched.begin(), touched.end());
    return step;
  }
};

std::string errno_text() { return std::strerror(errno ? errno : EIO); }

}  // namespace

Expected<SpoolScan> scan_spool(const bt::MachineDescription& machine, ByteSource& spool) {
  if (machine.physical_address_size == 0 || machine.physical_address_size > 8)
    return make_error(ErrorCode::kInvalidArgument, "PHY_SIZE must be 1 to 8");
  SpoolScan scan;
  Window in(spool);
  Scanner scanner{machine, in, scan, {}};
  for (;;) {
    const Step step = scanner.event();
    if (step == Step::kEvent) {
      ++scan.events;
      scan.complete_bytes = in.offset();
      if (scan.touched.size() > 4096) scan.touched = bt::merge_regions(std::move(scan.touched));
      continue;
    }
    if (step == Step::kCut) scan.cut = "the spool ends inside an event";
    if (step == Step::kDamaged) scan.cut = scanner.damage;
    break;
  }
  scan.bytes = in.drain();
  if (!spool.problem.empty()) scan.cut += (scan.cut.empty() ? "" : "; ") + spool.problem;
  return scan;
}

Expected<std::unique_ptr<ByteSource>> open_spool(const std::string& path) {
  auto source = open_file_source(path);
  if (!source) return source.error();
  std::vector<std::uint8_t> prefix;
  while (prefix.size() < 4 && (*source)->read(prefix, 4 - prefix.size()) > 0) {
  }
  const bool zstd = prefix.size() == 4 && std::equal(prefix.begin(), prefix.end(), std::begin(kZstdMagic));
  auto whole = make_prefix_source(std::move(prefix), std::move(*source));
  return zstd ? make_zstd_source(std::move(whole)) : std::move(whole);
}

Expected<Recovery> recover_bintrace(const std::string& head_path, const std::string& spool_path,
                                    const std::string& output) {
  auto head = BintraceReader::open(head_path);
  if (!head) {
    Error error = head.error();
    if (error.code == ErrorCode::kNotFound)
      error.message += " (a recording killed before its first instruction leaves no head: nothing to recover)";
    return error;
  }
  const BintraceReader& reader = **head;
  if (reader.event_count() != 0)
    return make_error(ErrorCode::kBadFormat,
                      "holds " + std::to_string(reader.event_count()) + " events: not a recovery head", head_path);
  Recovery recovery;
  {
    auto spool = open_spool(spool_path);
    if (!spool) return spool.error();
    auto scan = scan_spool(reader.machine(), **spool);
    if (!scan) return scan.error();
    recovery.scan = std::move(*scan);
  }
  std::vector<bt::MemoryRegion> ranges = reader.machine().regions;
  ranges.insert(ranges.end(), recovery.scan.touched.begin(), recovery.scan.touched.end());
  const auto regions = bt::merge_regions(std::move(ranges));
  recovery.regions = regions.size();

  const std::string part = output + ".part";
  std::FILE* out = std::fopen(part.c_str(), "wbe");
  if (!out) return make_error(ErrorCode::kIo, "cannot open for writing: " + errno_text(), part);
  try {
    auto put = [&](std::span<const std::uint8_t> bytes) {
      if (!bytes.empty() && std::fwrite(bytes.data(), 1, bytes.size(), out) != bytes.size())
        throw std::runtime_error(errno_text());
      recovery.file_bytes += bytes.size();
    };
    const auto& meta = reader.metadata();
    const bt::HeadStrings strings{meta.tool_version, meta.tool_info + ", recovered from a killed recording",
                                  meta.unix_time};
    put(bt::encode_head(strings, bt::kCompressionNone, reader.machine(), regions));
    bt::encode_initial_memory(
        regions, [&](std::uint64_t base, std::span<std::uint8_t> chunk) { reader.read_memory(base, chunk); }, put);
    std::vector<std::vector<std::uint8_t>> values;
    for (std::size_t i = 0; i < reader.machine().registers.size(); ++i) {
      const auto value = reader.state().value(i);
      values.emplace_back(value.begin(), value.end());
    }
    put(bt::encode_initial_registers(reader.machine(), values));
    put(bt::encode_events_header(recovery.scan.complete_bytes, recovery.scan.events));
    // The kept events, from the spool again (it was streamed, not held).
    auto spool = open_spool(spool_path);
    if (!spool) throw std::runtime_error(spool.error().to_string());
    std::vector<std::uint8_t> chunk;
    std::uint64_t copied = 0;
    while (copied < recovery.scan.complete_bytes) {
      chunk.clear();
      const auto want = static_cast<std::size_t>(std::min<std::uint64_t>(kChunk, recovery.scan.complete_bytes - copied));
      const std::size_t got = (*spool)->read(chunk, want);
      if (got == 0) throw std::runtime_error(spool_path + " changed while it was recovered (shorter than scanned)");
      put(std::span(chunk).first(std::min<std::size_t>(got, want)));
      copied += std::min<std::size_t>(got, want);
    }
    if (std::fflush(out) != 0 || std::ferror(out)) throw std::runtime_error(errno_text());
    const int status = std::fclose(out);
    out = nullptr;
    if (status != 0) throw std::runtime_error(errno_text());
    std::filesystem::rename(part, output);
  } catch (const std::exception& error) {
    if (out) std::fclose(out);
    std::remove(part.c_str());
    return make_error(ErrorCode::kIo, std::string("write error: ") + error.what(), output);
  }
  return recovery;
}

}  // namespace tracecorn::formats
