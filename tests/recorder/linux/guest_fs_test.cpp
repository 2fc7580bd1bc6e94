// Role: unit tests of GuestFs: --rootfs containment (`..`, absolute and relative
// symlinks, dirfd tricks), /proc/self/exe, descriptor numbering.
// Each test builds its own tree under a fresh temporary directory.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "recorder/linux/guest_fs.h"

using namespace tracecorn::linux_layer;
namespace fs = std::filesystem;

namespace {

struct TempTree {
  fs::path root;
  TempTree() {
    char pattern[] = "/tmp/tracecorn-fs-XXXXXX";
    root = mkdtemp(pattern);
    // outside/secret is what an escape would reach; jail/ is the rootfs.
    fs::create_directories(root / "jail/etc");
    fs::create_directories(root / "outside");
    std::ofstream(root / "outside/secret") << "outside";
    std::ofstream(root / "jail/etc/secret") << "inside";
    fs::create_symlink("/etc/secret", root / "jail/absolute_link");
    fs::create_symlink("../../../../outside/secret", root / "jail/relative_link");
    fs::create_symlink("/..", root / "jail/etc/up");
  }
  ~TempTree() { fs::remove_all(root); }
};

std::string read_all(int fd) {
  char buffer[64] = {};
  const ssize_t got = ::pread(fd, buffer, sizeof buffer - 1, 0);
  return got > 0 ? std::string(buffer, static_cast<std::size_t>(got)) : std::string();
}

}  // namespace

TEST_CASE("GuestFs: with a rootfs, .. and symlinks cannot leave it") {
  TempTree tree;
  auto guest = GuestFs::create((tree.root / "jail").string(), "/bin/prog");
  REQUIRE(guest.has_value());
  for (const char* path : {"/etc/secret", "/../../outside/secret", "/../etc/secret", "absolute_link", "relative_link",
                           "/etc/up/etc/secret", "etc/../../../etc/secret"}) {
    CAPTURE(path);
    auto opened = guest->open(AT_FDCWD, path, O_RDONLY, 0);
    if (opened.ok()) {
      CHECK(read_all(guest->host_fd(opened.value)) == "inside");
      guest->close(opened.value);
    } else {
      CHECK(opened.error == ENOENT);  // a name that resolves to nothing inside the jail
    }
  }
  // The outside file is never reachable.
  CHECK_FALSE(guest->open(AT_FDCWD, "/../outside/secret", O_RDONLY, 0).ok());
}

TEST_CASE("GuestFs: a directory descriptor does not become a way out") {
  TempTree tree;
  auto guest = GuestFs::create((tree.root / "jail").string(), "/bin/prog");
  REQUIRE(guest.has_value());
  auto dir = guest->open(AT_FDCWD, "/etc", O_RDONLY | O_DIRECTORY, 0);
  REQUIRE(dir.ok());
  auto escaped = guest->open(dir.value, "../../outside/secret", O_RDONLY, 0);
  CHECK_FALSE(escaped.ok());
  auto inside = guest->open(dir.value, "secret", O_RDONLY, 0);
  REQUIRE(inside.ok());
  CHECK(read_all(guest->host_fd(inside.value)) == "inside");
  // Locating for a non-following operation on "..": stays the jail root.
  auto location = guest->locate(dir.value, "../..", false);
  REQUIRE(location.ok());
  struct stat seen {}, jail {};
  REQUIRE(::fstatat(location.value.dirfd, "", &seen, AT_EMPTY_PATH) == 0);
  REQUIRE(::stat((tree.root / "jail").c_str(), &jail) == 0);
  CHECK(seen.st_ino == jail.st_ino);
}

TEST_CASE("GuestFs: chdir and getcwd speak the guest's view of the rootfs") {
  TempTree tree;
  auto guest = GuestFs::create((tree.root / "jail").string(), "/bin/prog");
  REQUIRE(guest.has_value());
  CHECK(guest->cwd() == "/");
  CHECK(guest->chdir("etc") == 0);
  CHECK(guest->cwd() == "/etc");
  CHECK(guest->chdir("../../..") == 0);
  CHECK(guest->cwd() == "/");
  CHECK(guest->chdir("/nonexistent") == ENOENT);
}

TEST_CASE("GuestFs: /proc/self/exe names the guest program, and fds are numbered lowest first") {
  auto guest = GuestFs::create("", "/usr/bin/guest-program");
  REQUIRE(guest.has_value());
  CHECK(guest->magic_link_target(AT_FDCWD, "/proc/self/exe") == "/usr/bin/guest-program");
  CHECK(guest->magic_link_target(AT_FDCWD, "/proc/self/../self/exe") == "/usr/bin/guest-program");
  CHECK_FALSE(guest->magic_link_target(AT_FDCWD, "/proc/self/maps").has_value());
  auto a = guest->open(AT_FDCWD, "/dev/null", O_RDONLY, 0);
  auto b = guest->open(AT_FDCWD, "/dev/null", O_RDONLY, 0);
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  CHECK(a.value == 3);
  CHECK(b.value == 4);
  CHECK(guest->close(3) == 0);
  CHECK(guest->close(3) == EBADF);
  auto c = guest->open(AT_FDCWD, "/dev/null", O_RDONLY, 0);
  CHECK(c.value == 3);
  auto dup = guest->duplicate_to(4, 9, false);
  CHECK(dup.value == 9);
  CHECK(guest->host_fd(9) >= 10);
}

TEST_CASE("GuestFs: read-only refuses opens that could write, and lets reads and devices through") {
  TempTree tree;
  auto guest = GuestFs::create((tree.root / "jail").string(), "/bin/prog");
  REQUIRE(guest.has_value());
  guest->set_read_only(true);
  for (int flags : {O_WRONLY, O_RDWR, O_RDONLY | O_TRUNC, O_WRONLY | O_APPEND}) {
    CAPTURE(flags);
    CHECK(guest->open(AT_FDCWD, "/etc/secret", flags, 0).error == EROFS);
  }
  CHECK(guest->open(AT_FDCWD, "/etc/new", O_WRONLY | O_CREAT, 0644).error == EROFS);
  CHECK(guest->open(AT_FDCWD, "/missing/new", O_WRONLY | O_CREAT, 0644).error == ENOENT);
  CHECK(guest->open(AT_FDCWD, "/etc/secret", O_WRONLY | O_CREAT | O_EXCL, 0644).error == EEXIST);
  CHECK(guest->open(AT_FDCWD, "/etc", O_WRONLY, 0).error == EISDIR);
  CHECK(guest->open(AT_FDCWD, "/etc", O_TMPFILE | O_RDWR, 0600).error == EROFS);
  // Through a symlink to a file outside: resolved inside the jail, and refused there.
  CHECK(guest->open(AT_FDCWD, "relative_link", O_WRONLY | O_CREAT, 0644).error == EROFS);
  auto reading = guest->open(AT_FDCWD, "/etc/secret", O_RDONLY | O_CREAT, 0644);
  REQUIRE(reading.ok());
  CHECK(read_all(guest->host_fd(reading.value)) == "inside");
  CHECK_FALSE(fs::exists(tree.root / "jail/etc/new"));
  CHECK(fs::file_size(tree.root / "jail/etc/secret") == 6);
  CHECK(fs::file_size(tree.root / "outside/secret") == 7);
  // A FIFO is a device of sorts: writing it changes no file, as on a read-only mount.
  REQUIRE(::mkfifo((tree.root / "jail/fifo").c_str(), 0600) == 0);
  auto fifo = guest->open(AT_FDCWD, "/fifo", O_RDWR, 0);
  REQUIRE(fifo.ok());
  CHECK(::write(guest->host_fd(fifo.value), "x", 1) == 1);
}
