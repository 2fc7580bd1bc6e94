// Role: guest sample "file_io": file system calls on a fresh directory given as
// argv[1]: open/write/read/lseek/pread/pwrite/ftruncate/fstat/stat/rename/
// unlink, and a directory listing through opendir/readdir.
// Invariants: prints facts (sizes, modes, contents, sorted names), never
// paths, inode numbers or times; the directory is left empty; exit status 0,
// or 1 with a "FAIL" line if a call fails unexpectedly.
// Directives (see samples/README.md):
// args: {tmp}
// strace: yes
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void fail(const char* what) {
  printf("FAIL %s: errno %d\n", what, errno);
  exit(1);
}

static int cmp_names(const void* a, const void* b) {
  return strcmp(*(char* const*)a, *(char* const*)b);
}

// Prints the sorted entry names of `dir` (without "." and "..") on one line.
static void list_dir(const char* dir) {
  DIR* d = opendir(dir);
  if (!d) fail("opendir");
  char* names[16];
  int n = 0;
  struct dirent* e;
  while ((e = readdir(d)) != NULL) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    if (n < 16) names[n++] = strdup(e->d_name);
  }
  closedir(d);
  qsort(names, (size_t)n, sizeof names[0], cmp_names);
  printf("listing (%d):", n);
  for (int i = 0; i < n; i++) {
    printf(" %s", names[i]);
    free(names[i]);
  }
  printf("\n");
}

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: file_io DIR\n");
    return 2;
  }
  umask(022);
  char path[4096], renamed[4096], sub[4096];
  snprintf(path, sizeof path, "%s/data.txt", argv[1]);
  snprintf(renamed, sizeof renamed, "%s/renamed.txt", argv[1]);
  snprintf(sub, sizeof sub, "%s/subdir", argv[1]);

  int fd = open(path, O_CREAT | O_EXCL | O_RDWR, 0644);
  if (fd < 0) fail("open");
  const char text[] = "0123456789abcdefghijklmnopqrstuvwxyz\n";
  for (int i = 0; i < 100; i++)
    if (write(fd, text, sizeof text - 1) != (ssize_t)(sizeof text - 1)) fail("write");
  printf("second O_EXCL open fails with EEXIST: %s\n",
         open(path, O_CREAT | O_EXCL | O_RDWR, 0644) < 0 && errno == EEXIST ? "yes" : "no");

  off_t end = lseek(fd, 0, SEEK_END);
  printf("size via lseek(SEEK_END): %lld\n", (long long)end);
  if (lseek(fd, 10, SEEK_SET) != 10) fail("lseek");
  char buf[64] = {0};
  if (read(fd, buf, 16) != 16) fail("read");
  printf("read at 10: %.16s\n", buf);
  printf("position after read: %lld\n", (long long)lseek(fd, 0, SEEK_CUR));

  if (pwrite(fd, "PWRITE", 6, 40) != 6) fail("pwrite");
  memset(buf, 0, sizeof buf);
  if (pread(fd, buf, 12, 37) != 12) fail("pread");
  printf("pread at 37: %.12s\n", buf);
  printf("position unchanged by pread/pwrite: %lld\n", (long long)lseek(fd, 0, SEEK_CUR));

  if (ftruncate(fd, 1000) != 0) fail("ftruncate");
  struct stat st;
  if (fstat(fd, &st) != 0) fail("fstat");
  printf("fstat: regular %s, size %lld, mode %o, nlink %lu\n", S_ISREG(st.st_mode) ? "yes" : "no",
         (long long)st.st_size, (unsigned)(st.st_mode & 07777), (unsigned long)st.st_nlink);
  memset(buf, 0, sizeof buf);
  printf("read at EOF returns: %zd\n", pread(fd, buf, sizeof buf, 1000));
  close(fd);

  if (mkdir(sub, 0750) != 0) fail("mkdir");
  if (stat(sub, &st) != 0) fail("stat dir");
  printf("stat subdir: directory %s, mode %o\n", S_ISDIR(st.st_mode) ? "yes" : "no",
         (unsigned)(st.st_mode & 07777));
  list_dir(argv[1]);

  if (rename(path, renamed) != 0) fail("rename");
  printf("old name gone after rename: %s\n", stat(path, &st) != 0 && errno == ENOENT ? "yes" : "no");
  if (stat(renamed, &st) != 0) fail("stat renamed");
  printf("renamed size: %lld\n", (long long)st.st_size);
  list_dir(argv[1]);

  fd = open(renamed, O_RDONLY);
  if (fd < 0) fail("reopen");
  memset(buf, 0, sizeof buf);
  if (read(fd, buf, 48) != 48) fail("read renamed");
  printf("first 48 bytes: %.36s|%.11s\n", buf, buf + 37);
  close(fd);

  if (unlink(renamed) != 0) fail("unlink");
  if (rmdir(sub) != 0) fail("rmdir");
  printf("unlink twice fails with ENOENT: %s\n", unlink(renamed) != 0 && errno == ENOENT ? "yes" : "no");
  list_dir(argv[1]);
  return 0;
}
