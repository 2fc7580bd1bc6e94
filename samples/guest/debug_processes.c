// Role: guest sample "debug_processes": a small process tree for the
// debugger's tests (tracecorn debug with gdb's follow-fork-mode, detach-on-fork
// and catch fork/vfork/exec): the parent forks a child that calls child_step
// and then execs the sample itself (its argv[0], with the argument "exec'd"),
// whose new image calls exec_step; the parent waits for it, calls
// parent_step, then vforks a child that _exits at once, and waits for that.
// Invariants: deterministic output only (no pids): the parent waits for each
// child before it prints.
// Directives (see samples/README.md):
// archs: x86_64 i386 arm aarch64 riscv64 mips mipsel
// exit: 0
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

__attribute__((noinline)) int child_step(int n) {
  volatile int twice = n * 2;
  return twice + 1;
}

__attribute__((noinline)) int exec_step(int n) {
  volatile int thrice = n * 3;
  return thrice + 2;
}

__attribute__((noinline)) int parent_step(int n) {
  volatile int four_times = n * 4;
  return four_times + 3;
}

int main(int argc, char** argv) {
  if (argc > 1 && strcmp(argv[1], "exec'd") == 0) {
    printf("exec'd image: exec_step gives %d\n", exec_step(3));
    return 5;
  }
  const pid_t child = fork();
  if (child == 0) {
    const int result = child_step(7);
    char* const args[] = {argv[0], "exec'd", NULL};
    execv(argv[0], args);
    _exit(result);  // the exec failed: 15 tells the parent so
  }
  int status = -1;
  if (waitpid(child, &status, 0) != child) return 10;
  printf("forked child: exit %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  printf("parent_step gives %d\n", parent_step(1));
  const pid_t quick = vfork();
  if (quick == 0) _exit(9);
  if (waitpid(quick, &status, 0) != quick) return 11;
  printf("vforked child: exit %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  return 0;
}
