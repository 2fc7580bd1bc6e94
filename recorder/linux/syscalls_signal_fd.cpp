// Role: signalfd and signalfd4. The guest's signals are the Linux layer's own
// (SignalState), so the host's signalfd cannot read them: a guest signalfd
// is a host eventfd that sync_signal_fds() keeps readable exactly while one
// of its signals is pending, which poll, ppoll, select and epoll see as they
// see any descriptor; its read takes pending signals of its mask as
// rt_sigtimedwait does and writes them as struct signalfd_siginfo (128
// bytes, the same fields on every architecture, in the guest's byte order
// and signal numbering).
// A signalfd kept across execve is one again in the new image
// (adopt_inherited_signal_fds).
// Threads: the emulation thread.
// Invariants: a signalfd's eventfd counter is 0 or 1, and 1 only while
// SignalFd::readable; SIGKILL and SIGSTOP are never in a mask (Linux drops
// them silently).
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <fcntl.h>
#include <signal.h>

#include <map>

#include "arch/signal_frame.h"
#include "recorder/linux/kernel.h"

namespace tracecorn::linux_layer {

namespace {

constexpr std::size_t kSiginfoRecordBytes = 128;  // struct signalfd_siginfo

// The fields of one struct signalfd_siginfo (linux/signalfd.h) for `signal`.
std::array<std::uint8_t, kSiginfoRecordBytes> signalfd_record(const arch::ArchInfo& arch, int signal,
                                                               const SignalOrigin& origin) {
  std::array<std::uint8_t, kSiginfoRecordBytes> bytes{};
  arch::FrameWriter out(bytes, arch.little_endian);
  out.put(0, 4, static_cast<std::uint32_t>(arch::signal_to_guest(arch, signal)));   // ssi_signo
  out.put(8, 4, static_cast<std::uint32_t>(origin.code));                            // ssi_code
  out.put(12, 4, origin.pid);                                                        // ssi_pid
  out.put(16, 4, origin.uid);                                                        // ssi_uid
  out.put(24, 4, static_cast<std::uint32_t>(origin.timer_id));                       // ssi_tid (POSIX timers)
  out.put(32, 4, static_cast<std::uint32_t>(origin.overrun));                        // ssi_overrun
  int status = origin.child_status;  // SIGCHLD: an exit code, or the signal that ended the child
  if (signal == SIGCHLD && origin.code != CLD_EXITED) status = arch::signal_to_guest(arch, status);
  out.put(40, 4, static_cast<std::uint32_t>(status));                                // ssi_status
  out.put(44, 4, static_cast<std::uint32_t>(origin.value));                          // ssi_int
  out.put(48, 8, origin.value);                                                      // ssi_ptr
  out.put(72, 8, origin.address);                                                    // ssi_addr
  return bytes;
}

}  // namespace

std::int64_t Kernel::do_signalfd(int fd, std::uint64_t mask_address, std::uint64_t mask_size, std::uint64_t flags) {
  if (mask_size != arch_.signal_abi.sigset_bytes) return -EINVAL;
  const int host_flags = static_cast<int>(arch::open_flags_to_host(arch_, flags));
  if (host_flags & ~(O_CLOEXEC | O_NONBLOCK)) return -EINVAL;
  std::uint8_t bytes[16] = {};
  if (!copy_in(mask_address, bytes, mask_size)) return -EFAULT;
  const std::uint64_t mask = read_guest_sigset(std::span(bytes, 8)) & ~(signal_bit(SIGKILL) | signal_bit(SIGSTOP));
  if (fd != -1) {  // a new mask for an existing signalfd
    FdEntry* entry = fs_.entry(fd);
    if (!entry) return -EBADF;
    if (!entry->signal_fd) return -EINVAL;
    entry->signal_fd->mask = mask;
    sync_signal_fds();
    return fd;
  }
  auto state = std::make_shared<SignalFd>();
  state->mask = mask;
  state->eventfd = GuestFs::lift_host_fd(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (state->eventfd < 0) return -errno;
  // The guest's descriptor: the same eventfd, blocking or not as it asked.
  const int guest_side = GuestFs::lift_host_fd(::fcntl(state->eventfd, F_DUPFD_CLOEXEC, 0));
  if (guest_side < 0) return -errno;
  if (!(host_flags & O_NONBLOCK)) (void)::fcntl(guest_side, F_SETFL, ::fcntl(guest_side, F_GETFL) & ~O_NONBLOCK);
  const std::int64_t guest = install_event_fd(guest_side, flags, "anon_inode:[signalfd]", false);
  if (guest < 0) return guest;
  fs_.entry(static_cast<int>(guest))->signal_fd = state;
  signal_fds_.push_back(state);
  sync_signal_fds();
  return guest;
}

std::int64_t Kernel::read_signal_fd(int fd, SignalFd& signal_fd, std::uint64_t buffer, std::uint64_t count) {
  if (count < kSiginfoRecordBytes) return -EINVAL;
  while (!(signals_.all_pending() & signal_fd.mask)) {
    if (::fcntl(fs_.host_fd(fd), F_GETFL) & O_NONBLOCK) return -EAGAIN;
    switch (wait_for_signal(signal_fd.mask, std::nullopt)) {
      case SignalWait::kPending: break;
      case SignalWait::kWouldBlock: return kBlockAndRetry;
      case SignalWait::kStopped: case SignalWait::kTimedOut: return -EINTR;
    }
  }
  std::uint64_t written = 0;
  while (written + kSiginfoRecordBytes <= count && (signals_.all_pending() & signal_fd.mask)) {
    const int signal = __builtin_ctzll(signals_.all_pending() & signal_fd.mask) + 1;
    const auto record = signalfd_record(arch_, signal, signals_.take(signal));
    if (!copy_out(buffer + written, record.data(), record.size())) return written ? static_cast<std::int64_t>(written) : -EFAULT;
    written += kSiginfoRecordBytes;
  }
  sync_signal_fds();
  return static_cast<std::int64_t>(written);
}

std::shared_ptr<SignalFd> Kernel::fresh_signal_fd(std::uint64_t mask) {
  auto fresh = std::make_shared<SignalFd>();
  fresh->mask = mask & ~(signal_bit(SIGKILL) | signal_bit(SIGSTOP));
  fresh->eventfd = GuestFs::lift_host_fd(::eventfd(0, EFD_CLOEXEC));
  signal_fds_.push_back(fresh);
  return fresh;
}

void Kernel::rebind_signal_fd(FdEntry& entry, const std::shared_ptr<SignalFd>& signal_fd) {
  // The same host descriptor number, now on the new eventfd, blocking or not as before.
  const int flags = ::fcntl(entry.host_fd, F_GETFL);
  if (signal_fd->eventfd >= 0 && ::dup3(signal_fd->eventfd, entry.host_fd, O_CLOEXEC) >= 0 && flags >= 0)
    (void)::fcntl(entry.host_fd, F_SETFL, flags & O_NONBLOCK);
  entry.signal_fd = signal_fd;
}

void Kernel::renew_signal_fds_after_fork() {
  if (signal_fds_.empty()) return;
  signal_fds_.clear();  // (the parent's: fresh_signal_fd lists the new ones)
  std::map<const SignalFd*, std::shared_ptr<SignalFd>> renewed;
  for (FdEntry& entry : fs_.entries()) {
    if (entry.host_fd < 0 || !entry.signal_fd) continue;
    std::shared_ptr<SignalFd>& fresh = renewed[entry.signal_fd.get()];
    if (!fresh) fresh = fresh_signal_fd(entry.signal_fd->mask);
    rebind_signal_fd(entry, fresh);
  }
}

void Kernel::adopt_inherited_signal_fds(const std::vector<InheritedDescriptor>& kept) {
  std::map<int, std::shared_ptr<SignalFd>> adopted;  // by the first guest descriptor on each
  for (const InheritedDescriptor& descriptor : kept) {
    FdEntry* entry = fs_.entry(descriptor.guest_fd);
    if (descriptor.signal_fd_of < 0 || !entry) continue;
    std::shared_ptr<SignalFd>& fresh = adopted[descriptor.signal_fd_of];
    if (!fresh) fresh = fresh_signal_fd(descriptor.signal_mask);
    // (The counter the old image left means nothing here: sync_signal_fds sets it.)
    rebind_signal_fd(*entry, fresh);
  }
}

void Kernel::sync_signal_fds() {
  std::erase_if(signal_fds_, [](const std::weak_ptr<SignalFd>& open) { return open.expired(); });
  for (const auto& open : signal_fds_) {
    const std::shared_ptr<SignalFd> state = open.lock();
    const bool pending = (signals_.all_pending() & state->mask) != 0;
    if (pending == state->readable) continue;
    std::uint64_t counter = 1;
    const ssize_t done = pending ? ::write(state->eventfd, &counter, sizeof counter)
                                 : ::read(state->eventfd, &counter, sizeof counter);
    if (done == sizeof counter) state->readable = pending;
  }
}

}  // namespace tracecorn::linux_layer
