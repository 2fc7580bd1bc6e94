// Role: guest sample "busy_kill": a signal from another process reaches a
// process busy in a loop that makes no syscall. Its parent kills it with
// SIGTERM, then another with SIGUSR1 (both end a process by default), and a
// third that blocks SIGTERM (and waits until it is pending) ends only once it
// unblocks it. An argument sets how long the parent lets a child spin before
// it sends the signal, in milliseconds (100 when none): shorter makes the
// traces of a recording at the full level smaller.
// Invariants: deterministic output only (no pids, no counts): each child says
// on a pipe that it is in its loop before its parent sends the signal; a loop
// runs at most a few seconds natively, so a signal that never comes shows as
// a child that exits 0 instead of hanging.
// Directives (see samples/README.md):
// archs: x86_64 i386 arm aarch64 riscv64 mips mipsel
// exit: 0
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile unsigned long counter;

// No syscall in here: only the signal can end it early.
static void spin(unsigned long iterations) {
  for (unsigned long i = 0; i < iterations; ++i) ++counter;
}

static const char* status_text(int status, char* out, size_t size) {
  if (WIFSIGNALED(status)) snprintf(out, size, "killed by %s", strsignal(WTERMSIG(status)));
  else if (WIFEXITED(status)) snprintf(out, size, "exited with %d", WEXITSTATUS(status));
  else snprintf(out, size, "status %#x", status);
  return out;
}

// A child that tells the parent it is in its loop, then spins; with
// `block_first`, it blocks SIGTERM before and unblocks it after a shorter loop
// (saying so on the pipe first).
static pid_t start_child(int notify, int block_first) {
  const pid_t child = fork();
  if (child != 0) return child;
  sigset_t term;
  sigemptyset(&term);
  sigaddset(&term, SIGTERM);
  if (block_first) sigprocmask(SIG_BLOCK, &term, NULL);
  if (write(notify, "r", 1) != 1) _exit(3);
  if (block_first) {
    // Blocked, the signal waits (at most 10 s here) until it is unblocked.
    sigset_t pending;
    sigemptyset(&pending);
    for (int i = 0; i < 10000 && !sigismember(&pending, SIGTERM); ++i) {
      const struct timespec millisecond = {0, 1000000};
      nanosleep(&millisecond, NULL);
      sigpending(&pending);
    }
    if (write(notify, "u", 1) != 1) _exit(3);
    sigprocmask(SIG_UNBLOCK, &term, NULL);  // the pending SIGTERM ends it here
    _exit(0);
  }
  spin(4000ul * 1000ul * 1000ul);
  _exit(0);
}

static void kill_busy_child(const char* what, int signal, int block_first, long spin_ms) {
  int notify[2];
  if (pipe(notify) != 0) return;
  const pid_t child = start_child(notify[1], block_first);
  close(notify[1]);
  char byte = 0;
  if (read(notify[0], &byte, 1) != 1) printf("%s: no word from the child\n", what);
  const struct timespec in_the_loop = {spin_ms / 1000, spin_ms % 1000 * 1000000};  // the child is in its loop by then
  if (!block_first) nanosleep(&in_the_loop, NULL);
  kill(child, signal);
  int status = 0;
  waitpid(child, &status, 0);
  char text[64];
  printf("%s: %s", what, status_text(status, text, sizeof text));
  if (block_first) printf(", after its unblock: %s", read(notify[0], &byte, 1) == 1 && byte == 'u' ? "yes" : "no");
  printf("\n");
  close(notify[0]);
}

int main(int argc, char** argv) {
  const long spin_ms = argc > 1 ? atol(argv[1]) : 100;
  kill_busy_child("a child in a loop sent SIGTERM", SIGTERM, 0, spin_ms);
  kill_busy_child("a child in a loop sent SIGUSR1", SIGUSR1, 0, spin_ms);
  kill_busy_child("a child in a loop that blocks SIGTERM", SIGTERM, 1, spin_ms);
  return 0;
}
