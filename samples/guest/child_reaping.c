// Role: guest sample "child_reaping": SIGCHLD's SA_NOCLDWAIT: ended children
// are reaped by themselves (no zombie), so a wait blocks until none is left
// and then gives ECHILD; with a handler too, the handler still runs.
// Invariants: deterministic output only.
// Directives (see samples/README.md):
// archs: x86_64 i386 arm aarch64 riscv64 mips mipsel
// exit: 0
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile sig_atomic_t chld_code = 0;

static void on_chld(int signal, siginfo_t* info, void* context) {
  (void)signal;
  (void)context;
  chld_code = info->si_code;
}

static void check(int ok, const char* what) {
  if (!ok) {
    perror(what);
    exit(1);
  }
}

static pid_t start_exiting_child(int status) {
  fflush(stdout);
  const pid_t child = fork();
  check(child >= 0, "fork");
  if (child == 0) _exit(status);
  return child;
}

// SIG_DFL with SA_NOCLDWAIT: no zombie, wait() waits for the end, then ECHILD.
static void default_action_no_zombies(void) {
  struct sigaction action;
  memset(&action, 0, sizeof action);
  action.sa_handler = SIG_DFL;
  action.sa_flags = SA_NOCLDWAIT;
  check(sigaction(SIGCHLD, &action, NULL) == 0, "sigaction");
  start_exiting_child(3);
  start_exiting_child(4);
  int status = 0;
  const pid_t got = wait(&status);
  printf("SA_NOCLDWAIT: wait gives %s\n", got < 0 ? strerrorname_np(errno) : "a child");
}

// A handler with SA_NOCLDWAIT: it runs (CLD_EXITED), and nothing is left to wait for.
static void handler_no_zombies(void) {
  struct sigaction action;
  memset(&action, 0, sizeof action);
  action.sa_sigaction = on_chld;
  action.sa_flags = SA_SIGINFO | SA_NOCLDWAIT;
  check(sigaction(SIGCHLD, &action, NULL) == 0, "sigaction");
  sigset_t chld, previous;
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  check(sigprocmask(SIG_BLOCK, &chld, &previous) == 0, "sigprocmask");
  start_exiting_child(5);
  while (chld_code == 0) sigsuspend(&previous);
  printf("SA_SIGINFO | SA_NOCLDWAIT: the handler ran with %s\n",
         chld_code == CLD_EXITED ? "CLD_EXITED" : "another code");
  check(sigprocmask(SIG_SETMASK, &previous, NULL) == 0, "sigprocmask");
  siginfo_t info;
  printf("then waitid(P_ALL) gives %s\n", waitid(P_ALL, 0, &info, WEXITED) < 0 ? strerrorname_np(errno) : "a child");
}

int main(void) {
  default_action_no_zombies();
  handler_no_zombies();
  return 0;
}
