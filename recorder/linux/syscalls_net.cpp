// Role: the network family of syscalls (socket, connect, bind, listen, accept,
// sendto, recvfrom, shutdown, getsockname, getpeername, socketpair, setsockopt,
// getsockopt, sendmsg, recvmsg).
// Containment: without ProcessConfig::allow_net (--allow-net) every one of them
// is refused with EACCES and named once on stderr, so a guest reaches no network
// and no host socket. With it they pass through to host sockets, which the guest
// sees as ordinary descriptors in its table (GuestFs). Under --rootfs a Unix
// socket address naming a path is refused (EACCES, named once): the host would
// resolve it outside the tree; abstract and unnamed Unix sockets pass.
// Struct layouts: socket addresses are copied as bytes (the same on every
// little-endian guest supported); socklen_t is 32 bits everywhere. sendmsg and
// recvmsg (struct msghdr, control messages) are not supported yet: EOPNOTSUPP,
// named once.
// Who calls it: Kernel::dispatch, on the emulation thread. Blocking calls
// (accept, recvfrom) block that thread, as read() does.
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "recorder/linux/kernel.h"
#include "recorder/linux/syscall_helpers.h"

namespace tracecorn::linux_layer {

using arch::SyscallId;

namespace {

constexpr std::uint64_t kMaxNetChunk = 64ull << 20;  // one send or receive moves at most this much
constexpr std::uint32_t kMaxOptionBytes = 4096;      // setsockopt/getsockopt values


bool is_net_syscall(SyscallId id) {
  switch (id) {
    case SyscallId::socket: case SyscallId::connect: case SyscallId::accept: case SyscallId::bind:
    case SyscallId::listen: case SyscallId::sendto: case SyscallId::recvfrom: case SyscallId::socketpair:
    case SyscallId::sendmsg: case SyscallId::recvmsg: case SyscallId::shutdown: case SyscallId::getsockname:
    case SyscallId::getpeername: case SyscallId::setsockopt: case SyscallId::getsockopt:
      return true;
    default:
      return false;
  }
}


}  // namespace

std::int64_t Kernel::copy_in_sockaddr(std::uint64_t address, std::uint64_t length, sockaddr_storage& out,
                                      socklen_t& out_length) {
  if (length > sizeof out) return -EINVAL;
  out = {};
  if (length && !copy_in(address, &out, static_cast<std::size_t>(length))) return -EFAULT;
  out_length = static_cast<socklen_t>(length);
  if (fs_.has_rootfs() && out.ss_family == AF_UNIX && length > offsetof(sockaddr_un, sun_path) &&
      reinterpret_cast<const sockaddr_un&>(out).sun_path[0] != '\0') {
    note_once("a Unix socket address naming a path is refused under --rootfs (EACCES)");
    return -EACCES;
  }
  return 0;
}

std::int64_t Kernel::copy_out_sockaddr(std::uint64_t address, std::uint64_t length_address,
                                       const sockaddr_storage& in, socklen_t in_length) {
  if (!address) return 0;
  std::uint32_t room = 0;
  if (!copy_in(length_address, &room, sizeof room)) return -EFAULT;
  if (static_cast<std::int32_t>(room) < 0) return -EINVAL;
  const std::size_t bytes = std::min<std::size_t>(room, in_length);
  if (bytes && !copy_out(address, &in, bytes)) return -EFAULT;
  const std::uint32_t actual = in_length;
  return copy_out(length_address, &actual, sizeof actual) ? 0 : -EFAULT;
}

bool Kernel::on_local_socket(SyscallId id, int fd) const {
  switch (id) {
    case SyscallId::sendto: case SyscallId::recvfrom: case SyscallId::sendmsg: case SyscallId::recvmsg:
    case SyscallId::getsockname: case SyscallId::getpeername: case SyscallId::shutdown:
    case SyscallId::setsockopt: case SyscallId::getsockopt: {
      const int host = fs_.host_fd(fd);
      int domain = 0;
      socklen_t length = sizeof domain;
      return host >= 0 && ::getsockopt(host, SOL_SOCKET, SO_DOMAIN, &domain, &length) == 0 && domain == AF_UNIX;
    }
    default: return false;
  }
}

std::optional<std::int64_t> Kernel::net_syscall(SyscallId id, const SyscallArgs& a) {
  if (!is_net_syscall(id)) return std::nullopt;
  const std::string name(arch::syscall_name(id));
  // A pair of connected local sockets reaches nothing outside the guest
  // (event loops make one to wake themselves): always allowed, and so is
  // what reads, writes or describes such a socket (without --allow-net no
  // other socket exists); what could give one a name or a peer is not.
  const bool local_pair = (id == SyscallId::socketpair && as_int(a[0]) == AF_UNIX) || on_local_socket(id, as_int(a[0]));
  if (!config_.allow_net && !local_pair) {
    note_once("network syscall " + name + " refused with EACCES (--allow-net lets the guest use the host's network)");
    return -EACCES;
  }
  const int fd = as_int(a[0]);
  const auto install_socket = [&](int host, bool close_on_exec) -> std::int64_t {
    host = GuestFs::lift_host_fd(host);
    if (host < 0) return -errno;
    return fs_.install(host, close_on_exec, "");
  };
  if (id == SyscallId::socket) {
    const int type = as_int(a[1]);
    return install_socket(::socket(as_int(a[0]), type | SOCK_CLOEXEC, as_int(a[2])), (type & SOCK_CLOEXEC) != 0);
  }
  if (id == SyscallId::socketpair) {
    const int type = as_int(a[1]);
    int host[2] = {-1, -1};
    if (::socketpair(as_int(a[0]), type | SOCK_CLOEXEC, as_int(a[2]), host) != 0) return -errno;
    const std::int64_t first = install_socket(host[0], (type & SOCK_CLOEXEC) != 0);
    if (first < 0) {
      ::close(host[1]);
      return first;
    }
    const std::int64_t second = install_socket(host[1], (type & SOCK_CLOEXEC) != 0);
    if (second < 0) {
      fs_.close(static_cast<int>(first));
      return second;
    }
    if (!copy_out_words32(a[3], {static_cast<std::uint64_t>(first), static_cast<std::uint64_t>(second)})) {
      fs_.close(static_cast<int>(first));
      fs_.close(static_cast<int>(second));
      return -EFAULT;
    }
    return 0;
  }
  const int host = fs_.host_fd(fd);
  if (host < 0) return -EBADF;
  const auto result = [](long value) -> std::int64_t { return value < 0 ? -errno : value; };
  switch (id) {
    case SyscallId::connect: case SyscallId::bind: {
      sockaddr_storage address{};
      socklen_t length = 0;
      if (const std::int64_t error = copy_in_sockaddr(a[1], a[2], address, length)) return error;
      const auto* raw = reinterpret_cast<const sockaddr*>(&address);
      return result(id == SyscallId::connect ? ::connect(host, raw, length) : ::bind(host, raw, length));
    }
    case SyscallId::listen: return result(::listen(host, as_int(a[1])));
    case SyscallId::shutdown: return result(::shutdown(host, as_int(a[1])));
    case SyscallId::accept: {
      sockaddr_storage address{};
      socklen_t length = sizeof address;
      const int accepted = ::accept4(host, reinterpret_cast<sockaddr*>(&address), &length, SOCK_CLOEXEC);
      if (accepted < 0) return -errno;
      const std::int64_t guest = install_socket(accepted, false);
      if (guest < 0) return guest;
      if (const std::int64_t error = copy_out_sockaddr(a[1], a[2], address, length)) {
        fs_.close(static_cast<int>(guest));
        return error;
      }
      return guest;
    }
    case SyscallId::getsockname: case SyscallId::getpeername: {
      sockaddr_storage address{};
      socklen_t length = sizeof address;
      auto* raw = reinterpret_cast<sockaddr*>(&address);
      if ((id == SyscallId::getsockname ? ::getsockname(host, raw, &length) : ::getpeername(host, raw, &length)) != 0)
        return -errno;
      if (!a[1]) return -EFAULT;
      if (const std::int64_t error = copy_out_sockaddr(a[1], a[2], address, length)) return error;
      return 0;
    }
    case SyscallId::sendto: {
      const std::uint64_t count = std::min(a[2], kMaxNetChunk);
      std::vector<std::uint8_t> data(count);
      if (count && !copy_in(a[1], data.data(), count)) return -EFAULT;
      sockaddr_storage address{};
      socklen_t length = 0;
      if (a[4])
        if (const std::int64_t error = copy_in_sockaddr(a[4], a[5], address, length)) return error;
      return result(::sendto(host, data.data(), count, as_int(a[3]),
                             a[4] ? reinterpret_cast<const sockaddr*>(&address) : nullptr, length));
    }
    case SyscallId::recvfrom: {
      const std::uint64_t count = std::min(a[2], kMaxNetChunk);
      std::vector<std::uint8_t> data(count);
      sockaddr_storage address{};
      socklen_t length = sizeof address;
      const ssize_t got = ::recvfrom(host, data.data(), count, as_int(a[3]),
                                     a[4] ? reinterpret_cast<sockaddr*>(&address) : nullptr, a[4] ? &length : nullptr);
      if (got < 0) return -errno;
      // Bytes beyond what was returned (MSG_TRUNC on datagrams) are not copied.
      const std::size_t copied = std::min<std::size_t>(static_cast<std::size_t>(got), count);
      if (copied && !copy_out(a[1], data.data(), copied)) return -EFAULT;
      if (a[4])
        if (const std::int64_t error = copy_out_sockaddr(a[4], a[5], address, length)) return error;
      return got;
    }
    case SyscallId::setsockopt: {
      const std::uint32_t length = static_cast<std::uint32_t>(a[4]);
      if (length > kMaxOptionBytes) return -EINVAL;
      std::vector<std::uint8_t> value(length);
      if (length && !copy_in(a[3], value.data(), length)) return -EFAULT;
      return result(::setsockopt(host, as_int(a[1]), as_int(a[2]), value.data(), length));
    }
    case SyscallId::getsockopt: {
      std::uint32_t room = 0;
      if (!copy_in(a[4], &room, sizeof room)) return -EFAULT;
      if (static_cast<std::int32_t>(room) < 0) return -EINVAL;
      socklen_t length = std::min(room, kMaxOptionBytes);
      std::vector<std::uint8_t> value(std::max<socklen_t>(length, 1));
      if (::getsockopt(host, as_int(a[1]), as_int(a[2]), value.data(), &length) != 0) return -errno;
      if (length && !copy_out(a[3], value.data(), length)) return -EFAULT;
      const std::uint32_t actual = length;
      return copy_out(a[4], &actual, sizeof actual) ? 0 : -EFAULT;
    }
    default:  // sendmsg, recvmsg
      note_once(name + " is not supported yet: returning EOPNOTSUPP");
      return -EOPNOTSUPP;
  }
}

}  // namespace tracecorn::linux_layer
