// Role: guest sample "divide_by_zero": an integer division by zero, so the
// process dies of SIGFPE (status 128+8 = 136).
// Invariants: the divisor comes through a volatile, so the compiler cannot
// fold or drop the division; the line before it is flushed explicitly.
// Directives (see samples/README.md):
// archs: x86_64 i386
// strace: yes
// exit: 136
#include <stdio.h>

int main(int argc, char** argv) {
  (void)argv;
  volatile int divisor = argc - 1;  // 0: the sample runs without arguments
  printf("about to divide by zero\n");
  fflush(stdout);
  volatile int quotient = 100 / divisor;
  printf("quotient %d\n", quotient);
  return 0;
}
