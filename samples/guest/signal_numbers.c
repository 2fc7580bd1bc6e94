// Role: guest sample "signal_numbers": signals named by number the guest's
// way (mips numbers SIGUSR1 16, SIGUSR2 17, SIGCHLD 18 where x86-64 has 10,
// 12, 17): dispositions set and read back with sigaction, a signal ignored
// and one blocked then raised, the mask read back, and last a blocked
// SIGUSR2 unblocked, whose default action kills the process (status 128+12
// as the host's shell numbers it, 140, on every guest architecture: qemu-user
// and tracecorn both die of the host's SIGUSR2).
// Invariants: no handler runs (tracecorn does not deliver handlers yet); the
// output before the death is flushed explicitly.
// Directives (see samples/README.md):
// strace: yes
// exit: 140
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static const char* yes_no(int fact) { return fact ? "yes" : "no"; }

static const char* disposition(void (*handler)(int)) {
  if (handler == SIG_DFL) return "default";
  if (handler == SIG_IGN) return "ignore";
  return "handler";
}

int main(void) {
  struct sigaction old;
  memset(&old, 0, sizeof old);
  if (sigaction(SIGCHLD, NULL, &old) != 0) printf("FAIL sigaction read: %s\n", strerror(errno));
  printf("SIGCHLD at start: %s\n", disposition(old.sa_handler));

  struct sigaction ignore;
  memset(&ignore, 0, sizeof ignore);
  ignore.sa_handler = SIG_IGN;
  ignore.sa_flags = SA_RESTART | SA_NOCLDSTOP;
  sigemptyset(&ignore.sa_mask);
  sigaddset(&ignore.sa_mask, SIGUSR2);
  if (sigaction(SIGCHLD, &ignore, NULL) != 0) printf("FAIL sigaction set: %s\n", strerror(errno));
  memset(&old, 0, sizeof old);
  sigaction(SIGCHLD, NULL, &old);
  printf("SIGCHLD now: %s, SA_RESTART kept: %s, SA_NOCLDSTOP kept: %s, mask has SIGUSR2: %s, SIGUSR1: %s\n",
         disposition(old.sa_handler), yes_no(old.sa_flags & SA_RESTART), yes_no(old.sa_flags & SA_NOCLDSTOP),
         yes_no(sigismember(&old.sa_mask, SIGUSR2) == 1), yes_no(sigismember(&old.sa_mask, SIGUSR1) == 1));

  // Each signal's own disposition: SIGUSR1 ignored leaves SIGUSR2 default.
  signal(SIGUSR1, SIG_IGN);
  memset(&old, 0, sizeof old);
  sigaction(SIGUSR2, NULL, &old);
  printf("SIGUSR2 after ignoring SIGUSR1: %s\n", disposition(old.sa_handler));
  printf("kill SIGUSR1 (ignored): %d\n", kill(getpid(), SIGUSR1));
  printf("raise SIGCHLD (default: ignored): %d\n", raise(SIGCHLD));
  printf("raise SIGURG (default: ignored): %d\n", raise(SIGURG));
  printf("raise SIGWINCH (default: ignored): %d\n", raise(SIGWINCH));
  printf("still alive after the ignored signals\n");

  sigset_t block, current;
  sigemptyset(&block);
  sigaddset(&block, SIGUSR2);
  sigaddset(&block, SIGTERM);
  if (sigprocmask(SIG_BLOCK, &block, NULL) != 0) printf("FAIL sigprocmask: %s\n", strerror(errno));
  sigemptyset(&current);
  sigprocmask(SIG_SETMASK, NULL, &current);
  printf("blocked: SIGUSR2 %s, SIGTERM %s, SIGUSR1 %s, SIGCHLD %s, SIGBUS %s\n",
         yes_no(sigismember(&current, SIGUSR2) == 1), yes_no(sigismember(&current, SIGTERM) == 1),
         yes_no(sigismember(&current, SIGUSR1) == 1), yes_no(sigismember(&current, SIGCHLD) == 1),
         yes_no(sigismember(&current, SIGBUS) == 1));
  printf("kill SIGUSR2 while blocked: %d\n", kill(getpid(), SIGUSR2));
  printf("still alive with SIGUSR2 pending\n");
  fflush(stdout);

  sigset_t unblock;
  sigemptyset(&unblock);
  sigaddset(&unblock, SIGUSR2);
  sigprocmask(SIG_UNBLOCK, &unblock, NULL);
  printf("FAIL: survived SIGUSR2\n");
  return 1;
}
