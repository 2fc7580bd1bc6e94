// Role: guest sample "signal_fd_exec": a signalfd kept across execve. A
// child blocks SIGUSR2, opens a signalfd for it (not close-on-exec) and a
// dup of it, raises SIGUSR2 and runs this program again; the new image finds
// the descriptor readable, reads SIGUSR2 through the dup with the siginfo it
// was raised with (ssi_code SI_TKILL, ssi_pid its own), and the first
// descriptor is then no longer readable (the dup shares its signalfd). Linux
// keeps the blocked mask, the pending signal and the descriptor across
// execve.
// Invariants: deterministic output only (no pids).
// Directives (see samples/README.md):
// archs: x86_64 i386 arm aarch64 riscv64 mips mipsel
// exit: 0
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

static int readable(int fd) {
  struct pollfd ready = {fd, POLLIN, 0};
  return poll(&ready, 1, 0) == 1 && (ready.revents & POLLIN);
}

// The image execve started: what came through.
static int after_exec(int fd, int copy) {
  printf("after execve: the signalfd is readable: %s\n", readable(fd) ? "yes" : "no");
  struct signalfd_siginfo info;
  memset(&info, 0, sizeof info);
  const ssize_t got = read(copy, &info, sizeof info);
  const int whole = got == (ssize_t)sizeof info;
  printf("after execve: its dup read %s, ssi_code SI_TKILL: %s, ssi_pid its own: %s\n",
         whole && info.ssi_signo == SIGUSR2 ? "SIGUSR2" : "something else", whole && info.ssi_code == SI_TKILL ? "yes" : "no",
         whole && info.ssi_pid == (unsigned)getpid() ? "yes" : "no");
  printf("after execve: readable once read: %s\n", readable(fd) ? "yes" : "no");
  sigset_t pending;
  sigpending(&pending);
  printf("after execve: SIGUSR2 still pending: %s\n", sigismember(&pending, SIGUSR2) ? "yes" : "no");
  return 0;
}

int main(int argc, char** argv) {
  setvbuf(stdout, NULL, _IONBF, 0);
  if (argc == 4 && strcmp(argv[1], "after-exec") == 0) return after_exec(atoi(argv[2]), atoi(argv[3]));
  const pid_t child = fork();
  if (child < 0) return 1;
  if (child == 0) {
    sigset_t usr2;
    sigemptyset(&usr2);
    sigaddset(&usr2, SIGUSR2);
    if (sigprocmask(SIG_BLOCK, &usr2, NULL) != 0) _exit(2);
    const int fd = signalfd(-1, &usr2, SFD_NONBLOCK);  // kept across execve
    const int copy = dup(fd);
    if (fd < 0 || copy < 0) _exit(3);
    raise(SIGUSR2);
    char fd_text[16], copy_text[16];
    snprintf(fd_text, sizeof fd_text, "%d", fd);
    snprintf(copy_text, sizeof copy_text, "%d", copy);
    execl(argv[0], argv[0], "after-exec", fd_text, copy_text, (char*)NULL);
    _exit(4);
  }
  int status = 0;
  if (waitpid(child, &status, 0) != child) return 5;
  printf("the child ended with status %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  return 0;
}
