// Role: hostile guest sample "big_write": one write() of 200 MiB to stdout and
// one writev() of 2 x 100 MiB; reports on stderr how much each call took
// (tracecorn bounds one call at 64 MiB: a short write, which POSIX allows).
// Usage: big_write > /dev/null
// Invariants: the buffer is a fresh anonymous mapping (zero bytes); exit 0, or
// 1 when the mapping fails.
#include "report.h"

#include <sys/mman.h>
#include <sys/uio.h>

int main(void) {
  const size_t size = 200u << 20;
  char* buffer = mmap(NULL, size, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (buffer == MAP_FAILED) return 1;
  const ssize_t wrote = write(1, buffer, size);
  fprintf(stderr, "write: %s\n", wrote < 0 ? errno_name(errno) : wrote == (ssize_t)size ? "all" : wrote == 64 << 20 ? "64 MiB" : "other");
  struct iovec parts[2] = {{buffer, size / 2}, {buffer + size / 2, size / 2}};
  const ssize_t wrotev = writev(1, parts, 2);
  fprintf(stderr, "writev: %s\n", wrotev < 0 ? errno_name(errno) : wrotev == (ssize_t)size ? "all" : wrotev == 64 << 20 ? "64 MiB" : "other");
  return 0;
}
