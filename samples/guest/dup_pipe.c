// Role: guest sample "dup_pipe": pipe2 flags, dup/dup2/F_DUPFD_CLOEXEC, fcntl
// descriptor and status flags, and data through a pipe, including an empty
// non-blocking read and a read after the writer closed.
// Invariants: prints flags as yes/no facts and descriptor numbers only where
// POSIX fixes them (lowest free number); exit status 0.
// Directives (see samples/README.md):
// strace: yes
// (none)
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static const char* yes_no(int fact) { return fact ? "yes" : "no"; }

int main(void) {
  int p[2];
  if (pipe2(p, O_CLOEXEC) != 0) {
    printf("FAIL pipe2: errno %d\n", errno);
    return 1;
  }
  printf("pipe2 gave the lowest free descriptors: %d %d\n", p[0], p[1]);
  printf("read end close-on-exec: %s\n", yes_no(fcntl(p[0], F_GETFD) & FD_CLOEXEC));
  printf("write end write-only: %s\n", yes_no((fcntl(p[1], F_GETFL) & O_ACCMODE) == O_WRONLY));

  int d = dup(p[1]);
  printf("dup gave the next free descriptor: %d, close-on-exec cleared: %s\n", d,
         yes_no(!(fcntl(d, F_GETFD) & FD_CLOEXEC)));
  int target = 10;
  printf("dup2 onto 10 returned: %d\n", dup2(p[1], target));
  int high = fcntl(p[0], F_DUPFD_CLOEXEC, 20);
  printf("F_DUPFD_CLOEXEC from 20 returned: %d, close-on-exec: %s\n", high,
         yes_no(fcntl(high, F_GETFD) & FD_CLOEXEC));
  printf("dup2 of a bad descriptor fails with EBADF: %s\n", yes_no(dup2(99, 98) < 0 && errno == EBADF));

  const char msg[] = "through the pipe via a dup2 copy";
  printf("write via fd 10 returned: %zd\n", write(target, msg, sizeof msg - 1));
  char buf[128] = {0};
  ssize_t got = read(p[0], buf, sizeof buf);
  printf("read returned %zd: [%s]\n", got, buf);

  fcntl(p[0], F_SETFL, fcntl(p[0], F_GETFL) | O_NONBLOCK);
  printf("O_NONBLOCK set: %s\n", yes_no(fcntl(p[0], F_GETFL) & O_NONBLOCK));
  printf("empty non-blocking read fails with EAGAIN: %s\n", yes_no(read(p[0], buf, sizeof buf) < 0 && errno == EAGAIN));

  close(p[1]);
  close(d);
  printf("read end still sees no EOF while fd 10 is open: %s\n", yes_no(read(p[0], buf, 1) < 0 && errno == EAGAIN));
  close(target);
  printf("read after every writer closed returns: %zd\n", read(p[0], buf, sizeof buf));
  close(p[0]);
  close(high);
  printf("fcntl on a closed descriptor fails with EBADF: %s\n", yes_no(fcntl(p[0], F_GETFD) < 0 && errno == EBADF));
  return 0;
}
