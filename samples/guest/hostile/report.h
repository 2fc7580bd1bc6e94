// Role: the one-line reports the hostile guest samples (samples/guest/hostile/*.c)
// print: "<attempt>: <what it got>", where what it got is the file's first line
// ("read 'inside'"), "ok", a number, or the errno's name ("ENOENT"). The tests
// (tests/recorder/linux/check_containment.cmake) compare these lines with a
// native run in a chroot and look for canary text in them.
// Invariants: header-only, plain C; every report is flushed at once, so the
// lines survive a guest that then dies.
#pragma once
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static inline const char* errno_name(int error) {
  const char* name = strerrorname_np(error);
  return name ? name : "E?";
}

// Reports a syscall's result: "ok" (or the value when `show_value`), or its errno.
static inline void report_result(const char* what, long result, int show_value) {
  if (result < 0) printf("%s: %s\n", what, errno_name(errno));
  else if (show_value) printf("%s: %ld\n", what, result);
  else printf("%s: ok\n", what);
  fflush(stdout);
}

// Reports an open's result: the first line of what it reads, or the errno; closes it.
static inline void report_open(const char* what, int fd) {
  if (fd < 0) {
    report_result(what, -1, 0);
    return;
  }
  char buffer[80] = {0};
  const ssize_t got = read(fd, buffer, sizeof buffer - 1);
  close(fd);
  if (got < 0) {
    printf("%s: opened, read %s\n", what, errno_name(errno));
  } else {
    buffer[strcspn(buffer, "\n")] = '\0';
    printf("%s: read '%s'\n", what, buffer);
  }
  fflush(stdout);
}
