// Role: POSIX timers (timer_create, timer_settime, timer_gettime,
// timer_getoverrun, timer_delete and the time64 variants), the CPU-time
// interval timers ITIMER_VIRTUAL and ITIMER_PROF (counted in guest
// instructions, one per nanosecond: SIGVTALRM and SIGPROF land on the same
// instruction every run), and the one place every timer is polled
// (ITIMER_REAL included): a timer that came due raises
// its signal (SIGEV_SIGNAL: the process; SIGEV_THREAD_ID: one thread, which
// is how glibc's SIGEV_THREAD timers reach their helper thread; SIGEV_NONE:
// nothing), with si_code SI_TIMER, the timer id, its overrun count and
// sigev_value in the siginfo. Deadlines are kept on the host's monotonic
// clock whatever the timer's clock (absolute CLOCK_REALTIME times are
// converted when set; the CPU-time clocks count host time).
// Who calls it: the syscall handlers and the waits, on the emulation thread.
// Invariants: the wake-up thread is armed for the earliest deadline of any
// timer after every change (arm_timer_wakeup); a timer's signal that is still
// pending when the timer expires again counts an overrun instead.
#include <algorithm>
#include <cerrno>
#include <csignal>
#include <ctime>

#include "recorder/engine/instruction_counter.h"
#include "recorder/linux/kernel.h"

namespace tracecorn::linux_layer {

using arch::SyscallId;
using Clock = std::chrono::steady_clock;

namespace {

constexpr std::size_t kMaxTimers = 4096;
constexpr int kSigevSignal = 0, kSigevNone = 1, kSigevThreadId = 4;
constexpr int kTimerAbsolute = 1;  // TIMER_ABSTIME

bool known_clock(int clock) {
  // REALTIME, MONOTONIC, PROCESS_CPUTIME, THREAD_CPUTIME, BOOTTIME, REALTIME_ALARM, BOOTTIME_ALARM, TAI.
  return clock == 0 || clock == 1 || clock == 2 || clock == 3 || clock == 7 || clock == 8 || clock == 9 || clock == 11;
}

}  // namespace

std::optional<Clock::time_point> Kernel::next_timer_deadline() const {
  std::optional<Clock::time_point> next = signals_.real_timer.deadline;
  for (const PosixTimer& timer : signals_.posix_timers)
    if (timer.in_use && timer.deadline && (!next || *timer.deadline < *next)) next = timer.deadline;
  return next;
}

void Kernel::arm_timer_wakeup() {
  const std::optional<Clock::time_point> next = next_timer_deadline();
  if (!timer_wakeup_ && next) {
    timer_wakeup_ = std::make_unique<TimerWakeup>();
    // The block hook that delivers a timer's signal to a guest busy in a loop
    // is installed between runs (LinuxProcess::run): stop here, at an exact pc.
    block_hook_wanted_ = true;
    uc_emu_stop(engine_);
  }
  if (timer_wakeup_) timer_wakeup_->arm(next);
}

void Kernel::poll_timers() {
  if (cpu_timer_next_ != UINT64_MAX) poll_cpu_timers();
  if (!next_timer_deadline()) return;
  bool fired = poll_real_timer();
  const auto now = Clock::now();
  for (std::size_t id = 0; id < signals_.posix_timers.size(); ++id) {
    PosixTimer& timer = signals_.posix_timers[id];
    if (!timer.in_use || !timer.deadline || now < *timer.deadline) continue;
    fire_posix_timer(static_cast<int>(id), timer);
    fired = true;
    if (timer.interval.count() > 0) {
      *timer.deadline += std::chrono::duration_cast<Clock::duration>(timer.interval);
      while (*timer.deadline <= now) {  // expiries missed meanwhile
        *timer.deadline += std::chrono::duration_cast<Clock::duration>(timer.interval);
        ++timer.overrun;
      }
    } else {
      timer.deadline.reset();
    }
  }
  if (fired) arm_timer_wakeup();
}

std::uint64_t Kernel::guest_instructions() const {
  return instruction_counter_ ? instruction_counter_->instructions() : 0;
}

void Kernel::cpu_itimer(int which, bool arm, std::chrono::microseconds value, std::chrono::microseconds interval,
                        std::chrono::microseconds& old_remaining, std::chrono::microseconds& old_interval) {
  using std::chrono::microseconds;
  CpuTimer& timer = signals_.cpu_timers[static_cast<std::size_t>(which - 1)];
  const std::uint64_t now = guest_instructions();
  // One instruction is a nanosecond: a timer with time left shows at least 1 us.
  const auto to_us = [](std::uint64_t instructions) {
    return microseconds(static_cast<std::int64_t>((instructions + 999) / 1000));
  };
  old_remaining = timer.deadline ? to_us(timer.deadline > now ? timer.deadline - now : 1) : microseconds(0);
  old_interval = to_us(timer.interval);
  if (!arm) return;
  timer.interval = static_cast<std::uint64_t>(interval.count()) * 1000;
  timer.deadline = value.count() > 0 ? now + static_cast<std::uint64_t>(value.count()) * 1000 : 0;
  cpu_timer_next_ = UINT64_MAX;
  for (const CpuTimer& each : signals_.cpu_timers)
    if (each.deadline) cpu_timer_next_ = std::min(cpu_timer_next_, each.deadline);
  if (timer.deadline && !cpu_timers_armed_) {
    // The count starts now: the instruction counter and the block hook that
    // reads it go in between runs (LinuxProcess::run), at this exact pc.
    cpu_timers_armed_ = true;
    block_hook_wanted_ = true;
    uc_emu_stop(engine_);
  }
}

bool Kernel::poll_cpu_timers() {
  const std::uint64_t now = guest_instructions();
  if (now < cpu_timer_next_) return false;
  constexpr int kSignals[2] = {SIGVTALRM, SIGPROF};
  cpu_timer_next_ = UINT64_MAX;
  for (std::size_t which = 0; which < signals_.cpu_timers.size(); ++which) {
    CpuTimer& timer = signals_.cpu_timers[which];
    if (timer.deadline && timer.deadline <= now) {
      SignalOrigin origin;
      origin.code = kSiKernel;  // as Linux's itimer signals (SEND_SIG_PRIV)
      if (signal_action(kSignals[which]).handler != kSigIgnore) signals_.raise_shared(kSignals[which], origin);
      if (timer.interval) {
        while (timer.deadline <= now) timer.deadline += timer.interval;  // expiries missed: one signal
      } else {
        timer.deadline = 0;
      }
    }
    if (timer.deadline) cpu_timer_next_ = std::min(cpu_timer_next_, timer.deadline);
  }
  return true;
}

bool Kernel::stale_timer_signal(const SignalOrigin& origin) const {
  if (origin.code != kSiTimer || origin.from_trace) return false;
  const auto id = static_cast<std::size_t>(origin.timer_id);
  return id >= signals_.posix_timers.size() || signals_.posix_timers[id].generation != origin.timer_generation;
}

void Kernel::fire_posix_timer(int id, PosixTimer& timer) {
  if (timer.notify == PosixTimer::Notify::kNone) return;
  const int signal = timer.signal;
  GuestThread* thread = timer.notify == PosixTimer::Notify::kThread ? find_thread(timer.thread) : nullptr;
  if (timer.notify == PosixTimer::Notify::kThread && !thread) return;  // the thread is gone
  ThreadSignals& target = !thread || thread == running_ ? static_cast<ThreadSignals&>(signals_) : thread->signals;
  const bool pending = thread ? (target.pending & signal_bit(signal)) : (signals_.shared_pending & signal_bit(signal));
  if (pending) {
    ++timer.overrun;
    SignalOrigin& origin = thread ? target.origins[static_cast<std::size_t>(signal)]
                                  : signals_.shared_origins[static_cast<std::size_t>(signal)];
    if (origin.code == kSiTimer && origin.timer_id == id) origin.overrun = timer.last_overrun = timer.overrun;
    return;
  }
  const SignalAction action = signal_action(signal);
  if (action.handler == kSigIgnore) return;
  SignalOrigin origin;
  origin.code = kSiTimer;
  origin.timer_id = id;
  origin.overrun = timer.overrun;
  origin.value = timer.value;
  origin.timer_generation = timer.generation;
  timer.last_overrun = timer.overrun;
  timer.overrun = 0;
  if (thread) target.raise(signal, origin);
  else signals_.raise_shared(signal, origin);
}

std::int64_t Kernel::do_timer_create(int clock, std::uint64_t event_address, std::uint64_t id_address) {
  if (!known_clock(clock)) return -EINVAL;
  PosixTimer timer;
  timer.in_use = true;
  timer.clock = clock;
  timer.signal = SIGALRM;
  std::size_t id = 0;
  while (id < signals_.posix_timers.size() && signals_.posix_timers[id].in_use) ++id;
  if (id >= kMaxTimers) return -EAGAIN;
  timer.value = id;  // no sigevent: SIGEV_SIGNAL, SIGALRM, the timer id as the value
  if (event_address) {
    // struct sigevent: sigev_value (a pointer-sized union), sigev_signo, sigev_notify, then _tid.
    const std::size_t word = guest_word_bytes();
    std::uint8_t bytes[24] = {};
    if (!copy_in(event_address, bytes, word + 12)) return -EFAULT;
    const arch::FrameReader reader(std::span<const std::uint8_t>(bytes), arch_.little_endian);
    timer.value = reader.get(0, word);
    const int guest_signal = static_cast<int>(reader.get(word, 4));
    const int notify = static_cast<int>(reader.get(word + 4, 4));
    if (notify == kSigevNone) {
      timer.notify = PosixTimer::Notify::kNone;
    } else if (notify == kSigevSignal || notify == kSigevThreadId) {
      timer.signal = guest_signal > 0 && guest_signal <= kMaxSignal ? arch::signal_to_host(arch_, guest_signal) : 0;
      if (timer.signal == 0) return -EINVAL;
      if (notify == kSigevThreadId) {
        timer.notify = PosixTimer::Notify::kThread;
        timer.thread = static_cast<std::uint32_t>(reader.get(word + 8, 4));
        if (!find_thread(timer.thread)) return -EINVAL;
      }
    } else {
      return -EINVAL;  // SIGEV_THREAD is glibc's own: it asks the kernel for SIGEV_THREAD_ID
    }
  }
  if (!copy_out_words32(id_address, {id})) return -EFAULT;
  if (id == signals_.posix_timers.size()) {
    signals_.posix_timers.push_back(timer);
  } else {
    timer.generation = signals_.posix_timers[id].generation + 1;  // a signal of the id's last timer stays stale
    signals_.posix_timers[id] = timer;
  }
  return 0;
}

bool Kernel::copy_in_itimerspec(std::uint64_t address, bool time64, std::chrono::nanoseconds& interval,
                                std::chrono::nanoseconds& value) const {
  const std::size_t word = arch_.elf_64bit || time64 ? 8 : 4;
  std::uint8_t bytes[32] = {};
  if (!copy_in(address, bytes, 4 * word)) return false;
  const arch::FrameReader reader(std::span<const std::uint8_t>(bytes), arch_.little_endian);
  // Odd fields are tv_nsec: 32 bits on a 32-bit ABI, also in its 64-bit
  // timespec (beside padding the kernel ignores).
  auto field = [&](std::size_t index) {
    const std::uint64_t raw = reader.get(index * word, word);
    const bool narrow = word == 4 || (index % 2 == 1 && !arch_.elf_64bit);
    return narrow ? static_cast<std::int64_t>(static_cast<std::int32_t>(raw)) : static_cast<std::int64_t>(raw);
  };
  for (const std::int64_t nsec : {field(1), field(3)})
    if (nsec < 0 || nsec >= 1000000000) return false;
  interval = std::chrono::seconds(field(0)) + std::chrono::nanoseconds(field(1));
  value = std::chrono::seconds(field(2)) + std::chrono::nanoseconds(field(3));
  return true;
}

bool Kernel::copy_out_itimerspec(std::uint64_t address, bool time64, std::chrono::nanoseconds interval,
                                 std::chrono::nanoseconds value) {
  const std::size_t word = arch_.elf_64bit || time64 ? 8 : 4;
  std::uint8_t bytes[32] = {};
  arch::FrameWriter writer(std::span(bytes, 4 * word), arch_.little_endian);
  std::size_t index = 0;
  for (const std::chrono::nanoseconds time : {interval, value}) {
    const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(time);
    writer.put(index++ * word, word, static_cast<std::uint64_t>(seconds.count()));
    writer.put(index++ * word, word, static_cast<std::uint64_t>((time - seconds).count()));
  }
  return copy_out(address, bytes, 4 * word);
}

std::int64_t Kernel::do_timer_gettime(int id, std::uint64_t address, bool time64) {
  if (id < 0 || static_cast<std::size_t>(id) >= signals_.posix_timers.size() || !signals_.posix_timers[id].in_use)
    return -EINVAL;
  const PosixTimer& timer = signals_.posix_timers[static_cast<std::size_t>(id)];
  std::chrono::nanoseconds left{0};
  if (timer.deadline) left = std::max(std::chrono::nanoseconds(1), *timer.deadline - Clock::now());
  return copy_out_itimerspec(address, time64, timer.interval, left) ? 0 : -EFAULT;
}

std::int64_t Kernel::do_timer_settime(int id, int flags, std::uint64_t new_address, std::uint64_t old_address,
                                      bool time64) {
  if (id < 0 || static_cast<std::size_t>(id) >= signals_.posix_timers.size() || !signals_.posix_timers[id].in_use)
    return -EINVAL;
  std::chrono::nanoseconds interval{0}, value{0};
  if (!new_address) return -EINVAL;
  int error = 0;
  if (!copy_in_itimerspec(new_address, time64, interval, value)) error = EINVAL;
  std::uint8_t probe[1];
  if (error && !copy_in(new_address, probe, 1)) error = EFAULT;
  if (error) return -error;
  if (old_address) {
    if (const std::int64_t result = do_timer_gettime(id, old_address, time64); result != 0) return result;
  }
  PosixTimer& timer = signals_.posix_timers[static_cast<std::size_t>(id)];
  timer.interval = interval;
  timer.overrun = 0;
  ++timer.generation;
  if (value.count() == 0) {
    timer.deadline.reset();
  } else {
    if (flags & kTimerAbsolute) {  // `value` is a time on the timer's clock: how far from now
      timespec now{};
      ::clock_gettime(timer.clock == 0 || timer.clock == 8 || timer.clock == 11 ? CLOCK_REALTIME : CLOCK_MONOTONIC,
                      &now);
      value -= std::chrono::seconds(now.tv_sec) + std::chrono::nanoseconds(now.tv_nsec);
      if (value.count() <= 0) value = std::chrono::nanoseconds(1);  // already past: expires at once
    }
    timer.deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(value);
  }
  arm_timer_wakeup();
  return 0;
}

std::optional<std::int64_t> Kernel::timer_syscall(SyscallId id, const SyscallArgs& a) {
  const int timer = static_cast<int>(a[0]);
  switch (id) {
    case SyscallId::timer_create: return do_timer_create(static_cast<int>(a[0]), a[1], a[2]);
    case SyscallId::timer_settime: return do_timer_settime(timer, static_cast<int>(a[1]), a[2], a[3], false);
    case SyscallId::timer_settime64: return do_timer_settime(timer, static_cast<int>(a[1]), a[2], a[3], true);
    case SyscallId::timer_gettime: return do_timer_gettime(timer, a[1], false);
    case SyscallId::timer_gettime64: return do_timer_gettime(timer, a[1], true);
    case SyscallId::timer_getoverrun:
      if (timer < 0 || static_cast<std::size_t>(timer) >= signals_.posix_timers.size() ||
          !signals_.posix_timers[static_cast<std::size_t>(timer)].in_use)
        return -EINVAL;
      return signals_.posix_timers[static_cast<std::size_t>(timer)].last_overrun;
    case SyscallId::timer_delete:
      if (timer < 0 || static_cast<std::size_t>(timer) >= signals_.posix_timers.size() ||
          !signals_.posix_timers[static_cast<std::size_t>(timer)].in_use)
        return -EINVAL;
    {
      PosixTimer& deleted = signals_.posix_timers[static_cast<std::size_t>(timer)];
      const std::uint64_t generation = deleted.generation + 1;
      deleted = PosixTimer{};
      deleted.generation = generation;
    }
      arm_timer_wakeup();
      return 0;
    default:
      return std::nullopt;
  }
}

}  // namespace tracecorn::linux_layer
