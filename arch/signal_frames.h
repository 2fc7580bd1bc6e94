// Role: the signal frame layouts of each architecture, behind the GuestCpu
// calls of arch/arch.h (build_signal_frame, enter_signal_handler,
// return_from_signal): one implementation file per layout
// (x86_64_signal.cpp, i386_signal.cpp, aarch64_signal.cpp, riscv64_signal.cpp,
// arm_signal.cpp, mips_signal.cpp). Internal to
// arch/: the GuestCpu classes call these with their engine.
// Threads: the emulation thread, inside Unicorn's hooks or between runs.
// Invariants: build_* reads registers only; restore_* reads the frame from
// guest memory as untrusted bytes and writes registers only when the whole
// frame could be read.
#pragma once

#include <cstdint>
#include <optional>
#include <span>

#include <unicorn/unicorn.h>

#include "arch/arch_info.h"
#include "arch/signal_frame.h"

namespace tracecorn::arch {

// A register's value as Unicorn reads it (zero-extended; 0 when Unicorn refuses).
inline std::uint64_t register_value(uc_engine* engine, int id) {
  std::uint64_t value = 0;
  uc_reg_read(engine, id, &value);
  return value;
}

// x86-64: struct rt_sigframe of arch/x86/include/asm/sigframe.h (pretcode,
// ucontext with the 64-bit sigcontext, siginfo) plus the FXSAVE image, as
// arch/x86/kernel/signal.c lays them out (red zone, 64-byte aligned FPU state).
SignalFrame x86_64_build_signal_frame(uc_engine* engine, const SignalFrameRequest& request);
void x86_64_enter_signal_handler(uc_engine* engine, const SignalFrameRequest& request, const SignalFrame& frame);
std::optional<SignalReturn> x86_64_return_from_signal(uc_engine* engine);

// aarch64: struct rt_sigframe of arch/arm64/kernel/signal.c (siginfo, then
// ucontext whose sigcontext holds the fpsimd_context and esr_context records
// and the terminator), with the frame record {fp, lr} above it.
SignalFrame aarch64_build_signal_frame(uc_engine* engine, const SignalFrameRequest& request);
void aarch64_enter_signal_handler(uc_engine* engine, const SignalFrameRequest& request, const SignalFrame& frame);
std::optional<SignalReturn> aarch64_return_from_signal(uc_engine* engine);

// riscv64: struct rt_sigframe of arch/riscv/kernel/signal.c (siginfo, then
// ucontext with sc_regs and the D extension's sc_fpregs).
SignalFrame riscv64_build_signal_frame(uc_engine* engine, const SignalFrameRequest& request);
void riscv64_enter_signal_handler(uc_engine* engine, const SignalFrameRequest& request, const SignalFrame& frame);
std::optional<SignalReturn> riscv64_return_from_signal(uc_engine* engine);

// i386: struct sigframe_ia32 (handlers without SA_SIGINFO, sigreturn) and
// struct rt_sigframe_ia32 of arch/x86/kernel/signal_32.c, with the FPU state
// (legacy header and FXSAVE image) above the frame.
SignalFrame i386_build_signal_frame(uc_engine* engine, const SignalFrameRequest& request);
void i386_enter_signal_handler(uc_engine* engine, const SignalFrameRequest& request, const SignalFrame& frame);
std::optional<SignalReturn> i386_return_from_signal(uc_engine* engine, bool rt);

// arm (EABI, VFP): struct sigframe (sigreturn) and struct rt_sigframe of
// arch/arm/kernel/signal.c, ARM and Thumb handlers.
SignalFrame arm_build_signal_frame(uc_engine* engine, const SignalFrameRequest& request);
void arm_enter_signal_handler(uc_engine* engine, const SignalFrameRequest& request, const SignalFrame& frame);
std::optional<SignalReturn> arm_return_from_signal(uc_engine* engine, bool rt);

// mips and mipsel (o32): struct sigframe (sf_ass, sf_pad, sigcontext, mask)
// for handlers without SA_SIGINFO, struct rt_sigframe (rs_ass, rs_pad,
// siginfo, ucontext with the sigcontext) for those with it, in the guest's
// byte order (`little_endian`); the handler returns through the trampoline
// page's sigreturn (+0) or rt_sigreturn (+8) pair.
SignalFrame mips_build_signal_frame(uc_engine* engine, bool little_endian, const SignalFrameRequest& request);
void mips_enter_signal_handler(uc_engine* engine, const SignalFrameRequest& request, const SignalFrame& frame);
std::optional<SignalReturn> mips_return_from_signal(uc_engine* engine, bool little_endian, bool rt);

// Where each architecture's signal frames keep the interrupted registers,
// relative to the stack pointer the handler returns with (what the return
// trampoline sees), from the same offsets the frame builders above use: the
// unwinder's view of a signal frame (ArchInfo::signal_abi.trampolines).
// `rt`: the frame of a handler with SA_SIGINFO (struct rt_sigframe), else the
// old one (i386, arm, mips only; the others have rt frames alone).
std::span<const SavedRegisterSlot> x86_64_signal_saved_registers();
std::span<const SavedRegisterSlot> aarch64_signal_saved_registers();
std::span<const SavedRegisterSlot> riscv64_signal_saved_registers();
std::span<const SavedRegisterSlot> i386_signal_saved_registers(bool rt);
std::span<const SavedRegisterSlot> arm_signal_saved_registers(bool rt);
std::span<const SavedRegisterSlot> mips_signal_saved_registers(bool little_endian, bool rt);

}  // namespace tracecorn::arch
