// Role: guest sample "unknown_syscall": a syscall number no kernel has answers
// ENOSYS (natively, and from tracecorn, which also names it once on stderr),
// and the program goes on.
// Invariants: prints only the return values and errno names.
// Directives (see samples/README.md):
// strace: yes
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(void) {
  for (int attempt = 0; attempt < 3; ++attempt) {
    errno = 0;
    const long result = syscall(1000);
    printf("syscall(1000) = %ld, errno %s\n", result, errno == ENOSYS ? "ENOSYS" : strerror(errno));
  }
  printf("still running\n");
  return 0;
}
