// Role: guest sample "thread_timer_spin": a POSIX timer's signal (SI_TIMER,
// SIGEV_SIGNAL to the process) reaching a threaded process whose threads
// spin without syscalls: the main thread blocks SIGUSR1 and spins, a second
// thread leaves it unblocked and spins until its handler has run; the timer
// fires after 100 ms. tracecorn delivers it as the scheduler switches to the
// thread that can take it, or at a block's start while that thread runs; a
// replay (which has no timer: timer_create is answered from the trace)
// delivers it where the trace says.
// Invariants: deterministic output only; the spins are bounded (kSpinLimit),
// so a signal that never comes shows as "no" rather than as a hang.
// Directives (see samples/README.md):
// archs: x86_64 i386 arm aarch64 riscv64 mips mipsel
// exit: 0
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const unsigned long kSpinLimit = 2000000000UL;

static volatile sig_atomic_t handled = 0, handled_code = 0;
static volatile int spinner_done = 0;

static void on_usr1(int signal, siginfo_t* info, void* context) {
  (void)context;
  handled_code = info->si_code;
  handled = signal;
}

static void check(int ok, const char* what) {
  if (!ok) {
    perror(what);
    exit(1);
  }
}

static void* spinner(void* unused) {
  (void)unused;
  sigset_t usr1;
  sigemptyset(&usr1);
  sigaddset(&usr1, SIGUSR1);
  check(pthread_sigmask(SIG_UNBLOCK, &usr1, NULL) == 0, "pthread_sigmask");
  for (unsigned long spins = 0; !handled && spins < kSpinLimit; ++spins) {
  }
  spinner_done = 1;
  return NULL;
}

int main(void) {
  struct sigaction action;
  memset(&action, 0, sizeof action);
  action.sa_sigaction = on_usr1;
  action.sa_flags = SA_SIGINFO;
  check(sigaction(SIGUSR1, &action, NULL) == 0, "sigaction");
  sigset_t usr1;
  sigemptyset(&usr1);
  sigaddset(&usr1, SIGUSR1);
  check(sigprocmask(SIG_BLOCK, &usr1, NULL) == 0, "sigprocmask");  // the spinner unblocks it
  struct sigevent event;
  memset(&event, 0, sizeof event);
  event.sigev_notify = SIGEV_SIGNAL;
  event.sigev_signo = SIGUSR1;
  timer_t timer;
  check(timer_create(CLOCK_MONOTONIC, &event, &timer) == 0, "timer_create");
  const struct itimerspec once = {{0, 0}, {0, 100 * 1000 * 1000}};
  check(timer_settime(timer, 0, &once, NULL) == 0, "timer_settime");
  pthread_t thread;
  check(pthread_create(&thread, NULL, spinner, NULL) == 0, "pthread_create");
  while (!spinner_done) {
  }
  check(pthread_join(thread, NULL) == 0, "pthread_join");
  printf("the spinning thread's handler ran: %s, si_code SI_TIMER: %s\n", handled == SIGUSR1 ? "yes" : "no",
         handled_code == SI_TIMER ? "yes" : "no");
  check(timer_delete(timer) == 0, "timer_delete");
  return 0;
}
