// Role: execve and execveat. The checks Linux makes before the point of no
// return (the file, its interpreters, argv and envp readable) run here, so a
// failing exec returns its errno to the caller; then the image is replaced by
// executing tracecorn itself again on the new program (ProcessConfig::
// relaunch_command), in the same host process: the pid stays, descriptors
// without close-on-exec stay open, close-on-exec ones close, caught signals
// go back to their default, ignored and blocked ones and pending signals stay
// (inherited_state.h carries them).
// Threads: the emulation thread, inside the syscall hook.
#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>

#include "recorder/linux/exec_image.h"
#include "recorder/linux/inherited_state.h"
#include "recorder/linux/kernel.h"

extern char** environ;

namespace tracecorn::linux_layer {

std::optional<std::vector<std::string>> Kernel::read_string_array(std::uint64_t address, int& error) const {
  std::vector<std::string> strings;
  if (!address) return strings;  // Linux takes a null argv or envp as empty
  const std::size_t word = guest_word_bytes();
  for (std::size_t i = 0; i < 65536; ++i) {
    std::uint8_t bytes[8] = {};
    if (!copy_in(address + i * word, bytes, word)) {
      error = EFAULT;
      return std::nullopt;
    }
    const arch::FrameReader reader(std::span<const std::uint8_t>(bytes, word), arch_.little_endian);
    const std::uint64_t pointer = reader.get(0, word);
    if (!pointer) return strings;
    auto text = memory_.read_string(pointer, 128 * 1024);
    if (!text) {
      error = EFAULT;
      return std::nullopt;
    }
    strings.push_back(std::move(*text));
  }
  error = E2BIG;
  return std::nullopt;
}

std::int64_t Kernel::do_execve(int dirfd, std::uint64_t path_address, std::uint64_t argv_address,
                               std::uint64_t envp_address, int flags) {
  constexpr int kAtEmptyPath = 0x1000, kAtSymlinkNofollow = 0x100;
  if (flags & ~(kAtEmptyPath | kAtSymlinkNofollow)) return -EINVAL;
  int error = 0;
  auto path = read_path(path_address, error);
  if (!path) return -error;
  if (path->empty() && !(flags & kAtEmptyPath)) return -ENOENT;
  if (dirfd != AT_FDCWD && (path->empty() || path->front() != '/')) {
    const FdEntry* directory = fs_.entry(dirfd);
    if (!directory) return -EBADF;
    *path = path->empty() ? directory->guest_path : directory->guest_path + "/" + *path;
  }
  auto argv = read_string_array(argv_address, error);
  if (!argv) return -error;
  auto envp = read_string_array(envp_address, error);
  if (!envp) return -error;
  if (argv->empty()) argv->push_back("");  // Linux 5.18+: an empty argv gets "" as argv[0]
  auto target = resolve_exec_target(fs_, *path, *argv);
  if (!target.ok()) return -target.error;
  if (config_.relaunch_command.empty()) {
    note_once("execve refused with ENOSYS: this embedding runs one image");
    return -ENOSYS;
  }

  InheritedState state;
  state.program = target.value.host_path;
  state.execfn = target.value.execfn;
  state.argv = std::move(target.value.argv);
  state.envp = std::move(*envp);
  state.cwd = fs_.cwd();
  state.umask = umask_;
  for (int signal = 1; signal <= kMaxSignal; ++signal)
    if (signal_action(signal).handler == kSigIgnore) state.ignored_signals |= signal_bit(signal);
  state.blocked_signals = signals_.blocked;
  state.pending_signals = signals_.all_pending();
  for (int signal = 1; signal <= kMaxSignal; ++signal) {
    if (!(state.pending_signals & signal_bit(signal))) continue;
    const auto index = static_cast<std::size_t>(signal);
    const SignalOrigin& origin =
        (signals_.pending & signal_bit(signal)) ? signals_.origins[index] : signals_.shared_origins[index];
    state.pending_origins.push_back(InheritedSignal{signal, origin.code, origin.pid, origin.uid, origin.value});
  }
  state.tree_root_pid = tree_root_pid_;
  state.image_serial = image_serial_ + 1;
  for (const auto& [child, process] : children_) state.children.push_back(static_cast<std::uint64_t>(child));
  std::map<const SignalFd*, int> signal_fds;  // each signalfd, by the first guest descriptor on it
  for (int guest_fd = 0; guest_fd < fs_.descriptor_slots(); ++guest_fd) {
    const FdEntry* entry = fs_.entry(guest_fd);
    if (!entry || entry->close_on_exec) continue;
    // The host descriptor must outlive the host execve.
    if (::fcntl(entry->host_fd, F_SETFD, 0) != 0) continue;
    InheritedDescriptor kept{guest_fd, entry->host_fd, entry->guest_path};
    kept.counter_words = entry->counter_words;
    if (entry->signal_fd) {
      kept.signal_fd_of = signal_fds.emplace(entry->signal_fd.get(), guest_fd).first->second;
      kept.signal_mask = entry->signal_fd->mask;
    }
    state.descriptors.push_back(kept);
  }
  auto state_fd = write_inherited_state(state);
  if (!state_fd) {
    note_once("execve: " + state_fd.error().to_string());
    return -ENOMEM;
  }
  // The point of no return: the syscall is told as done (execve "returns"
  // 0, as strace shows it) and the trace of this image ends here.
  const arch::SyscallId id = arch_.syscall_id(trap_number_);
  if (config_.syscall_log) log_syscall(id, trap_number_, trap_args_, 0);
  if (observer_) {
    observer_->on_syscall(trap_pc_, trap_number_, id, trap_args_, 0);
    observer_->on_process_exec(static_cast<std::uint64_t>(::getpid()), state.image_serial, state.execfn);
  }
  if (config_.lifecycle) config_.lifecycle->before_exec(state.program);
  std::vector<std::string> command = config_.relaunch_command;
  command.push_back("--exec-state-fd=" + std::to_string(*state_fd));
  command.push_back("--");
  command.push_back(state.program);
  std::vector<char*> host_argv;
  for (auto& arg : command) host_argv.push_back(arg.data());
  host_argv.push_back(nullptr);
  std::fflush(nullptr);
  ::execve("/proc/self/exe", host_argv.data(), environ);
  end_with_signal(SIGKILL, std::string("execve: tracecorn could not run itself again: ") + std::strerror(errno));
  return 0;
}

}  // namespace tracecorn::linux_layer

namespace tracecorn::linux_layer {

void Kernel::apply_inherited_state(const InheritedState& state) {
  for (const auto& descriptor : state.descriptors) {
    ::fcntl(descriptor.host_fd, F_SETFD, FD_CLOEXEC);  // tracecorn's own again; the guest's flag is clear
    fs_.install_at(descriptor.guest_fd, descriptor.host_fd, descriptor.guest_path);
    if (FdEntry* entry = fs_.entry(descriptor.guest_fd)) entry->counter_words = descriptor.counter_words;
  }
  adopt_inherited_signal_fds(state.descriptors);
  // Guest descriptors the previous image had closed are closed here too.
  for (int guest_fd = 0; guest_fd < 3; ++guest_fd) {
    const bool kept = std::any_of(state.descriptors.begin(), state.descriptors.end(),
                                  [&](const InheritedDescriptor& d) { return d.guest_fd == guest_fd; });
    if (!kept) fs_.close(guest_fd);
  }
  if (!state.cwd.empty()) (void)fs_.chdir(state.cwd);
  umask_ = state.umask;
  // Ignored signals stay ignored (a handler would point into the old image).
  const std::size_t handler_at = arch_.signal_abi.sigaction_flags_first ? 4 : 0;
  const std::size_t word = guest_word_bytes();
  for (int signal = 1; signal <= kMaxSignal; ++signal) {
    if (!(state.ignored_signals & signal_bit(signal))) continue;
    auto* record = reinterpret_cast<std::uint8_t*>(signals_.raw_actions[signal]);
    arch::FrameWriter(std::span(record, sizeof signals_.raw_actions[signal]), arch_.little_endian)
        .put(handler_at, word, kSigIgnore);
    note_disposition(signal);
  }
  signals_.blocked = state.blocked_signals;
  for (int signal = 1; signal <= kMaxSignal; ++signal) {
    if (!(state.pending_signals & signal_bit(signal))) continue;
    SignalOrigin origin;  // (its siginfo, when the old image said it)
    for (const InheritedSignal& inherited : state.pending_origins) {
      if (inherited.signal != signal) continue;
      origin.code = inherited.code;
      origin.pid = inherited.pid;
      origin.uid = inherited.uid;
      origin.value = inherited.value;
    }
    signals_.raise_shared(signal, origin);
  }
  sync_signal_fds();
  tree_root_pid_ = state.tree_root_pid ? state.tree_root_pid : tree_root_pid_;
  image_serial_ = state.image_serial;
  for (const std::uint64_t child : state.children) {
    const int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, static_cast<pid_t>(child), 0));
    children_[static_cast<std::int64_t>(child)].pidfd = HostFd(pidfd);
  }
}

}  // namespace tracecorn::linux_layer
