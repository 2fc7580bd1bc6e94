// Role: guest sample "signal_handlers": handlers run as Linux runs them for
// signals a program sends itself: raise() and kill() of SIGUSR1, an
// SA_SIGINFO handler reading si_signo, si_code and si_pid, a blocked signal
// that stays pending (sigpending) until sigprocmask unblocks it, the mask
// inside a handler (its own signal and sa_mask blocked, SA_NODEFER),
// SA_RESETHAND, a signal raised inside a handler (nested), SIG_IGN, and
// sigreturn restoring the interrupted registers (a value live across raise()).
// Invariants: deterministic output only (si_pid is compared with getpid(),
// never printed).
// Directives (see samples/README.md):
// archs: x86_64 i386 arm aarch64 riscv64 mips mipsel
// exit: 0
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static volatile sig_atomic_t usr1_count, usr2_count, depth, max_depth;
static volatile int info_signo, info_code, info_pid_is_self;
static volatile int usr2_blocked_inside;

static void on_usr1(int signal) {
  (void)signal;
  ++usr1_count;
}

static void on_info(int signal, siginfo_t* info, void* context) {
  (void)signal;
  (void)context;
  info_signo = info->si_signo;
  info_code = info->si_code;
  info_pid_is_self = info->si_pid == getpid();
}

static void on_nested_usr2(int signal) {
  (void)signal;
  ++usr2_count;
  ++depth;
  if (depth > max_depth) max_depth = depth;
  --depth;
}

static void on_nested_usr1(int signal) {
  (void)signal;
  sigset_t now;
  sigprocmask(SIG_BLOCK, NULL, &now);
  usr2_blocked_inside = sigismember(&now, SIGUSR2);
  ++depth;
  raise(SIGUSR2);  // delivered at once, on top of this handler
  --depth;
  ++usr1_count;
}

static void on_nodefer(int signal) {
  ++depth;
  if (depth > max_depth) max_depth = depth;
  if (depth < 3) raise(signal);  // SA_NODEFER: re-entered at once
  --depth;
}

static void install(int signal, void (*handler)(int), int flags) {
  struct sigaction action;
  memset(&action, 0, sizeof action);
  action.sa_handler = handler;
  action.sa_flags = flags;
  sigemptyset(&action.sa_mask);
  sigaction(signal, &action, NULL);
}

int main(void) {
  install(SIGUSR1, on_usr1, 0);
  raise(SIGUSR1);
  kill(getpid(), SIGUSR1);
  printf("raise and kill: handler ran %d times\n", (int)usr1_count);

  struct sigaction action;
  memset(&action, 0, sizeof action);
  action.sa_sigaction = on_info;
  action.sa_flags = SA_SIGINFO;
  sigaction(SIGUSR2, &action, NULL);
  kill(getpid(), SIGUSR2);
  printf("kill: si_signo %d (SIGUSR2 %d) si_code %d (SI_USER %d) si_pid is self: %d\n", info_signo, SIGUSR2,
         info_code, SI_USER, info_pid_is_self);
  raise(SIGUSR2);
  printf("raise: si_code %d (SI_TKILL %d)\n", info_code, SI_TKILL);

  // Blocked: pending until unblocked.
  sigset_t block, pending;
  sigemptyset(&block);
  sigaddset(&block, SIGUSR1);
  usr1_count = 0;
  sigprocmask(SIG_BLOCK, &block, NULL);
  raise(SIGUSR1);
  raise(SIGUSR1);  // a standard signal is pending once
  sigpending(&pending);
  printf("blocked: handler ran %d times, pending: %d\n", (int)usr1_count, sigismember(&pending, SIGUSR1));
  sigprocmask(SIG_UNBLOCK, &block, NULL);
  sigpending(&pending);
  printf("unblocked: handler ran %d times, pending: %d\n", (int)usr1_count, sigismember(&pending, SIGUSR1));

  // Nested: SIGUSR2 raised inside the SIGUSR1 handler, sa_mask empty.
  usr1_count = 0;
  install(SIGUSR1, on_nested_usr1, 0);
  install(SIGUSR2, on_nested_usr2, 0);
  raise(SIGUSR1);
  printf("nested: usr1 %d usr2 %d, depth reached %d, usr2 blocked inside: %d\n", (int)usr1_count,
         (int)usr2_count, (int)max_depth, usr2_blocked_inside);

  // sa_mask blocks SIGUSR2 inside the handler: it runs after.
  memset(&action, 0, sizeof action);
  action.sa_handler = on_nested_usr1;
  sigemptyset(&action.sa_mask);
  sigaddset(&action.sa_mask, SIGUSR2);
  sigaction(SIGUSR1, &action, NULL);
  usr2_count = 0;
  max_depth = 0;
  raise(SIGUSR1);
  printf("sa_mask: usr2 %d, depth reached %d, usr2 blocked inside: %d\n", (int)usr2_count, (int)max_depth,
         usr2_blocked_inside);

  // SA_NODEFER: the handler is re-entered by its own signal.
  max_depth = 0;
  install(SIGUSR1, on_nodefer, SA_NODEFER);
  raise(SIGUSR1);
  printf("SA_NODEFER: depth reached %d\n", (int)max_depth);

  // SA_RESETHAND: the second raise takes the default action; make it ignore.
  usr1_count = 0;
  install(SIGURG, on_usr1, SA_RESETHAND);
  raise(SIGURG);
  raise(SIGURG);
  struct sigaction now;
  sigaction(SIGURG, NULL, &now);
  printf("SA_RESETHAND: handler ran %d times, now default: %d\n", (int)usr1_count, now.sa_handler == SIG_DFL);

  // SIG_IGN: nothing happens.
  signal(SIGUSR1, SIG_IGN);
  raise(SIGUSR1);
  printf("SIG_IGN: still here\n");

  // Registers survive a handler: a computation live across raise().
  install(SIGUSR1, on_usr1, 0);
  volatile double x = 1.5;
  long sum = 0;
  for (int i = 0; i < 100; ++i) {
    sum += i * 3;
    if (i % 10 == 0) raise(SIGUSR1);
    x *= 1.01;
  }
  printf("sum %ld, x %.6f, handler ran %d times\n", sum, (double)x, (int)usr1_count);
  return 0;
}
