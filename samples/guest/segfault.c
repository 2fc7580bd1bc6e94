// Role: guest sample "segfault": a deliberate write through a null pointer, so
// the process dies of SIGSEGV (status 128+11 = 139 as a shell reports it).
// Invariants: the line before the crash is flushed explicitly, so it reaches
// stdout even though stdio buffers are lost when the process dies.
// Directives (see samples/README.md):
// strace: yes
// exit: 139
#include <stdio.h>

int main(void) {
  printf("about to write through a null pointer\n");
  fflush(stdout);
  // Both volatile: the compiler can neither see the pointer is null nor drop the store.
  volatile int* volatile target = NULL;
  *target = 42;
  printf("still alive after the write\n");
  return 0;
}
