// Role: nested calls down to syscalls, for the unwinder: its stacks at every
// syscall are compared with gdb's backtraces of the same binary run natively
// (tests/recorder/unwind). Syscalls are made from several depths: direct
// write() calls three and twelve frames deep (a recursion), through a function
// pointer, from inside stdio (printf + fflush), from fopen/fclose (of the program itself), and a
// getpid() through syscall(). Functions are noinline and use their callees'
// results, so every frame stays on the stack (no tail calls).
// Invariant: the output is the same natively and emulated.
// strace: yes
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

static volatile int sink;

NOINLINE static int say(const char* text) {
  char buffer[64];
  const size_t length = strlen(text);
  memcpy(buffer, text, length);
  const int written = (int)write(1, buffer, length);
  sink = buffer[0];
  return written + 1;
}

NOINLINE static int level3(const char* text) { return say(text) * 3; }
NOINLINE static int level2(const char* text) { return level3(text) + 2; }
NOINLINE static int level1(const char* text) { return level2(text) - 1; }

NOINLINE static int recurse(int depth) {
  if (depth == 0) return say("deep\n");
  volatile char pad[16 * 3];  // frames of different sizes
  pad[depth % 16] = (char)depth;
  return recurse(depth - 1) + pad[depth % 16];
}

NOINLINE static int via_pointer(int (*function)(const char*)) { return function("pointer\n") + 7; }

NOINLINE static long ask_pid(void) { return syscall(SYS_getpid) > 0 ? 1 : 0; }

int main(int argc, char** argv) {
  (void)argc;
  int total = level1("nested\n");
  total += recurse(9);
  total += via_pointer(level3);
  printf("stdio %d\n", total > 0);
  fflush(stdout);
  FILE* self = fopen(argv[0], "rb");
  if (self) fclose(self);
  total += (int)ask_pid();
  printf("done %d\n", total > 0);
  return 0;
}
