// Role: guest sample "thread_spin_signal": a signal from another process
// reaching a threaded process whose threads spin without syscalls: the main
// thread blocks SIGUSR1 and spins, a second thread leaves it unblocked and
// spins until its handler has run; a child process sends the signal after
// 100 ms. tracecorn takes it as the scheduler switches to the thread that
// can take it (a preemption), so its trace has the signal at that switch.
// Invariants: deterministic output only.
// Directives (see samples/README.md):
// archs: x86_64 i386 arm aarch64 riscv64 mips mipsel
// exit: 0
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile sig_atomic_t handled = 0;
static volatile int spinner_done = 0;

static void on_usr1(int signal) { handled = signal; }

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
  while (!handled) {
  }
  spinner_done = 1;
  return NULL;
}

int main(void) {
  struct sigaction action;
  memset(&action, 0, sizeof action);
  action.sa_handler = on_usr1;
  check(sigaction(SIGUSR1, &action, NULL) == 0, "sigaction");
  sigset_t usr1;
  sigemptyset(&usr1);
  sigaddset(&usr1, SIGUSR1);
  check(sigprocmask(SIG_BLOCK, &usr1, NULL) == 0, "sigprocmask");  // the spinner unblocks it
  const pid_t parent = getpid();
  fflush(stdout);
  const pid_t sender = fork();
  check(sender >= 0, "fork");
  if (sender == 0) {
    usleep(100000);
    _exit(kill(parent, SIGUSR1) == 0 ? 0 : 3);
  }
  pthread_t thread;
  check(pthread_create(&thread, NULL, spinner, NULL) == 0, "pthread_create");
  while (!spinner_done) {
  }
  check(pthread_join(thread, NULL) == 0, "pthread_join");
  int status = 0;
  check(waitpid(sender, &status, 0) == sender, "waitpid");
  printf("the spinning thread's handler ran: %s; the sender exited with %d\n", handled == SIGUSR1 ? "yes" : "no",
         WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  return 0;
}
