// Role: guest sample "parent_death": prctl(PR_SET_PDEATHSIG). A process
// asks for SIGUSR1 when its parent ends; the signal reaches its handler with
// si_code SI_USER from the parent that ended, and the process then has
// another parent. The setting is read back (PR_GET_PDEATHSIG), kept across
// execve, cleared in a forked child, and a signal number past 64 is EINVAL.
// Three generations: the sample's process (the reporter) forks the parent,
// the parent forks the child; the child reports through a pipe that the
// reporter prints once every writer is gone.
// Invariants: deterministic output only (no pids): the child tells the
// parent it is ready (its handler installed, after the exec) before the
// parent ends, so the signal always comes while the child waits for it.
// Directives (see samples/README.md):
// archs: x86_64 i386 arm aarch64 riscv64 mips mipsel
// exit: 0
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile sig_atomic_t got_signal, got_code, got_pid;

static void on_parent_death(int signal, siginfo_t* info, void* context) {
  (void)context;
  got_signal = signal;
  got_code = info->si_code;
  got_pid = info->si_pid;
}

static void report(int fd, const char* text) {
  if (write(fd, text, strlen(text)) < 0) _exit(3);
}

static int current_death_signal(void) {
  int value = -1;
  if (prctl(PR_GET_PDEATHSIG, (unsigned long)&value, 0, 0, 0) != 0) return -1;
  return value;
}

// The child after its execve: the setting survived; it installs its handler,
// tells its parent it is ready and waits for the parent's end.
static int child_after_exec(int ready_fd, int report_fd) {
  char line[160];
  snprintf(line, sizeof line, "after execve, PR_GET_PDEATHSIG is SIGUSR1: %s\n",
           current_death_signal() == SIGUSR1 ? "yes" : "no");
  report(report_fd, line);
  const pid_t old_parent = getppid();
  sigset_t usr1, before;
  sigemptyset(&usr1);
  sigaddset(&usr1, SIGUSR1);
  sigprocmask(SIG_BLOCK, &usr1, &before);
  struct sigaction action;
  memset(&action, 0, sizeof action);
  action.sa_sigaction = on_parent_death;
  action.sa_flags = SA_SIGINFO;
  sigaction(SIGUSR1, &action, NULL);
  report(ready_fd, "r");
  close(ready_fd);
  sigset_t wait_mask = before;
  sigdelset(&wait_mask, SIGUSR1);
  alarm(20);  // bounded: without the signal, SIGALRM ends the child and the output shows it
  while (!got_signal) sigsuspend(&wait_mask);
  alarm(0);
  snprintf(line, sizeof line, "the parent ended: SIGUSR1 in the handler: %s, si_code SI_USER: %s, from that parent: %s\n",
           got_signal == SIGUSR1 ? "yes" : "no", got_code == SI_USER ? "yes" : "no",
           got_pid == old_parent ? "yes" : "no");
  report(report_fd, line);
  snprintf(line, sizeof line, "another parent now: %s\n", getppid() != old_parent ? "yes" : "no");
  report(report_fd, line);
  return 0;
}

// The child before its execve: sets the signal, checks the refusals and that
// a forked child does not inherit it, then runs this program again.
static void child(const char* self, int ready_fd, int report_fd) {
  char line[160];
  snprintf(line, sizeof line, "PR_GET_PDEATHSIG at first: %d\n", current_death_signal());
  report(report_fd, line);
  errno = 0;
  const int refused = prctl(PR_SET_PDEATHSIG, 65UL, 0, 0, 0);
  snprintf(line, sizeof line, "PR_SET_PDEATHSIG 65: %d %s\n", refused, errno == EINVAL ? "EINVAL" : strerror(errno));
  report(report_fd, line);
  if (prctl(PR_SET_PDEATHSIG, (unsigned long)SIGUSR1, 0, 0, 0) != 0) _exit(4);
  snprintf(line, sizeof line, "PR_GET_PDEATHSIG after setting SIGUSR1: %s\n",
           current_death_signal() == SIGUSR1 ? "SIGUSR1" : "another value");
  report(report_fd, line);
  const pid_t grandchild = fork();
  if (grandchild == 0) {
    snprintf(line, sizeof line, "a forked child's PR_GET_PDEATHSIG: %d\n", current_death_signal());
    report(report_fd, line);
    _exit(0);
  }
  waitpid(grandchild, NULL, 0);
  char ready_arg[16], report_arg[16];
  snprintf(ready_arg, sizeof ready_arg, "%d", ready_fd);
  snprintf(report_arg, sizeof report_arg, "%d", report_fd);
  execl(self, self, "after-exec", ready_arg, report_arg, (char*)NULL);
  _exit(5);
}

int main(int argc, char** argv) {
  if (argc == 4 && strcmp(argv[1], "after-exec") == 0) return child_after_exec(atoi(argv[2]), atoi(argv[3]));
  int reports[2], ready[2];
  if (pipe(reports) != 0 || pipe(ready) != 0) return 1;
  const pid_t parent = fork();
  if (parent == 0) {
    close(reports[0]);
    const pid_t child_pid = fork();
    if (child_pid == 0) {
      close(ready[0]);
      child(argv[0], ready[1], reports[1]);
    }
    close(ready[1]);
    close(reports[1]);
    char byte = 0;
    const ssize_t got = read(ready[0], &byte, 1);  // the child waits in sigsuspend now
    _exit(got == 1 ? 0 : 2);
  }
  close(reports[1]);
  close(ready[0]);
  close(ready[1]);
  int status = 0;
  waitpid(parent, &status, 0);
  printf("the parent ended with status %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  // Every line the child wrote, once the child (the last writer) has ended.
  char text[1024];
  size_t length = 0;
  ssize_t got;
  while (length < sizeof text - 1 && (got = read(reports[0], text + length, sizeof text - 1 - length)) > 0)
    length += (size_t)got;
  text[length] = '\0';
  fputs(text, stdout);
  printf("done\n");
  return 0;
}
