// Role: the arm (EABI, VFP) signal frames (see arch/signal_frames.h), as
// Linux's arch/arm/kernel/signal.c lays them out. The handler gets an rt frame
// when it has SA_SIGINFO, else the old one (returning through sigreturn):
//
//   struct rt_sigframe: siginfo (128), then struct sigframe
//   struct sigframe (760 bytes, 8-byte aligned, the handler's sp)
//     +0    ucontext: uc_flags, uc_link, uc_stack (ss_sp, ss_flags, ss_size)
//     +20   sigcontext: trap_no, error_code, oldmask, r0..r10, fp, ip, sp, lr,
//           pc, cpsr, fault_address (21 words)
//     +104  uc_sigmask (8; glibc's 1024-bit set runs on to +232)
//     +232  uc_regspace: vfp_sigframe {magic 0x56465001, size 288, d0..d31,
//           fpscr, fpexc, fpinst, fpinst2}, then end_magic 0
//     +744  retcode[4]
//
// Checked against glibc's ucontext_t on armhf (uc_mcontext 20, arm_r0 32,
// arm_pc 92, arm_cpsr 96, uc_sigmask 104, uc_regspace 232, sizeof 744).
// Thumb: a handler whose address has bit 0 set runs in Thumb state (the pc
// write sets CPSR.T); the frame's pc is even and its cpsr says the mode.
#include <array>

#include "arch/signal_frames.h"

namespace tracecorn::arch {
namespace {

constexpr std::size_t kSigcontext = 20, kRegisters = kSigcontext + 12, kPc = kSigcontext + 72,
                      kCpsr = kSigcontext + 76, kSigmask = 104, kRegspace = 232, kFrameBytes = 760, kInfoBytes = 128;
constexpr std::uint32_t kVfpMagic = 0x56465001, kVfpBytes = 288;
constexpr std::uint64_t kSaSiginfo = 4;
constexpr std::uint32_t kThumbBit = 0x20, kFlagBits = 0xf8000000;  // CPSR.T; N Z C V Q

// r0..r15 in sigcontext order (arm_r0..arm_r10, fp, ip, sp, lr, pc).
constexpr int core_register(std::size_t index) {
  if (index <= 12) return UC_ARM_REG_R0 + static_cast<int>(index);
  if (index == 13) return UC_ARM_REG_SP;
  if (index == 14) return UC_ARM_REG_LR;
  return UC_ARM_REG_PC;
}

std::uint32_t read_register(uc_engine* engine, int id) {
  std::uint32_t value = 0;
  uc_reg_read(engine, id, &value);
  return value;
}

void write_register(uc_engine* engine, int id, std::uint32_t value) { uc_reg_write(engine, id, &value); }

// The ucontext (struct sigframe's first part) at `at`.
void put_ucontext(uc_engine* engine, FrameWriter& writer, std::size_t at, const SignalFrameRequest& request) {
  writer.put(at + 8, 4, request.saved_altstack.sp);
  writer.put(at + 12, 4, request.saved_altstack.flags);
  writer.put(at + 16, 4, request.saved_altstack.size);
  writer.put(at + kSigcontext, 4, request.guest_signal == 11 ? 14 : 0);  // trap_no
  writer.put(at + kSigcontext + 8, 4, request.saved_mask & 0xffffffff);  // oldmask
  for (std::size_t i = 0; i < 15; ++i) writer.put(at + kRegisters + 4 * i, 4, read_register(engine, core_register(i)));
  std::uint32_t cpsr = read_register(engine, UC_ARM_REG_CPSR);
  if (request.resume_pc & 1) cpsr |= kThumbBit;
  writer.put(at + kPc, 4, request.resume_pc & ~std::uint64_t{1});
  writer.put(at + kCpsr, 4, cpsr);
  writer.put(at + kSigcontext + 80, 4, request.fault_address);
  writer.put(at + kSigmask, 4, request.saved_mask & 0xffffffff);
  writer.put(at + kSigmask + 4, 4, request.saved_mask >> 32);
  writer.put(at + kRegspace, 4, kVfpMagic);
  writer.put(at + kRegspace + 4, 4, kVfpBytes);
  for (int i = 0; i < 32; ++i) {
    std::uint64_t value = 0;
    uc_reg_read(engine, UC_ARM_REG_D0 + i, &value);
    writer.put(at + kRegspace + 8 + 8 * static_cast<std::size_t>(i), 8, value);
  }
  writer.put(at + kRegspace + 264, 4, read_register(engine, UC_ARM_REG_FPSCR));
  writer.put(at + kRegspace + 272, 4, 0x40000000);  // fpexc: EN
}

}  // namespace

SignalFrame arm_build_signal_frame(uc_engine* engine, const SignalFrameRequest& request) {
  const bool rt = request.guest_flags & kSaSiginfo;
  const std::size_t bytes = kFrameBytes + (rt ? kInfoBytes : 0);
  const std::uint64_t frame = ((request.stack_top & 0xffffffff) - bytes) & ~std::uint64_t{7};
  SignalFrame result;
  result.address = frame;
  result.bytes.assign(bytes, 0);
  FrameWriter writer(result.bytes, true);
  if (rt) writer.put_bytes(0, request.siginfo);
  put_ucontext(engine, writer, rt ? kInfoBytes : 0, request);
  return result;
}

void arm_enter_signal_handler(uc_engine* engine, const SignalFrameRequest& request, const SignalFrame& frame) {
  const bool rt = request.guest_flags & kSaSiginfo;
  write_register(engine, UC_ARM_REG_R0, static_cast<std::uint32_t>(request.guest_signal));
  if (rt) {
    write_register(engine, UC_ARM_REG_R1, static_cast<std::uint32_t>(frame.address));
    write_register(engine, UC_ARM_REG_R2, static_cast<std::uint32_t>(frame.address + kInfoBytes));
  }
  write_register(engine, UC_ARM_REG_SP, static_cast<std::uint32_t>(frame.address));
  // Without SA_RESTORER, the trampoline page's sigreturn (+0) or rt_sigreturn (+8), as the sigpage's.
  write_register(engine, UC_ARM_REG_LR,
                 static_cast<std::uint32_t>(request.return_address + (request.return_to_trampoline && rt ? 8 : 0)));
  // The handler starts with the condition flags clear; the pc write (bit 0) picks ARM or Thumb.
  write_register(engine, UC_ARM_REG_CPSR, read_register(engine, UC_ARM_REG_CPSR) & ~kFlagBits);
}

std::optional<SignalReturn> arm_return_from_signal(uc_engine* engine, bool rt) {
  const std::uint64_t sp = read_register(engine, UC_ARM_REG_SP);
  if (sp % 8) return std::nullopt;  // Linux refuses a misaligned frame
  const std::uint64_t ucontext = sp + (rt ? kInfoBytes : 0);
  std::array<std::uint8_t, kRegspace + kVfpBytes> bytes{};
  if (uc_mem_read(engine, ucontext, bytes.data(), bytes.size()) != UC_ERR_OK) return std::nullopt;
  const FrameReader reader(bytes, true);
  for (std::size_t i = 0; i < 15; ++i)
    write_register(engine, core_register(i), static_cast<std::uint32_t>(reader.get(kRegisters + 4 * i, 4)));
  const auto cpsr = static_cast<std::uint32_t>(reader.get(kCpsr, 4));
  write_register(engine, UC_ARM_REG_CPSR,
                 (read_register(engine, UC_ARM_REG_CPSR) & ~kFlagBits) | (cpsr & kFlagBits));
  if (reader.get(kRegspace, 4) == kVfpMagic && reader.get(kRegspace + 4, 4) == kVfpBytes) {
    for (int i = 0; i < 32; ++i) {
      std::uint64_t value = reader.get(kRegspace + 8 + 8 * static_cast<std::size_t>(i), 8);
      uc_reg_write(engine, UC_ARM_REG_D0 + i, &value);
    }
    write_register(engine, UC_ARM_REG_FPSCR, static_cast<std::uint32_t>(reader.get(kRegspace + 264, 4)));
  }
  SignalReturn result;
  result.pc = reader.get(kPc, 4) | ((cpsr & kThumbBit) ? 1 : 0);  // bit 0: resume in Thumb state
  result.saved_mask = reader.get(kSigmask, 4) | reader.get(kSigmask + 4, 4) << 32;
  result.altstack = {reader.get(8, 4), static_cast<std::uint32_t>(reader.get(12, 4)), reader.get(16, 4)};
  result.has_altstack = true;
  return result;
}

std::span<const SavedRegisterSlot> arm_signal_saved_registers(bool rt) {
  // The handler returns to the trampoline with sp at the frame (an rt frame's
  // siginfo first); sigcontext's arm_r0..arm_pc are r0..r15.
  static constexpr auto slots_at = [](std::size_t ucontext) {
    std::array<SavedRegisterSlot, 16> slots{};
    for (std::size_t i = 0; i < slots.size(); ++i)
      slots[i] = {core_register(i), static_cast<std::int32_t>(ucontext + kRegisters + 4 * i)};
    return slots;
  };
  static_assert(kRegisters + 4 * 15 == kPc);
  static constexpr auto kRt = slots_at(kInfoBytes), kOld = slots_at(0);
  return rt ? std::span<const SavedRegisterSlot>(kRt) : std::span<const SavedRegisterSlot>(kOld);
}

}  // namespace tracecorn::arch
