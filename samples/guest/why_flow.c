// Role: guest sample "why_flow": a data flow known by construction, for
// `tracecorn why`: writes 12 known bytes to input.bin, opens it again, seeks
// past its 4-byte header and reads the 8 bytes after it, copies them into a
// struct (two bytes, a 16-bit and a 32-bit field), sums the fields, writes
// the 4-byte sum to sum.bin, and prints the sum. Every byte of the sum comes
// from input.bin's offsets 4 to 11, through loads, adds and stores.
// Invariants: deterministic output; the files lie in the run's own directory,
// or in the directory its first argument names (tests: a scratch directory).
// Directives (see samples/README.md):
// strace: yes
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

struct record {
  uint8_t a, b;
  uint16_t c;
  uint32_t d;
};

// The sum of the fields (not inlined: it reads the struct from memory).
__attribute__((noinline)) static uint32_t sum_fields(const struct record* r) { return r->a + r->b + r->c + r->d; }

static int write_file(const char* path, const void* bytes, size_t size) {
  const int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (fd < 0 || write(fd, bytes, size) != (ssize_t)size) return -1;
  return close(fd);
}

int main(int argc, char** argv) {
  if (argc > 1 && chdir(argv[1]) != 0) return 4;
  static const uint8_t contents[12] = {'H', 'D', 'R', '1', 3, 5, 0x10, 0x02, 0x20, 0x00, 0x01, 0x00};
  if (write_file("input.bin", contents, sizeof contents) != 0) return 1;
  const int fd = open("input.bin", O_RDONLY);
  uint8_t buffer[8];
  if (fd < 0 || lseek(fd, 4, SEEK_SET) != 4 || read(fd, buffer, sizeof buffer) != (ssize_t)sizeof buffer) return 2;
  close(fd);
  struct record r;
  memcpy(&r, buffer, sizeof r);
  const uint32_t sum = sum_fields(&r);
  if (write_file("sum.bin", &sum, sizeof sum) != 0) return 3;
  printf("sum %u\n", (unsigned)sum);
  return 0;
}
