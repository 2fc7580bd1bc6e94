// Role: the guest threads of one emulated Linux process, as the kernel's
// scheduler keeps them: each thread's saved registers (a Unicorn context),
// where it resumes, what it waits for, its own signal state and the
// addresses clone/set_tid_address gave it. Memory is the engine's, shared by
// every thread; one thread runs at a time (syscalls_thread.cpp switches).
// Threads: the emulation thread only.
// Invariants: the running thread's registers are the engine's and its
// ThreadSignals are in SignalState (its own copy here is stale until it is
// switched out); a waiting thread's `wait` says what wakes it; thread ids are
// unique for the process's life, the first thread's is the pid.
#pragma once

#include <poll.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include <unicorn/unicorn.h>

#include "arch/arch.h"
#include "recorder/linux/signals.h"

namespace tracecorn::linux_layer {

// What a blocked thread waits for.
struct ThreadWait {
  enum class Kind : std::uint8_t {
    kFutex,   // futex_wake at `futex_address` with a bit of `futex_bitset`
    kHost,    // one of `fds` ready on the host (none: only the deadline)
    kSignal,  // one of `wanted_signals` pending (pause, sigsuspend, sigtimedwait)
  };
  Kind kind = Kind::kHost;
  std::uint64_t futex_address = 0;
  std::uint32_t futex_bitset = 0;
  std::vector<pollfd> fds;
  std::uint64_t wanted_signals = 0;
  std::optional<std::chrono::steady_clock::time_point> deadline;
  // true: woken, the thread runs its syscall again (host and signal waits,
  // which then find what they waited for); false: it gets a result (futex).
  bool retry = false;
};

// The syscall a blocked thread is in, told to the observer again when it
// returns (the "resumed" half, as strace -f shows it).
struct BlockedSyscall {
  std::uint64_t pc = 0;
  std::uint64_t number = 0;
  arch::SyscallId id = arch::SyscallId::unknown;
  std::uint64_t args[6] = {};
};

struct UnicornContextFree {
  void operator()(uc_context* context) const { uc_context_free(context); }
};

struct GuestThread {
  enum class State : std::uint8_t { kRunnable, kWaiting, kExited };
  std::uint32_t tid = 0;
  State state = State::kRunnable;
  std::unique_ptr<uc_context, UnicornContextFree> context;  // registers while it does not run
  // Where it goes on (as GuestCpu::resume_at takes a pc: arm Thumb with bit
  // 0), and, while blocked in a syscall, where that syscall starts again and
  // where it returns to.
  std::uint64_t resume_pc = 0;
  std::uint64_t restart_pc = 0;
  std::uint64_t return_pc = 0;
  // The value its blocked syscall returns when it runs next (futex wake,
  // timeout, EINTR; kRestartSys: interrupted by a signal). nullopt: none.
  std::optional<std::int64_t> wake_result;
  std::optional<BlockedSyscall> blocked_in;
  ThreadWait wait;
  std::uint64_t wait_order = 0;  // futex wake order: lower waited first
  // Retried host waits keep the deadline of their first try.
  std::optional<std::chrono::steady_clock::time_point> retry_deadline;
  ThreadSignals signals;  // stale while it runs (SignalState has them)
  std::uint64_t clear_child_tid = 0;  // CLONE_CHILD_CLEARTID, set_tid_address
  std::uint64_t robust_list = 0;
  // i386: the TLS descriptor it set (struct user_desc), rewritten into the
  // GDT when it runs again (Linux switches the TLS entries per thread).
  std::optional<std::array<std::uint8_t, 16>> tls_descriptor;
  // Created by clone and not run yet: its first switch-in sets these.
  bool fresh = false;
  std::uint64_t fresh_stack = 0;              // 0: the parent's sp
  std::optional<std::uint64_t> fresh_tls;     // CLONE_SETTLS
};

}  // namespace tracecorn::linux_layer
