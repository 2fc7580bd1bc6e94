// Role: the SFrame stack trace format (.sframe), versions 1 and 2
// (binutils' "The SFrame format", sourceware.org/binutils/docs/sframe-spec.html; v1 as Debian 12's binutils 2.40 emits it).
// Finds the function descriptor (FDE) of a pc by binary search when the
// section says its FDEs are sorted (linear scan otherwise) and the frame row
// entry (FRE) that holds at the pc, and turns it into an UnwindRow.
// Who calls it: the Unwinder and the tests comparing with `objdump --sframe`.
// Threads: immutable after create(); any thread may read it.
// Invariants: the bytes are untrusted: create() checks that the header and
// the whole FDE array lie inside the section; every FRE read is bounds-checked
// against the FRE sub-section; errors name the section and the byte offset.
// Addresses are file (link-time) addresses.
//
// Layout (all fields in the section's byte order, detected from the magic):
//   header  +0 u16 magic 0xdee2  +2 u8 version (1|2)  +3 u8 flags
//               (0x1 FDE_SORTED, 0x2 FRAME_POINTER, 0x4 FDE_FUNC_START_PCREL)
//           +4 u8 abi (1 aarch64 BE, 2 aarch64 LE, 3 amd64 LE)
//           +5 i8 fixed FP offset  +6 i8 fixed RA offset (0: tracked per FRE)
//           +7 u8 auxiliary header length
//           +8 u32 num_fdes  +12 u32 num_fres  +16 u32 fre_len
//           +20 u32 fde_off  +24 u32 fre_off   (both from the end of the header
//                                               and its auxiliary part)
//   FDE     +0 i32 function start  +4 u32 size  +8 u32 first FRE offset (in the
//           FRE sub-section)  +12 u32 FRE count  +16 u8 info (bits 0-3 FRE type
//           ADDR1/2/4, bit 4 PCMASK, bit 5 aarch64 pauth key)
//           v2 only: +17 u8 repetition size, +18 u16 padding   (v1: 17 bytes, v2: 20)
//   FRE     start offset (u8|u16|u32 by FRE type), u8 info (bit 0 CFA base
//           1=SP 0=FP, bits 1-4 offset count, bits 5-6 offset size 1/2/4 bytes,
//           bit 7 RA mangled), then `count` signed offsets: CFA, then on AMD64
//           FP (RA at the fixed offset), on AArch64 RA then FP.
// The function start is relative to the start of the .sframe section, or to
// the field itself when FDE_FUNC_START_PCREL is set. v1 has no repetition
// size: PCMASK FDEs (PLT stubs) repeat every 16 bytes on AMD64.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>

#include "recorder/support/expected.h"
#include "recorder/unwind/unwind_rules.h"

namespace tracecorn::unwind {

inline constexpr std::uint8_t kSFrameAbiAarch64Big = 1, kSFrameAbiAarch64Little = 2, kSFrameAbiAmd64Little = 3;
inline constexpr std::uint8_t kSFrameFlagFdeSorted = 0x1, kSFrameFlagFramePointer = 0x2,
                              kSFrameFlagFuncStartPcrel = 0x4;

struct SFrameFde {
  std::uint32_t index = 0;
  std::uint64_t start = 0;  // file address of the function
  std::uint32_t size = 0;
  std::uint32_t fre_offset = 0;
  std::uint32_t fre_count = 0;
  std::uint8_t fre_type = 0;     // 0 ADDR1, 1 ADDR2, 2 ADDR4
  bool pcmask = false;
  std::uint8_t pauth_key = 0;
  std::uint8_t repetition_size = 0;  // PCMASK block size (v1: implied)
};

struct SFrameFre {
  std::uint32_t start_offset = 0;  // from the function start (or within the repeated block)
  bool cfa_base_is_sp = true;
  bool ra_mangled = false;
  std::uint8_t offset_size = 1;    // bytes
  std::uint8_t offset_count = 0;
  std::int32_t cfa_offset = 0;
  std::optional<std::int32_t> ra_offset;  // from the CFA (fixed or per FRE)
  std::optional<std::int32_t> fp_offset;  // from the CFA
};

// The DWARF numbers an SFrame row is expressed in.
struct SFrameRegisters {
  std::uint16_t sp = 7;
  std::uint16_t fp = 6;
  std::uint16_t return_column = 16;
};

class SFrameTable {
 public:
  // Parses and checks the header and the FDE array. Errors: bad magic or
  // version, an unknown ABI, sub-sections outside the section.
  static Expected<SFrameTable> create(std::span<const std::uint8_t> bytes, std::uint64_t section_address,
                                      std::string source);

  std::uint8_t version() const { return version_; }
  std::uint8_t flags() const { return flags_; }
  std::uint8_t abi() const { return abi_; }
  std::int8_t fixed_fp_offset() const { return fixed_fp_offset_; }
  std::int8_t fixed_ra_offset() const { return fixed_ra_offset_; }
  std::uint32_t fde_count() const { return fde_count_; }

  // The FDE at `index` (< fde_count()).
  Expected<SFrameFde> fde(std::uint32_t index) const;
  // The FDE covering `pc`, nullopt when none does.
  Expected<std::optional<SFrameFde>> find_fde(std::uint64_t pc) const;
  // Every FRE of `fde` in order; the first malformed one is the error.
  Status for_each_fre(const SFrameFde& fde, const std::function<void(const SFrameFre&)>& visit) const;
  // The FRE holding at `pc` inside `fde` (nullopt when the pc lies before the
  // first FRE) and the row it describes.
  Expected<std::optional<SFrameFre>> find_fre(const SFrameFde& fde, std::uint64_t pc) const;
  // The UnwindRow an FRE describes (CFA = base + offset; RA and FP saved at
  // CFA + offset; on AArch64 an FRE without an RA offset leaves the RA in the
  // link register). Errors: an AMD64 FRE that leaves the RA unknown.
  Expected<UnwindRow> row_for(const SFrameFre& fre, const SFrameRegisters& registers) const;

 private:
  SFrameTable() = default;
  Expected<SFrameFre> read_fre(const SFrameFde& fde, std::uint64_t& offset) const;
  Error error(std::string message, std::uint64_t offset, ErrorCode code = ErrorCode::kBadFormat) const;

  std::span<const std::uint8_t> bytes_;
  std::uint64_t address_ = 0;
  std::string source_;
  bool little_endian_ = true;
  std::uint8_t version_ = 0;
  std::uint8_t flags_ = 0;
  std::uint8_t abi_ = 0;
  std::int8_t fixed_fp_offset_ = 0;
  std::int8_t fixed_ra_offset_ = 0;
  std::uint32_t fde_count_ = 0;
  std::uint64_t fde_start_ = 0;   // section offset of the FDE array
  std::uint32_t fde_size_ = 20;
  std::uint64_t fre_start_ = 0;   // section offset of the FRE sub-section
  std::uint64_t fre_length_ = 0;
};

}  // namespace tracecorn::unwind
