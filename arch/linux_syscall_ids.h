// Role: the architecture-neutral names of the Linux syscalls tracecorn knows.
// Each arch/ file maps its own syscall numbers onto these ids; the Linux layer
// dispatches on them, so it never sees an architecture's numbering.
// Invariant: ids are dense from 0 to kSyscallIdCount - 1; kUnknown is last.
#pragma once

#include <cstdint>
#include <string_view>

namespace tracecorn::arch {

// X-macro list: one entry per syscall, spelled as the kernel names it.
#define TRACECORN_LINUX_SYSCALLS(X)                                                         \
  X(read) X(write) X(open) X(close) X(stat) X(fstat) X(lstat) X(poll) X(lseek) X(mmap)      \
  X(mprotect) X(munmap) X(brk) X(rt_sigaction) X(rt_sigprocmask) X(rt_sigreturn) X(ioctl)   \
  X(pread64) X(pwrite64) X(readv) X(writev) X(access) X(pipe) X(select) X(sched_yield)      \
  X(mremap) X(msync) X(mincore) X(madvise) X(dup) X(dup2) X(pause) X(nanosleep)             \
  X(getitimer) X(alarm) X(setitimer) X(getpid) X(sendfile) X(socket) X(connect) X(accept)   \
  X(sendto) X(recvfrom) X(sendmsg) X(recvmsg) X(shutdown) X(bind) X(listen)                 \
  X(getsockname) X(getpeername) X(socketpair) X(setsockopt) X(getsockopt) X(clone) X(fork)  \
  X(vfork) X(execve) X(exit) X(wait4) X(kill) X(uname) X(fcntl) X(flock) X(fsync)           \
  X(fdatasync) X(truncate) X(ftruncate) X(getdents) X(getcwd) X(chdir) X(fchdir) X(rename)  \
  X(mkdir) X(rmdir) X(creat) X(link) X(unlink) X(symlink) X(readlink) X(chmod) X(fchmod)    \
  X(chown) X(fchown) X(lchown) X(umask) X(gettimeofday) X(getrlimit) X(getrusage)           \
  X(sysinfo) X(times) X(getuid) X(getgid) X(setuid) X(setgid) X(geteuid) X(getegid)         \
  X(setpgid) X(getppid) X(getpgrp) X(setsid) X(getgroups) X(setgroups) X(getpgid)           \
  X(getsid) X(sigaltstack) X(statfs) X(fstatfs) X(prctl) X(arch_prctl) X(setrlimit)         \
  X(sync) X(gettid) X(getxattr) X(lgetxattr) X(fgetxattr) X(listxattr) X(llistxattr)        \
  X(time) X(futex) X(sched_setaffinity) X(sched_getaffinity) X(getdents64)                  \
  X(set_tid_address) X(fadvise64) X(clock_settime) X(clock_gettime) X(clock_getres)         \
  X(clock_nanosleep) X(exit_group) X(tgkill) X(utimes) X(openat) X(mkdirat) X(fchownat)     \
  X(futimesat) X(newfstatat) X(unlinkat) X(renameat) X(linkat) X(symlinkat) X(readlinkat)   \
  X(fchmodat) X(faccessat) X(pselect6) X(ppoll) X(set_robust_list) X(get_robust_list)       \
  X(utimensat) X(fallocate) X(dup3) X(pipe2) X(prlimit64) X(renameat2) X(getrandom)         \
  X(memfd_create) X(statx) X(rseq) X(faccessat2) X(copy_file_range) X(preadv) X(pwritev)    \
  X(tkill) X(getresuid) X(getresgid) X(sched_getparam) X(sched_getscheduler) X(mlock)       \
  X(munlock) X(epoll_create1) X(eventfd2) X(close_range) X(openat2) X(fchmodat2) X(clone3) X(timer_create) X(timer_settime) X(timer_gettime) X(timer_getoverrun) X(timer_delete)  \
  X(membarrier) X(restart_syscall) X(set_thread_area) X(get_thread_area) X(execveat)        \
  X(rt_sigpending) X(rt_sigsuspend) X(rt_sigtimedwait) X(sigreturn)                         \
  X(waitid) X(pidfd_open) X(pidfd_send_signal) X(getpriority) X(setpriority) X(setresuid)    \
  X(setresgid)                                                                               \
  X(epoll_create) X(epoll_ctl) X(epoll_wait) X(epoll_pwait) X(eventfd) X(timerfd_create)     \
  X(timerfd_settime) X(timerfd_gettime) X(signalfd) X(signalfd4) X(rt_sigqueueinfo)         \
  X(rt_tgsigqueueinfo)                                                                       \
  /* making written code visible to instruction fetch: arm's private call and mips' (one  \
     name, as the kernel's), riscv's */                                                    \
  X(cacheflush) X(riscv_flush_icache)                                                        \
  /* 32-bit ABIs (arm EABI): 64-bit variants and splits, named as the kernel names them */  \
  X(mmap2) X(_llseek) X(ugetrlimit) X(set_tls) X(fstat64) X(stat64) X(lstat64) X(fstatat64) \
  X(fcntl64) X(clock_gettime64) X(clock_getres_time64) X(clock_nanosleep_time64)            \
  X(ftruncate64) X(truncate64) X(futex_time64) X(getuid32) X(getgid32) X(geteuid32)         \
  X(getegid32) X(setuid32) X(setgid32) X(getgroups32) X(setgroups32) X(getresuid32)         \
  X(getresgid32) X(chown32) X(lchown32) X(fchown32) X(setresuid32) X(setresgid32) X(timerfd_settime64) X(timerfd_gettime64)                                         \
  X(rt_sigtimedwait_time64) X(timer_settime64) X(timer_gettime64)                          \
  /* i386: the old mmap (arguments in memory) and the socket multiplexer */                  \
  X(old_mmap) X(socketcall) X(sendfile64) X(waitpid) X(unknown)

enum class SyscallId : std::uint16_t {
#define TRACECORN_SYSCALL_ENUM(name) name,
  TRACECORN_LINUX_SYSCALLS(TRACECORN_SYSCALL_ENUM)
#undef TRACECORN_SYSCALL_ENUM
};

inline constexpr std::size_t kSyscallIdCount = static_cast<std::size_t>(SyscallId::unknown) + 1;

// Returns the kernel's name for `id` ("openat"); "unknown" for SyscallId::unknown.
constexpr std::string_view syscall_name(SyscallId id) {
  constexpr std::string_view kNames[] = {
#define TRACECORN_SYSCALL_NAME(name) #name,
      TRACECORN_LINUX_SYSCALLS(TRACECORN_SYSCALL_NAME)
#undef TRACECORN_SYSCALL_NAME
  };
  const auto index = static_cast<std::size_t>(id);
  return index < kSyscallIdCount ? kNames[index] : std::string_view("unknown");
}

}  // namespace tracecorn::arch
