// Role: guest sample "signal_timers": timers that fire: alarm() ending a
// pause(), setitimer(ITIMER_REAL) firing repeatedly into a loop that makes
// no syscall (the signal arrives between two blocks), getitimer and alarm's
// remaining time, sigsuspend with SIGALRM blocked outside it, sigtimedwait
// taking a pending signal (glibc folds SI_TKILL into SI_USER there) and
// timing out with EAGAIN, a read from an empty pipe interrupted by the timer
// (EINTR) and restarted with SA_RESTART, and a last timer that kills the process with the
// default action (exit status 128 + 14).
// Invariants: deterministic output only: counts and facts, never times.
// Directives (see samples/README.md):
// archs: x86_64 i386 arm aarch64 riscv64 mips mipsel
// exit: 142
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t alarms;

static void on_alarm(int signal) {
  (void)signal;
  ++alarms;
}

static int pipe_write_end;
static volatile sig_atomic_t writes;

static void on_alarm_write(int signal) {
  (void)signal;
  const char byte = writes++ ? 'y' : 'x';
  if (write(pipe_write_end, &byte, 1) != 1) _exit(3);
}

int main(void) {
  struct sigaction action;
  memset(&action, 0, sizeof action);
  action.sa_handler = on_alarm;
  sigaction(SIGALRM, &action, NULL);

  alarm(1);
  const int paused = pause();
  printf("pause: returned %d errno EINTR: %d, alarms %d\n", paused, errno == EINTR, (int)alarms);

  alarm(100);
  const unsigned left = alarm(0);
  printf("alarm(0) after alarm(100): %s\n", left >= 99 && left <= 100 ? "99-100 left" : "wrong");

  // An interval timer firing into a loop that makes no syscall.
  alarms = 0;
  struct itimerval every = {{0, 20000}, {0, 20000}};
  setitimer(ITIMER_REAL, &every, NULL);
  volatile unsigned long spins = 0;
  while (alarms < 3) ++spins;
  struct itimerval now;
  getitimer(ITIMER_REAL, &now);
  printf("busy loop: %d alarms, interval %ld us, still armed: %d\n", (int)alarms, (long)now.it_interval.tv_usec,
         now.it_value.tv_sec != 0 || now.it_value.tv_usec != 0);
  struct itimerval off = {{0, 0}, {0, 0}};
  setitimer(ITIMER_REAL, &off, NULL);

  // sigsuspend: SIGALRM blocked except while suspended.
  sigset_t block, old, wait_mask;
  sigemptyset(&block);
  sigaddset(&block, SIGALRM);
  sigprocmask(SIG_BLOCK, &block, &old);
  alarms = 0;
  struct itimerval once = {{0, 0}, {0, 30000}};
  setitimer(ITIMER_REAL, &once, NULL);
  sigemptyset(&wait_mask);
  const int suspended = sigsuspend(&wait_mask);
  sigset_t after;
  sigprocmask(SIG_BLOCK, NULL, &after);
  printf("sigsuspend: returned %d errno EINTR: %d, alarms %d, SIGALRM blocked again: %d\n", suspended,
         errno == EINTR, (int)alarms, sigismember(&after, SIGALRM));

  // sigtimedwait: a pending blocked signal is taken without its handler.
  raise(SIGALRM);
  siginfo_t info;
  struct timespec zero = {0, 0};
  const int taken = sigtimedwait(&block, &info, &zero);
  printf("sigtimedwait: took %d (SIGALRM %d), si_code SI_TKILL: %d, alarms %d\n", taken, SIGALRM,
         info.si_code == SI_TKILL, (int)alarms);
  struct timespec short_wait = {0, 10000000};
  const int timed_out = sigtimedwait(&block, &info, &short_wait);
  printf("sigtimedwait timeout: %d errno EAGAIN: %d\n", timed_out, errno == EAGAIN);
  sigprocmask(SIG_SETMASK, &old, NULL);

  // A read blocked on an empty pipe: the timer's handler interrupts it (EINTR)
  // or, with SA_RESTART, the read starts again and gets what the handler wrote.
  int fds[2];
  if (pipe(fds) != 0) return 1;
  pipe_write_end = fds[1];
  action.sa_handler = on_alarm_write;
  action.sa_flags = 0;
  sigaction(SIGALRM, &action, NULL);
  // 200 ms: the guest must reach read() first, even emulated on a loaded
  // machine (a timer that fires before it leaves the second read waiting).
  struct itimerval soon = {{0, 0}, {0, 200000}};
  setitimer(ITIMER_REAL, &soon, NULL);
  char byte = 0;
  const ssize_t interrupted = read(fds[0], &byte, 1);
  printf("read without SA_RESTART: %zd errno EINTR: %d\n", interrupted, errno == EINTR);
  if (read(fds[0], &byte, 1) != 1) return 1;  // what the handler wrote
  action.sa_flags = SA_RESTART;
  sigaction(SIGALRM, &action, NULL);
  setitimer(ITIMER_REAL, &soon, NULL);
  const ssize_t restarted = read(fds[0], &byte, 1);
  printf("read with SA_RESTART: %zd byte '%c'\n", restarted, byte);

  // The default action of SIGALRM ends the process.
  signal(SIGALRM, SIG_DFL);
  printf("waiting for the last alarm\n");
  fflush(stdout);
  struct itimerval last = {{0, 0}, {0, 50000}};
  setitimer(ITIMER_REAL, &last, NULL);
  for (;;) pause();
}
