// Role: implementation of the UCIR reader (see ucir_reader.h and ucir_layout.h).
// Every read goes through Cursor, which checks the bytes are there; a short
// read is a truncation, never an out-of-bounds access.
#include "formats/ucir/ucir_reader.h"


#include <algorithm>
#include <bit>
#include <array>
#include <cerrno>
#include <cstring>
#include <unordered_map>

#include <snappy-c.h>
#include <zstd.h>

#include "formats/common/byte_stream.h"
#include "formats/common/read_all.h"
#include "formats/ucir/ucir_layout.h"

namespace tracecorn::formats {

namespace {

// Bounds-checked little-endian reads over untrusted bytes.
struct Cursor {
  const std::uint8_t* data;
  std::size_t size;
  std::size_t pos;
  bool has(std::size_t n) const { return size - pos >= n; }
  // The little-endian integer of `bytes` bytes at pos (has(bytes) checked).
  [[gnu::always_inline]] std::uint64_t le(int bytes) {
    const std::uint8_t* at = data + pos;
    pos += static_cast<std::size_t>(bytes);
    if constexpr (std::endian::native == std::endian::little) {  // the sizes the ops use: one load each
      switch (bytes) {
        case 1: return at[0];
        case 2: return load<std::uint16_t>(at);
        case 4: return load<std::uint32_t>(at);
        case 8: return load<std::uint64_t>(at);
        default: break;
      }
    }
    std::uint64_t value = 0;
    for (int i = bytes - 1; i >= 0; --i) value = value << 8 | at[i];
    return value;
  }
  template <typename T>
  static T load(const std::uint8_t* at) {
    T value;
    std::memcpy(&value, at, sizeof value);
    return value;
  }
};

enum class Parse { kOk, kTruncated, kError };

std::string op_name(std::uint8_t op) {
  static constexpr const char* kNames[] = {"OP_NOP",      "OP_FRAME",     "OP_KEYFRAME", "OP_JMP",     "OP_STEP",
                                           "OP_REG",      "OP_SPREG",     "OP_MEM_READ", "OP_MEM_WRITE", "OP_MEM_MAP",
                                           "OP_MEM_UNMAP", "OP_MEM_PROT", "OP_SYSCALL",  "OP_EXIT"};
  if (op < std::size(kNames)) return kNames[op];
  if (op == ucir::kOpCallstack) return "OP_CALLSTACK";
  if (op == ucir::kOpSignal) return "OP_SIGNAL";
  if (op == ucir::kOpThread) return "OP_THREAD";
  if (op == ucir::kOpProcess) return "OP_PROCESS";
  return "unknown op " + std::to_string(op);
}

// CRC-32C (Castagnoli), as the snappy framing format checks each chunk with,
// masked the way the framing format says.
std::uint32_t masked_crc32c(const std::uint8_t* data, std::size_t size) {
  std::uint32_t crc = 0xffffffffu;
  for (std::size_t i = 0; i < size; ++i) {
    crc ^= data[i];
    for (int bit = 0; bit < 8; ++bit) crc = (crc >> 1) ^ (0x82f63b78u & (0u - (crc & 1u)));
  }
  crc = ~crc;
  return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

// A snappy framed stream (framing_format.txt: chunks of type u8, length u24 LE;
// 0xff stream identifier "sNaPpY", 0x00 compressed and 0x01 uncompressed data
// each with a masked CRC-32C, 0x80..0xfe skippable), decoded chunk by chunk.
class SnappySource final : public ByteSource {
 public:
  explicit SnappySource(std::unique_ptr<ByteSource> inner) : inner_(std::move(inner)) {}
  std::size_t read(std::vector<std::uint8_t>& out, std::size_t want) override {
    std::size_t produced = 0;
    while (produced < want && !dead_) produced += next_chunk(out);
    return produced;
  }
  std::uint64_t consumed() const override { return inner_->consumed(); }

 private:
  // Reads exactly `n` bytes of the compressed stream into chunk_; false if it ends first.
  bool read_exact(std::size_t n) {
    chunk_.clear();
    while (chunk_.size() < n)
      if (inner_->read(chunk_, n - chunk_.size()) == 0) return false;
    return true;
  }
  std::size_t fail(std::string why) {
    problem = std::move(why) + " at compressed offset " + std::to_string(offset_);
    dead_ = true;
    return 0;
  }
  std::size_t next_chunk(std::vector<std::uint8_t>& out) {
    static constexpr std::uint8_t kIdentifier[] = {'s', 'N', 'a', 'P', 'p', 'Y'};
    if (!read_exact(4)) {
      if (!chunk_.empty()) return fail("the snappy stream ends inside a chunk header");
      dead_ = true;
      return 0;
    }
    const std::uint8_t type = chunk_[0];
    const std::size_t length = chunk_[1] | chunk_[2] << 8 | chunk_[3] << 16;
    if (!read_exact(length)) return fail("the snappy stream ends inside a chunk");
    const std::uint8_t* body = chunk_.data();
    const std::size_t here = offset_;
    offset_ += 4 + length;
    if (type == 0xff) {
      if (length != sizeof kIdentifier || !std::equal(body, body + length, kIdentifier)) {
        offset_ = here;
        return fail("bad snappy stream identifier");
      }
      identified_ = true;
      return 0;
    }
    offset_ = here;
    if (!identified_) return fail("the snappy stream does not start with its identifier chunk");
    offset_ = here + 4 + length;
    if (type >= 0x80) return 0;  // skippable (0xfe: padding)
    offset_ = here;
    if (type > 0x01) return fail("reserved unskippable snappy chunk type " + std::to_string(type));
    if (length < 4) return fail("snappy data chunk shorter than its checksum");
    const std::uint32_t crc = static_cast<std::uint32_t>(body[0] | body[1] << 8 | body[2] << 16) |
                              static_cast<std::uint32_t>(body[3]) << 24;
    const char* data = reinterpret_cast<const char*>(body + 4);
    const std::size_t size = length - 4;
    std::size_t plain_size = size;
    if (type == 0x00) {
      if (snappy_uncompressed_length(data, size, &plain_size) != SNAPPY_OK || plain_size > 65536)
        return fail("corrupt snappy chunk");
      plain_.resize(plain_size);
      if (snappy_uncompress(data, size, reinterpret_cast<char*>(plain_.data()), &plain_size) != SNAPPY_OK)
        return fail("corrupt snappy chunk");
      data = reinterpret_cast<const char*>(plain_.data());
    } else if (plain_size > 65536) {
      return fail("snappy chunk larger than 65536 bytes");
    }
    const auto* plain = reinterpret_cast<const std::uint8_t*>(data);
    if (masked_crc32c(plain, plain_size) != crc) return fail("snappy chunk checksum mismatch");
    offset_ = here + 4 + length;
    out.insert(out.end(), plain, plain + plain_size);
    return plain_size;
  }

  std::unique_ptr<ByteSource> inner_;
  std::vector<std::uint8_t> chunk_, plain_;
  std::uint64_t offset_ = 0;  // in the snappy stream (after the header)
  bool identified_ = false;
  bool dead_ = false;
};

// Limit on the bytes of initial memory the reader copies into TraceInfo
// (regions are declared by untrusted sizes; their writes are bounded by the file).
constexpr std::uint64_t kMaxInitialRegionBytes = 1ull << 28;

}  // namespace

// One parsed op. Its integers are not initialized here: OpParser::parse sets
// every field that an op of its kind has and zeroes the others (an Op made
// zero by value costs a 232-byte `rep stos` per op, a tenth of the reader's
// time at the full level).
struct UcirReader::Op {
  Op() noexcept {}  // user-provided: emplace_back() then zeroes nothing
  std::uint8_t op;
  std::uint64_t offset;
  std::uint64_t address;
  std::uint64_t size;
  std::uint8_t prot;
  events::RegisterValue reg;
  std::span<const std::uint8_t> bytes;
  std::string_view desc, file;
  std::uint64_t file_offset, file_size;  // OP_MEM_MAP
  std::uint64_t number, ret;
  std::uint64_t args[6];
  std::vector<Op> nested;
  std::vector<std::uint64_t> stack;
};

struct UcirReader::Scratch {
  std::vector<const Op*> pending;
  std::vector<events::RegisterValue> registers;
  std::vector<std::uint8_t> code;
};

namespace {

class OpParser {
 public:
  // `register_by_uc_id`: the arch table index of each Unicorn register id (-1: none).
  OpParser(const arch::ArchInfo& arch, std::span<const std::int32_t> register_by_uc_id, Cursor& cursor, bool usercorn)
      : cursor_(cursor), usercorn_(usercorn), arch_(arch), register_by_uc_id_(register_by_uc_id) {}

  std::string message;
  std::uint64_t error_offset = 0;

  template <typename OpT>
  Parse parse(OpT& out, bool in_syscall) {
    Cursor& c = cursor_;
    out.offset = c.pos;
    out.op = ucir::kOpNop;
    out.address = out.size = out.file_offset = out.file_size = out.number = out.ret = 0;
    out.prot = 0;
    out.bytes = {};
    out.desc = out.file = {};
    std::fill(std::begin(out.args), std::end(out.args), 0);
    if (!c.has(1)) return Parse::kTruncated;
    out.op = static_cast<std::uint8_t>(c.le(1));
    auto fail = [&](std::string text) {
      message = std::move(text);
      error_offset = out.offset;
      return Parse::kError;
    };
    switch (out.op) {
      case ucir::kOpNop:
      case ucir::kOpExit:
        if (in_syscall && out.op == ucir::kOpExit) return fail("OP_EXIT inside OP_SYSCALL (expected its effects only)");
        return Parse::kOk;
      case ucir::kOpFrame:
      case ucir::kOpKeyframe:
        return fail(op_name(out.op) + (in_syscall ? " nested inside OP_SYSCALL" : " nested inside a frame") +
                    " (expected an op of the frame)");
      case ucir::kOpJmp:
        if (in_syscall) return fail("OP_JMP inside OP_SYSCALL (expected its effects only)");
        if (!c.has(12)) return Parse::kTruncated;
        out.address = c.le(8);
        out.size = c.le(4);
        return Parse::kOk;
      case ucir::kOpStep:
        if (in_syscall) return fail("OP_STEP inside OP_SYSCALL (expected its effects only)");
        if (!c.has(1)) return Parse::kTruncated;
        out.size = c.le(1);
        return Parse::kOk;
      case ucir::kOpReg:
      case ucir::kOpSpreg: {
        if (!c.has(out.op == ucir::kOpReg ? 10 : 4)) return Parse::kTruncated;
        const auto number = static_cast<int>(c.le(2));
        const std::int32_t index =
            static_cast<std::size_t>(number) < register_by_uc_id_.size() ? register_by_uc_id_[static_cast<std::size_t>(number)] : -1;
        if (index < 0)
          return fail("register number " + std::to_string(number) + " is not one of the architecture's (expected a Unicorn register id)");
        out.reg = events::RegisterValue{};
        out.reg.index = static_cast<std::uint16_t>(index);
        out.reg.size = static_cast<std::uint8_t>(std::min<std::size_t>(arch_.registers[static_cast<std::size_t>(index)].size, 16));
        if (out.op == ucir::kOpReg) {
          const std::uint64_t value = c.le(8);
          for (std::size_t i = 0; i < 8 && i < out.reg.size; ++i) out.reg.bytes[i] = static_cast<std::uint8_t>(value >> (8 * i));
        } else {
          const std::size_t size = c.le(2);
          if (!c.has(size)) return Parse::kTruncated;
          std::memcpy(out.reg.bytes.data(), c.data + c.pos, std::min<std::size_t>(size, out.reg.bytes.size()));
          c.pos += size;
        }
        return Parse::kOk;
      }
      case ucir::kOpMemRead:
      case ucir::kOpMemWrite:
      case ucir::kOpMemUnmap:
      case ucir::kOpMemProt:
      case ucir::kOpMemMap: {
        const int size_bytes = usercorn_ && out.op != ucir::kOpMemRead && out.op != ucir::kOpMemWrite ? 8 : 4;
        if (!c.has(8 + static_cast<std::size_t>(size_bytes))) return Parse::kTruncated;
        out.address = c.le(8);
        out.size = c.le(size_bytes);
        if (!usercorn_ && (out.op == ucir::kOpMemWrite || out.op == ucir::kOpMemRead) && out.size > ucir::kMaxMemOpBytes)
          return fail(op_name(out.op) + " of " + std::to_string(out.size) + " bytes (expected at most " +
                      std::to_string(ucir::kMaxMemOpBytes) + ", the largest a writer writes): the file is damaged");
        if (out.op == ucir::kOpMemWrite) {
          if (!c.has(out.size)) return Parse::kTruncated;
          out.bytes = std::span(c.data + c.pos, out.size);
          c.pos += out.size;
        } else if (out.op == ucir::kOpMemProt) {
          if (!c.has(1)) return Parse::kTruncated;
          out.prot = static_cast<std::uint8_t>(c.le(1));
        } else if (out.op == ucir::kOpMemMap) {
          if (!c.has(21)) return Parse::kTruncated;
          out.prot = static_cast<std::uint8_t>(c.le(1));
          out.file_offset = c.le(8);  // offset into the backing file
          out.file_size = c.le(8);    // bytes mapped from it
          const std::size_t dlen = c.le(2), flen = c.le(2);
          if (!c.has(dlen + flen)) return Parse::kTruncated;
          out.desc = std::string_view(reinterpret_cast<const char*>(c.data + c.pos), dlen);
          out.file = std::string_view(reinterpret_cast<const char*>(c.data + c.pos + dlen), flen);
          c.pos += dlen + flen;
        }
        return Parse::kOk;
      }
      case ucir::kOpSyscall: {
        if (in_syscall) return fail("OP_SYSCALL nested inside OP_SYSCALL");
        if (!c.has(usercorn_ ? 15 : 13)) return Parse::kTruncated;
        out.number = c.le(usercorn_ ? 4 : 2);  // u16 in the spec; usercorn's own files have u32
        out.ret = c.le(8);
        const std::size_t argc = c.le(1);
        const std::size_t count = c.le(2);
        if (!c.has(argc * 8)) return Parse::kTruncated;
        for (std::size_t i = 0; i < argc; ++i) {
          const std::uint64_t arg = c.le(8);
          if (i < 6) out.args[i] = arg;
        }
        out.nested.clear();
        for (std::size_t i = 0; i < count; ++i)
          if (const Parse result = parse(out.nested.emplace_back(), true); result != Parse::kOk) return result;
        return Parse::kOk;
      }
      case ucir::kOpSignal:
      case ucir::kOpThread: {
        if (in_syscall) return fail(op_name(out.op) + " nested inside OP_SYSCALL (expected a frame op)");
        const bool signal = out.op == ucir::kOpSignal;
        if (!c.has(signal ? ucir::kSignalFixedBytes - 1 : ucir::kThreadFixedBytes - 1)) return Parse::kTruncated;
        if (signal) {
          out.number = c.le(1);  // the signal
          out.prot = static_cast<std::uint8_t>(c.le(1));  // flags
          out.ret = static_cast<std::uint64_t>(static_cast<std::int64_t>(static_cast<std::int32_t>(c.le(4))));  // si_code
          for (std::size_t i = 0; i < 5; ++i) out.args[i] = c.le(8);
        } else {
          out.number = c.le(1);  // the change
          if (out.number < 1 || out.number > 3)
            return fail("OP_THREAD change " + std::to_string(out.number) + " (expected 1 created, 2 exited, 3 switched)");
          out.address = c.le(8);  // tid
          out.size = c.le(8);     // from
          out.ret = static_cast<std::uint64_t>(static_cast<std::int64_t>(static_cast<std::int32_t>(c.le(4))));
        }
        const std::size_t count = c.le(2);
        out.nested.clear();
        for (std::size_t i = 0; i < count; ++i) {
          OpT& nested = out.nested.emplace_back();
          if (const Parse result = parse(nested, true); result != Parse::kOk) return result;
          const bool allowed = nested.op == ucir::kOpReg || nested.op == ucir::kOpSpreg ||
                               (signal && nested.op == ucir::kOpMemWrite);
          if (!allowed) {
            error_offset = nested.offset;
            message = op_name(nested.op) + " inside " + op_name(out.op) + " (expected " +
                      (signal ? "OP_MEM_WRITE, OP_REG or OP_SPREG)" : "OP_REG or OP_SPREG)");
            return Parse::kError;
          }
        }
        return Parse::kOk;
      }
      case ucir::kOpProcess: {
        if (in_syscall) return fail("OP_PROCESS nested inside OP_SYSCALL (expected a frame op)");
        if (!c.has(1 + 8)) return Parse::kTruncated;  // the change and the pid
        out.number = c.le(1);  // the change
        if (out.number < 1 || out.number > 2)
          return fail("OP_PROCESS change " + std::to_string(out.number) + " (expected 1 forked or 2 exec'd)");
        out.address = c.le(8);  // the pid
        for (std::string_view* text : {&out.desc, &out.file}) {  // the trace's name, the detail
          if (!c.has(2)) return Parse::kTruncated;
          const std::size_t length = c.le(2);
          if (!c.has(length)) return Parse::kTruncated;
          *text = std::string_view(reinterpret_cast<const char*>(c.data + c.pos), length);
          c.pos += length;
        }
        return Parse::kOk;
      }
      case ucir::kOpCallstack: {
        if (!in_syscall) return fail("OP_CALLSTACK outside OP_SYSCALL (it is only valid among a syscall's effects)");
        if (!c.has(2)) return Parse::kTruncated;
        const std::size_t depth = c.le(2);
        if (!c.has(depth * 8)) return Parse::kTruncated;
        out.stack.clear();
        for (std::size_t i = 0; i < depth; ++i) out.stack.push_back(c.le(8));
        return Parse::kOk;
      }
      default:
        return fail(op_name(out.op) + " (expected an op id 0..13 or 0x80..0x82)");
    }
  }

 private:
  Cursor& cursor_;
  bool usercorn_;  // usercorn's own layouts: u64 sizes in MAP/UNMAP/PROT, u32 syscall numbers
  const arch::ArchInfo& arch_;
  std::span<const std::int32_t> register_by_uc_id_;
};

}  // namespace

struct UcirReader::Page {
  std::array<std::uint8_t, 4096> bytes{};
  std::array<bool, 4096> known{};
};

// The page numbered `number`, or nullptr when nothing was written there.
// Pages are never removed, so the last one found is kept at hand: the next
// instruction or access is nearly always on it.
const UcirReader::Page* UcirReader::page(std::uint64_t number) const {
  if (last_page_ && last_page_number_ == number) return last_page_;
  const auto found = pages_.find(number);
  if (found == pages_.end()) return nullptr;
  last_page_number_ = number;
  last_page_ = found->second.get();
  return last_page_;
}

// The page numbered `number`, made (unknown bytes) if there is none.
UcirReader::Page& UcirReader::page_to_write(std::uint64_t number) {
  if (last_page_ && last_page_number_ == number) return *last_page_;
  auto& slot = pages_[number];
  if (!slot) slot = std::make_unique<Page>();
  last_page_number_ = number;
  last_page_ = slot.get();
  return *slot;
}

void UcirReader::image_write(std::uint64_t address, std::span<const std::uint8_t> bytes) {
  for (std::size_t i = 0; i < bytes.size();) {  // a piece per page
    const std::uint64_t at = address + i;
    const std::size_t in_page = at & 4095;
    const std::size_t piece = std::min<std::size_t>(bytes.size() - i, 4096 - in_page);
    Page& target = page_to_write(at >> 12);
    std::memcpy(target.bytes.data() + in_page, bytes.data() + i, piece);
    std::fill_n(target.known.data() + in_page, piece, true);
    i += piece;
  }
}

void UcirReader::image_unmap(std::uint64_t address, std::uint64_t size) {
  const std::uint64_t end = address + size < address ? ~0ull : address + size;
  // Cut [address, end) out of every range it overlaps.
  auto it = mapped_.lower_bound(address);
  if (it != mapped_.begin()) --it;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> keep;
  while (it != mapped_.end() && it->first < end) {
    if (it->second <= address) {
      ++it;
      continue;
    }
    if (it->first < address) keep.emplace_back(it->first, address);
    if (it->second > end) keep.emplace_back(end, it->second);
    it = mapped_.erase(it);
  }
  for (const auto& [start, stop] : keep) mapped_[start] = stop;
}

void UcirReader::image_map(std::uint64_t address, std::uint64_t size) {
  if (size == 0) return;
  image_unmap(address, size);
  mapped_[address] = address + size < address ? ~0ull : address + size;
  // A new mapping is zero-filled: the pages the image holds there become zero
  // (pages it does not hold stay unknown: a mapping's size is untrusted).
  for (auto& [number, page] : pages_) {
    const std::uint64_t start = number << 12;
    for (std::size_t i = 0; i < 4096; ++i) {
      if (start + i - address < size) {
        page->bytes[i] = 0;
        page->known[i] = true;
      }
    }
  }
}

void UcirReader::image_read(std::uint64_t address, std::uint64_t size, std::vector<std::uint8_t>& out) const {
  out.clear();
  if (size > 1u << 16) return;
  out.resize(size);
  for (std::uint64_t i = 0; i < size;) {
    const std::uint64_t at = address + i;
    const std::size_t in_page = at & 4095;
    // The known bytes from here to the end of the page or of the read, copied at once.
    const std::size_t piece = static_cast<std::size_t>(std::min<std::uint64_t>(size - i, 4096 - in_page));
    std::size_t known = 0;
    if (const Page* source = page(at >> 12)) {
      while (known < piece && source->known[in_page + known]) ++known;
      std::memcpy(out.data() + i, source->bytes.data() + in_page, known);
    }
    i += known;
    if (known == piece) continue;
    // A byte nothing wrote: zero where mapped, else the read fails.
    auto range = mapped_.upper_bound(address + i);
    if (range == mapped_.begin() || (--range)->second <= address + i) {
      out.clear();  // outside every mapping
      return;
    }
    out[i++] = 0;
  }
}

bool UcirReader::can_carry(events::EventKind kind) {
  switch (kind) {
    case events::EventKind::kFault:
    case events::EventKind::kModuleLoad:
    case events::EventKind::kGap:
      return false;
    default:
      return true;
  }
}

UcirReader::UcirReader(std::unique_ptr<ByteSource> stream, std::string source)
    : stream_(std::move(stream)), source_(std::move(source)), scratch_(std::make_unique<Scratch>()) {}

UcirReader::~UcirReader() = default;

void UcirReader::switch_frame_thread(std::uint64_t pid) {
  if (pid == frame_pid_) return;
  if (frame_pid_) thread_places_[frame_pid_] = ThreadPlace{pc_, mode_, last_step_pc_};
  frame_pid_ = pid;
  switched_in_step_pc_.reset();
  last_step_pc_ = 0;
  if (const auto found = thread_places_.find(pid); found != thread_places_.end()) {
    pc_ = found->second.pc;
    mode_ = found->second.mode;
    last_step_pc_ = found->second.last_step_pc;
    if (last_step_pc_) switched_in_step_pc_ = last_step_pc_;
  }
}

std::uint32_t UcirReader::count_instructions(std::uint64_t address, std::uint8_t mode,
                                             std::span<const std::uint8_t> code) {
  // A block runs many times: decode it once per distinct code at its address (and mode).
  auto& cached = instruction_counts_[address | (std::uint64_t{mode} << 63)];
  if (cached.counted && std::equal(code.begin(), code.end(), cached.code.begin(), cached.code.end())) return cached.count;
  cached.code.assign(code.begin(), code.end());
  cached.count = decode_instruction_count(address, mode, code);
  cached.counted = true;
  return cached.count;
}

std::uint32_t UcirReader::decode_instruction_count(std::uint64_t address, std::uint8_t mode,
                                                   std::span<const std::uint8_t> code) {
  // riscv64 decodes without Capstone (the decoder uses the architecture's own).
  if (!decoder_) {
    auto decoder = arch::InstructionDecoder::open(*arch_, false);
    if (!decoder) return 0;
    decoder_ = std::move(*decoder);
  }
  std::size_t undecoded = 0;
  const std::uint32_t count = decoder_->count_instructions(code, address, mode, undecoded);
  return undecoded == 0 ? count : count + 1;  // undecodable tail: one instruction, as the recorder counts it
}

Error UcirReader::error_at(std::uint64_t offset, std::string message) const {
  return make_error(ErrorCode::kBadFormat,
                    std::move(message) + (header_.zstd ? " (offset in the decompressed stream)" : ""), source_, offset);
}

Expected<std::unique_ptr<UcirReader>> UcirReader::open(const std::string& path) {
  auto file = open_file_source(path);
  if (!file) return file.error();
  return start(std::move(*file), path);
}

Expected<std::unique_ptr<UcirReader>> UcirReader::from_bytes(std::vector<std::uint8_t> bytes, std::string source) {
  return start(make_memory_source(std::move(bytes)), std::move(source));
}

Expected<std::unique_ptr<UcirReader>> UcirReader::start(std::unique_ptr<ByteSource> stream, std::string source) {
  try {
    std::unique_ptr<UcirReader> reader(new UcirReader(std::move(stream), std::move(source)));
    if (auto status = reader->parse_header(); !status) return status.error();
    // The first keyframe, when there is one, is the initial state.
    reader->refill(ucir::kFrameHeaderBytes);
    if (reader->position_ < reader->bytes_.size() && reader->bytes_[reader->position_] == ucir::kOpKeyframe) {
      auto first = reader->next([](const events::Event&) {});
      if (!first) return first.error();
    }
    return reader;
  } catch (const std::exception& error) {
    return make_error(ErrorCode::kIo, std::string("cannot read the trace: ") + error.what(), source);
  }
}

bool UcirReader::refill(std::size_t want) {
  if (stream_done_) return false;
  bytes_.erase(bytes_.begin(), bytes_.begin() + static_cast<std::ptrdiff_t>(position_));
  base_ += position_;
  position_ = 0;
  const std::size_t target = bytes_.size() + want;
  bool grew = false;
  while (bytes_.size() < target) {
    if (stream_->read(bytes_, target - bytes_.size()) == 0) {
      stream_done_ = true;
      if (!stream_->problem.empty()) {
        if (!warning_.empty()) warning_ += "; ";
        warning_ += stream_->problem + "; reading what was decoded before it";
      }
      break;
    }
    grew = true;
  }
  return grew;
}

Status UcirReader::parse_header() {
  refill(ucir::kHeaderBytes);
  if (bytes_.size() >= 4 && std::equal(std::begin(kZstdMagic), std::end(kZstdMagic), bytes_.begin())) {
    // One zstd stream: everything read so far, then the rest, is its input.
    header_.zstd = true;
    stream_ = make_zstd_source(make_prefix_source(std::move(bytes_), std::move(stream_)));
    bytes_.clear();
    stream_done_ = false;
    warning_.clear();
    refill(ucir::kHeaderBytes);
  }
  if (bytes_.size() < ucir::kHeaderBytes)
    return make_error(ErrorCode::kTruncated,
                      "the file has " + std::to_string(bytes_.size()) + " bytes, shorter than the 74-byte UCIR header" +
                          (warning_.empty() ? "" : " (" + warning_ + ")"),
                      source_, 0);
  if (!std::equal(std::begin(ucir::kMagic), std::end(ucir::kMagic), bytes_.begin()))
    return make_error(ErrorCode::kBadFormat, "not a UCIR file (expected the magic \"UCIR\" or a zstd stream)", source_, 0);
  Cursor c{bytes_.data(), bytes_.size(), 4};
  header_.version = static_cast<std::uint32_t>(c.le(4));
  if (header_.version == __builtin_bswap32(ucir::kUsercornVersion)) {
    header_.usercorn_flavour = true;
    header_.version = ucir::kUsercornVersion;
  } else if (header_.version != ucir::kVersion) {
    return make_error(ErrorCode::kBadFormat, "unknown version " + std::to_string(header_.version) + " (expected 0)",
                      source_, 4);
  }
  auto name = [&](std::size_t at) {
    const char* text = reinterpret_cast<const char*>(bytes_.data() + at);
    return std::string(text, strnlen(text, ucir::kNameBytes));
  };
  header_.arch = name(8);
  header_.os = name(40);
  header_.code_order = bytes_[72];
  header_.data_order = bytes_[73];
  if (header_.code_order > 1 || header_.data_order > 1)
    return make_error(ErrorCode::kBadFormat, "byte order fields must be 0 or 1", source_, 72);
  // One name may cover both byte orders (usercorn's "mips"): the data byte
  // order field picks the architecture.
  for (const arch::ArchInfo* candidate : arch::all_archs())
    if (candidate->format_ids.ucir_arch == header_.arch && candidate->little_endian == (header_.data_order == 0))
      arch_ = candidate;
  if (!arch_) return make_error(ErrorCode::kUnsupported, "unsupported architecture \"" + header_.arch + "\"", source_, 8);
  info_.arch_name = arch_->name;
  for (std::size_t i = 0; i < arch_->registers.size(); ++i) {
    const auto id = static_cast<std::size_t>(arch_->registers[i].uc_id);
    if (id >= register_by_uc_id_.size()) register_by_uc_id_.resize(id + 1, -1);
    register_by_uc_id_[id] = static_cast<std::int32_t>(i);
  }
  position_ = ucir::kHeaderBytes;
  if (header_.usercorn_flavour) {
    // Everything after the header is one snappy framed stream; offsets from
    // here on count its decoded bytes (after the 74 header bytes).
    std::vector<std::uint8_t> rest(bytes_.begin() + ucir::kHeaderBytes, bytes_.end());
    stream_ = std::make_unique<SnappySource>(make_prefix_source(std::move(rest), std::move(stream_)));
    bytes_.resize(ucir::kHeaderBytes);
    stream_done_ = false;
  }
  return ok_status();
}

Expected<bool> UcirReader::next(const EventCallback& on_event) {
  if (done_) return false;
  try {
    for (;;) {
      if (position_ >= bytes_.size() && !refill(kReadChunk)) {
        done_ = true;
        note_missing_end();
        return false;
      }
      Cursor c{bytes_.data(), bytes_.size(), position_};
      const std::size_t start = position_;
      const std::uint64_t at = base_ + start;  // the frame's offset in the (decompressed) stream
      const auto op = static_cast<std::uint8_t>(c.le(1));
      if (op == ucir::kOpNop) {
        position_ = c.pos;
        return true;
      }
      if (op != ucir::kOpFrame && op != ucir::kOpKeyframe) {
        done_ = true;
        return error_at(at, "found " + op_name(op) + " (expected OP_FRAME or OP_KEYFRAME)");
      }
      if (!c.has(12)) {
        if (read_more_or_end(op, at, "its header is cut short")) continue;
        return false;
      }
      const std::uint64_t pid = c.le(8);
      if (!seen_keyframe_) info_.process_id = pid;  // the first frame is the first keyframe (checked below)
      if (op == ucir::kOpFrame) switch_frame_thread(pid);  // the thread of the frame's events (ucir_layout.h)
      const std::uint64_t count = c.le(4);
      std::vector<Op>& ops = frame_ops_;  // reused from frame to frame (its capacity)
      ops.clear();
      ops.reserve(std::min<std::uint64_t>(count, (bytes_.size() - c.pos) / 2 + 1));
      OpParser parser(*arch_, register_by_uc_id_, c, header_.usercorn_flavour);
      bool retry = false;
      for (std::uint64_t i = 0; i < count; ++i) {
        Op& parsed = ops.emplace_back();  // parsed in place (an Op is large: no move)
        const Parse result = parser.parse(parsed, false);
        if (result == Parse::kTruncated) {
          if (read_more_or_end(op, at,
                               "it announces " + std::to_string(count) + " ops, the file ends in op " +
                                   std::to_string(i) + " at offset " + std::to_string(base_ + parsed.offset))) {
            retry = true;
            break;
          }
          return false;
        }
        if (result == Parse::kError) {
          done_ = true;
          return error_at(base_ + parser.error_offset,
                          "in the " + op_name(op) + " at offset " + std::to_string(at) + ": " + parser.message);
        }
      }
      if (retry) continue;
      position_ = c.pos;
      take_frame(op, on_event);
      return true;
    }
  } catch (const std::bad_alloc&) {
    done_ = true;
    return make_error(ErrorCode::kLimit, "out of memory decoding the frame", source_, base_ + position_);
  }
}

// A frame that does not fit what is buffered: reads more (growing
// geometrically) and returns true, to parse it again; at the end of the
// stream, the trace ends there: warning() says where and `what` was missing.
bool UcirReader::read_more_or_end(std::uint8_t op, std::uint64_t at, const std::string& what) {
  if (refill(std::max(kReadChunk, bytes_.size() - position_))) return true;
  done_ = true;
  if (!warning_.empty()) warning_ += "; ";
  warning_ += "the trace ends inside the " + op_name(op) + " at offset " + std::to_string(at) + " (" + what +
              "); read up to the last complete frame, which ends at offset " + std::to_string(at);
  return false;
}

// The frame whose ops are in frame_ops_: a keyframe goes to the memory image
// (the first is also the initial state), a frame's ops become events.
void UcirReader::take_frame(std::uint8_t op, const EventCallback& on_event) {
  const std::vector<Op>& ops = frame_ops_;
  if (op == ucir::kOpKeyframe) {
    ++keyframes_;
    for (const auto& parsed : ops) {
      if (parsed.op == ucir::kOpMemMap) image_map(parsed.address, parsed.size);
      if (parsed.op == ucir::kOpMemWrite) image_write(parsed.address, parsed.bytes);
    }
    if (!seen_keyframe_) apply_keyframe(ops);
    seen_keyframe_ = true;
    ended_ = false;
    return;
  }
  seen_keyframe_ = true;
  if (ops.empty()) {  // the end note (ucir_layout.h): nothing to produce
    ended_ = true;
    return;
  }
  // The interruption note (ucir_layout.h): a frame of OP_NOPs only; any
  // later frame with real ops takes the note back.
  interrupted_ = std::all_of(ops.begin(), ops.end(), [](const Op& parsed) { return parsed.op == ucir::kOpNop; });
  // Files written before the end note: the interruption note or the exit ends them.
  ended_ = interrupted_ || std::any_of(ops.begin(), ops.end(), [](const Op& parsed) {
             return parsed.op == ucir::kOpExit;
           });
  produce(ops, on_event);
}

// At the end of the stream, after the last complete frame: a version 0 file
// that does not end with the end note (nor, before it existed, with the
// interruption note or an exit) was cut exactly between two frames.
void UcirReader::note_missing_end() {
  if (ended_ || header_.usercorn_flavour || !warning_.empty()) return;
  const std::uint64_t at = base_ + bytes_.size();
  warning_ = "the trace ends at offset " + std::to_string(at) +
             " after a complete frame, without the end note every recording ends with (an OP_FRAME of no ops): "
             "it was cut short there";
}

void UcirReader::apply_keyframe(const std::vector<Op>& ops) {
  info_.has_initial_state = true;
  std::uint64_t copied = 0;
  for (const auto& op : ops) {
    if (op.op == ucir::kOpMemMap) {
      events::InitialRegion region;
      region.start = events::GuestAddress{op.address};
      region.size = op.size;
      region.prot = op.prot;
      region.name = std::string(op.desc);
      region.file = std::string(op.file);
      region.file_offset = op.file_offset;
      region.file_size = op.file_size;
      if (copied + op.size <= kMaxInitialRegionBytes) {
        region.bytes.assign(op.size, 0);
        copied += op.size;
      }
      info_.initial_memory.push_back(std::move(region));
    } else if (op.op == ucir::kOpMemWrite) {
      for (auto& region : info_.initial_memory) {
        if (region.bytes.empty() || op.address < region.start.value) continue;
        const std::uint64_t offset = op.address - region.start.value;
        if (offset >= region.size) continue;
        const std::uint64_t length = std::min<std::uint64_t>(op.bytes.size(), region.size - offset);
        std::memcpy(region.bytes.data() + offset, op.bytes.data(), length);
      }
    } else if (op.op == ucir::kOpReg || op.op == ucir::kOpSpreg) {
      info_.initial_registers.push_back(op.reg);
    }
  }
}

// produce()'s steps: each op kind's event. Every event's thread is the
// frame's pid (frame_pid_). The steps of every instruction are inlined, as
// they were when produce() was one function (block and step into produce(),
// memory and registers into produce_pending()): called apart, they cost
// `tracecorn stat` 1.4% more instructions.
template <typename Payload>
void UcirReader::emit(events::EventKind kind, Payload&& payload, const EventCallback& on_event) {
  events::Event event;
  event.sequence = events::EventSequence{next_sequence_++};
  event.thread = events::ThreadId{static_cast<std::uint32_t>(frame_pid_)};
  event.kind = kind;
  event.payload = std::forward<Payload>(payload);
  on_event(event);
}

// The OP_JMP ops[at]: a block, whose instruction count is the OP_STEPs up to the next OP_JMP.
[[gnu::always_inline]] inline
void UcirReader::produce_block(const std::vector<Op>& ops, std::size_t at, const EventCallback& on_event,
                               bool code_given) {
  const Op& op = ops[at];
  switched_in_step_pc_.reset();
  std::uint32_t steps = 0;
  for (std::size_t j = at + 1; j < ops.size() && ops[j].op != ucir::kOpJmp; ++j) steps += ops[j].op == ucir::kOpStep;
  // arm: bit 0 of the address marks a Thumb block (the writer's convention).
  mode_ = arch_->alternate_isa && (op.address & 1) ? 1 : 0;
  const std::uint64_t address = mode_ ? op.address & ~std::uint64_t{1} : op.address;
  pc_ = address;
  index_in_block_ = 0;
  std::vector<std::uint8_t>& code = scratch_->code;
  image_read(address, op.size, code);
  if (steps == 0) steps = count_instructions(address, mode_, code);  // blocks level: no OP_STEP to count
  emit(events::EventKind::kBlock,
       events::BlockEvent{events::GuestAddress{address}, static_cast<std::uint32_t>(op.size), steps, code, mode_,
                          code_given},
       on_event);
}

// An OP_STEP: the instruction at the pc, then the ops that preceded it (its effects).
[[gnu::always_inline]] inline
void UcirReader::produce_step(const Op& op, const EventCallback& on_event) {
  std::vector<std::uint8_t>& code = scratch_->code;
  image_read(pc_, op.size, code);
  emit(events::EventKind::kInstruction,
       events::InstructionEvent{events::GuestAddress{pc_}, static_cast<std::uint32_t>(op.size), code,
                                index_in_block_++, mode_},
       on_event);
  produce_pending(true, on_event);
  switched_in_step_pc_.reset();
  last_step_pc_ = pc_;
  pc_ += op.size;
}

// The ops held since the last OP_STEP (or the frame's start) as events;
// `attributed`: an OP_STEP follows them, whose pc their memory events carry.
void UcirReader::produce_pending(bool attributed, const EventCallback& on_event) {
  std::vector<const Op*>& pending = scratch_->pending;
  for (std::size_t i = 0; i < pending.size(); ++i) {
    const Op& op = *pending[i];
    switch (op.op) {
      case ucir::kOpMemRead:
      case ucir::kOpMemWrite:
        produce_memory(op, attributed, on_event);
        break;
      case ucir::kOpReg:
      case ucir::kOpSpreg:
        i = produce_registers(i, on_event);
        break;
      case ucir::kOpSyscall:
        produce_syscall(op, on_event);
        break;
      case ucir::kOpProcess:
        emit(events::EventKind::kProcess,
             events::ProcessEvent{static_cast<events::ProcessChange>(op.number), op.address, op.desc, op.file},
             on_event);
        break;
      case ucir::kOpSignal:
        produce_signal(op, on_event);
        break;
      case ucir::kOpThread:
        produce_thread(op, on_event);
        break;
      default:
        break;  // OP_NOP, mapping ops outside a syscall: no event in the model
    }
  }
  pending.clear();
}

// An OP_MEM_READ or OP_MEM_WRITE: its value is the written bytes, or the
// memory image's for a read.
[[gnu::always_inline]] inline
void UcirReader::produce_memory(const Op& op, bool attributed, const EventCallback& on_event) {
  std::vector<std::uint8_t>& code = scratch_->code;
  events::MemoryEvent memory;
  memory.address = events::GuestAddress{op.address};
  memory.size = static_cast<std::uint8_t>(std::min<std::uint64_t>(op.size, 8));
  if (op.op == ucir::kOpMemWrite) {
    image_write(op.address, op.bytes);
  } else {
    image_read(op.address, memory.size, code);
  }
  const std::span<const std::uint8_t> source = op.op == ucir::kOpMemWrite ? op.bytes : std::span(code);
  // The bytes in memory are the value in the guest's byte order.
  const std::size_t count = std::min<std::size_t>(source.size(), 8);
  for (std::size_t b = 0; b < count; ++b)
    memory.value |= static_cast<std::uint64_t>(source[b]) << (8 * (arch_->little_endian ? b : count - 1 - b));
  memory.pc = events::GuestAddress{pc_};
  memory.pc_known = attributed;
  emit(op.op == ucir::kOpMemRead ? events::EventKind::kMemoryRead : events::EventKind::kMemoryWrite, memory,
       on_event);
}

// The run of OP_REG/OP_SPREG starting at pending[first]: one RegistersEvent.
// Returns the index of the run's last op.
[[gnu::always_inline]] inline
std::size_t UcirReader::produce_registers(std::size_t first, const EventCallback& on_event) {
  const std::vector<const Op*>& pending = scratch_->pending;
  std::vector<events::RegisterValue>& registers = scratch_->registers;
  registers.clear();
  std::size_t i = first;
  while (i < pending.size() && (pending[i]->op == ucir::kOpReg || pending[i]->op == ucir::kOpSpreg))
    registers.push_back(pending[i++]->reg);
  emit(events::EventKind::kRegisters, events::RegistersEvent{events::GuestAddress{pc_}, registers}, on_event);
  return i - 1;
}

void UcirReader::produce(const std::vector<Op>& ops, const EventCallback& on_event) {
  // Scratch space kept between frames (cleared here, capacity reused).
  scratch_->pending.clear();
  scratch_->registers.clear();
  index_in_block_ = 0;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const Op& op = ops[i];
    switch (op.op) {
      case ucir::kOpJmp:
        produce_pending(false, on_event);
        produce_block(ops, i, on_event, i == 1 && is_code_of_block(ops[0], op));
        break;
      case ucir::kOpStep:
        produce_step(op, on_event);
        break;
      case ucir::kOpExit:
        produce_pending(false, on_event);
        emit(events::EventKind::kExit, events::ExitEvent{false, exit_code_, 0}, on_event);
        break;
      case ucir::kOpMemWrite:
        if (i == 0 && ops.size() > 1 && is_code_of_block(op, ops[1])) {
          image_write(op.address, op.bytes);  // the block's code (ucir_writer.h), not an event
          break;
        }
        scratch_->pending.push_back(&op);
        break;
      default:
        scratch_->pending.push_back(&op);  // produced after the next OP_STEP, or at the frame's end
        break;
    }
  }
  produce_pending(false, on_event);
}

// Whether `write`, a frame's first op, is the code of the block `jump` that
// follows it: exactly its bytes (UcirWriter writes, below the mem level, the
// code of a block from writable memory that way; a guest store is never a
// frame's first op).
bool UcirReader::is_code_of_block(const Op& write, const Op& jump) const {
  if (write.op != ucir::kOpMemWrite || jump.op != ucir::kOpJmp) return false;
  const std::uint64_t address = arch_->alternate_isa ? jump.address & ~std::uint64_t{1} : jump.address;
  return write.address == address && write.bytes.size() == jump.size && jump.size != 0;
}

// An OP_SYSCALL's, OP_SIGNAL's or OP_THREAD's effects, from its nested ops:
// the event's spans point into them until it is produced.
struct UcirReader::Effects {
  std::vector<events::MemoryWriteEffect> writes;
  std::vector<events::MappingEffect> mappings;
  std::vector<events::RegisterValue> changed;
  std::vector<std::uint64_t> stack;
};

// An OP_SYSCALL's nested ops as its effects; their writes and mapping changes
// go to the memory image too.
void UcirReader::collect_syscall_effects(const Op& op, Effects& effects) {
  for (const Op& nested : op.nested) {
    switch (nested.op) {
      case ucir::kOpMemWrite:
        effects.writes.push_back({events::GuestAddress{nested.address}, nested.bytes});
        image_write(nested.address, nested.bytes);
        break;
      case ucir::kOpMemMap:
      case ucir::kOpMemUnmap:
        if (nested.op == ucir::kOpMemMap) image_map(nested.address, nested.size);
        if (nested.op == ucir::kOpMemUnmap) image_unmap(nested.address, nested.size);
        [[fallthrough]];
      case ucir::kOpMemProt:
        effects.mappings.push_back({nested.op == ucir::kOpMemMap     ? events::MappingChangeKind::kMap
                                    : nested.op == ucir::kOpMemUnmap ? events::MappingChangeKind::kUnmap
                                                                     : events::MappingChangeKind::kProtect,
                                    events::GuestAddress{nested.address}, nested.size, nested.prot, nested.desc,
                                    nested.file, nested.file_offset, nested.file_size});
        break;
      case ucir::kOpReg:
      case ucir::kOpSpreg:
        effects.changed.push_back(nested.reg);
        break;
      case ucir::kOpCallstack:
        effects.stack = nested.stack;
        break;
      default:
        break;  // OP_NOP, OP_MEM_READ: nothing to carry
    }
  }
}

// The architecture's number of an OP_SYSCALL: the spec flavour's private-call
// encoding (ucir_layout.h, kPrivateSyscall) decoded.
std::uint64_t UcirReader::syscall_number(const Op& op) const {
  const std::uint64_t base = arch_->syscall_abi.private_base;
  return !header_.usercorn_flavour && base && op.number >= ucir::kPrivateSyscall && op.number <= 0xffff
             ? base + (op.number - ucir::kPrivateSyscall)
             : op.number;
}

void UcirReader::produce_syscall(const Op& op, const EventCallback& on_event) {
  Effects effects;
  collect_syscall_effects(op, effects);
  const std::uint64_t number = syscall_number(op);
  const arch::SyscallId id = arch_->syscall_id(number);
  const std::string name = id == arch::SyscallId::unknown ? "syscall_" + std::to_string(number)
                                                          : std::string(arch::syscall_name(id));
  if (id == arch::SyscallId::exit || id == arch::SyscallId::exit_group)
    exit_code_ = static_cast<std::int32_t>(op.args[0]);
  events::SyscallEvent call;
  call.pc = events::GuestAddress{switched_in_step_pc_.value_or(pc_)};
  call.number = number;
  call.name = name;
  std::copy(std::begin(op.args), std::end(op.args), std::begin(call.args));
  call.result = static_cast<std::int64_t>(op.ret);
  call.memory_writes = effects.writes;
  call.mapping_changes = effects.mappings;
  call.register_changes = effects.changed;
  call.call_stack = effects.stack;
  emit(events::EventKind::kSyscall, call, on_event);
}

// An OP_SIGNAL's or OP_THREAD's nested ops: OP_MEM_WRITEs (to the memory
// image too) and registers.
void UcirReader::collect_writes_and_registers(const Op& op, Effects& effects) {
  for (const Op& nested : op.nested) {
    if (nested.op == ucir::kOpMemWrite) {
      effects.writes.push_back({events::GuestAddress{nested.address}, nested.bytes});
      image_write(nested.address, nested.bytes);
    } else {
      effects.changed.push_back(nested.reg);
    }
  }
}

void UcirReader::produce_signal(const Op& op, const EventCallback& on_event) {
  Effects effects;
  collect_writes_and_registers(op, effects);
  events::SignalEvent signal;
  signal.signal = static_cast<std::uint32_t>(op.number);
  signal.fault = (op.prot & 1) != 0;
  signal.code = static_cast<std::int32_t>(op.ret);
  signal.sender_pid = op.args[0];
  signal.fault_address = events::GuestAddress{op.args[1]};
  signal.interrupted_pc = events::GuestAddress{op.args[2]};
  signal.handler = events::GuestAddress{op.args[3]};
  signal.frame = events::GuestAddress{op.args[4]};
  signal.frame_writes = effects.writes;
  signal.register_changes = effects.changed;
  emit(events::EventKind::kSignal, signal, on_event);
}

void UcirReader::produce_thread(const Op& op, const EventCallback& on_event) {
  Effects effects;
  collect_writes_and_registers(op, effects);
  events::ThreadEvent change;
  change.change = static_cast<events::ThreadChange>(op.number);
  change.from = events::ThreadId{static_cast<std::uint32_t>(op.size)};
  change.exit_code = static_cast<std::int32_t>(op.ret);
  change.registers = effects.changed;
  const std::uint64_t running = frame_pid_;
  frame_pid_ = op.address;  // the event's thread: the one it is about
  emit(events::EventKind::kThread, change, on_event);
  frame_pid_ = running;
}

Status UcirReader::read_all(events::Sink& sink) { return formats::read_all(*this, sink); }

std::uint64_t UcirReader::file_bytes_read() const { return stream_->consumed(); }

}  // namespace tracecorn::formats
