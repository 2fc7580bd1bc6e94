// Role: guest sample "stop_then_kill": a child says a line, stops itself
// with SIGSTOP, and its parent ends it with SIGKILL while it is stopped (a
// shell's `kill -9` of a stopped job); waitpid reports the stop, then the
// death by SIGKILL. Recorded, the child's trace must hold what it did before
// the stop: SIGKILL gives the recorder no chance to write anything after it.
// Invariants: deterministic output only (facts, never pids or times).
// Directives (see samples/README.md):
// exit: 0
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void check(int ok, const char* what) {
  if (!ok) {
    perror(what);
    exit(1);
  }
}

static const char* name_of(int signal) {
  const char* name = sigabbrev_np(signal);
  return name ? name : "?";
}

int main(void) {
  fflush(stdout);
  const pid_t child = fork();
  check(child >= 0, "fork");
  if (child == 0) {
    static const char text[] = "child: about to stop\n";
    if (write(STDOUT_FILENO, text, sizeof text - 1) < 0) _exit(2);
    raise(SIGSTOP);
    static const char after[] = "child: continued (it should have been killed)\n";
    if (write(STDOUT_FILENO, after, sizeof after - 1) < 0) _exit(2);
    _exit(3);
  }
  int status = 0;
  check(waitpid(child, &status, WUNTRACED) == child, "waitpid");
  printf("parent: the child is %s by %s\n", WIFSTOPPED(status) ? "stopped" : "not stopped",
         WIFSTOPPED(status) ? name_of(WSTOPSIG(status)) : "-");
  check(kill(child, SIGKILL) == 0, "kill");
  check(waitpid(child, &status, 0) == child, "waitpid");
  printf("parent: the child was %s by %s\n", WIFSIGNALED(status) ? "killed" : "not killed",
         WIFSIGNALED(status) ? name_of(WTERMSIG(status)) : "-");
  return 0;
}
