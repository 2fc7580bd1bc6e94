// Role: the emulated Linux kernel of one single-threaded guest process: its
// address space, file system view, program break, signal dispositions and exit
// state, and the syscall handlers, one file per family:
//   syscalls_file.cpp     descriptors, paths, stat, directories, ioctl
//   syscalls_memory.cpp   brk, mmap, munmap, mprotect, mremap, madvise
//   syscalls_process.cpp  ids, exit, limits, uname, TLS, futex
//   syscalls_signal.cpp   signals: dispositions, masks, kill, waits, timers, delivery
//   syscalls_time.cpp     clocks, sleeps, getrandom
//   syscalls_net.cpp      sockets (refused unless --allow-net)
//   syscalls_compat32.cpp 32-bit ABIs' variants (mmap2, _llseek, fstat64...)
// Who calls it: the architecture's trap hook (GuestCpu), on the emulation thread,
// inside Unicorn's callback: nothing here may throw past on_trap().
// Invariants: a handler returns the guest's return value (negative errno on
// failure) and never leaves guest memory half-written on EFAULT of its inputs;
// errno values are host values; an architecture with other numbers (mips)
// translates them in its GuestCpu::apply_kernel_exit_effects, with its own
// error convention (mips: a3 = 1, v0 = the positive errno).
#pragma once

#include <sys/socket.h>
#include <sys/stat.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <initializer_list>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <unicorn/unicorn.h>

#include "arch/arch.h"
#include "recorder/linux/guest_fs.h"
#include "recorder/linux/guest_memory.h"
#include "recorder/linux/linux_process.h"
#include "recorder/linux/signals.h"

namespace tracecorn::linux_layer {

using SyscallArgs = std::uint64_t[6];

struct Termination {
  bool ended = false;
  bool by_signal = false;
  int exit_code = 0;
  int signal = 0;  // host signal number
  std::string description;
};

class Kernel {
 public:
  Kernel(uc_engine* engine, const arch::ArchInfo& arch, arch::GuestCpu& cpu, GuestFs fs,
         const ProcessConfig& config);

  GuestMemory& memory() { return memory_; }
  const GuestMemory& memory() const { return memory_; }
  GuestFs& fs() { return fs_; }
  void set_program_break(std::uint64_t start) { brk_start_ = brk_current_ = start; }
  void set_observer(ProcessObserver* observer) {
    observer_ = observer;
    memory_.set_observer(observer);
  }

  // Replay: syscalls are asked of `source` first (see SyscallSource).
  void set_syscall_source(SyscallSource* source) { source_ = source; }

  // The trap hook: reads the syscall from the registers, runs it, writes the
  // result. Stops the engine when the process ends. Never throws.
  void on_trap() noexcept;

  // Between runs (LinuxProcess::run, after uc_emu_start returned on a CPU
  // fault): gives host signal `signal` (si_code `code`, si_addr `address`) for
  // the instruction at `pc` to the guest's handler. Returns the pc to run
  // from (the handler), or nullopt when the guest has no handler for it, or
  // blocks or ignores it: the fault then kills the process, as Linux does.
  std::optional<std::uint64_t> deliver_fault(int signal, int code, std::uint64_t address, std::uint64_t pc) noexcept;
  // Whether the kernel stopped the run to have a block hook installed (the
  // real timer was first armed), and clears that. Between runs.
  bool take_block_hook_request() { return std::exchange(block_hook_wanted_, false); }
  // The block hook (installed on request, see above): at the start of the
  // block at `address`, delivers the signal of a timer that came due.
  void on_block(std::uint64_t address) noexcept;
  // Makes every wait of the guest (pause, sigsuspend, sigtimedwait) return
  // soon. Any thread.
  void request_stop() { stop_requested_.store(true, std::memory_order_relaxed); }

  const Termination& termination() const { return termination_; }
  std::uint64_t syscall_count() const { return syscall_count_; }

 private:
  std::int64_t dispatch(arch::SyscallId id, std::uint64_t number, const SyscallArgs& a);
  // As a syscall returns: raises a due timer's signal, then delivers what is
  // deliverable (the guest resumes in a handler when one is entered).
  // `restart_pc`: the syscall was interrupted and restarts (SA_RESTART) at
  // its trap instruction once the handler returns.
  void deliver_at_syscall_exit(std::optional<std::uint64_t> restart_pc);
  // Whether the signal about to be delivered restarts an interrupted syscall (SA_RESTART).
  bool restarts_after_handler() const;
  // The six syscall arguments: registers, then (mips o32) stack words.
  void read_arguments(SyscallArgs& args) const;
  // Each family answers the ids it implements; nullopt means "not mine".
  std::optional<std::int64_t> file_syscall(arch::SyscallId id, const SyscallArgs& a);
  std::optional<std::int64_t> memory_syscall(arch::SyscallId id, const SyscallArgs& a);
  std::optional<std::int64_t> process_syscall(arch::SyscallId id, const SyscallArgs& a);
  std::optional<std::int64_t> time_syscall(arch::SyscallId id, const SyscallArgs& a);
  std::optional<std::int64_t> net_syscall(arch::SyscallId id, const SyscallArgs& a);
  // 32-bit ABIs' own syscalls (syscalls_compat32.cpp); nullopt for 64-bit guests.
  std::optional<std::int64_t> compat32_syscall(arch::SyscallId id, const SyscallArgs& a);
  // The 64-bit value a 32-bit ABI passes in the register pair starting at
  // argument `index` (moved to the next even index where the ABI aligns pairs).
  std::uint64_t argument_pair(const SyscallArgs& a, std::size_t index) const;
  // Writes 32-bit words in the guest's byte order (at most 4); false on EFAULT.
  bool copy_out_words32(std::uint64_t address, std::initializer_list<std::uint64_t> values);
  // Reads words.size() (at most 6) unsigned 32-bit words in the guest's byte
  // order; false on EFAULT.
  bool copy_in_words(std::uint64_t address, std::span<std::uint64_t> words) const;
  // i386's socketcall(call, args): the socket call `call` with its arguments
  // read from `args_address`; -EINVAL for an unknown call, -EFAULT.
  std::int64_t do_socketcall(std::uint64_t call, std::uint64_t args_address);
  // Reads two signed 32-bit words (a timespec32); nullopt on EFAULT.
  std::optional<std::pair<std::int64_t, std::int64_t>> copy_in_words32(std::uint64_t address) const;

  // File family helpers (syscalls_file.cpp).
  std::int64_t do_openat(int dirfd, std::uint64_t path_address, int flags, int mode);
  std::int64_t do_read(int fd, std::uint64_t buffer, std::uint64_t count, std::optional<std::int64_t> offset);
  std::int64_t do_write(int fd, std::uint64_t buffer, std::uint64_t count, std::optional<std::int64_t> offset);
  std::int64_t do_vector_io(int fd, std::uint64_t iov, std::uint64_t count, bool is_write,
                            std::optional<std::int64_t> offset);
  std::int64_t do_fstatat(int dirfd, std::uint64_t path_address, std::uint64_t stat_address, int flags);
  std::int64_t do_statx(const SyscallArgs& a);
  std::int64_t do_readlinkat(int dirfd, std::uint64_t path_address, std::uint64_t buffer, std::uint64_t size);
  std::int64_t do_faccessat(int dirfd, std::uint64_t path_address, int mode, int flags);
  std::int64_t do_getdents64(int fd, std::uint64_t buffer, std::uint64_t size);
  std::int64_t do_fcntl(int fd, int command, std::uint64_t argument);
  std::int64_t do_ioctl(int fd, std::uint64_t request, std::uint64_t argument);
  std::int64_t do_pipe(std::uint64_t fds_address, int flags);
  std::int64_t do_path_op(arch::SyscallId id, const SyscallArgs& a);
  // --read-only: names the refused syscall once on stderr; returns -EROFS.
  std::int64_t refuse_on_read_only(arch::SyscallId id);
  std::int64_t do_sendfile(int out_fd, int in_fd, std::uint64_t offset_address, std::uint64_t count);
  std::int64_t do_poll(std::uint64_t fds_address, std::uint64_t count, int timeout_ms);

  // Memory family helpers (syscalls_memory.cpp).
  std::int64_t do_brk(std::uint64_t address);
  std::int64_t do_mmap(std::uint64_t address, std::uint64_t length, int prot, int flags, int fd,
                       std::uint64_t offset);
  std::int64_t do_mremap(std::uint64_t old_address, std::uint64_t old_size, std::uint64_t new_size, int flags,
                         std::uint64_t new_address);
  // Names a --max-memory refusal of `syscall` once on the diagnostics stream.
  void note_memory_limit(const char* syscall);

  // Network family helpers (syscalls_net.cpp). Copy a guest socket address in
  // (EINVAL when longer than sockaddr_storage, EFAULT, EACCES for a Unix path
  // under --rootfs) or out (truncated to the guest's *length, which then holds
  // the full length); return 0 or a negative errno.
  std::int64_t copy_in_sockaddr(std::uint64_t address, std::uint64_t length, sockaddr_storage& out,
                                socklen_t& out_length);
  std::int64_t copy_out_sockaddr(std::uint64_t address, std::uint64_t length_address, const sockaddr_storage& in,
                                 socklen_t in_length);

  // Signal family (syscalls_signal.cpp).
  std::optional<std::int64_t> signal_syscall(arch::SyscallId id, const SyscallArgs& a);
  // Raises guest signal `guest_signal` at the process itself (si_code `code`);
  // returns 0 or -EINVAL. Delivery happens as the syscall returns.
  std::int64_t do_kill_self(int guest_signal, int code);
  std::int64_t do_rt_sigaction(int guest_signal, std::uint64_t action, std::uint64_t old_action, std::uint64_t size);
  std::int64_t do_rt_sigprocmask(int how, std::uint64_t set, std::uint64_t old_set, std::uint64_t size);
  std::int64_t do_sigaltstack(std::uint64_t new_stack, std::uint64_t old_stack);
  std::int64_t do_rt_sigsuspend(std::uint64_t mask_address, std::uint64_t size);
  std::int64_t do_rt_sigtimedwait(const SyscallArgs& a, bool time64);
  std::int64_t do_itimer(arch::SyscallId id, const SyscallArgs& a);
  // rt_sigreturn/sigreturn: restores the registers and sets sigreturn_pc_.
  std::int64_t do_sigreturn(bool rt);
  // Sets ITIMER_REAL to fire after `value` (0: disarm), then every `interval`;
  // returns the time the old setting had left (and its interval).
  std::chrono::microseconds arm_real_timer(std::chrono::microseconds value, std::chrono::microseconds interval,
                                           std::chrono::microseconds* old_interval);
  // Raises SIGALRM when the real timer is due, and reloads it.
  void poll_real_timer();
  // How a wait on the host ended (wait_interruptibly).
  enum class WaitEnd { kReady, kTimedOut, kInterrupted };
  // Waits in short slices, so that a guest blocked in the host stays
  // interruptible: `ready(slice_ms)` makes one host wait of at most slice_ms
  // milliseconds (poll, a sleep) and says whether it is over. Ends kReady when
  // it is, kTimedOut when `limit` passes, kInterrupted when a signal becomes
  // deliverable (the real timer included) or tracecorn is asked to stop.
  template <typename Ready>
  WaitEnd wait_interruptibly(std::optional<std::chrono::steady_clock::time_point> limit, Ready&& ready) {
    while (true) {
      poll_real_timer();
      if (signals_.next_deliverable() || stop_requested_.load(std::memory_order_relaxed)) return WaitEnd::kInterrupted;
      const auto now = std::chrono::steady_clock::now();
      if (limit && now >= *limit) return WaitEnd::kTimedOut;
      auto until = now + std::chrono::milliseconds(50);
      if (signals_.real_timer.deadline) until = std::min(until, *signals_.real_timer.deadline);
      if (limit) until = std::min(until, *limit);
      const auto slice = std::chrono::ceil<std::chrono::milliseconds>(until - now).count();
      if (ready(static_cast<int>(std::max<std::int64_t>(slice, 0)))) return WaitEnd::kReady;
    }
  }
  // ERESTARTSYS: a blocking syscall interrupted by a signal; on_trap turns it
  // into EINTR, or restarts the syscall when the handler has SA_RESTART.
  static constexpr std::int64_t kRestartSys = -512;
  // Blocks until a signal in `wanted` (host set) is pending, `limit` passes
  // or tracecorn is asked to stop; true when a signal is pending.
  bool wait_for_signal(std::uint64_t wanted, std::optional<std::chrono::steady_clock::time_point> limit);
  // Delivers the deliverable pending signals, the interrupted code going on
  // at `resume_pc`: returns the pc of the (last) handler entered; nullopt
  // when none was (ignored, or a default action, which may end the process).
  std::optional<std::uint64_t> deliver_pending(std::uint64_t resume_pc);
  bool enter_handler(int signal, const SignalAction& action, const SignalOrigin& origin, std::uint64_t resume_pc);
  // Ignore, stop (unsupported: ignored with a note) or terminate; false when the process ended.
  bool take_default_action(int signal, const SignalOrigin& origin);
  SignalAction signal_action(int signal) const;
  std::size_t sigaction_bytes() const;
  // The guest's sigset (its first 8 bytes, its byte order) as a host set, and back.
  std::uint64_t read_guest_sigset(std::span<const std::uint8_t> bytes) const;
  void write_guest_sigset(std::span<std::uint8_t> bytes, std::uint64_t host_set) const;
  std::uint64_t read_guest_sigset_value(std::uint64_t guest_set) const;
  std::array<std::uint8_t, arch::kSiginfoBytes> build_siginfo(int signal, const SignalOrigin& origin) const;
  // The address of tracecorn's sigreturn trampoline page, mapped at first
  // use; 0 when the architecture needs none or it cannot be mapped.
  std::uint64_t sigreturn_trampoline();

  // Process family helpers (syscalls_process.cpp).
  std::int64_t do_prlimit(int guest_resource, std::uint64_t new_limit, std::uint64_t old_limit);
  // The soft and hard limit of `resource` (0 <= resource < 16) the guest sees:
  // its own setting, else the host's. Returns 0, or the host's errno.
  int current_rlimit(int resource, std::uint64_t (&current)[2]) const;
  std::int64_t do_futex(const SyscallArgs& a);
  std::int64_t do_prctl(const SyscallArgs& a);

  // Shared helpers.
  // Reads a path argument; sets `error` (positive errno) on failure.
  std::optional<std::string> read_path(std::uint64_t address, int& error) const;
  // Puts the fields of a struct between the host's byte order and the guest's
  // (the same swap both ways): `widths` are the field widths in bytes, repeated
  // over `bytes` (a trailing part shorter than a field is left as it is).
  // Nothing to do for little-endian guests. Never fails.
  void to_guest_order(std::span<std::uint8_t> bytes, std::initializer_list<std::uint8_t> widths) const;
  template <typename T>
  void to_guest_order(T& value, std::initializer_list<std::uint8_t> widths) const {
    to_guest_order(std::span(reinterpret_cast<std::uint8_t*>(&value), sizeof value), widths);
  }
  // Copies host bytes to the guest; false on EFAULT.
  bool copy_out(std::uint64_t address, const void* data, std::size_t size);
  bool copy_in(std::uint64_t address, void* data, std::size_t size) const;
  // Writes a host `struct stat` as the guest architecture's; false on EFAULT.
  bool copy_out_stat(std::uint64_t address, const struct stat& info);
  void end_with_exit(int code);
  void end_with_signal(int signal, std::string description);
  void note_once(const std::string& what);
  void log_syscall(arch::SyscallId id, std::uint64_t number, const SyscallArgs& a, std::int64_t result);

  uc_engine* engine_;
  const arch::ArchInfo& arch_;
  arch::GuestCpu& cpu_;
  GuestMemory memory_;
  GuestFs fs_;
  const ProcessConfig& config_;
  ProcessObserver* observer_ = nullptr;
  SyscallSource* source_ = nullptr;

  std::uint64_t brk_start_ = 0;
  std::uint64_t brk_current_ = 0;
  std::uint64_t clear_child_tid_ = 0;
  SignalState signals_;
  std::unique_ptr<TimerWakeup> timer_wakeup_;  // started when the real timer is first armed
  std::atomic<bool> stop_requested_{false};
  std::optional<std::uint64_t> sigreturn_pc_;  // set by sigreturn: registers restored, resume here
  std::uint64_t trampoline_ = 0;
  bool block_hook_wanted_ = false;
  std::optional<std::uint64_t> rlimits_[16][2];  // limits the guest set (not applied to the host)
  char thread_name_[16] = {};
  int umask_ = 022;
  std::uint64_t syscall_count_ = 0;
  Termination termination_;
  std::set<std::string> noted_;
  std::vector<std::uint8_t> scratch_;  // reused I/O buffer
};

}  // namespace tracecorn::linux_layer
