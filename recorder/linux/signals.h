// Role: the signal state of one emulated Linux process: dispositions as the
// guest set them, the process-wide pending set (kill, timers) and, for the
// running thread, its blocked mask, its own pending set (tgkill, faults) with
// each pending signal's siginfo, its alternate stack (the other threads keep
// theirs in ThreadSignals, swapped in when they run), the real-time interval
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
#include <csignal>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "arch/signal_frame.h"

namespace tracecorn::linux_layer {

inline constexpr int kMaxSignal = 64;
inline constexpr std::uint64_t signal_bit(int signal) { return 1ull << (signal - 1); }
// The signals no mask holds back (host numbers).
inline constexpr std::uint64_t kUnblockable = signal_bit(SIGKILL) | signal_bit(SIGSTOP);

// The Linux SA_ flags shared by every architecture (SA_SIGINFO is the arch's).
inline constexpr std::uint64_t kSaOnStack = 0x08000000, kSaRestart = 0x10000000, kSaNoDefer = 0x40000000,
                               kSaResetHand = 0x80000000, kSaRestorer = 0x04000000, kSaNoCldStop = 0x00000001;
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
  // SI_TIMER (POSIX timers): si_tid (the timer's id), si_overrun, si_value.
  int timer_id = 0;
  int overrun = 0;
  std::uint64_t value = 0;
  std::uint64_t timer_generation = 0;  // PosixTimer::generation when raised
  // SIGCHLD (code CLD_EXITED...): si_status, the exit code or the host signal number.
  int child_status = 0;
  // Replay: the frame the trace recorded for this delivery. When the frame
  // built here lies at that address with that size, the recorded bytes are
  // written instead, so the handler reads what it read in the recording
  // (siginfo fields a replay cannot rebuild, such as a child's si_status).
  std::uint64_t recorded_frame_address = 0;
  std::shared_ptr<const std::vector<std::uint8_t>> recorded_frame;
  // Replay: made pending from the trace (signal_injection.cpp), so delivered
  // even where this run has no timer that raised it (a POSIX timer's
  // timer_create was answered from the trace, not run).
  bool from_trace = false;
};

// Whether a signal's default action is to ignore it (host numbering).
inline bool default_action_is_ignore(int signal) {
  return signal == SIGCHLD || signal == SIGCONT || signal == SIGURG || signal == SIGWINCH;
}

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

// ITIMER_VIRTUAL or ITIMER_PROF: the process's CPU time, counted in guest
// instructions at one per nanosecond (so a timer fires at the same
// instruction in every run). Both count every thread's instructions;
// neither counts time spent blocked in the host.
struct CpuTimer {
  std::uint64_t deadline = 0;  // the instruction count at which it expires; 0: disarmed
  std::uint64_t interval = 0;  // reload, in instructions (nanoseconds); 0: one shot
};

// A POSIX timer (timer_create): its clock's expiry on the host's monotonic
// clock, the reload interval, and what it does when it expires.
struct PosixTimer {
  enum class Notify : std::uint8_t { kSignal, kNone, kThread };  // SIGEV_SIGNAL, SIGEV_NONE, SIGEV_THREAD_ID
  bool in_use = false;
  int clock = 0;
  Notify notify = Notify::kSignal;
  int signal = 0;               // host number
  std::uint64_t value = 0;      // sigev_value, given back in si_value
  std::uint32_t thread = 0;     // SIGEV_THREAD_ID: the tid to signal
  std::optional<std::chrono::steady_clock::time_point> deadline;
  std::chrono::nanoseconds interval{0};
  int overrun = 0;              // expiries while its signal was still pending
  int last_overrun = 0;         // the overrun its last signal carried (timer_getoverrun)
  // Counts settime and delete: a signal raised before is dropped when it
  // would be delivered (Linux drops the signal of a timer re-armed since).
  std::uint64_t generation = 0;
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

// What each thread has of its own: the blocked mask, the signals sent to it
// (tgkill, its faults), its alternate stack.
struct ThreadSignals {
  std::uint64_t blocked = 0;
  std::uint64_t pending = 0;
  std::array<SignalOrigin, kMaxSignal + 1> origins{};
  // Set by rt_sigsuspend: the mask the handler's frame restores (the mask before the call).
  std::optional<std::uint64_t> mask_after_handler;
  arch::SignalStack altstack{0, 2 /* SS_DISABLE */, 0};

  // Sends `signal` to this thread.
  void raise(int signal, const SignalOrigin& origin) {
    if (!(pending & signal_bit(signal))) origins[static_cast<std::size_t>(signal)] = origin;
    pending |= signal_bit(signal);
  }
};

// The signal state of a process: the running thread's part (the base class)
// and the process-wide part.
struct SignalState : ThreadSignals {
  // The guest's struct sigaction records, as it wrote them (given back as the old action).
  std::uint64_t raw_actions[kMaxSignal + 1][4] = {};
  // Signals sent to the process (kill, its timers): any thread that does not block one takes it.
  std::uint64_t shared_pending = 0;
  std::array<SignalOrigin, kMaxSignal + 1> shared_origins{};
  RealTimer real_timer;
  std::array<CpuTimer, 2> cpu_timers{};  // ITIMER_VIRTUAL, ITIMER_PROF
  std::vector<PosixTimer> posix_timers;  // timer id = index

  // Pending for the running thread: its own and the process's.
  std::uint64_t all_pending() const { return pending | shared_pending; }
  // The lowest pending signal that is not blocked; 0 when none.
  int next_deliverable() const {
    const std::uint64_t deliverable = all_pending() & ~blocked;
    return deliverable ? __builtin_ctzll(deliverable) + 1 : 0;
  }
  // Sends `signal` to the process.
  void raise_shared(int signal, const SignalOrigin& origin) {
    if (!(shared_pending & signal_bit(signal))) shared_origins[static_cast<std::size_t>(signal)] = origin;
    shared_pending |= signal_bit(signal);
  }
  // Takes pending `signal` (the thread's own first) and returns its origin.
  SignalOrigin take(int signal) {
    const auto index = static_cast<std::size_t>(signal);
    if (pending & signal_bit(signal)) {
      pending &= ~signal_bit(signal);
      return origins[index];
    }
    shared_pending &= ~signal_bit(signal);
    return shared_origins[index];
  }
  // Forgets `signal` wherever it is pending (it became ignored).
  void discard(int signal) {
    pending &= ~signal_bit(signal);
    shared_pending &= ~signal_bit(signal);
  }
  // The running thread's part changes place with `other` (a thread switch).
  void exchange_thread_part(ThreadSignals& other) { std::swap(static_cast<ThreadSignals&>(*this), other); }
  // Whether `sp` lies on the alternate stack.
  bool on_altstack(std::uint64_t sp) const {
    return !(altstack.flags & 2) && sp > altstack.sp && sp - altstack.sp <= altstack.size;
  }
};

}  // namespace tracecorn::linux_layer
