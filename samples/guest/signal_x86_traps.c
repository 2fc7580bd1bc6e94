// Role: guest sample "signal_x86_traps": x86's own traps reach the guest's
// handlers as Linux sends them: an integer division by zero (SIGFPE with
// FPE_INTDIV, left by siglongjmp, since returning would divide again) and
// int3 (SIGTRAP, the handler returns after the instruction).
// Invariants: deterministic output only.
// Directives (see samples/README.md):
// archs: x86_64 i386
// exit: 0
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

static sigjmp_buf escape;
static volatile int fpe_code, trap_count;

static void on_fpe(int signal, siginfo_t* info, void* context) {
  (void)signal;
  (void)context;
  fpe_code = info->si_code;
  siglongjmp(escape, 1);
}

static void on_trap(int signal) {
  (void)signal;
  ++trap_count;
}

int main(void) {
  struct sigaction action;
  memset(&action, 0, sizeof action);
  action.sa_sigaction = on_fpe;
  action.sa_flags = SA_SIGINFO;
  sigaction(SIGFPE, &action, NULL);
  volatile int zero = 0;
  if (sigsetjmp(escape, 1) == 0) {
    printf("division: %d\n", 7 / zero);
  } else {
    printf("division by zero: SIGFPE, si_code FPE_INTDIV: %d\n", fpe_code == FPE_INTDIV);
  }
  signal(SIGTRAP, on_trap);
  __asm__ volatile("int3");
  __asm__ volatile("int3");
  printf("int3: SIGTRAP handler ran %d times\n", trap_count);
  return 0;
}
