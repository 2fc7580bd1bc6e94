// Role: guest sample "bad_pointers": syscalls handed pointers the kernel cannot
// use (unmapped, NULL, a path with no terminating NUL before unmapped memory)
// must fail with EFAULT (or ENAMETOOLONG / EINVAL) as natively, never crash the
// emulator. The hostile-input test of the syscall layer, checked against native.
// Invariants: prints only return values and errno names.
// Directives (see samples/README.md):
// strace: yes
#define _GNU_SOURCE  // strerrorname_np
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

// 32-bit ABIs name the same calls with their 64-bit structs (arm: struct
// stat64, 64-bit timespec).
#if !defined(SYS_newfstatat) && defined(SYS_fstatat64)
#define SYS_newfstatat SYS_fstatat64
#endif
#ifdef SYS_fstat64
#undef SYS_fstat
#define SYS_fstat SYS_fstat64
#endif
#ifdef SYS_clock_gettime64
#undef SYS_clock_gettime
#define SYS_clock_gettime SYS_clock_gettime64
#endif

static void report(const char* what, long result) {
  const char* name = result < 0 ? strerrorname_np(errno) : "";
  printf("%-28s = %ld%s%s\n", what, result, result < 0 ? " " : "", name ? name : "?");
}

int main(void) {
  void* const unmapped = (void*)0x10;
  report("write(1, unmapped, 8)", syscall(SYS_write, 1, unmapped, 8));
  report("read(0, unmapped, 8)", syscall(SYS_read, 0, unmapped, 8));
  report("openat(unmapped path)", syscall(SYS_openat, AT_FDCWD, unmapped, O_RDONLY));
  report("newfstatat(NULL path)", syscall(SYS_newfstatat, AT_FDCWD, NULL, unmapped, 0));
  report("fstat(1, unmapped)", syscall(SYS_fstat, 1, unmapped));
  report("writev(1, unmapped iov, 1)", syscall(SYS_writev, 1, unmapped, 1));
  report("getcwd(unmapped, 100)", syscall(SYS_getcwd, unmapped, 100));
  report("uname(unmapped)", syscall(SYS_uname, unmapped));
  report("clock_gettime(0, unmapped)", syscall(SYS_clock_gettime, 0, unmapped));
  report("pipe2(unmapped, 0)", syscall(SYS_pipe2, unmapped, 0));
  report("munmap(unaligned)", syscall(SYS_munmap, 0x1001, 4096));
  // A page that was mapped and is not any more (0x10000 holds riscv64's program text).
  char* gone = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  munmap(gone, 4096);
  report("mprotect(unmapped range)", syscall(SYS_mprotect, gone, 4096, PROT_READ));
  report("close(9999)", syscall(SYS_close, 9999));

  // A path that runs into an unmapped page without a NUL.
  char* page = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  munmap(page + 4096, 4096);
  memset(page, 'a', 4096);
  report("openat(path without NUL)", syscall(SYS_openat, AT_FDCWD, page, O_RDONLY));
  // A path longer than PATH_MAX.
  char* long_path = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  memset(long_path, 'b', 8191);
  long_path[8191] = 0;
  report("openat(8191-byte path)", syscall(SYS_openat, AT_FDCWD, long_path, O_RDONLY));
  printf("still running\n");
  return 0;
}
