// Role: prologue analysis, the unwinder's last resort for a function that has
// no unwind table entry (no SFrame, CFI or EHABI row: Debian's mips and
// riscv64 glibc have many such functions): the architecture decodes the
// instructions from the function's start up to the pc and says what they did
// to the stack, as gdb's heuristic unwinders do (mips32_scan_prologue,
// riscv_scan_prologue), in a table-neutral form the unwinder turns into a row.
// Who calls it: the unwinder (recorder/unwind/unwinder.cpp) through
// ArchInfo::analyze_prologue, on its thread (the emulation thread when
// recording); the unit tests over assembled bytes.
// Invariants: `code` is untrusted guest memory of any length: an analyser
// reads only inside it, never fails, never allocates and never throws; it
// looks only at instructions that lie wholly in `code` and start before
// `limit` (the instructions that ran before the pc), and at most
// kMaxPrologueBytes of them. Registers are named by DWARF number. Offsets are
// computed in 64 bits from 16-bit (or smaller) immediates over at most
// kMaxPrologueBytes of code, so they cannot overflow.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace tracecorn::arch {

// The most code bytes an analyser looks at from a function's start (gdb's
// mips scan stops 200 bytes in; 64 four-byte instructions).
inline constexpr std::size_t kMaxPrologueBytes = 256;

// What the instructions between a function's start and the pc did: the
// canonical frame address (the stack pointer at the function's entry) is
// `cfa_register + cfa_offset`; each register in `saved` was stored at CFA +
// offset; a register not listed keeps its value; the return address is where
// `return_address_register` was saved, else still in that register.
struct PrologueFrame {
  static constexpr std::size_t kMaxSaved = 32;
  struct Saved {
    std::uint16_t reg = 0;    // DWARF number
    std::int64_t offset = 0;  // from the CFA
  };
  std::uint16_t cfa_register = 0;
  std::int64_t cfa_offset = 0;
  std::uint16_t return_address_register = 0;
  // gdb's Arm unwinders hand the caller's pc over as a value, not as a
  // register or slot, so gdb's "frame did not save the PC" rule never fires
  // for them: the unwinder then skips that rule for this frame.
  bool return_address_is_value = false;
  std::uint8_t saved_count = 0;
  Saved saved[kMaxSaved];

  // Records `reg` saved at CFA + offset unless it was saved already (the first
  // store of a register in a prologue is the one that keeps the caller's
  // value). Returns false when `saved` is full (the store is then ignored).
  bool save(std::uint16_t reg, std::int64_t offset) {
    for (std::uint8_t i = 0; i < saved_count; ++i)
      if (saved[i].reg == reg) return true;
    if (saved_count == kMaxSaved) return false;
    saved[saved_count++] = {reg, offset};
    return true;
  }
  // The offset from the CFA where `reg` was saved, or false.
  bool saved_at(std::uint16_t reg, std::int64_t& offset) const {
    for (std::uint8_t i = 0; i < saved_count; ++i)
      if (saved[i].reg == reg) {
        offset = saved[i].offset;
        return true;
      }
    return false;
  }
};

// Analyses the code of one function. `code` starts at the function's first
// instruction; `limit` is the offset in `code` of the pc the frame is at (the
// unwinder passes pc - 1 for a return address, the instruction after a call,
// so the call and its delay slot count); `mode` is the instruction set (arm: 1
// for Thumb; 0 elsewhere). Returns false when the bytes say nothing usable
// (not one instruction in `code`), true with `out` filled otherwise, also
// for a function that changed nothing (a leaf: CFA = sp, return address in
// its register).
using PrologueAnalyzer = bool (*)(std::span<const std::uint8_t> code, std::size_t limit, std::uint8_t mode,
                                  PrologueFrame& out) noexcept;

// The analysers (arch/<name>_prologue.cpp). MIPS o32 in either byte order
// (gdb's mips32_scan_prologue).
bool analyze_mips_prologue_big(std::span<const std::uint8_t> code, std::size_t limit, std::uint8_t mode,
                               PrologueFrame& out) noexcept;
bool analyze_mips_prologue_little(std::span<const std::uint8_t> code, std::size_t limit, std::uint8_t mode,
                                  PrologueFrame& out) noexcept;
// Thumb (gdb's thumb_analyze_prologue); mode 0 (ARM code) is not analysed.
bool analyze_arm_prologue(std::span<const std::uint8_t> code, std::size_t limit, std::uint8_t mode,
                          PrologueFrame& out) noexcept;
// RV64GC (gdb's riscv_scan_prologue).
bool analyze_riscv64_prologue(std::span<const std::uint8_t> code, std::size_t limit, std::uint8_t mode,
                              PrologueFrame& out) noexcept;

}  // namespace tracecorn::arch
