// Role: guest sample "pidfd_wait": a parent watching its children through
// pidfds, as systemd, Python's asyncio (PidfdChildWatcher) and process
// supervisors do: pidfd_open, poll on the pidfd, waitid(P_PIDFD) (blocking,
// and with PIDFD_NONBLOCK), pidfd_send_signal to a child and to itself, and
// the errors Linux gives for bad flags, bad pids, descriptors that are not
// pidfds and hostile arguments (an unmapped siginfo, numbers out of range).
// Invariants: deterministic output only (facts, never pids or times).
// Directives (see samples/README.md):
// archs: x86_64 i386 arm aarch64 riscv64 mips mipsel
// exit: 0
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile sig_atomic_t usr1_seen = 0;

static void on_usr1(int signal) { usr1_seen = signal == SIGUSR1; }

// "0" for a call that succeeded, else the errno's name (EINVAL...).
static const char* outcome(int result) { return result >= 0 ? "0" : strerrorname_np(errno); }

static void check(int ok, const char* what) {
  if (!ok) {
    perror(what);
    exit(1);
  }
}

// A child that exits 7: its pidfd polls readable, waitid(P_PIDFD) reports it,
// and a second waitid finds nothing to wait for.
static void watch_exiting_child(void) {
  fflush(stdout);
  const pid_t child = fork();
  check(child >= 0, "fork");
  if (child == 0) _exit(7);
  const int fd = pidfd_open(child, 0);
  check(fd >= 0, "pidfd_open");
  printf("pidfd_open of a child: a descriptor, close-on-exec %s\n", (fcntl(fd, F_GETFD) & FD_CLOEXEC) ? "yes" : "no");
  struct pollfd readable = {.fd = fd, .events = POLLIN};
  const int ready = poll(&readable, 1, 20000);
  printf("poll: %d, POLLIN %s\n", ready, (readable.revents & POLLIN) ? "yes" : "no");
  siginfo_t info;
  memset(&info, 0, sizeof info);
  const int waited = waitid(P_PIDFD, fd, &info, WEXITED);
  printf("waitid(P_PIDFD): %s, %s, status %d, its pid %s\n", outcome(waited),
         info.si_code == CLD_EXITED ? "CLD_EXITED" : "another code", info.si_status,
         info.si_pid == child ? "yes" : "no");
  printf("waitid again: %s\n", outcome(waitid(P_PIDFD, fd, &info, WEXITED | WNOHANG)));
  close(fd);
}

// A child that waits in pause(): PIDFD_NONBLOCK's waitid says EAGAIN while it
// lives, pidfd_send_signal(SIGTERM) ends it, waitid reports the signal.
static void signal_paused_child(void) {
  int ready_pipe[2];
  check(pipe(ready_pipe) == 0, "pipe");
  fflush(stdout);
  const pid_t child = fork();
  check(child >= 0, "fork");
  if (child == 0) {
    close(ready_pipe[0]);
    if (write(ready_pipe[1], "r", 1) != 1) _exit(2);
    for (;;) pause();
  }
  close(ready_pipe[1]);
  char byte;
  check(read(ready_pipe[0], &byte, 1) == 1, "read");
  close(ready_pipe[0]);
  const int fd = pidfd_open(child, PIDFD_NONBLOCK);
  if (fd < 0) {  // never leave the paused child behind
    printf("pidfd_open with PIDFD_NONBLOCK: %s\n", strerrorname_np(errno));
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
    return;
  }
  siginfo_t info;
  memset(&info, 0, sizeof info);
  printf("waitid(P_PIDFD) with PIDFD_NONBLOCK on a live child: %s\n", outcome(waitid(P_PIDFD, fd, &info, WEXITED)));
  printf("pidfd_send_signal(SIGTERM): %s\n", outcome(pidfd_send_signal(fd, SIGTERM, NULL, 0)));
  struct pollfd readable = {.fd = fd, .events = POLLIN};
  check(poll(&readable, 1, 20000) == 1, "poll");
  memset(&info, 0, sizeof info);
  const int waited = waitid(P_PIDFD, fd, &info, WEXITED);
  printf("waitid(P_PIDFD): %s, %s, %s\n", outcome(waited), info.si_code == CLD_KILLED ? "CLD_KILLED" : "another code",
         info.si_status == SIGTERM ? "SIGTERM" : "another signal");
  close(fd);
}

// A pidfd of the process itself, and what Linux refuses.
static void own_pidfd_and_errors(void) {
  struct sigaction action;
  memset(&action, 0, sizeof action);
  action.sa_handler = on_usr1;
  check(sigaction(SIGUSR1, &action, NULL) == 0, "sigaction");
  const int self = pidfd_open(getpid(), 0);
  check(self >= 0, "pidfd_open");
  printf("pidfd_send_signal(self, 0): %s\n", outcome(pidfd_send_signal(self, 0, NULL, 0)));
  const int sent = pidfd_send_signal(self, SIGUSR1, NULL, 0);
  printf("pidfd_send_signal(self, SIGUSR1): %s, handler ran %s\n", outcome(sent), usr1_seen ? "yes" : "no");
  // 0x80: no flag in any kernel (6.9 gave bits 0-2 meanings).
  printf("pidfd_send_signal with flags 0x80: %s\n", outcome(pidfd_send_signal(self, 0, NULL, 0x80)));
  siginfo_t info;
  printf("waitid(P_PIDFD) of itself: %s\n", outcome(waitid(P_PIDFD, self, &info, WEXITED | WNOHANG)));
  printf("pidfd_open with flags 1: %s\n", outcome(pidfd_open(getpid(), 1)));
  printf("pidfd_open of pid 0: %s\n", outcome(pidfd_open(0, 0)));
  int not_pidfd[2];
  check(pipe(not_pidfd) == 0, "pipe");
  printf("pidfd_send_signal on a pipe: %s\n", outcome(pidfd_send_signal(not_pidfd[0], 0, NULL, 0)));
  printf("waitid(P_PIDFD) on a pipe: %s\n", outcome(waitid(P_PIDFD, not_pidfd[0], &info, WEXITED | WNOHANG)));
  close(not_pidfd[0]);
  printf("pidfd_send_signal on a closed descriptor: %s\n", outcome(pidfd_send_signal(not_pidfd[0], 0, NULL, 0)));
  close(not_pidfd[1]);
  close(self);
}

// Hostile arguments: an unmapped siginfo, signal numbers out of range,
// descriptors out of range, pids that cannot be.
static void hostile_arguments(void) {
  const int self = pidfd_open(getpid(), 0);
  check(self >= 0, "pidfd_open");
  printf("pidfd_send_signal with an unmapped siginfo: %s\n",
         outcome(pidfd_send_signal(self, SIGUSR1, (siginfo_t*)8, 0)));
  printf("pidfd_send_signal of signal -1: %s, of signal 65: %s\n", outcome(pidfd_send_signal(self, -1, NULL, 0)),
         outcome(pidfd_send_signal(self, 65, NULL, 0)));
  printf("pidfd_send_signal on descriptor 1<<30: %s, on -1: %s\n",
         outcome(pidfd_send_signal(1 << 30, 0, NULL, 0)), outcome(pidfd_send_signal(-1, 0, NULL, 0)));
  siginfo_t info;
  printf("waitid(P_PIDFD) on descriptor -1: %s\n", outcome(waitid(P_PIDFD, -1, &info, WEXITED | WNOHANG)));
  printf("pidfd_open of pid -5: %s, of pid 1<<30: %s\n", outcome(pidfd_open(-5, 0)), outcome(pidfd_open(1 << 30, 0)));
  close(self);
}

int main(void) {
  watch_exiting_child();
  signal_paused_child();
  own_pidfd_and_errors();
  hostile_arguments();
  return 0;
}
