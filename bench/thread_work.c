/* Role: the guest workload of bench/threads_bench.sh. Computes the same sum
 * over N iterations whether one thread does them all or T threads each do a
 * slice, so the instruction counts of the runs are nearly equal and their
 * times compare per instruction: what guest threads cost under tracecorn
 * (the scheduler's quantum switches, futex waits on a contended mutex,
 * per-thread register contexts) against a single-threaded run.
 * Usage: thread_work THREADS ITERATIONS   prints "sum <hex>" (the same for any
 * THREADS) and exits 0. Each thread folds its partial sum into the shared
 * total under one mutex every 4096 iterations, so the threads contend.
 * Single host thread per guest thread; no state outside main's stack and the
 * shared total. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

enum { kFoldEvery = 4096, kMaxThreads = 64 };

struct shared_total {
  pthread_mutex_t lock;
  uint64_t sum;
};

struct slice {
  uint64_t begin, end;
  struct shared_total *total;
};

static uint64_t term(uint64_t i) {
  uint64_t x = i * 0x9e3779b97f4a7c15ull + 1;
  x ^= x >> 31;
  x *= 0xbf58476d1ce4e5b9ull;
  return x ^ (x >> 29);
}

static void *sum_slice(void *argument) {
  struct slice *work = argument;
  uint64_t partial = 0;
  for (uint64_t i = work->begin; i < work->end; ++i) {
    partial += term(i);
    if ((i + 1) % kFoldEvery == 0 || i + 1 == work->end) {
      pthread_mutex_lock(&work->total->lock);
      work->total->sum += partial;
      pthread_mutex_unlock(&work->total->lock);
      partial = 0;
    }
  }
  return NULL;
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: thread_work THREADS ITERATIONS\n");
    return 2;
  }
  long threads = strtol(argv[1], NULL, 10);
  uint64_t iterations = strtoull(argv[2], NULL, 10);
  if (threads < 1 || threads > kMaxThreads) {
    fprintf(stderr, "thread_work: THREADS must be 1..%d\n", kMaxThreads);
    return 2;
  }
  struct shared_total total = {PTHREAD_MUTEX_INITIALIZER, 0};
  struct slice slices[kMaxThreads];
  pthread_t ids[kMaxThreads];
  for (long t = 0; t < threads; ++t) {
    slices[t] = (struct slice){iterations * t / threads, iterations * (t + 1) / threads, &total};
    if (t > 0 && pthread_create(&ids[t], NULL, sum_slice, &slices[t]) != 0) {
      fprintf(stderr, "thread_work: pthread_create failed\n");
      return 1;
    }
  }
  sum_slice(&slices[0]);  /* the main thread does the first slice */
  for (long t = 1; t < threads; ++t)
    pthread_join(ids[t], NULL);
  printf("sum %016llx\n", (unsigned long long)total.sum);
  return 0;
}
