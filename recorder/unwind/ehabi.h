// Role: the Arm EHABI unwind tables (.ARM.exidx and .ARM.extab; "Exception
// Handling ABI for the Arm Architecture", IHI 0038, section 6 and 10), which
// are all Debian's gcc-arm-linux-gnueabihf and its glibc carry for unwinding
// (no .eh_frame). Finds the index entry of a pc by binary search, extracts
// the unwind instruction bytes of the compact model (personality routines
// __aeabi_unwind_cpp_pr0/pr1/pr2) and of the generic model (GCC's personality
// routines, whose data uses pr1's layout, as readelf assumes too), decodes
// them, and turns them into an UnwindRow (CFA = the final virtual stack
// pointer, each popped core register saved at CFA + offset) the Unwinder's
// stepping loop applies like a DWARF row.
// Who calls it: ModuleUnwindInfo (one table per module that has .ARM.exidx),
// the Unwinder (arm modules without CFI for the pc), the tests that compare
// every entry with `readelf -u`, and ehabi_fuzzer.
// Threads: immutable after create(); any thread may read it.
// Invariants: the bytes are untrusted: every word is read bounds-checked, an
// extab reference must land inside .ARM.extab, a compact entry's additional
// word count is bounded by the section; every failure is an Error naming the
// section and the byte offset inside it. Addresses are file (link-time)
// addresses; function addresses are as the table gives them (Thumb functions
// without bit 0).
//
// Layout (words in the file's byte order; op bytes are taken from each word
// most significant byte first):
//   .ARM.exidx, 8 bytes an entry, sorted by function address:
//     +0 u32 prel31 to the function start (bit 31 clear)
//     +4 u32 0x00000001          EXIDX_CANTUNWIND
//            1 0000 iiii | op op op   inline compact entry (pr0: iiii = 0)
//            0 prel31              to the entry in .ARM.extab
//   .ARM.extab entry:
//     compact:  1 000 iiii | ...   iiii = 0: 3 op bytes in the same word
//                                  iiii = 1, 2: byte 2 = N more words, 2 op bytes, then N words
//     generic:  0 prel31 to the personality routine, then one word:
//               N more words (byte 3), 3 op bytes, then N words
// Op bytes (IHI 0038 10.3): 00xxxxxx vsp += 4x+4; 01xxxxxx vsp -= 4x+4;
// 1000iiii iiiiiiii pop {r4-r15 under the mask}, 0x80 0x00 refuse to unwind;
// 1001nnnn vsp = r[n] (n != 13, 15); 10100nnn pop r4-r[4+n]; 10101nnn the same
// and r14; 0xb0 finish; 0xb1 0000iiii pop {r0-r3 under the mask}; 0xb2 uleb128
// vsp += 0x204 + 4*uleb; 0xb3 sssscccc pop d[s]-d[s+c] (FSTMFDX: 8*(c+1)+4
// bytes); 10111nnn pop d8-d[8+n] (FSTMFDX); 11000nnn pop wR10-wR[10+n];
// 0xc6 sssscccc pop wR[s]-wR[s+c]; 0xc7 0000iiii pop wCGR under the mask;
// 0xc8/0xc9 sssscccc pop d[16+s]/d[s]-...+c (VPUSH: 8*(c+1)); 11010nnn pop
// d8-d[8+n] (VPUSH); the rest is spare. Without a pop of r15, the return
// address is r14 (the "finish" rule).
// Limit (of EHABI itself): a table describes the function's body, the state at
// its call sites, not its prologue and epilogue, so a row is right for return
// addresses and for a syscall made from the body (a wrapper's `svc`), not
// for a fault or signal in the middle of a prologue.
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

inline constexpr std::uint32_t kExidxCantUnwind = 1;

enum class EhabiEntryKind : std::uint8_t { kCantUnwind, kInline, kExtab };

// One .ARM.exidx entry.
struct EhabiEntry {
  std::uint32_t index = 0;
  std::uint64_t function = 0;  // file address of the function
  std::uint64_t end = 0;       // the next entry's function (exclusive); ~0 for the last entry
  EhabiEntryKind kind = EhabiEntryKind::kCantUnwind;
  std::uint32_t word = 0;           // the second word as stored
  std::uint64_t extab_address = 0;  // kExtab: the address of its .ARM.extab entry
};

// The unwind instructions of one entry.
struct EhabiCode {
  bool cant_unwind = false;  // EXIDX_CANTUNWIND: no bytes
  bool compact = true;       // compact model (personality_index) or generic (personality)
  std::uint8_t personality_index = 0;
  std::uint64_t personality = 0;     // generic model: the routine's file address
  std::uint16_t size = 0;            // op bytes in `ops` (at most 3 + 255 * 4)
  std::array<std::uint8_t, 1024> ops{};
  std::uint64_t offset = 0;          // section offset of the word holding the first op byte
  bool in_extab = false;             // which section `offset` is in
};

// One decoded instruction.
struct EhabiInstruction {
  std::uint16_t offset = 0;  // of its first byte in EhabiCode::ops
  std::uint8_t length = 1;   // bytes (1, 2, or 1 + the uleb128 of 0xb2)
  std::string text;          // as `readelf -u` prints it ("pop {r4, r14}", "vsp = vsp + 12", "finish")
};

class EhabiTable {
 public:
  // Checks that .ARM.exidx is a whole number of 8-byte entries. `extab` may be
  // empty (no .ARM.extab: an entry referring to it is then an error).
  // Errors: a section whose size is not a multiple of 8.
  static Expected<EhabiTable> create(std::span<const std::uint8_t> exidx, std::uint64_t exidx_address,
                                     std::span<const std::uint8_t> extab, std::uint64_t extab_address,
                                     bool little_endian, std::string source);

  std::uint32_t entry_count() const { return entry_count_; }
  // The entry at `index` (< entry_count()). Errors: bit 31 set in the
  // function word, an inline entry naming a personality other than pr0.
  Expected<EhabiEntry> entry(std::uint32_t index) const;
  // The entry whose range [function, end) holds `pc`; nullopt when the pc lies
  // before the first entry.
  Expected<std::optional<EhabiEntry>> find_entry(std::uint64_t pc) const;
  // The unwind instruction bytes of `entry`. Errors: an extab reference
  // outside .ARM.extab, a personality index above 2, a word count past the end.
  Expected<EhabiCode> code(const EhabiEntry& entry) const;
  // Decodes `code`'s instructions in order, up to and including the first
  // "finish" (0xb0) or the end of the bytes (readelf prints every byte; this
  // stops where the unwinder stops). Errors: an instruction cut by the end of
  // the bytes, a uleb128 over 5 bytes.
  Status for_each_instruction(const EhabiCode& code,
                              const std::function<void(const EhabiInstruction&)>& visit) const;
  // The row `code` describes for the function [entry.function, entry.end):
  // CFA = the virtual stack pointer after every instruction (a register plus
  // an offset), each popped core register r0..r15 saved at CFA + offset
  // (DWARF numbers 0..15), the return address in r15 when popped, else in
  // r14 (kept in the link register when not popped). EXIDX_CANTUNWIND and
  // "refuse to unwind" give a row whose return address is undefined (the end
  // of the stack). A pop of r13 (sigreturn trampolines) restores the stack
  // pointer from its slot and marks the row a signal frame when r15 is
  // popped too. Errors: spare or reserved instructions (kBadFormat);
  // `vsp = r[n]` after a pop, or with an r[n] popped before, or any
  // instruction moving vsp after a pop of r13 (kUnsupported: no CFA rule of
  // the form register + offset describes them).
  Expected<UnwindRow> row_for(const EhabiEntry& entry, const EhabiCode& code) const;

 private:
  EhabiTable() = default;
  Error error(std::string message, std::uint64_t offset, bool in_extab, ErrorCode code = ErrorCode::kBadFormat) const;
  Expected<std::uint64_t> function_at(std::uint32_t index) const;

  std::span<const std::uint8_t> exidx_;
  std::span<const std::uint8_t> extab_;
  std::uint64_t exidx_address_ = 0;
  std::uint64_t extab_address_ = 0;
  bool little_endian_ = true;
  std::uint32_t entry_count_ = 0;
  std::string source_;
};

}  // namespace tracecorn::unwind
