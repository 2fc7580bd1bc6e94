// Role: guest sample "abort": abort() raises SIGABRT, so the process dies of
// it (status 128+6 = 134 as a shell reports it).
// Invariants: output before the abort is flushed explicitly (abort does not
// flush stdio in glibc >= 2.27).
// Directives (see samples/README.md):
// strace: yes
// exit: 134
#include <stdio.h>
#include <stdlib.h>

int main(void) {
  printf("calling abort\n");
  fprintf(stderr, "stderr before abort\n");
  fflush(stdout);
  abort();
}
