// Role: the unwinder: given the registers of a guest thread stopped at a
// syscall (or a fault) and a way to read its memory, produce the call stack
// (the pc and then the return addresses, innermost first) from the unwind
// tables of the modules the guest mapped: SFrame, DWARF CFI (.eh_frame, then
// .debug_frame), Arm EHABI (.ARM.exidx), or frame pointers.
//
// Who calls it: the recorder core's stack provider (recorder/core/guest_stacks.h)
// at every syscall event, on the emulation thread; tests and benchmarks over a
// memory image. Not thread safe: one Unwinder per guest process, one thread.
//
// Conventions (also in docs/call-stacks.md):
// - Frame 0. For a syscall, frame 0 is the address the syscall returns to
//   (the instruction after the trap): what the kernel reports as the user pc,
//   and what gdb, perf and strace -k show as frame 0. Its row is looked up at
//   pc - 1 (inside the trap instruction), like any return address
//   (FirstFrame::kAfterTrap). For a fault, frame 0 is the faulting instruction,
//   looked up at the pc itself (FirstFrame::kExact).
// - Frame n > 0 is a return address, looked up at address - 1 (a call may be
//   the last instruction of its function), except right after a signal frame,
//   whose caller's pc is the interrupted instruction itself.
// - Signal frames, as gdb finds them: a return address whose code is one of
//   the architecture's signal trampolines (UnwinderConfig::signal_trampolines:
//   glibc's restorers, the kernel's vDSO code, tracecorn's trampoline page,
//   recognised by their instruction bytes, inside a module or not) is the
//   trampoline's frame (gdb's `<signal handler called>`); the next frame's
//   registers (pc, sp and every other one the frame saved) are read from the
//   kernel's frame at fixed offsets from the stack pointer the trampoline
//   runs on. The frame found that way, and any frame found through a CIE with
//   augmentation 'S', has FrameSource::kSignalFrame: the frame before it is
//   the trampoline's. The trampoline is checked before any table (only when a
//   row is computed: the answer is cached with it).
// - Each frame says which method found it (frame 0: kInitial).
// - Methods: kAuto uses SFrame where the module's .sframe covers the pc, else
//   CFI (.eh_frame, then .debug_frame, then on Arm .ARM.exidx: EHABI is
//   Arm's CFI, and what Debian's armhf toolchain and glibc carry), else the
//   frame-pointer convention; kSFrame, kCfi (with EHABI) and kFramePointer use
//   only that one method. Under kAuto, an architecture with a prologue
//   analyser (UnwinderConfig::analyze_prologue: mips, riscv64, arm) reads the
//   prologue of a function no table covers (on arm also one whose .ARM.exidx
//   entry is EXIDX_CANTUNWIND) instead of the frame-pointer convention, as
//   gdb does (the symbol's Thumb bit gives the arm instruction set): from the start of the ELF symbol covering the pc
//   up to the pc, at most arch::kMaxPrologueBytes of code read from guest
//   memory (FrameSource::kPrologue); no symbol or unreadable code ends the
//   stack (kNoUnwindInfo).
// - gdb's rule for frames whose return address stays in a register: when a
//   frame (other than frame 0) would take the return address from the same
//   register or stack slot as the frame below it did, the walk stops
//   (kNoSavedReturnAddress): a prologue that never saved ra is a leaf, and
//   only the innermost frame can be one.
// - Arm (UnwinderConfig::thumb_bit): return addresses of Thumb code carry bit
//   0; the walk clears it, so every frame is an instruction address (as gdb
//   prints them) and pc - 1 lies inside the call.
// - The walk stops at a return-address column marked undefined (glibc's
//   _start: the normal end), an EXIDX_CANTUNWIND entry, a zero return address, a pc outside every known
//   module, a pc no table of the method covers, a stack pointer that does not
//   increase, an unreadable stack slot, bad unwind data, or the depth limit.
//
// Invariants: no Unicorn; rows are cached per (pc, method) in a direct-mapped
// cache that is flushed whenever a module is added or removed, so the CFA
// program of a function is not re-run for every stack; unwind() never
// allocates on a cache hit and never throws.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "arch/prologue.h"
#include "recorder/support/expected.h"
#include "recorder/unwind/module_unwind_info.h"
#include "recorder/unwind/unwind_rules.h"

namespace tracecorn::unwind {

enum class UnwindMethod : std::uint8_t { kAuto, kSFrame, kCfi, kFramePointer };
// "auto", "sframe", "cfi", "fp"; nullopt for anything else.
std::optional<UnwindMethod> parse_unwind_method(std::string_view text);
std::string_view unwind_method_name(UnwindMethod method);

// kPrologue: found by prologue analysis (a heuristic, like gdb's, for code no
// table covers); the others by the tables of their name.
// kSignalFrame: read from a signal frame (the interrupted code's frame; the
// frame before it is the signal trampoline's).
enum class FrameSource : std::uint8_t { kInitial, kSFrame, kCfi, kFramePointer, kEhabi, kPrologue, kSignalFrame };
// "initial", "sframe", "cfi", "fp", "ehabi", "prologue", "signal"
std::string_view frame_source_name(FrameSource source);

enum class FirstFrame : std::uint8_t { kAfterTrap, kExact };

enum class StopReason : std::uint8_t {
  kEndOfStack,          // the return address column is undefined, or the return address is 0
  kOutsideModules,      // the pc lies in no known module
  kNoUnwindInfo,        // no table of the chosen method covers the pc
  kStackNotIncreasing,  // the caller's stack pointer is not above the callee's (equal once: a link-register leaf)
  kUnreadableMemory,    // a saved register could not be read
  kBadUnwindInfo,       // the table is malformed or names an unknown register (see last_error())
  kDepthLimit,
  kNoSavedReturnAddress,  // two frames in a row take the return address from the same register or slot (gdb's rule)
};
std::string_view stop_reason_name(StopReason reason);

struct StackFrame {
  std::uint64_t pc = 0;
  FrameSource source = FrameSource::kInitial;
};

struct UnwindResult {
  std::size_t depth = 0;  // frames written
  StopReason stop = StopReason::kEndOfStack;
};

// What the unwinder needs to know about an architecture, by DWARF number
// (recorder/core/guest_stacks.h derives it from arch/'s register table).
struct UnwinderConfig {
  unsigned pc_register = 16;
  unsigned sp_register = 7;
  unsigned fp_register = 6;
  unsigned address_size = 8;
  bool little_endian = true;
  bool thumb_bit = false;  // Arm: clear bit 0 of return addresses (Thumb state)
  // Reads the prologue of a function no table covers (arch/prologue.h); the
  // function's start comes from the module's ELF symbols. nullptr: no
  // prologue analysis (the frame-pointer convention is the last resort).
  arch::PrologueAnalyzer analyze_prologue = nullptr;
  std::size_t cache_entries = 4096;  // rounded up to a power of two
  // The signal trampolines (arch::ArchInfo::signal_abi.trampolines in this
  // config's columns): `code` is the instructions at the trampoline (static
  // data that outlives the unwinder); each saved register is one word at
  // `offset` from the stack pointer the trampoline runs on. Registers beyond
  // kMaxRegisters are left out; at most kMaxRowRules are kept.
  struct SavedSlot {
    std::uint16_t column;
    std::int32_t offset;
  };
  struct SignalTrampoline {
    std::span<const std::uint8_t> code;
    std::vector<SavedSlot> saved;
  };
  std::vector<SignalTrampoline> signal_trampolines;
};

class Unwinder {
 public:
  explicit Unwinder(UnwinderConfig config);
  ~Unwinder();
  Unwinder(const Unwinder&) = delete;
  Unwinder& operator=(const Unwinder&) = delete;

  // A file mapped at [start, end) with `load_bias` (runtime address - file
  // address). The file is read once per path and shared by its mappings.
  // Errors: the file cannot be read or is not ELF (the range is then known as
  // a module without tables, so stacks stop there cleanly).
  Status add_module(std::uint64_t start, std::uint64_t end, std::uint64_t load_bias, const std::string& host_path);
  void add_module(std::uint64_t start, std::uint64_t end, std::uint64_t load_bias,
                  std::shared_ptr<const ModuleUnwindInfo> info);
  // Forgets the modules lying wholly inside [start, start + length) (munmap).
  // A partial unmap keeps the module: ld.so maps a library's segments with
  // MAP_FIXED over the reservation it made for the whole image, which the
  // Linux layer reports as an unmap of each segment's range. Re-adding the
  // same file at the same start with a smaller end (the first segment, which
  // also starts with the ELF header) keeps the larger range.
  void remove_range(std::uint64_t start, std::uint64_t length);

  // Walks the stack from `registers`, writing at most out.size() frames.
  UnwindResult unwind(const RegisterSet& registers, MemoryReader& memory, UnwindMethod method, FirstFrame first,
                      std::span<StackFrame> out) noexcept;

  // The last kBadUnwindInfo error, for diagnostics ("" if none).
  const std::string& last_error() const { return last_error_; }

  struct Stats {
    std::uint64_t cache_hits = 0;
    std::uint64_t cache_misses = 0;
  };
  Stats stats() const { return stats_; }

 private:
  struct Mapping {
    std::uint64_t start, end, bias;
    std::shared_ptr<const ModuleUnwindInfo> info;
  };
  struct CacheEntry;
  enum class Lookup : std::uint8_t { kFound, kNone, kError };
  struct Walk;  // the state of one unwind() (unwinder.cpp)

  // One frame of the walk: its row, the caller's registers, the caller's pc
  // as the next frame. False when the walk ends (the result says why).
  bool step(Walk& walk) noexcept;
  // The row of the walk's pc (nullptr: the walk ends there).
  const UnwindRow* frame_row(Walk& walk, FrameSource& source) noexcept;

  const Mapping* find_mapping(std::uint64_t pc) const;
  // The row for `pc` by `method`: from the cache, else from the tables.
  // `return_address`: pc + 1 is a return address (a signal trampoline's
  // code there makes the row the signal frame's).
  Lookup row_for(const Mapping& mapping, std::uint64_t pc, UnwindMethod method, bool return_address,
                 MemoryReader& memory, const UnwindRow*& row, FrameSource& source) noexcept;
  Lookup compute_row(const Mapping& mapping, std::uint64_t pc, UnwindMethod method, bool return_address,
                     MemoryReader& memory, UnwindRow& row, FrameSource& source);
  // The row of `file_pc` from one kind of table: kNone when the module has
  // no such table or it does not cover the pc (ehabi_row: also an
  // EXIDX_CANTUNWIND entry that prologue analysis will take instead).
  Lookup sframe_row(const ModuleUnwindInfo& info, std::uint64_t file_pc, UnwindRow& row, FrameSource& source);
  Lookup cfi_row(const ModuleUnwindInfo& info, std::uint64_t file_pc, UnwindRow& row, FrameSource& source);
  Lookup ehabi_row(const ModuleUnwindInfo& info, std::uint64_t file_pc, UnwindMethod method, UnwindRow& row,
                   FrameSource& source);
  // Keeps a malformed table's error for last_error(): always kError.
  Lookup table_error(const Error& error);
  // The signal frame's row when the code at `pc` is a signal trampoline, else nullptr.
  const UnwindRow* trampoline_row(std::uint64_t pc, MemoryReader& memory) const noexcept;
  // The row prologue analysis gives for `pc` (kNone: no symbol, unreadable code).
  Lookup prologue_row(const Mapping& mapping, std::uint64_t pc, MemoryReader& memory, UnwindRow& row);
  void flush_cache();

  UnwinderConfig config_;
  std::vector<Mapping> mappings_;  // sorted by start, non-overlapping
  mutable std::size_t last_mapping_ = 0;  // the last one found (frames cluster in a module)
  std::unordered_map<std::string, std::shared_ptr<const ModuleUnwindInfo>> files_;
  std::unique_ptr<CacheEntry[]> cache_;
  std::size_t cache_mask_ = 0;
  UnwindRow frame_pointer_row_;
  std::vector<std::pair<std::span<const std::uint8_t>, UnwindRow>> trampoline_rows_;  // code, its signal frame's row
  std::string last_error_;
  Stats stats_;
};

}  // namespace tracecorn::unwind
