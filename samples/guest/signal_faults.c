// Role: guest sample "signal_faults": synchronous faults go to the guest's
// handlers as Linux sends them: a write to a read-only page reaches an
// SA_SIGINFO SIGSEGV handler (si_addr, SEGV_ACCERR) that makes the page
// writable and returns, so the write runs again and succeeds; a read of an
// unmapped page (SEGV_MAPERR) leaves its handler by siglongjmp; an illegal
// instruction's SIGILL handler moves the ucontext's pc past it; a stack
// overflow is caught on a sigaltstack. The output is the same on every
// architecture (x86's own traps: signal_x86_traps.c).
// Invariants: deterministic output only (addresses are compared, never printed).
// Directives (see samples/README.md):
// archs: x86_64 i386 arm aarch64 riscv64 mips mipsel
// exit: 0
#define _GNU_SOURCE
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

static sigjmp_buf escape;
static char* volatile page;
static volatile int segv_code, segv_addr_ok, segv_count, ill_count, on_altstack;
static char* volatile altstack_base;

static void on_segv_fix(int signal, siginfo_t* info, void* context) {
  (void)signal;
  (void)context;
  ++segv_count;
  segv_code = info->si_code;
  segv_addr_ok = (char*)info->si_addr == page + 100;
  mprotect(page, 4096, PROT_READ | PROT_WRITE);
}

static void on_segv_escape(int signal, siginfo_t* info, void* context) {
  (void)signal;
  (void)context;
  segv_code = info->si_code;
  segv_addr_ok = (char*)info->si_addr == page + 8;
  siglongjmp(escape, 1);
}

static void on_overflow(int signal, siginfo_t* info, void* context) {
  (void)signal;
  (void)info;
  (void)context;
  char here;
  on_altstack = &here >= altstack_base && &here < altstack_base + 65536;
  siglongjmp(escape, 2);
}

static void on_ill(int signal, siginfo_t* info, void* context) {
  (void)signal;
  (void)info;
  ucontext_t* uc = context;
  ++ill_count;
#if defined(__x86_64__)
  uc->uc_mcontext.gregs[REG_RIP] += 2;  // ud2
#elif defined(__i386__)
  uc->uc_mcontext.gregs[REG_EIP] += 2;  // ud2
#elif defined(__arm__) && defined(__thumb__)
  uc->uc_mcontext.arm_pc += 2;  // udf (16-bit)
#elif defined(__arm__)
  uc->uc_mcontext.arm_pc += 4;  // udf
#elif defined(__aarch64__)
  uc->uc_mcontext.pc += 4;  // udf
#elif defined(__riscv)
  uc->uc_mcontext.__gregs[REG_PC] += 4;  // an all-zero word
#elif defined(__mips__)
  uc->uc_mcontext.pc += 4;  // opcode 0x3b
#endif
}


static void install(int signal, void (*handler)(int, siginfo_t*, void*), int flags) {
  struct sigaction action;
  memset(&action, 0, sizeof action);
  action.sa_sigaction = handler;
  action.sa_flags = SA_SIGINFO | flags;
  sigaction(signal, &action, NULL);
}

static volatile int recursion_limit = 1 << 30;  // never reached: the stack overflows first

static int recurse(int depth) {
  volatile char buffer[1024];
  buffer[0] = (char)depth;
  if (depth > recursion_limit) return 0;
  return recurse(depth + 1) + buffer[0];
}

int main(void) {
  page = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  install(SIGSEGV, on_segv_fix, 0);
  // A volatile store, so that the compiler reads the handler's results after it.
  *(volatile char*)(page + 100) = 42;  // faults once; the handler makes the page writable
  printf("write to read-only page: handler ran %d times, si_code SEGV_ACCERR: %d, si_addr right: %d, value %d\n",
         segv_count, segv_code == SEGV_ACCERR, segv_addr_ok, page[100]);

  munmap(page, 4096);
  install(SIGSEGV, on_segv_escape, 0);
  if (sigsetjmp(escape, 1) == 0) {
    volatile char value = page[8];
    (void)value;
    printf("read of unmapped page: no fault\n");
  } else {
    printf("read of unmapped page: siglongjmp out, si_code SEGV_MAPERR: %d, si_addr right: %d\n",
           segv_code == SEGV_MAPERR, segv_addr_ok);
  }
  sigset_t mask;
  sigprocmask(SIG_BLOCK, NULL, &mask);
  printf("after siglongjmp: SIGSEGV blocked: %d\n", sigismember(&mask, SIGSEGV));

  install(SIGILL, on_ill, 0);
#if defined(__x86_64__) || defined(__i386__)
  __asm__ volatile("ud2");
#elif defined(__arm__) && defined(__thumb__)
  __asm__ volatile(".inst.n 0xde00");
#elif defined(__arm__)
  __asm__ volatile(".inst 0xe7f000f0");
#elif defined(__aarch64__)
  __asm__ volatile(".inst 0x00000000");
#elif defined(__riscv)
  __asm__ volatile(".word 0");
#elif defined(__mips__)
  // Opcode 0x3b: reserved before MIPS R6 (a Reserved Instruction exception;
  // Linux emulates none of it), so SIGILL with the pc at the word.
  __asm__ volatile(".word 0xec000000");
#endif
  printf("illegal instruction: handler ran %d times and moved the pc past it\n", ill_count);

  static char alternate[65536];
  altstack_base = alternate;
  stack_t stack = {.ss_sp = alternate, .ss_size = sizeof alternate, .ss_flags = 0};
  sigaltstack(&stack, NULL);
  install(SIGSEGV, on_overflow, SA_ONSTACK);
  if (sigsetjmp(escape, 1) == 0) {
    printf("recursion returned %d\n", recurse(0));
  } else {
    printf("stack overflow: caught on the alternate stack: %d\n", on_altstack);
  }
  stack_t now;
  sigaltstack(NULL, &now);
  printf("sigaltstack: size %zu, flags %d\n", now.ss_size, now.ss_flags);

  return 0;
}
