// Role: what the Linux layer asks of an architecture to deliver a signal to a
// guest handler and to return from it: the request (which signal, which
// handler, which stack, what to save), the frame the architecture lays out on
// the guest stack, and what rt_sigreturn/sigreturn restore. The byte layouts
// are each architecture's kernel's (arch/<arch>/kernel/signal.c, checked
// against the cross compilers' <asm/sigcontext.h>, <asm/ucontext.h> and
// <asm/signal.h>, and against qemu-user's behaviour on the samples).
// Who calls it: the Linux layer's signal delivery (recorder/linux/signals.h),
// on the emulation thread, inside Unicorn's syscall hook or between runs.
// Invariants: frames are built from the CPU's registers at the moment of the
// call and written by the caller (so that the recorder sees the bytes as
// memory effects); nothing here writes guest memory.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <vector>

namespace tracecorn::arch {

// A guest's stack_t (sigaltstack), in neutral form.
struct SignalStack {
  std::uint64_t sp = 0;
  std::uint32_t flags = 0;  // SS_ONSTACK 1, SS_DISABLE 2
  std::uint64_t size = 0;
};

inline constexpr std::size_t kSiginfoBytes = 128;

// Everything the architecture needs to lay out one signal frame.
struct SignalFrameRequest {
  int guest_signal = 0;           // the guest's number (mips' SIGUSR1 is 16)
  std::uint64_t handler = 0;      // sa_handler / sa_sigaction
  std::uint64_t guest_flags = 0;  // sa_flags as the guest set them
  // Where the handler returns to: sa_restorer with SA_RESTORER, else the
  // trampoline page tracecorn maps (the kernel's vDSO sigreturn on aarch64,
  // riscv64 and mips).
  std::uint64_t return_address = 0;
  // return_address is tracecorn's trampoline page (ArchInfo::signal_abi.
  // sigreturn_trampoline), not sa_restorer: an architecture with two
  // sequences there (sigreturn, rt_sigreturn) picks its offset.
  bool return_to_trampoline = false;
  std::uint64_t saved_mask = 0;   // the blocked set sigreturn restores (guest numbering, signals 1-64)
  std::uint64_t stack_top = 0;    // the frame goes below this: the interrupted sp, or the alternate stack's top
  bool on_alternate_stack = false;  // stack_top is the alternate stack's top (no red zone below it)
  SignalStack saved_altstack;     // uc_stack: the sigaltstack settings at delivery
  std::array<std::uint8_t, kSiginfoBytes> siginfo{};  // the guest's siginfo_t, in its byte order
  std::uint64_t resume_pc = 0;    // where the interrupted code goes on after the handler
  std::uint64_t fault_address = 0;  // SIGSEGV/SIGBUS: the address (aarch64's sigcontext has it)
};

// The frame laid out below SignalFrameRequest::stack_top: its bytes go to
// guest memory at `address`, where the handler's stack pointer points (the
// FPU state some architectures keep above the frame is part of the bytes).
struct SignalFrame {
  std::uint64_t address = 0;
  std::vector<std::uint8_t> bytes;
};

// What a sigreturn restored besides the registers.
struct SignalReturn {
  std::uint64_t pc = 0;            // where the guest resumes
  std::uint64_t saved_mask = 0;    // the blocked set to restore (guest numbering, signals 1-64)
  SignalStack altstack;            // uc_stack as the handler left it (restore_altstack)
  bool has_altstack = false;       // the frame carries one (rt frames do; i386/arm/mips non-rt frames do not)
};

// Little helpers for laying out a frame in the guest's byte order.
class FrameWriter {
 public:
  FrameWriter(std::span<std::uint8_t> bytes, bool little_endian) : bytes_(bytes), little_endian_(little_endian) {}
  // Stores the low `width` bytes of `value` at `offset`; out-of-range stores are dropped.
  void put(std::size_t offset, std::size_t width, std::uint64_t value) {
    if (offset + width > bytes_.size()) return;
    for (std::size_t b = 0; b < width; ++b) {
      const std::size_t shift = 8 * (little_endian_ ? b : width - 1 - b);
      bytes_[offset + b] = static_cast<std::uint8_t>(value >> shift);
    }
  }
  void put_bytes(std::size_t offset, std::span<const std::uint8_t> data) {
    if (offset + data.size() > bytes_.size()) return;
    for (std::size_t i = 0; i < data.size(); ++i) bytes_[offset + i] = data[i];
  }

 private:
  std::span<std::uint8_t> bytes_;
  bool little_endian_;
};

// Reads fields of a frame read back from guest memory (the guest may have
// changed it: every value is untrusted until the architecture checks it).
class FrameReader {
 public:
  FrameReader(std::span<const std::uint8_t> bytes, bool little_endian) : bytes_(bytes), little_endian_(little_endian) {}
  // The `width`-byte value at `offset`; 0 when out of range.
  std::uint64_t get(std::size_t offset, std::size_t width) const {
    if (offset + width > bytes_.size()) return 0;
    std::uint64_t value = 0;
    for (std::size_t b = 0; b < width; ++b) {
      const std::size_t shift = 8 * (little_endian_ ? b : width - 1 - b);
      value |= std::uint64_t{bytes_[offset + b]} << shift;
    }
    return value;
  }
  std::span<const std::uint8_t> bytes(std::size_t offset, std::size_t size) const {
    if (offset + size > bytes_.size()) return {};
    return bytes_.subspan(offset, size);
  }

 private:
  std::span<const std::uint8_t> bytes_;
  bool little_endian_;
};

// uc_stack of a 64-bit ucontext (x86-64, aarch64, riscv64): ss_sp, ss_flags
// and ss_size at +16, +24 and +32 of the ucontext at `ucontext`.
inline void put_ucontext_stack64(FrameWriter& writer, std::size_t ucontext, const SignalStack& stack) {
  writer.put(ucontext + 16, 8, stack.sp);
  writer.put(ucontext + 24, 4, stack.flags);
  writer.put(ucontext + 32, 8, stack.size);
}
inline SignalStack get_ucontext_stack64(const FrameReader& reader, std::size_t ucontext) {
  return {reader.get(ucontext + 16, 8), static_cast<std::uint32_t>(reader.get(ucontext + 24, 4)),
          reader.get(ucontext + 32, 8)};
}

}  // namespace tracecorn::arch
