// Role: guest sample "illegal_instruction": executes ud2 (__builtin_trap), so
// the process dies of SIGILL (status 128+4 = 132).
// Invariants: the line before the trap is flushed explicitly.
// Directives (see samples/README.md):
// archs: x86_64 i386
// strace: yes
// exit: 132
#include <stdio.h>

int main(void) {
  printf("about to execute an undefined instruction\n");
  fflush(stdout);
  __builtin_trap();
}
