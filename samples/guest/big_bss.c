// Role: guest sample "big_bss": a 64 MiB zero-initialised static array, which
// the loader must map as zero-filled memory beyond the file's bytes.
// Invariants: touches a few places (first byte, page boundaries, the middle,
// the last byte), checks they read zero before being written, prints sums.
// Directives (see samples/README.md):
// strace: yes
// (none)
#include <stddef.h>
#include <stdio.h>

#define BIG_SIZE (64u << 20)
static unsigned char big[BIG_SIZE];
static int small_initialised[4] = {1, 2, 3, 4};

int main(void) {
  static const size_t offsets[] = {0,          1,         4095,          4096,
                                   1u << 20,   BIG_SIZE / 2, BIG_SIZE - 4097, BIG_SIZE - 1};
  const size_t n = sizeof offsets / sizeof offsets[0];
  int nonzero = 0;
  for (size_t i = 0; i < n; i++) nonzero += big[offsets[i]] != 0;
  // One byte per MiB, so every 1 MiB stretch gets looked at without reading all of it.
  for (size_t off = 512; off < BIG_SIZE; off += 1u << 20) nonzero += big[off] != 0;
  printf("nonzero bytes before writing: %d\n", nonzero);

  for (size_t i = 0; i < n; i++) big[offsets[i]] = (unsigned char)(i * 17 + 3);
  unsigned sum = 0;
  for (size_t i = 0; i < n; i++) sum += big[offsets[i]];
  printf("sum after writing %zu bytes: %u\n", n, sum);
  printf("initialised data next to the bss: %d %d %d %d\n", small_initialised[0],
         small_initialised[1], small_initialised[2], small_initialised[3]);
  printf("bss size: %zu MiB\n", sizeof big >> 20);
  return 0;
}
