// Role: the signal family of syscalls and signal delivery, as Linux does them
// for one thread: dispositions (rt_sigaction), the blocked mask
// (rt_sigprocmask), kill/tgkill/tkill at itself, the alternate stack, waiting
// (pause, rt_sigsuspend, rt_sigtimedwait), the interval timers (alarm,
// setitimer, getitimer: ITIMER_REAL here, the CPU-time ones in syscalls_timer.cpp),
// and delivery: at a syscall's return, after a CPU fault, or when the timer's
// wake-up stopped the engine, the lowest deliverable signal either takes its
// default action or enters the guest's handler on a frame the architecture
// lays out (arch/signal_frame.h); rt_sigreturn/sigreturn restores from it.
// Who calls it: Kernel::on_trap (emulation thread, inside Unicorn's hook) and
// LinuxProcess::run between runs. Nothing here throws past on_trap().
// Invariants: signals are kept in host numbering (SignalState); the guest's
// numbers are translated at the syscall boundary; a frame that cannot be
// written or read back kills the process with SIGSEGV, as Linux does.
#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <thread>

#include "recorder/linux/kernel.h"
#include "recorder/support/started_thread.h"

namespace tracecorn::linux_layer {

using arch::SyscallId;
using Clock = std::chrono::steady_clock;

TimerWakeup::~TimerWakeup() {
  {
    std::lock_guard lock(mutex_);
    quit_ = true;
  }
  changed_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void TimerWakeup::arm(std::optional<Clock::time_point> deadline) {
  {
    std::lock_guard lock(mutex_);
    deadline_ = deadline;
  }
  if (!thread_.joinable() && deadline) thread_ = start_thread([this] { run(); });
  changed_.notify_all();
}

void TimerWakeup::run() {
  std::unique_lock lock(mutex_);
  while (!quit_) {
    if (!deadline_) {
      changed_.wait(lock);
    } else if (std::chrono::steady_clock::now() < *deadline_) {
      changed_.wait_until(lock, *deadline_);
    } else {
      due_.store(true, std::memory_order_release);
      deadline_.reset();
    }
  }
}

namespace {

bool default_action_is_stop(int signal) {
  return signal == SIGSTOP || signal == SIGTSTP || signal == SIGTTIN || signal == SIGTTOU;
}

}  // namespace

std::size_t Kernel::sigaction_bytes() const {
  const arch::SignalAbi& abi = arch_.signal_abi;
  if (abi.sigaction_flags_first) return 4 + 4 + std::size_t{abi.sigset_bytes};
  const std::size_t word = guest_word_bytes();
  return word * (abi.has_sa_restorer ? 3 : 2) + 8;
}

std::uint64_t Kernel::read_guest_sigset(std::span<const std::uint8_t> bytes) const {
  const arch::FrameReader reader(bytes, arch_.little_endian);
  const std::uint64_t guest = arch_.elf_64bit ? reader.get(0, 8) : reader.get(0, 4) | reader.get(4, 4) << 32;
  return arch::signal_set_to_host(arch_, guest) & ~kUnblockable;
}

void Kernel::write_guest_sigset(std::span<std::uint8_t> bytes, std::uint64_t host_set) const {
  arch::FrameWriter writer(bytes, arch_.little_endian);
  const std::uint64_t guest = arch::signal_set_to_guest(arch_, host_set);
  if (arch_.elf_64bit) {
    writer.put(0, 8, guest);
  } else {
    writer.put(0, 4, guest & 0xffffffff);
    writer.put(4, 4, guest >> 32);
  }
}

std::uint64_t Kernel::fatal_by_default() {
  std::uint64_t fatal = 0;
  for (int signal = 1; signal <= kMaxSignal; ++signal)
    if (!default_action_is_ignore(signal) && !default_action_is_stop(signal)) fatal |= signal_bit(signal);
  return fatal;
}

void Kernel::note_disposition(int signal) {
  if (signal < 1 || signal > kMaxSignal) return;
  const std::uint64_t handler = signal_action(signal).handler;
  const bool fatal = handler == kSigDefault && (fatal_by_default() & signal_bit(signal));
  fatal_dispositions_ = fatal ? fatal_dispositions_ | signal_bit(signal) : fatal_dispositions_ & ~signal_bit(signal);
  const bool handled = handler > kSigIgnore;
  handled_dispositions_ =
      handled ? handled_dispositions_ | signal_bit(signal) : handled_dispositions_ & ~signal_bit(signal);
}

SignalAction Kernel::signal_action(int signal) const {
  const auto* record = reinterpret_cast<const std::uint8_t*>(signals_.raw_actions[signal]);
  const arch::FrameReader reader(std::span(record, sizeof signals_.raw_actions[signal]), arch_.little_endian);
  const std::size_t word = guest_word_bytes();
  SignalAction action;
  if (arch_.signal_abi.sigaction_flags_first) {
    action.flags = reader.get(0, 4);
    action.handler = reader.get(4, word);
    action.mask = read_guest_sigset(reader.bytes(4 + word, 8));
    return action;
  }
  action.handler = reader.get(0, word);
  action.flags = reader.get(word, word);
  std::size_t mask_at = 2 * word;
  if (arch_.signal_abi.has_sa_restorer) {
    action.restorer = reader.get(2 * word, word);
    mask_at += word;
  }
  action.mask = read_guest_sigset(reader.bytes(mask_at, 8));
  return action;
}

std::int64_t Kernel::do_rt_sigaction(int guest_signal, std::uint64_t action, std::uint64_t old_action,
                                     std::uint64_t size) {
  // Linux's _NSIG is the sigset's bits: 64, 128 on mips.
  const auto signals = static_cast<int>(8 * arch_.signal_abi.sigset_bytes);
  if (size != arch_.signal_abi.sigset_bytes || guest_signal < 1 || guest_signal > signals) return -EINVAL;
  // Dispositions are kept by host signal number.
  const int signal = guest_signal > kMaxSignal ? 0 : arch::signal_to_host(arch_, guest_signal);
  if (signal == 0) return do_rt_sigaction_without_host_signal(guest_signal, action, old_action);
  if (action && (signal == SIGKILL || signal == SIGSTOP)) return -EINVAL;
  const std::size_t record = sigaction_bytes();
  static_assert(sizeof signals_.raw_actions[0] >= 4 + 4 + 16);
  std::uint64_t incoming[4] = {};
  if (action && !copy_in(action, incoming, record)) return -EFAULT;
  if (old_action && !copy_out(old_action, signals_.raw_actions[signal], record)) return -EFAULT;
  if (!action) return 0;
  std::memcpy(signals_.raw_actions[signal], incoming, sizeof incoming);
  note_disposition(signal);
  // Setting SIG_IGN, or SIG_DFL for a signal whose default is to ignore it,
  // discards it if pending (POSIX; kernel/signal.c do_sigaction).
  const SignalAction now = signal_action(signal);
  if (now.handler == kSigIgnore || (now.handler == kSigDefault && default_action_is_ignore(signal)))
    signals_.discard(signal);
  return 0;
}

std::int64_t Kernel::do_rt_sigaction_without_host_signal(int guest_signal, std::uint64_t action,
                                                         std::uint64_t old_action) {
  // A signal no host signal stands for (mips' SIGEMT, and its real-time
  // signals 65 to 128): nothing here raises it (kill refuses it), so its
  // disposition is only kept, and read back as it was set (Go's runtime
  // reads and sets every signal's).
  auto& record = actions_without_host_signal_[guest_signal];
  const std::size_t bytes = sigaction_bytes();
  std::array<std::uint64_t, 4> incoming{};
  if (action && !copy_in(action, incoming.data(), bytes)) return -EFAULT;
  if (old_action && !copy_out(old_action, record.data(), bytes)) return -EFAULT;
  if (action) record = incoming;
  return 0;
}

std::int64_t Kernel::do_rt_sigprocmask(int how, std::uint64_t set, std::uint64_t old_set, std::uint64_t size) {
  if (size != arch_.signal_abi.sigset_bytes) return -EINVAL;
  // Signals 1-64 are kept (the first 8 bytes); on mips the second half
  // (signals 65-128) reads as 0 and is not kept.
  std::uint8_t incoming_bytes[16] = {}, old_bytes[16] = {};
  if (set && !copy_in(set, incoming_bytes, size)) return -EFAULT;
  write_guest_sigset(std::span(old_bytes, 8), signals_.blocked);
  if (old_set && !copy_out(old_set, old_bytes, size)) return -EFAULT;
  if (!set) return 0;
  const std::uint64_t incoming = read_guest_sigset(std::span(incoming_bytes, 8));
  const int block = arch_.signal_abi.sig_block;
  if (how == block) signals_.blocked |= incoming;
  else if (how == block + 1) signals_.blocked &= ~incoming;
  else if (how == block + 2) signals_.blocked = incoming;
  else return -EINVAL;
  signals_.blocked &= ~kUnblockable;
  return 0;  // signals now unblocked are delivered as the syscall returns
}

std::int64_t Kernel::do_send_signal(int guest_signal, int code, GuestThread* thread, std::uint64_t value) {
  if (guest_signal < 0 || guest_signal > kMaxSignal) return -EINVAL;
  if (guest_signal == 0) return 0;
  // From here on signals are the host's numbers (mips' SIGUSR1 16 is 10).
  const int signal = arch::signal_to_host(arch_, guest_signal);
  if (signal == 0) return -EINVAL;  // no host counterpart (mips' SIGEMT): not supported
  const SignalAction action = signal_action(signal);
  const bool ignored = action.handler == kSigIgnore || (action.handler == kSigDefault && default_action_is_ignore(signal));
  ThreadSignals& target = !thread || thread == running_ ? signals_ : thread->signals;
  if (ignored && !(target.blocked & signal_bit(signal))) return 0;  // discarded at once (sig_ignored)
  SignalOrigin origin;
  origin.code = code;
  origin.pid = static_cast<std::uint64_t>(::getpid());
  origin.uid = ::getuid();
  origin.value = value;
  if (thread) target.raise(signal, origin);
  else signals_.raise_shared(signal, origin);
  return 0;
}

std::int64_t Kernel::do_sigqueueinfo(std::int64_t pid, std::int64_t thread, int guest_signal, std::uint64_t info_address) {
  std::uint8_t info[arch::kSiginfoBytes] = {};
  if (!copy_in(info_address, info, sizeof info)) return -EFAULT;
  const arch::FrameReader reader(std::span(info, sizeof info), arch_.little_endian);
  const auto code = static_cast<std::int32_t>(reader.get(arch_.signal_abi.siginfo_code_before_errno ? 4 : 8, 4));
  const std::size_t word = guest_word_bytes();
  const std::uint64_t value = reader.get((arch_.elf_64bit ? 16 : 12) + 8, word);
  const std::int64_t own_pid = ::getpid();
  if (pid == own_pid) {
    GuestThread* target = thread < 0 ? nullptr : find_thread(thread);
    if (thread >= 0 && !target) return -ESRCH;
    return do_send_signal(guest_signal, code, target, value);
  }
  // Another process: as Linux, only codes a process may claim (negative, not SI_TKILL).
  if (code >= 0 || code == kSiTkill) return -EPERM;
  if (thread >= 0 || !host_process_descends_from(static_cast<std::uint64_t>(pid), tree_root_pid_)) return -ESRCH;
  const int signal = arch::signal_to_host(arch_, guest_signal);
  if (guest_signal < 0 || guest_signal > kMaxSignal || (guest_signal && !signal)) return -EINVAL;
  sigval host_value{};
  host_value.sival_ptr = reinterpret_cast<void*>(static_cast<std::uintptr_t>(value));
  return ::sigqueue(static_cast<pid_t>(pid), signal, host_value) == 0 ? 0 : -errno;
}

std::int64_t Kernel::do_sigaltstack(std::uint64_t new_stack, std::uint64_t old_stack) {
  const bool is64 = arch_.elf_64bit;
  const std::size_t word = is64 ? 8 : 4;
  const std::size_t flags_at = arch_.signal_abi.stack_size_before_flags ? 2 * word : word;
  const std::size_t size_at = arch_.signal_abi.stack_size_before_flags ? word : (is64 ? 16 : 8);
  const std::size_t bytes = is64 ? 24 : 12;
  std::uint64_t sp = 0;
  uc_reg_read(engine_, arch_.sp_reg, &sp);
  const bool on_stack = signals_.on_altstack(sp);
  if (old_stack) {
    std::uint8_t out[24] = {};
    arch::FrameWriter writer(std::span(out, bytes), arch_.little_endian);
    writer.put(0, word, signals_.altstack.sp);
    writer.put(flags_at, 4, on_stack ? 1 : (signals_.altstack.flags & 2));
    writer.put(size_at, word, signals_.altstack.size);
    if (!copy_out(old_stack, out, bytes)) return -EFAULT;
  }
  if (!new_stack) return 0;
  std::uint8_t in[24] = {};
  if (!copy_in(new_stack, in, bytes)) return -EFAULT;
  if (on_stack) return -EPERM;
  const arch::FrameReader reader(std::span(in, bytes), arch_.little_endian);
  const std::uint32_t flags = static_cast<std::uint32_t>(reader.get(flags_at, 4));
  constexpr std::uint32_t kSsOnStack = 1, kSsDisable = 2, kSsAutoDisarm = 1u << 31;
  const std::uint32_t mode = flags & ~kSsAutoDisarm;
  if (mode != 0 && mode != kSsOnStack && mode != kSsDisable) return -EINVAL;
  if (mode == kSsDisable) {
    signals_.altstack = {0, kSsDisable, 0};
    return 0;
  }
  const std::uint64_t size = reader.get(size_at, word);
  if (size < arch_.signal_abi.min_signal_stack) return -ENOMEM;
  signals_.altstack = {reader.get(0, word), 0, size};
  return 0;
}

bool Kernel::poll_real_timer() {
  RealTimer& timer = signals_.real_timer;
  if (!timer.deadline) return false;
  const auto now = Clock::now();
  if (now < *timer.deadline) return false;
  SignalOrigin origin;
  origin.code = kSiKernel;
  const SignalAction action = signal_action(SIGALRM);
  if (action.handler != kSigIgnore) signals_.raise_shared(SIGALRM, origin);
  if (timer.interval.count() > 0) {
    while (*timer.deadline <= now) *timer.deadline += timer.interval;
  } else {
    timer.deadline.reset();
  }
  return true;
}

std::chrono::microseconds Kernel::arm_real_timer(std::chrono::microseconds value, std::chrono::microseconds interval,
                                                 std::chrono::microseconds* old_interval) {
  RealTimer& timer = signals_.real_timer;
  const auto now = Clock::now();
  std::chrono::microseconds remaining{0};
  if (timer.deadline && *timer.deadline > now)
    remaining = std::chrono::ceil<std::chrono::microseconds>(*timer.deadline - now);
  if (old_interval) *old_interval = timer.interval;
  timer.interval = interval;
  if (value.count() > 0) timer.deadline = now + value;
  else timer.deadline.reset();
  arm_timer_wakeup();
  return remaining;
}

std::int64_t Kernel::do_itimer(SyscallId id, const SyscallArgs& a) {
  using std::chrono::microseconds;
  using std::chrono::seconds;
  if (id == SyscallId::alarm) {
    const microseconds remaining = arm_real_timer(seconds(static_cast<std::uint32_t>(a[0])), microseconds(0), nullptr);
    // Whole seconds, rounded to nearest, and never 0 for a timer still running (kernel/time/itimer.c).
    if (remaining.count() == 0) return 0;
    const auto whole = (remaining.count() + 500000) / 1000000;
    return whole ? whole : 1;
  }
  const int which = static_cast<int>(a[0]);
  const std::size_t word = guest_word_bytes();
  const std::uint64_t new_value = id == SyscallId::setitimer ? a[1] : 0;
  const std::uint64_t old_value = id == SyscallId::setitimer ? a[2] : a[1];
  if (which < 0 || which > 2) return -EINVAL;
  std::uint8_t bytes[32] = {};
  const std::size_t size = 4 * word;  // struct itimerval: it_interval {sec, usec}, it_value {sec, usec}
  auto as_time = [&](std::size_t at) {
    const arch::FrameReader reader(std::span(bytes, size), arch_.little_endian);
    const auto sec = static_cast<std::int64_t>(reader.get(at, word));
    const auto usec = static_cast<std::int64_t>(reader.get(at + word, word));
    return std::pair(sec, usec);
  };
  microseconds value{0}, interval{0};
  if (new_value) {
    if (!copy_in(new_value, bytes, size)) return -EFAULT;
    const auto [interval_sec, interval_usec] = as_time(0);
    const auto [value_sec, value_usec] = as_time(2 * word);
    if (value_usec < 0 || value_usec >= 1000000 || interval_usec < 0 || interval_usec >= 1000000) return -EINVAL;
    value = seconds(value_sec) + microseconds(value_usec);
    interval = seconds(interval_sec) + microseconds(interval_usec);
  }
  microseconds old_interval{0}, remaining{0};
  if (which != 0) {
    cpu_itimer(which, new_value != 0, value, interval, remaining, old_interval);
  } else if (new_value) {
    remaining = arm_real_timer(value, interval, &old_interval);
  } else {
    const auto now = Clock::now();
    if (signals_.real_timer.deadline && *signals_.real_timer.deadline > now)
      remaining = std::chrono::ceil<microseconds>(*signals_.real_timer.deadline - now);
    old_interval = signals_.real_timer.interval;
  }
  if (!old_value) return 0;
  std::uint8_t out[32] = {};
  arch::FrameWriter writer(std::span(out, size), arch_.little_endian);
  writer.put(0, word, static_cast<std::uint64_t>(old_interval.count() / 1000000));
  writer.put(word, word, static_cast<std::uint64_t>(old_interval.count() % 1000000));
  writer.put(2 * word, word, static_cast<std::uint64_t>(remaining.count() / 1000000));
  writer.put(3 * word, word, static_cast<std::uint64_t>(remaining.count() % 1000000));
  return copy_out(old_value, out, size) ? 0 : -EFAULT;
}

Kernel::SignalWait Kernel::wait_for_signal(std::uint64_t wanted, std::optional<Clock::time_point> limit) {
  if (running_->retry_deadline) limit = running_->retry_deadline;
  while (true) {
    take_host_signals();
    poll_timers();
    if (signals_.all_pending() & wanted) return SignalWait::kPending;
    if (stop_requested_.load(std::memory_order_relaxed)) return SignalWait::kStopped;
    const auto now = Clock::now();
    if (limit && now >= *limit) return SignalWait::kTimedOut;
    if (live_threads() > 1) {  // another thread may send it: this one waits aside
      ThreadWait wait;
      wait.kind = ThreadWait::Kind::kSignal;
      wait.wanted_signals = wanted;
      wait.deadline = limit;
      wait.retry = true;
      park_ = std::move(wait);
      return SignalWait::kWouldBlock;
    }
    // Sleep in short slices so that tracecorn's own stop (SIGINT, SIGTERM) is seen.
    auto until = now + std::chrono::milliseconds(50);
    if (const auto due = next_timer_deadline()) until = std::min(until, *due);
    if (limit) until = std::min(until, *limit);
    std::this_thread::sleep_until(until);
  }
}

std::int64_t Kernel::do_rt_sigsuspend(std::uint64_t mask_address, std::uint64_t size) {
  if (size != arch_.signal_abi.sigset_bytes) return -EINVAL;
  std::uint8_t bytes[16] = {};
  if (!copy_in(mask_address, bytes, size)) return -EFAULT;
  const std::uint64_t mask = read_guest_sigset(std::span(bytes, 8));
  // The mask changes only once the wait is over (a parked thread runs the call again).
  if (wait_for_signal(~mask, std::nullopt) == SignalWait::kWouldBlock) return kBlockAndRetry;
  signals_.mask_after_handler = signals_.blocked;
  signals_.blocked = mask;
  return -EINTR;
}

std::int64_t Kernel::do_rt_sigtimedwait(const SyscallArgs& a, bool time64) {
  if (a[3] != arch_.signal_abi.sigset_bytes) return -EINVAL;
  std::uint8_t bytes[16] = {};
  if (!copy_in(a[0], bytes, a[3])) return -EFAULT;
  const std::uint64_t wanted = read_guest_sigset(std::span(bytes, 8));
  std::optional<Clock::time_point> limit;
  if (a[2]) {
    const bool wide = arch_.elf_64bit || time64;
    std::uint8_t time_bytes[16] = {};
    if (!copy_in(a[2], time_bytes, wide ? 16 : 8)) return -EFAULT;
    const arch::FrameReader reader(std::span(time_bytes, 16), arch_.little_endian);
    const auto sec = static_cast<std::int64_t>(wide ? reader.get(0, 8) : reader.get(0, 4));
    // A 32-bit ABI's 64-bit timespec has a 32-bit tv_nsec beside padding the kernel ignores.
    const std::uint64_t raw_nsec = wide ? reader.get(8, 8) : reader.get(4, 4);
    const auto nsec = arch_.elf_64bit ? static_cast<std::int64_t>(raw_nsec)
                                      : static_cast<std::int64_t>(static_cast<std::int32_t>(raw_nsec));
    if (sec < 0 || nsec < 0 || nsec >= 1000000000) return -EINVAL;
    limit = Clock::now() + std::chrono::seconds(sec) + std::chrono::nanoseconds(nsec);
  }
  switch (wait_for_signal(wanted, limit)) {
    case SignalWait::kPending: break;
    case SignalWait::kWouldBlock: return kBlockAndRetry;
    case SignalWait::kStopped: return -EINTR;
    case SignalWait::kTimedOut: return -EAGAIN;
  }
  const int signal = __builtin_ctzll(signals_.all_pending() & wanted) + 1;
  const SignalOrigin origin = signals_.take(signal);
  if (a[1]) {
    const auto info = build_siginfo(signal, origin);
    if (!copy_out(a[1], info.data(), info.size())) return -EFAULT;
  }
  return arch::signal_to_guest(arch_, signal);
}

std::optional<std::int64_t> Kernel::signal_syscall(SyscallId id, const SyscallArgs& a) {
  const std::int64_t own_pid = ::getpid();
  switch (id) {
    case SyscallId::kill:
      if (static_cast<std::int64_t>(a[0]) == own_pid) return do_send_signal(static_cast<int>(a[1]), kSiUser, nullptr);
      // Other processes, groups, -1: those of the guest's own tree (syscalls_process_tree.cpp).
      return do_kill_processes(static_cast<std::int64_t>(static_cast<std::int32_t>(a[0])), static_cast<int>(a[1]));
    case SyscallId::tgkill: case SyscallId::tkill: {
      const bool with_group = id == SyscallId::tgkill;
      const std::int32_t tid = static_cast<std::int32_t>(a[with_group ? 1 : 0]);  // pid_t, as Linux reads them
      if (tid <= 0 || (with_group && static_cast<std::int32_t>(a[0]) <= 0)) return -EINVAL;
      if (with_group && static_cast<std::int32_t>(a[0]) != own_pid) return -ESRCH;
      GuestThread* target = find_thread(tid);
      if (!target) return -ESRCH;
      return do_send_signal(static_cast<int>(a[with_group ? 2 : 1]), kSiTkill, target);
    }
    case SyscallId::rt_sigqueueinfo:
      return do_sigqueueinfo(static_cast<std::int32_t>(a[0]), -1, static_cast<int>(a[1]), a[2]);
    case SyscallId::rt_tgsigqueueinfo:
      return do_sigqueueinfo(static_cast<std::int32_t>(a[0]), static_cast<std::int32_t>(a[1]), static_cast<int>(a[2]), a[3]);
    case SyscallId::rt_sigaction: return do_rt_sigaction(static_cast<int>(a[0]), a[1], a[2], a[3]);
    case SyscallId::rt_sigprocmask: return do_rt_sigprocmask(static_cast<int>(a[0]), a[1], a[2], a[3]);
    case SyscallId::sigaltstack: return do_sigaltstack(a[0], a[1]);
    case SyscallId::rt_sigreturn: case SyscallId::sigreturn: return do_sigreturn(id == SyscallId::rt_sigreturn);
    case SyscallId::rt_sigpending: {
      if (a[1] > arch_.signal_abi.sigset_bytes) return -EINVAL;
      std::uint8_t bytes[16] = {};
      write_guest_sigset(std::span(bytes, 8), signals_.all_pending() & signals_.blocked);
      return copy_out(a[0], bytes, a[1]) ? 0 : -EFAULT;
    }
    case SyscallId::rt_sigsuspend: return do_rt_sigsuspend(a[0], a[1]);
    case SyscallId::rt_sigtimedwait: return do_rt_sigtimedwait(a, false);
    case SyscallId::rt_sigtimedwait_time64: return do_rt_sigtimedwait(a, true);
    case SyscallId::pause:
      return wait_for_signal(~signals_.blocked, std::nullopt) == SignalWait::kWouldBlock ? kBlockAndRetry : -EINTR;
    case SyscallId::alarm: case SyscallId::setitimer: case SyscallId::getitimer: return do_itimer(id, a);
    default:
      return std::nullopt;
  }
}

std::array<std::uint8_t, arch::kSiginfoBytes> Kernel::build_siginfo(int signal, const SignalOrigin& origin) const {
  std::array<std::uint8_t, arch::kSiginfoBytes> info{};
  arch::FrameWriter writer(info, arch_.little_endian);
  const bool swapped = arch_.signal_abi.siginfo_code_before_errno;
  writer.put(0, 4, static_cast<std::uint64_t>(arch::signal_to_guest(arch_, signal)));
  const int code = origin.code == kSiTimer ? arch_.signal_abi.si_timer_code : origin.code;
  writer.put(swapped ? 4 : 8, 4, static_cast<std::uint32_t>(code));
  // The union starts after three ints, aligned for a pointer.
  const std::size_t word = guest_word_bytes();
  const std::size_t fields = arch_.elf_64bit ? 16 : 12;
  if (origin.is_fault) {
    writer.put(fields, word, origin.address);
  } else if (origin.code == kSiTimer) {  // _timer: si_tid, si_overrun, si_value (a pointer-sized union)
    writer.put(fields, 4, static_cast<std::uint32_t>(origin.timer_id));
    writer.put(fields + 4, 4, static_cast<std::uint32_t>(origin.overrun));
    writer.put(fields + 8, word, origin.value);
  } else if (signal == SIGCHLD && origin.code >= CLD_EXITED && origin.code <= CLD_CONTINUED) {
    // _sigchld: si_pid, si_uid, si_status (a signal in the guest's numbering but for an exit code:
    // CLD_CONTINUED's is SIGCONT).
    writer.put(fields, 4, origin.pid);
    writer.put(fields + 4, 4, origin.uid);
    const int status =
        origin.code != CLD_EXITED ? arch::signal_to_guest(arch_, origin.child_status) : origin.child_status;
    writer.put(fields + 8, 4, static_cast<std::uint32_t>(status));
  } else if (origin.code == kSiUser || origin.code == kSiTkill || origin.code == kSiQueue) {
    writer.put(fields, 4, origin.pid);
    writer.put(fields + 4, 4, origin.uid);
    if (origin.code == kSiQueue) writer.put(fields + 8, word, origin.value);  // si_value
  }
  return info;
}

std::optional<std::uint64_t> Kernel::deliver_pending(std::uint64_t resume_pc) {
  std::optional<std::uint64_t> entered;
  while (const int signal = signals_.next_deliverable()) {
    const SignalOrigin origin = signals_.take(signal);
    if (stale_timer_signal(origin)) continue;
    const SignalAction action = signal_action(signal);
    if (action.handler == kSigIgnore && signal != SIGKILL && signal != SIGSTOP) continue;
    if (action.handler == kSigDefault || signal == SIGKILL || signal == SIGSTOP || !cpu_.has_signal_frames()) {
      if (action.handler > kSigIgnore)
        note_once("signal " + std::to_string(signal) + " has a handler, but tracecorn has no signal frames for " +
                  std::string(arch_.name) + " yet: applying the default action");
      if (!take_default_action(signal, origin)) return std::nullopt;
      continue;
    }
    if (!enter_handler(signal, action, origin, resume_pc)) return std::nullopt;
    resume_pc = action.handler;
    entered = action.handler;
  }
  if (signals_.mask_after_handler) {  // rt_sigsuspend woken by a signal with no handler
    signals_.blocked = *signals_.mask_after_handler;
    signals_.mask_after_handler.reset();
  }
  return entered;
}

bool Kernel::take_default_action(int signal, const SignalOrigin& origin) {
  if (default_action_is_ignore(signal)) return true;
  if (default_action_is_stop(signal)) {
    stop_process(signal);
    return true;
  }
  std::string how = origin.is_fault ? "" : " (raised by the program)";
  if (origin.code == kSiKernel && signal == SIGALRM) how = " (its timer expired)";
  end_with_signal(signal, std::string("killed by SIG") + sigabbrev_np(signal) + how);
  return false;
}

void Kernel::stop_process(int signal) {
  // Replay re-runs a trace alone, and an embedder's process is its own: no
  // parent there would continue it.
  if (source_ || config_.relaunch_command.empty()) {
    note_once(std::string("SIG") + sigabbrev_np(signal) +
              ": the process is not stopped here (a replay or an embedding)");
    return;
  }
  // The host stops this whole tracecorn process with the same signal, as
  // Linux stops the guest's threads: its parent's wait sees WIFSTOPPED and
  // the signal, and SIGCONT makes it go on from here. (Its own streams only,
  // never fflush(nullptr): a forked child still holds its parent's trace
  // file, whose buffer would land in the parent's trace.)
  std::fflush(stdout);
  std::fflush(stderr);
  if (observer_) observer_->on_process_stopping();
  struct sigaction default_action {}, previous_action {};
  default_action.sa_handler = SIG_DFL;
  ::sigaction(signal, &default_action, &previous_action);
  sigset_t just_this, previous_mask;
  sigemptyset(&just_this);
  sigaddset(&just_this, signal);
  ::pthread_sigmask(SIG_UNBLOCK, &just_this, &previous_mask);
  ::raise(signal);  // (this thread: taken at once, as nothing blocks it)
  ::pthread_sigmask(SIG_SETMASK, &previous_mask, nullptr);
  ::sigaction(signal, &previous_action, nullptr);
}

bool Kernel::map_sigreturn_trampoline() {
  if (trampoline_ || arch_.signal_abi.sigreturn_trampoline.empty()) return true;
  // One read-only, executable page (the kernel's vDSO sigreturn, tracecorn's own code).
  const std::optional<std::uint64_t> at = memory_.find_free(4096);
  if (!at || !memory_.map(*at, 4096, PROT_READ | PROT_EXEC, "[sigreturn]")) return false;
  if (!memory_.write(*at, arch_.signal_abi.sigreturn_trampoline)) return false;
  trampoline_ = *at;
  return true;
}

bool Kernel::enter_handler(int signal, const SignalAction& action, const SignalOrigin& origin,
                           std::uint64_t resume_pc) {
  arch::SignalFrameRequest request;
  request.guest_signal = arch::signal_to_guest(arch_, signal);
  request.handler = action.handler;
  request.guest_flags = action.flags;
  request.return_to_trampoline = !(arch_.signal_abi.has_sa_restorer && (action.flags & kSaRestorer));
  request.return_address = request.return_to_trampoline ? sigreturn_trampoline() : action.restorer;
  request.saved_mask = arch::signal_set_to_guest(arch_, signals_.mask_after_handler.value_or(signals_.blocked));
  signals_.mask_after_handler.reset();
  std::uint64_t sp = 0;
  uc_reg_read(engine_, arch_.sp_reg, &sp);
  request.stack_top = sp;
  request.saved_altstack = signals_.altstack;
  if (signals_.on_altstack(sp)) request.saved_altstack.flags = 1;  // SS_ONSTACK
  if ((action.flags & kSaOnStack) && !(signals_.altstack.flags & 2) && !signals_.on_altstack(sp)) {
    request.stack_top = signals_.altstack.sp + signals_.altstack.size;
    request.on_alternate_stack = true;
  }
  request.siginfo = build_siginfo(signal, origin);
  request.resume_pc = resume_pc;
  request.fault_address = origin.is_fault ? origin.address : 0;
  arch::SignalFrame frame = cpu_.build_signal_frame(request);
  if (origin.recorded_frame && origin.recorded_frame_address == frame.address &&
      origin.recorded_frame->size() == frame.bytes.size())
    frame.bytes = *origin.recorded_frame;
  if (frame.bytes.empty() || !memory_.write(frame.address, frame.bytes)) {
    // The frame does not fit (a stack overflow with no alternate stack): Linux forces SIGSEGV.
    end_with_signal(SIGSEGV, std::string("killed by SIGSEGV: no room for the SIG") + sigabbrev_np(signal) +
                                 " signal frame below sp " + std::to_string(sp));
    return false;
  }
  cpu_.enter_signal_handler(request, frame);
  if (observer_) {
    observer_->on_registers_changed();
    events::SignalEvent delivered;
    delivered.signal = static_cast<std::uint32_t>(signal);
    delivered.code = origin.code;
    delivered.sender_pid = origin.is_fault ? 0 : origin.pid;
    delivered.fault_address = events::GuestAddress{request.fault_address};
    delivered.interrupted_pc = events::GuestAddress{resume_pc};
    delivered.handler = events::GuestAddress{action.handler};
    delivered.frame = events::GuestAddress{frame.address};
    delivered.fault = origin.is_fault;
    const events::MemoryWriteEffect frame_write{events::GuestAddress{frame.address}, frame.bytes};
    delivered.frame_writes = std::span(&frame_write, 1);
    observer_->on_signal_delivered(delivered);
  }
  signals_.blocked |= action.mask;
  if (!(action.flags & kSaNoDefer)) signals_.blocked |= signal_bit(signal);
  signals_.blocked &= ~kUnblockable;
  if (action.flags & kSaResetHand) {
    std::memset(signals_.raw_actions[signal], 0, sizeof signals_.raw_actions[signal]);
    note_disposition(signal);
  }
  return true;
}

std::int64_t Kernel::do_sigreturn(bool rt) {
  const std::optional<arch::SignalReturn> restored = cpu_.return_from_signal(rt);
  if (!restored) {
    end_with_signal(SIGSEGV, "killed by SIGSEGV: bad signal frame at sigreturn");
    return 0;
  }
  signals_.blocked = read_guest_sigset_value(restored->saved_mask);
  if (restored->has_altstack) {
    const arch::SignalStack& stack = restored->altstack;
    if (stack.flags & 2) signals_.altstack = {0, 2, 0};
    else if (stack.size >= arch_.signal_abi.min_signal_stack) signals_.altstack = {stack.sp, 0, stack.size};
  }
  sigreturn_pc_ = restored->pc;
  if (observer_) observer_->on_registers_changed();
  return 0;
}

std::uint64_t Kernel::read_guest_sigset_value(std::uint64_t guest_set) const {
  return arch::signal_set_to_host(arch_, guest_set) & ~kUnblockable;
}

std::optional<std::uint64_t> Kernel::deliver_fault(int signal, int code, std::uint64_t address,
                                                   std::uint64_t pc) noexcept {
  try {
    if (!cpu_.has_signal_frames()) return std::nullopt;
    const SignalAction action = signal_action(signal);
    // A fault that is blocked or ignored kills the process (force_sig_fault).
    if (action.handler <= kSigIgnore || (signals_.blocked & signal_bit(signal))) return std::nullopt;
    SignalOrigin origin;
    origin.is_fault = true;
    origin.address = address;
    origin.code = code;
    signals_.raise(signal, origin);
    signals_.blocked &= ~signal_bit(signal);
    return deliver_pending(pc);
  } catch (...) {
    return std::nullopt;
  }
}

void Kernel::set_observer(ProcessObserver* observer) {
  block_interrupts_.store(nullptr, std::memory_order_release);  // (the watcher may be asking the old one)
  observer_ = observer;
  memory_.set_observer(observer);
  // A recording's block hook delivers another process's signal to a guest
  // busy in a loop (on_interrupted_block): no stop, no hook of the kernel's.
  if (observer && observer->take_block_interrupts([this](std::uint64_t address) { on_interrupted_block(address); }))
    block_interrupts_.store(observer, std::memory_order_release);
}

void Kernel::on_interrupted_block(std::uint64_t address) noexcept {
  try {
    // Only what comes now: a signal already taken (by a wait, or by the
    // scheduler for a thread that runs its signal wait again) is delivered
    // where it was taken.
    if (take_host_signals()) (void)deliver_at_block_start(address);
  } catch (...) {
    end_with_signal(SIGSYS, "internal error delivering a signal");
  }
}

bool Kernel::deliver_at_block_start(std::uint64_t address) {
  // At a block's start every register is the interrupted code's own.
  if (!signals_.next_deliverable()) return false;
  const std::optional<std::uint64_t> handler = deliver_pending(address);
  if (!handler) return false;
  std::uint64_t pc = *handler;
  uc_reg_write(engine_, arch_.pc_reg, &pc);  // Unicorn leaves the block and goes on there
  return true;
}

void Kernel::on_block(std::uint64_t address) noexcept {
  const bool timer_due = timer_wakeup_ && timer_wakeup_->due();
  const bool cpu_timer_due = instruction_counter_ && guest_instructions() >= cpu_timer_next_;
  const bool quantum_over = preemption_ && --quantum_left_ == 0;
  const bool stop_here = fatal_signal_stop_.load(std::memory_order_relaxed) ||
                         (fatal_stops_at_blocks_.load(std::memory_order_relaxed) &&
                          stop_requested_.load(std::memory_order_relaxed));
  const bool host_signal_due = host_signal_due_.load(std::memory_order_relaxed);
  if (!timer_due && !cpu_timer_due && !quantum_over && !stop_here && !host_signal_due) [[likely]]
    return;
  if (stop_here) {  // (post_host_signal, request_stop: the run ends here, before the block's first instruction)
    if (quantum_over) quantum_left_ = 1;  // (should the run go on: the switch is at the next block)
    // The pc Unicorn leaves after a stop is the last one a hook synced (the
    // previous block's last instruction), and a pc written in a hook makes it
    // go on there: the run sets the block's start after it ended
    // (take_block_stop_pc), for the recorder's stop record to end the block there.
    block_stop_pc_ = address;
    if (observer_) observer_->on_block_not_run(address);
    uc_emu_stop(engine_);
    return;
  }
  try {
    // (post_host_signal: another process's signal, for a handler; only what
    // comes now, see on_interrupted_block.)
    bool took_host_signals = false;
    if (host_signal_due) {
      host_signal_due_.store(false, std::memory_order_relaxed);
      took_host_signals = take_host_signals();
    }
    if (timer_due || cpu_timer_due || took_host_signals) {
      if (timer_due) timer_wakeup_->take_due();
      poll_timers();
      if (deliver_at_block_start(address)) {
        if (quantum_over) quantum_left_ = 1;  // the switch waits for the handler's first block
        return;
      }
    }
    if (quantum_over) {
      quantum_left_ = next_quantum();
      preempt(address);
    }
  } catch (...) {
    end_with_signal(SIGSYS, "internal error delivering a signal");
  }
}

}  // namespace tracecorn::linux_layer
