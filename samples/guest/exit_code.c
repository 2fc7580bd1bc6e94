// Role: guest sample "exit_code": exit(42) runs the atexit handlers in reverse
// order of registration, flushes stdio, and the status reaches the parent.
// Invariants: exit status is 42; the handlers print in order "second, first".
// Directives (see samples/README.md):
// strace: yes
// exit: 42
#include <stdio.h>
#include <stdlib.h>

static void first_handler(void) { printf("atexit handler registered first runs last\n"); }
static void second_handler(void) { printf("atexit handler registered second runs first\n"); }

int main(void) {
  if (atexit(first_handler) != 0 || atexit(second_handler) != 0) return 1;
  printf("calling exit(42); this line stays buffered until exit flushes it\n");
  exit(42);
}
