// Role: guest sample "cpu_timers": the interval timers that count the
// process's CPU time, ITIMER_VIRTUAL (SIGVTALRM) and ITIMER_PROF (SIGPROF):
// getitimer of an unarmed timer, a one-shot virtual timer ending a busy loop
// that makes no syscall and then reading as disarmed, time asleep not
// counted, a repeating profiling timer firing three times and setitimer
// giving back its interval, SIGPROF pending while blocked and delivered when
// unblocked, SIG_IGN, and the errors for an unknown timer and a bad usec.
// Invariants: deterministic output only: counts and facts, never times. Each
// busy loop gives up after 20 seconds of wall time (a timer that never fires
// prints "no" instead of hanging).
// Directives (see samples/README.md):
// archs: x86_64 i386 arm aarch64 riscv64 mips mipsel
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t virtual_alarms, profile_alarms, wrong_code;

static void on_virtual(int signal, siginfo_t* info, void* context) {
  (void)context;
  if (signal != SIGVTALRM || info->si_code != SI_KERNEL) wrong_code = 1;
  ++virtual_alarms;
}

static void on_profile(int signal, siginfo_t* info, void* context) {
  (void)context;
  if (signal != SIGPROF || info->si_code != SI_KERNEL) wrong_code = 1;
  ++profile_alarms;
}

static void handle(int signal, void (*handler)(int, siginfo_t*, void*)) {
  struct sigaction action;
  memset(&action, 0, sizeof action);
  action.sa_sigaction = handler;
  action.sa_flags = SA_SIGINFO | SA_RESTART;
  sigaction(signal, &action, NULL);
}

static int arm(int which, long value_usec, long interval_usec, struct itimerval* old) {
  struct itimerval timer;
  memset(&timer, 0, sizeof timer);
  timer.it_value.tv_sec = value_usec / 1000000;
  timer.it_value.tv_usec = value_usec % 1000000;
  timer.it_interval.tv_sec = interval_usec / 1000000;
  timer.it_interval.tv_usec = interval_usec % 1000000;
  return setitimer(which, &timer, old);
}

// Spins (no syscall inside the inner loop) until *counter reaches `wanted`;
// 1 when it did, 0 after 20 seconds of wall time.
static int spin_until(volatile sig_atomic_t* counter, int wanted) {
  const time_t give_up = time(NULL) + 20;
  volatile unsigned long work = 0;
  while (*counter < wanted) {
    for (int i = 0; i < 100000 && *counter < wanted; ++i) work = work * 3 + 1;
    if (time(NULL) > give_up) return 0;
  }
  return 1;
}

static const char* yes(int fact) { return fact ? "yes" : "no"; }

static int timer_is_zero(int which) {
  struct itimerval now;
  if (getitimer(which, &now) != 0) return 0;
  return now.it_value.tv_sec == 0 && now.it_value.tv_usec == 0 && now.it_interval.tv_sec == 0 &&
         now.it_interval.tv_usec == 0;
}

int main(void) {
  printf("virtual and profiling timers start unarmed: %s\n", yes(timer_is_zero(ITIMER_VIRTUAL) && timer_is_zero(ITIMER_PROF)));

  handle(SIGVTALRM, on_virtual);
  arm(ITIMER_VIRTUAL, 100, 0, NULL);
  struct itimerval left;
  getitimer(ITIMER_VIRTUAL, &left);
  printf("armed virtual timer has time left: %s\n", yes(left.it_value.tv_sec > 0 || left.it_value.tv_usec > 0));
  printf("SIGVTALRM ends a busy loop: %s\n", yes(spin_until(&virtual_alarms, 1)));
  printf("one-shot virtual timer reads disarmed after: %s\n", yes(timer_is_zero(ITIMER_VIRTUAL)));

  // Asleep, the process uses no CPU time: a 50 ms virtual timer outlasts a 100 ms sleep.
  arm(ITIMER_VIRTUAL, 50000, 0, NULL);
  const struct timespec nap = {0, 100 * 1000 * 1000};
  nanosleep(&nap, NULL);
  printf("sleeping does not count as CPU time: %s\n", yes(virtual_alarms == 1 && !timer_is_zero(ITIMER_VIRTUAL)));
  arm(ITIMER_VIRTUAL, 0, 0, NULL);
  printf("setting 0 disarms: %s\n", yes(timer_is_zero(ITIMER_VIRTUAL)));

  handle(SIGPROF, on_profile);
  arm(ITIMER_PROF, 100, 100, NULL);
  printf("a repeating profiling timer fires 3 times: %s\n", yes(spin_until(&profile_alarms, 3)));
  struct itimerval old;
  arm(ITIMER_PROF, 0, 0, &old);
  printf("setitimer gives back the old interval (100 us): %s\n",
         yes(old.it_interval.tv_sec == 0 && old.it_interval.tv_usec == 100));

  sigset_t blocked, pending;
  sigemptyset(&blocked);
  sigaddset(&blocked, SIGPROF);
  sigprocmask(SIG_BLOCK, &blocked, NULL);
  const int before = profile_alarms;
  arm(ITIMER_PROF, 100, 0, NULL);
  const time_t give_up = time(NULL) + 20;
  volatile unsigned long work = 0;
  do {
    for (int i = 0; i < 100000; ++i) work = work * 3 + 1;
    sigpending(&pending);
  } while (!sigismember(&pending, SIGPROF) && time(NULL) <= give_up);
  printf("SIGPROF pending while blocked: %s, handler not run: %s\n", yes(sigismember(&pending, SIGPROF)),
         yes(profile_alarms == before));
  sigprocmask(SIG_UNBLOCK, &blocked, NULL);
  printf("delivered once unblocked: %s\n", yes(profile_alarms == before + 1));

  signal(SIGVTALRM, SIG_IGN);
  arm(ITIMER_VIRTUAL, 100, 0, NULL);
  const int virtual_before = virtual_alarms;
  work = 0;
  for (int i = 0; i < 50000; ++i) work = work * 3 + 1;
  printf("an ignored SIGVTALRM changes nothing: %s\n", yes(virtual_alarms == virtual_before));
  arm(ITIMER_VIRTUAL, 0, 0, NULL);

  struct itimerval bad;
  memset(&bad, 0, sizeof bad);
  errno = 0;
  printf("getitimer(3): %s\n", getitimer(3, &bad) == -1 && errno == EINVAL ? "EINVAL" : "accepted");
  bad.it_value.tv_usec = 1000000;
  errno = 0;
  printf("setitimer with usec 1000000: %s\n", setitimer(ITIMER_PROF, &bad, NULL) == -1 && errno == EINVAL ? "EINVAL" : "accepted");
  printf("handlers saw SI_KERNEL: %s\n", yes(!wrong_code));
  return 0;
}
