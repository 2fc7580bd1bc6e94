// Role: the guest's view of the file system and its file descriptors.
// - Paths: without a rootfs, guest paths are host paths (relative ones resolve
//   against the guest's own working directory, which tracecorn tracks apart from
//   its own). With a rootfs DIR, every path resolves inside DIR with the kernel's
//   openat2(RESOLVE_IN_ROOT): `..` stops at DIR and symlinks, absolute or relative,
//   resolve inside it, so the guest cannot name anything outside.
// - /proc/self/exe (and /proc/<own pid>/exe) reads as the guest program's path.
// - /sys/devices/system/cpu/{online,possible,present} read "0": one CPU, the
//   one engine that runs every guest thread (sched_getaffinity says the same).
// - Descriptors: guest fd numbers are allocated lowest-first like the kernel's and
//   map to host descriptors we own; guest 0/1/2 start as duplicates of ours.
// - Read-only (set_read_only): open() refuses what could change the host file
//   system as a read-only mount does: EROFS for writing, truncating or creating a
//   file (after the lookup, so a missing parent is still ENOENT), EEXIST for
//   O_CREAT|O_EXCL of an existing name, EISDIR for writing a directory; existing
//   FIFOs, sockets and character devices (/dev/null, a terminal) open for writing.
//   The other path syscalls check read_only() in the kernel.
// Who calls it: the syscall handlers and the loader, on the emulation thread only.
// Invariants: every host fd in the table is owned by the table and closed exactly
// once; errors are returned as positive host errno values.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "recorder/support/expected.h"

namespace tracecorn::linux_layer {

// A result of a host call: a value or a positive errno.
template <typename T>
struct SysResult {
  T value{};
  int error = 0;  // positive errno, 0 on success
  bool ok() const { return error == 0; }
};

// A host descriptor we own, closed on destruction.
class HostFd {
 public:
  HostFd() = default;
  explicit HostFd(int fd) : fd_(fd) {}
  HostFd(HostFd&& other) noexcept : fd_(other.release()) {}
  HostFd& operator=(HostFd&& other) noexcept;
  HostFd(const HostFd&) = delete;
  HostFd& operator=(const HostFd&) = delete;
  ~HostFd();
  int get() const { return fd_; }
  int release() { int fd = fd_; fd_ = -1; return fd; }
  bool valid() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

// Where a path operation should happen on the host: `*at(dirfd, name, ...)`.
// When `empty_path` is set, `name` is "" and the call needs AT_EMPTY_PATH.
struct HostLocation {
  int dirfd = -1;       // borrowed or from `owned`
  std::string name;
  HostFd owned;         // keeps a resolved directory or O_PATH fd alive
  bool empty_path = false;
};

// A signalfd (the Linux layer's signals are its own, so the host's signalfd
// cannot serve): the signals it reads, and a host eventfd of its own that is
// readable exactly while one of them is pending (Kernel::sync_signal_fds), so
// that poll, select and epoll see it. Shared by the descriptors dup'd from one.
struct SignalFd {
  std::uint64_t mask = 0;  // host signal numbers, bit (signal - 1)
  int eventfd = -1;        // a host eventfd (owned), the same one the entries' host fds duplicate
  bool readable = false;   // whether its counter is 1 now
  SignalFd() = default;
  SignalFd(const SignalFd&) = delete;
  SignalFd& operator=(const SignalFd&) = delete;
  ~SignalFd();
};

struct FdEntry {
  int host_fd = -1;
  bool close_on_exec = false;
  std::string guest_path;  // as the guest named it, for *at resolution and /proc lookups
  // eventfd, timerfd: reads and writes are 8-byte counters in the host's
  // byte order (swapped for a big-endian guest).
  bool counter_words = false;
  std::shared_ptr<SignalFd> signal_fd;  // set for a signalfd
};

class GuestFs {
 public:
  // `rootfs` empty: host paths. `guest_exe_path` is what /proc/self/exe reads as.
  static Expected<GuestFs> create(const std::string& rootfs, std::string guest_exe_path);

  GuestFs(GuestFs&&) noexcept = default;
  GuestFs& operator=(GuestFs&&) noexcept = default;
  ~GuestFs();

  // Opens `path` relative to `guest_dirfd` (AT_FDCWD = -100) with host open flags;
  // returns the new guest fd or an errno (EROFS and the others above when read-only).
  SysResult<int> open(int guest_dirfd, const std::string& path, int flags, int mode);
  // Opens a path for tracecorn itself (the loader): a host fd, resolved as the guest would.
  SysResult<int> open_for_loader(const std::string& path);

  // Resolves a path for a *at host call. `follow_last`: whether a symlink in the
  // last component is followed (stat) or not (lstat, unlink, readlink).
  SysResult<HostLocation> locate(int guest_dirfd, const std::string& path, bool follow_last);

  // If `path` (relative to guest_dirfd) names our own /proc/self/exe, its target.
  std::optional<std::string> magic_link_target(int guest_dirfd, const std::string& path) const;
  // The contents of a file tracecorn answers itself (the sysfs CPU lists:
  // one CPU); nullopt for every other path.
  std::optional<std::string> emulated_file(int guest_dirfd, const std::string& path) const;

  // Descriptor table.
  int host_fd(int guest_fd) const;  // -1 if not open
  FdEntry* entry(int guest_fd);
  // Every slot of the table, open or free (host_fd -1).
  std::span<FdEntry> entries() { return fds_; }
  int install(int host_fd, bool close_on_exec, std::string guest_path, int lowest = 0);
  int close(int guest_fd);  // 0 or errno
  // `host` moved above the descriptors a guest sees (closed; the copy is
  // close-on-exec); -1 on failure with errno set. A negative `host` is returned as it is.
  static int lift_host_fd(int host);
  // One past the highest guest fd the table has held (entry() of each below it: open or not).
  int descriptor_slots() const { return static_cast<int>(fds_.size()); }
  // Installs `host_fd` as exactly `guest_fd` (an exec'd image taking its
  // predecessor's descriptors); what was there is closed.
  void install_at(int guest_fd, int host_fd, std::string guest_path);
  // dup2/dup3 semantics: makes `new_guest_fd` refer to what `old_guest_fd` does.
  SysResult<int> duplicate_to(int old_guest_fd, int new_guest_fd, bool close_on_exec);
  SysResult<int> duplicate(int old_guest_fd, int lowest, bool close_on_exec);

  // Working directory.
  const std::string& cwd() const { return cwd_; }
  int chdir(const std::string& path);         // 0 or errno
  int fchdir(int guest_fd);                   // 0 or errno
  bool has_rootfs() const { return root_.valid(); }
  void set_read_only(bool read_only) { read_only_ = read_only; }
  bool read_only() const { return read_only_; }
  const std::string& rootfs_path() const { return rootfs_path_; }
  const std::string& exe_path() const { return guest_exe_path_; }

  // Maps a host absolute path of a directory to the guest's view (strips the rootfs).
  std::optional<std::string> guest_view_of_host_path(const std::string& host_path) const;

 private:
  GuestFs() = default;
  // The guest absolute path formed by `path` relative to `guest_dirfd`, or errno.
  SysResult<std::string> absolute(int guest_dirfd, const std::string& path) const;
  SysResult<int> open_in_root(const std::string& guest_absolute, int flags, int mode) const;
  // The host fd `path` opens to (not installed), and its guest path in `guest_path`.
  SysResult<int> open_host(int guest_dirfd, const std::string& path, int flags, int mode, std::string& guest_path);
  // open_host under read_only_ for flags that may write (see the header comment).
  SysResult<int> open_read_only(int guest_dirfd, const std::string& path, int flags, int mode,
                                std::string& guest_path);

  HostFd root_;                 // rootfs directory (invalid without a rootfs)
  std::string rootfs_path_;
  bool read_only_ = false;
  std::string cwd_ = "/";       // guest view, absolute, canonical
  std::string guest_exe_path_;
  std::vector<FdEntry> fds_;    // index = guest fd; host_fd -1 = free
};

}  // namespace tracecorn::linux_layer
