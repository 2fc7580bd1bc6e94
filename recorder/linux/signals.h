// Role: the signal state of one emulated Linux process (one thread for now):
// dispositions as the guest set them, the blocked mask, the pending set with
// each pending signal's siginfo, the alternate stack, the real-time interval
// timer (alarm, setitimer ITIMER_REAL), and a wake-up thread that raises a
// flag when that timer comes due while the guest computes. No Unicorn here;
// the kernel (syscalls_signal.cpp) delivers signals with the architecture's
// frames.
// Threads: everything runs on the emulation thread, except TimerWakeup's own
// thread, which reads its deadline under its mutex and sets an atomic flag.
// Invariants: signals are kept in the host's numbering (1-64); SIGKILL and
// SIGSTOP are never blocked, ignored or caught.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <thread>

#include "arch/signal_frame.h"

namespace tracecorn::linux_layer {

inline constexpr int kMaxSignal = 64;
inline constexpr std::uint64_t signal_bit(int signal) { return 1ull << (signal - 1); }

// The Linux SA_ flags shared by every architecture (SA_SIGINFO is the arch's).
inline constexpr std::uint64_t kSaOnStack = 0x08000000, kSaRestart = 0x10000000, kSaNoDefer = 0x40000000,
                               kSaResetHand = 0x80000000, kSaRestorer = 0x04000000;
inline constexpr std::uint64_t kSigDefault = 0, kSigIgnore = 1;
// si_code values (asm-generic/siginfo.h).
inline constexpr int kSiUser = 0, kSiKernel = 0x80, kSiQueue = -1, kSiTimer = -2, kSiTkill = -6;

// Where a pending signal came from: what its siginfo_t says.
struct SignalOrigin {
  int code = kSiUser;          // si_code
  std::uint64_t pid = 0;       // kill/tkill: the sender
  std::uint64_t uid = 0;
  std::uint64_t address = 0;   // faults: si_addr
  bool is_fault = false;
};

// One guest disposition, decoded from the struct sigaction the guest gave.
struct SignalAction {
  std::uint64_t handler = kSigDefault;
  std::uint64_t flags = 0;     // guest values
  std::uint64_t restorer = 0;
  std::uint64_t mask = 0;      // host numbering
};

// ITIMER_REAL (alarm, setitimer): the next expiry on the host's monotonic
// clock and the reload interval (zero: one shot).
struct RealTimer {
  std::optional<std::chrono::steady_clock::time_point> deadline;
  std::chrono::microseconds interval{0};
};

// A thread that raises a flag when the real timer comes due, so that a guest
// busy in a loop gets its SIGALRM at the next block boundary: the Linux
// layer's block hook (installed once a timer is first armed) reads the flag.
// No uc_emu_stop here: Unicorn 2.0.1 resumes a run stopped from another
// thread at the start of a block it already ran (seen with a two-block loop:
// an increment ran twice), so delivery happens inside the hook instead.
// Started on the first arm(); joined in the destructor.
class TimerWakeup {
 public:
  TimerWakeup() = default;
  ~TimerWakeup();
  TimerWakeup(const TimerWakeup&) = delete;
  TimerWakeup& operator=(const TimerWakeup&) = delete;

  // Raises the flag at `deadline` (nullopt: never). Emulation thread.
  void arm(std::optional<std::chrono::steady_clock::time_point> deadline);
  // Whether the flag is up (the block hook's cheap test). Any thread.
  bool due() const { return due_.load(std::memory_order_relaxed); }
  // Whether the timer came due since the last call, and clears that. Emulation thread.
  bool take_due() { return due_.exchange(false, std::memory_order_acq_rel); }

 private:
  void run();

  std::mutex mutex_;
  std::condition_variable changed_;
  std::optional<std::chrono::steady_clock::time_point> deadline_;
  bool quit_ = false;
  std::atomic<bool> due_{false};
  std::thread thread_;
};

// The signal state of a process.
struct SignalState {
  // The guest's struct sigaction records, as it wrote them (given back as the old action).
  std::uint64_t raw_actions[kMaxSignal + 1][4] = {};
  std::uint64_t blocked = 0;
  std::uint64_t pending = 0;
  std::array<SignalOrigin, kMaxSignal + 1> origins{};
  // Set by rt_sigsuspend: the mask the handler's frame restores (the mask before the call).
  std::optional<std::uint64_t> mask_after_handler;
  arch::SignalStack altstack{0, 2 /* SS_DISABLE */, 0};
  RealTimer real_timer;

  // The lowest pending signal that is not blocked; 0 when none.
  int next_deliverable() const {
    const std::uint64_t deliverable = pending & ~blocked;
    return deliverable ? __builtin_ctzll(deliverable) + 1 : 0;
  }
  void raise(int signal, const SignalOrigin& origin) {
    if (!(pending & signal_bit(signal))) origins[static_cast<std::size_t>(signal)] = origin;
    pending |= signal_bit(signal);
  }
  // Whether `sp` lies on the alternate stack.
  bool on_altstack(std::uint64_t sp) const {
    return !(altstack.flags & 2) && sp > altstack.sp && sp - altstack.sp <= altstack.size;
  }
};

}  // namespace tracecorn::linux_layer
