// Role: guest threads and their scheduler: clone/clone3 with the thread
// flags, thread exit (clear-child-tid and its futex wake), gettid,
// set_tid_address, set_robust_list, futexes (wait, wake, requeue, wake-op,
// bitsets, timeouts), sched_yield, and the switches between threads: at a
// blocking point (a futex wait, a host wait that would block, sched_yield,
// exit) inside the syscall hook, and by preemption after a quantum counted
// in guest blocks (the block hook, installed when the second thread starts).
// One Unicorn engine runs every thread; a switch saves the running thread's
// registers in its Unicorn context and restores the next one's, so the
// interleaving depends only on the program and its inputs, never on host time
// (host I/O readiness and timers aside, which a trace records).
// Who calls it: Kernel::on_trap and Kernel::on_block (emulation thread,
// inside Unicorn's hooks). Nothing here throws past them.
// Invariants: see threads.h; a process with one thread never switches and
// never pays for the block hook.
#include <linux/futex.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <thread>
#include <vector>

#include "recorder/linux/kernel.h"
#include "recorder/linux/syscall_helpers.h"

namespace tracecorn::linux_layer {

using arch::SyscallId;
using Clock = std::chrono::steady_clock;

void Kernel::start_thread_table() {
  auto main_thread = std::make_unique<GuestThread>();
  thread_id_base_ = config_.main_thread_id.value_or(static_cast<std::uint32_t>(::getpid()));
  main_thread->tid = thread_id_base_;
  running_ = main_thread.get();
  threads_.push_back(std::move(main_thread));
}

GuestThread* Kernel::find_thread(std::int64_t tid) {
  for (auto& thread : threads_)
    if (thread->tid == tid && thread->state != GuestThread::State::kExited) return thread.get();
  return nullptr;
}

std::size_t Kernel::live_threads() const {
  return static_cast<std::size_t>(std::count_if(threads_.begin(), threads_.end(), [](const auto& thread) {
    return thread->state != GuestThread::State::kExited;
  }));
}

std::int64_t Kernel::do_clone(arch::SyscallId id, std::uint64_t flags, std::uint64_t stack, std::uint64_t parent_tid,
                              std::uint64_t child_tid, std::uint64_t tls) {
  constexpr std::uint64_t kThreadFlags = kCloneVm | kCloneFs | kCloneFiles | kCloneSighand | kCloneThread;
  // copy_process's refusals: a thread shares the signal handlers, which need the memory.
  if ((flags & kCloneThread) && !(flags & kCloneSighand)) return -EINVAL;
  if ((flags & kCloneSighand) && !(flags & kCloneVm)) return -EINVAL;
  // Without the thread flags: a new process (fork, vfork, posix_spawn).
  if ((flags & kThreadFlags) != kThreadFlags) return do_fork(id, flags, stack, parent_tid, child_tid, tls);
  auto child = std::make_unique<GuestThread>();
  uc_context* context = nullptr;
  if (uc_context_alloc(engine_, &context) != UC_ERR_OK) return -ENOMEM;
  child->context.reset(context);
  if (uc_context_save(engine_, context) != UC_ERR_OK) return -ENOMEM;  // the parent's registers, as clone sees them
  child->tid = thread_id_base_ + next_thread_number_++;
  child->fresh = true;
  child->fresh_stack = stack;
  if (flags & kCloneSettls) {
    child->fresh_tls = tls;
    if (arch_.syscall_abi.clone_tls_is_user_desc) {  // read now, as Linux does: it lives on the parent's stack
      child->tls_descriptor.emplace();
      if (!copy_in(tls, child->tls_descriptor->data(), child->tls_descriptor->size())) return -EFAULT;
    }
  }
  child->resume_pc = isa_pc(cpu_.syscall_return_pc());
  child->signals.blocked = signals_.blocked;  // a new thread inherits the mask, not the pending set nor the altstack
  if (flags & kCloneChildCleartid) child->clear_child_tid = child_tid;
  const std::uint32_t tid = child->tid;
  if ((flags & kCloneParentSettid) && !copy_out_words32(parent_tid, {tid})) return -EFAULT;
  if ((flags & kCloneChildSettid) && !copy_out_words32(child_tid, {tid})) return -EFAULT;
  threads_.push_back(std::move(child));
  if (!preemption_) {
    // The quantum is counted in the block hook, installed between runs
    // (LinuxProcess::run): stop here, at an exact pc.
    preemption_ = true;
    quantum_left_ = next_quantum();
    block_hook_wanted_ = true;
    uc_emu_stop(engine_);
  }
  if (observer_) {
    events::ThreadEvent created;
    created.change = events::ThreadChange::kCreated;
    created.from = events::ThreadId{running_->tid};
    observer_->on_thread_event(events::ThreadId{tid}, created);
  }
  return tid;
}

std::int64_t Kernel::do_clone3(std::uint64_t args_address, std::uint64_t size) {
  // struct clone_args: eight u64 (CLONE_ARGS_SIZE_VER0) and later fields, which must be 0 here.
  // As copy_clone_args_from_user: past a page is E2BIG, under VER0 EINVAL, and
  // bytes past the 88 Linux 6.1 knows must be zero (E2BIG).
  if (size > 4096) return -E2BIG;
  if (size < 64) return -EINVAL;
  std::uint8_t bytes[88] = {};
  if (size > sizeof bytes) {
    std::vector<std::uint8_t> tail(size - sizeof bytes);
    if (!copy_in(args_address + sizeof bytes, tail.data(), tail.size())) return -EFAULT;
    if (std::any_of(tail.begin(), tail.end(), [](std::uint8_t byte) { return byte != 0; })) return -E2BIG;
  }
  if (!copy_in(args_address, bytes, std::min<std::uint64_t>(size, sizeof bytes))) return -EFAULT;
  const arch::FrameReader reader(std::span<const std::uint8_t>(bytes), arch_.little_endian);
  const std::uint64_t flags = reader.get(0, 8), pidfd = reader.get(8, 8), child_tid = reader.get(16, 8),
                      parent_tid = reader.get(24, 8), exit_signal = reader.get(32, 8), stack = reader.get(40, 8),
                      stack_size = reader.get(48, 8), tls = reader.get(56, 8);
  if (size >= 80 && (reader.get(64, 8) || reader.get(72, 8))) return -EINVAL;  // set_tid: not ours to choose
  if ((flags & kCloneThread) && exit_signal) return -EINVAL;
  if ((stack == 0) != (stack_size == 0)) return -EINVAL;
  (void)pidfd;
  return do_clone(SyscallId::clone3, flags, stack ? stack + stack_size : 0, parent_tid, child_tid, tls);
}

void Kernel::release_robust_futexes(const GuestThread& thread) {
  // struct robust_list_head: list (a pointer), futex_offset (a long), list_op_pending (a pointer).
  if (!thread.robust_list) return;
  const std::size_t word = guest_word_bytes();
  std::uint8_t head[24] = {};
  if (!copy_in(thread.robust_list, head, 3 * word)) return;
  const arch::FrameReader reader(std::span<const std::uint8_t>(head, 3 * word), arch_.little_endian);
  auto sign_extend = [&](std::uint64_t value) {
    return word == 8 ? static_cast<std::int64_t>(value) : static_cast<std::int64_t>(static_cast<std::int32_t>(value));
  };
  const std::int64_t offset = sign_extend(reader.get(word, word));
  // Each owned lock's word: FUTEX_OWNER_DIED set, the owner cleared, one waiter woken (kernel/futex/core.c).
  auto release = [&](std::uint64_t entry) {
    const std::uint64_t address = entry + static_cast<std::uint64_t>(offset);
    std::uint64_t value = 0;
    if (!copy_in_words(address, std::span(&value, 1))) return;
    if ((value & FUTEX_TID_MASK) != thread.tid) return;
    if (!copy_out_words32(address, {(value & FUTEX_WAITERS) | FUTEX_OWNER_DIED})) return;
    if (value & FUTEX_WAITERS) futex_wake(address, 1, FUTEX_BITSET_MATCH_ANY);
  };
  std::uint64_t entry = reader.get(0, word) & ~std::uint64_t{1};  // bit 0 marks a PI lock
  for (int walked = 0; entry != thread.robust_list && entry && walked < 2048; ++walked) {  // ROBUST_LIST_LIMIT
    std::uint8_t next[8] = {};
    if (!copy_in(entry, next, word)) break;
    release(entry);
    entry = arch::FrameReader(std::span<const std::uint8_t>(next, word), arch_.little_endian).get(0, word) &
            ~std::uint64_t{1};
  }
  if (const std::uint64_t pending = reader.get(2 * word, word) & ~std::uint64_t{1}) release(pending);
}

std::int64_t Kernel::do_thread_exit(int code) {
  if (live_threads() <= 1) {
    end_with_exit(code);  // the last thread: the process ends with its status
    return 0;
  }
  release_robust_futexes(*running_);
  if (const std::uint64_t address = running_->clear_child_tid) {
    // What pthread_join waits on: the tid word cleared, its waiters woken.
    if (copy_out_words32(address, {0})) futex_wake(address, 1, FUTEX_BITSET_MATCH_ANY);
  }
  running_->state = GuestThread::State::kExited;
  if (observer_) {
    events::ThreadEvent exited;
    exited.change = events::ThreadChange::kExited;
    exited.exit_code = code;
    observer_->on_thread_event(events::ThreadId{running_->tid}, exited);
  }
  return kThreadExited;
}

std::vector<GuestThread*> Kernel::futex_waiters(std::uint64_t address, std::uint32_t bitset) const {
  std::vector<GuestThread*> waiters;
  for (const auto& thread : threads_)
    if (thread->state == GuestThread::State::kWaiting && thread->wait.kind == ThreadWait::Kind::kFutex &&
        thread->wait.futex_address == address && (thread->wait.futex_bitset & bitset))
      waiters.push_back(thread.get());
  std::sort(waiters.begin(), waiters.end(), [](auto* a, auto* b) { return a->wait_order < b->wait_order; });
  return waiters;
}

int Kernel::futex_wake(std::uint64_t address, std::int64_t count, std::uint32_t bitset) {
  int woken = 0;
  for (GuestThread* waiter : futex_waiters(address, bitset)) {
    if (woken >= count) break;
    waiter->state = GuestThread::State::kRunnable;
    waiter->wake_result = 0;
    ++woken;
  }
  return woken;
}

int Kernel::futex_requeue(std::uint64_t from, std::uint64_t to, std::int64_t wake_count, std::int64_t move_count) {
  int done = futex_wake(from, wake_count, FUTEX_BITSET_MATCH_ANY);
  for (GuestThread* waiter : futex_waiters(from, FUTEX_BITSET_MATCH_ANY)) {
    if (move_count-- <= 0) break;
    waiter->wait.futex_address = to;
    ++done;
  }
  return done;
}

std::optional<Clock::time_point> Kernel::futex_deadline(const SyscallArgs& a, bool absolute, bool wide,
                                                       int& error) const {
  error = 0;
  if (!a[3]) return std::nullopt;
  std::uint8_t bytes[16] = {};
  if (!copy_in(a[3], bytes, wide ? 16 : 8)) {
    error = EFAULT;
    return std::nullopt;
  }
  const arch::FrameReader reader(std::span<const std::uint8_t>(bytes), arch_.little_endian);
  const std::size_t word = wide ? 8 : 4;
  auto sec = static_cast<std::int64_t>(reader.get(0, word));
  auto nsec = static_cast<std::int64_t>(reader.get(word, word));
  if (!wide) sec = static_cast<std::int32_t>(sec);
  // A 32-bit ABI's 64-bit timespec (futex_time64) has a 32-bit tv_nsec beside padding the kernel ignores.
  if (!arch_.elf_64bit) nsec = static_cast<std::int32_t>(nsec);
  if (sec < 0 || nsec < 0 || nsec >= 1000000000) {
    error = EINVAL;
    return std::nullopt;
  }
  const auto length = std::chrono::seconds(sec) + std::chrono::nanoseconds(nsec);
  if (!absolute) return Clock::now() + std::chrono::duration_cast<Clock::duration>(length);
  // An absolute time on CLOCK_MONOTONIC, or CLOCK_REALTIME with FUTEX_CLOCK_REALTIME.
  const bool realtime = a[1] & FUTEX_CLOCK_REALTIME;
  timespec now{};
  ::clock_gettime(realtime ? CLOCK_REALTIME : CLOCK_MONOTONIC, &now);
  const auto from_now = length - (std::chrono::seconds(now.tv_sec) + std::chrono::nanoseconds(now.tv_nsec));
  return Clock::now() + std::chrono::duration_cast<Clock::duration>(from_now);
}

std::int64_t Kernel::do_futex_wait(const SyscallArgs& a, std::uint32_t bitset, bool absolute, bool wide_time) {
  // Linux's order: the timeout, the bitset, the word's alignment, then the word.
  int error = 0;
  const std::optional<Clock::time_point> deadline = futex_deadline(a, absolute, wide_time, error);
  if (error) return -error;
  if (bitset == 0 || a[0] % 4) return -EINVAL;
  std::uint64_t word = 0;
  if (!copy_in_words(a[0], std::span(&word, 1))) return -EFAULT;
  if (static_cast<std::uint32_t>(word) != static_cast<std::uint32_t>(a[2])) return -EAGAIN;
  if (live_threads() <= 1) {
    // Nobody can wake it: a timeout passes (interruptibly), an endless wait is refused.
    if (!deadline) {
      note_once("futex wait with no other thread to wake it: returning EINTR");
      return -EINTR;
    }
    const WaitEnd end = wait_for_host({}, deadline, nullptr);
    return end == WaitEnd::kInterrupted ? kRestartSys : -ETIMEDOUT;
  }
  ThreadWait wait;
  wait.kind = ThreadWait::Kind::kFutex;
  wait.futex_address = a[0];
  wait.futex_bitset = bitset;
  wait.deadline = deadline;
  park_ = std::move(wait);
  return kBlockForResult;
}

std::int64_t Kernel::do_futex(const SyscallArgs& a, bool wide_time) {
  const int command = static_cast<int>(a[1]) & FUTEX_CMD_MASK;
  const auto count = static_cast<std::int64_t>(static_cast<std::int32_t>(a[2]));
  // FUTEX_CLOCK_REALTIME only with the absolute waits; every op's word is 4-byte aligned.
  if ((a[1] & FUTEX_CLOCK_REALTIME) && command != FUTEX_WAIT_BITSET && command != FUTEX_WAIT_REQUEUE_PI &&
      command != FUTEX_LOCK_PI2)
    return -ENOSYS;
  if (command != FUTEX_WAIT && command != FUTEX_WAIT_BITSET && a[0] % 4) return -EINVAL;  // the waits check it later
  switch (command) {
    case FUTEX_WAIT: return do_futex_wait(a, FUTEX_BITSET_MATCH_ANY, false, wide_time);
    case FUTEX_WAIT_BITSET: return do_futex_wait(a, static_cast<std::uint32_t>(a[5]), true, wide_time);
    case FUTEX_WAKE: return futex_wake(a[0], count, FUTEX_BITSET_MATCH_ANY);
    case FUTEX_WAKE_BITSET:
      if (static_cast<std::uint32_t>(a[5]) == 0) return -EINVAL;
      return futex_wake(a[0], count, static_cast<std::uint32_t>(a[5]));
    case FUTEX_REQUEUE: case FUTEX_CMP_REQUEUE: {
      if (count < 0 || static_cast<std::int32_t>(a[3]) < 0 || a[4] % 4) return -EINVAL;
      if (command == FUTEX_CMP_REQUEUE) {
        std::uint64_t word = 0;
        if (!copy_in_words(a[0], std::span(&word, 1))) return -EFAULT;
        if (static_cast<std::uint32_t>(word) != static_cast<std::uint32_t>(a[5])) return -EAGAIN;
      }
      // The fourth argument is the number to requeue (val2), not a timeout.
      return futex_requeue(a[0], a[4], count, static_cast<std::int64_t>(static_cast<std::int32_t>(a[3])));
    }
    case FUTEX_WAKE_OP: return do_futex_wake_op(a);
    default:
      note_once("futex operation " + std::to_string(command) + " is not supported: returning ENOSYS");
      return -ENOSYS;
  }
}

std::int64_t Kernel::do_futex_wake_op(const SyscallArgs& a) {
  // *uaddr2 = *uaddr2 OP oparg; wake val at uaddr; if (old CMP cmparg) wake val2 at uaddr2.
  const auto op_word = static_cast<std::uint32_t>(a[5]);
  const unsigned op = (op_word >> 28) & 7, cmp = (op_word >> 24) & 15;
  std::uint32_t oparg = (op_word >> 12) & 0xfff, cmparg = op_word & 0xfff;
  if (op_word & (8u << 28)) oparg = 1u << (oparg & 31);  // FUTEX_OP_OPARG_SHIFT
  if (oparg & 0x800 && !(op_word & (8u << 28))) oparg |= 0xfffff000u;  // sign-extend the 12-bit field
  if (cmparg & 0x800) cmparg |= 0xfffff000u;
  if (a[4] % 4) return -EINVAL;
  std::uint64_t word = 0;
  if (!copy_in_words(a[4], std::span(&word, 1))) return -EFAULT;
  const auto old = static_cast<std::uint32_t>(word);
  std::uint32_t updated = old;
  switch (op) {
    case 0: updated = oparg; break;
    case 1: updated = old + oparg; break;
    case 2: updated = old | oparg; break;
    case 3: updated = old & ~oparg; break;
    case 4: updated = old ^ oparg; break;
    default: return -ENOSYS;
  }
  if (!copy_out_words32(a[4], {updated})) return -EFAULT;
  const auto signed_old = static_cast<std::int32_t>(old), signed_arg = static_cast<std::int32_t>(cmparg);
  bool wake_second = false;
  switch (cmp) {
    case 0: wake_second = signed_old == signed_arg; break;
    case 1: wake_second = signed_old != signed_arg; break;
    case 2: wake_second = signed_old < signed_arg; break;
    case 3: wake_second = signed_old <= signed_arg; break;
    case 4: wake_second = signed_old > signed_arg; break;
    case 5: wake_second = signed_old >= signed_arg; break;
    default: return -ENOSYS;
  }
  int woken = futex_wake(a[0], static_cast<std::int32_t>(a[2]), FUTEX_BITSET_MATCH_ANY);
  if (wake_second) woken += futex_wake(a[4], static_cast<std::int32_t>(a[3]), FUTEX_BITSET_MATCH_ANY);
  return woken;
}

std::int64_t Kernel::do_get_robust_list(std::int32_t tid, std::uint64_t head_address, std::uint64_t size_address) {
  // Another process's list is not ours to give: only this process's threads are found (ESRCH otherwise).
  const GuestThread* thread = tid == 0 ? running_ : find_thread(tid);
  if (!thread) return -ESRCH;
  const std::size_t word = guest_word_bytes();
  const auto written = [&](std::uint64_t address, std::uint64_t value) {
    std::uint8_t bytes[8] = {};
    arch::FrameWriter writer(std::span(bytes, word), arch_.little_endian);
    writer.put(0, word, value);
    return copy_out(address, bytes, word);
  };
  // As Linux: the size first, then the head.
  if (!written(size_address, 3 * word) || !written(head_address, thread->robust_list)) return -EFAULT;  // the head: 3 words
  return 0;
}

std::optional<std::int64_t> Kernel::thread_syscall(SyscallId id, const SyscallArgs& a) {
  switch (id) {
    case SyscallId::clone:
      if (arch_.syscall_abi.clone_tls_before_child_tid) return do_clone(id, a[0], a[1], a[2], a[4], a[3]);
      return do_clone(id, a[0], a[1], a[2], a[3], a[4]);
    case SyscallId::clone3: return do_clone3(a[0], a[1]);
    case SyscallId::exit: return do_thread_exit(static_cast<int>(a[0]));
    case SyscallId::gettid: return running_->tid;
    case SyscallId::set_tid_address: running_->clear_child_tid = a[0]; return running_->tid;
    case SyscallId::set_robust_list:
      if (a[1] != 3 * guest_word_bytes()) return -EINVAL;
      running_->robust_list = a[0];
      return 0;
    case SyscallId::get_robust_list: return do_get_robust_list(static_cast<std::int32_t>(a[0]), a[1], a[2]);
    case SyscallId::futex: return do_futex(a, arch_.elf_64bit);
    case SyscallId::sched_yield:
      yield_requested_ = live_threads() > 1;
      return 0;
    case SyscallId::sched_getaffinity: {
      // One engine runs one thread at a time: the guest sees one CPU (nproc prints 1).
      const std::uint64_t size = a[1];
      const std::size_t word = guest_word_bytes();
      if (size < word || size % word) return -EINVAL;
      std::vector<std::uint8_t> mask(std::min<std::uint64_t>(size, 128), 0);
      mask[arch_.little_endian ? 0 : word - 1] = 1;
      return copy_out(a[2], mask.data(), mask.size()) ? static_cast<std::int64_t>(mask.size()) : -EFAULT;
    }
    default:
      return std::nullopt;
  }
}

// ---- The scheduler ----

Kernel::WaitEnd Kernel::wait_for_host(std::span<pollfd> fds, std::optional<Clock::time_point> limit, int* ready) {
  if (running_->retry_deadline) limit = running_->retry_deadline;
  const bool alone = live_threads() <= 1;
  while (true) {
    take_host_signals();
    poll_timers();
    if (!signal_fds_.empty()) sync_signal_fds();
    if (signals_.next_deliverable() || stop_requested_.load(std::memory_order_relaxed)) return WaitEnd::kInterrupted;
    const auto now = Clock::now();
    if (limit && now >= *limit) return WaitEnd::kTimedOut;
    // Alone: one host wait of at most 50 ms at a time (the timer's deadline,
    // tracecorn's stop). With other threads: a look, never a wait.
    auto until = now + std::chrono::milliseconds(50);
    if (const auto due = next_timer_deadline()) until = std::min(until, *due);
    if (limit) until = std::min(until, *limit);
    const auto slice = alone ? std::max<std::int64_t>(std::chrono::ceil<std::chrono::milliseconds>(until - now).count(), 0) : 0;
    int count = 0;
    if (!fds.empty()) count = ::poll(fds.data(), fds.size(), static_cast<int>(slice));
    else if (slice) std::this_thread::sleep_for(std::chrono::milliseconds(slice));
    if (count != 0) {
      if (ready) *ready = count;
      return WaitEnd::kReady;
    }
    if (!alone) {
      ThreadWait wait;
      wait.kind = ThreadWait::Kind::kHost;
      wait.fds.assign(fds.begin(), fds.end());
      wait.deadline = limit;
      wait.retry = true;
      park_ = std::move(wait);
      return WaitEnd::kWouldBlock;
    }
  }
}

void Kernel::park_running(std::int64_t result, const BlockedSyscall& syscall) {
  GuestThread& thread = *running_;
  if (result == kThreadExited) return;
  thread.state = GuestThread::State::kWaiting;
  thread.wait = std::move(*park_);
  park_.reset();
  thread.wait_order = next_wait_order_++;
  thread.restart_pc = isa_pc(cpu_.syscall_restart_pc());
  thread.return_pc = isa_pc(cpu_.syscall_return_pc());
  thread.resume_pc = thread.wait.retry ? thread.restart_pc : thread.return_pc;
  thread.retry_deadline = thread.wait.retry ? thread.wait.deadline : std::nullopt;
  thread.blocked_in = syscall;
}

void Kernel::wake_waiting_threads() {
  const auto now = Clock::now();
  take_host_signals();
  poll_timers();
  if (!signal_fds_.empty()) sync_signal_fds();
  for (auto& thread : threads_) {
    if (thread->state != GuestThread::State::kWaiting) continue;
    ThreadWait& wait = thread->wait;
    const ThreadSignals& own = thread.get() == running_ ? static_cast<const ThreadSignals&>(signals_) : thread->signals;
    const std::uint64_t pending = own.pending | signals_.shared_pending;
    bool wake = false;
    if (wait.kind == ThreadWait::Kind::kSignal && (pending & wait.wanted_signals)) {
      wake = true;
    } else if (pending & ~own.blocked) {
      // A signal it can take interrupts the wait (a retried wait then gives EINTR or restarts).
      thread->wake_result = kRestartSys;
      wake = true;
    } else if (wait.deadline && now >= *wait.deadline) {
      if (!wait.retry) thread->wake_result = -ETIMEDOUT;
      wake = true;
    } else if (wait.kind == ThreadWait::Kind::kHost && !wait.fds.empty()) {
      wake = ::poll(wait.fds.data(), wait.fds.size(), 0) != 0;
    }
    if (wake) thread->state = GuestThread::State::kRunnable;
  }
}

GuestThread* Kernel::next_runnable() const {
  // Round robin in creation order, starting after the running thread.
  const auto at = std::find_if(threads_.begin(), threads_.end(), [&](const auto& t) { return t.get() == running_; });
  const std::size_t start = at == threads_.end() ? 0 : static_cast<std::size_t>(at - threads_.begin());
  for (std::size_t step = 1; step <= threads_.size(); ++step) {
    GuestThread* candidate = threads_[(start + step) % threads_.size()].get();
    if (candidate->state == GuestThread::State::kRunnable) return candidate;
  }
  return nullptr;
}

GuestThread* Kernel::wait_for_runnable() {
  while (true) {
    wake_waiting_threads();
    if (GuestThread* next = next_runnable()) return next;
    if (stop_requested_.load(std::memory_order_relaxed)) return nullptr;
    std::vector<pollfd> fds;
    auto until = Clock::now() + std::chrono::milliseconds(50);
    bool can_wake = next_timer_deadline().has_value();
    if (const auto due = next_timer_deadline()) until = std::min(until, *due);
    for (const auto& thread : threads_) {
      if (thread->state != GuestThread::State::kWaiting) continue;
      if (thread->wait.deadline) until = std::min(until, *thread->wait.deadline), can_wake = true;
      // A signal from another process (or the user) can wake a thread that
      // waits for one or leaves one unblocked (a sigwait thread, a worker in
      // pause while the main thread joins it): Linux waits for it.
      const ThreadSignals& own =
          thread.get() == running_ ? static_cast<const ThreadSignals&>(signals_) : thread->signals;
      if (thread->wait.kind == ThreadWait::Kind::kSignal || (~own.blocked & ~kUnblockable)) can_wake = true;
      if (thread->wait.kind == ThreadWait::Kind::kHost && !thread->wait.fds.empty()) {
        fds.insert(fds.end(), thread->wait.fds.begin(), thread->wait.fds.end());
        can_wake = true;
      }
    }
    if (!can_wake) {
      end_with_signal(SIGKILL, "deadlock: every thread of the process waits for another one (" +
                                   std::to_string(live_threads()) +
                                   " threads, no timer, no descriptor to wait on, every signal blocked)");
      return nullptr;
    }
    const auto slice = std::chrono::ceil<std::chrono::milliseconds>(until - Clock::now()).count();
    ::poll(fds.data(), fds.size(), static_cast<int>(std::max<std::int64_t>(slice, 0)));
  }
}

void Kernel::switch_to(GuestThread& next, bool in_syscall_hook, std::uint64_t interrupted_block) {
  GuestThread* previous = running_;
  if (previous->state != GuestThread::State::kExited) {
    if (!previous->context) {
      uc_context* context = nullptr;
      if (uc_context_alloc(engine_, &context) != UC_ERR_OK) throw std::bad_alloc();
      previous->context.reset(context);
    }
    uc_context_save(engine_, previous->context.get());
  }
  signals_.exchange_thread_part(previous->signals);
  signals_.exchange_thread_part(next.signals);
  running_ = &next;
  uc_context_restore(engine_, next.context.get());
  if (next.tls_descriptor) {  // i386: this thread's TLS entry back into the GDT
    std::array<std::uint8_t, 16> descriptor = *next.tls_descriptor;
    if (cpu_.set_thread_area(descriptor) != 0) note_once("a thread's TLS descriptor was refused");
  }
  if (next.fresh) start_fresh_thread(next);
  std::uint64_t resume_pc = next.resume_pc;
  std::optional<std::int64_t> resumed_result;  // a blocked syscall that ends now: reported after the switch
  // Replay: the blocked syscall ended at this switch in the recording (a
  // futex wait's result; a retried wait a signal interrupted) where the
  // trace says so; else it runs again, as it did.
  if (source_ && source_->follows_schedule() && next.blocked_in)
    if (const auto recorded = source_->resumed_result(next.tid, next.blocked_in->number)) next.wake_result = recorded;
  // Woken in a signal wait it runs again (pause, sigsuspend, sigtimedwait):
  // that syscall takes the signal it waited for (pause returns EINTR as the
  // handler runs), so it is not delivered here, before the syscall.
  const bool reruns_signal_wait =
      next.blocked_in && next.wait.kind == ThreadWait::Kind::kSignal && next.wait.retry && !next.wake_result;
  if (next.wake_result) {
    std::int64_t result = *std::exchange(next.wake_result, std::nullopt);
    if (result == kRestartSys) next.retry_deadline.reset();  // a handler runs first
    if (result == kRestartSys && restarts_after_handler()) {
      resume_pc = next.restart_pc;  // the handler's return runs the syscall again
    } else {
      if (result == kRestartSys) result = -EINTR;
      const auto value = static_cast<std::uint64_t>(result);
      uc_reg_write(engine_, arch_.syscall_abi.return_reg, &value);
      cpu_.apply_kernel_exit_effects();
      resume_pc = next.return_pc;
      resumed_result = result;
    }
  }
  next.state = GuestThread::State::kRunnable;
  quantum_left_ = next_quantum();
  if (observer_) {
    events::ThreadEvent switched;
    switched.change = events::ThreadChange::kSwitched;
    switched.from = events::ThreadId{previous->tid};
    switched.from_pc = events::GuestAddress{interrupted_block};
    observer_->on_thread_event(events::ThreadId{next.tid}, switched);
    observer_->on_registers_changed();
  }
  // On its own thread, after the switch: the syscall the thread was blocked in.
  if (resumed_result) report_resumed_syscall(next, *resumed_result);
  next.blocked_in.reset();
  if (!reruns_signal_wait && signals_.next_deliverable())
    if (const auto handler = deliver_pending(resume_pc)) resume_pc = *handler;
  if (in_syscall_hook) {
    cpu_.resume_at(resume_pc);
  } else {
    uc_reg_write(engine_, arch_.pc_reg, &resume_pc);  // Unicorn leaves the block and goes on there
  }
}

void Kernel::start_fresh_thread(GuestThread& thread) {
  thread.fresh = false;
  if (thread.fresh_stack) uc_reg_write(engine_, arch_.sp_reg, &thread.fresh_stack);
  const std::uint64_t zero = 0;
  uc_reg_write(engine_, arch_.syscall_abi.return_reg, &zero);  // clone returns 0 in the child
  cpu_.apply_kernel_exit_effects();
  if (!thread.fresh_tls) return;
  if (!arch_.syscall_abi.clone_tls_is_user_desc) {
    if (!cpu_.set_thread_pointer(*thread.fresh_tls)) note_once("clone: the new thread's TLS pointer was refused");
    return;
  }
  // i386: the TLS argument was a struct user_desc (read by do_clone),
  // installed as set_thread_area does (switch_to did); GS loads it.
  cpu_.reload_thread_pointer();
}

void Kernel::report_resumed_syscall(const GuestThread& thread, std::int64_t result) {
  if (!thread.blocked_in) return;
  const BlockedSyscall& syscall = *thread.blocked_in;
  if (config_.syscall_log) log_syscall(syscall.id, syscall.number, syscall.args, result);
  if (!observer_) return;
  observer_->on_syscall_enter(syscall.pc, syscall.number);
  observer_->on_syscall(syscall.pc, syscall.number, syscall.id, syscall.args, result);
}

void Kernel::schedule_after_syscall(std::int64_t result) {
  if (source_ && source_->follows_schedule()) return follow_schedule(true);
  GuestThread* next = nullptr;
  if (result == kBlockForResult || result == kBlockAndRetry || result == kThreadExited) {
    next = wait_for_runnable();
    if (!next) return;  // the run ends (a stop, a deadlock)
  } else {
    next = next_runnable();
    if (!next || next == running_) return;
    running_->resume_pc = isa_pc(cpu_.syscall_return_pc());
  }
  switch_to(*next, true, 0);
}

void Kernel::preempt(std::uint64_t address) {
  if (source_ && source_->follows_schedule()) return follow_schedule(false, address);
  wake_waiting_threads();
  GuestThread* next = next_runnable();
  if (!next || next == running_) return;
  running_->resume_pc = isa_pc(address);
  switch_to(*next, false, address);
}

std::uint64_t Kernel::next_quantum() {
  quantum_sequence_ = quantum_sequence_ * 6364136223846793005ull + 1442695040888963407ull;  // (Knuth's MMIX LCG)
  return kQuantumBlocks - kQuantumJitter + (quantum_sequence_ >> 33) % (2 * kQuantumJitter + 1);
}

void Kernel::follow_schedule(bool in_syscall_hook, std::uint64_t interrupted_block) {
  const std::optional<std::uint32_t> tid = source_->next_thread(in_syscall_hook ? 0 : interrupted_block);
  if (!tid) {
    if (running_->state == GuestThread::State::kRunnable) return;  // no switch here: it goes on
    end_with_signal(SIGKILL, "replay: the schedule names no thread to run next");
    return;
  }
  GuestThread* next = find_thread(*tid);
  if (!next) {
    end_with_signal(SIGKILL, "replay: the schedule switches to thread " + std::to_string(*tid) + ", which has not been "
                             "created or has exited");
    return;
  }
  // (A switch to the running thread itself is one where it had blocked and
  // was the one woken: the recording's wait_for_runnable made it too.)
  if (next == running_ && running_->state != GuestThread::State::kWaiting) return;
  if (running_->state == GuestThread::State::kRunnable)
    running_->resume_pc = isa_pc(in_syscall_hook ? cpu_.syscall_return_pc() : interrupted_block);
  // What woke it (another thread, a timeout, a descriptor) came in the
  // recording; a futex wait's result comes from the trace in switch_to.
  if (next->state == GuestThread::State::kWaiting) next->state = GuestThread::State::kRunnable;
  switch_to(*next, in_syscall_hook, interrupted_block);
}

std::uint64_t Kernel::isa_pc(std::uint64_t address) const {
  const arch::AlternateInstructionSet* alternate = arch_.alternate_isa;
  if (!alternate || !alternate->address_bit0) return address;
  std::uint64_t mode = 0;
  uc_reg_read(engine_, alternate->uc_register, &mode);
  return (mode & alternate->mask) ? address | 1 : address;
}

}  // namespace tracecorn::linux_layer
