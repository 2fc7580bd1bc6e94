// Role: guest sample "posix_timers": timer_create/timer_settime/timer_gettime/
// timer_getoverrun/timer_delete: a periodic SIGEV_SIGNAL timer whose handler
// sees SI_TIMER and the sigev_value, a SIGEV_NONE timer that only counts down,
// an absolute (TIMER_ABSTIME) one-shot, overruns counted while the signal is
// blocked (si_overrun, timer_getoverrun), a disarm making its pending signal
// vanish at delivery (Linux keeps it in sigpending, then drops it), glibc's SIGEV_THREAD (its helper thread runs the callback: needs
// threads), and the errors for a bad clock and a deleted timer.
// Invariants: deterministic output only: counts and facts, never times.
// Directives (see samples/README.md):
// archs: x86_64 i386 arm aarch64 riscv64 mips mipsel
#define _GNU_SOURCE
#include <errno.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t ticks, wrong_info;

static void on_tick(int signal, siginfo_t* info, void* context) {
  (void)signal;
  (void)context;
  if (info->si_code != SI_TIMER || info->si_value.sival_int != 77) wrong_info = 1;
  ++ticks;
}

static sem_t callback_done;
static volatile int callback_value;

static void on_thread_timer(union sigval value) {
  callback_value = value.sival_int;
  sem_post(&callback_done);
}

static struct timespec milliseconds(long ms) {
  struct timespec time = {ms / 1000, (ms % 1000) * 1000000L};
  return time;
}

int main(void) {
  setvbuf(stdout, NULL, _IONBF, 0);
  struct sigaction action;
  memset(&action, 0, sizeof action);
  action.sa_sigaction = on_tick;
  action.sa_flags = SA_SIGINFO;
  sigaction(SIGUSR1, &action, NULL);

  // A periodic timer: three ticks, each waited for with sigsuspend.
  sigset_t blocked, during_wait;
  sigemptyset(&blocked);
  sigaddset(&blocked, SIGUSR1);
  sigprocmask(SIG_BLOCK, &blocked, &during_wait);
  struct sigevent event;
  memset(&event, 0, sizeof event);
  event.sigev_notify = SIGEV_SIGNAL;
  event.sigev_signo = SIGUSR1;
  event.sigev_value.sival_int = 77;
  timer_t periodic;
  if (timer_create(CLOCK_MONOTONIC, &event, &periodic) != 0) return 1;
  struct itimerspec setting = {milliseconds(10), milliseconds(10)};
  timer_settime(periodic, 0, &setting, NULL);
  while (ticks < 3) sigsuspend(&during_wait);
  struct itimerspec now;
  timer_gettime(periodic, &now);
  printf("periodic: %d ticks, SI_TIMER and value right: %s, interval %ld ms\n", (int)ticks,
         wrong_info ? "no" : "yes", now.it_interval.tv_nsec / 1000000);

  // Overruns: the timer expires many times while SIGUSR1 stays blocked; one
  // signal is pending, taken by sigtimedwait with the count in si_overrun.
  setting = (struct itimerspec){milliseconds(1), milliseconds(1)};
  timer_settime(periodic, 0, &setting, NULL);
  struct timespec nap = milliseconds(60);
  nanosleep(&nap, NULL);
  siginfo_t taken;
  const struct timespec no_wait = {0, 0};
  const int signal_taken = sigtimedwait(&blocked, &taken, &no_wait);
  printf("blocked: a pending SIGUSR1 taken: %s, SI_TIMER: %s, overrun counted: %s, getoverrun too: %s\n",
         signal_taken == SIGUSR1 ? "yes" : "no", taken.si_code == SI_TIMER ? "yes" : "no",
         taken.si_overrun > 0 ? "yes" : "no", timer_getoverrun(periodic) > 0 ? "yes" : "no");
  // Disarming drops a signal the timer had pending (Linux); nothing is delivered after.
  nanosleep(&nap, NULL);
  const struct itimerspec stop = {milliseconds(0), milliseconds(0)};
  timer_settime(periodic, 0, &stop, NULL);
  sigset_t pending;
  sigpending(&pending);
  const int before_unblock = ticks;
  sigprocmask(SIG_UNBLOCK, &blocked, NULL);
  sigprocmask(SIG_BLOCK, &blocked, NULL);
  printf("disarmed: still pending: %s, delivered once unblocked: %s\n", sigismember(&pending, SIGUSR1) ? "yes" : "no",
         ticks != before_unblock ? "yes" : "no");
  timer_delete(periodic);
  printf("deleted timer: settime %s\n",
         timer_settime(periodic, 0, &setting, NULL) == -1 && errno == EINVAL ? "EINVAL" : "succeeded");

  // SIGEV_NONE: counts down, delivers nothing.
  event.sigev_notify = SIGEV_NONE;
  timer_t silent;
  timer_create(CLOCK_MONOTONIC, &event, &silent);
  setting = (struct itimerspec){milliseconds(0), milliseconds(500)};
  timer_settime(silent, 0, &setting, NULL);
  timer_gettime(silent, &now);
  printf("SIGEV_NONE: counting down: %s\n", now.it_value.tv_sec > 0 || now.it_value.tv_nsec > 0 ? "yes" : "no");
  timer_delete(silent);

  // An absolute one-shot on CLOCK_MONOTONIC, 20 ms from now.
  event.sigev_notify = SIGEV_SIGNAL;
  timer_t absolute;
  timer_create(CLOCK_MONOTONIC, &event, &absolute);
  struct timespec start;
  clock_gettime(CLOCK_MONOTONIC, &start);
  start.tv_nsec += 20000000;
  if (start.tv_nsec >= 1000000000) start.tv_nsec -= 1000000000, ++start.tv_sec;
  setting = (struct itimerspec){milliseconds(0), start};
  timer_settime(absolute, TIMER_ABSTIME, &setting, NULL);
  const int before_absolute = ticks;
  while (ticks == before_absolute) sigsuspend(&during_wait);
  printf("absolute one-shot fired once\n");
  timer_delete(absolute);

  // SIGEV_THREAD: glibc's helper thread runs the callback.
  sem_init(&callback_done, 0, 0);
  memset(&event, 0, sizeof event);
  event.sigev_notify = SIGEV_THREAD;
  event.sigev_notify_function = on_thread_timer;
  event.sigev_value.sival_int = 5;
  timer_t threaded;
  if (timer_create(CLOCK_MONOTONIC, &event, &threaded) != 0) return 2;
  setting = (struct itimerspec){milliseconds(0), milliseconds(10)};
  timer_settime(threaded, 0, &setting, NULL);
  sem_wait(&callback_done);
  printf("SIGEV_THREAD callback ran with value %d\n", callback_value);
  timer_delete(threaded);

  timer_t bad;
  printf("bad clock: %s\n", timer_create(12345, NULL, &bad) == -1 && errno == EINVAL ? "EINVAL" : "succeeded");
  return 0;
}
