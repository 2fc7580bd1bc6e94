// Role: guest sample "tty_ioctls": the terminal and descriptor ioctls by the
// guest's request numbers (mips: TCGETS 0x540d, TIOCGWINSZ 0x40087468,
// FIONREAD 0x467f where x86-64 has 0x5401, 0x5413, 0x541b): terminal requests
// on a pipe and on /dev/null fail with ENOTTY, FIONREAD counts a pipe's bytes
// (a 32-bit int in the guest's byte order), FIONBIO makes a read fail with
// EAGAIN, FIOCLEX/FIONCLEX set and clear close-on-exec.
// Invariants: only facts independent of the runner's terminal are printed
// (stdin, stdout and stderr are not looked at).
// Directives (see samples/README.md):
// strace: yes
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

static void terminal_requests(const char* what, int fd) {
  struct termios attributes;
  struct winsize size;
  int group = 0;
  int result = ioctl(fd, TCGETS, &attributes);
  printf("%s TCGETS: %d %s\n", what, result, result ? strerror(errno) : "ok");
  result = ioctl(fd, TCSETS, &attributes);
  printf("%s TCSETS: %d %s\n", what, result, result ? strerror(errno) : "ok");
  result = ioctl(fd, TIOCGWINSZ, &size);
  printf("%s TIOCGWINSZ: %d %s\n", what, result, result ? strerror(errno) : "ok");
  result = ioctl(fd, TIOCGPGRP, &group);
  printf("%s TIOCGPGRP: %d %s\n", what, result, result ? strerror(errno) : "ok");
  printf("%s isatty: %d\n", what, isatty(fd));
}

int main(void) {
  int p[2];
  if (pipe(p) != 0) {
    printf("FAIL pipe: %s\n", strerror(errno));
    return 1;
  }
  terminal_requests("pipe", p[0]);
  int null = open("/dev/null", O_RDWR);
  terminal_requests("/dev/null", null);

  int count = -1;
  int result = ioctl(p[0], FIONREAD, &count);
  printf("FIONREAD empty pipe: %d, count %d\n", result, count);
  if (write(p[1], "hello", 5) != 5) printf("FAIL write\n");
  count = -1;
  result = ioctl(p[0], FIONREAD, &count);
  printf("FIONREAD after 5 bytes: %d, count %d\n", result, count);
  char buffer[8];
  printf("read: %d\n", (int)read(p[0], buffer, sizeof buffer));

  int on = 1;
  result = ioctl(p[0], FIONBIO, &on);
  printf("FIONBIO on: %d, O_NONBLOCK set: %s\n", result, (fcntl(p[0], F_GETFL) & O_NONBLOCK) ? "yes" : "no");
  result = (int)read(p[0], buffer, sizeof buffer);
  printf("read of the empty non-blocking pipe: %d %s\n", result, result < 0 ? strerror(errno) : "");
  int off = 0;
  result = ioctl(p[0], FIONBIO, &off);
  printf("FIONBIO off: %d, O_NONBLOCK set: %s\n", result, (fcntl(p[0], F_GETFL) & O_NONBLOCK) ? "yes" : "no");

  result = ioctl(p[1], FIOCLEX);
  printf("FIOCLEX: %d, close-on-exec: %s\n", result, (fcntl(p[1], F_GETFD) & FD_CLOEXEC) ? "yes" : "no");
  result = ioctl(p[1], FIONCLEX);
  printf("FIONCLEX: %d, close-on-exec: %s\n", result, (fcntl(p[1], F_GETFD) & FD_CLOEXEC) ? "yes" : "no");
  return 0;
}
