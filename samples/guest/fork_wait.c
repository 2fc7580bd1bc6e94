// Role: guest sample "fork_wait": processes without exec: fork and wait4
// with an exit code, a child killed by a signal its parent sends (kill) and
// one that kills itself (raise), WNOHANG before and after the child ends,
// waitid(P_PID) with its siginfo, a pipe from child to parent, getppid in the
// child, SIGCHLD to an SA_SIGINFO handler (si_code, si_status) taken in
// sigsuspend, SIGCHLD set to SIG_IGN reaping an ended child by itself (a wait
// gives ECHILD, no zombie), vfork then _exit, and ECHILD once every child is reaped.
// Invariants: deterministic output only (no pids, no times): every child
// waits on a pipe for its parent before it ends where the order matters.
// Directives (see samples/README.md):
// archs: x86_64 i386 arm aarch64 riscv64 mips mipsel
// exit: 0
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile sig_atomic_t chld_code, chld_status, chld_count;

static void on_child(int signal, siginfo_t* info, void* context) {
  (void)signal;
  (void)context;
  chld_code = info->si_code;
  chld_status = info->si_status;
  ++chld_count;
}

static void describe(const char* what, int status) {
  if (WIFEXITED(status)) printf("%s: exited %d\n", what, WEXITSTATUS(status));
  else if (WIFSIGNALED(status)) printf("%s: killed by %s\n", what, WTERMSIG(status) == SIGUSR1 ? "SIGUSR1" : WTERMSIG(status) == SIGTERM ? "SIGTERM" : "another signal");
  else printf("%s: status %#x\n", what, status);
}

static void exit_code_and_wnohang(void) {
  int hold[2];
  if (pipe(hold) != 0) exit(10);
  const pid_t parent = getpid();
  const pid_t child = fork();
  if (child == 0) {
    char byte;
    close(hold[1]);
    if (read(hold[0], &byte, 1) != 1) _exit(20);
    _exit(getppid() == parent ? 3 : 4);
  }
  int status = -1;
  printf("WNOHANG while it runs: %d\n", (int)waitpid(child, &status, WNOHANG));
  if (write(hold[1], "g", 1) != 1) exit(11);
  const pid_t reaped = waitpid(child, &status, 0);
  printf("waitpid gave the child: %s\n", reaped == child ? "yes" : "no");
  describe("child 1 (3: its ppid was its parent)", status);
  close(hold[0]);
  close(hold[1]);
}

static void killed_children(void) {
  const pid_t sleeper = fork();
  if (sleeper == 0) {
    for (;;) pause();
  }
  const pid_t suicide = fork();
  if (suicide == 0) {
    raise(SIGTERM);
    _exit(1);
  }
  int status;
  if (waitpid(suicide, &status, 0) != suicide) exit(12);
  describe("child 2", status);
  if (kill(sleeper, SIGUSR1) != 0) exit(13);
  if (waitpid(sleeper, &status, 0) != sleeper) exit(14);
  describe("child 3", status);
}

static void pipe_and_waitid(void) {
  int data[2];
  if (pipe(data) != 0) exit(15);
  const pid_t child = fork();
  if (child == 0) {
    close(data[0]);
    const char message[] = "hello from the child";
    if (write(data[1], message, sizeof message) != (ssize_t)sizeof message) _exit(1);
    _exit(7);
  }
  close(data[1]);
  char buffer[64] = {0};
  ssize_t total = 0, got;
  while ((got = read(data[0], buffer + total, sizeof buffer - 1 - (size_t)total)) > 0) total += got;
  printf("read %zd bytes: %s\n", total, buffer);
  close(data[0]);
  siginfo_t info;
  memset(&info, 0, sizeof info);
  if (waitid(P_PID, (id_t)child, &info, WEXITED) != 0) exit(16);
  printf("waitid: si_signo SIGCHLD %s, CLD_EXITED %s, si_status %d, si_pid right %s\n",
         info.si_signo == SIGCHLD ? "yes" : "no", info.si_code == CLD_EXITED ? "yes" : "no", info.si_status,
         info.si_pid == child ? "yes" : "no");
}

static void sigchld_handler(void) {
  struct sigaction action;
  memset(&action, 0, sizeof action);
  action.sa_sigaction = on_child;
  action.sa_flags = SA_SIGINFO;
  sigemptyset(&action.sa_mask);
  if (sigaction(SIGCHLD, &action, NULL) != 0) exit(17);
  sigset_t blocked, old;
  sigemptyset(&blocked);
  sigaddset(&blocked, SIGCHLD);
  sigprocmask(SIG_BLOCK, &blocked, &old);
  const pid_t child = fork();
  if (child == 0) _exit(9);
  while (chld_count == 0) sigsuspend(&old);
  sigprocmask(SIG_SETMASK, &old, NULL);
  printf("SIGCHLD: CLD_EXITED %s, si_status %d\n", chld_code == CLD_EXITED ? "yes" : "no", (int)chld_status);
  int status;
  if (waitpid(child, &status, 0) != child) exit(18);
  describe("child 4", status);
  signal(SIGCHLD, SIG_DFL);
}

// SIGCHLD set to SIG_IGN: an ended child is reaped at once, so a wait blocks
// until every child has ended and then fails with ECHILD, and no zombie is
// left for kill(pid, 0) to find.
static void ignored_sigchld_reaps(void) {
  signal(SIGCHLD, SIG_IGN);
  const pid_t child = fork();
  if (child == 0) _exit(6);
  errno = 0;
  int status = -1;
  const pid_t waited = waitpid(-1, &status, 0);
  const int wait_error = errno;
  errno = 0;
  const int probe = kill(child, 0);
  printf("SIG_IGN: waitpid %d %s, status untouched %s, no zombie %s\n", (int)waited,
         wait_error == ECHILD ? "ECHILD" : strerror(wait_error), status == -1 ? "yes" : "no",
         probe == -1 && errno == ESRCH ? "yes" : "no");
  signal(SIGCHLD, SIG_DFL);
}

static void vfork_exit(void) {
  const pid_t child = vfork();
  if (child == 0) _exit(5);
  int status;
  if (waitpid(child, &status, 0) != child) exit(19);
  describe("vfork child", status);
}

int main(void) {
  setvbuf(stdout, NULL, _IONBF, 0);
  exit_code_and_wnohang();
  killed_children();
  pipe_and_waitid();
  sigchld_handler();
  ignored_sigchld_reaps();
  vfork_exit();
  errno = 0;
  const pid_t none = wait(NULL);
  printf("wait with no child: %d %s\n", (int)none, errno == ECHILD ? "ECHILD" : strerror(errno));
  return 0;
}
