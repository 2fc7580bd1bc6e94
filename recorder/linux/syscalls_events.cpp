// Role: event descriptors and I/O multiplexing beyond poll: eventfd and
// eventfd2, epoll (create, create1, ctl, wait, pwait) and timerfd (create,
// settime, gettime, and the time64 variants), on host descriptors of the same
// kinds: the host kernel keeps the counters, the interest lists and the
// timers; the guest's epoll data words come back to it as it gave them.
// Waits go through wait_for_host (other guest threads run meanwhile; a
// signal interrupts them with EINTR).
// Threads: the emulation thread.
// Invariants: struct epoll_event in the guest's layout (packed on x86-64 and
// i386: ArchInfo::syscall_abi.epoll_event_packed) and byte order; the 8-byte
// counters read from and written to eventfd and timerfd descriptors are in
// the guest's byte order (FdEntry::counter_words).
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <cerrno>
#include <fcntl.h>

#include "recorder/linux/kernel.h"
#include "recorder/linux/syscall_helpers.h"

namespace tracecorn::linux_layer {

using arch::SyscallId;

namespace {


timespec to_timespec(std::chrono::nanoseconds value) {
  return timespec{static_cast<time_t>(value.count() / 1'000'000'000), static_cast<long>(value.count() % 1'000'000'000)};
}
std::chrono::nanoseconds from_timespec(const timespec& value) {
  return std::chrono::seconds(value.tv_sec) + std::chrono::nanoseconds(value.tv_nsec);
}

}  // namespace

std::int64_t Kernel::install_event_fd(int host, std::uint64_t guest_flags, const char* name, bool counter_words) {
  host = GuestFs::lift_host_fd(host);
  if (host < 0) return -errno;
  const bool close_on_exec = (arch::open_flags_to_host(arch_, guest_flags) & O_CLOEXEC) != 0;
  const int guest = fs_.install(host, close_on_exec, name);
  fs_.entry(guest)->counter_words = counter_words;
  return guest;
}

std::optional<std::int64_t> Kernel::event_syscall(SyscallId id, const SyscallArgs& a) {
  switch (id) {
    case SyscallId::eventfd: case SyscallId::eventfd2: {
      const std::uint64_t flags = id == SyscallId::eventfd ? 0 : a[1];
      const int host_flags = static_cast<int>(arch::open_flags_to_host(arch_, flags));
      if (host_flags & ~(EFD_CLOEXEC | EFD_NONBLOCK | EFD_SEMAPHORE)) return -EINVAL;
      return install_event_fd(::eventfd(static_cast<unsigned>(a[0]), host_flags | EFD_CLOEXEC), flags,
                              "anon_inode:[eventfd]", true);
    }
    case SyscallId::epoll_create: case SyscallId::epoll_create1: {
      if (id == SyscallId::epoll_create && as_int(a[0]) <= 0) return -EINVAL;
      const std::uint64_t flags = id == SyscallId::epoll_create ? 0 : a[0];
      const int host_flags = static_cast<int>(arch::open_flags_to_host(arch_, flags));
      if (host_flags & ~EPOLL_CLOEXEC) return -EINVAL;
      return install_event_fd(::epoll_create1(EPOLL_CLOEXEC), flags, "anon_inode:[eventpoll]", false);
    }
    case SyscallId::epoll_ctl: return do_epoll_ctl(as_int(a[0]), as_int(a[1]), as_int(a[2]), a[3]);
    case SyscallId::signalfd: return do_signalfd(as_int(a[0]), a[1], a[2], 0);
    case SyscallId::signalfd4: return do_signalfd(as_int(a[0]), a[1], a[2], a[3]);
    case SyscallId::epoll_wait: return do_epoll_wait(as_int(a[0]), a[1], as_int(a[2]), as_int(a[3]), 0, 0);
    case SyscallId::epoll_pwait: return do_epoll_wait(as_int(a[0]), a[1], as_int(a[2]), as_int(a[3]), a[4], a[5]);
    case SyscallId::timerfd_create: {
      const int host_flags = static_cast<int>(arch::open_flags_to_host(arch_, a[1]));
      if (host_flags & ~(TFD_CLOEXEC | TFD_NONBLOCK)) return -EINVAL;
      return install_event_fd(::timerfd_create(as_int(a[0]), host_flags | TFD_CLOEXEC), a[1],
                              "anon_inode:[timerfd]", true);
    }
    case SyscallId::timerfd_settime: case SyscallId::timerfd_settime64:
      return do_timerfd_settime(as_int(a[0]), as_int(a[1]), a[2], a[3], id == SyscallId::timerfd_settime64);
    case SyscallId::timerfd_gettime: case SyscallId::timerfd_gettime64: {
      const int host = fs_.host_fd(as_int(a[0]));
      if (host < 0) return -EBADF;
      itimerspec now {};
      if (::timerfd_gettime(host, &now) != 0) return -errno;
      return copy_out_itimerspec(a[1], id == SyscallId::timerfd_gettime64 || arch_.elf_64bit,
                                 from_timespec(now.it_interval), from_timespec(now.it_value))
                 ? 0
                 : -EFAULT;
    }
    default: return std::nullopt;
  }
}

std::int64_t Kernel::do_timerfd_settime(int fd, int flags, std::uint64_t new_address, std::uint64_t old_address,
                                        bool time64) {
  const int host = fs_.host_fd(fd);
  if (host < 0) return -EBADF;
  std::chrono::nanoseconds interval{}, value{};
  if (!copy_in_itimerspec(new_address, time64 || arch_.elf_64bit, interval, value)) return -EFAULT;
  const itimerspec wanted{to_timespec(interval), to_timespec(value)};
  itimerspec old {};
  if (::timerfd_settime(host, flags, &wanted, &old) != 0) return -errno;
  if (old_address && !copy_out_itimerspec(old_address, time64 || arch_.elf_64bit, from_timespec(old.it_interval),
                                          from_timespec(old.it_value)))
    return -EFAULT;
  return 0;
}

std::int64_t Kernel::do_epoll_ctl(int epfd, int op, int fd, std::uint64_t event_address) {
  const int host_epoll = fs_.host_fd(epfd), host = fs_.host_fd(fd);
  if (host_epoll < 0 || host < 0) return -EBADF;
  epoll_event event {};
  if (op != EPOLL_CTL_DEL) {
    std::uint8_t bytes[16] = {};
    const std::size_t data_at = arch_.syscall_abi.epoll_event_packed ? 4 : 8;
    if (!copy_in(event_address, bytes, data_at + 8)) return -EFAULT;
    const arch::FrameReader reader(std::span<const std::uint8_t>(bytes, data_at + 8), arch_.little_endian);
    event.events = static_cast<std::uint32_t>(reader.get(0, 4));
    event.data.u64 = reader.get(data_at, 8);
  }
  return ::epoll_ctl(host_epoll, op, host, &event) == 0 ? 0 : -errno;
}

std::int64_t Kernel::do_epoll_wait(int epfd, std::uint64_t events_address, int max_events, int timeout_ms,
                                   std::uint64_t mask_address, std::uint64_t mask_size) {
  const int host_epoll = fs_.host_fd(epfd);
  if (host_epoll < 0) return -EBADF;
  if (max_events <= 0 || max_events > 65536) return -EINVAL;
  // epoll_pwait: the signal mask for the wait (restored by the handler's frame when it is interrupted).
  std::optional<std::uint64_t> saved_mask;
  if (mask_address) {
    if (mask_size != arch_.signal_abi.sigset_bytes) return -EINVAL;
    std::uint8_t bytes[16] = {};
    if (!copy_in(mask_address, bytes, mask_size)) return -EFAULT;
    saved_mask = signals_.blocked;
    signals_.blocked = read_guest_sigset(std::span(bytes, 8));
  }
  std::int64_t result = 0;
  if (timeout_ms != 0) {
    pollfd ready{host_epoll, POLLIN, 0};
    std::optional<std::chrono::steady_clock::time_point> limit;
    if (timeout_ms > 0) limit = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    const WaitEnd end = wait_for_host(std::span(&ready, 1), limit, nullptr);
    if (end == WaitEnd::kWouldBlock) result = kBlockAndRetry;
    else if (end == WaitEnd::kInterrupted) result = -EINTR;  // never restarted (ERESTARTNOHAND)
  }
  if (result == 0) {
    std::vector<epoll_event> events(static_cast<std::size_t>(max_events));
    const int count = ::epoll_wait(host_epoll, events.data(), max_events, 0);
    result = count < 0 ? -errno : count;
    const std::size_t data_at = arch_.syscall_abi.epoll_event_packed ? 4 : 8, size = data_at + 8;
    std::vector<std::uint8_t> bytes(static_cast<std::size_t>(std::max(count, 0)) * size);
    arch::FrameWriter writer(bytes, arch_.little_endian);
    for (int i = 0; i < count; ++i) {
      writer.put(static_cast<std::size_t>(i) * size, 4, events[static_cast<std::size_t>(i)].events);
      writer.put(static_cast<std::size_t>(i) * size + data_at, 8, events[static_cast<std::size_t>(i)].data.u64);
    }
    if (count > 0 && !copy_out(events_address, bytes.data(), bytes.size())) result = -EFAULT;
  }
  if (saved_mask) {  // (a retried call sets it again)
    if (result == -EINTR) signals_.mask_after_handler = *saved_mask;
    else signals_.blocked = *saved_mask;
  }
  return result;
}

}  // namespace tracecorn::linux_layer
