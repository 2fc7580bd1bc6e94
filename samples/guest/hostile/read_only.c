// Role: hostile guest sample "read_only": every way it knows to change the file
// system, one line each (report.h), for runs under --read-only: opening for
// writing, truncating, creating (plain, O_EXCL, creat, O_TMPFILE), unlink,
// rmdir, rename, mkdir (new and existing), link, symlink, chmod, fchmod, chown,
// truncate, ftruncate, fchown, utimensat, futimens, a shared writable mapping; then that
// reads still work and that a FIFO still takes writes (as on a read-only mount).
// Usage: read_only, in a tree laid out by the test: /inside.txt ("inside"),
// /sub/ (a directory), /fifo (a FIFO).
// Invariants: prints no path; exit status 0.
#include "report.h"

#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/time.h>

int main(void) {
  report_result("open_wronly", open("/inside.txt", O_WRONLY), 0);
  report_result("open_rdwr", open("/inside.txt", O_RDWR), 0);
  report_result("open_trunc", open("/inside.txt", O_RDONLY | O_TRUNC), 0);
  report_result("open_append", open("/inside.txt", O_WRONLY | O_APPEND), 0);
  report_result("open_creat_new", open("/new.txt", O_WRONLY | O_CREAT, 0644), 0);
  report_result("open_creat_missing_parent", open("/missing/new.txt", O_WRONLY | O_CREAT, 0644), 0);
  report_result("open_creat_excl_existing", open("/inside.txt", O_WRONLY | O_CREAT | O_EXCL, 0644), 0);
  report_open("open_creat_existing_rdonly", open("/inside.txt", O_RDONLY | O_CREAT, 0644));
  report_result("creat", creat("/new2.txt", 0644), 0);
  report_result("open_tmpfile", open("/sub", O_TMPFILE | O_RDWR, 0600), 0);
  report_result("open_dir_for_writing", open("/sub", O_WRONLY), 0);
  report_result("unlink", unlink("/inside.txt"), 0);
  report_result("unlink_missing", unlink("/missing.txt"), 0);
  report_result("rmdir", rmdir("/sub"), 0);
  report_result("rename", rename("/inside.txt", "/renamed.txt"), 0);
  report_result("mkdir_new", mkdir("/newdir", 0755), 0);
  report_result("mkdir_existing", mkdir("/sub", 0755), 0);
  report_result("link", link("/inside.txt", "/hard.txt"), 0);
  report_result("symlink", symlink("/inside.txt", "/soft.txt"), 0);
  report_result("chmod", chmod("/inside.txt", 0600), 0);
  report_result("chown", chown("/inside.txt", getuid(), getgid()), 0);
  report_result("truncate", truncate("/inside.txt", 0), 0);
  report_result("utimensat", utimensat(AT_FDCWD, "/inside.txt", NULL, 0), 0);
  const int fd = open("/inside.txt", O_RDONLY);
  report_result("fchmod", fchmod(fd, 0600), 0);
  report_result("futimens", futimens(fd, NULL), 0);
  report_result("ftruncate_read_only_fd", ftruncate(fd, 0), 0);
  report_result("fchown", fchown(fd, getuid(), getgid()), 0);
  void* shared = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  report_result("mmap_shared_writable", shared == MAP_FAILED ? -1 : 0, 0);
  report_open("read_still_works", fd);
  const int fifo = open("/fifo", O_RDWR);
  report_result("open_fifo_for_writing", fifo, 0);
  report_result("write_fifo", write(fifo, "x", 1), 1);
  return 0;
}
