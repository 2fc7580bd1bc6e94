// Role: guest sample "divide_by_zero": an integer division by zero, so the
// process dies of SIGFPE (status 128+8 = 136): x86's divide error, and on
// mips the `teq $divisor,$zero,7` gcc emits, which Linux turns into SIGFPE
// (code 7, BRK_DIVZERO). Not on aarch64, arm and riscv64: their division by
// zero gives 0 and no trap.
// Invariants: the divisor comes through a volatile, so the compiler cannot
// fold or drop the division; the line before it is flushed explicitly.
// Directives (see samples/README.md):
// archs: x86_64 i386 mips mipsel
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
