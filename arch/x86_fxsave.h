// Role: what the x86 signal frames share: the FXSAVE image of the x87/SSE state (Intel SDM vol. 1, table 10-2)
// that x86 signal frames carry (arch/x86_64_signal.cpp, arch/i386_signal.cpp):
// fcw, fsw, the abridged tag byte, mxcsr and its mask, st0-st7, then xmm0 up
// to xmm7 (i386) or xmm15 (x86-64). Internal to arch/; emulation thread.
#pragma once

#include <cstdint>
#include <span>

#include <unicorn/unicorn.h>

namespace tracecorn::arch {

inline constexpr std::size_t kFxsaveBytes = 512;
// The EFLAGS bits a signal handler may change through its frame (the
// kernel's FIX_EFLAGS: AC OF DF TF SF ZF AF PF CF RF).
inline constexpr std::uint64_t kFixEflags = 0x40000 | 0x800 | 0x400 | 0x100 | 0x80 | 0x40 | 0x10 | 0x4 | 0x1 | 0x10000;

// Writes the engine's x87/SSE state as an FXSAVE image into `out` (512 bytes).
void write_fxsave(uc_engine* engine, std::span<std::uint8_t> out, int xmm_registers);
// Loads an FXSAVE image (512 bytes of untrusted guest memory) into the engine.
void restore_fxsave(uc_engine* engine, std::span<const std::uint8_t> image, int xmm_registers);

}  // namespace tracecorn::arch
