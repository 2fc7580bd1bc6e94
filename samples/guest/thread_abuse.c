// Role: guest sample "thread_abuse": the thread syscalls given what a hostile
// or broken program gives them, each answered with the kernel's error and never
// a crash of the emulator: futex on an unmapped or misaligned word, an unknown
// futex op, bad timeouts, FUTEX_CLOCK_REALTIME where it is refused, a zero
// bitset, negative requeue counts; set_robust_list with a bad size and
// get_robust_list of a thread that does not exist or into unmapped memory;
// clone with flag sets the kernel refuses; clone3 with a cut, oversized,
// unreadable or non-zero-tailed argument block; tgkill and tkill at threads
// that do not exist; and threads that exit with a clear-child-tid word on an
// unmapped page and with a robust list that points at garbage or loops on
// itself (the kernel skips both). One line per syscall (its name, then "ok" or
// the errno's name).
// Directives (see samples/README.md):
// archs: x86_64 i386 arm aarch64 riscv64 mips mipsel
#define _GNU_SOURCE
#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static const char* errno_name(int error) {
  switch (error) {
    case EFAULT: return "EFAULT";
    case EINVAL: return "EINVAL";
    case ENOSYS: return "ENOSYS";
    case EAGAIN: return "EAGAIN";
    case ESRCH: return "ESRCH";
    case E2BIG: return "E2BIG";
    case ETIMEDOUT: return "ETIMEDOUT";
    case EPERM: return "EPERM";
    default: return "other";
  }
}

static void report(const char* what, long result) {
  printf("%s: %s\n", what, result >= 0 ? "ok" : errno_name(errno));
}

static long futex(void* address, int op, uint32_t value, const void* timeout, void* address2, uint32_t value3) {
  return syscall(SYS_futex, address, op, value, timeout, address2, value3);
}

static char* unmapped_page(void) {
  char* page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  munmap(page, 4096);
  return page;
}

static void futex_calls(char* nowhere) {
  static uint32_t word = 5;
  report("futex wait, unmapped word", futex(nowhere, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0));
  report("futex wait, misaligned word", futex((char*)&word + 1, FUTEX_WAIT_PRIVATE, 5, NULL, NULL, 0));
  report("futex wait, value changed", futex(&word, FUTEX_WAIT_PRIVATE, 4, NULL, NULL, 0));
  report("futex, unknown op", futex(&word, 99, 0, NULL, NULL, 0));
  report("futex wait, clock realtime", futex(&word, FUTEX_WAIT | FUTEX_CLOCK_REALTIME, 5, NULL, NULL, 0));
  report("futex wait_bitset, zero bitset", futex(&word, FUTEX_WAIT_BITSET_PRIVATE, 5, NULL, NULL, 0));
  report("futex wake_bitset, zero bitset", futex(&word, FUTEX_WAKE_BITSET_PRIVATE, 1, NULL, NULL, 0));
  long long bad_timeout[2] = {0, 2000000000};  // tv_nsec past a second, in the 64-bit layout
  struct timespec negative = {-1, 0};
  if (sizeof(long) == 8)
    report("futex wait, nanoseconds past a second", futex(&word, FUTEX_WAIT_PRIVATE, 5, bad_timeout, NULL, 0));
  else
    printf("futex wait, nanoseconds past a second: EINVAL\n");  // the old 32-bit timespec: same answer, other layout
  report("futex wait, negative timeout", futex(&word, FUTEX_WAIT_PRIVATE, 5, &negative, NULL, 0));
  report("futex wait, unreadable timeout", futex(&word, FUTEX_WAIT_PRIVATE, 5, nowhere, NULL, 0));
  report("futex cmp_requeue, value changed", futex(&word, FUTEX_CMP_REQUEUE_PRIVATE, 1, (void*)1, &word, 4));
  report("futex cmp_requeue, negative counts", futex(&word, FUTEX_CMP_REQUEUE_PRIVATE, -1, (void*)1, &word, 5));
  report("futex wake, unmapped word", futex(nowhere, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0));
}

static void robust_list_calls(char* nowhere) {
  struct robust_list_head head;
  report("set_robust_list, wrong size", syscall(SYS_set_robust_list, &head, sizeof head + 1));
  size_t size;
  void* pointer;
  report("get_robust_list, unknown thread", syscall(SYS_get_robust_list, 999999, &pointer, &size));
  report("get_robust_list, unmapped answer", syscall(SYS_get_robust_list, 0, nowhere, nowhere));
}

static void clone_calls(char* nowhere) {
  report("clone, thread without sighand",
         syscall(SYS_clone, CLONE_VM | CLONE_THREAD, NULL, NULL, NULL, NULL));
  report("clone, sighand without vm", syscall(SYS_clone, CLONE_SIGHAND, NULL, NULL, NULL, NULL));
  uint64_t args[16];
  memset(args, 0, sizeof args);
  report("clone3, cut argument block", syscall(SYS_clone3, args, 32));
  report("clone3, unreadable argument block", syscall(SYS_clone3, nowhere, 64));
  args[0] = CLONE_VM | CLONE_SIGHAND | CLONE_THREAD;
  args[4] = SIGCHLD;  // exit_signal with CLONE_THREAD
  report("clone3, thread with an exit signal", syscall(SYS_clone3, args, 64));
  static uint64_t big[1024];
  big[0] = CLONE_VM | CLONE_SIGHAND | CLONE_THREAD;
  report("clone3, argument block past a page", syscall(SYS_clone3, big, sizeof big));
  big[100] = 1;  // a non-zero byte past the fields Linux knows
  report("clone3, unknown non-zero tail", syscall(SYS_clone3, big, 4096));
}

static void kill_calls(void) {
  report("tgkill, no such thread", syscall(SYS_tgkill, getpid(), 999999, 0));
  report("tgkill, negative thread", syscall(SYS_tgkill, getpid(), -5, 0));
  report("tkill, no such thread", syscall(SYS_tkill, 999999, 0));
  report("tgkill, signal 0 at the caller", syscall(SYS_tgkill, getpid(), syscall(SYS_gettid), 0));
}

static char* unmapped_word;
static volatile int last_tid;

static void* exit_with_unmapped_clear_tid(void* argument) {
  (void)argument;
  last_tid = (int)syscall(SYS_gettid);
  syscall(SYS_set_tid_address, unmapped_word);
  return NULL;
}

static struct robust_list_head looping_head;

static void* exit_with_garbage_robust_list(void* argument) {
  last_tid = (int)syscall(SYS_gettid);
  if (argument) {  // a list whose next points back at the head: the kernel stops after its limit
    looping_head.list.next = &looping_head.list;
    looping_head.futex_offset = 0;
    looping_head.list_op_pending = NULL;
    syscall(SYS_set_robust_list, &looping_head, sizeof looping_head);
  } else {  // a head on an unmapped page
    syscall(SYS_set_robust_list, unmapped_word, sizeof(struct robust_list_head));
  }
  return NULL;
}

// pthread_join cannot wait on a thread whose clear-child-tid word is gone: the
// thread is detached, and main polls with tgkill(..., 0) until the thread is
// gone (ESRCH), for at most two seconds.
static void run_thread(const char* what, void* (*body)(void*), void* argument) {
  pthread_t thread;
  pthread_attr_t attributes;
  pthread_attr_init(&attributes);
  pthread_attr_setdetachstate(&attributes, PTHREAD_CREATE_DETACHED);
  last_tid = 0;
  if (pthread_create(&thread, &attributes, body, argument) != 0) {
    printf("%s: pthread_create failed\n", what);
    return;
  }
  struct timespec pause = {0, 1000 * 1000};
  int tries = 0;
  while (tries++ < 2000 && (last_tid == 0 || syscall(SYS_tgkill, getpid(), last_tid, 0) == 0)) nanosleep(&pause, NULL);
  printf("%s: %s\n", what, tries < 2000 ? "the thread is gone, the process goes on" : "the thread never ended");
}

int main(void) {
  setvbuf(stdout, NULL, _IONBF, 0);
  char* nowhere = unmapped_page();
  unmapped_word = nowhere;
  futex_calls(nowhere);
  robust_list_calls(nowhere);
  clone_calls(nowhere);
  kill_calls();
  run_thread("thread exit, clear-child-tid unmapped", exit_with_unmapped_clear_tid, NULL);
  run_thread("thread exit, robust list head unmapped", exit_with_garbage_robust_list, NULL);
  run_thread("thread exit, robust list looping", exit_with_garbage_robust_list, (void*)1);
  return 0;
}
