// Role: signal injection, for replay: the replayer makes a signal pending as
// the trace says it came (at a syscall's return, or between two instructions:
// a timer's), takes back one that the trace says a wait consumed, and has the
// pending ones delivered at an exact instruction from its own code hook, so a
// re-run takes each signal where the recording did, never when the host's
// clock says (the replay answers alarm and setitimer from the trace: the real
// timer is never armed). Declarations: kernel.h and linux_process.h, each in
// one block ("Signal injection").
// Threads: the emulation thread, inside a syscall or code hook, or between
// runs; nothing here throws.
#include <unistd.h>

#include <csignal>

#include "recorder/linux/kernel.h"

namespace tracecorn::linux_layer {

void Kernel::inject_signal(int signal, const SignalOrigin& origin) noexcept {
  if (signal < 1 || signal > kMaxSignal) return;
  // Sent to the thread (tgkill, tkill, a fault) or to the process (kill, a
  // timer), as the recording's si_code says. One already pending there (a
  // kill the re-run made itself) keeps its place and takes the trace's
  // siginfo (the sender's pid is the recording's).
  const auto index = static_cast<std::size_t>(signal);
  const bool to_thread = origin.code == kSiTkill || origin.is_fault;
  (to_thread ? signals_.origins : signals_.shared_origins)[index] = origin;
  (to_thread ? signals_.pending : signals_.shared_pending) |= signal_bit(signal);
}

void Kernel::take_pending_signal(int signal) noexcept {
  if (signal >= 1 && signal <= kMaxSignal) signals_.discard(signal);
}

std::optional<std::uint64_t> Kernel::deliver_injected(std::uint64_t pc) noexcept {
  try {
    if (!signals_.next_deliverable()) return std::nullopt;
    const std::optional<std::uint64_t> handler = deliver_pending(pc);
    if (handler) {
      std::uint64_t next = *handler;
      uc_reg_write(engine_, arch_.pc_reg, &next);  // Unicorn leaves the block and goes on there
    }
    return handler;
  } catch (...) {
    end_with_signal(SIGSYS, "internal error delivering a signal");
    return std::nullopt;
  }
}

void LinuxProcess::inject_signal(int signal, int code, std::uint64_t sender_pid,
                                 std::shared_ptr<const std::vector<std::uint8_t>> recorded_frame,
                                 std::uint64_t recorded_frame_address) noexcept {
  SignalOrigin origin;
  origin.code = code;
  origin.pid = sender_pid;
  origin.uid = ::getuid();
  origin.recorded_frame = std::move(recorded_frame);
  origin.recorded_frame_address = recorded_frame_address;
  origin.from_trace = true;
  kernel_->inject_signal(signal, origin);
}

void LinuxProcess::take_pending_signal(int signal) noexcept { kernel_->take_pending_signal(signal); }

bool LinuxProcess::deliver_injected_signals(std::uint64_t pc) noexcept {
  return kernel_->deliver_injected(pc).has_value();
}

}  // namespace tracecorn::linux_layer
