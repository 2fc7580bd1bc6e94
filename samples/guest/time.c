// Role: guest sample "time": the clocks (clock_gettime on several clocks,
// gettimeofday, time) and a 1 ms nanosleep.
// Invariants: only prints facts that hold on any run: monotonicity, the sleep
// lasting at least what was asked, the wall clock being after 2020 and the
// three wall clocks agreeing; never a time value.
// Directives (see samples/README.md):
// strace: yes
// (none)
#include <stdio.h>
#include <sys/time.h>
#include <time.h>

static long long ns_of(struct timespec t) { return t.tv_sec * 1000000000ll + t.tv_nsec; }
static const char* yes_no(int fact) { return fact ? "yes" : "no"; }

int main(void) {
  struct timespec m1, m2, m3, r1, res;
  clock_gettime(CLOCK_MONOTONIC, &m1);
  clock_gettime(CLOCK_MONOTONIC, &m2);
  printf("monotonic never goes back: %s\n", yes_no(ns_of(m2) >= ns_of(m1)));
  printf("tv_nsec in range: %s\n", yes_no(m1.tv_nsec >= 0 && m1.tv_nsec < 1000000000));

  struct timespec want = {0, 1000000}, left = {0, 0};
  int rc = nanosleep(&want, &left);
  clock_gettime(CLOCK_MONOTONIC, &m3);
  printf("nanosleep(1 ms) returned %d\n", rc);
  printf("monotonic advanced by at least 1 ms: %s\n", yes_no(ns_of(m3) - ns_of(m2) >= 1000000));

  clock_gettime(CLOCK_REALTIME, &r1);
  struct timeval tv;
  gettimeofday(&tv, NULL);
  time_t now = time(NULL);
  printf("realtime after 2020-01-01: %s\n", yes_no(r1.tv_sec > 1577836800));
  printf("gettimeofday agrees with clock_gettime: %s\n",
         yes_no(tv.tv_sec - r1.tv_sec >= 0 && tv.tv_sec - r1.tv_sec <= 1));
  // time() reads the coarse clock, which may lag the fine one by a tick, so
  // across a second boundary it can be one second behind.
  printf("time() agrees with gettimeofday: %s\n", yes_no(now - tv.tv_sec >= -1 && now - tv.tv_sec <= 1));
  printf("usec in range: %s\n", yes_no(tv.tv_usec >= 0 && tv.tv_usec < 1000000));

  printf("clock_getres(MONOTONIC) ok and at most 1 ms: %s\n",
         yes_no(clock_getres(CLOCK_MONOTONIC, &res) == 0 && ns_of(res) > 0 && ns_of(res) <= 1000000));
  struct timespec cpu;
  printf("process cputime readable: %s\n",
         yes_no(clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu) == 0 && ns_of(cpu) >= 0));
  return 0;
}
