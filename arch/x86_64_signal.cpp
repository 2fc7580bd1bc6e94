// Role: the x86-64 signal frame (see arch/signal_frames.h). Layout, from the
// frame's start (the handler's rsp, 16-byte aligned minus 8 as after a call):
//
//   +0    pretcode            8   the return address: sa_restorer
//   +8    struct ucontext
//           +0   uc_flags     8   UC_SIGCONTEXT_SS | UC_STRICT_RESTORE_SS
//           +8   uc_link      8
//           +16  uc_stack    24   ss_sp, ss_flags (+4 pad), ss_size
//           +40  sigcontext 256   r8..r15 rdi rsi rbp rbx rdx rax rcx rsp rip
//                                 eflags, cs gs fs ss (16 bits each), err,
//                                 trapno, oldmask, cr2, fpstate, reserved[8]
//           +296 uc_sigmask   8
//   +312  siginfo           128
//   ...   FXSAVE image      512   at a 64-byte boundary below the red zone
//
// Checked against <asm/sigcontext.h> and glibc's ucontext_t offsets
// (uc_mcontext 40, uc_sigmask 296, fpregs 224).
#include <array>

#include "arch/signal_frames.h"
#include "arch/x86_fxsave.h"

namespace tracecorn::arch {
namespace {

constexpr std::size_t kUcontext = 8, kSigcontext = kUcontext + 40, kSigmask = kUcontext + 296, kSiginfo = 312;
constexpr std::size_t kFrameBytes = kSiginfo + kSiginfoBytes;  // sizeof(struct rt_sigframe): 440
constexpr std::uint64_t kRedZone = 128;

// The general registers in sigcontext order, 8 bytes each from kSigcontext.
constexpr std::array<int, 18> kSigcontextRegisters = {
    UC_X86_REG_R8,  UC_X86_REG_R9,  UC_X86_REG_R10, UC_X86_REG_R11, UC_X86_REG_R12, UC_X86_REG_R13,
    UC_X86_REG_R14, UC_X86_REG_R15, UC_X86_REG_RDI, UC_X86_REG_RSI, UC_X86_REG_RBP, UC_X86_REG_RBX,
    UC_X86_REG_RDX, UC_X86_REG_RAX, UC_X86_REG_RCX, UC_X86_REG_RSP, UC_X86_REG_RIP, UC_X86_REG_EFLAGS};
constexpr std::size_t kRipSlot = 16, kEflagsSlot = 17;

int trap_number(int guest_signal) {
  switch (guest_signal) {
    case 11: return 14;  // SIGSEGV: page fault
    case 8: return 0;    // SIGFPE: divide error
    case 5: return 3;    // SIGTRAP: breakpoint
    case 4: return 6;    // SIGILL: invalid opcode
    default: return 0;
  }
}

}  // namespace

SignalFrame x86_64_build_signal_frame(uc_engine* engine, const SignalFrameRequest& request) {
  std::uint64_t sp = request.stack_top;
  if (!request.on_alternate_stack) sp -= kRedZone;
  const std::uint64_t fpstate = (sp - kFxsaveBytes) & ~std::uint64_t{63};
  const std::uint64_t frame = ((fpstate - kFrameBytes) & ~std::uint64_t{15}) - 8;
  SignalFrame result;
  result.address = frame;
  result.bytes.assign(fpstate + kFxsaveBytes - frame, 0);
  FrameWriter writer(result.bytes, true);
  writer.put(0, 8, request.return_address);
  writer.put(kUcontext, 8, 2 | 4);  // UC_SIGCONTEXT_SS | UC_STRICT_RESTORE_SS
  put_ucontext_stack64(writer, kUcontext, request.saved_altstack);
  for (std::size_t slot = 0; slot < kSigcontextRegisters.size(); ++slot)
    writer.put(kSigcontext + 8 * slot, 8, register_value(engine, kSigcontextRegisters[slot]));
  writer.put(kSigcontext + 8 * kRipSlot, 8, request.resume_pc);
  writer.put(kSigcontext + 144, 2, 0x33);  // cs: Linux's __USER_CS
  writer.put(kSigcontext + 150, 2, 0x2b);  // ss: __USER_DS
  writer.put(kSigcontext + 160, 8, static_cast<std::uint64_t>(trap_number(request.guest_signal)));
  writer.put(kSigcontext + 168, 8, request.saved_mask);  // oldmask
  writer.put(kSigcontext + 176, 8, request.fault_address);  // cr2
  writer.put(kSigcontext + 184, 8, fpstate);
  writer.put(kSigmask, 8, request.saved_mask);
  writer.put_bytes(kSiginfo, request.siginfo);
  write_fxsave(engine, std::span(result.bytes).subspan(fpstate - frame, kFxsaveBytes), 16);
  return result;
}

void x86_64_enter_signal_handler(uc_engine* engine, const SignalFrameRequest& request, const SignalFrame& frame) {
  const std::uint64_t values[] = {static_cast<std::uint64_t>(request.guest_signal), frame.address + kSiginfo,
                                  frame.address + kUcontext, 0, frame.address};
  const int ids[] = {UC_X86_REG_RDI, UC_X86_REG_RSI, UC_X86_REG_RDX, UC_X86_REG_RAX, UC_X86_REG_RSP};
  for (std::size_t i = 0; i < std::size(ids); ++i) uc_reg_write(engine, ids[i], &values[i]);
  // The handler starts with DF, TF and RF clear (arch/x86/kernel/signal.c).
  std::uint64_t eflags = register_value(engine, UC_X86_REG_EFLAGS) & ~std::uint64_t{0x400 | 0x100 | 0x10000};
  uc_reg_write(engine, UC_X86_REG_EFLAGS, &eflags);
}

std::optional<SignalReturn> x86_64_return_from_signal(uc_engine* engine) {
  // The handler's `ret` popped pretcode: the ucontext is at rsp.
  const std::uint64_t ucontext = register_value(engine, UC_X86_REG_RSP);
  std::array<std::uint8_t, kSigmask - kUcontext + 8> bytes{};
  if (uc_mem_read(engine, ucontext, bytes.data(), bytes.size()) != UC_ERR_OK) return std::nullopt;
  const FrameReader reader(bytes, true);
  const std::size_t sigcontext = kSigcontext - kUcontext;
  std::array<std::uint8_t, kFxsaveBytes> fxsave{};
  const std::uint64_t fpstate = reader.get(sigcontext + 184, 8);
  if (fpstate && uc_mem_read(engine, fpstate, fxsave.data(), fxsave.size()) != UC_ERR_OK) return std::nullopt;
  for (std::size_t slot = 0; slot < kSigcontextRegisters.size(); ++slot) {
    if (slot == kRipSlot) continue;
    std::uint64_t value = reader.get(sigcontext + 8 * slot, 8);
    if (slot == kEflagsSlot)
      value = (register_value(engine, UC_X86_REG_EFLAGS) & ~kFixEflags) | (value & kFixEflags);
    uc_reg_write(engine, kSigcontextRegisters[slot], &value);
  }
  if (fpstate) restore_fxsave(engine, fxsave, 16);
  SignalReturn result;
  result.pc = reader.get(sigcontext + 8 * kRipSlot, 8);
  result.saved_mask = reader.get(kSigmask - kUcontext, 8);
  result.altstack = get_ucontext_stack64(reader, 0);
  result.has_altstack = true;
  return result;
}

std::span<const SavedRegisterSlot> x86_64_signal_saved_registers() {
  // The handler's ret popped pretcode: the trampoline runs with rsp at the ucontext.
  static constexpr auto kSlots = [] {
    std::array<SavedRegisterSlot, kSigcontextRegisters.size()> slots{};
    for (std::size_t slot = 0; slot < slots.size(); ++slot)
      slots[slot] = {kSigcontextRegisters[slot], static_cast<std::int32_t>(kSigcontext - kUcontext + 8 * slot)};
    return slots;
  }();
  return kSlots;
}

}  // namespace tracecorn::arch
