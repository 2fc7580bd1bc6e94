// Role: guest sample "threads": POSIX threads on the emulated Linux:
// create/join with return values, gettid against getpid, a mutex and
// condition variable ping-pong, thread-local storage, eight threads summing
// into an atomic, a detached thread that posts a semaphore, pthread_kill to
// one thread (its handler runs on that thread), a thread blocked in read() on
// a pipe while another computes (a blocked thread must not stop the others),
// pthread_exit, a producer and two consumers through a bounded queue, and a
// process that exits while a thread still waits.
// Invariants: deterministic output only: every line is printed by main after
// the threads it describes are joined or have posted, never an interleaving.
// Directives (see samples/README.md):
// archs: x86_64 i386 arm aarch64 riscv64 mips mipsel
#define _GNU_SOURCE
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static long current_tid(void) { return syscall(SYS_gettid); }

// 1. create/join: each worker sums i * k and returns it.
static void* sum_worker(void* argument) {
  const uintptr_t k = (uintptr_t)argument;
  uintptr_t sum = 0;
  for (uintptr_t i = 1; i <= 1000; ++i) sum += i * k;
  if (current_tid() == getpid()) return NULL;  // a thread has a tid of its own
  return (void*)sum;
}

// 2. ping-pong: two threads take 500 turns each, strictly alternating.
static pthread_mutex_t turn_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t turn_changed = PTHREAD_COND_INITIALIZER;
static int turn, turns_taken;

static void* ping_pong(void* argument) {
  const int me = (int)(uintptr_t)argument;
  for (int round = 0; round < 500; ++round) {
    pthread_mutex_lock(&turn_lock);
    while (turn != me) pthread_cond_wait(&turn_changed, &turn_lock);
    ++turns_taken;
    turn = 1 - me;
    pthread_cond_broadcast(&turn_changed);
    pthread_mutex_unlock(&turn_lock);
  }
  return NULL;
}

// 3. thread-local storage survives the other threads' writes.
static __thread int tls_value = 7;

static void* tls_worker(void* argument) {
  const int mine = (int)(uintptr_t)argument;
  if (tls_value != 7) return (void*)1;  // each thread starts from the initial image
  tls_value = mine;
  for (int i = 0; i < 20; ++i) {
    sched_yield();
    if (tls_value != mine) return (void*)2;
  }
  return (void*)0;
}

// 4. eight threads add into one atomic counter.
static long atomic_total;

static void* atomic_worker(void* argument) {
  (void)argument;
  for (int i = 1; i <= 5000; ++i) __atomic_fetch_add(&atomic_total, i, __ATOMIC_SEQ_CST);
  return NULL;
}

// 5. a detached thread posts a semaphore.
static sem_t detached_done;
static volatile int detached_value;

static void* detached_worker(void* argument) {
  (void)argument;
  detached_value = 42;
  sem_post(&detached_done);
  return NULL;
}

// 6. pthread_kill: the handler runs on the target thread.
static volatile long handler_tid;
static volatile sig_atomic_t target_ready;

static void on_usr1(int signal) {
  (void)signal;
  handler_tid = current_tid();
}

static void* kill_target(void* argument) {
  long* my_tid = argument;
  *my_tid = current_tid();
  target_ready = 1;
  while (!handler_tid) sched_yield();
  return NULL;
}

// 7. a reader blocked in read() while main computes.
static int pipe_ends[2];

static void* blocked_reader(void* argument) {
  char* out = argument;
  return read(pipe_ends[0], out, 1) == 1 ? NULL : (void*)1;
}

// 8. pthread_exit with a value.
static void* exits_early(void* argument) {
  (void)argument;
  pthread_exit((void*)99);
  return NULL;
}

// 9. a producer and two consumers through a bounded queue (a mutex, two
// condition variables): every item arrives once.
enum { kQueueSlots = 4, kItems = 200 };
static pthread_mutex_t queue_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t queue_not_full = PTHREAD_COND_INITIALIZER, queue_not_empty = PTHREAD_COND_INITIALIZER;
static int queue[kQueueSlots], queue_head, queue_count;
static long consumed_sum;
static int consumed_items;

static void* producer(void* argument) {
  (void)argument;
  for (int item = 1; item <= kItems + 2; ++item) {  // then one 0 per consumer: stop
    pthread_mutex_lock(&queue_lock);
    while (queue_count == kQueueSlots) pthread_cond_wait(&queue_not_full, &queue_lock);
    queue[(queue_head + queue_count) % kQueueSlots] = item <= kItems ? item : 0;
    ++queue_count;
    pthread_cond_signal(&queue_not_empty);
    pthread_mutex_unlock(&queue_lock);
  }
  return NULL;
}

static void* consumer(void* argument) {
  (void)argument;
  for (;;) {
    pthread_mutex_lock(&queue_lock);
    while (queue_count == 0) pthread_cond_wait(&queue_not_empty, &queue_lock);
    const int item = queue[queue_head];
    queue_head = (queue_head + 1) % kQueueSlots;
    --queue_count;
    if (item) consumed_sum += item, ++consumed_items;
    pthread_cond_signal(&queue_not_full);
    pthread_mutex_unlock(&queue_lock);
    if (!item) return NULL;
  }
}

// 10. a thread that waits forever: exit() ends it with the process.
static pthread_mutex_t never_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t never_signalled = PTHREAD_COND_INITIALIZER;

static void* waits_forever(void* argument) {
  (void)argument;
  pthread_mutex_lock(&never_lock);
  while (1) pthread_cond_wait(&never_signalled, &never_lock);
  return NULL;
}

int main(void) {
  setvbuf(stdout, NULL, _IONBF, 0);
  printf("main: tid is pid: %s\n", current_tid() == getpid() ? "yes" : "no");

  pthread_t workers[4];
  for (uintptr_t k = 0; k < 4; ++k) pthread_create(&workers[k], NULL, sum_worker, (void*)(k + 1));
  for (int k = 0; k < 4; ++k) {
    void* result = NULL;
    pthread_join(workers[k], &result);
    printf("sum worker %d returned %lu\n", k + 1, (unsigned long)(uintptr_t)result);
  }

  pthread_t ping, pong;
  pthread_create(&ping, NULL, ping_pong, (void*)0);
  pthread_create(&pong, NULL, ping_pong, (void*)1);
  pthread_join(ping, NULL);
  pthread_join(pong, NULL);
  printf("ping-pong: %d turns, next turn %d\n", turns_taken, turn);

  pthread_t tls_threads[3];
  for (uintptr_t i = 0; i < 3; ++i) pthread_create(&tls_threads[i], NULL, tls_worker, (void*)(i + 100));
  int tls_failures = 0;
  for (int i = 0; i < 3; ++i) {
    void* result = NULL;
    pthread_join(tls_threads[i], &result);
    tls_failures += result != NULL;
  }
  printf("thread-local storage: %d failures, main still sees %d\n", tls_failures, tls_value);

  pthread_t adders[8];
  for (int i = 0; i < 8; ++i) pthread_create(&adders[i], NULL, atomic_worker, NULL);
  for (int i = 0; i < 8; ++i) pthread_join(adders[i], NULL);
  printf("atomic total: %ld\n", atomic_total);

  sem_init(&detached_done, 0, 0);
  pthread_t detached;
  pthread_attr_t attributes;
  pthread_attr_init(&attributes);
  pthread_attr_setdetachstate(&attributes, PTHREAD_CREATE_DETACHED);
  pthread_create(&detached, &attributes, detached_worker, NULL);
  sem_wait(&detached_done);
  printf("detached thread posted %d\n", detached_value);

  struct sigaction action;
  memset(&action, 0, sizeof action);
  action.sa_handler = on_usr1;
  sigaction(SIGUSR1, &action, NULL);
  long target_tid = 0;
  pthread_t target;
  pthread_create(&target, NULL, kill_target, &target_tid);
  while (!target_ready) sched_yield();
  pthread_kill(target, SIGUSR1);
  pthread_join(target, NULL);
  printf("pthread_kill: handler ran on the target: %s, not on main: %s\n", handler_tid == target_tid ? "yes" : "no",
         handler_tid != current_tid() ? "yes" : "no");

  char got = 0;
  if (pipe(pipe_ends) != 0) return 1;
  pthread_t reader;
  pthread_create(&reader, NULL, blocked_reader, &got);
  volatile unsigned long spin = 0;
  for (unsigned long i = 0; i < 300000; ++i) spin += i;  // the reader is blocked meanwhile
  if (write(pipe_ends[1], "r", 1) != 1) return 1;
  void* reader_result = NULL;
  pthread_join(reader, &reader_result);
  printf("blocked reader got '%c' (%s) after main computed %lu\n", got, reader_result ? "failed" : "ok", spin);

  pthread_t early;
  void* early_result = NULL;
  pthread_create(&early, NULL, exits_early, NULL);
  pthread_join(early, &early_result);
  printf("pthread_exit returned %lu\n", (unsigned long)(uintptr_t)early_result);

  pthread_t producing, consuming[2];
  pthread_create(&consuming[0], NULL, consumer, NULL);
  pthread_create(&consuming[1], NULL, consumer, NULL);
  pthread_create(&producing, NULL, producer, NULL);
  pthread_join(producing, NULL);
  pthread_join(consuming[0], NULL);
  pthread_join(consuming[1], NULL);
  printf("producer/consumer: %d items through a %d-slot queue, summed %ld (expected %ld)\n", consumed_items,
         kQueueSlots, consumed_sum, (long)kItems * (kItems + 1) / 2);

  pthread_t forever;
  pthread_create(&forever, NULL, waits_forever, NULL);
  sched_yield();
  printf("exiting with a thread still waiting\n");
  return 0;
}
