// Role: QEMU's ARM exception numbers (target/arm/cpu.h), which Unicorn 2.0.1's
// UC_HOOK_INTR reports for both arm and aarch64 guests, and the signal Linux
// sends a process for each (arch/arm/kernel/traps.c, arch/arm64/kernel/traps.c
// and fault.c agree: undefined instructions, hvc and smc from user mode SIGILL,
// breakpoints SIGTRAP, aborts SIGSEGV, alignment faults SIGBUS).
// Who calls it: arch/aarch64.cpp and arch/arm.cpp; pure, safe from any thread.
#pragma once

#include <csignal>
#include <cstdint>

namespace tracecorn::arch {

inline constexpr std::uint32_t kArmExcpUdef = 1, kArmExcpSwi = 2, kArmExcpPrefetchAbort = 3,
                               kArmExcpDataAbort = 4, kArmExcpBkpt = 7, kArmExcpUnaligned = 22;

// The signal for ARM exception `number` other than kArmExcpSwi (the syscall).
constexpr int arm_fault_signal(std::uint32_t number) {
  switch (number) {
    case kArmExcpBkpt: return SIGTRAP;
    case kArmExcpPrefetchAbort: case kArmExcpDataAbort: return SIGSEGV;
    case kArmExcpUnaligned: return SIGBUS;
    case kArmExcpUdef: default: return SIGILL;
  }
}

}  // namespace tracecorn::arch
