// Role: DWARF call frame information (CFI): parses the CIEs and FDEs of an
// .eh_frame or .debug_frame section, finds the FDE that covers a pc (through
// .eh_frame_hdr's sorted table when there is one, else through an index built
// by scanning the section, as static binaries need), and runs the CFA program
// to the row of a pc.
// Who calls it: the Unwinder (one CfiTable per section per module) and the
// tests that compare every row with `readelf --debug-dump=frames-interp`.
// Threads: not thread safe (the CIE cache and the lazily built index are
// mutable); one thread uses a table at a time.
// Invariants: the section bytes are untrusted: every field is bounds-checked,
// an FDE's CIE pointer must lead to a CIE inside the section (no loops are
// possible: a CIE is never followed further), the remember/restore stack is
// bounded, location advances are checked for overflow; every failure is an
// Error naming the section and the byte offset. Addresses are file (link-time)
// addresses: the caller subtracts the module's load bias.
//
// Entry layout (DWARF 5, 6.4.1; LSB 5.0 for .eh_frame):
//   +0  u32 length            (0xffffffff: a u64 length follows, 64-bit DWARF)
//   +4  u32 CIE id / pointer  (.eh_frame: 0 in a CIE, else the distance back to
//                              the CIE; .debug_frame: 0xffffffff in a CIE, else
//                              the CIE's section offset)
//   CIE: u8 version, augmentation string, [v4: u8 address size, u8 segment
//        size], uleb code alignment, sleb data alignment, return column (u8 in
//        v1, else uleb), ['z': uleb length, then per letter L: u8 encoding,
//        P: u8 encoding + pointer, R: u8 encoding, S: no data], instructions.
//   FDE: pc_begin (CIE's 'R' encoding), pc_range, ['z': uleb length, LSDA
//        pointer], instructions.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "recorder/support/expected.h"
#include "recorder/unwind/unwind_rules.h"

namespace tracecorn::unwind {

enum class CfiKind : std::uint8_t { kEhFrame, kDebugFrame };

struct CfiSection {
  CfiKind kind = CfiKind::kEhFrame;
  std::span<const std::uint8_t> bytes;
  std::uint64_t address = 0;  // the section's sh_addr (for pc-relative pointers)
  unsigned address_size = 8;
  bool little_endian = true;
  std::string source;         // "FILE(.eh_frame)" for errors
};

struct CieRecord {
  std::uint64_t offset = 0;  // of the entry in the section
  std::uint8_t version = 0;
  std::string augmentation;
  std::uint64_t code_alignment = 1;
  std::int64_t data_alignment = 1;
  std::uint64_t return_column = 0;
  std::uint8_t fde_encoding = 0;          // DW_EH_PE_absptr unless 'R'
  std::uint8_t lsda_encoding = 0xff;      // omit unless 'L'
  std::uint8_t personality_encoding = 0xff;
  std::uint64_t personality = 0;          // as encoded (an indirect pointer is not followed)
  bool has_augmentation_data = false;     // 'z'
  bool signal_frame = false;              // 'S'
  std::uint8_t address_size = 8;
  std::span<const std::uint8_t> instructions;
  std::uint64_t instructions_offset = 0;  // in the section
};

struct FdeRecord {
  std::uint64_t offset = 0;
  std::uint64_t cie_offset = 0;
  std::uint64_t pc_begin = 0;
  std::uint64_t pc_end = 0;  // exclusive
  std::optional<std::uint64_t> lsda;
  std::span<const std::uint8_t> instructions;
  std::uint64_t instructions_offset = 0;
};

class CfiTable {
 public:
  // Checks the section's shape cheaply (nothing is parsed until asked).
  // `header` is the .eh_frame_hdr section (bytes and address), if any; a header
  // whose table cannot be used (unknown encodings, wrong version) is ignored
  // and the section is indexed by scanning instead.
  static Expected<CfiTable> create(CfiSection section, std::span<const std::uint8_t> header = {},
                                   std::uint64_t header_address = 0);

  const CfiSection& section() const { return section_; }
  bool uses_header_index() const { return header_table_count_ > 0; }

  // Calls `visit` with every CIE (fde == nullptr) and FDE (cie == nullptr) in
  // section order, each FDE with its parsed CIE. Stops at the terminator or at
  // the end; returns the first parse error.
  Status for_each(const std::function<void(const CieRecord* cie, const FdeRecord* fde)>& visit) const;

  // The FDE whose range holds `pc`; nullopt when none does. Errors: a malformed
  // entry or header table on the search path.
  Expected<std::optional<FdeRecord>> find_fde(std::uint64_t pc) const;

  Expected<CieRecord> cie_at(std::uint64_t offset) const;
  Expected<FdeRecord> fde_at(std::uint64_t offset) const;

  // The row that holds at `pc` (pc_begin <= pc < pc_end). Errors: malformed
  // instructions, a register rule table too large, unbalanced restore_state.
  Expected<UnwindRow> row_at(const FdeRecord& fde, std::uint64_t pc) const;

  // Every row of `fde` in address order (one per distinct location), for
  // comparison with readelf's frames-interp table.
  Status rows(const FdeRecord& fde, const std::function<void(const UnwindRow&)>& visit) const;

 private:
  struct IndexEntry {
    std::uint64_t pc_begin;
    std::uint64_t pc_end;
    std::uint64_t fde_offset;
  };
  enum class EntryType : std::uint8_t { kCie, kFde, kTerminator };
  struct RawEntry {
    EntryType type = EntryType::kTerminator;
    std::uint64_t offset = 0;
    std::uint64_t end = 0;          // offset of the next entry
    std::uint64_t body = 0;         // offset after the id/pointer field
    std::uint64_t cie_pointer = 0;  // FDE: the CIE's offset
  };

  explicit CfiTable(CfiSection section) : section_(std::move(section)) {}
  Expected<RawEntry> raw_entry(std::uint64_t offset) const;
  Expected<CieRecord> parse_cie(const RawEntry& entry) const;
  Expected<FdeRecord> parse_fde(const RawEntry& entry, const CieRecord& cie) const;
  Expected<const CieRecord*> cached_cie(std::uint64_t offset) const;
  Status build_index() const;
  Expected<std::optional<FdeRecord>> find_in_header(std::uint64_t pc) const;
  Status execute(const FdeRecord& fde, std::uint64_t target_pc, bool all_rows,
                 const std::function<void(const UnwindRow&)>& visit) const;
  Error error(std::string message, std::uint64_t offset, ErrorCode code = ErrorCode::kBadFormat) const;

  CfiSection section_;
  // .eh_frame_hdr's binary search table (datarel|sdata4 pairs), when usable.
  std::span<const std::uint8_t> header_table_;
  std::uint64_t header_address_ = 0;
  std::uint64_t header_table_count_ = 0;
  // Built on first use when there is no usable header.
  mutable bool index_built_ = false;
  mutable std::vector<IndexEntry> index_;
  mutable std::unordered_map<std::uint64_t, CieRecord> cies_;
};

}  // namespace tracecorn::unwind
