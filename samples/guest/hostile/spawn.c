// Role: hostile guest sample "spawn": tries to start other processes, each way
// once (report.h): a fork bomb loop (stops at the first failure), vfork, the raw
// clone syscall, execve of /bin/sh, system() and popen().
// Invariants: never runs the fork bomb's children (a failed fork ends it);
// prints no pid; exit status 0.
#include "report.h"

#include <signal.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/wait.h>

int main(void) {
  int forks = 0;
  for (;;) {
    const pid_t child = fork();
    if (child == 0) _exit(0);  // a bomb's child would loop too; this one never gets here under tracecorn
    if (child < 0) break;
    ++forks;
    waitpid(child, NULL, 0);
    if (forks == 3) break;  // natively: stop the bomb at 3
  }
  if (forks) printf("fork_bomb: stopped after %d forks\n", forks);
  else printf("fork_bomb: refused with %s\n", errno_name(errno));
  const pid_t v = vfork();
  if (v == 0) _exit(0);
  report_result("vfork", v < 0 ? -1 : 0, 0);
  errno = 0;
  const long cloned = syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0);
  if (cloned == 0) _exit(0);
  report_result("clone", cloned < 0 ? -1 : 0, 0);
  char* const args[] = {"/bin/sh", "-c", "echo exec ran", NULL};
  char* const env[] = {NULL};
  report_result("execve", execve("/bin/sh", args, env), 0);
  // glibc's system() reports a shell it could not start as exit status 127;
  // its popen() returns NULL (errno is not meaningful then).
  const int status = system("echo system ran");
  if (status == -1) printf("system: %s\n", errno_name(errno));
  else printf("system: exit status %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  fflush(stdout);
  FILE* pipe = popen("echo popen ran", "r");
  printf("popen: %s\n", pipe ? "started" : "failed");
  if (pipe) {
    char line[64] = {0};
    printf("popen_read: %s", fgets(line, sizeof line, pipe) ? line : "nothing\n");
    pclose(pipe);
  }
  return 0;
}
