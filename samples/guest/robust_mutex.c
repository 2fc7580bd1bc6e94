// Role: guest sample "robust_mutex": a robust mutex whose owner thread exits
// while holding it: the kernel walks the dead thread's robust list
// (set_robust_list), marks the lock FUTEX_OWNER_DIED and wakes a waiter, so
// the next pthread_mutex_lock returns EOWNERDEAD, once, and the lock works
// again after pthread_mutex_consistent. One waiter is already blocked on the
// lock when the owner dies, another locks it afterwards.
// Directives (see samples/README.md):
// archs: x86_64 i386 arm aarch64 riscv64 mips mipsel
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>

static pthread_mutex_t lock;
static volatile int owner_has_lock, owner_may_exit, waiter_result = -1;

static void* dies_holding_lock(void* argument) {
  (void)argument;
  pthread_mutex_lock(&lock);
  owner_has_lock = 1;
  while (!owner_may_exit) sched_yield();
  return NULL;  // exits with the lock held
}

static void* waits_for_lock(void* argument) {
  (void)argument;
  waiter_result = pthread_mutex_lock(&lock);
  if (waiter_result == EOWNERDEAD) pthread_mutex_consistent(&lock);
  pthread_mutex_unlock(&lock);
  return NULL;
}

int main(void) {
  pthread_mutexattr_t attributes;
  pthread_mutexattr_init(&attributes);
  pthread_mutexattr_setrobust(&attributes, PTHREAD_MUTEX_ROBUST);
  pthread_mutex_init(&lock, &attributes);

  pthread_t owner, waiter;
  pthread_create(&owner, NULL, dies_holding_lock, NULL);
  while (!owner_has_lock) sched_yield();
  pthread_create(&waiter, NULL, waits_for_lock, NULL);
  for (int i = 0; i < 50; ++i) sched_yield();  // the waiter blocks on the lock meanwhile
  owner_may_exit = 1;
  pthread_join(owner, NULL);
  pthread_join(waiter, NULL);
  printf("waiter: %s\n", waiter_result == EOWNERDEAD ? "EOWNERDEAD" : waiter_result == 0 ? "locked" : "error");
  const int again = pthread_mutex_lock(&lock);
  printf("after pthread_mutex_consistent: %s\n", again == 0 ? "locked" : "error");
  pthread_mutex_unlock(&lock);
  return 0;
}
