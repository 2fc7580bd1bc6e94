// Role: the table of samples where qemu-user 7.2 itself departs from Linux,
// each with its evidence; the cross-architecture sample tests take the native
// run of the host build as the reference for these (or leave them out).
// Invariant: constant data, read from any thread.
#include "qemu_deviations.h"

#include <string_view>

namespace tracecorn::behaviour {
namespace {

struct QemuDeviation {
  std::string_view sample;
  std::string_view evidence;
  std::string_view arch = {};  // empty: every architecture
};

constexpr QemuDeviation kQemuDeviations[] = {
    {"pidfd_wait",
     "qemu-mips-static 7.2 passes pidfd_open's flags to the host untranslated (`qemu-mipsel-static -strace` shows "
     "'pidfd_open(PID,128)'): mips' PIDFD_NONBLOCK, its O_NONBLOCK 0x80, is the host's O_EXCL (EINVAL before Linux "
     "6.9, PIDFD_THREAD since), so the pidfd blocks and the sample's waitid on a live child never returns; Linux "
     "takes 0x80 as O_NONBLOCK on mips (kernel/pid.c, PIDFD_NONBLOCK = O_NONBLOCK), and the output does not depend "
     "on the architecture, so the native x86-64 run is the reference",
     "mips"},
    {"pidfd_wait", "the same qemu 7.2 behaviour as for mips", "mipsel"},
    {"child_reaping",
     "qemu-user 7.2 does not honour SIGCHLD's SA_NOCLDWAIT on any architecture (qemu-aarch64-static, "
     "qemu-arm-static and qemu-x86_64-static all print 'wait gives a child': the ended child stays a zombie); "
     "Linux reaps it at once and the wait gives ECHILD (kernel/signal.c do_notify_parent, generic code), so the "
     "native x86-64 run is the reference"},
    {"signal_fd",
     "qemu-user 7.2 reads a signalfd into a buffer of its own: a read into an unmapped address gives EFAULT and "
     "leaves the signal pending (Linux takes it: the next read gives EAGAIN), and signalfd4 with a 4-byte mask "
     "succeeds (Linux: EINVAL); the native x86-64 run is the reference"},
    {"bad_pointers",
     "qemu-user 7.2 checks guest buffers before making the host call: read(0, unmapped, 8) at end of file gives "
     "EFAULT (Linux: 0, the native x86-64 run) and a path running into an unmapped page EFAULT (Linux: "
     "ENAMETOOLONG); both paths are generic kernel code, the same on arm64"},
    {"mmap_file",
     "qemu-i386-static 7.2 loses the first page of a mapping that mremap shrank in place after growing it (the "
     "sample then dies of SIGSEGV at that page under qemu, `qemu-i386-static -strace` shows the two mremaps "
     "succeeding); Linux keeps it (the native x86-64 run, and qemu-aarch64-static, print 'shrunk keeps its first "
     "page: yes')",
     "i386"},
    {"divide_by_zero",
     "qemu-mips-static 7.2 sends SIGTRAP for the `teq $divisor,$zero,7` gcc emits before the division (for every "
     "break and trap code); Linux's do_trap_or_bp (arch/mips/kernel/traps.c) sends SIGFPE for codes 6 and 7, as "
     "the x86-64 CPU does for the division itself (the native run)",
     "mips"},
    {"divide_by_zero", "the same qemu 7.2 behaviour as for mips", "mipsel"},
    {"futex_ops",
     "qemu-mips-static 7.2's FUTEX_WAKE_OP stores the new value with its bytes swapped (the sample prints 'word b "
     "is now 50331648', 0x03000000); Linux stores 3 (kernel/futex/waitwake.c futex_atomic_op_inuser, generic "
     "code: the native x86-64 run and qemu-mipsel-static print 3)",
     "mips"},
    {"robust_mutex",
     "qemu-user 7.2 answers set_robust_list with ENOSYS (`qemu-arm-static -strace` shows 'set_robust_list(...) = -1 "
     "errno=38'), so glibc cannot flag a dead owner's lock and the sample hangs in pthread_mutex_lock; Linux walks "
     "the robust list at thread exit (kernel/futex/core.c exit_robust_list, generic code: the native x86-64 run)"},
    {"thread_abuse",
     "qemu-user 7.2 answers set_robust_list, get_robust_list and clone3 with ENOSYS (`qemu-aarch64-static -strace` "
     "shows 'clone3(...) = -1 errno=38'), so none of their argument checks runs; Linux checks the robust list "
     "head's size (EINVAL), the thread (ESRCH) and the answer's address (EFAULT), and clone3's block (EINVAL under "
     "64 bytes, E2BIG past a page or with a non-zero tail, EFAULT unreadable): generic code in kernel/futex/syscalls.c "
     "and kernel/fork.c, so the native x86-64 run is the reference"},
    {"posix_timers",
     "qemu-mips-static 7.2 gives a POSIX timer's signal si_code -2, the generic SI_TIMER; mips' SI_TIMER is -3 "
     "(arch/mips/include/uapi/asm/siginfo.h swaps SI_ASYNCIO and SI_TIMER; Debian's mips-linux-gnu asm/siginfo.h "
     "says the same), so under qemu the sample prints 'SI_TIMER and value right: no' and glibc's SIGEV_THREAD "
     "helper, which waits for SI_TIMER, never runs the callback (the sample hangs); the native x86-64 run is the "
     "reference",
     "mips"},
    {"posix_timers", "the same qemu 7.2 behaviour as for mips", "mipsel"},
    {"thread_timer_spin",
     "qemu-mips-static 7.2 gives a POSIX timer's signal si_code -2 (the generic SI_TIMER), where mips' SI_TIMER is "
     "-3 (see posix_timers): the sample prints 'si_code SI_TIMER: no'; the native x86-64 run is the reference",
     "mips"},
    {"thread_timer_spin", "the same qemu 7.2 behaviour as for mips", "mipsel"},
    {"exec_programs",
     "qemu-user 7.2 hands an execve to the host kernel, which runs another architecture's ELF only through a "
     "binfmt_misc entry (none is registered on the test machines: the exec of the sample itself fails with ENOEXEC "
     "and its child exits 98); on the guest's own machine Linux runs it (fs/binfmt_elf.c, generic: the native "
     "x86-64 run is the reference)"},
    {"signal_fd_exec", "as exec_programs: qemu-user 7.2 cannot exec the sample's own ELF without binfmt_misc; the "
                       "native x86-64 run is the reference"},
    {"parent_death",
     "the same qemu-user 7.2 execve as for exec_programs: the child's exec of the sample itself fails (no binfmt_misc "
     "entry), so it never waits for its parent's end; the native x86-64 run is the reference"},
    {"debug_processes",
     "the same qemu-user 7.2 execve as for exec_programs: the forked child's exec of the sample itself fails (no "
     "binfmt_misc entry) and it exits 15; the native x86-64 run is the reference"},
    {"signal_handlers",
     "qemu-riscv64-static 7.2 does not block a handler's sa_mask while it runs (the SIGUSR2 raised inside the "
     "SIGUSR1 handler is delivered at once); Linux blocks it (kernel/signal.c, generic code: the native x86-64 run "
     "and qemu-aarch64-static block it)",
     "riscv64"},
};

}  // namespace

bool qemu_deviates(const std::string& name, const std::string& arch) {
  for (const auto& deviation : kQemuDeviations)
    if (deviation.sample == name && (deviation.arch.empty() || deviation.arch == arch)) return true;
  return false;
}

}  // namespace tracecorn::behaviour
