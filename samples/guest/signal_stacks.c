// Role: guest sample "signal_stacks": syscalls made inside signal handlers,
// for the unwinder's walk through signal frames (tests/recorder/unwind/
// signal_stacks_test.cpp compares its stacks with gdb's). A handler entered
// from a call chain (main -> outer -> inner -> raise) writes a line; a
// handler entered at a faulting store in a loop (main -> fill, whose sixth
// store reaches a read-only page) writes a line and makes the page writable,
// so the store is made again and the loop goes on.
// Invariants: deterministic output only; each helper is noinline and does
// work after its call, so that every frame keeps a return address on the stack.
// Directives (see samples/README.md):
// archs: x86_64 i386 arm aarch64 riscv64 mips mipsel
// exit: 0
// strace: yes
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static volatile sig_atomic_t raised, faults;
static volatile int after_calls;
static char* page;
static long page_size;

static void on_usr1(int signal) {
  (void)signal;
  static const char text[] = "handler: raised\n";
  write(1, text, sizeof text - 1);
  ++raised;
}

static void on_segv(int signal) {
  (void)signal;
  static const char text[] = "handler: fault in the loop\n";
  write(1, text, sizeof text - 1);
  ++faults;
  mprotect(page + page_size, (size_t)page_size, PROT_READ | PROT_WRITE);
}

__attribute__((noinline)) static void inner(void) {
  raise(SIGUSR1);
  ++after_calls;
}

__attribute__((noinline)) static void outer(void) {
  inner();
  ++after_calls;
}

// Stores a byte every 64: the sixth store is the first in the read-only page.
__attribute__((noinline)) static long fill(volatile char* to, int count) {
  long sum = 0;
  for (int i = 0; i < count; ++i) {
    to[i * 64] = (char)i;
    sum += to[i * 64];
  }
  return sum;
}

static void install(int signal, void (*handler)(int)) {
  struct sigaction action;
  memset(&action, 0, sizeof action);
  action.sa_handler = handler;
  sigemptyset(&action.sa_mask);
  sigaction(signal, &action, NULL);
}

int main(void) {
  install(SIGUSR1, on_usr1);
  install(SIGSEGV, on_segv);
  outer();
  printf("raised: handler ran %d times, calls went on: %d\n", (int)raised, (int)after_calls);
  fflush(stdout);

  page_size = sysconf(_SC_PAGESIZE);
  page = mmap(NULL, 2 * (size_t)page_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (page == MAP_FAILED) return 1;
  mprotect(page + page_size, (size_t)page_size, PROT_READ);
  const long sum = fill(page + page_size - 5 * 64, 10);
  printf("loop: sum %ld, faults %d\n", sum, (int)faults);
  return 0;
}
