// Role: the mips/mipsel o32 signal frames (see arch/signal_frames.h), as
// arch/mips/kernel/signal.c lays them out, in the guest's byte order. Two
// layouts: struct sigframe for handlers without SA_SIGINFO (8 on mips) and
// struct rt_sigframe for those with it. From the frame's start (the handler's
// sp, 8-byte aligned):
//
//   struct sigframe (632)               struct rt_sigframe (784)
//   +0    sf_ass[4]        16           +0    rs_ass[4]          16
//   +16   sf_pad[2]         8           +16   rs_pad[2]           8
//   +24   sf_sc (sigcontext) 592        +24   rs_info (siginfo)  128
//   +616  sf_mask (sigset)  16          +152  rs_uc (struct ucontext)
//                                               +0   uc_flags     4
//                                               +4   uc_link      4
//                                               +8   uc_stack    12   ss_sp, ss_size, ss_flags
//                                               +24  uc_mcontext 592  (sigcontext)
//                                               +616 uc_sigmask   16
//
//   struct sigcontext (592; every 64-bit slot holds the 32-bit value
//   zero-extended, so big endian puts it in the slot's second word):
//     +0 sc_regmask 4 | +4 sc_status 4 | +8 sc_pc 8 | +16 sc_regs[32] 256
//     +272 sc_fpregs[32] 256 | +528 sc_acx 4 | +532 sc_fpc_csr 4
//     +536 sc_fpc_eir 4 | +540 sc_used_math 4 | +544 sc_dsp 4 | +548 pad 4
//     +552 sc_mdhi 8 | +560 sc_mdlo 8 | +568 sc_hi1, sc_lo1, sc_hi2, sc_lo2, sc_hi3, sc_lo3 (4 each)
//
// Checked against gcc-mips(el)-linux-gnu's <asm/ucontext.h>, <bits/sigcontext.h>
// and <sys/ucontext.h> (offsetof programs run under qemu-mips(el)-static:
// sigcontext 592, sc_pc 8, sc_regs 16, sc_fpregs 272, sc_fpc_csr 532,
// sc_used_math 540, sc_mdhi 552, sc_mdlo 560; uc_stack 8, uc_mcontext 24,
// uc_sigmask 616; stack_t 12 with ss_size at 4).
// The frame goes 32 bytes below the interrupted sp (the kernel's room for the
// FPU emulator's trampoline), or right below the alternate stack's top, then
// down to 8 bytes (ALMASK); no MSA, so no extended context follows.
// Handler entry: a0 = signal, a1 = &rs_info (rt) or 0, a2 = &rs_uc (rt) or
// &sf_sc, sp = the frame, ra = the return trampoline, t9 = pc = the handler.
// mips has no SA_RESTORER: Linux returns through its signal page / vDSO
// (`li v0, 4119; syscall` for sigreturn, `li v0, 4193; syscall` for
// rt_sigreturn); tracecorn maps its own copy (ArchInfo::signal_abi.
// sigreturn_trampoline, the sigreturn pair at +0 and the rt one at +8), and
// the handler's ra points at the pair that matches the frame.
// Unicorn 2.0.1 ignores reads and writes of the MIPS FPU registers (see
// arch/mips.cpp), so sc_fpregs and sc_fpc_csr are written as zeros and not
// restored; sc_used_math is 1 as qemu-user writes it.
#include <array>

#include <unicorn/mips.h>

#include "arch/signal_frames.h"

namespace tracecorn::arch {
namespace {

constexpr std::size_t kSigcontextBytes = 592;
constexpr std::size_t kScPc = 8, kScRegs = 16, kScUsedMath = 540, kScMdhi = 552, kScMdlo = 560;
// struct sigframe
constexpr std::size_t kSfSc = 24, kSfMask = kSfSc + kSigcontextBytes, kSigframeBytes = kSfMask + 16;
// struct rt_sigframe
constexpr std::size_t kRsInfo = 24, kRsUc = kRsInfo + kSiginfoBytes;
constexpr std::size_t kUcStack = kRsUc + 8, kUcMcontext = kRsUc + 24, kUcSigmask = kUcMcontext + kSigcontextBytes;
constexpr std::size_t kRtSigframeBytes = kUcSigmask + 16;
static_assert(kSigframeBytes == 632 && kRtSigframeBytes == 784);

constexpr std::uint64_t kSaSiginfo = 8;       // mips' SA_SIGINFO
constexpr std::uint64_t kRtTrampolineOffset = 8;  // the rt_sigreturn pair in the trampoline page
constexpr std::uint64_t kStackGap = 32;       // get_sigframe: sp -= 32 (the FPU emulator's room)

std::uint64_t read_register(uc_engine* engine, int id) {
  std::uint64_t value = 0;
  uc_reg_read(engine, id, &value);
  return value & 0xffffffffu;
}

void write_register(uc_engine* engine, int id, std::uint64_t value) {
  value &= 0xffffffffu;
  uc_reg_write(engine, id, &value);
}

bool is_rt(const SignalFrameRequest& request) { return (request.guest_flags & kSaSiginfo) != 0; }

// setup_sigcontext: sc_regs[0] = 0, then r1-r31, the pc, hi/lo.
void put_sigcontext(FrameWriter& writer, std::size_t at, uc_engine* engine, std::uint64_t pc) {
  writer.put(at + kScPc, 8, pc & 0xffffffffu);
  for (int i = 1; i < 32; ++i)
    writer.put(at + kScRegs + 8 * static_cast<std::size_t>(i), 8, read_register(engine, UC_MIPS_REG_0 + i));
  writer.put(at + kScUsedMath, 4, 1);
  writer.put(at + kScMdhi, 8, read_register(engine, UC_MIPS_REG_HI));
  writer.put(at + kScMdlo, 8, read_register(engine, UC_MIPS_REG_LO));
}

// restore_sigcontext: r1-r31 and hi/lo; returns the pc.
std::uint64_t restore_sigcontext(const FrameReader& reader, std::size_t at, uc_engine* engine) {
  for (int i = 1; i < 32; ++i)
    write_register(engine, UC_MIPS_REG_0 + i, reader.get(at + kScRegs + 8 * static_cast<std::size_t>(i), 8));
  write_register(engine, UC_MIPS_REG_HI, reader.get(at + kScMdhi, 8));
  write_register(engine, UC_MIPS_REG_LO, reader.get(at + kScMdlo, 8));
  return reader.get(at + kScPc, 8) & 0xffffffffu;
}

void put_sigset(FrameWriter& writer, std::size_t at, std::uint64_t set) {
  writer.put(at, 4, set & 0xffffffffu);
  writer.put(at + 4, 4, set >> 32);
}

std::uint64_t get_sigset(const FrameReader& reader, std::size_t at) {
  return reader.get(at, 4) | reader.get(at + 4, 4) << 32;
}

}  // namespace

SignalFrame mips_build_signal_frame(uc_engine* engine, bool little_endian, const SignalFrameRequest& request) {
  const bool rt = is_rt(request);
  const std::size_t size = rt ? kRtSigframeBytes : kSigframeBytes;
  const std::uint64_t top = request.on_alternate_stack ? request.stack_top : request.stack_top - kStackGap;
  SignalFrame result;
  result.address = (top - size) & ~std::uint64_t{7} & 0xffffffffu;
  result.bytes.assign(size, 0);
  FrameWriter writer(result.bytes, little_endian);
  if (rt) {
    writer.put_bytes(kRsInfo, request.siginfo);
    writer.put(kUcStack, 4, request.saved_altstack.sp);
    writer.put(kUcStack + 4, 4, request.saved_altstack.size);
    writer.put(kUcStack + 8, 4, request.saved_altstack.flags);
    put_sigcontext(writer, kUcMcontext, engine, request.resume_pc);
    put_sigset(writer, kUcSigmask, request.saved_mask);
  } else {
    put_sigcontext(writer, kSfSc, engine, request.resume_pc);
    put_sigset(writer, kSfMask, request.saved_mask);
  }
  return result;
}

void mips_enter_signal_handler(uc_engine* engine, const SignalFrameRequest& request, const SignalFrame& frame) {
  const bool rt = is_rt(request);
  write_register(engine, UC_MIPS_REG_A0, static_cast<std::uint64_t>(request.guest_signal));
  write_register(engine, UC_MIPS_REG_A1, rt ? frame.address + kRsInfo : 0);
  write_register(engine, UC_MIPS_REG_A2, frame.address + (rt ? kRsUc : kSfSc));
  write_register(engine, UC_MIPS_REG_SP, frame.address);
  write_register(engine, UC_MIPS_REG_RA, request.return_address + (rt ? kRtTrampolineOffset : 0));
  write_register(engine, UC_MIPS_REG_T9, request.handler);
}

std::optional<SignalReturn> mips_return_from_signal(uc_engine* engine, bool little_endian, bool rt) {
  const std::uint64_t frame = read_register(engine, UC_MIPS_REG_SP);
  std::array<std::uint8_t, kRtSigframeBytes> bytes{};
  const std::size_t size = rt ? kRtSigframeBytes : kSigframeBytes;
  if (uc_mem_read(engine, frame, bytes.data(), size) != UC_ERR_OK) return std::nullopt;
  const FrameReader reader(std::span<const std::uint8_t>(bytes.data(), size), little_endian);
  SignalReturn result;
  if (rt) {
    result.pc = restore_sigcontext(reader, kUcMcontext, engine);
    result.saved_mask = get_sigset(reader, kUcSigmask);
    result.altstack = {reader.get(kUcStack, 4), static_cast<std::uint32_t>(reader.get(kUcStack + 8, 4)),
                       reader.get(kUcStack + 4, 4)};
    result.has_altstack = true;
  } else {
    result.pc = restore_sigcontext(reader, kSfSc, engine);
    result.saved_mask = get_sigset(reader, kSfMask);
  }
  return result;
}

std::span<const SavedRegisterSlot> mips_signal_saved_registers(bool little_endian, bool rt) {
  // The handler returns to the trampoline with sp at the frame. Each 64-bit
  // slot holds the 32-bit value: big endian keeps it in the slot's second word.
  static constexpr auto slots_at = [](std::size_t sigcontext, std::size_t low_word) {
    std::array<SavedRegisterSlot, 32> slots{};
    slots[0] = {UC_MIPS_REG_PC, static_cast<std::int32_t>(sigcontext + kScPc + low_word)};
    for (std::size_t i = 1; i < 32; ++i)
      slots[i] = {UC_MIPS_REG_0 + static_cast<int>(i),
                  static_cast<std::int32_t>(sigcontext + kScRegs + 8 * i + low_word)};
    return slots;
  };
  static constexpr auto kRtLittle = slots_at(kUcMcontext, 0), kOldLittle = slots_at(kSfSc, 0),
                        kRtBig = slots_at(kUcMcontext, 4), kOldBig = slots_at(kSfSc, 4);
  using Slots = std::span<const SavedRegisterSlot>;
  if (little_endian) return rt ? Slots(kRtLittle) : Slots(kOldLittle);
  return rt ? Slots(kRtBig) : Slots(kOldBig);
}

}  // namespace tracecorn::arch
