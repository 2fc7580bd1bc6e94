// Role: the syscalls of a guest process tree: fork, vfork and clone/clone3
// without CLONE_VM (tracecorn forks itself, as qemu-user does: the host copies
// the engine's memory copy-on-write and guest pids are host pids), wait4,
// waitpid and waitid on the children, kill of other processes of the guest's
// own tree, and the signals other processes send tracecorn (posted by the
// CLI's watcher thread, taken here on the emulation thread).
// Threads: the emulation thread, except post_host_signal (any thread).
// Invariants: a guest signals and waits for processes of its own tree only
// (a process whose ancestry does not reach the tree's root is another user's
// to it: EPERM, ESRCH); after a fork the child has one thread (the caller),
// no pending signals and no timers, as on Linux.
#include <dirent.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>

#include "recorder/linux/kernel.h"
#include "recorder/linux/syscall_helpers.h"

namespace tracecorn::linux_layer {

using arch::SyscallId;
using Clock = std::chrono::steady_clock;

namespace {

// A process as /proc/PID/stat shows it: its parent and process group.
struct HostProcess {
  std::int64_t ppid = 0, pgrp = 0;
};

// Process `pid` as /proc/PID/stat shows it now; nullopt when it is gone.
std::optional<HostProcess> read_host_process(const std::string& pid) {
  std::ifstream stat("/proc/" + pid + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return std::nullopt;
  // "pid (comm) state ppid pgrp ...": comm may hold spaces and parentheses.
  const std::size_t close = line.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  char state = 0;
  long ppid = 0, pgrp = 0;
  if (std::sscanf(line.c_str() + close + 1, " %c %ld %ld", &state, &ppid, &pgrp) != 3) return std::nullopt;
  return HostProcess{ppid, pgrp};
}

// Every process of the host, by pid (what /proc lists now).
std::map<std::int64_t, HostProcess> host_processes() {
  std::map<std::int64_t, HostProcess> result;
  DIR* proc = ::opendir("/proc");
  if (!proc) return result;
  while (const dirent* entry = ::readdir(proc)) {
    char* end = nullptr;
    const long pid = std::strtol(entry->d_name, &end, 10);
    if (pid <= 0 || *end) continue;
    if (const auto process = read_host_process(entry->d_name)) result[pid] = *process;
  }
  ::closedir(proc);
  return result;
}

// The pids of `processes` whose ancestry reaches `root` (root included).
std::vector<std::int64_t> tree_members(const std::map<std::int64_t, HostProcess>& processes, std::int64_t root) {
  std::vector<std::int64_t> members;
  for (const auto& [pid, process] : processes) {
    std::int64_t at = pid;
    for (int depth = 0; depth < 4096 && at > 1; ++depth) {
      if (at == root) {
        members.push_back(pid);
        break;
      }
      const auto found = processes.find(at);
      if (found == processes.end()) break;
      at = found->second.ppid;
    }
  }
  return members;
}

// The pids /proc/PID/task/*/children lists: the children each thread of
// `pid` forked. False when the kernel has no such file (CONFIG_PROC_CHILDREN).
bool read_children(std::int64_t pid, std::vector<std::int64_t>& out) {
  const std::string tasks = "/proc/" + std::to_string(pid) + "/task";
  DIR* dir = ::opendir(tasks.c_str());
  if (!dir) return true;  // (gone: no children)
  bool has_file = true;
  while (const dirent* entry = ::readdir(dir)) {
    if (entry->d_name[0] == '.') continue;
    std::ifstream children(tasks + "/" + entry->d_name + "/children");
    if (!children.is_open()) {
      has_file = ::access((tasks + "/" + entry->d_name).c_str(), F_OK) != 0;  // (a thread gone meanwhile)
      if (!has_file) break;
      continue;
    }
    std::int64_t child = 0;
    while (children >> child) out.push_back(child);
  }
  ::closedir(dir);
  return has_file;
}

// The processes of the tree rooted at `root` (root included), by pid: walked
// down through each member's children (the tree's processes are read, not
// every process of the host, at each fork and kill), or, on a kernel that does
// not list children, every process of the host whose ancestry reaches `root`.
// Either way a process whose parent died (reparented outside) has left it.
std::map<std::int64_t, HostProcess> tree_processes(std::int64_t root) {
  constexpr std::size_t kMostProcesses = 1 << 16;  // (a bound on a walk that races forks)
  std::map<std::int64_t, HostProcess> tree;
  std::vector<std::int64_t> pending = {root}, children;
  while (!pending.empty() && tree.size() < kMostProcesses) {
    const std::int64_t pid = pending.back();
    pending.pop_back();
    if (tree.count(pid)) continue;
    const auto process = read_host_process(std::to_string(pid));
    // (A child reparented since its parent listed it has left the tree.)
    if (!process || (pid != root && !tree.count(process->ppid))) continue;
    tree[pid] = *process;
    children.clear();
    if (read_children(pid, children)) {
      pending.insert(pending.end(), children.begin(), children.end());
    } else {
      const auto everyone = host_processes();
      std::map<std::int64_t, HostProcess> scanned;
      for (const std::int64_t member : tree_members(everyone, root)) scanned[member] = everyone.at(member);
      return scanned;
    }
  }
  return tree;
}

// A wait status word in the guest's signal numbering.
int guest_wait_status(const arch::ArchInfo& arch, int status) {
  if (WIFSIGNALED(status)) return (status & ~0x7f) | arch::signal_to_guest(arch, WTERMSIG(status));
  if (WIFSTOPPED(status)) return (status & 0xff) | (arch::signal_to_guest(arch, WSTOPSIG(status)) << 8);
  return status;
}

}  // namespace

bool host_process_descends_from(std::uint64_t pid, std::uint64_t root) {
  auto at = static_cast<std::int64_t>(pid);
  for (int depth = 0; depth < 4096 && at > 1; ++depth) {
    if (at == static_cast<std::int64_t>(root)) return true;
    const auto process = read_host_process(std::to_string(at));
    if (!process) return false;
    at = process->ppid;
  }
  return false;
}

std::optional<std::int64_t> Kernel::process_tree_syscall(SyscallId id, const SyscallArgs& a) {
  constexpr std::uint64_t kSigchld = 17;
  switch (id) {
    case SyscallId::fork: return do_fork(id, kSigchld, 0, 0, 0, 0);
    case SyscallId::vfork: return do_fork(id, kCloneVm | kCloneVfork | kSigchld, 0, 0, 0, 0);
    case SyscallId::wait4:
      return do_wait4(static_cast<std::int32_t>(a[0]), a[1], static_cast<int>(a[2]), a[3]);
    case SyscallId::waitpid: return do_wait4(static_cast<std::int32_t>(a[0]), a[1], static_cast<int>(a[2]), 0);
    case SyscallId::waitid:
      return do_waitid(static_cast<int>(a[0]), static_cast<std::int32_t>(a[1]), a[2], static_cast<int>(a[3]), a[4]);
    case SyscallId::execve: return do_execve(AT_FDCWD, a[0], a[1], a[2], 0);
    case SyscallId::execveat:
      return do_execve(static_cast<int>(static_cast<std::int32_t>(a[0])), a[1], a[2], a[3], static_cast<int>(a[4]));
    case SyscallId::getppid: return ::getppid();
    case SyscallId::setpgid: {
      const auto pid = static_cast<std::int32_t>(a[0]);
      if (pid != 0 && pid != ::getpid() && !children_.count(pid)) return -ESRCH;
      return ::setpgid(pid, static_cast<pid_t>(a[1])) == 0 ? 0 : -errno;
    }
    case SyscallId::setsid: return ::setsid() >= 0 ? ::getpid() : -errno;
    case SyscallId::getpriority: case SyscallId::setpriority: {
      // PRIO_PROCESS/PGRP/USER 0..2; a process other than the caller's own must be of its tree.
      const auto which = static_cast<int>(a[0]);
      const auto who = static_cast<std::int32_t>(a[1]);
      if (which == PRIO_PROCESS && who != 0 && !host_process_descends_from(static_cast<std::uint64_t>(who), tree_root_pid_))
        return -ESRCH;
      if (which != PRIO_PROCESS) return id == SyscallId::getpriority ? 20 - ::getpriority(PRIO_PROCESS, 0) : -EPERM;
      // The raw syscall: getpriority returns 20 - nice, as the guest's libc expects.
      const long result = id == SyscallId::getpriority ? ::syscall(SYS_getpriority, which, who)
                                                       : ::syscall(SYS_setpriority, which, who, static_cast<int>(a[2]));
      return result < 0 ? -errno : result;
    }
    case SyscallId::setresuid: case SyscallId::setresuid32: case SyscallId::setresgid: case SyscallId::setresgid32: {
      // Only "changes" to the current ids succeed: tracecorn never changes its identity.
      const bool user = id == SyscallId::setresuid || id == SyscallId::setresuid32;
      const std::uint32_t current = user ? ::geteuid() : ::getegid();
      for (int i = 0; i < 3; ++i) {
        const auto wanted = static_cast<std::uint32_t>(a[static_cast<std::size_t>(i)]);
        if (wanted != 0xffffffffu && wanted != current) return -EPERM;
      }
      return 0;
    }
    case SyscallId::pidfd_open: return do_pidfd_open(static_cast<std::int32_t>(a[0]), a[1]);
    case SyscallId::pidfd_send_signal: return do_pidfd_send_signal(as_int(a[0]), as_int(a[1]), a[2], a[3]);
    default: return std::nullopt;
  }
}

std::int64_t Kernel::do_fork(SyscallId id, std::uint64_t flags, std::uint64_t stack, std::uint64_t parent_tid,
                             std::uint64_t child_tid, std::uint64_t tls) {
  if (config_.relaunch_command.empty()) {
    note_once(std::string(arch::syscall_name(id)) + " refused with ENOSYS: this embedding runs one process");
    return -ENOSYS;
  }
  if (config_.max_processes &&
      tree_processes(static_cast<std::int64_t>(tree_root_pid_)).size() >= config_.max_processes) {
    note_once(std::string(arch::syscall_name(id)) + ": the guest's processes reached --max-processes " +
              std::to_string(config_.max_processes) + ": EAGAIN");
    return -EAGAIN;
  }
  // A process with a handler that forks may get signals from its children
  // while it runs without syscalls: the kernel's block hook goes in (in both,
  // between runs, from this exact pc) where no observer's hook takes them.
  if (handled_dispositions_ && !block_hook_in_.load(std::memory_order_relaxed) &&
      !block_interrupts_.load(std::memory_order_relaxed) && !block_hook_wanted_) {
    block_hook_wanted_ = true;
    uc_emu_stop(engine_);
  }
  // vfork: the parent goes on once the child has exec'd or exited, which
  // closes the child's end of this pipe (close-on-exec).
  int vfork_pipe[2] = {-1, -1};
  if ((flags & kCloneVfork) && ::pipe2(vfork_pipe, O_CLOEXEC) != 0) return -EAGAIN;
  // The recorder's drain held first, then every stdio buffer emptied: the
  // child's copies of the parent's streams (its trace file among them) start
  // empty, so nothing the child flushes later (its exec's fflush) can write
  // the parent's bytes a second time at the offset the two share.
  if (config_.lifecycle) config_.lifecycle->before_fork();
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid != 0 && config_.lifecycle) config_.lifecycle->after_fork_in_parent();
  if (pid < 0) {
    const int error = errno;
    if (vfork_pipe[0] >= 0) ::close(vfork_pipe[0]), ::close(vfork_pipe[1]);
    return -error;
  }
  if (pid == 0) {
    if (vfork_pipe[0] >= 0) ::close(vfork_pipe[0]);
    become_forked_child(flags, stack, child_tid, tls);
    return 0;
  }
  const int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  children_[pid].pidfd = HostFd(pidfd >= 0 ? ::fcntl(pidfd, F_DUPFD_CLOEXEC, 10) : -1);
  if (pidfd >= 0) ::close(pidfd);
  if ((flags & kCloneParentSettid) && !copy_out_words32(parent_tid, {static_cast<std::uint64_t>(pid)})) return -EFAULT;
  if (vfork_pipe[0] >= 0) {
    ::close(vfork_pipe[1]);
    char byte;
    while (::read(vfork_pipe[0], &byte, 1) < 0 && errno == EINTR) {
    }
    ::close(vfork_pipe[0]);
  }
  if (observer_) observer_->on_process_forked(static_cast<std::uint64_t>(pid), arch::syscall_name(id));
  return pid;
}

void Kernel::become_forked_child(std::uint64_t flags, std::uint64_t stack, std::uint64_t child_tid, std::uint64_t tls) {
  // Only the calling thread goes on, as the process's main thread.
  const auto pid = static_cast<std::uint32_t>(::getpid());
  for (auto& thread : threads_)
    if (thread.get() == running_) {
      std::unique_ptr<GuestThread> self = std::move(thread);
      threads_.clear();
      threads_.push_back(std::move(self));
      break;
    }
  running_->tid = pid;
  thread_id_base_ = pid;
  running_->clear_child_tid = 0;
  running_->robust_list = 0;  // Linux: the child's robust list head is cleared
  next_thread_number_ = 1;
  park_.reset();
  yield_requested_ = false;
  // No pending signals, no timers (their wake-up thread did not survive the
  // fork: forgotten, not joined), no children of its own.
  signals_.pending = 0;
  signals_.shared_pending = 0;
  renew_signal_fds_after_fork();
  signals_.real_timer = RealTimer{};
  signals_.cpu_timers = {};
  cpu_timer_next_ = UINT64_MAX;
  signals_.posix_timers.clear();
  if (timer_wakeup_) (void)timer_wakeup_.release();
  children_.clear();
  {
    std::lock_guard lock(host_signals_mutex_);
    host_signals_.clear();
  }
  if (stack) uc_reg_write(engine_, arch_.sp_reg, &stack);
  if (flags & kCloneSettls) (void)cpu_.set_thread_pointer(tls);
  if (flags & kCloneChildSettid) (void)copy_out_words32(child_tid, {pid});
  if (flags & kCloneChildCleartid) running_->clear_child_tid = child_tid;
  if (config_.lifecycle) config_.lifecycle->after_fork_in_child(pid);
}

Kernel::WaitEnd Kernel::wait_for_children(std::int64_t pid, bool stops_too) {
  std::vector<pollfd> fds;
  bool unknown = false;  // a child this image did not fork (its pidfd is missing)
  for (const auto& [child, process] : children_) {
    if (pid > 0 && child != pid) continue;
    if (process.pidfd.valid()) fds.push_back(pollfd{process.pidfd.get(), POLLIN, 0});
    else unknown = true;
  }
  // Without a descriptor to wait on, look again in a while.
  std::optional<Clock::time_point> limit;
  if (fds.empty() || unknown || stops_too) limit = Clock::now() + std::chrono::milliseconds(fds.empty() ? 5 : 20);
  return wait_for_host(fds, limit, nullptr);
}

std::int64_t Kernel::do_wait4(std::int64_t pid, std::uint64_t status_address, int options,
                              std::uint64_t rusage_address) {
  constexpr int kKnownOptions = WNOHANG | WUNTRACED | WCONTINUED | __WALL | __WCLONE | __WNOTHREAD;
  if (options & ~kKnownOptions) return -EINVAL;
  while (true) {
    int status = 0;
    struct rusage usage {};
    const pid_t got = ::wait4(static_cast<pid_t>(pid), &status, options | WNOHANG, &usage);
    if (got < 0) return -errno;
    if (got > 0) {
      if (WIFEXITED(status) || WIFSIGNALED(status)) {
        if (WIFEXITED(status)) raise_child_signal(got, CLD_EXITED, WEXITSTATUS(status));
        else raise_child_signal(got, WCOREDUMP(status) ? CLD_DUMPED : CLD_KILLED, WTERMSIG(status));
        children_.erase(got);
        // SIGCHLD ignored or SA_NOCLDWAIT: the child was reaped by itself; the wait goes on
        // until no child is left (then ECHILD), as Linux's does.
        if (reaps_children_itself()) continue;
      }
      const std::int32_t word = guest_wait_status(arch_, status);
      if (status_address && !copy_out_words32(status_address, {static_cast<std::uint32_t>(word)})) return -EFAULT;
      if (rusage_address && !copy_out_rusage(rusage_address, usage)) return -EFAULT;
      return got;
    }
    if (options & WNOHANG) return 0;
    switch (wait_for_children(pid, (options & (WUNTRACED | WCONTINUED)) != 0)) {
      case WaitEnd::kInterrupted: return kRestartSys;
      case WaitEnd::kWouldBlock: return kBlockAndRetry;
      default: break;
    }
  }
}

std::int64_t Kernel::do_waitid(int idtype, std::int64_t id, std::uint64_t info_address, int options,
                               std::uint64_t rusage_address) {
  constexpr int kKnownOptions = WNOHANG | WEXITED | WSTOPPED | WCONTINUED | WNOWAIT | __WALL | __WCLONE | __WNOTHREAD;
  if ((options & ~kKnownOptions) || !(options & (WEXITED | WSTOPPED | WCONTINUED))) return -EINVAL;
  bool nonblocking_pidfd = false;  // PIDFD_NONBLOCK: EAGAIN where waitid would block
  if (idtype == P_PIDFD) {          // the pidfd's process, as P_PID
    if (id < 0) return -EINVAL;     // (before the descriptor is looked at, as kernel_waitid)
    const std::int64_t pid = pid_of_pidfd(static_cast<int>(id));
    if (pid < 0) return pid == -ESRCH ? -ECHILD : pid;  // reaped: no child of that pid any more
    nonblocking_pidfd = (::fcntl(fs_.host_fd(static_cast<int>(id)), F_GETFL) & O_NONBLOCK) != 0;
    idtype = P_PID;
    id = pid;
  }
  if (idtype < P_ALL || idtype > P_PGID) return -EINVAL;
  while (true) {
    siginfo_t info {};
    struct rusage usage {};
    if (::syscall(SYS_waitid, idtype, static_cast<pid_t>(id), &info, options | WNOHANG, &usage) != 0) return -errno;
    if (info.si_pid != 0 || (options & WNOHANG)) {
      if (info.si_pid && info.si_code != CLD_STOPPED && info.si_code != CLD_CONTINUED) {
        raise_child_signal(info.si_pid, info.si_code, info.si_status);
        if (reaps_children_itself()) {  // reaped by itself (see do_wait4)
          if (options & WNOWAIT) (void)::waitpid(info.si_pid, nullptr, WNOHANG);
          children_.erase(info.si_pid);
          if (!(options & WNOHANG)) continue;
          info = siginfo_t{};  // WNOHANG: nothing to report
        } else if (!(options & WNOWAIT)) {
          children_.erase(info.si_pid);
        }
      }
      if (info_address) {
        SignalOrigin origin;
        origin.code = info.si_code;
        origin.pid = static_cast<std::uint64_t>(info.si_pid);
        origin.uid = info.si_uid;
        origin.child_status = info.si_status;
        auto bytes = build_siginfo(SIGCHLD, origin);
        if (!info.si_pid) bytes.fill(0);  // WNOHANG and nothing to report: a zeroed siginfo
        if (!copy_out(info_address, bytes.data(), bytes.size())) return -EFAULT;
      }
      if (rusage_address && !copy_out_rusage(rusage_address, usage)) return -EFAULT;
      return 0;
    }
    if (nonblocking_pidfd) return -EAGAIN;
    switch (wait_for_children(idtype == P_PID ? id : -1, (options & (WSTOPPED | WCONTINUED)) != 0)) {
      case WaitEnd::kInterrupted: return kRestartSys;
      case WaitEnd::kWouldBlock: return kBlockAndRetry;
      default: break;
    }
  }
}

bool Kernel::copy_out_rusage(std::uint64_t address, const struct rusage& usage) {
  // Two timevals and fourteen longs, in the guest's word size and byte order.
  const std::uint64_t words[18] = {
      static_cast<std::uint64_t>(usage.ru_utime.tv_sec), static_cast<std::uint64_t>(usage.ru_utime.tv_usec),
      static_cast<std::uint64_t>(usage.ru_stime.tv_sec), static_cast<std::uint64_t>(usage.ru_stime.tv_usec),
      static_cast<std::uint64_t>(usage.ru_maxrss), static_cast<std::uint64_t>(usage.ru_ixrss),
      static_cast<std::uint64_t>(usage.ru_idrss), static_cast<std::uint64_t>(usage.ru_isrss),
      static_cast<std::uint64_t>(usage.ru_minflt), static_cast<std::uint64_t>(usage.ru_majflt),
      static_cast<std::uint64_t>(usage.ru_nswap), static_cast<std::uint64_t>(usage.ru_inblock),
      static_cast<std::uint64_t>(usage.ru_oublock), static_cast<std::uint64_t>(usage.ru_msgsnd),
      static_cast<std::uint64_t>(usage.ru_msgrcv), static_cast<std::uint64_t>(usage.ru_nsignals),
      static_cast<std::uint64_t>(usage.ru_nvcsw), static_cast<std::uint64_t>(usage.ru_nivcsw)};
  const std::size_t word = guest_word_bytes();
  std::uint8_t bytes[18 * 8] = {};
  arch::FrameWriter writer(std::span(bytes, 18 * word), arch_.little_endian);
  for (std::size_t i = 0; i < 18; ++i) writer.put(i * word, word, words[i]);
  return copy_out(address, bytes, 18 * word);
}

std::int64_t Kernel::do_pidfd_open(std::int64_t pid, std::uint64_t flags) {
  // PIDFD_NONBLOCK is O_NONBLOCK, in the guest's numbering (mips has its own).
  const auto host_flags = static_cast<int>(arch::open_flags_to_host(arch_, flags));
  if ((host_flags & ~O_NONBLOCK) || pid <= 0) return -EINVAL;
  // A process outside the guest's tree is as one that does not exist.
  if (pid != ::getpid() && !host_process_descends_from(static_cast<std::uint64_t>(pid), tree_root_pid_)) return -ESRCH;
  const int host =
      GuestFs::lift_host_fd(static_cast<int>(::syscall(SYS_pidfd_open, static_cast<pid_t>(pid), host_flags)));
  if (host < 0) return -errno;
  return fs_.install(host, /*close_on_exec=*/true, "anon_inode:[pidfd]");  // always close-on-exec, as Linux
}

std::int64_t Kernel::pid_of_pidfd(int fd) const {
  const int host = fs_.host_fd(fd);
  if (host < 0) return -EBADF;
  // The kernel names a pidfd's process in its fdinfo ("Pid:\t-1" once reaped).
  std::FILE* fdinfo = std::fopen(("/proc/self/fdinfo/" + std::to_string(host)).c_str(), "re");
  if (!fdinfo) return -EBADF;
  char line[128];
  std::int64_t pid = -EBADF;  // not a pidfd: Linux's pidfd_pid() says EBADF
  while (std::fgets(line, sizeof line, fdinfo)) {
    long long value = 0;
    if (std::sscanf(line, "Pid:\t%lld", &value) == 1) pid = value > 0 ? value : -ESRCH;
  }
  std::fclose(fdinfo);
  return pid;
}

std::int64_t Kernel::do_pidfd_send_signal(int fd, int guest_signal, std::uint64_t info_address, std::uint64_t flags) {
  const std::int64_t pid = pid_of_pidfd(fd);
  if (pid < 0) return pid;
  if (flags != 0) return -EINVAL;
  // With a siginfo, as rt_sigqueueinfo to that process; without, as kill (SI_USER).
  if (info_address) return do_sigqueueinfo(pid, -1, guest_signal, info_address);
  if (pid == ::getpid()) return do_send_signal(guest_signal, kSiUser, nullptr);
  return do_kill_processes(pid, guest_signal);
}

std::int64_t Kernel::do_kill_processes(std::int64_t pid, int guest_signal) {
  if (guest_signal < 0 || guest_signal > kMaxSignal) return -EINVAL;
  const int signal = guest_signal == 0 ? 0 : arch::signal_to_host(arch_, guest_signal);
  if (guest_signal != 0 && signal == 0) return -EINVAL;
  const std::int64_t own_pid = ::getpid();
  const auto members = tree_processes(static_cast<std::int64_t>(tree_root_pid_));
  std::vector<std::int64_t> targets;
  const std::int64_t own_group = ::getpgrp();
  for (const auto& [member, process] : members) {
    const std::int64_t group = process.pgrp;
    if ((pid > 0 && member == pid) || (pid == 0 && group == own_group) || (pid == -1 && member != own_pid) ||
        (pid < -1 && group == -pid))
      targets.push_back(member);
  }
  if (targets.empty()) {
    // Not of the guest's tree: as another user's process (EPERM) when it exists.
    if (pid > 0 && read_host_process(std::to_string(pid))) return -EPERM;
    return -ESRCH;
  }
  bool self = false;
  int delivered = 0, last_error = 0;
  for (const std::int64_t target : targets) {
    if (target == own_pid) {
      self = true;
      continue;
    }
    if (::kill(static_cast<pid_t>(target), signal) == 0) ++delivered;
    else last_error = errno;
  }
  if (self) {
    const std::int64_t result = do_send_signal(guest_signal, kSiUser, nullptr);
    if (result == 0) ++delivered;
    else last_error = static_cast<int>(-result);
  }
  return delivered ? 0 : -last_error;
}

void Kernel::post_host_signal(int signal, const SignalOrigin& origin) noexcept {
  // A child that ended: the emulation thread raises SIGCHLD itself
  // (raise_child_signals). One that stopped or continued: the host's SIGCHLD
  // says so, and goes to the guest with its code (take_host_signals). (The
  // host's SIGCHLDs coalesce as the guest's would: one that says a stop may
  // stand for an end too, so the children are looked at in any case.)
  // One for a handler the guest does not block: due at the next block's
  // start, where the kernel's block hook (on_block) or the observer's (a
  // recorder's) delivers it.
  const bool for_handler = handled_signals_now_.load(std::memory_order_relaxed) & signal_bit(signal);
  // (Never a stop from here to resume after: Unicorn 2 may leave the pc of
  // a run stopped from another thread behind what already ran, unicorn
  // issue #1355. Without either hook the signal waits for the next syscall.)
  const auto wake_handler = [&] {
    if (!for_handler) return;
    if (block_hook_in_.load(std::memory_order_acquire)) {
      host_signal_due_.store(true, std::memory_order_release);
    } else if (ProcessObserver* observer = block_interrupts_.load(std::memory_order_acquire)) {
      observer->interrupt_next_block();
    }
  };
  if (signal == SIGCHLD) {
    children_changed_.store(true, std::memory_order_release);
    if (origin.code != CLD_STOPPED && origin.code != CLD_CONTINUED) return wake_handler();
  }
  {
    std::lock_guard lock(host_signals_mutex_);
    host_signals_.emplace_back(signal, origin);
    host_signals_posted_.store(true, std::memory_order_release);
  }
  // A guest busy in a loop makes no syscall to take it: a signal that ends
  // the process stops the run now (Unicorn allows uc_emu_stop from another
  // thread; the pc it leaves may be a block's start, which an end does not
  // use, and the instructions after it run without hooks), or at the next
  // block's start (on_block) for a recording.
  if (fatal_signals_now_.load(std::memory_order_relaxed) & signal_bit(signal)) {
    fatal_signal_stop_.store(true, std::memory_order_release);
    if (!fatal_stops_at_blocks_.load(std::memory_order_relaxed)) uc_emu_stop(engine_);
  }
  wake_handler();
}

bool Kernel::end_by_fatal_host_signal() {
  take_host_signals();
  while (const int signal = signals_.next_deliverable()) {
    if (signal_action(signal).handler != kSigDefault) return false;
    const SignalOrigin origin = signals_.take(signal);
    if (!take_default_action(signal, origin)) return true;
  }
  return false;
}

void Kernel::raise_child_signal(std::int64_t pid, int code, int status) {
  const auto found = children_.find(pid);
  if (found == children_.end() || found->second.signalled) return;
  found->second.signalled = true;
  const SignalAction action = signal_action(SIGCHLD);
  if ((action.handler == kSigIgnore || action.handler == kSigDefault) && !(signals_.blocked & signal_bit(SIGCHLD)))
    return;  // discarded at once, as Linux does for an ignored signal
  SignalOrigin origin;
  origin.code = code;
  origin.pid = static_cast<std::uint64_t>(pid);
  origin.uid = ::getuid();
  origin.child_status = status;
  signals_.raise_shared(SIGCHLD, origin);
}

void Kernel::raise_child_signals() {
  std::vector<std::int64_t> ended;
  for (auto& [pid, child] : children_) {
    if (child.signalled || !child.pidfd.valid()) continue;
    siginfo_t info {};
    pollfd ready{child.pidfd.get(), POLLIN, 0};
    if (::poll(&ready, 1, 0) == 1) {
      if (::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == pid) {
        raise_child_signal(pid, info.si_code, info.si_status);
        ended.push_back(pid);
      }
      continue;
    }
    // Stopped or continued and not yet told (WNOWAIT: the guest's own wait still sees it).
    if (::waitid(P_PID, static_cast<id_t>(pid), &info, WSTOPPED | WCONTINUED | WNOHANG | WNOWAIT) != 0 ||
        info.si_pid != pid)
      continue;
    SignalOrigin origin;
    origin.code = info.si_code;
    origin.pid = static_cast<std::uint64_t>(pid);
    origin.uid = info.si_uid;
    origin.child_status = info.si_status;
    raise_host_signal(SIGCHLD, origin);
  }
  // SIGCHLD set to SIG_IGN or SA_NOCLDWAIT: a child that ends is reaped at once (no zombie,
  // and a wait finds it gone), as Linux does.
  if (reaps_children_itself())
    for (const std::int64_t pid : ended) {
      (void)::waitpid(static_cast<pid_t>(pid), nullptr, WNOHANG);
      children_.erase(pid);
    }
}

bool Kernel::child_stop_change_is_new(std::int64_t pid, int code) {
  const auto found = children_.find(pid);
  if (found == children_.end()) return true;  // not one this image forked: as the host says
  const bool stopped = code == CLD_STOPPED;
  if (found->second.stopped == stopped) return false;
  found->second.stopped = stopped;
  return true;
}

void Kernel::raise_host_signal(int signal, const SignalOrigin& origin) {
  const SignalAction action = signal_action(signal);
  if (signal == SIGCHLD && (origin.code == CLD_STOPPED || origin.code == CLD_CONTINUED)) {
    if (!child_stop_change_is_new(static_cast<std::int64_t>(origin.pid), origin.code)) return;
    if (action.flags & kSaNoCldStop) return;  // SA_NOCLDSTOP: no SIGCHLD when a child stops or continues
  }
  const bool ignored =
      action.handler == kSigIgnore || (action.handler == kSigDefault && default_action_is_ignore(signal));
  if (ignored && !(signals_.blocked & signal_bit(signal))) return;
  signals_.raise_shared(signal, origin);
}

bool Kernel::reaps_children_itself() const {
  // SIGCHLD ignored, or SA_NOCLDWAIT (a handler then still runs): no zombies.
  const SignalAction action = signal_action(SIGCHLD);
  return action.handler == kSigIgnore || (action.flags & arch_.signal_abi.sa_nocldwait);
}

bool Kernel::take_host_signals() {
  // (A plain load first: this runs at every syscall's return.) The posted
  // signals first: they tell the children's changes in their order, the look
  // at the children after them only what a merged SIGCHLD left out.
  bool took = false;
  if (host_signals_posted_.load(std::memory_order_acquire)) {
    std::vector<std::pair<int, SignalOrigin>> posted;
    {
      std::lock_guard lock(host_signals_mutex_);
      posted.swap(host_signals_);
      host_signals_posted_.store(false, std::memory_order_relaxed);
    }
    for (const auto& [signal, origin] : posted) raise_host_signal(signal, origin);
    took = true;
  }
  if (children_changed_.load(std::memory_order_relaxed) && children_changed_.exchange(false, std::memory_order_acq_rel)) {
    raise_child_signals();
    took = true;
  }
  return took;
}

}  // namespace tracecorn::linux_layer
