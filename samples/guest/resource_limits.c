// Role: guest sample "resource_limits": getrlimit of the limits that are the
// same for every run (stack, open files, file size, core size, data), each
// printed as "infinity" when it equals the guest's RLIM_INFINITY (mips o32:
// 0x7fffffff, where the 64-bit ABIs have ~0), and resource numbers the
// guest's way (mips numbers RLIMIT_NOFILE 5, the host 7); then a limit
// lowered with setrlimit/prlimit and read back.
// Invariants: RLIMIT_AS is left out (tracecorn gives its --max-memory there);
// values are the runner's limits, the same for the native and emulated runs.
// Directives (see samples/README.md):
// strace: yes
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>

static void print_value(const char* what, rlim_t value) {
  if (value == RLIM_INFINITY) printf(" %s infinity", what);
  else printf(" %s %llu", what, (unsigned long long)value);
}

static void show(const char* name, int resource) {
  struct rlimit limit;
  if (getrlimit(resource, &limit) != 0) {
    printf("%s: FAIL %s\n", name, strerror(errno));
    return;
  }
  printf("%s:", name);
  print_value("soft", limit.rlim_cur);
  print_value("hard", limit.rlim_max);
  printf("\n");
}

int main(void) {
  show("RLIMIT_STACK", RLIMIT_STACK);
  show("RLIMIT_NOFILE", RLIMIT_NOFILE);
  show("RLIMIT_FSIZE", RLIMIT_FSIZE);
  show("RLIMIT_CORE", RLIMIT_CORE);
  show("RLIMIT_DATA", RLIMIT_DATA);
  struct rlimit64 files;
  struct rlimit words;
  if (prlimit64(0, RLIMIT_NOFILE, NULL, &files) != 0 || getrlimit(RLIMIT_NOFILE, &words) != 0)
    printf("prlimit64 read: FAIL %s\n", strerror(errno));
  else
    printf("prlimit64 RLIMIT_NOFILE soft equals getrlimit's: %s\n", files.rlim_cur == words.rlim_cur ? "yes" : "no");
  struct rlimit64 lower = {files.rlim_cur > 64 ? 64 : files.rlim_cur, files.rlim_max};
  printf("prlimit64 lowers RLIMIT_NOFILE: %d\n", prlimit64(0, RLIMIT_NOFILE, &lower, NULL));
  show("RLIMIT_NOFILE", RLIMIT_NOFILE);
  const int result = getrlimit(4096, &words);
  printf("getrlimit of resource 4096: %d %s\n", result, strerror(errno));
  return 0;
}
