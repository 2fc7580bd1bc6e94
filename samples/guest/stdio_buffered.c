// Role: guest sample "stdio_buffered": stdout through a full stdio buffer for
// well over 64 KiB (more than one pipe buffer), then a summary of stdin.
// Invariants: output is a fixed function of the line number; the stdin
// summary (bytes, lines, FNV-1a hash) is printed last, after all stdin is read.
// Directives (see samples/README.md):
// strace: yes
// stdin: the quick brown fox jumps over the lazy dog\n
// stdin-repeat: 2000
#include <stdint.h>
#include <stdio.h>

int main(void) {
  size_t written = 0;
  for (int i = 0; i < 3000; i++) {
    int n = printf("line %04d: %08x %s\n", i, (unsigned)i * 2654435761u,
                   i % 7 == 0 ? "seven divides this line number" : "plain");
    if (n > 0) written += (size_t)n;
  }
  printf("bytes written before this line: %zu\n", written);

  unsigned char buf[4096];
  size_t total = 0, lines = 0, got;
  uint64_t h = 14695981039346656037ull;
  while ((got = fread(buf, 1, sizeof buf, stdin)) > 0) {
    for (size_t i = 0; i < got; i++) {
      h = (h ^ buf[i]) * 1099511628211ull;
      lines += buf[i] == '\n';
    }
    total += got;
  }
  printf("stdin: %zu bytes, %zu lines, fnv1a %016llx, error %s\n", total, lines,
         (unsigned long long)h, ferror(stdin) ? "yes" : "no");
  return 0;
}
