// Role: guest sample "cwd": the working directory: chdir, getcwd (including
// the ERANGE case), fchdir, relative mkdir/rmdir/open, in a fresh directory
// given as argv[1].
// Invariants: prints getcwd results relative to the directory it started in,
// never absolute paths (the directory name differs between runs); leaves the
// directory empty; exit status 0, or 1 with a "FAIL" line.
// Directives (see samples/README.md):
// strace: yes
// args: {tmp}
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char base[4096];
static const char* yes_no(int fact) { return fact ? "yes" : "no"; }

// Prints the working directory relative to `base`.
static void show_cwd(const char* label) {
  char now[4096];
  if (!getcwd(now, sizeof now)) {
    printf("%s: getcwd failed: errno %d\n", label, errno);
    return;
  }
  size_t n = strlen(base);
  if (strncmp(now, base, n) == 0) printf("%s: {base}%s\n", label, now + n);
  else printf("%s: outside base\n", label);
}

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: cwd DIR\n");
    return 2;
  }
  umask(022);
  if (chdir(argv[1]) != 0 || !getcwd(base, sizeof base)) {
    printf("FAIL chdir/getcwd: errno %d\n", errno);
    return 1;
  }
  show_cwd("after chdir(argv[1])");
  printf("mkdir sub: %d\n", mkdir("sub", 0755));
  printf("mkdir sub/deeper: %d\n", mkdir("sub/deeper", 0700));
  printf("mkdir missing/x fails with ENOENT: %s\n", yes_no(mkdir("missing/x", 0755) < 0 && errno == ENOENT));
  printf("mkdir sub again fails with EEXIST: %s\n", yes_no(mkdir("sub", 0755) < 0 && errno == EEXIST));
  printf("chdir sub/deeper: %d\n", chdir("sub/deeper"));
  show_cwd("now");

  int fd = open("note", O_CREAT | O_WRONLY | O_TRUNC, 0644);
  printf("relative create worked: %s\n", yes_no(fd >= 0 && write(fd, "x", 1) == 1));
  close(fd);
  struct stat st;
  printf("visible from the base as sub/deeper/note: %s\n",
         yes_no(stat("../../sub/deeper/note", &st) == 0 && st.st_size == 1));

  char small[4];
  printf("getcwd into 4 bytes fails with ERANGE: %s\n", yes_no(getcwd(small, sizeof small) == NULL && errno == ERANGE));

  int here = open(".", O_RDONLY | O_DIRECTORY);
  printf("chdir /: %d\n", chdir("/"));
  char root[16];
  printf("getcwd at the root: %s\n", getcwd(root, sizeof root) ? root : "(failed)");
  printf("fchdir back: %d\n", fchdir(here));
  close(here);
  show_cwd("after fchdir");

  printf("unlink note: %d\n", unlink("note"));
  printf("chdir ..: %d\n", chdir(".."));
  show_cwd("after chdir ..");
  printf("rmdir deeper: %d\n", rmdir("deeper"));
  printf("chdir into removed dir fails with ENOENT: %s\n", yes_no(chdir("deeper") < 0 && errno == ENOENT));
  int up = chdir("..");
  printf("chdir .. then rmdir sub: %d %d\n", up, rmdir("sub"));
  printf("rmdir(\".\") fails with EINVAL: %s\n", yes_no(rmdir(".") < 0 && errno == EINVAL));
  show_cwd("finally");
  return 0;
}
