// Role: guest sample "mmap_file": mmap of a file (read-only, private, at an
// offset), munmap, mprotect on an anonymous mapping, and mremap growing a
// mapping (possibly moving it) and shrinking it; the file lives in the fresh
// directory given as argv[1].
// Invariants: prints checksums and yes/no facts, never addresses; removes its
// file; exit status 0, or 1 with a "FAIL" line.
// Directives (see samples/README.md):
// strace: yes
// args: {tmp}
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static const char* yes_no(int fact) { return fact ? "yes" : "no"; }

static uint32_t sum_bytes(const unsigned char* p, size_t n) {
  uint32_t s = 0;
  for (size_t i = 0; i < n; i++) s = s * 31 + p[i];
  return s;
}

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: mmap_file DIR\n");
    return 2;
  }
  const size_t page = (size_t)sysconf(_SC_PAGESIZE);
  const size_t file_size = 3 * page + 100;  // the last page is partial
  char path[4096];
  snprintf(path, sizeof path, "%s/mapped.bin", argv[1]);
  int fd = open(path, O_CREAT | O_RDWR | O_TRUNC, 0644);
  if (fd < 0) {
    printf("FAIL open: errno %d\n", errno);
    return 1;
  }
  unsigned char chunk[256];
  for (size_t off = 0; off < file_size; off += sizeof chunk) {
    size_t n = file_size - off < sizeof chunk ? file_size - off : sizeof chunk;
    for (size_t i = 0; i < n; i++) chunk[i] = (unsigned char)((off + i) * 7 + (off + i) / 4096);
    if (write(fd, chunk, n) != (ssize_t)n) {
      printf("FAIL write\n");
      return 1;
    }
  }

  unsigned char* whole = mmap(NULL, file_size, PROT_READ, MAP_PRIVATE, fd, 0);
  if (whole == MAP_FAILED) {
    printf("FAIL mmap: errno %d\n", errno);
    return 1;
  }
  printf("page aligned: %s\n", yes_no(((uintptr_t)whole & (page - 1)) == 0));
  printf("file checksum via mmap: %08x\n", sum_bytes(whole, file_size));
  printf("bytes past EOF in the last page are zero: %s\n",
         yes_no(whole[file_size] == 0 && whole[4 * page - 1] == 0));
  unsigned char* second = mmap(NULL, page, PROT_READ, MAP_PRIVATE, fd, (off_t)(2 * page));
  printf("mapping at offset 2 pages matches: %s\n",
         yes_no(second != MAP_FAILED && memcmp(second, whole + 2 * page, page) == 0));
  printf("unaligned offset fails with EINVAL: %s\n",
         yes_no(mmap(NULL, page, PROT_READ, MAP_PRIVATE, fd, 100) == MAP_FAILED && errno == EINVAL));
  printf("munmap: %d %d\n", munmap(whole, file_size), munmap(second, page));
  close(fd);
  printf("unlink: %d\n", unlink(path));

  unsigned char* anon = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (anon == MAP_FAILED) {
    printf("FAIL anonymous mmap: errno %d\n", errno);
    return 1;
  }
  printf("anonymous memory starts zeroed: %s\n", yes_no(anon[0] == 0 && anon[2 * page - 1] == 0));
  memset(anon, 0x5A, 2 * page);
  int ro = mprotect(anon, 2 * page, PROT_READ);
  printf("mprotect read-only: %d, still readable: %s\n", ro, yes_no(anon[page] == 0x5A));
  printf("mprotect read-write again: %d\n", mprotect(anon, 2 * page, PROT_READ | PROT_WRITE));
  anon[1] = 0x11;

  unsigned char* grown = mremap(anon, 2 * page, 64 * page, MREMAP_MAYMOVE);
  if (grown == MAP_FAILED) {
    printf("FAIL mremap grow: errno %d\n", errno);
    return 1;
  }
  printf("mremap grow kept contents: %s\n", yes_no(grown[0] == 0x5A && grown[1] == 0x11 && grown[2 * page - 1] == 0x5A));
  printf("grown part is zero: %s\n", yes_no(grown[2 * page] == 0 && grown[64 * page - 1] == 0));
  memset(grown + 2 * page, 0x33, 62 * page);
  unsigned char* shrunk = mremap(grown, 64 * page, page, 0);
  printf("mremap shrink in place: %s\n", yes_no(shrunk == grown));
  printf("shrunk keeps its first page: %s\n", yes_no(shrunk[0] == 0x5A && shrunk[1] == 0x11));
  printf("munmap: %d\n", munmap(shrunk, page));
  return 0;
}
