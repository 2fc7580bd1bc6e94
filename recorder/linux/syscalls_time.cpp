// Role: the time family (clocks and sleeps; there is no vDSO, so every time call
// is a real syscall) and getrandom. Values come from the host as they are.
#include <sys/random.h>
#include <sys/time.h>

#include <cerrno>
#include <ctime>

#include <thread>

#include "recorder/linux/kernel.h"

namespace tracecorn::linux_layer {

using arch::SyscallId;

std::optional<std::int64_t> Kernel::time_syscall(SyscallId id, const SyscallArgs& a) {
  switch (id) {
    case SyscallId::clock_gettime: case SyscallId::clock_getres: {
      struct timespec value {};
      const int result = id == SyscallId::clock_gettime ? ::clock_gettime(static_cast<clockid_t>(a[0]), &value)
                                                        : ::clock_getres(static_cast<clockid_t>(a[0]), &value);
      if (result != 0) return -errno;
      to_guest_order(value, {8});
      if (a[1] && !copy_out(a[1], &value, sizeof value)) return -EFAULT;
      return 0;
    }
    case SyscallId::gettimeofday: {
      struct timeval value {};
      ::gettimeofday(&value, nullptr);
      to_guest_order(value, {8});
      if (a[0] && !copy_out(a[0], &value, sizeof value)) return -EFAULT;
      if (a[1]) {
        const std::uint32_t zone[2] = {0, 0};
        if (!copy_out(a[1], zone, sizeof zone)) return -EFAULT;
      }
      return 0;
    }
    case SyscallId::time: {
      const std::int64_t now = ::time(nullptr);
      std::int64_t stored = now;
      to_guest_order(stored, {8});
      if (a[0] && !copy_out(a[0], &stored, sizeof stored)) return -EFAULT;
      return now;
    }
    case SyscallId::nanosleep: case SyscallId::clock_nanosleep: {
      const bool is_clock = id == SyscallId::clock_nanosleep;
      struct timespec request {}, remaining {};
      if (!copy_in(is_clock ? a[2] : a[0], &request, sizeof request)) return -EFAULT;
      to_guest_order(request, {8});
      // From a 32-bit ABI (clock_nanosleep_time64): tv_nsec is 32 bits beside padding the kernel ignores.
      if (!arch_.elf_64bit) request.tv_nsec = static_cast<std::int32_t>(request.tv_nsec);
      if (request.tv_nsec < 0 || request.tv_nsec >= 1000000000 || request.tv_sec < 0) return -EINVAL;
      // The sleep's length from now (TIMER_ABSTIME: until the clock reads `request`).
      std::chrono::nanoseconds length = std::chrono::seconds(request.tv_sec) + std::chrono::nanoseconds(request.tv_nsec);
      if (is_clock && (a[1] & TIMER_ABSTIME)) {
        struct timespec now {};
        if (::clock_gettime(static_cast<clockid_t>(a[0]), &now) != 0) return -errno;
        length -= std::chrono::seconds(now.tv_sec) + std::chrono::nanoseconds(now.tv_nsec);
      } else if (is_clock) {
        struct timespec probe {};
        if (::clock_getres(static_cast<clockid_t>(a[0]), &probe) != 0) return -errno;  // EINVAL for a bad clock
      }
      const auto limit = std::chrono::steady_clock::now() + length;
      // Slept in slices, so that a signal (the guest's timer, tracecorn's stop) interrupts it.
      const WaitEnd end = wait_for_host({}, limit, nullptr);
      if (end == WaitEnd::kWouldBlock) return kBlockAndRetry;
      if (end != WaitEnd::kInterrupted) return 0;
      const std::uint64_t remaining_address = is_clock ? a[3] : a[1];
      if (remaining_address && !(is_clock && (a[1] & TIMER_ABSTIME))) {
        const auto left = std::max(std::chrono::nanoseconds(0), limit - std::chrono::steady_clock::now());
        remaining.tv_sec = std::chrono::duration_cast<std::chrono::seconds>(left).count();
        remaining.tv_nsec = (left - std::chrono::seconds(remaining.tv_sec)).count();
        to_guest_order(remaining, {8});
        copy_out(remaining_address, &remaining, sizeof remaining);
      }
      return -EINTR;
    }
    case SyscallId::getrandom: {
      const std::size_t length = static_cast<std::size_t>(std::min<std::uint64_t>(a[1], 1u << 20));
      std::vector<std::uint8_t> bytes(length);
      const ssize_t got = ::getrandom(bytes.data(), length, static_cast<unsigned>(a[2]));
      if (got < 0) return -errno;
      if (!copy_out(a[0], bytes.data(), static_cast<std::size_t>(got))) return -EFAULT;
      return got;
    }
    default:
      return std::nullopt;
  }
}

}  // namespace tracecorn::linux_layer
