// Role: guest sample "signal_fd": blocked signals read from a signalfd
// rather than taken by a handler. raise (ssi_code SI_TKILL, ssi_pid its own
// pid), kill and sigqueue with a value (SI_USER, SI_QUEUE, ssi_int) read
// together in one read, lowest signal first; a non-blocking read with nothing
// pending (EAGAIN) and a buffer smaller than one record (EINVAL); poll and
// epoll seeing it readable only while one of its signals is pending; a new
// mask through signalfd(fd, ...) (a blocked signal outside it stays pending);
// a write refused (EINVAL); a blocking read waiting for a child's SIGCHLD
// (CLD_EXITED, ssi_status, ssi_pid); a forked child seeing none of its
// parent's pending signals on an inherited signalfd; a dup reading the same signals.
// Invariants: deterministic output only (no pids, no times).
// Directives (see samples/README.md):
// archs: x86_64 i386 arm aarch64 riscv64 mips mipsel
// exit: 0
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static int readable(int fd) {
  struct pollfd ready = {fd, POLLIN, 0};
  return poll(&ready, 1, 0) == 1 && (ready.revents & POLLIN);
}

static const char* error_name(int error) {
  return error == EAGAIN ? "EAGAIN" : error == EINVAL ? "EINVAL" : error == EFAULT ? "EFAULT" : strerror(error);
}

static const char* yes(int condition) { return condition ? "yes" : "no"; }

static void reads_and_codes(int fd) {
  struct signalfd_siginfo info[2];
  errno = 0;
  int got = (int)read(fd, info, sizeof info);
  printf("nothing pending: read %d %s, readable %d\n", got, error_name(errno), readable(fd));
  raise(SIGUSR1);
  printf("after raise: readable %d\n", readable(fd));
  errno = 0;
  got = (int)read(fd, info, sizeof info[0] - 1);
  printf("a buffer under one record: %d %s\n", got, error_name(errno));
  got = (int)read(fd, info, sizeof info);
  printf("read %d record(s): SIGUSR1 %s, SI_TKILL %s, its own pid %s\n", got / (int)sizeof info[0],
         yes(info[0].ssi_signo == SIGUSR1), yes(info[0].ssi_code == SI_TKILL),
         yes(info[0].ssi_pid == (uint32_t)getpid()));
  printf("after the read: readable %d\n", readable(fd));
  union sigval value;
  value.sival_int = 1234;
  sigqueue(getpid(), SIGUSR2, value);
  kill(getpid(), SIGUSR1);
  got = (int)read(fd, info, sizeof info);
  printf("two in one read: %d records, SIGUSR1 first %s (SI_USER %s), then SIGUSR2 %s (SI_QUEUE %s, value %d)\n",
         got / (int)sizeof info[0], yes(info[0].ssi_signo == SIGUSR1), yes(info[0].ssi_code == SI_USER),
         yes(info[1].ssi_signo == SIGUSR2), yes(info[1].ssi_code == SI_QUEUE), info[1].ssi_int);
}

static void epoll_and_new_mask(int fd) {
  const int poller = epoll_create1(EPOLL_CLOEXEC);
  struct epoll_event event;
  memset(&event, 0, sizeof event);
  event.events = EPOLLIN;
  event.data.u32 = 77;
  if (epoll_ctl(poller, EPOLL_CTL_ADD, fd, &event) != 0) perror("epoll_ctl");
  struct epoll_event out;
  printf("epoll, nothing pending: %d\n", epoll_wait(poller, &out, 1, 0));
  sigset_t narrower;
  sigemptyset(&narrower);
  sigaddset(&narrower, SIGUSR1);
  printf("a new mask (SIGUSR1 alone) on the same descriptor: %s\n", yes(signalfd(fd, &narrower, 0) == fd));
  raise(SIGUSR2);
  printf("SIGUSR2, outside the mask: epoll %d\n", epoll_wait(poller, &out, 1, 0));
  raise(SIGUSR1);
  const int ready = epoll_wait(poller, &out, 1, 0);
  printf("SIGUSR1: epoll %d, data %u\n", ready, ready == 1 ? out.data.u32 : 0);
  struct signalfd_siginfo info;
  printf("it reads SIGUSR1: %s\n", yes(read(fd, &info, sizeof info) == sizeof info && info.ssi_signo == SIGUSR1));
  sigset_t pending;
  sigpending(&pending);
  printf("SIGUSR2 still pending: %s\n", yes(sigismember(&pending, SIGUSR2)));
  errno = 0;
  const int wrote = (int)write(fd, "x", 1);
  printf("write: %d %s\n", wrote, error_name(errno));
  close(poller);
}

// What the kernel refuses: a mask of the wrong size, one it cannot read,
// flags it does not know, a descriptor that is no signalfd, a buffer it
// cannot write (the signal it took is lost, as in Linux).
static void refused(void) {
  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGUSR1);
  void* volatile unreadable = (void*)8;
  long result;
  errno = 0;
  result = syscall(SYS_signalfd4, -1, &mask, 4, 0);
  printf("mask size 4: %ld %s\n", result, error_name(errno));
  errno = 0;
  result = syscall(SYS_signalfd4, -1, unreadable, _NSIG / 8, 0);
  printf("mask at address 8: %ld %s\n", result, error_name(errno));
  errno = 0;
  result = signalfd(-1, &mask, 0x40000000);
  printf("unknown flags: %ld %s\n", result, error_name(errno));
  errno = 0;
  result = signalfd(1, &mask, 0);
  printf("not a signalfd: %ld %s\n", result, error_name(errno));
  const int fd = signalfd(-1, &mask, SFD_NONBLOCK);
  raise(SIGUSR1);
  errno = 0;
  result = read(fd, unreadable, 128);
  printf("read into address 8: %ld %s\n", result, error_name(errno));
  struct signalfd_siginfo info;
  errno = 0;
  result = read(fd, &info, sizeof info);
  printf("then read: %ld %s\n", result, error_name(errno));
  close(fd);
}

static void child_exit_and_dup(void) {
  sigset_t only;
  sigemptyset(&only);
  sigaddset(&only, SIGCHLD);
  const int fd = signalfd(-1, &only, SFD_CLOEXEC);  // blocking
  sigemptyset(&only);
  sigaddset(&only, SIGUSR1);
  const int usr = signalfd(-1, &only, SFD_NONBLOCK | SFD_CLOEXEC);
  raise(SIGUSR1);  // pending in the parent: a forked child starts with none
  const pid_t child = fork();
  if (child == 0) _exit(readable(usr) ? 8 : 7);
  struct signalfd_siginfo info;
  const int got = (int)read(fd, &info, sizeof info);
  printf("a blocking read: %d bytes, SIGCHLD %s, CLD_EXITED %s, status %d (7: nothing readable in the child), "
         "the child's pid %s\n",
         got, yes(info.ssi_signo == SIGCHLD), yes(info.ssi_code == CLD_EXITED), info.ssi_status,
         yes(info.ssi_pid == (uint32_t)child));
  waitpid(child, NULL, 0);
  printf("the parent's SIGUSR1, after the child: readable %d\n", readable(usr));
  const int copy = dup(usr);
  const int copy_readable = readable(copy);
  const int took = read(copy, &info, sizeof info) == sizeof info && info.ssi_signo == SIGUSR1;
  printf("a dup: readable %d, reads SIGUSR1 %s; then the first: readable %d\n", copy_readable, yes(took),
         readable(usr));
  close(copy);
  close(usr);
  close(fd);
}

int main(void) {
  setvbuf(stdout, NULL, _IONBF, 0);
  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGUSR1);
  sigaddset(&mask, SIGUSR2);
  sigaddset(&mask, SIGCHLD);
  if (sigprocmask(SIG_BLOCK, &mask, NULL) != 0) return 10;
  const int fd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
  if (fd < 0) {
    perror("signalfd");
    return 11;
  }
  reads_and_codes(fd);
  epoll_and_new_mask(fd);
  close(fd);
  refused();
  child_exit_and_dup();
  return 0;
}
