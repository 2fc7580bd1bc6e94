// Role: the process family of syscalls: identity (pids, uids), exit_group,
// resource limits, uname, TLS, and the refusals (fork, exec) that end in a
// clear note (threads, futexes: syscalls_thread.cpp; signals:
// syscalls_signal.cpp; network: syscalls_net.cpp).
#include <sched.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/sysinfo.h>
#include <sys/times.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>

#include "recorder/linux/kernel.h"
#include "recorder/linux/syscall_helpers.h"

namespace tracecorn::linux_layer {

using arch::SyscallId;

int Kernel::current_rlimit(int resource, std::uint64_t (&current)[2]) const {
  if (rlimits_[resource][0]) {
    current[0] = *rlimits_[resource][0];
    current[1] = *rlimits_[resource][1];
    return 0;
  }
  if (resource == RLIMIT_AS && memory_.limit()) {  // --max-memory is the guest's address-space limit
    current[0] = current[1] = memory_.limit();
    return 0;
  }
  struct rlimit host {};
  if (::getrlimit(static_cast<__rlimit_resource>(resource), &host) != 0) return errno;
  current[0] = host.rlim_cur;
  current[1] = host.rlim_max;
  return 0;
}

std::int64_t Kernel::do_prlimit(int guest_resource, std::uint64_t new_limit, std::uint64_t old_limit) {
  const int resource = arch::rlimit_resource_to_host(arch_, guest_resource);  // kept by the host's numbers
  if (resource < 0 || resource >= RLIM_NLIMITS || resource >= 16) return -EINVAL;
  std::uint64_t incoming[2] = {};
  if (new_limit && !copy_in(new_limit, incoming, sizeof incoming)) return -EFAULT;
  to_guest_order(incoming, {8});
  if (new_limit && incoming[0] > incoming[1]) return -EINVAL;
  if (old_limit) {
    std::uint64_t current[2];
    if (const int error = current_rlimit(resource, current)) return -error;
    to_guest_order(current, {8});
    if (!copy_out(old_limit, current, sizeof current)) return -EFAULT;
  }
  if (new_limit) {
    rlimits_[resource][0] = incoming[0];
    rlimits_[resource][1] = incoming[1];
  }
  return 0;
}

std::int64_t Kernel::do_prctl(const SyscallArgs& a) {
  switch (static_cast<int>(a[0])) {
    case 15: {  // PR_SET_NAME
      char name[16] = {};
      auto text = memory_.read_string(a[1], 4096);
      if (!text) return -EFAULT;
      std::strncpy(name, text->c_str(), 15);
      std::memcpy(thread_name_, name, sizeof name);
      return 0;
    }
    case 16:  // PR_GET_NAME
      return copy_out(a[1], thread_name_, sizeof thread_name_) ? 0 : -EFAULT;
    case 1: {  // PR_SET_PDEATHSIG: the signal this process gets when its parent ends
      // Set on the host process that runs this guest process (a guest's parent
      // is its host parent): the host kernel sends it, clears it in a forked
      // child and keeps it across execve, and the signal watcher passes it on.
      if (a[1] > static_cast<std::uint64_t>(kMaxSignal)) return -EINVAL;
      const int host_signal = arch::signal_to_host(arch_, static_cast<int>(a[1]));
      if (a[1] != 0 && host_signal == 0) return -EINVAL;
      return host_result(::prctl(PR_SET_PDEATHSIG, static_cast<unsigned long>(host_signal)));
    }
    case 2: {  // PR_GET_PDEATHSIG: an int at a[1]
      int host_signal = 0;
      if (::prctl(PR_GET_PDEATHSIG, &host_signal) != 0) return -errno;
      return copy_out_words32(a[1], {static_cast<std::uint32_t>(arch::signal_to_guest(arch_, host_signal))}) ? 0
                                                                                                       : -EFAULT;
    }
    case 3: case 4:   // PR_GET_DUMPABLE, PR_SET_DUMPABLE
    case 38: case 39: // PR_SET_NO_NEW_PRIVS, PR_GET_NO_NEW_PRIVS
      return 0;
    default:
      note_once("prctl option " + std::to_string(a[0]) + " is not supported: returning EINVAL");
      return -EINVAL;
  }
}

std::optional<std::int64_t> Kernel::process_syscall(SyscallId id, const SyscallArgs& a) {
  const std::int64_t own_pid = ::getpid();
  switch (id) {
    case SyscallId::getpid: return own_pid;
    case SyscallId::getuid: return ::getuid();
    case SyscallId::geteuid: return ::geteuid();
    case SyscallId::getgid: return ::getgid();
    case SyscallId::getegid: return ::getegid();
    case SyscallId::getpgrp: return ::getpgrp();
    case SyscallId::getpgid: return host_result(::getpgid(static_cast<pid_t>(a[0])));
    case SyscallId::getsid: return host_result(::getsid(static_cast<pid_t>(a[0])));
    case SyscallId::getresuid: case SyscallId::getresgid: {
      std::uint32_t ids[3];
      if (id == SyscallId::getresuid) {
        uid_t r, e, s;
        ::getresuid(&r, &e, &s);
        ids[0] = r, ids[1] = e, ids[2] = s;
      } else {
        gid_t r, e, s;
        ::getresgid(&r, &e, &s);
        ids[0] = r, ids[1] = e, ids[2] = s;
      }
      for (int i = 0; i < 3; ++i)
        if (!copy_out(a[static_cast<std::size_t>(i)], &ids[i], sizeof ids[i])) return -EFAULT;
      return 0;
    }
    case SyscallId::getgroups: {
      const int size = static_cast<int>(a[0]);
      if (size < 0) return -EINVAL;
      std::vector<gid_t> groups(static_cast<std::size_t>(size));
      const int count = ::getgroups(size, groups.data());
      if (count < 0) return -errno;
      if (size && !copy_out(a[1], groups.data(), static_cast<std::size_t>(count) * sizeof(gid_t))) return -EFAULT;
      return count;
    }
    case SyscallId::setuid: case SyscallId::setgid: {
      // Only "changes" to the current id succeed: tracecorn never changes its own identity.
      const std::uint64_t current = id == SyscallId::setuid ? ::geteuid() : ::getegid();
      return static_cast<std::uint32_t>(a[0]) == current ? 0 : -EPERM;
    }
    case SyscallId::setgroups: return -EPERM;
    case SyscallId::exit_group:
      end_with_exit(static_cast<int>(a[0]));
      return 0;
    case SyscallId::arch_prctl: {
      constexpr std::uint64_t kArchSetFs = 0x1002, kArchGetFs = 0x1003;
      if (a[0] == kArchSetFs) return cpu_.set_thread_pointer(a[1]) ? 0 : -EINVAL;
      if (a[0] == kArchGetFs) {
        const std::uint64_t value = cpu_.thread_pointer();
        return copy_out(a[1], &value, sizeof value) ? 0 : -EFAULT;
      }
      return -EINVAL;
    }
    case SyscallId::rseq: return -ENOSYS;  // glibc then runs without restartable sequences
    case SyscallId::prlimit64:
      if (a[0] != 0 && static_cast<std::int64_t>(a[0]) != own_pid) return -EPERM;
      return do_prlimit(static_cast<int>(a[1]), a[2], a[3]);
    case SyscallId::getrlimit: return do_prlimit(static_cast<int>(a[0]), 0, a[1]);
    case SyscallId::setrlimit: return do_prlimit(static_cast<int>(a[0]), a[1], 0);
    case SyscallId::uname: {
      struct utsname name {};
      if (::uname(&name) != 0) return -errno;
      std::memset(name.machine, 0, sizeof name.machine);
      std::memcpy(name.machine, arch_.uname_machine.data(),
                  std::min(arch_.uname_machine.size(), sizeof name.machine - 1));
      return copy_out(a[0], &name, sizeof name) ? 0 : -EFAULT;
    }
    case SyscallId::sysinfo: {
      struct sysinfo info {};
      if (::sysinfo(&info) != 0) return -errno;
      return copy_out(a[0], &info, sizeof info) ? 0 : -EFAULT;
    }
    case SyscallId::getrusage: {
      struct rusage usage {};
      if (::getrusage(static_cast<int>(a[0]), &usage) != 0) return -errno;
      return copy_out(a[1], &usage, sizeof usage) ? 0 : -EFAULT;
    }
    case SyscallId::times: {
      struct tms buffer {};
      const clock_t ticks = ::times(&buffer);
      if (a[0] && !copy_out(a[0], &buffer, sizeof buffer)) return -EFAULT;
      return ticks;
    }
    case SyscallId::prctl: return do_prctl(a);
    case SyscallId::sched_setaffinity: case SyscallId::sched_getparam: case SyscallId::sched_getscheduler:
      return 0;
    case SyscallId::membarrier: return 0;
    // Code the guest wrote is what Unicorn fetches next (it drops its
    // translations of written code), so these only check their arguments.
    case SyscallId::cacheflush:
      if (arch_.syscall_abi.private_base) {  // arm's (start, end, flags): do_cache_op
        if (a[1] < a[0] || a[2]) return -EINVAL;
        return memory_.is_mapped(a[0], a[1] - a[0]) ? 0 : -EFAULT;
      }
      return a[1] == 0 || memory_.is_mapped(a[0], a[1]) ? 0 : -EFAULT;  // mips' (address, bytes, cache)
    case SyscallId::riscv_flush_icache:  // (start, end, flags): flags beyond SYS_RISCV_FLUSH_ICACHE_LOCAL
      return a[2] & ~std::uint64_t{1} ? -EINVAL : 0;
    default:
      return std::nullopt;
  }
}

}  // namespace tracecorn::linux_layer
