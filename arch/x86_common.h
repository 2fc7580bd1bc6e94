// Role: the x86 knowledge shared by the 64-bit (x86_64.cpp) and 32-bit
// (i386.cpp) guests: the CPUID the guest sees (Unicorn 2.0.1's, with the fixes
// of docs/architectures.md, "Unicorn 2.0.1"), the CPU state Linux gives a process
// (CR4, FPCW, MXCSR), the fault signals of x86 exceptions, finding the
// faulting instruction of a block, and the Capstone-based helpers the recorder
// uses (register access lists, memory access counts, address registers).
// Who calls it: arch/x86_64.cpp and arch/i386.cpp only. X86GuestCpuBase runs on
// the emulation thread inside Unicorn's hooks; the free functions are pure and
// safe from any thread (the register maps are built once, thread-safely, as
// function-local statics by their callers).
// Invariant: nothing here names a 64-bit-only or 32-bit-only register except
// through the register table and names a caller passes in.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "arch/arch.h"

namespace tracecorn::arch {

// Answers CPUID as the guest sees it: Unicorn's real CPUID instruction, run on
// a private engine, then leaf 1 EDX gains FPU|TSC|MMX (missing in 2.0.1,
// upstream #1787) and what 2.0.1 cannot execute is hidden (XSAVE/OSXSAVE ->
// xgetbv is rejected; AVX computes wrong results, #1074/#917; POPCNT, MOVBE,
// RDRAND, PCLMULQDQ, SHA, RDSEED are rejected by the translator). Used by the
// guest CPUs' CPUID hook and by the binary trace's static registers. Not thread
// safe: one instance per user.
class CpuidProbe {
 public:
  CpuidProbe() = default;
  ~CpuidProbe();
  CpuidProbe(const CpuidProbe&) = delete;
  CpuidProbe& operator=(const CpuidProbe&) = delete;

  // Opens the private engine; fails (kEmulator) when Unicorn refuses.
  Status init();
  // eax, ebx, ecx, edx of CPUID(leaf, subleaf) with the fixes above (zeros if
  // the probe fails).
  std::array<std::uint32_t, 4> query(std::uint32_t leaf, std::uint32_t subleaf) noexcept;

 private:
  static constexpr std::uint64_t kProbeCode = 0x1000;
  uc_engine* probe_ = nullptr;
};

// The GuestCpu part every x86 guest shares: CR4 = 0x600 (OSFXSR|OSXMMEXCPT,
// else fxsave/fxrstor skip the XMM registers), FPCW = 0x37f and MXCSR = 0x1f80
// as Linux starts a process, the CPUID hook answering from CpuidProbe, AT_HWCAP
// = CPUID leaf 1 EDX (what Linux gives on x86), Linux's signals for CPU
// exceptions, and finding the faulting instruction of a block. Each x86 guest
// derives from it and adds its kernel entry and thread pointer.
class X86GuestCpuBase : public GuestCpu {
 public:
  ~X86GuestCpuBase() override;
  X86GuestCpuBase(const X86GuestCpuBase&) = delete;
  X86GuestCpuBase& operator=(const X86GuestCpuBase&) = delete;

  std::uint64_t hwcap() const override { return hwcap_; }
  // Linux's x86 trap handlers (arch/x86/kernel/traps.c).
  int signal_for_interrupt(std::uint32_t interrupt_number) const override;
  // Decodes the block from `reported_pc` and returns the first instruction whose
  // memory operand (explicit, or the implicit stack and string accesses) covers
  // `fault_address`, evaluated with the current registers: TCG writes guest
  // registers back before every guest memory access, so they hold the values the
  // faulting instruction saw. A fetch fault reports the fetched address itself.
  std::uint64_t locate_faulting_instruction(std::uint64_t reported_pc, std::uint64_t fault_address) const override;

 protected:
  // `registers`: the architecture's table (full registers of `word_bytes` bytes
  // are found by Capstone's names); `mode`: Capstone's mode for it.
  X86GuestCpuBase(uc_engine* engine, cs_mode mode, std::span<const RegisterInfo> registers, unsigned word_bytes)
      : engine_(engine), mode_(mode), registers_(registers), word_bytes_(word_bytes) {}
  // Sets the CPU state and the CPUID hook; fails (kEmulator) when Unicorn or
  // Capstone refuses.
  Status init_x86();
  // The base address segment `capstone_segment` (X86_REG_FS, X86_REG_GS) adds,
  // 0 for the others.
  virtual std::uint64_t segment_base(unsigned capstone_segment) const = 0;

  uc_engine* engine_;

 private:
  std::optional<std::uint64_t> register_value(unsigned capstone_register) const;
  bool touches(const cs_insn& insn, std::uint64_t fault_address) const;
  static int on_cpuid(uc_engine* engine, void* user) noexcept;

  cs_mode mode_;
  std::span<const RegisterInfo> registers_;
  unsigned word_bytes_;
  CpuidProbe probe_;
  csh capstone_ = 0;
  uc_hook cpuid_hook_ = 0;
  std::uint64_t hwcap_ = 0;
};

// A Capstone register name and the table register that contains it ("eax" in "rax").
struct X86SubRegister {
  std::string_view name;
  std::string_view full;
};

// Capstone x86 register id -> index in a register table (or -1), built once
// from Capstone's names: sub-registers through `sub_registers`, ymm/zmm to
// xmm, r8d/r8w/r8b to r8.
class X86CapstoneRegisterMap {
 public:
  X86CapstoneRegisterMap(cs_mode mode, std::span<const RegisterInfo> registers,
                         std::span<const X86SubRegister> sub_registers);
  int operator()(unsigned capstone_register) const {
    return capstone_register < X86_REG_ENDING ? index_[capstone_register] : -1;
  }

 private:
  std::array<int, X86_REG_ENDING> index_{};
};

// The names of the table registers the helpers below add by name.
struct X86RegisterNames {
  std::string_view flags;        // "rflags", "eflags"
  std::string_view accumulator;  // "rax", "eax"
};

// ArchEngine::add_unlisted_writes for x86 (flags from the eflags detail, the x87
// stack, cmpxchg's accumulator, fxrstor/xrstor/ldmxcsr's loads); registers the
// table lacks (xmm8-15 on i386) are skipped.
void x86_add_unlisted_writes(std::span<const RegisterInfo> registers, const X86RegisterNames& names,
                             const cs_insn& insn, std::vector<std::uint16_t>& written);
// ArchEngine::count_memory_accesses for x86, either mode.
bool x86_count_memory_accesses(const cs_insn& insn, std::uint8_t& reads, std::uint8_t& writes);
// ArchEngine::address_registers for x86, through the architecture's map.
void x86_address_registers(const X86CapstoneRegisterMap& map, const cs_insn& insn, std::vector<std::uint16_t>& base,
                           std::vector<std::uint16_t>& index);

// ArchInfo::reads_host_clock for x86, either mode: rdtsc (0f 31), rdtscp (0f 01 f9).
bool x86_reads_host_clock(std::span<const std::uint8_t> bytes);

// ArchEngine::describe_derived_writes for x86, either mode (arch/x86_derived_registers.cpp).
bool x86_describe_derived_writes(const ArchInfo& arch, const cs_insn& insn, DerivedWrites& out);

}  // namespace tracecorn::arch
