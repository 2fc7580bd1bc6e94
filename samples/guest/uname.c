// Role: guest sample "uname": the uname system call.
// Invariants: prints only sysname and machine (the release, version and node
// name legitimately differ between hosts and emulators), plus facts about the
// others.
// Directives (see samples/README.md):
// strace: yes
// (none)
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>

int main(void) {
  struct utsname u;
  if (uname(&u) != 0) {
    printf("FAIL uname\n");
    return 1;
  }
  printf("sysname: %s\n", u.sysname);
  printf("machine: %s\n", u.machine);
  printf("release nonempty: %s\n", u.release[0] ? "yes" : "no");
  printf("version nonempty: %s\n", u.version[0] ? "yes" : "no");
  printf("nodename terminated: %s\n", memchr(u.nodename, 0, sizeof u.nodename) ? "yes" : "no");
  return 0;
}
