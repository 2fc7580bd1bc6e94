// Role: the riscv64 signal frame (see arch/signal_frames.h). Layout, from the
// frame's start (the handler's sp, 16-byte aligned):
//
//   +0     siginfo                    128
//   +128   struct ucontext
//            +0    uc_flags             8
//            +8    uc_link              8
//            +16   uc_stack            24   ss_sp, ss_flags (+4 pad), ss_size
//            +40   uc_sigmask           8   (+120 unused: glibc's 1024-bit set)
//            +176  sigcontext: sc_regs 256  pc, x1..x31
//            +432  sc_fpregs           528  the D extension's f0..f31, fcsr
//                                           (the union's Q size; the rest zero)
//
// Checked against <asm/sigcontext.h>, <asm/ptrace.h> and glibc's ucontext_t
// (uc_mcontext 176, __fpregs 432, sizeof 960). Linux returns through the
// vDSO's __vdso_rt_sigreturn (riscv has no SA_RESTORER): tracecorn maps its
// own trampoline page (ArchInfo::signal_abi.sigreturn_trampoline).
#include <array>

#include "arch/signal_frames.h"

namespace tracecorn::arch {
namespace {

constexpr std::size_t kUcontext = 128, kRegs = kUcontext + 176, kFpregs = kUcontext + 432;
constexpr std::size_t kFrameBytes = kUcontext + 960;  // sizeof(struct rt_sigframe): 1088

}  // namespace

SignalFrame riscv64_build_signal_frame(uc_engine* engine, const SignalFrameRequest& request) {
  const std::uint64_t frame = (request.stack_top - kFrameBytes) & ~std::uint64_t{15};
  SignalFrame result;
  result.address = frame;
  result.bytes.assign(kFrameBytes, 0);
  FrameWriter writer(result.bytes, true);
  writer.put_bytes(0, request.siginfo);
  put_ucontext_stack64(writer, kUcontext, request.saved_altstack);
  writer.put(kUcontext + 40, 8, request.saved_mask);
  writer.put(kRegs, 8, request.resume_pc);
  for (int i = 1; i < 32; ++i)
    writer.put(kRegs + 8 * static_cast<std::size_t>(i), 8, register_value(engine, UC_RISCV_REG_X0 + i));
  for (int i = 0; i < 32; ++i)
    writer.put(kFpregs + 8 * static_cast<std::size_t>(i), 8, register_value(engine, UC_RISCV_REG_F0 + i));
  writer.put(kFpregs + 256, 4, register_value(engine, UC_RISCV_REG_FCSR));
  return result;
}

void riscv64_enter_signal_handler(uc_engine* engine, const SignalFrameRequest& request, const SignalFrame& frame) {
  const std::uint64_t values[] = {static_cast<std::uint64_t>(request.guest_signal), frame.address,
                                  frame.address + kUcontext, frame.address, request.return_address};
  const int ids[] = {UC_RISCV_REG_A0, UC_RISCV_REG_A1, UC_RISCV_REG_A2, UC_RISCV_REG_SP, UC_RISCV_REG_RA};
  for (std::size_t i = 0; i < std::size(ids); ++i) uc_reg_write(engine, ids[i], &values[i]);
}

std::optional<SignalReturn> riscv64_return_from_signal(uc_engine* engine) {
  const std::uint64_t frame = register_value(engine, UC_RISCV_REG_SP);
  std::array<std::uint8_t, kFrameBytes> bytes{};
  if (uc_mem_read(engine, frame, bytes.data(), bytes.size()) != UC_ERR_OK) return std::nullopt;
  const FrameReader reader(bytes, true);
  for (int i = 1; i < 32; ++i) {
    std::uint64_t value = reader.get(kRegs + 8 * static_cast<std::size_t>(i), 8);
    uc_reg_write(engine, UC_RISCV_REG_X0 + i, &value);
  }
  for (int i = 0; i < 32; ++i) {
    std::uint64_t value = reader.get(kFpregs + 8 * static_cast<std::size_t>(i), 8);
    uc_reg_write(engine, UC_RISCV_REG_F0 + i, &value);
  }
  std::uint64_t fcsr = reader.get(kFpregs + 256, 4);
  uc_reg_write(engine, UC_RISCV_REG_FCSR, &fcsr);
  SignalReturn result;
  result.pc = reader.get(kRegs, 8);
  result.saved_mask = reader.get(kUcontext + 40, 8);
  result.altstack = get_ucontext_stack64(reader, kUcontext);
  result.has_altstack = true;
  return result;
}

std::span<const SavedRegisterSlot> riscv64_signal_saved_registers() {
  // The handler returns to the trampoline with sp at the frame; sc_regs is pc, x1..x31.
  static constexpr auto kSlots = [] {
    std::array<SavedRegisterSlot, 32> slots{};
    slots[0] = {UC_RISCV_REG_PC, static_cast<std::int32_t>(kRegs)};
    for (std::size_t i = 1; i < 32; ++i)
      slots[i] = {UC_RISCV_REG_X0 + static_cast<int>(i), static_cast<std::int32_t>(kRegs + 8 * i)};
    return slots;
  }();
  return kSlots;
}

}  // namespace tracecorn::arch
