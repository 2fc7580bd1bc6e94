// Role: everything tracecorn knows about 32-bit x86 (i386, i686) Linux guests:
// Unicorn arch/mode, the register table with DWARF numbers (i386 psABI: eax 0,
// ecx 1, edx 2, ebx 3, esp 4, ebp 5, esi 6, edi 7, eip 8, eflags 9, st0-7
// 11-18, xmm0-7 21-28, mxcsr 39, fcw 37, fsw 38, es cs ss ds fs gs 40-45), the
// Linux syscall ABI (`int 0x80`: number in eax, arguments ebx ecx edx esi edi
// ebp, result in eax) and numbering (<asm/unistd_32.h>), TLS through
// set_thread_area and a GDT, `struct stat64` (packed), the no-ASLR layout of
// a 32-bit process under a 64-bit kernel, and the format ids.
// Who calls it: the registry hands the ArchInfo out; the GuestCpu runs on the
// emulation thread inside Unicorn's hooks.
// Invariant: nothing outside arch/ names an i386 register or syscall number.
//
// Unicorn 2.0.1 facts this file relies on (checked on Debian 12's library with
// its Python binding):
// - `int 0x80` reaches UC_HOOK_INTR with intno 0x80 and EIP already past it.
// - UC_MODE_32 runs in protected mode at CPL 0 (CR0 = 0x11). With GDTR set
//   (uc_reg_write UC_X86_REG_GDTR), `mov gs, ax` with a DPL-3 data selector
//   (RPL 3) loads its descriptor and base, from guest code or through
//   uc_reg_write(UC_X86_REG_GS); the descriptor loads are guest memory reads
//   (UC_HOOK_MEM_READ sees them).
// - UC_X86_REG_GS_BASE reads 0 in 32-bit mode whatever GS holds, so the thread
//   pointer is read from our copy of the GDT.
// The vDSO/AT_SYSINFO is not given: glibc then enters the kernel with int 0x80.

#include <algorithm>
#include <cerrno>
#include <utility>

#include <unicorn/x86.h>

#include "arch/arch.h"
#include "arch/signal_frames.h"
#include "arch/syscall_table.h"
#include "arch/x86_common.h"
#include "arch/x86_gdb.h"

namespace tracecorn::arch {
namespace {

constexpr RegisterInfo kRegisters[] = {
    {UC_X86_REG_EAX, "eax", 4, 0},     {UC_X86_REG_ECX, "ecx", 4, 1},
    {UC_X86_REG_EDX, "edx", 4, 2},     {UC_X86_REG_EBX, "ebx", 4, 3},
    {UC_X86_REG_ESP, "esp", 4, 4},     {UC_X86_REG_EBP, "ebp", 4, 5},
    {UC_X86_REG_ESI, "esi", 4, 6},     {UC_X86_REG_EDI, "edi", 4, 7},
    {UC_X86_REG_EIP, "eip", 4, 8},     {UC_X86_REG_EFLAGS, "eflags", 4, 9},
    {UC_X86_REG_ST0, "st0", 10, 11},   {UC_X86_REG_ST1, "st1", 10, 12},
    {UC_X86_REG_ST2, "st2", 10, 13},   {UC_X86_REG_ST3, "st3", 10, 14},
    {UC_X86_REG_ST4, "st4", 10, 15},   {UC_X86_REG_ST5, "st5", 10, 16},
    {UC_X86_REG_ST6, "st6", 10, 17},   {UC_X86_REG_ST7, "st7", 10, 18},
    {UC_X86_REG_XMM0, "xmm0", 16, 21}, {UC_X86_REG_XMM1, "xmm1", 16, 22},
    {UC_X86_REG_XMM2, "xmm2", 16, 23}, {UC_X86_REG_XMM3, "xmm3", 16, 24},
    {UC_X86_REG_XMM4, "xmm4", 16, 25}, {UC_X86_REG_XMM5, "xmm5", 16, 26},
    {UC_X86_REG_XMM6, "xmm6", 16, 27}, {UC_X86_REG_XMM7, "xmm7", 16, 28},
    {UC_X86_REG_FPCW, "fpcw", 2, 37},  {UC_X86_REG_FPSW, "fpsw", 2, 38},
    {UC_X86_REG_MXCSR, "mxcsr", 4, 39},
    {UC_X86_REG_ES, "es", 2, 40},      {UC_X86_REG_CS, "cs", 2, 41},
    {UC_X86_REG_SS, "ss", 2, 42},      {UC_X86_REG_DS, "ds", 2, 43},
    {UC_X86_REG_FS, "fs", 2, 44},      {UC_X86_REG_GS, "gs", 2, 45},
    {UC_X86_REG_FPTAG, "fptag", 2, kNoDwarfNumber},
};

// Sub-registers and their full register, for Capstone's register names.
constexpr X86SubRegister kSubRegisters[] = {
    {"ax", "eax"}, {"al", "eax"}, {"ah", "eax"}, {"bx", "ebx"}, {"bl", "ebx"}, {"bh", "ebx"},
    {"cx", "ecx"}, {"cl", "ecx"}, {"ch", "ecx"}, {"dx", "edx"}, {"dl", "edx"}, {"dh", "edx"},
    {"si", "esi"}, {"di", "edi"}, {"bp", "ebp"}, {"sp", "esp"}, {"ip", "eip"}, {"flags", "eflags"},
};

// From gcc-i686-linux-gnu's <asm/unistd_32.h>, checked by tests/arch/arch_test.cpp.
// Left out on purpose (ENOSYS, so glibc takes its 64-bit path): the calls whose
// structs have word-sized or 32-bit time fields no converter handles yet (old
// stat/fstat/lstat, statfs, getdents, times, sysinfo, getrusage, waitpid/wait4,
// setrlimit, itimers, utimes, select, time, sigaltstack, sendfile with its
// 32-bit offset), and
// get_thread_area.
constexpr SyscallNumber kSyscallNumbers[] = {
    // time32 calls, converted by recorder/linux/syscalls_compat32.cpp.
    {78, SyscallId::gettimeofday}, {162, SyscallId::nanosleep}, {265, SyscallId::clock_gettime},
    {266, SyscallId::clock_getres}, {267, SyscallId::clock_nanosleep},
    // 32-bit uid/gid calls (the unsuffixed ones take 16-bit ids), run by the base calls.
    {198, SyscallId::lchown32}, {199, SyscallId::getuid32}, {200, SyscallId::getgid32},
    {201, SyscallId::geteuid32}, {202, SyscallId::getegid32}, {205, SyscallId::getgroups32},
    {206, SyscallId::setgroups32}, {207, SyscallId::fchown32}, {209, SyscallId::getresuid32},
    {211, SyscallId::getresgid32}, {212, SyscallId::chown32}, {213, SyscallId::setuid32},
    {214, SyscallId::setgid32},
    // i386's own: the old mmap (arguments in memory), socketcall, set_thread_area.
    {90, SyscallId::old_mmap}, {102, SyscallId::socketcall}, {243, SyscallId::set_thread_area},
    {239, SyscallId::sendfile64},
    {0, SyscallId::restart_syscall}, {1, SyscallId::exit}, {2, SyscallId::fork},
    {120, SyscallId::clone}, {435, SyscallId::clone3},
    {7, SyscallId::waitpid}, {114, SyscallId::wait4}, {284, SyscallId::waitid}, {434, SyscallId::pidfd_open},
    {424, SyscallId::pidfd_send_signal},
    {358, SyscallId::execveat},
    {96, SyscallId::getpriority}, {97, SyscallId::setpriority}, {208, SyscallId::setresuid32}, {210, SyscallId::setresgid32},
    {254, SyscallId::epoll_create}, {255, SyscallId::epoll_ctl}, {256, SyscallId::epoll_wait}, {319, SyscallId::epoll_pwait},
    {322, SyscallId::timerfd_create}, {323, SyscallId::eventfd}, {325, SyscallId::timerfd_settime}, {326, SyscallId::timerfd_gettime},
    {410, SyscallId::timerfd_gettime64}, {411, SyscallId::timerfd_settime64},
    {259, SyscallId::timer_create}, {260, SyscallId::timer_settime}, {261, SyscallId::timer_gettime},
    {262, SyscallId::timer_getoverrun}, {263, SyscallId::timer_delete}, {408, SyscallId::timer_gettime64},
    {409, SyscallId::timer_settime64},
    {3, SyscallId::read}, {4, SyscallId::write}, {5, SyscallId::open},
    {6, SyscallId::close}, {8, SyscallId::creat}, {9, SyscallId::link},
    {10, SyscallId::unlink}, {11, SyscallId::execve}, {12, SyscallId::chdir},
    {15, SyscallId::chmod}, {16, SyscallId::lchown}, {19, SyscallId::lseek},
    {20, SyscallId::getpid}, {23, SyscallId::setuid}, {24, SyscallId::getuid},
    {29, SyscallId::pause}, {119, SyscallId::sigreturn}, {176, SyscallId::rt_sigpending}, {177, SyscallId::rt_sigtimedwait}, {179, SyscallId::rt_sigsuspend}, {421, SyscallId::rt_sigtimedwait_time64}, {27, SyscallId::alarm}, {104, SyscallId::setitimer}, {105, SyscallId::getitimer}, {186, SyscallId::sigaltstack}, {33, SyscallId::access}, {36, SyscallId::sync},
    {37, SyscallId::kill}, {38, SyscallId::rename}, {39, SyscallId::mkdir},
    {40, SyscallId::rmdir}, {41, SyscallId::dup}, {42, SyscallId::pipe},
    {45, SyscallId::brk}, {46, SyscallId::setgid}, {47, SyscallId::getgid},
    {49, SyscallId::geteuid}, {50, SyscallId::getegid}, {54, SyscallId::ioctl},
    {55, SyscallId::fcntl}, {57, SyscallId::setpgid}, {60, SyscallId::umask},
    {63, SyscallId::dup2}, {64, SyscallId::getppid}, {65, SyscallId::getpgrp},
    {66, SyscallId::setsid}, {80, SyscallId::getgroups}, {81, SyscallId::setgroups},
    {83, SyscallId::symlink}, {85, SyscallId::readlink}, {91, SyscallId::munmap},
    {92, SyscallId::truncate}, {93, SyscallId::ftruncate}, {94, SyscallId::fchmod},
    {95, SyscallId::fchown}, {122, SyscallId::uname}, {125, SyscallId::mprotect},
    {132, SyscallId::getpgid}, {133, SyscallId::fchdir}, {140, SyscallId::_llseek},
    {143, SyscallId::flock}, {144, SyscallId::msync}, {145, SyscallId::readv},
    {146, SyscallId::writev}, {147, SyscallId::getsid}, {148, SyscallId::fdatasync},
    {150, SyscallId::mlock}, {151, SyscallId::munlock}, {155, SyscallId::sched_getparam},
    {157, SyscallId::sched_getscheduler}, {158, SyscallId::sched_yield}, {163, SyscallId::mremap},
    {165, SyscallId::getresuid}, {168, SyscallId::poll}, {171, SyscallId::getresgid},
    {172, SyscallId::prctl}, {173, SyscallId::rt_sigreturn}, {174, SyscallId::rt_sigaction},
    {175, SyscallId::rt_sigprocmask}, {180, SyscallId::pread64}, {181, SyscallId::pwrite64},
    {182, SyscallId::chown}, {183, SyscallId::getcwd}, {190, SyscallId::vfork},
    {191, SyscallId::ugetrlimit}, {192, SyscallId::mmap2}, {193, SyscallId::truncate64},
    {194, SyscallId::ftruncate64}, {195, SyscallId::stat64}, {196, SyscallId::lstat64},
    {197, SyscallId::fstat64}, {218, SyscallId::mincore}, {219, SyscallId::madvise},
    {220, SyscallId::getdents64}, {221, SyscallId::fcntl64}, {224, SyscallId::gettid},
    {229, SyscallId::getxattr}, {230, SyscallId::lgetxattr}, {231, SyscallId::fgetxattr},
    {232, SyscallId::listxattr}, {233, SyscallId::llistxattr}, {238, SyscallId::tkill},
    {240, SyscallId::futex}, {241, SyscallId::sched_setaffinity}, {242, SyscallId::sched_getaffinity},
    {252, SyscallId::exit_group}, {258, SyscallId::set_tid_address}, {264, SyscallId::clock_settime},
    {270, SyscallId::tgkill}, {295, SyscallId::openat}, {296, SyscallId::mkdirat},
    {298, SyscallId::fchownat}, {300, SyscallId::fstatat64}, {301, SyscallId::unlinkat},
    {302, SyscallId::renameat}, {303, SyscallId::linkat}, {304, SyscallId::symlinkat},
    {305, SyscallId::readlinkat}, {306, SyscallId::fchmodat}, {307, SyscallId::faccessat},
    {311, SyscallId::set_robust_list}, {312, SyscallId::get_robust_list}, {324, SyscallId::fallocate},
    {178, SyscallId::rt_sigqueueinfo}, {335, SyscallId::rt_tgsigqueueinfo}, {321, SyscallId::signalfd}, {327, SyscallId::signalfd4}, {328, SyscallId::eventfd2}, {329, SyscallId::epoll_create1}, {330, SyscallId::dup3},
    {331, SyscallId::pipe2}, {333, SyscallId::preadv}, {334, SyscallId::pwritev},
    {340, SyscallId::prlimit64}, {353, SyscallId::renameat2}, {355, SyscallId::getrandom},
    {356, SyscallId::memfd_create}, {359, SyscallId::socket}, {360, SyscallId::socketpair},
    {361, SyscallId::bind}, {362, SyscallId::connect}, {363, SyscallId::listen},
    {365, SyscallId::getsockopt}, {366, SyscallId::setsockopt}, {367, SyscallId::getsockname},
    {368, SyscallId::getpeername}, {369, SyscallId::sendto}, {371, SyscallId::recvfrom},
    {373, SyscallId::shutdown}, {375, SyscallId::membarrier}, {377, SyscallId::copy_file_range},
    {383, SyscallId::statx}, {386, SyscallId::rseq}, {403, SyscallId::clock_gettime64},
    {406, SyscallId::clock_getres_time64}, {407, SyscallId::clock_nanosleep_time64},
    {422, SyscallId::futex_time64}, {436, SyscallId::close_range}, {437, SyscallId::openat2},
    {439, SyscallId::faccessat2},
};

constexpr SyscallTable kSyscallTable{kSyscallNumbers};

SyscallId i386_syscall_id(std::uint64_t number) { return kSyscallTable(number); }

// The GDT a 32-bit process sees under a 64-bit Linux: 16 entries, the TLS
// entries 12-14 (GDT_ENTRY_TLS_MIN of arch/x86/include/asm/segment.h for
// CONFIG_X86_64), in one page above the process's address space (TASK_SIZE of
// a 32-bit task is 0xffffe000), which the guest cannot map.
constexpr std::uint64_t kGdtAddress = 0xfffff000;
constexpr unsigned kGdtEntries = 16;
constexpr unsigned kTlsFirstEntry = 12;
// GDT_ENTRY_KERNEL_DS, GDT_ENTRY_DEFAULT_USER32_CS, GDT_ENTRY_DEFAULT_USER_DS.
constexpr unsigned kKernelDataEntry = 3, kUserCodeEntry = 4, kUserDataEntry = 5;
constexpr unsigned kTlsEntries = 3;
constexpr std::uint64_t kIntSyscall = 0x80;
constexpr std::uint64_t kIntLength = 2;  // cd 80

// struct user_desc of <asm/ldt.h>, 16 bytes, little endian:
//   0 entry_number u32 | 4 base_addr u32 | 8 limit u32 | 12 flags u32:
//   bit 0 seg_32bit, 1-2 contents, 3 read_exec_only, 4 limit_in_pages,
//   5 seg_not_present, 6 useable.
struct UserDesc {
  std::uint32_t entry, base, limit, flags;
  static UserDesc parse(std::span<const std::uint8_t, 16> bytes) {
    auto word = [&](std::size_t at) {
      return std::uint32_t{bytes[at]} | std::uint32_t{bytes[at + 1]} << 8 | std::uint32_t{bytes[at + 2]} << 16 |
             std::uint32_t{bytes[at + 3]} << 24;
    };
    return {word(0), word(4), word(8), word(12)};
  }
  constexpr unsigned bit(unsigned n) const { return (flags >> n) & 1u; }
  constexpr unsigned contents() const { return (flags >> 1) & 3u; }
  // LDT_empty() of arch/x86/include/asm/desc.h: the descriptor clears the entry.
  bool empty() const {
    return base == 0 && limit == 0 && contents() == 0 && bit(3) == 1 && bit(0) == 0 && bit(4) == 0 &&
           bit(5) == 1 && bit(6) == 0;
  }
  // fill_ldt() of arch/x86/include/asm/desc.h: a DPL-3, S=1 descriptor with the
  // accessed bit set (so the CPU never writes it back).
  constexpr std::uint64_t descriptor() const {
    const std::uint64_t type = ((bit(3) ^ 1u) << 1) | (contents() << 2) | 1u;  // writable/readable, accessed
    const std::uint64_t access = type | (1u << 4) | (3u << 5) | (std::uint64_t{bit(5) ^ 1u} << 7);
    const std::uint64_t flag_bits = (std::uint64_t{bit(6)}) | (std::uint64_t{bit(0)} << 2) | (std::uint64_t{bit(4)} << 3);
    return (limit & 0xffffu) | (std::uint64_t{base & 0xffffffu} << 16) | (access << 40) |
           (std::uint64_t{(limit >> 16) & 0xfu} << 48) | (flag_bits << 52) | (std::uint64_t{base >> 24} << 56);
  }
};

std::uint64_t descriptor_base(std::uint64_t descriptor) {
  return ((descriptor >> 16) & 0xffffffu) | (((descriptor >> 56) & 0xffu) << 24);
}

class I386GuestCpu final : public X86GuestCpuBase {
 public:
  explicit I386GuestCpu(uc_engine* engine) : X86GuestCpuBase(engine, CS_MODE_32, kRegisters, 4) {}
  ~I386GuestCpu() override {
    if (interrupt_hook_) uc_hook_del(engine_, interrupt_hook_);
  }

  Status init() {
    if (auto status = init_x86(); !status) return status;
    if (uc_mem_map(engine_, kGdtAddress, 0x1000, UC_PROT_READ | UC_PROT_WRITE) != UC_ERR_OK)
      return make_error(ErrorCode::kEmulator, "cannot map the GDT page");
    // Flat 4 GiB segments: base 0, limit 0xfffff pages, 32-bit, accessed.
    constexpr UserDesc kFlatData{0, 0, 0xfffff, 0x11}, kFlatCode{0, 0, 0xfffff, 0x15};
    constexpr std::uint64_t kDpl3 = 3ull << 45;
    if (!write_entry(kKernelDataEntry, kFlatData.descriptor() & ~kDpl3) ||
        !write_entry(kUserCodeEntry, kFlatCode.descriptor()) || !write_entry(kUserDataEntry, kFlatData.descriptor()))
      return make_error(ErrorCode::kEmulator, "cannot write the GDT");
    uc_x86_mmr gdtr{0, kGdtAddress, kGdtEntries * 8 - 1, 0};
    if (uc_reg_write(engine_, UC_X86_REG_GDTR, &gdtr) != UC_ERR_OK)
      return make_error(ErrorCode::kEmulator, "cannot set GDTR");
    // Segment loads recompute the stack size from SS's descriptor (QEMU's
    // cpu_x86_load_seg_cache): with Unicorn's descriptor-less SS, the first
    // `mov gs` would make the stack 16-bit. So SS gets a real flat descriptor;
    // the guest runs at CPL 0 in Unicorn, and SS's DPL must equal the CPL, so
    // it is the kernel data segment 0x18 instead of Linux's 0x2b.
    const std::pair<int, std::uint32_t> kSegments[] = {
        {UC_X86_REG_SS, kKernelDataEntry * 8}, {UC_X86_REG_DS, kUserDataEntry * 8 + 3},
        {UC_X86_REG_ES, kUserDataEntry * 8 + 3}, {UC_X86_REG_CS, kUserCodeEntry * 8 + 3}};
    for (const auto& [reg, selector] : kSegments)
      if (uc_reg_write(engine_, reg, &selector) != UC_ERR_OK)
        return make_error(ErrorCode::kEmulator, "cannot load the flat segments");
    return ok_status();
  }

  Status install_syscall_trap(SyscallCallback callback, void* user) override {
    callback_ = callback;
    user_ = user;
    if (uc_hook_add(engine_, &interrupt_hook_, UC_HOOK_INTR, reinterpret_cast<void*>(&on_interrupt), this, 1, 0) !=
        UC_ERR_OK)
      return make_error(ErrorCode::kEmulator, "cannot hook int 0x80");
    return ok_status();
  }

  // EIP is past the `int 0x80` (2 bytes) inside the interrupt hook.
  std::uint64_t trap_pc() const override { return eip() - kIntLength; }
  void resume_at(std::uint64_t pc) override {
    std::uint32_t value = static_cast<std::uint32_t>(pc);
    uc_reg_write(engine_, UC_X86_REG_EIP, &value);
  }
  // int 0x80 changes no register besides the result.
  void apply_kernel_exit_effects() override {}

  bool has_signal_frames() const override { return true; }
  std::uint64_t syscall_return_pc() const override { return eip(); }
  SignalFrame build_signal_frame(const SignalFrameRequest& request) const override {
    return i386_build_signal_frame(engine_, request);
  }
  void enter_signal_handler(const SignalFrameRequest& request, const SignalFrame& frame) override {
    i386_enter_signal_handler(engine_, request, frame);
  }
  std::optional<SignalReturn> return_from_signal(bool rt) override { return i386_return_from_signal(engine_, rt); }

  int signal_for_interrupt(std::uint32_t interrupt_number) const override {
    return interrupt_number == kIntSyscall ? 0 : X86GuestCpuBase::signal_for_interrupt(interrupt_number);
  }

  // The kernel's way for a 32-bit process is set_thread_area; this installs
  // `value` as the base of the first TLS entry (flat 4 GiB data segment) and
  // loads GS with it, as glibc does after set_thread_area.
  Status set_thread_pointer(std::uint64_t value) override {
    const UserDesc desc{kTlsFirstEntry, static_cast<std::uint32_t>(value), 0xfffff, 0x51};  // 32-bit, pages, useable
    if (!write_entry(kTlsFirstEntry, desc.descriptor()))
      return make_error(ErrorCode::kEmulator, "cannot write the GDT");
    std::uint32_t selector = kTlsFirstEntry * 8 + 3;
    if (uc_reg_write(engine_, UC_X86_REG_GS, &selector) != UC_ERR_OK)
      return make_error(ErrorCode::kEmulator, "cannot load GS");
    return ok_status();
  }

  void reload_thread_pointer() override {
    std::uint32_t selector = 0;
    uc_reg_read(engine_, UC_X86_REG_GS, &selector);
    if (selector) uc_reg_write(engine_, UC_X86_REG_GS, &selector);
  }

  // The base of the descriptor GS selects (0 for the null selector).
  std::uint64_t thread_pointer() const override { return segment_base(X86_REG_GS); }

  int set_thread_area(std::span<std::uint8_t, 16> user_desc) override {
    UserDesc desc = UserDesc::parse(user_desc);
    if (desc.entry == 0xffffffffu) {
      for (unsigned i = 0; i < kTlsEntries && desc.entry == 0xffffffffu; ++i)
        if (gdt_[kTlsFirstEntry + i] == 0) desc.entry = kTlsFirstEntry + i;
      if (desc.entry == 0xffffffffu) return -ESRCH;
      for (unsigned b = 0; b < 4; ++b) user_desc[b] = static_cast<std::uint8_t>(desc.entry >> (8 * b));
    }
    if (desc.entry < kTlsFirstEntry || desc.entry >= kTlsFirstEntry + kTlsEntries) return -EINVAL;
    if (desc.contents() == 3 && desc.bit(5) == 0) return -EINVAL;  // conforming code, present: refused
    return write_entry(desc.entry, desc.empty() ? 0 : desc.descriptor()) ? 0 : -EFAULT;
  }

 protected:
  std::uint64_t segment_base(unsigned capstone_segment) const override {
    int uc_segment = 0;
    if (capstone_segment == X86_REG_GS) uc_segment = UC_X86_REG_GS;
    else if (capstone_segment == X86_REG_FS) uc_segment = UC_X86_REG_FS;
    else return 0;
    std::uint32_t selector = 0;
    uc_reg_read(engine_, uc_segment, &selector);
    const unsigned index = (selector & 0xffffu) >> 3;
    if ((selector & 4u) || index == 0 || index >= kGdtEntries) return 0;  // LDT or null: no base we know
    return descriptor_base(gdt_[index]);
  }

 private:
  std::uint64_t eip() const {
    std::uint32_t value = 0;
    uc_reg_read(engine_, UC_X86_REG_EIP, &value);
    return value;
  }

  bool write_entry(unsigned index, std::uint64_t descriptor) {
    gdt_[index] = descriptor;
    std::uint8_t bytes[8];
    for (unsigned b = 0; b < 8; ++b) bytes[b] = static_cast<std::uint8_t>(descriptor >> (8 * b));
    return uc_mem_write(engine_, kGdtAddress + index * 8, bytes, sizeof bytes) == UC_ERR_OK;
  }

  static void on_interrupt(uc_engine*, std::uint32_t number, void* user) noexcept {
    auto* self = static_cast<I386GuestCpu*>(user);
    if (number == kIntSyscall) self->callback_(self->user_);
  }

  uc_hook interrupt_hook_ = 0;
  SyscallCallback callback_ = nullptr;
  void* user_ = nullptr;
  std::array<std::uint64_t, kGdtEntries> gdt_{};  // what the GDT page holds
};

// For handlers without SA_RESTORER (glibc always gives one): the vDSO's
// __kernel_sigreturn (popl %eax; movl $119, %eax; int $0x80) at +0 and
// __kernel_rt_sigreturn (movl $173, %eax; int $0x80) at +8.
constexpr std::uint8_t kSigreturnTrampoline[] = {0x58, 0xb8, 119, 0, 0, 0, 0xcd, 0x80,
                                                 0xb8, 173, 0, 0, 0, 0xcd, 0x80, 0x90};

Expected<std::unique_ptr<GuestCpu>> make_i386_guest_cpu(uc_engine* engine) {
  auto cpu = std::make_unique<I386GuestCpu>(engine);
  if (auto status = cpu->init(); !status) return status.error();
  return std::unique_ptr<GuestCpu>(std::move(cpu));
}

// struct stat64 of arch/x86/include/uapi/asm/stat.h for __i386__, packed, 96 bytes:
//   0 dev u64 | 8 pad[4] | 12 __st_ino u32 | 16 mode u32 | 20 nlink u32 | 24 uid | 28 gid
//  32 rdev u64 | 40 pad[4] | 44 size i64 | 52 blksize u32 | 56 blocks u64 | 64 atime u32
//  68 atime_nsec | 72 mtime | 76 mtime_nsec | 80 ctime | 84 ctime_nsec | 88 ino u64
// (arm's EABI stat64 aligns size and blocks to 8: 48 and 64, 104 bytes.)
std::size_t i386_encode_stat(const FileStatus& s, std::span<std::uint8_t, kMaxStatBytes> out) {
  constexpr std::size_t kSize = 96;
  std::fill_n(out.begin(), kSize, std::uint8_t{0});
  const StructField fields[] = {
      {0, 8, s.dev},         {12, 4, s.ino},        {16, 4, s.mode},       {20, 4, s.nlink},
      {24, 4, s.uid},        {28, 4, s.gid},        {32, 8, s.rdev},       {44, 8, s.size},
      {52, 4, s.blksize},    {56, 8, s.blocks},     {64, 4, s.atime_sec},  {68, 4, s.atime_nsec},
      {72, 4, s.mtime_sec},  {76, 4, s.mtime_nsec}, {80, 4, s.ctime_sec},  {84, 4, s.ctime_nsec},
      {88, 8, s.ino},
  };
  for (const auto& field : fields) store_field(out, field, true);
  return kSize;
}

const X86CapstoneRegisterMap& capstone_map() {
  static const X86CapstoneRegisterMap kMap(CS_MODE_32, kRegisters, kSubRegisters);
  return kMap;
}
int i386_register_index_for_capstone(unsigned capstone_register) { return capstone_map()(capstone_register); }
void i386_add_unlisted_writes(const cs_insn& insn, std::vector<std::uint16_t>& written) {
  x86_add_unlisted_writes(kRegisters, {.flags = "eflags", .accumulator = "eax"}, insn, written);
}
void i386_address_registers(const cs_insn& insn, std::vector<std::uint16_t>& base, std::vector<std::uint16_t>& index) {
  x86_address_registers(capstone_map(), insn, base, index);
}

constexpr std::uint16_t kEm386 = 3;

// Tenet's x86 definition (plugins/tenet/trace/arch/x86.py): the general
// registers and eip.
constexpr TenetRegister kTenetRegisters[] = {{"eax", "eax"}, {"ebx", "ebx"}, {"ecx", "ecx"}, {"edx", "edx"},
                                             {"ebp", "ebp"}, {"esp", "esp"}, {"esi", "esi"}, {"edi", "edi"},
                                             {"eip", "eip"}};

}  // namespace

const ArchInfo& i386_arch() {
  // Unicorn's and Capstone's view of it (arch/arch_engine.h).
  static constexpr ArchEngine kEngine{
      .unicorn_arch = UC_ARCH_X86,
      .unicorn_mode = UC_MODE_32,
      .capstone_arch = CS_ARCH_X86,
      .capstone_mode = CS_MODE_32,
      .make_guest_cpu = &make_i386_guest_cpu,
      .register_index_for_capstone = &i386_register_index_for_capstone,
      .add_unlisted_writes = &i386_add_unlisted_writes,
      .count_memory_accesses = &x86_count_memory_accesses,
      .address_registers = &i386_address_registers,
      .describe_derived_writes = &x86_describe_derived_writes,
  };
  // The trampoline page's sequences are glibc's __restore and __restore_rt too.
  static const SignalTrampoline kTrampolines[] = {
      {std::span(kSigreturnTrampoline).first(8), i386_signal_saved_registers(false), false},
      {std::span(kSigreturnTrampoline).subspan(8, 7), i386_signal_saved_registers(true)}};
  static const ArchInfo kInfo{
      .name = "i386",
      .elf_machine = kEm386,
      .elf_64bit = false,
      .little_endian = true,
      .platform = "i686",
      .uname_machine = "i686",
      .registers = kRegisters,
      .pc_reg = UC_X86_REG_EIP,
      .sp_reg = UC_X86_REG_ESP,
      .fp_reg = UC_X86_REG_EBP,
      .syscall_abi = {.number_reg = UC_X86_REG_EAX,
                      .arg_regs = {UC_X86_REG_EBX, UC_X86_REG_ECX, UC_X86_REG_EDX, UC_X86_REG_ESI, UC_X86_REG_EDI,
                                   UC_X86_REG_EBP},
                      .return_reg = UC_X86_REG_EAX,
                      .trap_instruction = "int 0x80",
                      .trap_length = kIntLength,
                      .clone_tls_before_child_tid = true,
                      .clone_tls_is_user_desc = true,
                      .epoll_event_packed = true},
      .aligned_argument_pairs = false,
      .signal_abi = {.sigreturn_trampoline = kSigreturnTrampoline, .trampolines = kTrampolines},
      .open_flags = {},  // i386 uses asm-generic/fcntl.h's values, as x86-64
      .encode_stat = &i386_encode_stat,
      // A 32-bit process under 64-bit Linux, randomisation off: TASK_SIZE =
      // IA32_PAGE_OFFSET = 0xffffe000 = STACK_TOP; mmap_base = STACK_TOP - 128 MiB
      // gap; PIE programs load at 0x56555000 (as `setarch -R` shows them).
      .layout = {.stack_top = 0xffffe000,
                 .stack_size = 8ull << 20,
                 .mmap_top = 0xf7ffe000,
                 .et_dyn_base = 0x56555000,
                 .lowest_mmap = 0x10000},
      // UCIR "x86" (usercorn's name); bap-frames i386 9 with bfd_mach_i386_i386 = 1;
      // binary trace v1.0 defines no 32-bit x86 machine.
      .format_ids = {.ucir_arch = "x86", .bap_architecture = 9, .bap_machine = 1, .bintrace_magic = 0,
                     .bintrace = nullptr, .tenet_registers = kTenetRegisters},
      .gdb = &i386_gdb_target(),
      .syscall_id = &i386_syscall_id,
      .engine = &kEngine,
      .reads_host_clock = &x86_reads_host_clock,
  };
  return kInfo;
}

}  // namespace tracecorn::arch
