// Role: the aarch64 signal frame (see arch/signal_frames.h). Layout, from the
// frame's start (the handler's sp, 16-byte aligned):
//
//   +0     siginfo                    128
//   +128   struct ucontext
//            +0    uc_flags             8
//            +8    uc_link              8
//            +16   uc_stack            24   ss_sp, ss_flags (+4 pad), ss_size
//            +40   uc_sigmask           8   (+120 unused: glibc's 1024-bit set)
//            +176  sigcontext               fault_address, x0..x30, sp, pc,
//                                           pstate, then __reserved[4096] at +288:
//                                           fpsimd_context {magic 0x46508001,
//                                           size 528, fpsr, fpcr, v0..v31},
//                                           then the terminator {0, 0}
//   +4688  frame record {x29, x30}     16   (x29 of the handler points here)
//
// Checked against <asm/sigcontext.h>, <asm/ucontext.h> and glibc's
// ucontext_t offsets (uc_mcontext 176, regs 184, sp 432, pc 440, pstate 448,
// __reserved 464, sizeof 4560).
#include <array>

#include "arch/signal_frames.h"

namespace tracecorn::arch {
namespace {

constexpr std::size_t kUcontext = 128, kSigcontext = kUcontext + 176;
constexpr std::size_t kRegs = kSigcontext + 8, kSp = kSigcontext + 256, kPc = kSigcontext + 264,
                      kPstate = kSigcontext + 272, kReserved = kSigcontext + 288;
constexpr std::size_t kFrameBytes = kUcontext + 4560;  // sizeof(struct rt_sigframe): 4688
constexpr std::uint32_t kFpsimdMagic = 0x46508001, kFpsimdBytes = 528;
constexpr std::uint64_t kSaSiginfo = 4;

constexpr int x_register(std::size_t index) {
  if (index == 29) return UC_ARM64_REG_X29;
  if (index == 30) return UC_ARM64_REG_X30;
  return UC_ARM64_REG_X0 + static_cast<int>(index);
}

}  // namespace

SignalFrame aarch64_build_signal_frame(uc_engine* engine, const SignalFrameRequest& request) {
  const std::uint64_t record = (request.stack_top - 16) & ~std::uint64_t{15};
  const std::uint64_t frame = record - kFrameBytes;
  SignalFrame result;
  result.address = frame;
  result.bytes.assign(kFrameBytes + 16, 0);
  FrameWriter writer(result.bytes, true);
  writer.put_bytes(0, request.siginfo);
  put_ucontext_stack64(writer, kUcontext, request.saved_altstack);
  writer.put(kUcontext + 40, 8, request.saved_mask);
  writer.put(kSigcontext, 8, request.fault_address);
  for (std::size_t i = 0; i < 31; ++i) writer.put(kRegs + 8 * i, 8, register_value(engine, x_register(i)));
  writer.put(kSp, 8, register_value(engine, UC_ARM64_REG_SP));
  writer.put(kPc, 8, request.resume_pc);
  writer.put(kPstate, 8, register_value(engine, UC_ARM64_REG_NZCV) & 0xf0000000);
  writer.put(kReserved, 4, kFpsimdMagic);
  writer.put(kReserved + 4, 4, kFpsimdBytes);
  writer.put(kReserved + 8, 4, register_value(engine, UC_ARM64_REG_FPSR));
  writer.put(kReserved + 12, 4, register_value(engine, UC_ARM64_REG_FPCR));
  for (int i = 0; i < 32; ++i) {
    std::uint8_t value[16] = {};
    uc_reg_read(engine, UC_ARM64_REG_V0 + i, value);
    writer.put_bytes(kReserved + 16 + 16 * static_cast<std::size_t>(i), value);
  }
  // The terminator record after fpsimd_context is already zero.
  writer.put(kFrameBytes, 8, register_value(engine, UC_ARM64_REG_X29));
  writer.put(kFrameBytes + 8, 8, register_value(engine, UC_ARM64_REG_X30));
  return result;
}

void aarch64_enter_signal_handler(uc_engine* engine, const SignalFrameRequest& request, const SignalFrame& frame) {
  std::uint64_t value = static_cast<std::uint64_t>(request.guest_signal);
  uc_reg_write(engine, UC_ARM64_REG_X0, &value);
  if (request.guest_flags & kSaSiginfo) {
    value = frame.address;
    uc_reg_write(engine, UC_ARM64_REG_X1, &value);
    value = frame.address + kUcontext;
    uc_reg_write(engine, UC_ARM64_REG_X2, &value);
  }
  value = frame.address;
  uc_reg_write(engine, UC_ARM64_REG_SP, &value);
  value = frame.address + kFrameBytes;  // &next_frame->fp
  uc_reg_write(engine, UC_ARM64_REG_X29, &value);
  value = request.return_address;
  uc_reg_write(engine, UC_ARM64_REG_X30, &value);
}

std::optional<SignalReturn> aarch64_return_from_signal(uc_engine* engine) {
  // The handler returned to the trampoline with sp back at the frame.
  const std::uint64_t frame = register_value(engine, UC_ARM64_REG_SP);
  if (frame % 16) return std::nullopt;  // Linux refuses a misaligned frame
  std::array<std::uint8_t, kReserved + kFpsimdBytes> bytes{};
  if (uc_mem_read(engine, frame, bytes.data(), bytes.size()) != UC_ERR_OK) return std::nullopt;
  const FrameReader reader(bytes, true);
  for (std::size_t i = 0; i < 31; ++i) {
    std::uint64_t value = reader.get(kRegs + 8 * i, 8);
    uc_reg_write(engine, x_register(i), &value);
  }
  std::uint64_t value = reader.get(kSp, 8);
  uc_reg_write(engine, UC_ARM64_REG_SP, &value);
  value = reader.get(kPstate, 8) & 0xf0000000;
  uc_reg_write(engine, UC_ARM64_REG_NZCV, &value);
  if (reader.get(kReserved, 4) == kFpsimdMagic && reader.get(kReserved + 4, 4) == kFpsimdBytes) {
    value = reader.get(kReserved + 8, 4);
    uc_reg_write(engine, UC_ARM64_REG_FPSR, &value);
    value = reader.get(kReserved + 12, 4);
    uc_reg_write(engine, UC_ARM64_REG_FPCR, &value);
    for (int i = 0; i < 32; ++i) {
      std::uint8_t v[16] = {};
      const auto source = reader.bytes(kReserved + 16 + 16 * static_cast<std::size_t>(i), 16);
      for (std::size_t b = 0; b < 16; ++b) v[b] = source[b];
      uc_reg_write(engine, UC_ARM64_REG_V0 + i, v);
    }
  }
  SignalReturn result;
  result.pc = reader.get(kPc, 8);
  result.saved_mask = reader.get(kUcontext + 40, 8);
  result.altstack = get_ucontext_stack64(reader, kUcontext);
  result.has_altstack = true;
  return result;
}

std::span<const SavedRegisterSlot> aarch64_signal_saved_registers() {
  // The handler returns to the trampoline with sp at the frame.
  static constexpr auto kSlots = [] {
    std::array<SavedRegisterSlot, 33> slots{};
    for (std::size_t i = 0; i < 31; ++i) slots[i] = {x_register(i), static_cast<std::int32_t>(kRegs + 8 * i)};
    slots[31] = {UC_ARM64_REG_SP, static_cast<std::int32_t>(kSp)};
    slots[32] = {UC_ARM64_REG_PC, static_cast<std::int32_t>(kPc)};
    return slots;
  }();
  return kSlots;
}

}  // namespace tracecorn::arch
