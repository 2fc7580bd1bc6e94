// Role: what one process image hands to the next across execve. tracecorn
// runs an exec'd image by executing itself again (the same host process, so
// the pid stays, as Linux keeps it); the Linux layer's state that survives an
// exec travels in a small text file (a memfd the new tracecorn is told the
// number of): the program and its argv/envp, the guest descriptors that stay
// open (the host descriptors behind them stay open across the host execve;
// an eventfd's byte order and a signalfd's mask with them), the working
// directory, umask, the signals the guest ignores, blocks or has pending
// (with their siginfo), the root of the guest's process tree and the
// image's number.
// Who calls it: the execve handler (writes) and LinuxProcess::create (reads),
// on the emulation thread.
// Invariants: parse(serialize(s)) == s; a malformed file is an error naming
// the field, never a partly applied state.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "recorder/support/expected.h"

namespace tracecorn::linux_layer {

struct InheritedDescriptor {
  int guest_fd = -1;
  int host_fd = -1;
  std::string guest_path;
  bool counter_words = false;  // an eventfd or timerfd (FdEntry::counter_words)
  // A signalfd: its mask (host numbering), and the first guest descriptor
  // that shares it (dup'd descriptors share one signalfd); -1 when not one.
  int signal_fd_of = -1;
  std::uint64_t signal_mask = 0;
};

// A pending signal's siginfo, which survives execve with it.
struct InheritedSignal {
  int signal = 0;  // host numbering
  int code = 0;
  std::uint64_t pid = 0, uid = 0, value = 0;
};

struct InheritedState {
  std::string program;   // the ELF to load (a host path; inside the rootfs when there is one)
  std::string execfn;    // the path the exec named (AT_EXECFN)
  std::vector<std::string> argv, envp;
  std::vector<InheritedDescriptor> descriptors;
  std::string cwd;       // the guest's view
  int umask = 022;
  std::uint64_t ignored_signals = 0;  // host numbering, bit n-1 for signal n
  std::uint64_t blocked_signals = 0;
  std::uint64_t pending_signals = 0;
  std::vector<InheritedSignal> pending_origins;  // the siginfo of each pending signal
  std::uint64_t tree_root_pid = 0;    // the first guest process of the tree
  std::uint64_t image_serial = 0;     // 1 for a process's first exec'd image, 2 for the next...
  std::vector<std::uint64_t> children;  // live child pids (wait4 still finds them)
};

std::string serialize(const InheritedState& state);
Expected<InheritedState> parse_inherited_state(std::string_view text);

// Writes `state` into a new memfd (not close-on-exec); returns its descriptor.
Expected<int> write_inherited_state(const InheritedState& state);
// Reads the state from descriptor `fd` and closes it.
Expected<InheritedState> read_inherited_state(int fd);

}  // namespace tracecorn::linux_layer
