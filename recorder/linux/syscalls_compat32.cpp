// Role: the syscalls only 32-bit ABIs have (arm EABI, i386): the 64-bit
// variants (fstat64, fcntl64, clock_gettime64...), the split ones (mmap2's page
// offset, _llseek's two halves, 64-bit arguments in register pairs), the
// word-sized ugetrlimit, arm's private set_tls, mips' and i386's set_thread_area,
// old mmap (arguments in memory) and socketcall (arguments in memory, run as
// the individual socket calls). Each one converts its
// arguments and runs the 64-bit handler of its family, so the behaviour is
// written once. Called by Kernel::dispatch first, for 32-bit guests only.
// The time32 calls (clock_gettime, clock_getres, clock_nanosleep, nanosleep,
// gettimeofday) convert their 32-bit timespec/timeval here.
// Invariant: structs whose layout depends on the word size are never handed to
// a 64-bit handler: an architecture's table leaves such syscalls unmapped
// (ENOSYS, so glibc takes its 64-bit path) until a converter exists here.
#include <sys/resource.h>
#include <sys/time.h>
#include <unistd.h>

#include <ctime>
#include <algorithm>
#include <initializer_list>
#include <span>
#include <string>
#include <utility>

#include <cerrno>
#include <cstring>

#include "recorder/linux/kernel.h"

namespace tracecorn::linux_layer {

using arch::SyscallId;

namespace {
constexpr std::uint64_t kMmap2PageSize = 4096;  // mmap2's offset unit on every 32-bit Linux ABI
}  // namespace

std::uint64_t Kernel::argument_pair(const SyscallArgs& a, std::size_t index) const {
  if (arch_.aligned_argument_pairs && index % 2 == 1) ++index;
  if (index + 1 >= 6) return 0;
  const std::uint64_t low = arch_.little_endian ? a[index] : a[index + 1];
  const std::uint64_t high = arch_.little_endian ? a[index + 1] : a[index];
  return (low & 0xffffffffu) | (high << 32);
}

bool Kernel::copy_out_words32(std::uint64_t address, std::initializer_list<std::uint64_t> values) {
  std::uint8_t bytes[16];
  std::size_t size = 0;
  for (const std::uint64_t value : values) {
    if (size + 4 > sizeof bytes) return false;
    for (unsigned b = 0; b < 4; ++b)
      bytes[size + b] = static_cast<std::uint8_t>(value >> (8 * (arch_.little_endian ? b : 3 - b)));
    size += 4;
  }
  return copy_out(address, bytes, size);
}

std::optional<std::pair<std::int64_t, std::int64_t>> Kernel::copy_in_words32(std::uint64_t address) const {
  std::uint8_t bytes[8];
  if (!copy_in(address, bytes, sizeof bytes)) return std::nullopt;
  std::uint32_t words[2] = {};
  for (unsigned w = 0; w < 2; ++w)
    for (unsigned b = 0; b < 4; ++b)
      words[w] |= std::uint32_t{bytes[4 * w + b]} << (8 * (arch_.little_endian ? b : 3 - b));
  return std::pair<std::int64_t, std::int64_t>(static_cast<std::int32_t>(words[0]), static_cast<std::int32_t>(words[1]));
}

bool Kernel::copy_in_words(std::uint64_t address, std::span<std::uint64_t> words) const {
  std::uint8_t bytes[4 * 6];
  if (words.size() > 6 || !copy_in(address, bytes, 4 * words.size())) return false;
  for (std::size_t w = 0; w < words.size(); ++w) {
    words[w] = 0;
    for (unsigned b = 0; b < 4; ++b)
      words[w] |= std::uint64_t{bytes[4 * w + b]} << (8 * (arch_.little_endian ? b : 3 - b));
  }
  return true;
}

std::int64_t Kernel::do_socketcall(std::uint64_t call, std::uint64_t args_address) {
  // net/socket.c: SYS_SOCKET 1 .. SYS_SENDMMSG 20, each with its argument count;
  // the calls are run as their own syscalls (the neutral ids).
  struct SocketCall {
    SyscallId id;
    std::uint8_t arguments;
  };
  static constexpr SocketCall kCalls[] = {
      {SyscallId::unknown, 0},     {SyscallId::socket, 3},      {SyscallId::bind, 3},
      {SyscallId::connect, 3},     {SyscallId::listen, 2},      {SyscallId::accept, 3},
      {SyscallId::getsockname, 3}, {SyscallId::getpeername, 3}, {SyscallId::socketpair, 4},
      {SyscallId::unknown, 4},     {SyscallId::unknown, 4},     {SyscallId::sendto, 6},
      {SyscallId::recvfrom, 6},    {SyscallId::shutdown, 2},    {SyscallId::setsockopt, 5},
      {SyscallId::getsockopt, 5},  {SyscallId::sendmsg, 3},     {SyscallId::recvmsg, 3},
      {SyscallId::unknown, 4},     {SyscallId::unknown, 5},     {SyscallId::unknown, 4},
  };
  if (call == 0 || call >= std::size(kCalls)) {
    note_once("socketcall " + std::to_string(static_cast<std::int32_t>(call)) +
              ": no such call (1 SYS_SOCKET to 20 SYS_SENDMMSG): returning EINVAL");
    return -EINVAL;
  }
  const SocketCall& entry = kCalls[call];
  std::uint64_t words[6] = {};
  if (!copy_in_words(args_address, std::span<std::uint64_t>(words, entry.arguments))) return -EFAULT;
  if (entry.id == SyscallId::unknown) {
    note_once("socketcall " + std::to_string(call) + " is not supported: returning ENOSYS");
    return -ENOSYS;
  }
  SyscallArgs wide{};
  std::copy(std::begin(words), std::end(words), wide);
  if (auto result = net_syscall(entry.id, wide)) return *result;
  return -ENOSYS;
}

std::optional<std::int64_t> Kernel::compat32_syscall(SyscallId id, const SyscallArgs& a) {
  if (arch_.elf_64bit) return std::nullopt;
  SyscallArgs wide{};
  for (std::size_t i = 0; i < 6; ++i) wide[i] = a[i];
  switch (id) {
    case SyscallId::mmap2:
      return do_mmap(a[0], a[1], static_cast<int>(a[2]), static_cast<int>(a[3]), static_cast<int>(a[4]),
                     a[5] * kMmap2PageSize);
    case SyscallId::_llseek: {  // (fd, offset_high, offset_low, loff_t* result, whence)
      const int host = fs_.host_fd(static_cast<int>(a[0]));
      if (host < 0) return -EBADF;
      const auto offset = static_cast<off_t>((a[1] << 32) | (a[2] & 0xffffffffu));
      const off_t position = ::lseek(host, offset, static_cast<int>(a[4]));
      if (position < 0) return -errno;
      std::uint8_t bytes[8];
      for (unsigned b = 0; b < 8; ++b)
        bytes[b] = static_cast<std::uint8_t>(static_cast<std::uint64_t>(position) >> (8 * (arch_.little_endian ? b : 7 - b)));
      return copy_out(a[3], bytes, sizeof bytes) ? 0 : -EFAULT;
    }
    case SyscallId::ugetrlimit: {  // struct rlimit of two unsigned longs, clamped to the ABI's RLIM_INFINITY
      const int resource = arch::rlimit_resource_to_host(arch_, static_cast<int>(a[0]));
      if (resource < 0 || resource >= RLIM_NLIMITS || resource >= 16) return -EINVAL;
      std::uint64_t current[2];
      if (const int error = current_rlimit(resource, current)) return -error;
      std::uint8_t bytes[8];
      for (unsigned word = 0; word < 2; ++word) {
        const auto value = static_cast<std::uint32_t>(std::min<std::uint64_t>(current[word], arch_.rlimit_infinity32));
        for (unsigned b = 0; b < 4; ++b)
          bytes[4 * word + b] = static_cast<std::uint8_t>(value >> (8 * (arch_.little_endian ? b : 3 - b)));
      }
      return copy_out(a[1], bytes, sizeof bytes) ? 0 : -EFAULT;
    }
    // The time32 calls: struct timespec / timeval of two 32-bit words.
    case SyscallId::clock_gettime: case SyscallId::clock_getres: {
      struct timespec value {};
      const int result = id == SyscallId::clock_gettime ? ::clock_gettime(static_cast<clockid_t>(a[0]), &value)
                                                        : ::clock_getres(static_cast<clockid_t>(a[0]), &value);
      if (result != 0) return -errno;
      if (a[1] && !copy_out_words32(a[1], {static_cast<std::uint64_t>(value.tv_sec),
                                           static_cast<std::uint64_t>(value.tv_nsec)}))
        return -EFAULT;
      return 0;
    }
    case SyscallId::gettimeofday: {
      struct timeval value {};
      ::gettimeofday(&value, nullptr);
      if (a[0] && !copy_out_words32(a[0], {static_cast<std::uint64_t>(value.tv_sec),
                                           static_cast<std::uint64_t>(value.tv_usec)}))
        return -EFAULT;
      if (a[1] && !copy_out_words32(a[1], {0, 0})) return -EFAULT;
      return 0;
    }
    case SyscallId::nanosleep: case SyscallId::clock_nanosleep: {
      const bool is_clock = id == SyscallId::clock_nanosleep;
      const auto words = copy_in_words32(is_clock ? a[2] : a[0]);
      if (!words) return -EFAULT;
      if (words->second < 0 || words->second >= 1000000000 || words->first < 0) return -EINVAL;
      std::chrono::nanoseconds length = std::chrono::seconds(words->first) + std::chrono::nanoseconds(words->second);
      if (is_clock && (a[1] & TIMER_ABSTIME)) {
        struct timespec now {};
        if (::clock_gettime(static_cast<clockid_t>(a[0]), &now) != 0) return -errno;
        length -= std::chrono::seconds(now.tv_sec) + std::chrono::nanoseconds(now.tv_nsec);
      }
      const auto limit = std::chrono::steady_clock::now() + length;
      // Slept in slices (or aside, with other threads), as the 64-bit call is.
      const WaitEnd end = wait_for_host({}, limit, nullptr);
      if (end == WaitEnd::kWouldBlock) return kBlockAndRetry;
      if (end != WaitEnd::kInterrupted) return 0;
      const std::uint64_t remaining_address = is_clock ? a[3] : a[1];
      if (remaining_address && !(is_clock && (a[1] & TIMER_ABSTIME))) {
        const auto left = std::max(std::chrono::nanoseconds(0), limit - std::chrono::steady_clock::now());
        const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(left);
        copy_out_words32(remaining_address, {static_cast<std::uint64_t>(seconds.count()),
                                             static_cast<std::uint64_t>((left - seconds).count())});
      }
      return -EINTR;
    }
    case SyscallId::set_tls:
      return cpu_.set_thread_pointer(a[0]) ? 0 : -EINVAL;
    case SyscallId::set_thread_area: {  // i386: struct user_desc, read and written back
      if (arch_.syscall_abi.thread_area_is_pointer) return cpu_.set_thread_pointer(a[0]) ? 0 : -EINVAL;  // mips
      std::uint8_t desc[16];
      if (!copy_in(a[0], desc, sizeof desc)) return -EFAULT;
      const int result = cpu_.set_thread_area(std::span<std::uint8_t, 16>(desc));
      if (result == 0 && !copy_out(a[0], desc, sizeof desc)) return -EFAULT;
      if (result == 0) {  // kept per thread: switch_to writes it back when the thread runs
        running_->tls_descriptor.emplace();
        std::memcpy(running_->tls_descriptor->data(), desc, sizeof desc);
      }
      return result;
    }
    case SyscallId::old_mmap: {  // i386: struct mmap_arg_struct of six words, offset in bytes
      std::uint64_t words[6];
      if (!copy_in_words(a[0], words)) return -EFAULT;
      if (words[5] % kMmap2PageSize != 0) return -EINVAL;
      return do_mmap(words[0], words[1], static_cast<int>(words[2]), static_cast<int>(words[3]),
                     static_cast<int>(words[4]), words[5]);
    }
    case SyscallId::socketcall: return do_socketcall(a[0], a[1]);
    // The 64-bit variants: the same arguments as the 64-bit ABI's call, and the
    // structs they take (stat64 through ArchInfo::encode_stat, timespec64, flock64)
    // have the 64-bit layout.
    case SyscallId::fstat64: return file_syscall(SyscallId::fstat, a);
    case SyscallId::stat64: return file_syscall(SyscallId::stat, a);
    case SyscallId::lstat64: return file_syscall(SyscallId::lstat, a);
    case SyscallId::fstatat64: return file_syscall(SyscallId::newfstatat, a);
    case SyscallId::fcntl64: return file_syscall(SyscallId::fcntl, a);
    case SyscallId::sendfile64: return file_syscall(SyscallId::sendfile, a);  // loff_t*: x86-64's off_t*
    case SyscallId::clock_gettime64: return time_syscall(SyscallId::clock_gettime, a);
    case SyscallId::clock_getres_time64: return time_syscall(SyscallId::clock_getres, a);
    case SyscallId::clock_nanosleep_time64: return time_syscall(SyscallId::clock_nanosleep, a);
    case SyscallId::futex_time64: return do_futex(a, true);
    // 32-bit ids: the base calls already take and give full-width ids.
    case SyscallId::getuid32: return process_syscall(SyscallId::getuid, a);
    case SyscallId::getgid32: return process_syscall(SyscallId::getgid, a);
    case SyscallId::geteuid32: return process_syscall(SyscallId::geteuid, a);
    case SyscallId::getegid32: return process_syscall(SyscallId::getegid, a);
    case SyscallId::setuid32: return process_syscall(SyscallId::setuid, a);
    case SyscallId::setgid32: return process_syscall(SyscallId::setgid, a);
    case SyscallId::getgroups32: return process_syscall(SyscallId::getgroups, a);
    case SyscallId::setgroups32: return process_syscall(SyscallId::setgroups, a);
    case SyscallId::getresuid32: return process_syscall(SyscallId::getresuid, a);
    case SyscallId::getresgid32: return process_syscall(SyscallId::getresgid, a);
    case SyscallId::chown32: return file_syscall(SyscallId::chown, a);
    case SyscallId::lchown32: return file_syscall(SyscallId::lchown, a);
    case SyscallId::fchown32: return file_syscall(SyscallId::fchown, a);
    // 64-bit values in register pairs.
    case SyscallId::ftruncate64:
      wide[1] = argument_pair(a, 1);
      return file_syscall(SyscallId::ftruncate, wide);
    case SyscallId::truncate64:
      wide[1] = argument_pair(a, 1);
      return file_syscall(SyscallId::truncate, wide);
    case SyscallId::pread64: case SyscallId::pwrite64:
      wide[3] = argument_pair(a, 3);
      return file_syscall(id, wide);
    default:
      return std::nullopt;
  }
}

}  // namespace tracecorn::linux_layer
