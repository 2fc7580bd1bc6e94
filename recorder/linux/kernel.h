// Role: the emulated Linux kernel of one guest process: its address space,
// file system view, program break, signal dispositions, threads and exit
// state, and the syscall handlers, one file per family:
//   syscalls_file.cpp     descriptors, paths, stat, directories, ioctl
//   syscalls_memory.cpp   brk, mmap, munmap, mprotect, mremap, madvise
//   syscalls_process.cpp  ids, exit_group, limits, uname, TLS
//   syscalls_thread.cpp   threads: clone, exit, futex, the scheduler (threads.h)
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

#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <initializer_list>
#include <array>
#include <map>
#include <mutex>
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
#include "recorder/linux/inherited_state.h"
#include "recorder/linux/linux_process.h"
#include "recorder/linux/signals.h"
#include "recorder/linux/threads.h"

namespace tracecorn::engine {
class InstructionCounter;
}

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
  // Replay of a forked child: the break its parent had moved to.
  void adopt_program_break(std::uint64_t current) { brk_current_ = std::max(brk_current_, current); }
  void set_observer(ProcessObserver* observer);

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
  // Maps tracecorn's sigreturn trampoline page where the architecture's kernel
  // would return through its vDSO (aarch64, riscv64, mips): at load, as the
  // kernel maps its vDSO, so that the page is part of the process's initial
  // state (a trace's reader and the replay see its code). False when it
  // cannot be mapped; true when the architecture needs none.
  bool map_sigreturn_trampoline();
  // Whether the CPU-time timers (ITIMER_VIRTUAL, ITIMER_PROF) need the
  // guest's instruction count, which set_instruction_counter then gives
  // (not owned; it must outlive the kernel's runs). Between runs.
  bool wants_instruction_counter() const { return cpu_timers_armed_; }
  void set_instruction_counter(const engine::InstructionCounter* counter) { instruction_counter_ = counter; }
  // The block hook (installed on request, see above): at the start of the
  // block at `address`, delivers the signal of a timer that came due.
  void on_block(std::uint64_t address) noexcept;
  // The observer's block interrupt (ProcessObserver::take_block_interrupts):
  // at the start of the block at `address`, delivers what post_host_signal
  // left for a handler.
  void on_interrupted_block(std::uint64_t address) noexcept;
  // on_block's and on_interrupted_block's delivery: what is pending and
  // deliverable enters its handler at the start of the block at `address`
  // (the engine's pc set there). True when a handler was entered.
  bool deliver_at_block_start(std::uint64_t address);
  // Makes every wait of the guest (pause, sigsuspend, sigtimedwait) return
  // soon. Any thread.
  void request_stop() { stop_requested_.store(true, std::memory_order_relaxed); }

  // ---- Signal injection (replay; signal_injection.cpp) ----
  // Makes host signal `signal` pending with `origin`'s siginfo (one already
  // pending takes it); it is delivered at the next delivery point.
  void inject_signal(int signal, const SignalOrigin& origin) noexcept;
  // Forgets a pending `signal` (one the trace says a wait took).
  void take_pending_signal(int signal) noexcept;
  // From a code hook at the instruction at `pc`, which has not run: delivers
  // what is pending and deliverable, the guest going on in the handler (the
  // engine's pc is set). Returns the handler entered, or nullopt.
  std::optional<std::uint64_t> deliver_injected(std::uint64_t pc) noexcept;
  // ---- end of signal injection ----

  // ---- The process tree (syscalls_process_tree.cpp, syscalls_exec.cpp) ----
  // A signal another process sent tracecorn's host process (the CLI's watcher
  // thread): pending for the guest from its next syscall or wait on. Any thread.
  // One whose default action ends the process while the guest runs without
  // syscalls (a loop) also stops the run at once (take_fatal_signal_stop);
  // one for a handler is delivered at the next block's start where there is
  // a block hook: the kernel's (on_block: threads, timers, a process that
  // forked with a handler) or the observer's (a recording), else at the next
  // syscall.
  void post_host_signal(int signal, const SignalOrigin& origin) noexcept;
  // Whether post_host_signal stopped the run for such a signal (and clears
  // that). Emulation thread, after a run.
  bool take_fatal_signal_stop() { return fatal_signal_stop_.exchange(false, std::memory_order_acq_rel); }
  // From now on post_host_signal leaves that stop, and request_stop its stop,
  // to on_block (the block hook must be in:
  // LinuxProcess::stop_outside_kills_at_blocks). Before a run.
  void stop_fatal_signals_at_blocks() { fatal_stops_at_blocks_.store(true, std::memory_order_relaxed); }
  bool fatal_signals_stop_at_blocks() const { return fatal_stops_at_blocks_.load(std::memory_order_relaxed); }
  // The block hook is in (LinuxProcess::install_block_hooks): post_host_signal
  // leaves a handled signal to on_block. Before a run.
  void note_block_hook_installed() { block_hook_in_.store(true, std::memory_order_release); }
  // Where on_block stopped the run (the start of a block none of whose
  // instructions ran), and forgets it; nullopt when it did not. After a run.
  std::optional<std::uint64_t> take_block_stop_pc() { return std::exchange(block_stop_pc_, std::nullopt); }
  // Takes the host's signals and applies the default action of those pending
  // with no handler; true when one ended the process. A signal with a handler
  // stays pending (its frame needs an exact pc: the next syscall's return or
  // block's start).
  bool end_by_fatal_host_signal();
  // An exec'd image takes what its predecessor left (inherited_state.h):
  // descriptors, working directory, umask, signals, tree, image number.
  void apply_inherited_state(const InheritedState& state);
  std::uint64_t image_serial() const { return image_serial_; }
  std::uint64_t tree_root_pid() const { return tree_root_pid_; }
  // ---- end of the process tree ----

  const Termination& termination() const { return termination_; }
  std::uint64_t syscall_count() const { return syscall_count_; }

 private:
  std::int64_t dispatch(arch::SyscallId id, std::uint64_t number, const SyscallArgs& a);
  // Whether syscall `id` failing with EPIPE gives the caller SIGPIPE (a
  // write to a pipe or socket with no reader; send without MSG_NOSIGNAL).
  static bool raises_sigpipe(arch::SyscallId id, const SyscallArgs& a);
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
  // The size of the guest's long and pointer: 8 on the 64-bit ABIs, 4 on the others.
  std::size_t guest_word_bytes() const { return arch_.elf_64bit ? 8 : 4; }
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

  // File family helpers (syscalls_file.cpp). file_syscall asks each group in turn.
  std::optional<std::int64_t> read_write_syscall(arch::SyscallId id, const SyscallArgs& a);
  std::optional<std::int64_t> descriptor_syscall(arch::SyscallId id, const SyscallArgs& a);
  std::optional<std::int64_t> path_syscall(arch::SyscallId id, const SyscallArgs& a);
  std::optional<std::int64_t> poll_syscall(arch::SyscallId id, const SyscallArgs& a);
  std::int64_t do_close_range(const SyscallArgs& a);
  // fchmod, fchown, ftruncate, fsync, fdatasync, flock, fallocate, fadvise64, fstatfs, fgetxattr.
  std::int64_t do_descriptor_op(arch::SyscallId id, const SyscallArgs& a);
  std::int64_t do_copy_file_range(const SyscallArgs& a);
  std::int64_t do_ppoll(const SyscallArgs& a);
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
  // The operations on a named file: unlink ... llistxattr (path_syscall's last list).
  std::int64_t do_path_op(arch::SyscallId id, const SyscallArgs& a);
  SysResult<HostLocation> locate_path(int dirfd, std::uint64_t address, bool follow);
  std::int64_t do_unlink(arch::SyscallId id, const SyscallArgs& a);    // unlink, unlinkat, rmdir
  std::int64_t do_mkdir(arch::SyscallId id, const SyscallArgs& a);     // mkdir, mkdirat
  std::int64_t do_rename(arch::SyscallId id, const SyscallArgs& a);    // rename, renameat, renameat2
  std::int64_t do_link(arch::SyscallId id, const SyscallArgs& a);      // link, linkat
  std::int64_t do_symlink(arch::SyscallId id, const SyscallArgs& a);   // symlink, symlinkat
  std::int64_t do_chmod(arch::SyscallId id, const SyscallArgs& a);     // chmod, fchmodat, fchmodat2
  std::int64_t do_chown(arch::SyscallId id, const SyscallArgs& a);     // chown, lchown, fchownat
  std::int64_t do_truncate(arch::SyscallId id, const SyscallArgs& a);
  std::int64_t do_statfs(const SyscallArgs& a);
  std::int64_t do_utimensat(arch::SyscallId id, const SyscallArgs& a);
  std::int64_t do_getxattr(arch::SyscallId id, const SyscallArgs& a);  // getxattr, lgetxattr, listxattr, llistxattr
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

  // Network family helpers (syscalls_net.cpp).
  // Whether `id` only reads, writes or describes `fd`, a host AF_UNIX socket
  // (a socketpair's: allowed without --allow-net).
  bool on_local_socket(arch::SyscallId id, int fd) const;
  // Copy a guest socket address in
  // (EINVAL when longer than sockaddr_storage, EFAULT, EACCES for a Unix path
  // under --rootfs) or out (truncated to the guest's *length, which then holds
  // the full length); return 0 or a negative errno.
  std::int64_t copy_in_sockaddr(std::uint64_t address, std::uint64_t length, sockaddr_storage& out,
                                socklen_t& out_length);
  std::int64_t copy_out_sockaddr(std::uint64_t address, std::uint64_t length_address, const sockaddr_storage& in,
                                 socklen_t in_length);

  // Signal family (syscalls_signal.cpp).
  std::optional<std::int64_t> signal_syscall(arch::SyscallId id, const SyscallArgs& a);
  // Sends guest signal `guest_signal` (si_code `code`) to the process
  // (`thread` nullptr) or to one of its threads; returns 0 or -EINVAL.
  // Delivery happens as the syscall returns, or when that thread runs.
  std::int64_t do_send_signal(int guest_signal, int code, GuestThread* thread, std::uint64_t value = 0);
  // rt_sigqueueinfo (thread -1) and rt_tgsigqueueinfo: a signal with the
  // guest's siginfo (its si_code and si_value), to itself or, with SI_QUEUE,
  // to another process of its tree.
  std::int64_t do_sigqueueinfo(std::int64_t pid, std::int64_t thread, int guest_signal, std::uint64_t info_address);
  std::int64_t do_rt_sigaction(int guest_signal, std::uint64_t action, std::uint64_t old_action, std::uint64_t size);
  std::int64_t do_rt_sigaction_without_host_signal(int guest_signal, std::uint64_t action, std::uint64_t old_action);
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
  // Raises SIGALRM when the real timer is due, and reloads it; true when it was.
  bool poll_real_timer();
  // setitimer/getitimer of ITIMER_VIRTUAL (which 1) or ITIMER_PROF (2):
  // arms it for `value` then every `interval` (with `arm`), and gives the
  // time its old setting had left and its interval.
  void cpu_itimer(int which, bool arm, std::chrono::microseconds value, std::chrono::microseconds interval,
                  std::chrono::microseconds& old_remaining, std::chrono::microseconds& old_interval);
  // The process's CPU time so far, in guest instructions (0 before a CPU
  // timer was first armed: counting starts then).
  std::uint64_t guest_instructions() const;
  // Raises SIGVTALRM/SIGPROF for each CPU-time timer that is due, and reloads
  // it; true when one was.
  bool poll_cpu_timers();
  // Every timer: ITIMER_REAL and the POSIX timers (syscalls_timer.cpp) that
  // are due raise their signals; the wake-up thread is armed for the next.
  void poll_timers();
  // The earliest expiry of any timer; nullopt when none is armed.
  std::optional<std::chrono::steady_clock::time_point> next_timer_deadline() const;
  // Arms the wake-up thread for next_timer_deadline(), starting it (and
  // asking for the block hook) at the first armed timer.
  void arm_timer_wakeup();
  // POSIX timers (syscalls_timer.cpp).
  std::optional<std::int64_t> timer_syscall(arch::SyscallId id, const SyscallArgs& a);
  std::int64_t do_timer_create(int clock, std::uint64_t event_address, std::uint64_t id_address);
  std::int64_t do_timer_settime(int id, int flags, std::uint64_t new_address, std::uint64_t old_address, bool time64);
  std::int64_t do_timer_gettime(int id, std::uint64_t address, bool time64);
  // Reads or writes a struct itimerspec (two timespecs; 64-bit fields on
  // 64-bit ABIs and the time64 calls). False on EFAULT.
  bool copy_in_itimerspec(std::uint64_t address, bool time64, std::chrono::nanoseconds& interval,
                          std::chrono::nanoseconds& value) const;
  bool copy_out_itimerspec(std::uint64_t address, bool time64, std::chrono::nanoseconds interval,
                           std::chrono::nanoseconds value);
  void fire_posix_timer(int id, PosixTimer& timer);
  // Whether a pending signal came from a POSIX timer re-armed or deleted
  // since: it is dropped instead of delivered (sigpending still shows it).
  bool stale_timer_signal(const SignalOrigin& origin) const;
  // How a wait on the host ended (wait_for_host).
  enum class WaitEnd { kReady, kTimedOut, kInterrupted, kWouldBlock };
  // Waits until one of `fds` is ready (poll's revents filled in, their count
  // in *ready when given), `limit` passes (none: no limit; a retried wait
  // keeps its first limit), or a signal becomes deliverable (the real timer
  // included) or tracecorn is asked to stop: kInterrupted. No fds: a sleep.
  // Alone, the thread waits on the host in short slices, so it stays
  // interruptible; with other threads it never waits: kWouldBlock, the wait
  // described in park_, and the handler returns kBlockAndRetry.
  WaitEnd wait_for_host(std::span<pollfd> fds, std::optional<std::chrono::steady_clock::time_point> limit, int* ready);
  // ERESTARTSYS: a blocking syscall interrupted by a signal; on_trap turns it
  // into EINTR, or restarts the syscall when the handler has SA_RESTART.
  static constexpr std::int64_t kRestartSys = -512;
  // What a handler returns when the running thread cannot go on (other
  // threads run meanwhile; on_trap parks it and switches): it waits for
  // park_ and then runs its syscall again (kBlockAndRetry), or gets a result
  // then (kBlockForResult: futex); or it exited (kThreadExited).
  static constexpr std::int64_t kBlockAndRetry = -100001, kBlockForResult = -100002, kThreadExited = -100003;
  static bool parks_thread(std::int64_t result) { return result <= kBlockAndRetry && result >= kThreadExited; }
  // What the observer (and a replay's source) is told a syscall returned: a
  // blocked one is unfinished (ERESTARTSYS), a thread's exit returned 0.
  static std::int64_t told_result(std::int64_t result) {
    return !parks_thread(result) ? result : result == kThreadExited ? 0 : kRestartSys;
  }
  // How wait_for_signal ended.
  enum class SignalWait { kPending, kTimedOut, kStopped, kWouldBlock };
  // Until a signal in `wanted` (host set) is pending, `limit` passes or
  // tracecorn is asked to stop. With other threads it never waits:
  // kWouldBlock, the wait in park_ (the handler returns kBlockAndRetry).
  SignalWait wait_for_signal(std::uint64_t wanted, std::optional<std::chrono::steady_clock::time_point> limit);
  // Delivers the deliverable pending signals, the interrupted code going on
  // at `resume_pc`: returns the pc of the (last) handler entered; nullopt
  // when none was (ignored, or a default action, which may end the process).
  std::optional<std::uint64_t> deliver_pending(std::uint64_t resume_pc);
  bool enter_handler(int signal, const SignalAction& action, const SignalOrigin& origin, std::uint64_t resume_pc);
  // Ignore, stop or terminate; false when the process ended.
  bool take_default_action(int signal, const SignalOrigin& origin);
  // A stop signal's default action: the host process stops with `signal`
  // until a SIGCONT (not in a replay or an embedding: noted, and it goes on).
  void stop_process(int signal);
  SignalAction signal_action(int signal) const;
  std::size_t sigaction_bytes() const;
  // The guest's sigset (its first 8 bytes, its byte order) as a host set, and back.
  std::uint64_t read_guest_sigset(std::span<const std::uint8_t> bytes) const;
  void write_guest_sigset(std::span<std::uint8_t> bytes, std::uint64_t host_set) const;
  std::uint64_t read_guest_sigset_value(std::uint64_t guest_set) const;
  std::array<std::uint8_t, arch::kSiginfoBytes> build_siginfo(int signal, const SignalOrigin& origin) const;
  // The address of tracecorn's sigreturn trampoline page (mapped by
  // map_sigreturn_trampoline); 0 when the architecture needs none or it
  // could not be mapped.
  std::uint64_t sigreturn_trampoline() const { return trampoline_; }

  // Process family helpers (syscalls_process.cpp).
  std::int64_t do_prlimit(int guest_resource, std::uint64_t new_limit, std::uint64_t old_limit);
  // The soft and hard limit of `resource` (0 <= resource < 16) the guest sees:
  // its own setting, else the host's. Returns 0, or the host's errno.
  int current_rlimit(int resource, std::uint64_t (&current)[2]) const;
  std::int64_t do_prctl(const SyscallArgs& a);

  // Process tree family (syscalls_process_tree.cpp, syscalls_exec.cpp).
  std::optional<std::int64_t> process_tree_syscall(arch::SyscallId id, const SyscallArgs& a);
  // fork, vfork, clone without CLONE_VM: the host forks; the child goes on
  // here with become_forked_child. `id` names the syscall in notes.
  std::int64_t do_fork(arch::SyscallId id, std::uint64_t flags, std::uint64_t stack, std::uint64_t parent_tid,
                       std::uint64_t child_tid, std::uint64_t tls);
  void become_forked_child(std::uint64_t flags, std::uint64_t stack, std::uint64_t child_tid, std::uint64_t tls);
  std::int64_t do_wait4(std::int64_t pid, std::uint64_t status_address, int options, std::uint64_t rusage_address);
  std::int64_t do_waitid(int idtype, std::int64_t id, std::uint64_t info_address, int options,
                         std::uint64_t rusage_address);
  // Waits until a child matching `pid` (wait4's meaning) may have changed
  // state; as wait_for_host. `stops_too`: a stop or a continue counts (no
  // descriptor tells those: it looks again every 20 ms).
  WaitEnd wait_for_children(std::int64_t pid, bool stops_too);
  bool copy_out_rusage(std::uint64_t address, const struct rusage& usage);
  // kill of `pid` other than the caller: a process, a group (0: the
  // caller's, < -1), or -1 (every process but the caller), each only of the
  // guest's own tree.
  std::int64_t do_kill_processes(std::int64_t pid, int guest_signal);
  // pidfds (pidfd_open, pidfd_send_signal, waitid's P_PIDFD): a guest
  // descriptor over a host pidfd, of a process of the guest's own tree.
  std::int64_t do_pidfd_open(std::int64_t pid, std::uint64_t flags);
  std::int64_t do_pidfd_send_signal(int fd, int guest_signal, std::uint64_t info_address, std::uint64_t flags);
  // The pid a guest pidfd refers to; -EBADF (not open, or not a pidfd) or
  // -ESRCH (its process is gone and reaped).
  std::int64_t pid_of_pidfd(int fd) const;
  std::int64_t do_execve(int dirfd, std::uint64_t path_address, std::uint64_t argv_address,
                         std::uint64_t envp_address, int flags);
  // A guest array of string pointers ending with a null pointer (argv, envp);
  // sets `error` (EFAULT, E2BIG).
  std::optional<std::vector<std::string>> read_string_array(std::uint64_t address, int& error) const;
  // Moves the signals post_host_signal left into the pending sets, then
  // raises SIGCHLD for the children that ended, stopped or continued since
  // (raise_child_signals). True when it took any (a signal, or children to
  // look at).
  bool take_host_signals();
  // Raises a signal another process sent (a host signal), as its
  // disposition now says: dropped where ignored and not blocked, a child's
  // stop or continue dropped under SA_NOCLDSTOP or when already told.
  void raise_host_signal(int signal, const SignalOrigin& origin);
  // Whether a child's stop or continue (`code`) is news to the guest, which
  // it then records: the host's SIGCHLD and a look at the children
  // (raise_child_signals) may both tell the same change.
  bool child_stop_change_is_new(std::int64_t pid, int code);
  // The signals whose default action ends the process (host bits), and the
  // bookkeeping of fatal_dispositions_ after `signal`'s disposition changed.
  static std::uint64_t fatal_by_default();
  void note_disposition(int signal);
  // SIGCHLD for each child that ended and has not had one, as Linux sends it
  // at the child's death: the disposition of that moment decides (so a
  // child ended and reaped while SIGCHLD was ignored never reaches a handler
  // installed later). Also for a child stopped or continued whose host
  // SIGCHLD was merged into another one still pending (the host's SIGCHLD
  // is not queued: a stop and an earlier child's end may arrive as one).
  void raise_child_signals();
  // Whether an ended child is reaped at once (SIGCHLD set to SIG_IGN, or SA_NOCLDWAIT).
  bool reaps_children_itself() const;
  void raise_child_signal(std::int64_t pid, int code, int status);

  // Event descriptors and epoll (syscalls_events.cpp).
  std::optional<std::int64_t> event_syscall(arch::SyscallId id, const SyscallArgs& a);
  // Installs new host descriptor `host` (-1: errno says why) as the lowest
  // free guest fd, close-on-exec as the guest's O_CLOEXEC in `guest_flags` says.
  std::int64_t install_event_fd(int host, std::uint64_t guest_flags, const char* name, bool counter_words);
  std::int64_t do_epoll_ctl(int epfd, int op, int fd, std::uint64_t event_address);
  std::int64_t do_epoll_wait(int epfd, std::uint64_t events_address, int max_events, int timeout_ms,
                             std::uint64_t mask_address, std::uint64_t mask_size);
  std::int64_t do_timerfd_settime(int fd, int flags, std::uint64_t new_address, std::uint64_t old_address, bool time64);

  // signalfd (syscalls_signal_fd.cpp).
  std::int64_t do_signalfd(int fd, std::uint64_t mask_address, std::uint64_t mask_size, std::uint64_t flags);
  // read(2) of a signalfd: whole struct signalfd_siginfo records, each a
  // pending signal of its mask taken as rt_sigtimedwait takes it.
  std::int64_t read_signal_fd(int fd, SignalFd& signal_fd, std::uint64_t buffer, std::uint64_t count);
  // Makes each signalfd's eventfd readable exactly while one of its signals
  // is pending (before a syscall, and in every host wait's slice).
  void sync_signal_fds();
  // In a forked child: each signalfd gets an eventfd of its own (the
  // inherited one's counter is shared with the parent's, whose pending
  // signals are not the child's), under the same descriptor numbers.
  void renew_signal_fds_after_fork();
  // After an execve (apply_inherited_state): the signalfds among `kept`
  // become signalfds again, each on a fresh eventfd at its host descriptor
  // (descriptors that shared one share one again).
  void adopt_inherited_signal_fds(const std::vector<InheritedDescriptor>& kept);
  // Those two's parts: a new signalfd state on a new eventfd (listed for
  // sync_signal_fds), and a guest descriptor's host descriptor moved onto it.
  std::shared_ptr<SignalFd> fresh_signal_fd(std::uint64_t mask);
  static void rebind_signal_fd(FdEntry& entry, const std::shared_ptr<SignalFd>& signal_fd);

  // Thread family (syscalls_thread.cpp).
  std::optional<std::int64_t> thread_syscall(arch::SyscallId id, const SyscallArgs& a);
  void start_thread_table();
  GuestThread* find_thread(std::int64_t tid);
  std::size_t live_threads() const;
  // clone and clone3 (`id`, named in the note of a refusal): a new thread;
  // without CLONE_THREAD and its companions (a new process), ENOSYS.
  std::int64_t do_clone(arch::SyscallId id, std::uint64_t flags, std::uint64_t stack, std::uint64_t parent_tid,
                        std::uint64_t child_tid, std::uint64_t tls);
  std::int64_t do_clone3(std::uint64_t args_address, std::uint64_t size);
  std::int64_t do_get_robust_list(std::int32_t tid, std::uint64_t head_address, std::uint64_t size_address);
  std::int64_t do_thread_exit(int code);
  // At a thread's death: the robust mutexes it still holds (its
  // set_robust_list list) get FUTEX_OWNER_DIED and wake a waiter.
  void release_robust_futexes(const GuestThread& thread);
  // `wide_time`: the timeout is a 64-bit timespec (64-bit ABIs, futex_time64).
  std::int64_t do_futex(const SyscallArgs& a, bool wide_time);
  std::int64_t do_futex_wait(const SyscallArgs& a, std::uint32_t bitset, bool absolute, bool wide_time);
  std::int64_t do_futex_wake_op(const SyscallArgs& a);
  // Wakes up to `count` waiters on `address` whose bitset meets `bitset`, in
  // the order they began to wait; returns how many.
  int futex_wake(std::uint64_t address, std::int64_t count, std::uint32_t bitset);
  // The threads waiting on `address` with a bit of `bitset`, in the order they began to wait.
  std::vector<GuestThread*> futex_waiters(std::uint64_t address, std::uint32_t bitset) const;
  int futex_requeue(std::uint64_t from, std::uint64_t to, std::int64_t wake_count, std::int64_t move_count);
  // A futex timeout (a[3]) as a deadline; sets `error` (EFAULT, EINVAL).
  std::optional<std::chrono::steady_clock::time_point> futex_deadline(const SyscallArgs& a, bool absolute, bool wide,
                                                                      int& error) const;
  // The scheduler. park_running: the running thread waits for park_ (or
  // exited). schedule_after_syscall: picks the next thread after a park, an
  // exit or a yield and switches to it (waiting on the host when none can
  // run). preempt: the quantum ran out at the block at `address`.
  void park_running(std::int64_t result, const BlockedSyscall& syscall);
  void schedule_after_syscall(std::int64_t result);
  void preempt(std::uint64_t address);
  // Replay: the switch the syscall source's schedule makes here (none: the
  // running thread goes on), inside the syscall hook or at the block at
  // `interrupted_block`.
  void follow_schedule(bool in_syscall_hook, std::uint64_t interrupted_block = 0);
  void wake_waiting_threads();
  GuestThread* next_runnable() const;
  GuestThread* wait_for_runnable();
  // Saves the running thread's registers, restores `next`'s, completes its
  // blocked syscall, delivers its signals, and resumes it (resume_at inside
  // the syscall hook, a pc write in the block hook, where `interrupted_block`
  // is the block the previous thread was entering and did not run).
  void switch_to(GuestThread& next, bool in_syscall_hook, std::uint64_t interrupted_block);
  void start_fresh_thread(GuestThread& thread);
  void report_resumed_syscall(const GuestThread& thread, std::int64_t result);
  // `address` with the instruction set bit the running code has (arm Thumb: bit 0).
  std::uint64_t isa_pc(std::uint64_t address) const;

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
  // Dispositions of guest signals no host signal stands for (mips' SIGEMT), by guest number.
  std::map<int, std::array<std::uint64_t, 4>> actions_without_host_signal_;
  ProcessObserver* observer_ = nullptr;
  SyscallSource* source_ = nullptr;

  std::uint64_t brk_start_ = 0;
  std::uint64_t brk_current_ = 0;
  SignalState signals_;
  // The threads, in creation order; the first is the main thread.
  std::vector<std::unique_ptr<GuestThread>> threads_;
  GuestThread* running_ = nullptr;
  std::uint32_t next_thread_number_ = 1;  // tids are thread_id_base_ + 1, + 2...
  std::uint32_t thread_id_base_ = 0;      // the main thread's tid: the pid (replay: the trace's)
  std::uint64_t next_wait_order_ = 0;
  std::optional<ThreadWait> park_;        // set by a handler that blocks the running thread
  bool yield_requested_ = false;
  bool preemption_ = false;               // a second thread started: the block hook counts quanta
  std::uint64_t quantum_left_ = 0;
  // Guest blocks a thread runs before another runnable thread gets the engine:
  // kQuantumBlocks give or take kQuantumJitter, from a fixed pseudo-random
  // sequence (quantum_sequence_), so that a quantum does not end at the same
  // place of a loop every time (a Go goroutine spinning in an atomic add
  // would otherwise get every preemption signal where Go cannot take it).
  static constexpr std::uint64_t kQuantumBlocks = kSchedulerQuantumBlocks, kQuantumJitter = 64;
  std::uint64_t quantum_sequence_ = 0x9e3779b97f4a7c15;
  std::uint64_t next_quantum();
  std::unique_ptr<TimerWakeup> timer_wakeup_;  // started when the real timer is first armed
  std::atomic<bool> stop_requested_{false};
  std::optional<std::uint64_t> sigreturn_pc_;  // set by sigreturn: registers restored, resume here
  std::uint64_t trampoline_ = 0;
  bool block_hook_wanted_ = false;
  // CPU-time timers: the instruction counter (LinuxProcess's) and the
  // earliest deadline of an armed one (UINT64_MAX: none), the block hook's test.
  const engine::InstructionCounter* instruction_counter_ = nullptr;
  bool cpu_timers_armed_ = false;
  std::uint64_t cpu_timer_next_ = UINT64_MAX;
  std::optional<std::uint64_t> rlimits_[16][2];  // limits the guest set (not applied to the host)
  char thread_name_[16] = {};
  int umask_ = 022;
  std::uint64_t syscall_count_ = 0;
  // The syscall on_trap is running (execve tells it as done before the image goes).
  std::uint64_t trap_pc_ = 0, trap_number_ = 0;
  SyscallArgs trap_args_{};
  Termination termination_;
  // Processes: the children this image forked (pid -> a pidfd to wait on,
  // invalid when none could be opened), the tree's root, this image's number.
  struct ChildProcess {
    HostFd pidfd;
    bool signalled = false;  // its SIGCHLD was raised (it ended)
    bool stopped = false;    // the last stop or continue told to the guest was a stop
  };
  std::map<std::int64_t, ChildProcess> children_;
  std::atomic<bool> children_changed_{false};  // a host SIGCHLD came (post_host_signal)
  std::uint64_t tree_root_pid_ = 0;
  std::uint64_t image_serial_ = 0;
  std::mutex host_signals_mutex_;
  std::vector<std::pair<int, SignalOrigin>> host_signals_;
  std::atomic<bool> host_signals_posted_{false};
  // Signals (host bits) whose disposition is SIG_DFL with an action that ends
  // the process (note_disposition keeps it), and of them those not blocked,
  // published at each syscall's return for the watcher thread; the stop it asked.
  std::uint64_t fatal_dispositions_ = fatal_by_default();
  std::atomic<std::uint64_t> fatal_signals_now_{0};
  std::atomic<bool> fatal_signal_stop_{false};
  std::atomic<bool> fatal_stops_at_blocks_{false};  // on_block makes that stop (a block's start: exact)
  // Signals (host bits) with a handler, and of them those not blocked,
  // published at each syscall's return for the watcher thread: one posted
  // then is due at the next block's start (on_block), so that a guest busy
  // in a loop without syscalls enters its handler as it would under Linux.
  std::uint64_t handled_dispositions_ = 0;
  std::atomic<std::uint64_t> handled_signals_now_{0};
  std::atomic<bool> host_signal_due_{false};
  std::atomic<bool> block_hook_in_{false};
  // The observer that took block interrupts (set_observer), for the watcher
  // thread: it asks it first, and stops the run only when there is none.
  std::atomic<ProcessObserver*> block_interrupts_{nullptr};
  std::optional<std::uint64_t> block_stop_pc_;       // emulation thread only
  std::set<std::string> noted_;
  std::vector<std::uint8_t> scratch_;  // reused I/O buffer
  std::vector<std::weak_ptr<SignalFd>> signal_fds_;  // every signalfd still open (sync_signal_fds)
};

}  // namespace tracecorn::linux_layer
