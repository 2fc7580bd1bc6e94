// Role: the i386 signal frames (see arch/signal_frames.h), as Linux's
// arch/x86/kernel/signal_32.c lays them out. The handler gets an rt frame when
// it has SA_SIGINFO, else the old one (returning through sigreturn):
//
//   struct sigframe_ia32 (732 bytes)        struct rt_sigframe_ia32 (268 bytes)
//   +0    pretcode                4         +0    pretcode                4
//   +4    sig                     4         +4    sig                     4
//   +8    sigcontext_32          88         +8    pinfo, +12 puc          8
//   +96   _fpstate_32 (unused)  624         +16   siginfo               128
//   +720  extramask (signals 33-64) 4       +144  ucontext: uc_flags, uc_link,
//   +724  retcode                 8                uc_stack (12), sigcontext_32
//                                                  at +164, uc_sigmask at +252
//                                           +260  retcode                 8
//
//   sigcontext_32: gs fs es ds (16 bits each, padded), edi esi ebp esp ebx edx
//   ecx eax, trapno, err, eip, cs, eflags, esp_at_signal, ss, fpstate, oldmask, cr2.
//
// The FPU state goes above the frame: the FXSAVE image at a 64-byte boundary
// below the stack, and the 112-byte legacy fsave header (struct fregs_state)
// just below it, where sigcontext.fpstate points. The frame's esp is aligned
// as for a function entry ((esp + 4) % 16 == 0). Checked against the cross
// compiler's <asm/sigcontext.h> and glibc's ucontext_t (uc_mcontext 20,
// uc_sigmask 108).
#include <array>

#include "arch/signal_frames.h"
#include "arch/x86_fxsave.h"

namespace tracecorn::arch {
namespace {

constexpr std::size_t kOldSigcontext = 8, kOldExtramask = 720, kOldRetcode = 724, kOldFrameBytes = 732;
constexpr std::size_t kRtInfo = 16, kRtUcontext = 144, kRtSigcontext = kRtUcontext + 20, kRtSigmask = kRtUcontext + 108,
                      kRtRetcode = 260, kRtFrameBytes = 268;
constexpr std::size_t kSigcontextBytes = 88, kLegacyFpuBytes = 112;
constexpr std::uint64_t kSaSiginfo = 4;

// The general registers in sigcontext_32 order (4 bytes each from offset 16).
constexpr std::array<int, 8> kGeneralRegisters = {UC_X86_REG_EDI, UC_X86_REG_ESI, UC_X86_REG_EBP, UC_X86_REG_ESP,
                                                  UC_X86_REG_EBX, UC_X86_REG_EDX, UC_X86_REG_ECX, UC_X86_REG_EAX};

std::uint32_t read_register(uc_engine* engine, int id) {
  std::uint32_t value = 0;
  uc_reg_read(engine, id, &value);
  return value;
}

void write_register(uc_engine* engine, int id, std::uint32_t value) { uc_reg_write(engine, id, &value); }

// Writes sigcontext_32 at `at` of the frame.
void put_sigcontext(uc_engine* engine, FrameWriter& writer, std::size_t at, const SignalFrameRequest& request,
                    std::uint32_t fpstate) {
  writer.put(at + 0, 2, read_register(engine, UC_X86_REG_GS));
  writer.put(at + 12, 2, 0x2b);  // ds: __USER_DS
  writer.put(at + 8, 2, 0x2b);   // es
  for (std::size_t i = 0; i < kGeneralRegisters.size(); ++i)
    writer.put(at + 16 + 4 * i, 4, read_register(engine, kGeneralRegisters[i]));
  writer.put(at + 48, 4, request.guest_signal == 11 ? 14 : 0);  // trapno
  writer.put(at + 56, 4, request.resume_pc);
  writer.put(at + 60, 2, 0x23);  // cs: __USER32_CS
  writer.put(at + 64, 4, read_register(engine, UC_X86_REG_EFLAGS));
  writer.put(at + 68, 4, read_register(engine, UC_X86_REG_ESP));  // esp_at_signal
  writer.put(at + 72, 2, 0x2b);  // ss
  writer.put(at + 76, 4, fpstate);
  writer.put(at + 80, 4, request.saved_mask & 0xffffffff);  // oldmask
  writer.put(at + 84, 4, request.fault_address);            // cr2
}

// Restores the registers of the sigcontext_32 at `sigcontext` (guest memory);
// returns the pc and oldmask, or nullopt when it cannot be read.
std::optional<std::pair<std::uint32_t, std::uint32_t>> restore_sigcontext(uc_engine* engine, std::uint64_t sigcontext) {
  std::array<std::uint8_t, kSigcontextBytes> bytes{};
  if (uc_mem_read(engine, sigcontext, bytes.data(), bytes.size()) != UC_ERR_OK) return std::nullopt;
  const FrameReader reader(bytes, true);
  std::array<std::uint8_t, kFxsaveBytes> fxsave{};
  const std::uint64_t fpstate = reader.get(76, 4);
  if (fpstate && uc_mem_read(engine, fpstate + kLegacyFpuBytes, fxsave.data(), fxsave.size()) != UC_ERR_OK)
    return std::nullopt;
  for (std::size_t i = 0; i < kGeneralRegisters.size(); ++i)
    write_register(engine, kGeneralRegisters[i], static_cast<std::uint32_t>(reader.get(16 + 4 * i, 4)));
  const std::uint32_t eflags = read_register(engine, UC_X86_REG_EFLAGS);
  write_register(engine, UC_X86_REG_EFLAGS,
                 static_cast<std::uint32_t>((eflags & ~kFixEflags) | (reader.get(64, 4) & kFixEflags)));
  if (fpstate) restore_fxsave(engine, fxsave, 8);
  return std::pair(static_cast<std::uint32_t>(reader.get(56, 4)), static_cast<std::uint32_t>(reader.get(80, 4)));
}

}  // namespace

SignalFrame i386_build_signal_frame(uc_engine* engine, const SignalFrameRequest& request) {
  const bool rt = request.guest_flags & kSaSiginfo;
  const std::uint64_t top = request.stack_top & 0xffffffff;
  const std::uint64_t fxsave = (top - kFxsaveBytes) & ~std::uint64_t{63};
  const std::uint64_t fpstate = fxsave - kLegacyFpuBytes;
  const std::size_t frame_bytes = rt ? kRtFrameBytes : kOldFrameBytes;
  const std::uint64_t frame = ((fpstate - frame_bytes + 4) & ~std::uint64_t{15}) - 4;
  SignalFrame result;
  result.address = frame;
  result.bytes.assign(fxsave + kFxsaveBytes - frame, 0);
  FrameWriter writer(result.bytes, true);
  // Without SA_RESTORER, the trampoline page's sigreturn (+0) or rt_sigreturn (+8), as the vDSO's.
  writer.put(0, 4, request.return_address + (request.return_to_trampoline && rt ? 8 : 0));
  writer.put(4, 4, static_cast<std::uint64_t>(request.guest_signal));
  if (rt) {
    writer.put(8, 4, frame + kRtInfo);
    writer.put(12, 4, frame + kRtUcontext);
    writer.put_bytes(kRtInfo, request.siginfo);
    writer.put(kRtUcontext + 8, 4, request.saved_altstack.sp);
    writer.put(kRtUcontext + 12, 4, request.saved_altstack.flags);
    writer.put(kRtUcontext + 16, 4, request.saved_altstack.size);
    put_sigcontext(engine, writer, kRtSigcontext, request, static_cast<std::uint32_t>(fpstate));
    writer.put(kRtSigmask, 4, request.saved_mask & 0xffffffff);
    writer.put(kRtSigmask + 4, 4, request.saved_mask >> 32);
    // movl $173 (__NR_rt_sigreturn), %eax; int $0x80: what gdb looks for.
    const std::uint8_t retcode[] = {0xb8, 173, 0, 0, 0, 0xcd, 0x80, 0};
    writer.put_bytes(kRtRetcode, retcode);
  } else {
    put_sigcontext(engine, writer, kOldSigcontext, request, static_cast<std::uint32_t>(fpstate));
    writer.put(kOldExtramask, 4, request.saved_mask >> 32);
    // popl %eax; movl $119 (__NR_sigreturn), %eax; int $0x80
    const std::uint8_t retcode[] = {0x58, 0xb8, 119, 0, 0, 0, 0xcd, 0x80};
    writer.put_bytes(kOldRetcode, retcode);
  }
  write_fxsave(engine, std::span(result.bytes).subspan(fxsave - frame, kFxsaveBytes), 8);
  return result;
}

void i386_enter_signal_handler(uc_engine* engine, const SignalFrameRequest& request, const SignalFrame& frame) {
  const bool rt = request.guest_flags & kSaSiginfo;
  // -mregparm=3 handlers find the arguments in eax, edx, ecx too.
  write_register(engine, UC_X86_REG_EAX, static_cast<std::uint32_t>(request.guest_signal));
  write_register(engine, UC_X86_REG_EDX, rt ? static_cast<std::uint32_t>(frame.address + kRtInfo) : 0);
  write_register(engine, UC_X86_REG_ECX, rt ? static_cast<std::uint32_t>(frame.address + kRtUcontext) : 0);
  write_register(engine, UC_X86_REG_ESP, static_cast<std::uint32_t>(frame.address));
  write_register(engine, UC_X86_REG_EFLAGS, read_register(engine, UC_X86_REG_EFLAGS) & ~(0x400u | 0x100u | 0x10000u));
}

std::optional<SignalReturn> i386_return_from_signal(uc_engine* engine, bool rt) {
  const std::uint64_t esp = read_register(engine, UC_X86_REG_ESP);
  SignalReturn result;
  if (rt) {
    // The handler's ret popped pretcode: the frame starts 4 bytes below.
    const std::uint64_t frame = esp - 4;
    std::array<std::uint8_t, 20> stack{};
    std::array<std::uint8_t, 8> mask{};
    if (uc_mem_read(engine, frame + kRtUcontext, stack.data(), stack.size()) != UC_ERR_OK ||
        uc_mem_read(engine, frame + kRtSigmask, mask.data(), mask.size()) != UC_ERR_OK)
      return std::nullopt;
    const auto restored = restore_sigcontext(engine, frame + kRtSigcontext);
    if (!restored) return std::nullopt;
    const FrameReader stack_reader(stack, true);
    result.pc = restored->first;
    result.saved_mask = FrameReader(mask, true).get(0, 8);
    result.altstack = {stack_reader.get(8, 4), static_cast<std::uint32_t>(stack_reader.get(12, 4)),
                       stack_reader.get(16, 4)};
    result.has_altstack = true;
    return result;
  }
  // The restorer popped the signal number, the handler's ret popped pretcode.
  const std::uint64_t frame = esp - 8;
  std::array<std::uint8_t, 4> extramask{};
  if (uc_mem_read(engine, frame + kOldExtramask, extramask.data(), extramask.size()) != UC_ERR_OK) return std::nullopt;
  const auto restored = restore_sigcontext(engine, frame + kOldSigcontext);
  if (!restored) return std::nullopt;
  result.pc = restored->first;
  result.saved_mask = restored->second | FrameReader(extramask, true).get(0, 4) << 32;
  return result;
}

std::span<const SavedRegisterSlot> i386_signal_saved_registers(bool rt) {
  // The handler's ret popped pretcode: the trampoline runs with esp 4 bytes into the frame.
  static constexpr auto slots_at = [](std::size_t sigcontext) {
    std::array<SavedRegisterSlot, kGeneralRegisters.size() + 2> slots{};
    const std::size_t base = sigcontext - 4;
    for (std::size_t i = 0; i < kGeneralRegisters.size(); ++i)
      slots[i] = {kGeneralRegisters[i], static_cast<std::int32_t>(base + 16 + 4 * i)};
    slots[kGeneralRegisters.size()] = {UC_X86_REG_EIP, static_cast<std::int32_t>(base + 56)};
    slots[kGeneralRegisters.size() + 1] = {UC_X86_REG_EFLAGS, static_cast<std::int32_t>(base + 64)};
    return slots;
  };
  static constexpr auto kRt = slots_at(kRtSigcontext), kOld = slots_at(kOldSigcontext);
  return rt ? std::span<const SavedRegisterSlot>(kRt) : std::span<const SavedRegisterSlot>(kOld);
}

}  // namespace tracecorn::arch
