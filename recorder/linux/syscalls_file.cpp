// Role: the file family of syscalls: descriptors, paths, stat, directories,
// pipes, terminal ioctls. Guest descriptors map to host ones through GuestFs;
// every path goes through GuestFs so that --rootfs holds.
// Struct layouts: `struct stat` is written through the architecture's encoder
// (arch::ArchInfo::encode_stat); the other structs (statx, statfs, dirent64,
// iovec, termios, winsize, flock) are byte-identical between the x86-64 host and
// every 64-bit little-endian guest supported so far (x86-64, aarch64), so they
// are copied as they are.
#include <fcntl.h>
#include <poll.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <climits>
#include <cstring>

#include "recorder/linux/kernel.h"
#include "recorder/linux/syscall_helpers.h"

namespace tracecorn::linux_layer {

using arch::SyscallId;

namespace {

constexpr std::uint64_t kMaxIoChunk = 64ull << 20;  // a single read/write moves at most this much


// A path usable with any host path syscall for this location, through /proc's
// descriptor links where the location is a descriptor.
std::string host_path_for(const HostLocation& location) {
  if (location.dirfd == AT_FDCWD) return location.name;
  std::string path = "/proc/self/fd/" + std::to_string(location.dirfd);
  if (!location.empty_path && !location.name.empty()) path += "/" + location.name;
  return path;
}

// Whether the name a located path ends in exists (not following a final symlink).
bool location_exists(const HostLocation& location) {
  struct stat info {};
  return ::fstatat(location.dirfd, location.name.c_str(), &info,
                   AT_SYMLINK_NOFOLLOW | (location.empty_path ? AT_EMPTY_PATH : 0)) == 0;
}

}  // namespace

std::int64_t Kernel::refuse_on_read_only(SyscallId id) {
  note_once(std::string("--read-only: ") + std::string(arch::syscall_name(id)) + " refused with EROFS");
  return -EROFS;
}

std::int64_t Kernel::do_openat(int dirfd, std::uint64_t path_address, int flags, int mode) {
  int error = 0;
  auto path = read_path(path_address, error);
  if (!path) return -error;
  auto opened = fs_.open(dirfd, *path, flags, mode & ~umask_ & 07777);
  if (!opened.ok() && opened.error == EROFS) note_once("--read-only: opening for writing refused with EROFS");
  if (!opened.ok()) return -opened.error;
  return opened.value;
}

// Whether a read of `host` returns at once: a regular file, a descriptor in
// non-blocking mode, or one with data (or end of file) waiting.
static bool host_read_would_not_block(int host) {
  struct stat info {};
  if (::fstat(host, &info) != 0 || S_ISREG(info.st_mode) || S_ISDIR(info.st_mode)) return true;
  const int flags = ::fcntl(host, F_GETFL);
  if (flags < 0 || (flags & O_NONBLOCK)) return true;
  struct pollfd ready {host, POLLIN, 0};
  return ::poll(&ready, 1, 0) != 0;
}

std::int64_t Kernel::do_read(int fd, std::uint64_t buffer, std::uint64_t count, std::optional<std::int64_t> offset) {
  const int host = fs_.host_fd(fd);
  if (host < 0) return -EBADF;
  if (const auto& signal_fd = fs_.entry(fd)->signal_fd)
    return offset ? -ESPIPE : read_signal_fd(fd, *signal_fd, buffer, count);
  if (count == 0) return host_result(offset ? ::pread(host, nullptr, 0, *offset) : ::read(host, nullptr, 0));
  count = std::min(count, kMaxIoChunk);
  if (!host_read_would_not_block(host)) {
    struct pollfd ready {host, POLLIN, 0};
    const WaitEnd end = wait_for_host(std::span(&ready, 1), std::nullopt, nullptr);
    if (end == WaitEnd::kWouldBlock) return kBlockAndRetry;
    if (end == WaitEnd::kInterrupted) return kRestartSys;
  }
  // Read at most what the guest buffer can take without a fault, as the kernel does.
  std::uint64_t writable = 0;
  while (writable < count) {
    const Vma* vma = memory_.find(buffer + writable);
    if (!vma) break;
    writable = vma->end - buffer;
  }
  if (writable == 0) {
    // The kernel faults only when it has bytes to copy: at end of file it returns 0.
    // Find out without consuming data (pipes and terminals are only polled).
    struct stat info {};
    if (::fstat(host, &info) == 0 && S_ISREG(info.st_mode)) {
      const off_t position = offset ? static_cast<off_t>(*offset) : ::lseek(host, 0, SEEK_CUR);
      char probe = 0;
      if (position >= 0 && ::pread(host, &probe, 1, position) == 0) return 0;
    } else if (S_ISCHR(info.st_mode) && !::isatty(host)) {
      char probe = 0;  // /dev/null-like devices: reading consumes nothing worth keeping
      if (::read(host, &probe, 1) == 0) return 0;
    } else {
      struct pollfd ready {host, POLLIN, 0};
      if (::poll(&ready, 1, 0) == 1 && (ready.revents & POLLHUP) && !(ready.revents & POLLIN)) return 0;
    }
    return -EFAULT;
  }
  count = std::min(count, writable);
  scratch_.resize(count);
  const ssize_t got = offset ? ::pread(host, scratch_.data(), count, *offset) : ::read(host, scratch_.data(), count);
  if (got < 0) return -errno;
  if (fs_.entry(fd)->counter_words) to_guest_order(std::span(scratch_.data(), static_cast<std::size_t>(got)), {8});
  if (!copy_out(buffer, scratch_.data(), static_cast<std::size_t>(got))) return -EFAULT;
  return got;
}

std::int64_t Kernel::do_write(int fd, std::uint64_t buffer, std::uint64_t count, std::optional<std::int64_t> offset) {
  const int host = fs_.host_fd(fd);
  if (host < 0) return -EBADF;
  if (fs_.entry(fd)->signal_fd) return -EINVAL;  // as Linux: a signalfd is read-only
  count = std::min(count, kMaxIoChunk);
  scratch_.resize(count);
  if (!copy_in(buffer, scratch_.data(), count)) return -EFAULT;
  if (fs_.entry(fd)->counter_words) to_guest_order(std::span(scratch_.data(), count), {8});
  const ssize_t put = offset ? ::pwrite(host, scratch_.data(), count, *offset) : ::write(host, scratch_.data(), count);
  return put < 0 ? -errno : put;
}

std::int64_t Kernel::do_vector_io(int fd, std::uint64_t iov, std::uint64_t count, bool is_write,
                                  std::optional<std::int64_t> offset) {
  if (fs_.host_fd(fd) < 0) return -EBADF;
  if (count > IOV_MAX) return -EINVAL;
  if (fs_.entry(fd)->signal_fd) return -EINVAL;  // (readv of a signalfd: not offered; read(2) is)
  // struct iovec is two guest words (pointer, length).
  std::vector<struct iovec> vectors(count);
  const unsigned word = guest_word_bytes();
  std::vector<std::uint8_t> raw(count * 2 * word);
  if (count && !copy_in(iov, raw.data(), raw.size())) return -EFAULT;
  for (std::size_t i = 0; i < count; ++i) {
    std::uint64_t fields[2] = {};
    for (unsigned f = 0; f < 2; ++f)
      for (unsigned b = 0; b < word; ++b)
        fields[f] |= std::uint64_t{raw[(2 * i + f) * word + b]} << (8 * (arch_.little_endian ? b : word - 1 - b));
    vectors[i].iov_base = reinterpret_cast<void*>(fields[0]);
    vectors[i].iov_len = fields[1];
  }
  // Gather into one host call so that the write is atomic as the guest expects.
  std::uint64_t total = 0;
  for (const auto& vector : vectors) total += vector.iov_len;
  if (total > kMaxIoChunk) total = kMaxIoChunk;
  std::vector<std::uint8_t> data(total);
  if (is_write) {
    std::uint64_t at = 0;
    for (const auto& vector : vectors) {
      const std::uint64_t take = std::min<std::uint64_t>(vector.iov_len, total - at);
      if (take && !copy_in(reinterpret_cast<std::uint64_t>(vector.iov_base), data.data() + at, take)) return -EFAULT;
      at += take;
    }
    const int host = fs_.host_fd(fd);
    const ssize_t put = offset ? ::pwrite(host, data.data(), total, *offset) : ::write(host, data.data(), total);
    return put < 0 ? -errno : put;
  }
  const int host = fs_.host_fd(fd);
  const ssize_t got = offset ? ::pread(host, data.data(), total, *offset) : ::read(host, data.data(), total);
  if (got < 0) return -errno;
  std::uint64_t at = 0;
  for (const auto& vector : vectors) {
    if (at >= static_cast<std::uint64_t>(got)) break;
    const std::uint64_t take = std::min<std::uint64_t>(vector.iov_len, static_cast<std::uint64_t>(got) - at);
    if (!copy_out(reinterpret_cast<std::uint64_t>(vector.iov_base), data.data() + at, take)) return -EFAULT;
    at += take;
  }
  return got;
}

std::int64_t Kernel::do_fstatat(int dirfd, std::uint64_t path_address, std::uint64_t stat_address, int flags) {
  int error = 0;
  auto path = read_path(path_address, error);
  if (!path) return -error;
  struct stat info {};
  if (path->empty()) {
    if (!(flags & AT_EMPTY_PATH)) return -ENOENT;
    if (dirfd == AT_FDCWD) {
      auto location = fs_.locate(AT_FDCWD, ".", true);
      if (!location.ok()) return -location.error;
      if (::fstatat(location.value.dirfd, location.value.empty_path ? "" : ".", &info, AT_EMPTY_PATH) != 0) return -errno;
    } else {
      const int host = fs_.host_fd(dirfd);
      if (host < 0) return -EBADF;
      if (::fstat(host, &info) != 0) return -errno;
    }
  } else {
    if (auto magic = fs_.magic_link_target(dirfd, *path); magic && *magic == fs_.exe_path() &&
                                                          !(flags & AT_SYMLINK_NOFOLLOW)) {
      *path = *magic;
      dirfd = AT_FDCWD;
    }
    const bool follow = !(flags & AT_SYMLINK_NOFOLLOW);
    auto location = fs_.locate(dirfd, *path, follow);
    if (!location.ok()) return -location.error;
    const int host_flags = (location.value.empty_path ? AT_EMPTY_PATH : 0) | (follow ? 0 : AT_SYMLINK_NOFOLLOW) |
                           (flags & AT_NO_AUTOMOUNT);
    if (::fstatat(location.value.dirfd, location.value.name.c_str(), &info, host_flags) != 0) return -errno;
  }
  return copy_out_stat(stat_address, info) ? 0 : -EFAULT;
}

bool Kernel::copy_out_stat(std::uint64_t address, const struct stat& info) {
  const arch::FileStatus status{
      static_cast<std::uint64_t>(info.st_dev),          static_cast<std::uint64_t>(info.st_ino),
      static_cast<std::uint64_t>(info.st_mode),         static_cast<std::uint64_t>(info.st_nlink),
      static_cast<std::uint64_t>(info.st_uid),          static_cast<std::uint64_t>(info.st_gid),
      static_cast<std::uint64_t>(info.st_rdev),         static_cast<std::uint64_t>(info.st_size),
      static_cast<std::uint64_t>(info.st_blksize),      static_cast<std::uint64_t>(info.st_blocks),
      static_cast<std::uint64_t>(info.st_atim.tv_sec),  static_cast<std::uint64_t>(info.st_atim.tv_nsec),
      static_cast<std::uint64_t>(info.st_mtim.tv_sec),  static_cast<std::uint64_t>(info.st_mtim.tv_nsec),
      static_cast<std::uint64_t>(info.st_ctim.tv_sec),  static_cast<std::uint64_t>(info.st_ctim.tv_nsec)};
  std::array<std::uint8_t, arch::kMaxStatBytes> bytes{};
  const std::size_t size = arch_.encode_stat(status, bytes);
  return copy_out(address, bytes.data(), size);
}

std::int64_t Kernel::do_statx(const SyscallArgs& a) {
  const int dirfd = as_int(a[0]);
  const int flags = as_int(a[2]);
  int error = 0;
  auto path = read_path(a[1], error);
  if (!path) return -error;
  struct statx info {};
  int host_dirfd = AT_FDCWD;
  std::string name = *path;
  int host_flags = flags;
  HostLocation location;
  if (path->empty()) {
    if (!(flags & AT_EMPTY_PATH)) return -ENOENT;
    if (dirfd == AT_FDCWD) {
      // The guest's working directory (inside the rootfs, not a host path).
      auto located = fs_.locate(AT_FDCWD, ".", true);
      if (!located.ok()) return -located.error;
      location = std::move(located.value);
      host_dirfd = location.dirfd;
      name = location.name;
    } else {
      host_dirfd = fs_.host_fd(dirfd);
      if (host_dirfd == -1) return -EBADF;
      name.clear();
    }
  } else {
    const bool follow = !(flags & AT_SYMLINK_NOFOLLOW);
    auto located = fs_.locate(dirfd, *path, follow);
    if (!located.ok()) return -located.error;
    location = std::move(located.value);
    host_dirfd = location.dirfd;
    name = location.name;
    if (location.empty_path) host_flags |= AT_EMPTY_PATH;
  }
  if (syscall(SYS_statx, host_dirfd, name.c_str(), host_flags, as_int(a[3]), &info) != 0) return -errno;
  // struct statx's fields (include/uapi/linux/stat.h), in the guest's byte order.
  to_guest_order(info, {4, 4, 8, 4, 4, 4, 2, 2, 8, 8, 8, 8, 8, 4, 4, 8, 4, 4, 8, 4, 4, 8, 4, 4, 4, 4, 4, 4, 8, 4, 4, 8});
  if (!copy_out(a[4], &info, sizeof info)) return -EFAULT;
  return 0;
}

std::int64_t Kernel::do_readlinkat(int dirfd, std::uint64_t path_address, std::uint64_t buffer, std::uint64_t size) {
  int error = 0;
  auto path = read_path(path_address, error);
  if (!path) return -error;
  if (static_cast<std::int64_t>(size) <= 0) return -EINVAL;
  std::string target;
  if (auto magic = fs_.magic_link_target(dirfd, *path)) {
    target = *magic;
  } else {
    auto location = fs_.locate(dirfd, *path, false);
    if (!location.ok()) return -location.error;
    char host_buffer[PATH_MAX];
    const ssize_t length = ::readlinkat(location.value.dirfd, location.value.name.c_str(), host_buffer, sizeof host_buffer);
    if (length < 0) return -errno;
    target.assign(host_buffer, static_cast<std::size_t>(length));
  }
  const std::size_t length = std::min<std::size_t>(target.size(), size);
  if (!copy_out(buffer, target.data(), length)) return -EFAULT;
  return static_cast<std::int64_t>(length);
}

std::int64_t Kernel::do_faccessat(int dirfd, std::uint64_t path_address, int mode, int flags) {
  int error = 0;
  auto path = read_path(path_address, error);
  if (!path) return -error;
  if (path->empty() && !(flags & AT_EMPTY_PATH)) return -ENOENT;
  auto location = fs_.locate(dirfd, *path, !(flags & AT_SYMLINK_NOFOLLOW));
  if (!location.ok()) return -location.error;
  const int host_flags = (flags & (AT_EACCESS | AT_SYMLINK_NOFOLLOW)) | (location.value.empty_path ? AT_EMPTY_PATH : 0);
  return host_result(syscall(SYS_faccessat2, location.value.dirfd, location.value.name.c_str(), mode, host_flags));
}

std::int64_t Kernel::do_getdents64(int fd, std::uint64_t buffer, std::uint64_t size) {
  const int host = fs_.host_fd(fd);
  if (host < 0) return -EBADF;
  size = std::min<std::uint64_t>(size, 1u << 20);
  scratch_.resize(size);
  const long got = syscall(SYS_getdents64, host, scratch_.data(), size);
  if (got < 0) return -errno;
  // struct linux_dirent64: d_ino u64 | d_off s64 | d_reclen u16 | d_type u8 | name.
  for (std::size_t at = 0; at + 19 <= static_cast<std::size_t>(got);) {
    std::uint16_t length = 0;
    std::memcpy(&length, scratch_.data() + at + 16, sizeof length);
    to_guest_order(std::span(scratch_.data() + at, 18), {8, 8, 2});
    if (length == 0) break;
    at += length;
  }
  if (!copy_out(buffer, scratch_.data(), static_cast<std::size_t>(got))) return -EFAULT;
  return got;
}

std::int64_t Kernel::do_fcntl(int fd, int command, std::uint64_t argument) {
  FdEntry* entry = fs_.entry(fd);
  if (!entry) return -EBADF;
  switch (command) {
    case F_DUPFD:
    case F_DUPFD_CLOEXEC: {
      auto copy = fs_.duplicate(fd, as_int(argument), command == F_DUPFD_CLOEXEC);
      return copy.ok() ? copy.value : -copy.error;
    }
    case F_GETFD: return entry->close_on_exec ? FD_CLOEXEC : 0;
    case F_SETFD: entry->close_on_exec = (argument & FD_CLOEXEC) != 0; return 0;
    case F_GETFL: {
      const int flags = ::fcntl(entry->host_fd, F_GETFL);
      return flags < 0 ? -errno : static_cast<std::int64_t>(arch::open_flags_to_guest(arch_, static_cast<unsigned>(flags)));
    }
    case F_SETFL:
      return host_result(::fcntl(entry->host_fd, F_SETFL, as_int(arch::open_flags_to_host(arch_, argument))));
    case F_GETPIPE_SZ: case F_SETPIPE_SZ: case F_GET_SEALS: case F_ADD_SEALS:
    case F_GETOWN: case F_SETOWN: case F_NOTIFY:
      return host_result(::fcntl(entry->host_fd, command, as_int(argument)));
    case F_GETLK: case F_SETLK: case F_SETLKW: case F_OFD_GETLK: case F_OFD_SETLK: case F_OFD_SETLKW: {
      struct flock lock {};
      if (!copy_in(argument, &lock, sizeof lock)) return -EFAULT;
      if (::fcntl(entry->host_fd, command, &lock) != 0) return -errno;
      if ((command == F_GETLK || command == F_OFD_GETLK) && !copy_out(argument, &lock, sizeof lock)) return -EFAULT;
      return 0;
    }
    default:
      note_once("fcntl command " + std::to_string(command) + " is not supported: returning EINVAL");
      return -EINVAL;
  }
}

std::int64_t Kernel::do_ioctl(int fd, std::uint64_t request, std::uint64_t argument) {
  FdEntry* entry = fs_.entry(fd);
  if (!entry) return -EBADF;
  const int host = entry->host_fd;
  // The guest's request numbers are its architecture's (mips: TCGETS 0x540d);
  // one the architecture does not list has no meaning here.
  const std::optional<std::uint64_t> host_request = arch::ioctl_request_to_host(arch_, request);
  switch (host_request.value_or(0)) {
    case TCGETS: {
      std::uint8_t termios[64] = {};
      if (::ioctl(host, TCGETS, termios) != 0) return -errno;
      if (!arch_.termios_to_guest) return copy_out(argument, termios, arch::kHostTermiosBytes) ? 0 : -EFAULT;
      std::array<std::uint8_t, arch::kMaxTermiosBytes> guest{};
      const std::size_t size = arch_.termios_to_guest(std::span(termios).first<arch::kHostTermiosBytes>(), guest);
      return copy_out(argument, guest.data(), size) ? 0 : -EFAULT;
    }
    case TCSETS: case TCSETSW: case TCSETSF: {
      std::uint8_t termios[64] = {};
      if (!arch_.termios_to_host) {
        if (!copy_in(argument, termios, arch::kHostTermiosBytes)) return -EFAULT;
      } else {
        std::array<std::uint8_t, arch::kMaxTermiosBytes> guest{};
        if (!copy_in(argument, guest.data(), arch_.termios_bytes)) return -EFAULT;
        arch_.termios_to_host(guest, std::span(termios).first<arch::kHostTermiosBytes>());
      }
      return host_result(::ioctl(host, *host_request, termios));
    }
    case TIOCGWINSZ: {
      struct winsize size {};
      if (::ioctl(host, TIOCGWINSZ, &size) != 0) return -errno;
      to_guest_order(size, {2});  // four unsigned shorts
      return copy_out(argument, &size, sizeof size) ? 0 : -EFAULT;
    }
    case TIOCSWINSZ: {
      struct winsize size {};
      if (!copy_in(argument, &size, sizeof size)) return -EFAULT;
      to_guest_order(size, {2});  // the same swap back to the host's order
      return host_result(::ioctl(host, TIOCSWINSZ, &size));
    }
    case TIOCGPGRP: case FIONREAD: {
      int value = 0;
      if (::ioctl(host, *host_request, &value) != 0) return -errno;
      to_guest_order(value, {4});
      return copy_out(argument, &value, sizeof value) ? 0 : -EFAULT;
    }
    case FIONBIO: {
      int value = 0;
      if (!copy_in(argument, &value, sizeof value)) return -EFAULT;
      to_guest_order(value, {4});
      return host_result(::ioctl(host, FIONBIO, &value));
    }
    case FIOCLEX: entry->close_on_exec = true; return 0;
    case FIONCLEX: entry->close_on_exec = false; return 0;
    default: {
      char hex[24];
      std::snprintf(hex, sizeof hex, "0x%llx", static_cast<unsigned long long>(request));
      note_once(std::string("ioctl ") + hex + " is not supported: returning ENOTTY");
      return -ENOTTY;
    }
  }
}

std::int64_t Kernel::do_pipe(std::uint64_t fds_address, int flags) {
  if (flags & ~(O_CLOEXEC | O_NONBLOCK | O_DIRECT)) return -EINVAL;
  int host[2];
  if (::pipe2(host, (flags & ~O_CLOEXEC) | O_CLOEXEC) != 0) return -errno;
  for (int& fd : host) {
    const int moved = ::fcntl(fd, F_DUPFD_CLOEXEC, 10);
    ::close(fd);
    fd = moved;
  }
  const bool close_on_exec = (flags & O_CLOEXEC) != 0;
  int guest[2] = {fs_.install(host[0], close_on_exec, ""), fs_.install(host[1], close_on_exec, "")};
  int stored[2] = {guest[0], guest[1]};
  to_guest_order(stored, {4});
  if (!copy_out(fds_address, stored, sizeof stored)) {
    fs_.close(guest[0]);
    fs_.close(guest[1]);
    return -EFAULT;
  }
  return 0;
}

std::int64_t Kernel::do_sendfile(int out_fd, int in_fd, std::uint64_t offset_address, std::uint64_t count) {
  const int out = fs_.host_fd(out_fd), in = fs_.host_fd(in_fd);
  if (out < 0 || in < 0) return -EBADF;
  count = std::min(count, kMaxIoChunk);
  if (offset_address) {
    off_t offset = 0;
    if (!copy_in(offset_address, &offset, sizeof offset)) return -EFAULT;
    to_guest_order(offset, {8});
    const ssize_t sent = ::sendfile(out, in, &offset, count);
    if (sent < 0) return -errno;
    to_guest_order(offset, {8});
    if (!copy_out(offset_address, &offset, sizeof offset)) return -EFAULT;
    return sent;
  }
  return host_result(::sendfile(out, in, nullptr, count));
}

std::int64_t Kernel::do_poll(std::uint64_t fds_address, std::uint64_t count, int timeout_ms) {
  if (count > 4096) return -EINVAL;
  std::vector<struct pollfd> fds(count);
  if (count && !copy_in(fds_address, fds.data(), count * sizeof(struct pollfd))) return -EFAULT;
  const std::span poll_bytes(reinterpret_cast<std::uint8_t*>(fds.data()), count * sizeof(struct pollfd));
  to_guest_order(poll_bytes, {4, 2, 2});  // struct pollfd: fd, events, revents
  std::vector<struct pollfd> host(fds);
  for (auto& entry : host) entry.fd = entry.fd < 0 ? -1 : fs_.host_fd(entry.fd);
  int ready = 0;
  if (timeout_ms == 0) {
    ready = ::poll(host.data(), count, 0);
  } else {
    std::optional<std::chrono::steady_clock::time_point> limit;
    if (timeout_ms > 0) limit = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    const WaitEnd end = wait_for_host(host, limit, &ready);
    if (end == WaitEnd::kWouldBlock) return kBlockAndRetry;
    if (end == WaitEnd::kInterrupted) return -EINTR;  // poll is never restarted (ERESTARTNOHAND)
  }
  if (ready < 0) return -errno;
  for (std::size_t i = 0; i < count; ++i)
    fds[i].revents = (fds[i].fd >= 0 && host[i].fd < 0) ? POLLNVAL : host[i].revents;
  to_guest_order(poll_bytes, {4, 2, 2});
  if (count && !copy_out(fds_address, fds.data(), count * sizeof(struct pollfd))) return -EFAULT;
  return ready;
}

// Reads the path at `address` and locates it (`follow`: a final symlink is followed).
SysResult<HostLocation> Kernel::locate_path(int dirfd, std::uint64_t address, bool follow) {
  int error = 0;
  auto path = read_path(address, error);
  if (!path) return {{}, error};
  return fs_.locate(dirfd, *path, follow);
}

// The operations on a named file, one helper for each family.
std::int64_t Kernel::do_path_op(SyscallId id, const SyscallArgs& a) {
  switch (id) {
    case SyscallId::unlink: case SyscallId::unlinkat: case SyscallId::rmdir:
      return do_unlink(id, a);
    case SyscallId::mkdir: case SyscallId::mkdirat:
      return do_mkdir(id, a);
    case SyscallId::rename: case SyscallId::renameat: case SyscallId::renameat2:
      return do_rename(id, a);
    case SyscallId::link: case SyscallId::linkat:
      return do_link(id, a);
    case SyscallId::symlink: case SyscallId::symlinkat:
      return do_symlink(id, a);
    case SyscallId::chmod: case SyscallId::fchmodat: case SyscallId::fchmodat2:
      return do_chmod(id, a);
    case SyscallId::chown: case SyscallId::lchown: case SyscallId::fchownat:
      return do_chown(id, a);
    case SyscallId::truncate:
      return do_truncate(id, a);
    case SyscallId::statfs:
      return do_statfs(a);
    case SyscallId::utimensat:
      return do_utimensat(id, a);
    case SyscallId::getxattr: case SyscallId::lgetxattr: case SyscallId::listxattr: case SyscallId::llistxattr:
      return do_getxattr(id, a);
    default:
      return -ENOSYS;
  }
}

std::int64_t Kernel::do_unlink(SyscallId id, const SyscallArgs& a) {
  const bool at = id == SyscallId::unlinkat;
  const int flags = id == SyscallId::rmdir ? AT_REMOVEDIR : at ? as_int(a[2]) : 0;
  auto location = locate_path(at ? as_int(a[0]) : AT_FDCWD, at ? a[1] : a[0], false);
  if (!location.ok()) return -location.error;
  if (location.value.empty_path) return (flags & AT_REMOVEDIR) ? -EBUSY : -EISDIR;
  if (fs_.read_only()) return refuse_on_read_only(id);  // Linux: before looking up the name
  return host_result(::unlinkat(location.value.dirfd, location.value.name.c_str(), flags));
}

std::int64_t Kernel::do_mkdir(SyscallId id, const SyscallArgs& a) {
  const bool at = id == SyscallId::mkdirat;
  auto location = locate_path(at ? as_int(a[0]) : AT_FDCWD, at ? a[1] : a[0], false);
  if (!location.ok()) return -location.error;
  if (location.value.empty_path) return -EEXIST;
  if (fs_.read_only()) return location_exists(location.value) ? -EEXIST : refuse_on_read_only(id);
  const int mode = as_int(at ? a[2] : a[1]) & ~umask_ & 07777;
  return host_result(::mkdirat(location.value.dirfd, location.value.name.c_str(), static_cast<mode_t>(mode)));
}

std::int64_t Kernel::do_rename(SyscallId id, const SyscallArgs& a) {
  const bool at = id != SyscallId::rename;
  auto from = locate_path(at ? as_int(a[0]) : AT_FDCWD, at ? a[1] : a[0], false);
  if (!from.ok()) return -from.error;
  auto to = locate_path(at ? as_int(a[2]) : AT_FDCWD, at ? a[3] : a[1], false);
  if (!to.ok()) return -to.error;
  if (from.value.empty_path || to.value.empty_path) return -EBUSY;
  if (fs_.read_only()) return refuse_on_read_only(id);  // Linux: before looking up the names
  const unsigned flags = id == SyscallId::renameat2 ? static_cast<unsigned>(a[4]) : 0;
  return host_result(syscall(SYS_renameat2, from.value.dirfd, from.value.name.c_str(), to.value.dirfd,
                             to.value.name.c_str(), flags));
}

std::int64_t Kernel::do_link(SyscallId id, const SyscallArgs& a) {
  const bool at = id == SyscallId::linkat;
  const int flags = at ? as_int(a[4]) : 0;
  auto from = locate_path(at ? as_int(a[0]) : AT_FDCWD, at ? a[1] : a[0], (flags & AT_SYMLINK_FOLLOW) != 0);
  if (!from.ok()) return -from.error;
  auto to = locate_path(at ? as_int(a[2]) : AT_FDCWD, at ? a[3] : a[1], false);
  if (!to.ok()) return -to.error;
  if (to.value.empty_path) return -EEXIST;
  if (fs_.read_only()) {
    if (!location_exists(from.value)) return -ENOENT;
    return location_exists(to.value) ? -EEXIST : refuse_on_read_only(id);
  }
  if (from.value.empty_path)
    return host_result(::linkat(AT_FDCWD, host_path_for(from.value).c_str(), to.value.dirfd,
                                to.value.name.c_str(), AT_SYMLINK_FOLLOW));
  return host_result(::linkat(from.value.dirfd, from.value.name.c_str(), to.value.dirfd, to.value.name.c_str(), 0));
}

std::int64_t Kernel::do_symlink(SyscallId id, const SyscallArgs& a) {
  int error = 0;
  auto target = read_path(a[0], error);
  if (!target) return -error;
  const bool at = id == SyscallId::symlinkat;
  auto location = locate_path(at ? as_int(a[1]) : AT_FDCWD, at ? a[2] : a[1], false);
  if (!location.ok()) return -location.error;
  if (location.value.empty_path) return -EEXIST;
  if (fs_.read_only()) return location_exists(location.value) ? -EEXIST : refuse_on_read_only(id);
  return host_result(::symlinkat(target->c_str(), location.value.dirfd, location.value.name.c_str()));
}

std::int64_t Kernel::do_chmod(SyscallId id, const SyscallArgs& a) {
  const bool at = id != SyscallId::chmod;
  const int flags = id == SyscallId::fchmodat2 ? as_int(a[3]) : 0;
  const bool follow = !(flags & AT_SYMLINK_NOFOLLOW);
  auto location = locate_path(at ? as_int(a[0]) : AT_FDCWD, at ? a[1] : a[0], follow);
  if (!location.ok()) return -location.error;
  if (fs_.read_only()) return location_exists(location.value) ? refuse_on_read_only(id) : -ENOENT;
  const auto mode = static_cast<mode_t>(as_int(at ? a[2] : a[1]) & 07777);
  if (follow || location.value.empty_path) return host_result(::chmod(host_path_for(location.value).c_str(), mode));
  // Not following: the host's chmod on "/proc/self/fd/N/name" would follow a
  // symlink there on the host, outside the rootfs. Pin the name itself first;
  // Linux does not change a symlink's mode (EOPNOTSUPP).
  const int pinned = ::openat(location.value.dirfd, location.value.name.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC);
  if (pinned < 0) return -errno;
  HostFd owned(pinned);
  struct stat info {};
  if (::fstat(pinned, &info) != 0) return -errno;
  if (S_ISLNK(info.st_mode)) return -EOPNOTSUPP;
  return host_result(::chmod(("/proc/self/fd/" + std::to_string(pinned)).c_str(), mode));
}

std::int64_t Kernel::do_chown(SyscallId id, const SyscallArgs& a) {
  const bool at = id == SyscallId::fchownat;
  const int flags = at ? as_int(a[4]) : 0;
  const bool follow = id == SyscallId::chown || (at && !(flags & AT_SYMLINK_NOFOLLOW));
  auto location = locate_path(at ? as_int(a[0]) : AT_FDCWD, at ? a[1] : a[0], follow);
  if (!location.ok()) return -location.error;
  const auto owner = static_cast<uid_t>(at ? a[2] : a[1]);
  const auto group = static_cast<gid_t>(at ? a[3] : a[2]);
  if (fs_.read_only()) return location_exists(location.value) ? refuse_on_read_only(id) : -ENOENT;
  const int host_flags = (location.value.empty_path ? AT_EMPTY_PATH : 0) | (follow ? 0 : AT_SYMLINK_NOFOLLOW);
  return host_result(::fchownat(location.value.dirfd, location.value.name.c_str(), owner, group, host_flags));
}

std::int64_t Kernel::do_truncate(SyscallId id, const SyscallArgs& a) {
  auto location = locate_path(AT_FDCWD, a[0], true);
  if (!location.ok()) return -location.error;
  if (fs_.read_only()) return refuse_on_read_only(id);
  return host_result(::truncate(host_path_for(location.value).c_str(), static_cast<off_t>(a[1])));
}

std::int64_t Kernel::do_statfs(const SyscallArgs& a) {
  auto location = locate_path(AT_FDCWD, a[0], true);
  if (!location.ok()) return -location.error;
  struct statfs info {};
  if (::statfs(host_path_for(location.value).c_str(), &info) != 0) return -errno;
  return copy_out(a[1], &info, sizeof info) ? 0 : -EFAULT;
}

std::int64_t Kernel::do_utimensat(SyscallId id, const SyscallArgs& a) {
  const int dirfd = as_int(a[0]);
  const int flags = as_int(a[3]);
  struct timespec times[2];
  const bool has_times = a[2] != 0;
  if (has_times && !copy_in(a[2], times, sizeof times)) return -EFAULT;
  if (a[1] == 0) {  // futimens(dirfd)
    const int host = fs_.host_fd(dirfd);
    if (host < 0) return -EBADF;
    if (fs_.read_only()) return refuse_on_read_only(id);
    return host_result(::futimens(host, has_times ? times : nullptr));
  }
  auto location = locate_path(dirfd, a[1], !(flags & AT_SYMLINK_NOFOLLOW));
  if (!location.ok()) return -location.error;
  if (fs_.read_only()) return location_exists(location.value) ? refuse_on_read_only(id) : -ENOENT;
  const int host_flags = (location.value.empty_path ? AT_EMPTY_PATH : 0) | (flags & AT_SYMLINK_NOFOLLOW);
  return host_result(::utimensat(location.value.dirfd, location.value.name.c_str(), has_times ? times : nullptr,
                                 host_flags));
}

std::int64_t Kernel::do_getxattr(SyscallId id, const SyscallArgs& a) {
  const bool follow = id == SyscallId::getxattr || id == SyscallId::listxattr;
  auto location = locate_path(AT_FDCWD, a[0], follow);
  if (!location.ok()) return -location.error;
  const std::string host_path = host_path_for(location.value);
  const bool is_get = id == SyscallId::getxattr || id == SyscallId::lgetxattr;
  std::string name;
  if (is_get) {
    auto attribute = memory_.read_string(a[1], 256);
    if (!attribute) return -EFAULT;
    name = *attribute;
  }
  const std::uint64_t size = std::min<std::uint64_t>(is_get ? a[3] : a[2], 65536);
  std::vector<char> value(size);
  const ssize_t got = is_get ? (follow ? ::getxattr : ::lgetxattr)(host_path.c_str(), name.c_str(), value.data(), size)
                             : (follow ? ::listxattr : ::llistxattr)(host_path.c_str(), value.data(), size);
  if (got < 0) return -errno;
  if (size && !copy_out(is_get ? a[2] : a[1], value.data(), static_cast<std::size_t>(got))) return -EFAULT;
  return got;
}

std::optional<std::int64_t> Kernel::file_syscall(SyscallId id, const SyscallArgs& a) {
  if (auto result = read_write_syscall(id, a)) return result;
  if (auto result = descriptor_syscall(id, a)) return result;
  if (auto result = path_syscall(id, a)) return result;
  if (auto result = poll_syscall(id, a)) return result;
  return std::nullopt;
}

// Reading, writing, seeking and copying through descriptors.
std::optional<std::int64_t> Kernel::read_write_syscall(SyscallId id, const SyscallArgs& a) {
  const int fd = as_int(a[0]);
  switch (id) {
    case SyscallId::read: return do_read(fd, a[1], a[2], std::nullopt);
    case SyscallId::write: return do_write(fd, a[1], a[2], std::nullopt);
    case SyscallId::pread64: return do_read(fd, a[1], a[2], static_cast<std::int64_t>(a[3]));
    case SyscallId::pwrite64: return do_write(fd, a[1], a[2], static_cast<std::int64_t>(a[3]));
    case SyscallId::readv: return do_vector_io(fd, a[1], a[2], false, std::nullopt);
    case SyscallId::writev: return do_vector_io(fd, a[1], a[2], true, std::nullopt);
    case SyscallId::preadv: return do_vector_io(fd, a[1], a[2], false, static_cast<std::int64_t>(a[3]));
    case SyscallId::pwritev: return do_vector_io(fd, a[1], a[2], true, static_cast<std::int64_t>(a[3]));
    case SyscallId::lseek: {
      const int host = fs_.host_fd(fd);
      if (host < 0) return -EBADF;
      return host_result(::lseek(host, static_cast<off_t>(a[1]), as_int(a[2])));
    }
    case SyscallId::sendfile: return do_sendfile(fd, as_int(a[1]), a[2], a[3]);
    case SyscallId::copy_file_range: return do_copy_file_range(a);
    default: return std::nullopt;
  }
}

// Opening, closing and duplicating descriptors, pipes, and the operations on
// one open descriptor.
std::optional<std::int64_t> Kernel::descriptor_syscall(SyscallId id, const SyscallArgs& a) {
  const int fd = as_int(a[0]);
  switch (id) {
    case SyscallId::open: return do_openat(AT_FDCWD, a[0], as_int(arch::open_flags_to_host(arch_, a[1])), as_int(a[2]));
    case SyscallId::creat: return do_openat(AT_FDCWD, a[0], O_CREAT | O_WRONLY | O_TRUNC, as_int(a[1]));
    case SyscallId::openat: return do_openat(fd, a[1], as_int(arch::open_flags_to_host(arch_, a[2])), as_int(a[3]));
    case SyscallId::close: return -fs_.close(fd);
    case SyscallId::close_range: return do_close_range(a);
    case SyscallId::fstat: {
      const int host = fs_.host_fd(fd);
      if (host < 0) return -EBADF;
      struct stat info {};
      if (::fstat(host, &info) != 0) return -errno;
      return copy_out_stat(a[1], info) ? 0 : -EFAULT;
    }
    case SyscallId::getdents64: return do_getdents64(fd, a[1], a[2]);
    case SyscallId::fcntl: return do_fcntl(fd, as_int(a[1]), a[2]);
    case SyscallId::ioctl: return do_ioctl(fd, a[1], a[2]);
    case SyscallId::dup: {
      auto copy = fs_.duplicate(fd, 0, false);
      return copy.ok() ? copy.value : -copy.error;
    }
    case SyscallId::dup2: {
      if (fs_.host_fd(fd) < 0) return -EBADF;
      auto copy = fs_.duplicate_to(fd, as_int(a[1]), false);
      return copy.ok() ? copy.value : -copy.error;
    }
    case SyscallId::dup3: {
      if (fd == as_int(a[1])) return -EINVAL;
      if (a[2] & ~static_cast<std::uint64_t>(O_CLOEXEC)) return -EINVAL;
      auto copy = fs_.duplicate_to(fd, as_int(a[1]), (a[2] & O_CLOEXEC) != 0);
      return copy.ok() ? copy.value : -copy.error;
    }
    case SyscallId::pipe: return do_pipe(a[0], 0);
    case SyscallId::pipe2: return do_pipe(a[0], as_int(arch::open_flags_to_host(arch_, a[1])));  // (mips: O_NONBLOCK 0x80)
    case SyscallId::fchdir: return -fs_.fchdir(fd);
    case SyscallId::fchmod: case SyscallId::fchown: case SyscallId::ftruncate: case SyscallId::fsync:
    case SyscallId::fdatasync: case SyscallId::flock: case SyscallId::fallocate: case SyscallId::fadvise64:
    case SyscallId::fstatfs: case SyscallId::fgetxattr:
      return do_descriptor_op(id, a);
    default: return std::nullopt;
  }
}

// Paths: stat, access, links, the working directory and umask, and the
// operations on a named file (do_path_op).
std::optional<std::int64_t> Kernel::path_syscall(SyscallId id, const SyscallArgs& a) {
  const int fd = as_int(a[0]);
  switch (id) {
    case SyscallId::stat: return do_fstatat(AT_FDCWD, a[0], a[1], 0);
    case SyscallId::lstat: return do_fstatat(AT_FDCWD, a[0], a[1], AT_SYMLINK_NOFOLLOW);
    case SyscallId::newfstatat: return do_fstatat(fd, a[1], a[2], as_int(a[3]));
    case SyscallId::statx: return do_statx(a);
    case SyscallId::readlink: return do_readlinkat(AT_FDCWD, a[0], a[1], a[2]);
    case SyscallId::readlinkat: return do_readlinkat(fd, a[1], a[2], a[3]);
    case SyscallId::access: return do_faccessat(AT_FDCWD, a[0], as_int(a[1]), 0);
    case SyscallId::faccessat: return do_faccessat(fd, a[1], as_int(a[2]), 0);
    case SyscallId::faccessat2: return do_faccessat(fd, a[1], as_int(a[2]), as_int(a[3]));
    case SyscallId::getcwd: {
      const std::string& cwd = fs_.cwd();
      if (a[1] < cwd.size() + 1) return -ERANGE;
      if (!copy_out(a[0], cwd.c_str(), cwd.size() + 1)) return -EFAULT;
      return static_cast<std::int64_t>(cwd.size() + 1);
    }
    case SyscallId::chdir: {
      int error = 0;
      auto path = read_path(a[0], error);
      if (!path) return -error;
      return -fs_.chdir(*path);
    }
    case SyscallId::umask: {
      const int old = umask_;
      umask_ = as_int(a[0]) & 0777;
      return old;
    }
    case SyscallId::unlink: case SyscallId::unlinkat: case SyscallId::rmdir: case SyscallId::mkdir:
    case SyscallId::mkdirat: case SyscallId::rename: case SyscallId::renameat: case SyscallId::renameat2:
    case SyscallId::link: case SyscallId::linkat: case SyscallId::symlink: case SyscallId::symlinkat:
    case SyscallId::chmod: case SyscallId::fchmodat: case SyscallId::fchmodat2: case SyscallId::chown:
    case SyscallId::lchown: case SyscallId::fchownat: case SyscallId::truncate: case SyscallId::statfs:
    case SyscallId::utimensat: case SyscallId::getxattr: case SyscallId::lgetxattr: case SyscallId::listxattr:
    case SyscallId::llistxattr:
      return do_path_op(id, a);
    default: return std::nullopt;
  }
}

std::optional<std::int64_t> Kernel::poll_syscall(SyscallId id, const SyscallArgs& a) {
  switch (id) {
    case SyscallId::poll: return do_poll(a[0], a[1], as_int(a[2]));
    case SyscallId::ppoll: return do_ppoll(a);
    default: return std::nullopt;
  }
}

std::int64_t Kernel::do_close_range(const SyscallArgs& a) {
  const auto first = static_cast<std::uint32_t>(a[0]), last = static_cast<std::uint32_t>(a[1]);
  if (first > last) return -EINVAL;
  for (std::uint64_t guest = first; guest <= last && guest < (1u << 20); ++guest) {
    if (a[2] & 4 /* CLOSE_RANGE_CLOEXEC */) {
      if (FdEntry* entry = fs_.entry(static_cast<int>(guest))) entry->close_on_exec = true;
    } else {
      fs_.close(static_cast<int>(guest));
    }
  }
  return 0;
}

// Operations on one descriptor, passed to the host descriptor.
std::int64_t Kernel::do_descriptor_op(SyscallId id, const SyscallArgs& a) {
  const int host = fs_.host_fd(as_int(a[0]));
  if (host < 0) return -EBADF;
  // --read-only: mode and owner changes are refused; size changes only through a
  // descriptor open for writing (the others fail on the host, as they would on Linux).
  const bool writable = (::fcntl(host, F_GETFL) & O_ACCMODE) != O_RDONLY;
  if (fs_.read_only() && (id == SyscallId::fchmod || id == SyscallId::fchown ||
                          ((id == SyscallId::ftruncate || id == SyscallId::fallocate) && writable)))
    return refuse_on_read_only(id);
  switch (id) {
    case SyscallId::fchmod: return host_result(::fchmod(host, static_cast<mode_t>(a[1] & 07777)));
    case SyscallId::fchown: return host_result(::fchown(host, static_cast<uid_t>(a[1]), static_cast<gid_t>(a[2])));
    case SyscallId::ftruncate: return host_result(::ftruncate(host, static_cast<off_t>(a[1])));
    case SyscallId::fsync: return host_result(::fsync(host));
    case SyscallId::fdatasync: return host_result(::fdatasync(host));
    case SyscallId::flock: return host_result(::flock(host, as_int(a[1])));
    case SyscallId::fallocate:
      return host_result(::fallocate(host, as_int(a[1]), static_cast<off_t>(a[2]), static_cast<off_t>(a[3])));
    case SyscallId::fadvise64:
      return -posix_fadvise(host, static_cast<off_t>(a[1]), static_cast<off_t>(a[2]), as_int(a[3]));
    case SyscallId::fstatfs: {
      struct statfs info {};
      if (::fstatfs(host, &info) != 0) return -errno;
      return copy_out(a[1], &info, sizeof info) ? 0 : -EFAULT;
    }
    default: {  // fgetxattr
      auto attribute = memory_.read_string(a[1], 256);
      if (!attribute) return -EFAULT;
      const std::uint64_t size = std::min<std::uint64_t>(a[3], 65536);
      std::vector<char> value(size);
      const ssize_t got = ::fgetxattr(host, attribute->c_str(), value.data(), size);
      if (got < 0) return -errno;
      if (size && !copy_out(a[2], value.data(), static_cast<std::size_t>(got))) return -EFAULT;
      return got;
    }
  }
}

// Offsets through the guest's pointers; done with the host call on host descriptors.
std::int64_t Kernel::do_copy_file_range(const SyscallArgs& a) {
  const int in = fs_.host_fd(as_int(a[0])), out = fs_.host_fd(as_int(a[2]));
  if (in < 0 || out < 0) return -EBADF;
  loff_t in_offset = 0, out_offset = 0;
  if (a[1] && !copy_in(a[1], &in_offset, sizeof in_offset)) return -EFAULT;
  if (a[3] && !copy_in(a[3], &out_offset, sizeof out_offset)) return -EFAULT;
  const ssize_t copied = ::copy_file_range(in, a[1] ? &in_offset : nullptr, out, a[3] ? &out_offset : nullptr,
                                           std::min<std::uint64_t>(a[4], kMaxIoChunk), static_cast<unsigned>(a[5]));
  if (copied < 0) return -errno;
  if (a[1] && !copy_out(a[1], &in_offset, sizeof in_offset)) return -EFAULT;
  if (a[3] && !copy_out(a[3], &out_offset, sizeof out_offset)) return -EFAULT;
  return copied;
}

std::int64_t Kernel::do_ppoll(const SyscallArgs& a) {
  int timeout_ms = -1;
  if (a[2]) {
    struct timespec timeout {};
    if (!copy_in(a[2], &timeout, sizeof timeout)) return -EFAULT;
    to_guest_order(timeout, {8});
    timeout_ms = static_cast<int>(timeout.tv_sec * 1000 + timeout.tv_nsec / 1000000);
  }
  // The signal mask for the wait (glibc's pause() on architectures with no
  // pause syscall is ppoll(NULL, 0, NULL, NULL)).
  std::optional<std::uint64_t> saved_mask;
  if (a[3]) {
    if (a[4] != arch_.signal_abi.sigset_bytes) return -EINVAL;
    std::uint8_t bytes[16] = {};
    if (!copy_in(a[3], bytes, a[4])) return -EFAULT;
    saved_mask = signals_.blocked;
    signals_.blocked = read_guest_sigset(std::span(bytes, 8));
  }
  const std::int64_t result = do_poll(a[0], a[1], timeout_ms);
  if (saved_mask) {
    if (result == -EINTR) signals_.mask_after_handler = *saved_mask;  // restored by the handler's frame
    else signals_.blocked = *saved_mask;
  }
  return result;
}

}  // namespace tracecorn::linux_layer
