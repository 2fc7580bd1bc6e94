// Role: hostile guest sample "escape": tries every way out of a --rootfs tree it
// knows, one line each (report.h): `..` chains, absolute and relative symlinks,
// a symlink loop, /proc/self/root, /proc/self/cwd, /proc/self/fd/N of a dirfd,
// openat with a dirfd of "/" or "." and "../../..", openat with an absolute
// path and a dirfd, chdir/fchdir out, symlinkat/linkat/renameat making a way
// out and opening through it, readlink of a symlink pointing out, a link the
// guest made itself, chmod through links, fchmodat2 without following, statx
// of the working directory.
// Usage: escape ABSOLUTE_CANARY_PATH, in a tree laid out by the test:
//   /inside.txt ("inside"), /abs_link -> ABSOLUTE_CANARY_PATH, /rel_link ->
//   ../canary.txt, /loop_a <-> /loop_b, /sub/ (a directory).
// Invariants: never prints a path it did not get from its arguments; prints
// canary text only if it escaped; exit status 0.
#include "report.h"

#include <limits.h>
#include <sys/stat.h>
#include <sys/syscall.h>

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  const char* canary = argv[1];
  char path[PATH_MAX];

  report_open("dotdot_chain", open("../../../../../../../../canary.txt", O_RDONLY));
  report_open("dotdot_of_root", open("/../../../inside.txt", O_RDONLY));
  report_open("absolute_path", open(canary, O_RDONLY));
  report_open("absolute_symlink", open("/abs_link", O_RDONLY));
  report_open("relative_symlink", open("/rel_link", O_RDONLY));
  report_open("symlink_loop", open("/loop_a", O_RDONLY));
  snprintf(path, sizeof path, "/proc/self/root%s", canary);
  report_open("proc_self_root", open(path, O_RDONLY));
  report_open("proc_self_cwd", open("/proc/self/cwd/../canary.txt", O_RDONLY));

  const int root = open("/", O_RDONLY | O_DIRECTORY);
  snprintf(path, sizeof path, "/proc/self/fd/%d/../canary.txt", root);
  report_open("proc_self_fd_of_dirfd", open(path, O_RDONLY));
  report_open("dirfd_root_dotdot", openat(root, "../../../canary.txt", O_RDONLY));
  report_open("dirfd_root_dotdot_inside", openat(root, "../../inside.txt", O_RDONLY));
  const int sub = open("/sub", O_RDONLY | O_DIRECTORY);
  report_open("dirfd_sub_dotdot", openat(sub, "../../../../canary.txt", O_RDONLY));
  report_open("dirfd_absolute", openat(sub, canary, O_RDONLY));
  report_result("chdir_sub", chdir("/sub"), 0);
  const int dot = open(".", O_RDONLY | O_DIRECTORY);
  report_open("dirfd_dot_dotdot", openat(dot, "../../../../canary.txt", O_RDONLY));

  report_result("chdir_out", chdir("../../../../.."), 0);
  printf("getcwd_after_chdir_out: %s\n", getcwd(path, sizeof path) ? path : errno_name(errno));
  report_open("open_after_chdir_out", open("canary.txt", O_RDONLY));
  const int parent = open("..", O_RDONLY | O_DIRECTORY);
  report_result("fchdir_dotdot", fchdir(parent), 0);
  printf("getcwd_after_fchdir: %s\n", getcwd(path, sizeof path) ? path : errno_name(errno));

  struct stat cwd_info, root_info;
  const long statx_result = syscall(SYS_newfstatat, AT_FDCWD, "", &cwd_info, AT_EMPTY_PATH);
  stat("/", &root_info);
  printf("fstatat_empty_cwd_is_root: %s\n", statx_result == 0 && cwd_info.st_ino == root_info.st_ino &&
                                                    cwd_info.st_dev == root_info.st_dev ? "yes" : "no");

  report_result("symlinkat_absolute_out", symlinkat(canary, AT_FDCWD, "/made_abs"), 0);
  report_open("open_made_abs", open("/made_abs", O_RDONLY));
  report_result("symlinkat_relative_out", symlinkat("../../../canary.txt", root, "made_rel"), 0);
  report_open("open_made_rel", open("/made_rel", O_RDONLY));
  report_result("linkat_out", linkat(AT_FDCWD, canary, AT_FDCWD, "/made_hard", 0), 0);
  report_result("linkat_follow_out", linkat(AT_FDCWD, "/abs_link", AT_FDCWD, "/made_hard2", AT_SYMLINK_FOLLOW), 0);
  report_result("renameat_out", renameat(AT_FDCWD, canary, AT_FDCWD, "/stolen"), 0);
  report_result("renameat_in_to_out", renameat(root, "sub", root, "../../../sub_moved"), 0);
  report_open("after_rename_inside", open("/sub_moved/../inside.txt", O_RDONLY));
  const ssize_t length = readlink("/abs_link", path, sizeof path - 1);
  printf("readlink_out: %s\n", length < 0 ? errno_name(errno)
                                          : (length == (ssize_t)strlen(canary) && memcmp(path, canary, (size_t)length) == 0
                                                 ? "the absolute canary path"
                                                 : "something else"));
  report_result("symlink_own", symlink("/inside.txt", "/mine"), 0);
  report_open("open_own_symlink", open("/mine", O_RDONLY));
  report_result("chmod_through_absolute_symlink", chmod("/abs_link", 0600), 0);
  report_result("truncate_through_absolute_symlink", truncate("/abs_link", 0), 0);
  report_result("open_create_through_absolute_symlink", open("/abs_link", O_WRONLY | O_CREAT, 0600), 0);
  errno = 0;
  const long chmod2 = syscall(452 /* fchmodat2 */, AT_FDCWD, "/made_abs", 0600, AT_SYMLINK_NOFOLLOW);
  report_result("fchmodat2_nofollow_made_abs", chmod2, 0);
  struct stat canary_info;
  report_result("stat_absolute_canary", stat(canary, &canary_info), 0);
  return 0;
}
