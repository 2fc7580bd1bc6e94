// Role: implementation of GuestFs (see guest_fs.h for the model and invariants).
#include "recorder/linux/guest_fs.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>

namespace tracecorn::linux_layer {
namespace {

constexpr int kHostFdFloor = 10;  // our own descriptors stay clear of the guest's view

int openat2_in_root(int root, const std::string& path, int flags, int mode) {
  open_how how{};
  how.flags = static_cast<std::uint64_t>(flags) | O_CLOEXEC;
  how.mode = (flags & (O_CREAT | O_TMPFILE)) ? static_cast<std::uint64_t>(mode & 07777) : 0;
  how.resolve = RESOLVE_IN_ROOT;
  const long fd = syscall(SYS_openat2, root, path.c_str(), &how, sizeof how);
  return fd < 0 ? -errno : static_cast<int>(fd);
}

std::string read_fd_link(int fd) {
  char buffer[PATH_MAX];
  const std::string link = "/proc/self/fd/" + std::to_string(fd);
  const ssize_t length = readlink(link.c_str(), buffer, sizeof buffer);
  return length > 0 ? std::string(buffer, static_cast<std::size_t>(length)) : std::string();
}

// "/proc/self/exe", "/proc/thread-self/exe" or "/proc/<pid>/exe" after lexical clean-up.
std::string lexically_normal(const std::string& path) {
  std::vector<std::string> parts;
  std::size_t i = 0;
  while (i < path.size()) {
    std::size_t j = path.find('/', i);
    if (j == std::string::npos) j = path.size();
    std::string part = path.substr(i, j - i);
    if (part == "..") {
      if (!parts.empty()) parts.pop_back();
    } else if (!part.empty() && part != ".") {
      parts.push_back(std::move(part));
    }
    i = j + 1;
  }
  std::string out;
  for (const auto& part : parts) out += "/" + part;
  return out.empty() ? "/" : out;
}

}  // namespace

HostFd& HostFd::operator=(HostFd&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.release();
  }
  return *this;
}

HostFd::~HostFd() {
  if (fd_ >= 0) ::close(fd_);
}

Expected<GuestFs> GuestFs::create(const std::string& rootfs, std::string guest_exe_path) {
  GuestFs fs;
  fs.guest_exe_path_ = std::move(guest_exe_path);
  if (!rootfs.empty()) {
    const int root = ::open(rootfs.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (root < 0) return make_error(ErrorCode::kNotFound, std::string("cannot open rootfs: ") + std::strerror(errno), rootfs);
    fs.root_ = HostFd(root);
    fs.rootfs_path_ = read_fd_link(root);
    fs.cwd_ = "/";
  } else {
    char buffer[PATH_MAX];
    fs.cwd_ = getcwd(buffer, sizeof buffer) ? buffer : "/";
  }
  // Guest 0/1/2 start as our own standard descriptors, duplicated so that the
  // guest closing them leaves tracecorn's diagnostics intact.
  for (int fd = 0; fd < 3; ++fd) {
    const int copy = fcntl(fd, F_DUPFD_CLOEXEC, kHostFdFloor);
    if (copy >= 0) fs.install(copy, false, "", fd);
  }
  return fs;
}

GuestFs::~GuestFs() {
  for (auto& entry : fds_)
    if (entry.host_fd >= 0) ::close(entry.host_fd);
}

SysResult<std::string> GuestFs::absolute(int guest_dirfd, const std::string& path) const {
  if (path.empty()) return {{}, ENOENT};
  if (path[0] == '/') return {path, 0};
  std::string base;
  if (guest_dirfd == AT_FDCWD) {
    base = cwd_;
  } else {
    if (guest_dirfd < 0 || static_cast<std::size_t>(guest_dirfd) >= fds_.size() ||
        fds_[static_cast<std::size_t>(guest_dirfd)].host_fd < 0)
      return {{}, EBADF};
    base = fds_[static_cast<std::size_t>(guest_dirfd)].guest_path;
    if (base.empty()) return {{}, ENOTDIR};
  }
  if (base.empty() || base.back() != '/') base += '/';
  return {base + path, 0};
}

std::optional<std::string> GuestFs::guest_view_of_host_path(const std::string& host_path) const {
  if (!has_rootfs()) return host_path;
  if (rootfs_path_ == "/") return host_path;
  if (host_path == rootfs_path_) return std::string("/");
  if (host_path.size() > rootfs_path_.size() && host_path.compare(0, rootfs_path_.size(), rootfs_path_) == 0 &&
      host_path[rootfs_path_.size()] == '/')
    return host_path.substr(rootfs_path_.size());
  return std::nullopt;
}

std::optional<std::string> GuestFs::magic_link_target(int guest_dirfd, const std::string& path) const {
  auto absolute_path = absolute(guest_dirfd, path);
  if (!absolute_path.ok()) return std::nullopt;
  const std::string normal = lexically_normal(absolute_path.value);
  const std::string own_pid = "/proc/" + std::to_string(getpid());
  for (const std::string& prefix : {std::string("/proc/self"), std::string("/proc/thread-self"), own_pid}) {
    if (normal == prefix + "/exe") return guest_exe_path_;
    const std::string fd_prefix = prefix + "/fd/";
    if (normal.compare(0, fd_prefix.size(), fd_prefix) == 0) {
      const std::string number = normal.substr(fd_prefix.size());
      if (number.empty() || number.size() > 6 || number.find_first_not_of("0123456789") != std::string::npos) continue;
      const int guest_fd = std::stoi(number);
      const int host = host_fd(guest_fd);
      if (host < 0) continue;
      const std::string target = read_fd_link(host);
      if (auto view = guest_view_of_host_path(target)) return view;
      return target;
    }
  }
  return std::nullopt;
}

SysResult<int> GuestFs::open_in_root(const std::string& guest_absolute, int flags, int mode) const {
  const int fd = openat2_in_root(root_.get(), guest_absolute, flags, mode);
  if (fd < 0) return {-1, -fd};
  return {fd, 0};
}

std::optional<std::string> GuestFs::emulated_file(int guest_dirfd, const std::string& path) const {
  auto absolute_path = absolute(guest_dirfd, path);
  if (!absolute_path.ok()) return std::nullopt;
  const std::string normal = lexically_normal(absolute_path.value);
  // The CPUs the guest has: one engine runs one thread at a time, so one CPU,
  // as sched_getaffinity says (glibc's get_nprocs and get_nprocs_conf, hence
  // sysconf(_SC_NPROCESSORS_ONLN/CONF), nproc --all and Python's cpu_count, read these).
  for (const char* name : {"online", "possible", "present"})
    if (normal == std::string("/sys/devices/system/cpu/") + name) return std::string("0\n");
  return std::nullopt;
}

SysResult<int> GuestFs::open_host(int guest_dirfd, const std::string& path, int flags, int mode,
                                  std::string& guest_path) {
  if (auto contents = emulated_file(guest_dirfd, path)) {
    if ((flags & O_ACCMODE) != O_RDONLY) return {-1, EACCES};  // as sysfs for an attribute with no write method
    const int host = ::memfd_create("tracecorn-emulated", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (host < 0) return {-1, errno};
    HostFd owned(host);
    if (::write(host, contents->data(), contents->size()) != static_cast<ssize_t>(contents->size()) ||
        ::fcntl(host, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL) != 0 ||
        ::lseek(host, 0, SEEK_SET) != 0)
      return {-1, EIO};
    auto absolute_path = absolute(guest_dirfd, path);
    guest_path = absolute_path.ok() ? absolute_path.value : path;
    return {owned.release(), 0};
  }
  if (auto magic = magic_link_target(guest_dirfd, path); magic && magic == guest_exe_path_) {
    // /proc/self/exe opens the guest program, not tracecorn.
    guest_path = guest_exe_path_;
    return open_for_loader(guest_exe_path_);
  }
  if (has_rootfs()) {
    auto absolute_path = absolute(guest_dirfd, path);
    if (!absolute_path.ok()) return {-1, absolute_path.error};
    auto opened = open_in_root(absolute_path.value, flags, mode);
    if (!opened.ok()) return opened;
    guest_path = guest_view_of_host_path(read_fd_link(opened.value)).value_or(absolute_path.value);
    return opened;
  }
  auto location = locate(guest_dirfd, path, true);
  if (!location.ok()) return {-1, location.error};
  const int host = ::openat(location.value.dirfd, location.value.name.c_str(), flags | O_CLOEXEC, mode);
  if (host < 0) return {-1, errno};
  auto absolute_path = absolute(guest_dirfd, path);
  guest_path = absolute_path.ok() ? absolute_path.value : path;
  return {host, 0};
}

SysResult<int> GuestFs::open_read_only(int guest_dirfd, const std::string& path, int flags, int mode,
                                       std::string& guest_path) {
  const bool writes = (flags & O_ACCMODE) != O_RDONLY || (flags & O_TRUNC);
  if ((flags & O_TMPFILE) == O_TMPFILE) return {-1, EROFS};
  // What does the path name now? (A read-only mount answers after the lookup.)
  auto probe = open_host(guest_dirfd, path, O_PATH | (flags & (O_NOFOLLOW | O_DIRECTORY)), 0, guest_path);
  if (!probe.ok()) {
    if (probe.error == ENOENT && (flags & O_CREAT)) {
      // Creating: EROFS when the parent exists, else the lookup's own error.
      auto parent = locate(guest_dirfd, path, false);
      return {-1, parent.ok() ? EROFS : parent.error};
    }
    return probe;
  }
  HostFd found(probe.value);
  if ((flags & O_CREAT) && (flags & O_EXCL)) return {-1, EEXIST};
  struct stat info {};
  if (::fstat(found.get(), &info) != 0) return {-1, errno};
  if (S_ISDIR(info.st_mode) && writes) return {-1, EISDIR};
  const bool device = S_ISCHR(info.st_mode) || S_ISFIFO(info.st_mode) || S_ISSOCK(info.st_mode);
  if (writes && !device) return {-1, EROFS};
  // Reopen exactly what was found (its /proc link), so a rename in between cannot redirect the open.
  const std::string link = "/proc/self/fd/" + std::to_string(found.get());
  const int host = ::open(link.c_str(), (flags & ~(O_CREAT | O_EXCL | O_NOFOLLOW | O_TRUNC)) | O_CLOEXEC);
  if (host < 0) return {-1, errno};
  (void)mode;
  return {host, 0};
}

SysResult<int> GuestFs::open(int guest_dirfd, const std::string& path, int flags, int mode) {
  std::string guest_path;
  const bool may_write = (flags & O_ACCMODE) != O_RDONLY || (flags & (O_TRUNC | O_CREAT));
  auto opened = read_only_ && may_write ? open_read_only(guest_dirfd, path, flags, mode, guest_path)
                                        : open_host(guest_dirfd, path, flags, mode, guest_path);
  if (!opened.ok()) return opened;
  // Move the host descriptor out of the range the guest sees in /proc/self/fd.
  const int host = lift_host_fd(opened.value);
  if (host < 0) return {-1, errno};
  return {install(host, (flags & O_CLOEXEC) != 0, std::move(guest_path)), 0};
}

SysResult<int> GuestFs::open_for_loader(const std::string& path) {
  if (has_rootfs() && !path.empty() && path[0] == '/') {
    // The program and its interpreter may live on the host (absolute path given on
    // the command line) or inside the rootfs: the rootfs wins for the interpreter.
    auto opened = open_in_root(path, O_RDONLY, 0);
    if (opened.ok()) return opened;
  }
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {-1, errno};
  return {fd, 0};
}

SysResult<HostLocation> GuestFs::locate(int guest_dirfd, const std::string& path, bool follow_last) {
  HostLocation location;
  if (!has_rootfs()) {
    if (!path.empty() && path[0] == '/') {
      location.dirfd = AT_FDCWD;
      location.name = path;
      return {std::move(location), 0};
    }
    if (guest_dirfd == AT_FDCWD) {
      // Relative to the guest's working directory, which is not ours.
      const int cwd = ::open(cwd_.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
      if (cwd < 0) return {{}, errno};
      location.owned = HostFd(cwd);
      location.dirfd = cwd;
    } else {
      const int host = host_fd(guest_dirfd);
      if (host < 0) return {{}, EBADF};
      location.dirfd = host;
    }
    location.name = path;
    if (path.empty()) location.empty_path = true;
    return {std::move(location), 0};
  }

  auto absolute_path = absolute(guest_dirfd, path);
  if (!absolute_path.ok()) return {{}, absolute_path.error};
  std::string full = absolute_path.value;
  while (full.size() > 1 && full.back() == '/') full.pop_back();
  const std::size_t slash = full.rfind('/');
  const std::string last = full.substr(slash + 1);
  if (follow_last || last.empty() || last == "." || last == "..") {
    auto opened = open_in_root(full, O_PATH, 0);
    if (!opened.ok()) return {{}, opened.error};
    location.owned = HostFd(opened.value);
    location.dirfd = opened.value;
    location.empty_path = true;
    return {std::move(location), 0};
  }
  const std::string parent = slash == 0 ? "/" : full.substr(0, slash);
  auto opened = open_in_root(parent, O_PATH | O_DIRECTORY, 0);
  if (!opened.ok()) return {{}, opened.error};
  location.owned = HostFd(opened.value);
  location.dirfd = opened.value;
  location.name = last;
  return {std::move(location), 0};
}

int GuestFs::host_fd(int guest_fd) const {
  if (guest_fd < 0 || static_cast<std::size_t>(guest_fd) >= fds_.size()) return -1;
  return fds_[static_cast<std::size_t>(guest_fd)].host_fd;
}

FdEntry* GuestFs::entry(int guest_fd) {
  if (guest_fd < 0 || static_cast<std::size_t>(guest_fd) >= fds_.size()) return nullptr;
  FdEntry& found = fds_[static_cast<std::size_t>(guest_fd)];
  return found.host_fd >= 0 ? &found : nullptr;
}

int GuestFs::install(int host, bool close_on_exec, std::string guest_path, int lowest) {
  std::size_t slot = static_cast<std::size_t>(lowest);
  while (slot < fds_.size() && fds_[slot].host_fd >= 0) ++slot;
  if (slot >= fds_.size()) fds_.resize(slot + 1);
  FdEntry entry;
  entry.host_fd = host;
  entry.close_on_exec = close_on_exec;
  entry.guest_path = std::move(guest_path);
  fds_[slot] = std::move(entry);
  return static_cast<int>(slot);
}

int GuestFs::lift_host_fd(int host) {
  if (host < 0 || host >= kHostFdFloor) return host;
  const int moved = ::fcntl(host, F_DUPFD_CLOEXEC, kHostFdFloor);
  const int saved = errno;
  ::close(host);
  errno = saved;
  return moved;
}

void GuestFs::install_at(int guest_fd, int host, std::string guest_path) {
  const auto slot = static_cast<std::size_t>(guest_fd);
  if (slot >= fds_.size()) fds_.resize(slot + 1);
  if (fds_[slot].host_fd >= 0) ::close(fds_[slot].host_fd);
  FdEntry entry;
  entry.host_fd = host;
  entry.guest_path = std::move(guest_path);
  fds_[slot] = std::move(entry);
}

int GuestFs::close(int guest_fd) {
  FdEntry* found = entry(guest_fd);
  if (!found) return EBADF;
  ::close(found->host_fd);
  *found = FdEntry{};
  return 0;
}

SignalFd::~SignalFd() {
  if (eventfd >= 0) ::close(eventfd);
}

SysResult<int> GuestFs::duplicate_to(int old_guest_fd, int new_guest_fd, bool close_on_exec) {
  FdEntry* source = entry(old_guest_fd);
  if (!source) return {-1, EBADF};
  if (new_guest_fd < 0 || new_guest_fd >= 1 << 20) return {-1, EBADF};
  if (old_guest_fd == new_guest_fd) return {new_guest_fd, 0};
  const int copy = fcntl(source->host_fd, F_DUPFD_CLOEXEC, kHostFdFloor);
  if (copy < 0) return {-1, errno};
  FdEntry duplicate = *source;  // (what kind of descriptor it is comes along)
  duplicate.host_fd = copy;
  duplicate.close_on_exec = close_on_exec;
  close(new_guest_fd);
  if (static_cast<std::size_t>(new_guest_fd) >= fds_.size()) fds_.resize(static_cast<std::size_t>(new_guest_fd) + 1);
  fds_[static_cast<std::size_t>(new_guest_fd)] = std::move(duplicate);
  return {new_guest_fd, 0};
}

SysResult<int> GuestFs::duplicate(int old_guest_fd, int lowest, bool close_on_exec) {
  FdEntry* source = entry(old_guest_fd);
  if (!source) return {-1, EBADF};
  if (lowest < 0 || lowest >= 1 << 20) return {-1, EINVAL};
  const int copy = fcntl(source->host_fd, F_DUPFD_CLOEXEC, kHostFdFloor);
  if (copy < 0) return {-1, errno};
  FdEntry kind = *source;  // (install may move the table: copied first)
  const int slot = install(copy, close_on_exec, kind.guest_path, lowest);
  fds_[static_cast<std::size_t>(slot)].counter_words = kind.counter_words;
  fds_[static_cast<std::size_t>(slot)].signal_fd = std::move(kind.signal_fd);
  return {slot, 0};
}

int GuestFs::chdir(const std::string& path) {
  int fd = -1;
  if (has_rootfs()) {
    auto absolute_path = absolute(AT_FDCWD, path);
    if (!absolute_path.ok()) return absolute_path.error;
    auto opened = open_in_root(absolute_path.value, O_PATH | O_DIRECTORY, 0);
    if (!opened.ok()) return opened.error;
    fd = opened.value;
  } else {
    auto location = locate(AT_FDCWD, path, true);
    if (!location.ok()) return location.error;
    fd = ::openat(location.value.dirfd, location.value.name.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return errno;
  }
  HostFd owned(fd);
  auto view = guest_view_of_host_path(read_fd_link(fd));
  if (!view) return ENOENT;
  cwd_ = *view;
  return 0;
}

int GuestFs::fchdir(int guest_fd) {
  const int host = host_fd(guest_fd);
  if (host < 0) return EBADF;
  struct stat info {};
  if (fstat(host, &info) != 0) return errno;
  if (!S_ISDIR(info.st_mode)) return ENOTDIR;
  auto view = guest_view_of_host_path(read_fd_link(host));
  if (!view) return ENOENT;
  cwd_ = *view;
  return 0;
}

}  // namespace tracecorn::linux_layer
