// Role: hostile guest sample "spin": an infinite loop that makes no syscall,
// for --max-insns and --timeout (both end it with exit status 124).
// Invariants: never returns on its own.
int main(void) {
  for (volatile unsigned long i = 0;; ++i) {
  }
}
