// Role: hostile guest sample "spawn": starts other processes each way once
// (report.h): a fork bomb whose children stay alive (it stops at 10, or at the
// first failure: --max-processes), vfork, the raw clone syscall, execve of
// /bin/sh in a child, system() and popen().
// Invariants: every child it starts ends before it does (the bomb's are
// killed and reaped); prints no pid; exit status 0.
#include "report.h"

#include <signal.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/wait.h>

enum { kBombLimit = 10 };

static void fork_bomb(void) {
  pid_t children[kBombLimit];
  int forks = 0;
  errno = 0;
  for (; forks < kBombLimit; ++forks) {
    const pid_t child = fork();
    if (child == 0) {
      for (;;) pause();
    }
    if (child < 0) break;
    children[forks] = child;
  }
  if (forks < kBombLimit) printf("fork_bomb: %d forks, then %s\n", forks, errno_name(errno));
  else printf("fork_bomb: %d forks\n", forks);
  for (int i = 0; i < forks; ++i) {
    kill(children[i], SIGKILL);
    waitpid(children[i], NULL, 0);
  }
}

int main(void) {
  fork_bomb();
  const pid_t v = vfork();
  if (v == 0) _exit(0);
  if (v > 0) waitpid(v, NULL, 0);
  report_result("vfork", v < 0 ? -1 : 0, 0);
  errno = 0;
  const long cloned = syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0);
  if (cloned == 0) _exit(0);
  if (cloned > 0) waitpid((pid_t)cloned, NULL, 0);
  report_result("clone", cloned < 0 ? -1 : 0, 0);
  fflush(stdout);
  const pid_t execer = fork();
  if (execer == 0) {
    char* const args[] = {"/bin/sh", "-c", "echo exec ran", NULL};
    char* const env[] = {NULL};
    execve("/bin/sh", args, env);
    printf("execve: %s\n", errno_name(errno));
    _exit(127);
  }
  int status = 0;
  waitpid(execer, &status, 0);
  printf("execve child: exit status %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  // glibc's system() reports a shell it could not start as exit status 127;
  // its popen() returns NULL (errno is not meaningful then).
  status = system("echo system ran");
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
