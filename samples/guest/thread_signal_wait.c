// Role: guest sample "thread_signal_wait": signals from another process
// reaching a threaded process whose every thread waits: a worker in pause()
// while the main thread joins it (the handler runs, pause returns EINTR),
// then a thread in sigwait() for SIGTERM while the main thread joins it (the
// shutdown thread of daemons). The signals come from a child process, each
// once the waiting thread has said it is ready (and 100 ms later, so that it
// is in its wait).
// Invariants: deterministic output only.
// Directives (see samples/README.md):
// archs: x86_64 i386 arm aarch64 riscv64 mips mipsel
// exit: 0
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile sig_atomic_t handled = 0;
static int ready_pipe[2];

static void on_usr1(int signal) { handled = signal; }

static void check(int ok, const char* what) {
  if (!ok) {
    perror(what);
    exit(1);
  }
}

static void say_ready(void) { check(write(ready_pipe[1], "r", 1) == 1, "write"); }

// Waits in pause() with SIGUSR1 unblocked (the main thread blocks it).
static void* pausing_worker(void* unused) {
  (void)unused;
  sigset_t usr1;
  sigemptyset(&usr1);
  sigaddset(&usr1, SIGUSR1);
  check(pthread_sigmask(SIG_UNBLOCK, &usr1, NULL) == 0, "pthread_sigmask");
  say_ready();
  const int result = pause();
  printf("worker: pause returned %d, %s; the handler ran: %s\n", result, strerrorname_np(errno),
         handled == SIGUSR1 ? "yes" : "no");
  return NULL;
}

// Waits in sigwait() for SIGTERM, which every thread blocks.
static void* shutdown_thread(void* unused) {
  (void)unused;
  sigset_t term;
  sigemptyset(&term);
  sigaddset(&term, SIGTERM);
  say_ready();
  int signal = 0;
  const int error = sigwait(&term, &signal);
  printf("shutdown thread: sigwait gave %s (error %d)\n", signal == SIGTERM ? "SIGTERM" : "another signal", error);
  return NULL;
}

// A child that sends `signal` to its parent each time a thread says it is ready.
static pid_t start_sender(int first, int second) {
  const pid_t parent = getpid();
  fflush(stdout);
  const pid_t child = fork();
  check(child >= 0, "fork");
  if (child != 0) return child;
  close(ready_pipe[1]);
  for (int signal_index = 0; signal_index < 2; ++signal_index) {
    char byte;
    if (read(ready_pipe[0], &byte, 1) != 1) _exit(2);
    usleep(100000);
    if (kill(parent, signal_index == 0 ? first : second) != 0) _exit(3);
  }
  _exit(0);
}

int main(void) {
  struct sigaction action;
  memset(&action, 0, sizeof action);
  action.sa_handler = on_usr1;  // no SA_RESTART: pause returns EINTR either way
  check(sigaction(SIGUSR1, &action, NULL) == 0, "sigaction");
  sigset_t both;
  sigemptyset(&both);
  sigaddset(&both, SIGUSR1);
  sigaddset(&both, SIGTERM);
  check(sigprocmask(SIG_BLOCK, &both, NULL) == 0, "sigprocmask");  // threads inherit it
  check(pipe(ready_pipe) == 0, "pipe");
  const pid_t sender = start_sender(SIGUSR1, SIGTERM);

  pthread_t thread;
  check(pthread_create(&thread, NULL, pausing_worker, NULL) == 0, "pthread_create");
  check(pthread_join(thread, NULL) == 0, "pthread_join");
  printf("main: joined the pausing worker\n");
  check(pthread_create(&thread, NULL, shutdown_thread, NULL) == 0, "pthread_create");
  check(pthread_join(thread, NULL) == 0, "pthread_join");
  printf("main: joined the shutdown thread\n");

  int status = 0;
  check(waitpid(sender, &status, 0) == sender, "waitpid");
  printf("sender: exit status %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  return 0;
}
