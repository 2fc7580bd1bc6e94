// Role: the SFrame reader declared in sframe.h.
#include "recorder/unwind/sframe.h"

#include <cstdio>

#include "recorder/support/hex.h"
#include "recorder/unwind/byte_reader.h"

namespace tracecorn::unwind {
namespace {

using detail::ByteReader;

constexpr std::uint16_t kMagic = 0xdee2;
constexpr std::uint64_t kHeaderSize = 28;
constexpr std::uint8_t kV1PltRepetition = 16;  // AMD64 PLT entries; v1 has no field (see sframe.h)

}  // namespace

Error SFrameTable::error(std::string message, std::uint64_t offset, ErrorCode code) const {
  return make_error(code, "SFrame: " + std::move(message), source_, offset);
}

Expected<SFrameTable> SFrameTable::create(std::span<const std::uint8_t> bytes, std::uint64_t section_address,
                                          std::string source) {
  SFrameTable table;
  table.bytes_ = bytes;
  table.address_ = section_address;
  table.source_ = std::move(source);
  if (bytes.size() < kHeaderSize) return table.error("the header is truncated", 0, ErrorCode::kTruncated);
  const std::uint16_t magic_le = static_cast<std::uint16_t>(bytes[0] | bytes[1] << 8);
  if (magic_le == kMagic)
    table.little_endian_ = true;
  else if (magic_le == 0xe2de)
    table.little_endian_ = false;
  else
    return table.error("bad magic " + hex(magic_le), 0);
  ByteReader in(bytes, table.little_endian_);
  in.skip(2);
  std::uint8_t fixed_fp = 0, fixed_ra = 0, aux_length = 0;
  std::uint32_t num_fres = 0, fde_off = 0, fre_off = 0, fre_len = 0;
  in.u8(table.version_);
  in.u8(table.flags_);
  in.u8(table.abi_);
  in.u8(fixed_fp);
  in.u8(fixed_ra);
  in.u8(aux_length);
  in.u32(table.fde_count_);
  in.u32(num_fres);
  in.u32(fre_len);
  in.u32(fde_off);
  in.u32(fre_off);
  table.fixed_fp_offset_ = static_cast<std::int8_t>(fixed_fp);
  table.fixed_ra_offset_ = static_cast<std::int8_t>(fixed_ra);
  if (table.version_ != 1 && table.version_ != 2)
    return table.error("version " + std::to_string(table.version_) + " is not 1 or 2", 2, ErrorCode::kUnsupported);
  if (table.abi_ < kSFrameAbiAarch64Big || table.abi_ > kSFrameAbiAmd64Little)
    return table.error("unknown ABI " + std::to_string(table.abi_), 4, ErrorCode::kUnsupported);
  if ((table.abi_ == kSFrameAbiAarch64Big) == table.little_endian_)
    return table.error("the ABI's byte order differs from the magic's", 4);
  table.fde_size_ = table.version_ == 1 ? 17 : 20;
  const std::uint64_t end_of_header = kHeaderSize + aux_length;
  if (end_of_header > bytes.size()) return table.error("the auxiliary header is truncated", 7, ErrorCode::kTruncated);
  table.fde_start_ = end_of_header + fde_off;
  table.fre_start_ = end_of_header + fre_off;
  table.fre_length_ = fre_len;
  const std::uint64_t fde_bytes = static_cast<std::uint64_t>(table.fde_count_) * table.fde_size_;
  if (table.fde_start_ > bytes.size() || fde_bytes > bytes.size() - table.fde_start_)
    return table.error(std::to_string(table.fde_count_) + " FDEs at " + hex(table.fde_start_) +
                           " run past the end of the section",
                       20, ErrorCode::kTruncated);
  if (table.fre_start_ > bytes.size() || table.fre_length_ > bytes.size() - table.fre_start_)
    return table.error("the FRE sub-section runs past the end of the section", 16, ErrorCode::kTruncated);
  return table;
}

Expected<SFrameFde> SFrameTable::fde(std::uint32_t index) const {
  if (index >= fde_count_) return error("FDE index " + std::to_string(index) + " out of range", 8);
  const std::uint64_t at = fde_start_ + static_cast<std::uint64_t>(index) * fde_size_;
  ByteReader in(bytes_, little_endian_);
  in.seek(at);  // create() checked the whole array
  std::int64_t start = 0;
  std::uint8_t info = 0;
  SFrameFde fde;
  fde.index = index;
  in.read_signed(4, start);
  in.u32(fde.size);
  in.u32(fde.fre_offset);
  in.u32(fde.fre_count);
  in.u8(info);
  if (version_ >= 2) in.u8(fde.repetition_size);
  const std::uint64_t base = (flags_ & kSFrameFlagFuncStartPcrel) ? address_ + at : address_;
  fde.start = base + static_cast<std::uint64_t>(start);
  fde.fre_type = info & 0x0f;
  fde.pcmask = (info >> 4) & 1;
  fde.pauth_key = (info >> 5) & 1;
  if (fde.fre_type > 2) return error("FDE " + std::to_string(index) + ": FRE type " + std::to_string(fde.fre_type), at + 16);
  if (fde.pcmask && version_ == 1) {
    if (abi_ != kSFrameAbiAmd64Little)
      return error("a v1 PCMASK FDE has no repetition size outside AMD64", at + 16, ErrorCode::kUnsupported);
    fde.repetition_size = kV1PltRepetition;
  }
  if (fde.pcmask && fde.repetition_size == 0) return error("PCMASK FDE with repetition size 0", at + 17);
  if (fde.fre_offset > fre_length_) return error("FDE's first FRE lies past the FRE sub-section", at + 8);
  return fde;
}

Expected<std::optional<SFrameFde>> SFrameTable::find_fde(std::uint64_t pc) const {
  if (fde_count_ == 0) return std::optional<SFrameFde>{};
  auto covers = [&](const SFrameFde& f) { return pc >= f.start && pc - f.start < f.size; };
  if (flags_ & kSFrameFlagFdeSorted) {
    // Last FDE whose start <= pc.
    std::uint32_t low = 0, high = fde_count_;
    while (low < high) {
      const std::uint32_t mid = low + (high - low) / 2;
      auto f = fde(mid);
      if (!f) return f.error();
      if (f->start <= pc)
        low = mid + 1;
      else
        high = mid;
    }
    if (low == 0) return std::optional<SFrameFde>{};
    auto f = fde(low - 1);
    if (!f) return f.error();
    if (covers(*f)) return std::optional<SFrameFde>{*f};
    return std::optional<SFrameFde>{};
  }
  for (std::uint32_t i = 0; i < fde_count_; ++i) {
    auto f = fde(i);
    if (!f) return f.error();
    if (covers(*f)) return std::optional<SFrameFde>{*f};
  }
  return std::optional<SFrameFde>{};
}

Expected<SFrameFre> SFrameTable::read_fre(const SFrameFde& fde, std::uint64_t& offset) const {
  ByteReader in(bytes_.subspan(fre_start_, fre_length_), little_endian_, fre_start_);
  if (!in.seek(offset)) return error("FRE offset lies past the FRE sub-section", fre_start_ + offset, ErrorCode::kTruncated);
  const unsigned address_size = fde.fre_type == 0 ? 1 : fde.fre_type == 1 ? 2 : 4;
  SFrameFre fre;
  std::uint64_t start = 0;
  std::uint8_t info = 0;
  if (!in.read_unsigned(address_size, start) || !in.u8(info))
    return error("FRE is truncated", in.section_offset(), ErrorCode::kTruncated);
  fre.start_offset = static_cast<std::uint32_t>(start);
  fre.cfa_base_is_sp = info & 1;
  fre.offset_count = (info >> 1) & 0x0f;
  const unsigned size_code = (info >> 5) & 3;
  if (size_code == 3) return error("FRE offset size code 3", in.section_offset() - 1);
  fre.offset_size = static_cast<std::uint8_t>(1u << size_code);
  fre.ra_mangled = info >> 7;
  std::int32_t offsets[15] = {};
  for (unsigned i = 0; i < fre.offset_count; ++i) {
    std::int64_t value = 0;
    if (!in.read_signed(fre.offset_size, value))
      return error("FRE offsets are truncated", in.section_offset(), ErrorCode::kTruncated);
    offsets[i] = static_cast<std::int32_t>(value);
  }
  if (fre.offset_count == 0) return error("FRE without a CFA offset", in.section_offset() - 1);
  fre.cfa_offset = offsets[0];
  unsigned next = 1;
  if (fixed_ra_offset_ != 0) {
    fre.ra_offset = fixed_ra_offset_;
  } else if (next < fre.offset_count) {
    fre.ra_offset = offsets[next++];
  }
  if (fixed_fp_offset_ != 0) {
    fre.fp_offset = fixed_fp_offset_;
  } else if (next < fre.offset_count) {
    fre.fp_offset = offsets[next++];
  }
  offset = in.offset();
  return fre;
}

Status SFrameTable::for_each_fre(const SFrameFde& fde, const std::function<void(const SFrameFre&)>& visit) const {
  std::uint64_t offset = fde.fre_offset;
  for (std::uint32_t i = 0; i < fde.fre_count; ++i) {
    auto fre = read_fre(fde, offset);
    if (!fre) return fre.error();
    visit(*fre);
  }
  return ok_status();
}

Expected<std::optional<SFrameFre>> SFrameTable::find_fre(const SFrameFde& fde, std::uint64_t pc) const {
  if (pc < fde.start || pc - fde.start >= fde.size) return std::optional<SFrameFre>{};
  std::uint64_t within = pc - fde.start;
  if (fde.pcmask) within %= fde.repetition_size;
  std::uint64_t offset = fde.fre_offset;
  std::optional<SFrameFre> best;
  // FREs are in increasing start order; the last one starting at or before
  // the pc holds (a linear walk: a function has few FREs).
  for (std::uint32_t i = 0; i < fde.fre_count; ++i) {
    auto fre = read_fre(fde, offset);
    if (!fre) return fre.error();
    if (fre->start_offset > within) break;
    best = *fre;
  }
  return best;
}

Expected<UnwindRow> SFrameTable::row_for(const SFrameFre& fre, const SFrameRegisters& registers) const {
  // AArch64 tracks the RA per FRE: an FRE without an RA offset (a function's
  // first instructions) leaves it in the link register, the return column.
  // AMD64 always has one (fixed in the header): its absence is malformed.
  const bool ra_in_register = abi_ == kSFrameAbiAarch64Big || abi_ == kSFrameAbiAarch64Little;
  if (!fre.ra_offset && !ra_in_register) return error("FRE does not say where the return address is", fre_start_);
  UnwindRow row;
  row.cfa.reg = fre.cfa_base_is_sp ? registers.sp : registers.fp;
  row.cfa.offset = fre.cfa_offset;
  row.return_column = registers.return_column;
  row.return_address_signed = fre.ra_mangled;
  auto add = [&](std::uint16_t column, std::int32_t offset) {
    RegisterRule rule;
    rule.kind = RuleKind::kOffset;
    rule.column = column;
    rule.offset = offset;
    row.rules[row.rule_count++] = rule;
  };
  // Sorted by column, as rows from CFI are.
  if (fre.fp_offset && registers.fp < registers.return_column) add(registers.fp, *fre.fp_offset);
  if (fre.ra_offset) add(registers.return_column, *fre.ra_offset);
  if (fre.fp_offset && registers.fp > registers.return_column) add(registers.fp, *fre.fp_offset);
  return row;
}

}  // namespace tracecorn::unwind
