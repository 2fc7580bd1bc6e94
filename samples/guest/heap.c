// Role: guest sample "heap": the allocator's paths: brk-backed small blocks,
// mmap-backed blocks above the 128 KiB threshold, realloc growing and
// shrinking across that threshold, calloc zeroing, and frees in mixed order.
// Invariants: sizes come from a fixed LCG, so the work and the printed
// checksums are the same on every run; addresses are never printed.
// Directives (see samples/README.md):
// strace: yes
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint32_t lcg_state = 12345;
static uint32_t next_random(void) {
  lcg_state = lcg_state * 1103515245u + 12345u;
  return lcg_state >> 8;
}

static void fill(unsigned char* p, size_t n, unsigned seed) {
  for (size_t i = 0; i < n; i++) p[i] = (unsigned char)(seed + i * 31);
}

static int check(const unsigned char* p, size_t n, unsigned seed) {
  for (size_t i = 0; i < n; i++)
    if (p[i] != (unsigned char)(seed + i * 31)) return 0;
  return 1;
}

static uint64_t checksum(const unsigned char* p, size_t n, uint64_t h) {
  for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

enum { kBlocks = 80 };

int main(void) {
  static const size_t fixed_sizes[] = {1, 7, 16, 24, 100, 1000, 4096, 65536, 131072,
                                       131073, 200000};
  const size_t n_fixed = sizeof fixed_sizes / sizeof fixed_sizes[0];
  unsigned char* blocks[kBlocks];
  size_t sizes[kBlocks];
  uint64_t h = 14695981039346656037ull;
  int bad = 0;

  for (int i = 0; i < kBlocks; i++) {
    sizes[i] = i < (int)n_fixed ? fixed_sizes[i] : 1 + next_random() % (i % 10 == 0 ? 150000 : 2000);
    blocks[i] = malloc(sizes[i]);
    if (!blocks[i]) {
      printf("FAIL malloc(%zu)\n", sizes[i]);
      return 1;
    }
    fill(blocks[i], sizes[i], (unsigned)i);
  }
  for (int i = 0; i < kBlocks; i++) {
    bad += !check(blocks[i], sizes[i], (unsigned)i);
    h = checksum(blocks[i], sizes[i], h);
  }
  printf("malloc: %d blocks, corrupted %d, checksum %016llx\n", kBlocks, bad, (unsigned long long)h);

  // Free every third block, then grow or shrink the rest with realloc.
  for (int i = 0; i < kBlocks; i += 3) {
    free(blocks[i]);
    blocks[i] = NULL;
  }
  bad = 0;
  for (int i = 0; i < kBlocks; i++) {
    if (!blocks[i]) continue;
    size_t old = sizes[i];
    size_t grown = i % 2 ? old + (i % 10 == 1 ? 140000 : 3000) : old / 2 + 1;  // a few cross 128 KiB
    unsigned char* p = realloc(blocks[i], grown);
    if (!p) {
      printf("FAIL realloc(%zu)\n", grown);
      return 1;
    }
    bad += !check(p, old < grown ? old : grown, (unsigned)i);
    blocks[i] = p;
    sizes[i] = grown;
    fill(p, grown, (unsigned)i + 7);
  }
  h = 14695981039346656037ull;
  for (int i = 0; i < kBlocks; i++)
    if (blocks[i]) h = checksum(blocks[i], sizes[i], h);
  printf("realloc: contents preserved: %s, checksum %016llx\n", bad ? "no" : "yes", (unsigned long long)h);

  // calloc must hand back zeroed memory, also when reusing freed chunks.
  int nonzero = 0;
  for (int i = 0; i < 20; i++) {
    size_t n = (size_t)(i * 977 % 140000) + 1;
    unsigned char* p = calloc(n, 1);
    if (!p) {
      printf("FAIL calloc(%zu)\n", n);
      return 1;
    }
    for (size_t j = 0; j < n; j++) nonzero += p[j] != 0;
    memset(p, 0xAB, n);
    free(p);
  }
  printf("calloc: nonzero bytes seen: %d\n", nonzero);

  for (int i = kBlocks - 1; i >= 0; i--) free(blocks[i]);
  printf("freed everything\n");
  return 0;
}
