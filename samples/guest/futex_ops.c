// Role: guest sample "futex_ops": the futex operations glibc and other
// runtimes use, called directly with threads waiting on them: WAIT with a
// value that changed (EAGAIN) and with a timeout (ETIMEDOUT), WAKE counts,
// WAIT_BITSET/WAKE_BITSET with bits that miss, REQUEUE and CMP_REQUEUE (EAGAIN
// when the value changed), WAKE_OP's compare, and a thread that sleeps
// (nanosleep) while another runs. Each result is printed by main once the
// waiters are settled, so the output does not depend on the interleaving.
// Directives (see samples/README.md):
// archs: x86_64 i386 arm aarch64 riscv64 mips mipsel
#define _GNU_SOURCE
#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static long futex(uint32_t* address, int op, uint32_t value, const struct timespec* timeout, uint32_t* address2,
                  uint32_t value3) {
  return syscall(SYS_futex, address, op, value, timeout, address2, value3);
}

// timespec as the syscall takes it on every architecture glibc builds this for
// (32-bit ones call futex_time64 through glibc only; the raw SYS_futex takes
// the old 32-bit timespec there, which struct timespec is without _TIME_BITS=64).
static const char* outcome(long result) {
  if (result >= 0) return "ok";
  return errno == EAGAIN ? "EAGAIN" : errno == ETIMEDOUT ? "ETIMEDOUT" : errno == EINVAL ? "EINVAL" : "other";
}

static uint32_t word_a, word_b;
static volatile int waiting, released;

static void* waiter_on_a(void* argument) {
  const uint32_t bitset = (uint32_t)(uintptr_t)argument;
  __atomic_add_fetch(&waiting, 1, __ATOMIC_SEQ_CST);
  while (__atomic_load_n(&word_a, __ATOMIC_SEQ_CST) == 0) {
    if (bitset) futex(&word_a, FUTEX_WAIT_BITSET_PRIVATE, 0, NULL, NULL, bitset);
    else futex(&word_a, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0);
  }
  __atomic_add_fetch(&released, 1, __ATOMIC_SEQ_CST);
  return NULL;
}

// Waits until `count` threads have said they wait, and then for them to be
// asleep in the kernel: they yield to each other until every one sleeps.
static void settle(int count) {
  while (__atomic_load_n(&waiting, __ATOMIC_SEQ_CST) < count) sched_yield();
  for (int i = 0; i < 50; ++i) sched_yield();
}

static long wake_all(uint32_t* address) { return futex(address, FUTEX_WAKE_PRIVATE, 1000, NULL, NULL, 0); }

static void* sleeper(void* argument) {
  (void)argument;
  struct timespec pause = {0, 20 * 1000 * 1000};
  nanosleep(&pause, NULL);
  return NULL;
}

int main(void) {
  setvbuf(stdout, NULL, _IONBF, 0);
  uint32_t value = 5;
  printf("wait on a changed value: %s\n", outcome(futex(&value, FUTEX_WAIT_PRIVATE, 4, NULL, NULL, 0)));
  struct timespec short_wait = {0, 10 * 1000 * 1000};
  printf("wait with a timeout: %s\n", outcome(futex(&value, FUTEX_WAIT_PRIVATE, 5, &short_wait, NULL, 0)));
  printf("wake with nobody waiting: %ld\n", futex(&value, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0));
  printf("bitset 0: %s\n", outcome(futex(&value, FUTEX_WAIT_BITSET_PRIVATE, 5, NULL, NULL, 0)));

  // WAKE with a count: three waiters, woken one and then the rest.
  pthread_t threads[3];
  for (int i = 0; i < 3; ++i) pthread_create(&threads[i], NULL, waiter_on_a, NULL);
  settle(3);
  __atomic_store_n(&word_a, 1, __ATOMIC_SEQ_CST);
  const long first = futex(&word_a, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
  const long rest = wake_all(&word_a);
  for (int i = 0; i < 3; ++i) pthread_join(threads[i], NULL);
  printf("wake 1 of 3 woke %ld, then %ld more; %d released\n", first, rest, released);

  // WAKE_BITSET: a waiter on bit 1 is not woken by bit 2, then is by bit 1.
  word_a = 0, waiting = 0, released = 0;
  pthread_create(&threads[0], NULL, waiter_on_a, (void*)(uintptr_t)1);
  settle(1);
  __atomic_store_n(&word_a, 1, __ATOMIC_SEQ_CST);
  const long missed = futex(&word_a, FUTEX_WAKE_BITSET_PRIVATE, 10, NULL, NULL, 2);
  const long hit = futex(&word_a, FUTEX_WAKE_BITSET_PRIVATE, 10, NULL, NULL, 1);
  pthread_join(threads[0], NULL);
  printf("wake bitset 2 woke %ld, bitset 1 woke %ld\n", missed, hit);

  // CMP_REQUEUE: refused when the value changed; else wakes 1 and moves 2 to word_b.
  word_a = 0, waiting = 0, released = 0;
  for (int i = 0; i < 3; ++i) pthread_create(&threads[i], NULL, waiter_on_a, NULL);
  settle(3);
  printf("cmp_requeue with a stale value: %s\n",
         outcome(futex(&word_a, FUTEX_CMP_REQUEUE_PRIVATE, 1, (const struct timespec*)(uintptr_t)2, &word_b, 7)));
  __atomic_store_n(&word_a, 1, __ATOMIC_SEQ_CST);
  const long requeued = futex(&word_a, FUTEX_CMP_REQUEUE_PRIVATE, 1, (const struct timespec*)(uintptr_t)2, &word_b, 1);
  const long left_on_a = wake_all(&word_a);
  const long on_b = wake_all(&word_b);
  for (int i = 0; i < 3; ++i) pthread_join(threads[i], NULL);
  printf("cmp_requeue woke or moved %ld; then %ld on a, %ld on b\n", requeued, left_on_a, on_b);

  // WAKE_OP: word_b = 3 (SET), wakes on a, and on b when the old value was 0 (CMP_EQ).
  word_b = 0;
  const uint32_t op = (uint32_t)((FUTEX_OP_SET << 28) | (FUTEX_OP_CMP_EQ << 24) | (3 << 12) | 0);
  const long woken_op = futex(&word_a, FUTEX_WAKE_OP_PRIVATE, 1, (const struct timespec*)(uintptr_t)1, &word_b, op);
  printf("wake_op woke %ld, word b is now %u\n", woken_op, word_b);

  // A sleeping thread does not stop the others.
  pthread_t sleeping;
  pthread_create(&sleeping, NULL, sleeper, NULL);
  volatile unsigned long spin = 0;
  for (unsigned long i = 0; i < 200000; ++i) spin += i & 1;
  pthread_join(sleeping, NULL);
  printf("sleeper joined; main counted %lu\n", spin);
  return 0;
}
