// Role: guest sample "event_loops": what event loops wait with, between
// a parent and its children. An eventfd's counter (initial value, adds, EFD_SEMAPHORE),
// epoll on a pipe a child writes to (the data word comes back, then EPOLLHUP
// once the child is gone), epoll_pwait timing out, a timerfd firing (its
// expiration count, gettime once disarmed), poll on a pipe, and a socketpair
// between parent and child (ping, pong).
// Invariants: deterministic output only (facts, never times or counts that
// depend on the host's speed).
// Directives (see samples/README.md):
// archs: x86_64 i386 arm aarch64 riscv64 mips mipsel
// exit: 0
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <unistd.h>

static void check(int ok, int code) {
  if (!ok) {
    perror("event_loops");
    exit(code);
  }
}

static void eventfd_counter(void) {
  const int fd = eventfd(2, EFD_CLOEXEC);
  check(fd >= 0, 10);
  uint64_t value = 3;
  check(write(fd, &value, sizeof value) == sizeof value, 11);
  check(read(fd, &value, sizeof value) == sizeof value, 12);
  printf("eventfd: 2 + 3 = %llu\n", (unsigned long long)value);
  close(fd);
  const int semaphore = eventfd(4, EFD_SEMAPHORE | EFD_NONBLOCK);
  check(semaphore >= 0, 13);
  check(read(semaphore, &value, sizeof value) == sizeof value, 14);
  printf("eventfd semaphore: read %llu\n", (unsigned long long)value);
  close(semaphore);
}

static void epoll_on_a_child(void) {
  int data[2];
  check(pipe(data) == 0, 20);
  const int epoll = epoll_create1(EPOLL_CLOEXEC);
  check(epoll >= 0, 21);
  struct epoll_event event = {.events = EPOLLIN, .data.u64 = 0x1122334455667788ull};
  check(epoll_ctl(epoll, EPOLL_CTL_ADD, data[0], &event) == 0, 22);
  struct epoll_event got[4];
  printf("epoll_pwait with nothing ready: %d\n", epoll_pwait(epoll, got, 4, 10, NULL));
  const pid_t child = fork();
  if (child == 0) {
    close(data[0]);
    check(write(data[1], "x", 1) == 1, 23);
    _exit(0);
  }
  close(data[1]);
  int ready = epoll_wait(epoll, got, 4, -1);
  printf("epoll_wait: %d ready, data word %s, EPOLLIN %s\n", ready,
         got[0].data.u64 == 0x1122334455667788ull ? "kept" : "changed", (got[0].events & EPOLLIN) ? "yes" : "no");
  char byte;
  check(read(data[0], &byte, 1) == 1, 24);
  waitpid(child, NULL, 0);
  ready = epoll_wait(epoll, got, 4, -1);
  printf("after the child: %d ready, EPOLLHUP %s\n", ready, (got[0].events & EPOLLHUP) ? "yes" : "no");
  check(epoll_ctl(epoll, EPOLL_CTL_DEL, data[0], NULL) == 0, 25);
  printf("epoll_wait once removed: %d\n", epoll_wait(epoll, got, 4, 0));
  close(epoll);
  close(data[0]);
}

static void timerfd_fires(void) {
  const int fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
  check(fd >= 0, 30);
  const struct itimerspec once = {.it_value = {0, 20 * 1000 * 1000}};
  check(timerfd_settime(fd, 0, &once, NULL) == 0, 31);
  struct pollfd ready = {.fd = fd, .events = POLLIN};
  check(poll(&ready, 1, -1) == 1, 32);
  uint64_t expirations = 0;
  check(read(fd, &expirations, sizeof expirations) == sizeof expirations, 33);
  printf("timerfd: fired %llu time(s)\n", (unsigned long long)expirations);
  struct itimerspec now;
  check(timerfd_gettime(fd, &now) == 0, 34);
  printf("timerfd disarmed: %s\n", now.it_value.tv_sec == 0 && now.it_value.tv_nsec == 0 ? "yes" : "no");
  close(fd);
}

static void socketpair_ping(void) {
  int pair[2];
  check(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) == 0, 40);
  const pid_t child = fork();
  if (child == 0) {
    char text[8] = {0};
    close(pair[0]);
    check(read(pair[1], text, 4) == 4, 41);
    check(write(pair[1], strcmp(text, "ping") == 0 ? "pong" : "what", 4) == 4, 42);
    _exit(0);
  }
  close(pair[1]);
  check(write(pair[0], "ping", 4) == 4, 43);
  struct pollfd ready = {.fd = pair[0], .events = POLLIN};
  check(poll(&ready, 1, -1) == 1, 44);
  char reply[8] = {0};
  check(read(pair[0], reply, 4) == 4, 45);
  printf("socketpair: ping, %s\n", reply);
  waitpid(child, NULL, 0);
  close(pair[0]);
}

int main(void) {
  setvbuf(stdout, NULL, _IONBF, 0);
  eventfd_counter();
  epoll_on_a_child();
  timerfd_fires();
  socketpair_ping();
  return 0;
}
