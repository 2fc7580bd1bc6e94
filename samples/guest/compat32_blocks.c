// Role: guest sample "compat32_blocks": i386's two syscalls whose arguments
// sit in a block in guest memory, socketcall (102) and old mmap (90), handed
// blocks the kernel cannot use: a NULL or unmapped pointer, a block cut short
// by an unmapped page, call numbers socketcall does not have (0, 21, -1), an
// old mmap offset that is not page aligned; then one good old mmap, anonymous,
// and one of the program's own file (its ELF magic read back). Each must
// fail as natively (EFAULT, EINVAL: compared with qemu-i386-static; the same
// as the host kernel runs it natively), never crash the emulator. It has no
// strace directive, as qemu's -strace prints no socketcall line when it cannot
// read the block (tracecorn's --syscall-log does). The hostile-input test of
// recorder/linux/syscalls_compat32.cpp's argument blocks. Raw int $0x80, so
// that glibc checks nothing first.
// Invariants: prints only errno names, "ok", and no addresses.
// Directives (see samples/README.md):
// archs: i386
#define _GNU_SOURCE  // strerrorname_np
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#if defined(__i386__)
static long raw(long number, long a, long b) {
  long result;
  __asm__ volatile("int $0x80" : "=a"(result) : "0"(number), "b"(a), "c"(b) : "memory");
  return result;
}

static void report(const char* what, long result) {
  if (result < 0 && result > -4096) printf("%s: %s\n", what, strerrorname_np((int)-result));
  else printf("%s: ok\n", what);
  fflush(stdout);
}

enum { kSocketcall = 102, kOldMmap = 90, kSysSocket = 1, kSysSocketpair = 8 };

int main(int argc, char** argv) {
  (void)argc;
  // Two pages; the second unmapped, so that a block ending in it is cut short.
  char* pages = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (pages == MAP_FAILED) return 1;
  munmap(pages + 4096, 4096);
  char* page_end = pages + 4096;
  long* good = (long*)pages;  // a whole socketcall block (bad domain: never a real socket)
  good[0] = -1, good[1] = -1, good[2] = -1, good[3] = 0;

  report("socketcall(SOCKET, NULL)", raw(kSocketcall, kSysSocket, 0));
  report("socketcall(SOCKET, 0x10)", raw(kSocketcall, kSysSocket, 0x10));
  report("socketcall(SOCKET, 4 of 12 bytes mapped)", raw(kSocketcall, kSysSocket, (long)(page_end - 4)));
  report("socketcall(SOCKETPAIR, 12 of 16 bytes mapped)", raw(kSocketcall, kSysSocketpair, (long)(page_end - 12)));
  report("socketcall(0)", raw(kSocketcall, 0, (long)good));
  report("socketcall(21)", raw(kSocketcall, 21, (long)good));
  report("socketcall(-1)", raw(kSocketcall, -1, (long)good));

  long* block = (long*)(pages + 256);  // struct mmap_arg_struct
  report("old mmap(NULL)", raw(kOldMmap, 0, 0));
  report("old mmap(20 of 24 bytes mapped)", raw(kOldMmap, (long)(page_end - 20), 0));
  block[0] = 0, block[1] = 4096, block[2] = PROT_READ | PROT_WRITE, block[3] = MAP_PRIVATE | MAP_ANONYMOUS;
  block[4] = -1, block[5] = 1;
  report("old mmap(offset 1)", raw(kOldMmap, (long)block, 0));
  block[5] = 0;
  const long mapped = raw(kOldMmap, (long)block, 0);
  report("old mmap(anonymous page)", mapped);
  if (!(mapped < 0 && mapped > -4096)) {
    ((char*)mapped)[0] = 1;
    report("munmap(it)", raw(91, mapped, 4096));
  }
  const int fd = open(argv[0], O_RDONLY);
  if (fd < 0) return 1;
  block[0] = 0, block[1] = 4096, block[2] = PROT_READ, block[3] = MAP_PRIVATE, block[4] = fd, block[5] = 0;
  const long file = raw(kOldMmap, (long)block, 0);
  report("old mmap(its own file)", file);
  if (!(file < 0 && file > -4096)) {
    printf("its first bytes: %s\n", memcmp((const char*)file, "\177ELF", 4) == 0 ? "ELF magic" : "something else");
    report("munmap(it)", raw(91, file, 4096));
  }
  close(fd);
  return 0;
}
#else
int main(void) {
  puts("i386 only");
  return 0;
}
#endif
