// Role: guest sample "busy_signal": a signal from another process reaching a
// single-threaded process busy in a loop that makes no syscall, as Linux
// delivers it (at once, not at the next syscall): a child sends SIGUSR1 to
// its parent, which spins until its handler has run; then a child ends while
// the parent spins until its SIGCHLD handler (SA_SIGINFO) has run.
// Invariants: deterministic output only (no pids, no counts); each loop is
// bounded (kSpinLimit, far past the few milliseconds the signal takes), so a
// signal that never comes shows as "no" rather than as a hang.
// Directives (see samples/README.md):
// archs: x86_64 i386 arm aarch64 riscv64 mips mipsel
// exit: 0
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const unsigned long kSpinLimit = 400000000UL;

static volatile sig_atomic_t got_usr1, got_chld, chld_code, chld_status;
static volatile pid_t chld_pid;

static void on_usr1(int signal) { got_usr1 = signal; }

static void on_chld(int signal, siginfo_t* info, void* context) {
  (void)context;
  got_chld = signal;
  chld_code = info->si_code;
  chld_status = info->si_status;
  chld_pid = info->si_pid;
}

static void check(int ok, const char* what) {
  if (!ok) {
    perror(what);
    exit(1);
  }
}

static void pause_briefly(void) {
  const struct timespec wait = {0, 10 * 1000 * 1000};
  nanosleep(&wait, NULL);
}

// Spins without a syscall until *flag is set or the limit; the spins made
// (none when the signal came before the loop: the child waits 10 ms first).
static unsigned long spin_until(volatile sig_atomic_t* flag) {
  unsigned long spins = 0;
  while (!*flag && spins < kSpinLimit) ++spins;
  return spins;
}

static void signal_from_a_child(void) {
  struct sigaction action;
  memset(&action, 0, sizeof action);
  action.sa_handler = on_usr1;
  check(sigaction(SIGUSR1, &action, NULL) == 0, "sigaction SIGUSR1");
  const pid_t child = fork();
  check(child >= 0, "fork");
  if (child == 0) {
    pause_briefly();  // the parent spins by now
    kill(getppid(), SIGUSR1);
    _exit(0);
  }
  const unsigned long spins = spin_until(&got_usr1);
  printf("SIGUSR1 from a child reached the handler during the loop: %s\n",
         got_usr1 == SIGUSR1 && spins > 0 && spins < kSpinLimit ? "yes" : "no");
  int status = -1;
  check(waitpid(child, &status, 0) == child, "waitpid");
  printf("that child ended with status %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
}

static void child_end_while_spinning(void) {
  struct sigaction action;
  memset(&action, 0, sizeof action);
  action.sa_sigaction = on_chld;
  action.sa_flags = SA_SIGINFO;
  check(sigaction(SIGCHLD, &action, NULL) == 0, "sigaction SIGCHLD");
  const pid_t child = fork();
  check(child >= 0, "fork");
  if (child == 0) {
    pause_briefly();
    _exit(7);
  }
  const unsigned long spins = spin_until(&got_chld);
  printf("SIGCHLD reached the handler during the loop: %s\n", got_chld == SIGCHLD && spins > 0 && spins < kSpinLimit ? "yes" : "no");
  printf("si_code CLD_EXITED: %s, si_status %d, from that child: %s\n", chld_code == CLD_EXITED ? "yes" : "no",
         (int)chld_status, chld_pid == child ? "yes" : "no");
  int status = -1;
  check(waitpid(child, &status, 0) == child, "waitpid");
  printf("that child ended with status %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
}

int main(void) {
  setvbuf(stdout, NULL, _IONBF, 0);  // the children must not repeat buffered lines
  signal_from_a_child();
  child_end_while_spinning();
  printf("done\n");
  return 0;
}
