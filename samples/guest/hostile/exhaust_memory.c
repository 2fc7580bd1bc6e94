// Role: hostile guest sample "exhaust_memory": grows its memory until the system
// says no, and reports how (report.h): `brk` grows the break 1 MiB at a time,
// `mmap` maps 1 MiB anonymous chunks,
// `mremap` grows one mapping 1 MiB at a time (MREMAP_MAYMOVE); all print the
// limit the guest sees (RLIMIT_AS), whether MiB were obtained and the errno of
// the failure, then, like a careless program, write through the failed result (SIGSEGV).
// Usage: exhaust_memory brk|mmap|mremap [MAX_MIB] (stops at MAX_MIB MiB without a failure).
// Invariants: prints no address; dies of SIGSEGV after a failure, exits 0 when
// MAX_MIB was reached first, 2 on a bad argument.
#include "report.h"

#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/resource.h>

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  const long max_mib = argc > 2 ? atol(argv[2]) : 1L << 30;
  struct rlimit limit;
  getrlimit(RLIMIT_AS, &limit);
  printf("rlimit_as_mib: %s\n", limit.rlim_cur == RLIM_INFINITY ? "unlimited" : "limited");
  char* failed = NULL;
  long mib = 0;
  void* grown = NULL;
  for (; mib < max_mib; ++mib) {
    void* got;
    if (strcmp(argv[1], "brk") == 0) {
      got = sbrk(1 << 20);
    } else if (strcmp(argv[1], "mremap") == 0) {
      got = grown ? mremap(grown, (size_t)mib << 20, (size_t)(mib + 1) << 20, MREMAP_MAYMOVE)
                  : mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (got != (void*)-1) {
        grown = got;
        got = (char*)got + ((size_t)mib << 20);  // the new MiB
      }
    } else {
      got = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    }
    if (got == (void*)-1) {
      failed = got;
      break;
    }
    ((volatile char*)got)[0] = 1;  // touch it, as a real program would
  }
  printf("%s_mib_before_failure: %s\n", argv[1], mib < max_mib ? "some" : "none (reached the maximum)");
  printf("%s_failure: %s\n", argv[1], mib < max_mib ? errno_name(errno) : "none");
  fflush(stdout);
  fprintf(stderr, "obtained %ld MiB\n", mib);
  if (failed) failed[0] = 1;  // ignore the failure: a clean SIGSEGV
  return 0;
}
