// Role: the syscall entry path of the emulated kernel: decode the trap, dispatch
// to a family, write the result, log and notify. See kernel.h for invariants.
#include "recorder/linux/kernel.h"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <csignal>
#include <cstring>

#include <unistd.h>

namespace tracecorn::linux_layer {

using arch::SyscallId;

Kernel::Kernel(uc_engine* engine, const arch::ArchInfo& arch, arch::GuestCpu& cpu, GuestFs fs,
               const ProcessConfig& config)
    : engine_(engine), arch_(arch), cpu_(cpu), memory_(engine, arch.layout), fs_(std::move(fs)), config_(config) {
  memory_.set_limit(config.max_memory);
  start_thread_table();
  tree_root_pid_ = static_cast<std::uint64_t>(::getpid());
}

void Kernel::on_trap() noexcept {
  try {
    std::uint64_t number = 0;
    SyscallArgs args{};
    uc_reg_read(engine_, arch_.syscall_abi.number_reg, &number);
    read_arguments(args);
    const SyscallId id = arch_.syscall_id(number);
    ++syscall_count_;
    const std::uint64_t pc = cpu_.trap_pc();
    trap_pc_ = pc;
    trap_number_ = number;
    std::copy(std::begin(args), std::end(args), std::begin(trap_args_));
    if (observer_) observer_->on_syscall_enter(pc, number);
    if (!signal_fds_.empty()) sync_signal_fds();  // (a poll or a read may look at one)
    std::int64_t result = 0;
    if (source_) {
      // Replay: the source answers, or lets the kernel run it (memory syscalls, exit...).
      const SyscallSource::Decision decision = source_->on_syscall(pc, number, id, args);
      if (decision.run) {
        result = dispatch(id, number, decision.args);
        source_->after_run(number, told_result(result));
      } else if (decision.block) {
        park_ = ThreadWait{ThreadWait::Kind::kHost, 0, 0, {}, 0, std::nullopt, true};  // woken by the schedule
        result = kBlockAndRetry;
      } else {
        result = decision.result;
      }
    } else {
      result = dispatch(id, number, args);
    }
    if (result == -EPIPE && raises_sigpipe(id, args)) (void)do_send_signal(arch::signal_to_guest(arch_, SIGPIPE), kSiUser, running_);
    const bool parked = !termination_.ended && parks_thread(result);
    if (parked) {
      park_running(result, BlockedSyscall{pc, number, id, {args[0], args[1], args[2], args[3], args[4], args[5]}});
    } else if (!termination_.ended) {
      running_->retry_deadline.reset();
      const bool restart = result == kRestartSys && restarts_after_handler();
      if (result == kRestartSys && !restart) result = -EINTR;
      if (sigreturn_pc_) {
        cpu_.resume_at(*sigreturn_pc_);  // every register came back from the signal frame
      } else {
        // A restarted syscall finds its number (or first argument) back where the result goes.
        const arch::SyscallAbi& abi = arch_.syscall_abi;
        const auto value = !restart ? static_cast<std::uint64_t>(result)
                                    : (abi.return_reg == abi.number_reg ? number : args[0]);
        uc_reg_write(engine_, abi.return_reg, &value);
        cpu_.apply_kernel_exit_effects();
      }
      if (restart && observer_) observer_->on_registers_changed();
      deliver_at_syscall_exit(restart ? std::optional<std::uint64_t>(cpu_.syscall_restart_pc()) : std::nullopt);
    }
    // A blocked syscall is told as unfinished (ERESTARTSYS) now, and again
    // with its result when its thread goes on (report_resumed_syscall).
    const std::int64_t told = told_result(result);
    if (config_.syscall_log) log_syscall(id, number, args, told);
    if (observer_) observer_->on_syscall(pc, number, id, args, told);
    if (!termination_.ended && (parked || std::exchange(yield_requested_, false))) schedule_after_syscall(result);
  } catch (const std::exception& error) {
    termination_ = Termination{true, true, 0, SIGSYS, std::string("internal error in a syscall: ") + error.what()};
    uc_emu_stop(engine_);
  } catch (...) {
    termination_ = Termination{true, true, 0, SIGSYS, "internal error in a syscall"};
    uc_emu_stop(engine_);
  }
}

void Kernel::deliver_at_syscall_exit(std::optional<std::uint64_t> restart_pc) {
  // What a signal from another process would do to the guest until its next
  // syscall (its dispositions and mask change only in syscalls and handlers).
  fatal_signals_now_.store(fatal_dispositions_ & ~signals_.blocked, std::memory_order_relaxed);
  handled_signals_now_.store(handled_dispositions_ & ~signals_.blocked, std::memory_order_relaxed);
  take_host_signals();
  poll_timers();
  std::uint64_t resume_pc = restart_pc ? *restart_pc : cpu_.syscall_return_pc();
  if (sigreturn_pc_) resume_pc = *sigreturn_pc_;
  sigreturn_pc_.reset();
  if (signals_.next_deliverable())
    if (const auto handler = deliver_pending(resume_pc)) {
      cpu_.resume_at(*handler);
      return;
    }
  if (restart_pc) cpu_.resume_at(*restart_pc);  // no handler ran after all: the syscall runs again
}

bool Kernel::restarts_after_handler() const {
  const int signal = signals_.next_deliverable();
  if (!signal || !cpu_.has_signal_frames()) return false;
  const SignalAction action = signal_action(signal);
  return action.handler > kSigIgnore && (action.flags & kSaRestart);
}

void Kernel::read_arguments(SyscallArgs& args) const {
  const arch::SyscallAbi& abi = arch_.syscall_abi;
  for (std::size_t i = 0; i < abi.register_arguments && i < 6; ++i) uc_reg_read(engine_, abi.arg_regs[i], &args[i]);
  if (abi.register_arguments >= 6) return;
  // The rest on the user stack (mips o32). Linux fails the call with EFAULT
  // when those words cannot be read; here they read as 0 (the call then sees
  // 0 arguments, which the handlers check as they check any other value).
  std::uint64_t sp = 0;
  uc_reg_read(engine_, arch_.sp_reg, &sp);
  const std::size_t word = guest_word_bytes();
  for (std::size_t i = abi.register_arguments; i < 6; ++i) {
    std::uint8_t bytes[8] = {};
    args[i] = 0;
    if (!memory_.read(sp + abi.stack_arguments_offset + word * (i - abi.register_arguments), std::span(bytes, word)))
      continue;
    for (std::size_t b = 0; b < word; ++b)
      args[i] |= std::uint64_t{bytes[b]} << (8 * (arch_.little_endian ? b : word - 1 - b));
  }
}

bool Kernel::raises_sigpipe(SyscallId id, const SyscallArgs& a) {
  constexpr std::uint64_t kMsgNosignal = 0x4000;
  switch (id) {
    case SyscallId::write: case SyscallId::writev: case SyscallId::pwrite64: case SyscallId::pwritev:
    case SyscallId::sendfile: case SyscallId::sendfile64: case SyscallId::copy_file_range:
      return true;
    case SyscallId::sendto: return !(a[3] & kMsgNosignal);
    case SyscallId::sendmsg: return !(a[2] & kMsgNosignal);
    default: return false;
  }
}

std::int64_t Kernel::dispatch(SyscallId id, std::uint64_t number, const SyscallArgs& a) {
  if (auto result = compat32_syscall(id, a)) return *result;
  if (auto result = file_syscall(id, a)) return *result;
  if (auto result = memory_syscall(id, a)) return *result;
  if (auto result = net_syscall(id, a)) return *result;
  if (auto result = signal_syscall(id, a)) return *result;
  if (auto result = timer_syscall(id, a)) return *result;
  if (auto result = thread_syscall(id, a)) return *result;
  if (auto result = process_tree_syscall(id, a)) return *result;
  if (auto result = event_syscall(id, a)) return *result;
  if (auto result = process_syscall(id, a)) return *result;
  if (auto result = time_syscall(id, a)) return *result;
  const std::string name = id == SyscallId::unknown ? "syscall " + std::to_string(number)
                                                     : std::string(arch::syscall_name(id)) + " (" +
                                                           std::to_string(number) + ")";
  note_once("unsupported " + name + ": returning ENOSYS");
  return -ENOSYS;
}

std::optional<std::string> Kernel::read_path(std::uint64_t address, int& error) const {
  if (address == 0) {
    error = EFAULT;
    return std::nullopt;
  }
  auto text = memory_.read_string(address, PATH_MAX);
  if (!text) {
    error = memory_.is_mapped(address, 1) ? ENAMETOOLONG : EFAULT;
    return std::nullopt;
  }
  error = 0;
  return text;
}

void Kernel::to_guest_order(std::span<std::uint8_t> bytes, std::initializer_list<std::uint8_t> widths) const {
  if (arch_.little_endian || widths.size() == 0) return;
  std::size_t at = 0;
  while (true) {
    for (const std::uint8_t width : widths) {
      if (width == 0 || at + width > bytes.size()) return;
      std::reverse(bytes.begin() + static_cast<std::ptrdiff_t>(at), bytes.begin() + static_cast<std::ptrdiff_t>(at + width));
      at += width;
    }
  }
}

bool Kernel::copy_out(std::uint64_t address, const void* data, std::size_t size) {
  return memory_.write(address, std::span(static_cast<const std::uint8_t*>(data), size));
}

bool Kernel::copy_in(std::uint64_t address, void* data, std::size_t size) const {
  return memory_.read(address, std::span(static_cast<std::uint8_t*>(data), size));
}

void Kernel::end_with_exit(int code) {
  termination_ = Termination{true, false, code & 0xff, 0, "exited with status " + std::to_string(code & 0xff)};
  uc_emu_stop(engine_);
}

void Kernel::end_with_signal(int signal, std::string description) {
  termination_ = Termination{true, true, 0, signal, std::move(description)};
  uc_emu_stop(engine_);
}

void Kernel::note_once(const std::string& what) {
  if (!noted_.insert(what).second || !config_.diagnostics) return;
  std::fprintf(config_.diagnostics, "tracecorn: %s\n", what.c_str());
}

namespace {

// Index of the path argument of syscalls that take one, for the log; -1 if none.
int path_argument(SyscallId id) {
  switch (id) {
    case SyscallId::open: case SyscallId::stat: case SyscallId::lstat: case SyscallId::access:
    case SyscallId::readlink: case SyscallId::execve: case SyscallId::unlink: case SyscallId::mkdir:
    case SyscallId::rmdir: case SyscallId::chdir: case SyscallId::rename: case SyscallId::creat:
    case SyscallId::chmod: case SyscallId::truncate: case SyscallId::statfs: case SyscallId::getxattr:
    case SyscallId::lgetxattr: case SyscallId::listxattr: case SyscallId::llistxattr: case SyscallId::symlink:
    case SyscallId::link: case SyscallId::chown: case SyscallId::lchown: case SyscallId::utimes:
      return 0;
    case SyscallId::openat: case SyscallId::newfstatat: case SyscallId::statx: case SyscallId::faccessat:
    case SyscallId::faccessat2: case SyscallId::readlinkat: case SyscallId::unlinkat: case SyscallId::mkdirat:
    case SyscallId::renameat: case SyscallId::renameat2: case SyscallId::fchmodat: case SyscallId::fchownat:
    case SyscallId::utimensat: case SyscallId::linkat: case SyscallId::openat2:
      return 1;
    default:
      return -1;
  }
}

}  // namespace

void Kernel::log_syscall(SyscallId id, std::uint64_t number, const SyscallArgs& a, std::int64_t result) {
  // Once the process has more than one thread, each line names its thread, as strace -f does.
  std::string line = threads_.size() > 1 ? "[" + std::to_string(running_->tid) + "] " : "";
  line += id == SyscallId::unknown ? "syscall_" + std::to_string(number) : std::string(arch::syscall_name(id));
  line += '(';
  const int path_index = path_argument(id);
  for (int i = 0; i < 6; ++i) {
    if (i) line += ", ";
    if (i == path_index && a[i]) {
      if (auto text = memory_.read_string(a[i], 512)) {
        line += '"' + *text + '"';
        continue;
      }
    }
    char buffer[24];
    std::snprintf(buffer, sizeof buffer, "0x%llx", static_cast<unsigned long long>(a[i]));
    line += buffer;
  }
  line += ") = ";
  if (termination_.ended && (id == SyscallId::exit || id == SyscallId::exit_group || termination_.by_signal)) {
    line += '?';
  } else if (result == kRestartSys) {
    line += "? ERESTARTSYS";  // blocked (its thread waits; the result comes on a later line) or restarted
  } else if (result < 0 && result > -4096) {
    const char* name = strerrorname_np(static_cast<int>(-result));
    line += std::to_string(result) + " " + (name ? name : "E?");
  } else if (result > 0xffff) {
    char buffer[24];
    std::snprintf(buffer, sizeof buffer, "0x%llx", static_cast<unsigned long long>(result));
    line += buffer;
  } else {
    line += std::to_string(result);
  }
  std::fprintf(config_.syscall_log, "%s\n", line.c_str());
}

}  // namespace tracecorn::linux_layer
