// Role: guest sample "hello": the smallest behaviour. One line to stdout, one
// line to stderr, then main returns 3.
// Invariants: output is fixed text; exit status is 3.
// Directives (see samples/README.md):
// exit: 3
// strace: yes
#include <stdio.h>

int main(void) {
  printf("hello from a tracecorn guest\n");
  fprintf(stderr, "hello on stderr\n");
  return 3;
}
