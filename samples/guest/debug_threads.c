// Role: guest sample "debug_threads": a small multi-threaded program for the
// time-travel debugger's thread tests: main starts two workers; each calls
// worker_step() five times, yielding after each call so that the scheduler
// interleaves the two, and adds into its own slot; main joins both and prints
// the slots.
// Invariants: deterministic output (each worker writes only its own slot;
// main prints after both are joined).
// Directives (see samples/README.md):
// archs: x86_64 i386 arm aarch64 riscv64 mips mipsel
#include <pthread.h>
#include <sched.h>
#include <stdio.h>

static volatile long slots[2];

// One step of a worker: a call the tests break on, with its own frame.
__attribute__((noinline)) void worker_step(int which, long k) { slots[which] += k * (which + 1); }

static void* worker(void* argument) {
  const int which = (int)(long)argument;
  for (long k = 1; k <= 5; ++k) {
    worker_step(which, k);
    sched_yield();
  }
  return NULL;
}

int main(void) {
  pthread_t workers[2];
  for (long i = 0; i < 2; ++i)
    if (pthread_create(&workers[i], NULL, worker, (void*)i) != 0) return 1;
  for (int i = 0; i < 2; ++i) pthread_join(workers[i], NULL);
  printf("slots %ld %ld\n", slots[0], slots[1]);
  return 0;
}
