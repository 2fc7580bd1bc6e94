// Role: guest sample "argv_env_auxv": what the loader hands a new process:
// argc/argv, the environment, and the stable auxiliary vector entries.
// Invariants: prints argv[0] as a basename (callers may spell the path
// differently), the environment sorted, and of the auxv only values that do
// not depend on the CPU, on ASLR or on the time; pointers are printed as
// facts ("nonzero", "is _start"), never as numbers.
// Directives (see samples/README.md):
// strace: yes
// args: alpha "beta gamma" '' --delta=1
// env: SAMPLE_GREETING=hello world
// env: SAMPLE_EMPTY=
#include <elf.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>

extern char** environ;
// The ELF entry point: glibc's crt1.o names it __start on mips, _start elsewhere.
#if defined(__mips__)
extern void __start(void);
#define ENTRY_POINT __start
#else
extern void _start(void);
#define ENTRY_POINT _start
#endif

static const char* base_name(const char* path) {
  const char* slash = strrchr(path, '/');
  return slash ? slash + 1 : path;
}

static int cmp_strings(const void* a, const void* b) {
  return strcmp(*(char* const*)a, *(char* const*)b);
}

static const char* yes_no(int fact) { return fact ? "yes" : "no"; }

int main(int argc, char** argv) {
  printf("argc: %d\n", argc);
  printf("argv[0] basename: %s\n", base_name(argv[0]));
  for (int i = 1; i < argc; i++) printf("argv[%d]: [%s]\n", i, argv[i]);
  printf("argv[argc] is NULL: %s\n", yes_no(argv[argc] == NULL));

  size_t n = 0;
  while (environ[n]) n++;
  char** sorted = malloc((n + 1) * sizeof *sorted);
  memcpy(sorted, environ, n * sizeof *sorted);
  qsort(sorted, n, sizeof *sorted, cmp_strings);
  printf("environment entries: %zu\n", n);
  for (size_t i = 0; i < n; i++) printf("env: [%s]\n", sorted[i]);
  free(sorted);
  const char* greeting = getenv("SAMPLE_GREETING");
  const char* empty = getenv("SAMPLE_EMPTY");
  printf("getenv SAMPLE_GREETING: [%s]\n", greeting ? greeting : "(null)");
  printf("getenv SAMPLE_EMPTY: [%s]\n", empty ? empty : "(null)");
  printf("getenv SAMPLE_MISSING is NULL: %s\n", yes_no(getenv("SAMPLE_MISSING") == NULL));

  printf("AT_PAGESZ: %lu\n", getauxval(AT_PAGESZ));
  printf("AT_UID: %lu\n", getauxval(AT_UID));
  printf("AT_EUID: %lu\n", getauxval(AT_EUID));
  printf("AT_GID: %lu\n", getauxval(AT_GID));
  printf("AT_EGID: %lu\n", getauxval(AT_EGID));
  printf("AT_SECURE: %lu\n", getauxval(AT_SECURE));
  printf("AT_PHENT: %lu\n", getauxval(AT_PHENT));
  printf("AT_CLKTCK: %lu\n", getauxval(AT_CLKTCK));
  const char* execfn = (const char*)getauxval(AT_EXECFN);
  printf("AT_EXECFN basename: %s\n", execfn ? base_name(execfn) : "(none)");
  const char* platform = (const char*)getauxval(AT_PLATFORM);
  printf("AT_PLATFORM: %s\n", platform ? platform : "(none)");
  printf("AT_RANDOM nonzero: %s\n", yes_no(getauxval(AT_RANDOM) != 0));
  printf("AT_PHDR nonzero: %s\n", yes_no(getauxval(AT_PHDR) != 0));
  printf("AT_ENTRY nonzero: %s\n", yes_no(getauxval(AT_ENTRY) != 0));
  printf("AT_ENTRY is _start: %s\n", yes_no(getauxval(AT_ENTRY) == (unsigned long)&ENTRY_POINT));

  // The program headers AT_PHDR points at must describe this program.
  const ElfW(Phdr)* phdr = (const ElfW(Phdr)*)getauxval(AT_PHDR);
  unsigned long phnum = getauxval(AT_PHNUM);
  int loads = 0;
  for (unsigned long i = 0; phdr && i < phnum; i++)
    if (phdr[i].p_type == PT_LOAD) loads++;
  printf("AT_PHNUM: %lu, PT_LOAD entries: %d\n", phnum, loads);
  return 0;
}
