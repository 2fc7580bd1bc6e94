// Role: everything tracecorn knows about 32-bit MIPS (o32 ABI) Linux guests, in
// both byte orders (two ArchInfo entries, "mips" big endian and "mipsel" little
// endian, sharing every table here): Unicorn arch/mode, the register table with
// DWARF numbers (GCC's MIPS numbering: r0-r31 0-31, f0-f31 32-63, hi 64, lo 65,
// the pc 66: GCC's DWARF_ALT_FRAME_RETURN_COLUMN, where libgcc's signal frames
// keep it),
// the Linux o32 syscall ABI (`syscall`: number 4000 + n in v0, arguments a0-a3
// then the 5th and 6th words on the stack at sp+16 and sp+20, result in v0 with
// a3 = 0, or a3 = 1 and v0 = the positive MIPS errno), the numbering
// (<asm/unistd_o32.h>), TLS through set_thread_area into CP0 UserLocal (what
// `rdhwr $3, $29` reads), mips' own `struct stat64`, open flags and errno
// values, the 2G/2G no-ASLR layout, the format ids and the sigreturn
// trampoline (the signal frames themselves: arch/mips_signal.cpp).
// Who calls it: the registry hands the ArchInfos out; the GuestCpu runs on the
// emulation thread inside Unicorn's hooks.
// Invariant: nothing outside arch/ names a MIPS register, syscall or errno number.
//
// Unicorn 2.0.1 facts this file relies on (checked on Debian 12's library with
// its Python binding, both byte orders):
// - `syscall` reaches UC_HOOK_INTR with intno 17 (QEMU's EXCP_SYSCALL) and the
//   PC already past it (syscall at A: PC = A + 4 in the hook; resuming there
//   runs the next instruction).
// - `rdhwr $3, $29` reads UC_MIPS_REG_CP0_USERLOCAL; the CPU (default model
//   74Kf, MIPS32r2 with an FPU) starts with Status = 0x20400004: CU1 set (the
//   FPU usable), FR = 0 (the o32 FP32/FPXX register model Debian's glibc uses).
// - uc_reg_read/uc_reg_write of the FPU registers (UC_MIPS_REG_F0...) are
//   ignored (reads give 0 whatever the FPU holds: `add.d` then `mfc1` shows the
//   value while UC_MIPS_REG_F2 reads 0), so the table leaves f0-f31 out rather
//   than record zeros: FP register values are not in traces.
#include <algorithm>
#include <csignal>
#include <optional>

#include <unicorn/mips.h>

#include "arch/arch.h"
#include "arch/interrupt_trap_cpu.h"
#include "arch/signal_frames.h"
#include "arch/syscall_table.h"

namespace tracecorn::arch {
namespace {

constexpr RegisterInfo kRegisters[] = {
    {UC_MIPS_REG_0, "zero", 4, 0},  {UC_MIPS_REG_1, "at", 4, 1},    {UC_MIPS_REG_2, "v0", 4, 2},
    {UC_MIPS_REG_3, "v1", 4, 3},    {UC_MIPS_REG_4, "a0", 4, 4},    {UC_MIPS_REG_5, "a1", 4, 5},
    {UC_MIPS_REG_6, "a2", 4, 6},    {UC_MIPS_REG_7, "a3", 4, 7},    {UC_MIPS_REG_8, "t0", 4, 8},
    {UC_MIPS_REG_9, "t1", 4, 9},    {UC_MIPS_REG_10, "t2", 4, 10},  {UC_MIPS_REG_11, "t3", 4, 11},
    {UC_MIPS_REG_12, "t4", 4, 12},  {UC_MIPS_REG_13, "t5", 4, 13},  {UC_MIPS_REG_14, "t6", 4, 14},
    {UC_MIPS_REG_15, "t7", 4, 15},  {UC_MIPS_REG_16, "s0", 4, 16},  {UC_MIPS_REG_17, "s1", 4, 17},
    {UC_MIPS_REG_18, "s2", 4, 18},  {UC_MIPS_REG_19, "s3", 4, 19},  {UC_MIPS_REG_20, "s4", 4, 20},
    {UC_MIPS_REG_21, "s5", 4, 21},  {UC_MIPS_REG_22, "s6", 4, 22},  {UC_MIPS_REG_23, "s7", 4, 23},
    {UC_MIPS_REG_24, "t8", 4, 24},  {UC_MIPS_REG_25, "t9", 4, 25},  {UC_MIPS_REG_26, "k0", 4, 26},
    {UC_MIPS_REG_27, "k1", 4, 27},  {UC_MIPS_REG_28, "gp", 4, 28},  {UC_MIPS_REG_29, "sp", 4, 29},
    {UC_MIPS_REG_30, "fp", 4, 30},  {UC_MIPS_REG_31, "ra", 4, 31},  {UC_MIPS_REG_HI, "hi", 4, 64},
    {UC_MIPS_REG_LO, "lo", 4, 65},  {UC_MIPS_REG_PC, "pc", 4, 66},
    {UC_MIPS_REG_CP0_USERLOCAL, "userlocal", 4, kNoDwarfNumber},
};

constexpr std::uint16_t table_index(std::string_view name) {
  for (std::size_t i = 0; i < std::size(kRegisters); ++i)
    if (kRegisters[i].name == name) return static_cast<std::uint16_t>(i);
  throw "no such register";  // a compile-time error in a constant expression
}
constexpr std::uint16_t kTableRa = table_index("ra");
constexpr std::uint16_t kTableHi = table_index("hi");
constexpr std::uint16_t kTableLo = table_index("lo");
constexpr std::uint16_t kTablePc = table_index("pc");
static_assert(table_index("zero") == 0 && kTableRa == 31);

// o32 numbers are __NR_Linux (4000) + n; the table holds n. From
// gcc-mips-linux-gnu's <asm/unistd_o32.h>, checked by tests/arch/arch_test.cpp.
// Left out on purpose (ENOSYS, so glibc takes its 64-bit path, or a call
// glibc does not make): the calls whose structs have word-sized or 32-bit time
// fields no converter handles yet (old stat/fstat/lstat, statfs, getdents,
// times, sysinfo, getrusage, setrlimit, itimers, utimes, select,
// pselect6, ppoll, sigaltstack, sendfile, sendmsg/recvmsg), fadvise64 (its
// o32 argument pairs), and pipe (o32 returns the two descriptors in v0 and v1;
// glibc calls pipe2).
constexpr std::uint64_t kNrLinux = 4000;
constexpr SyscallNumber kSyscallNumbers[] = {
    // time32 calls, converted by recorder/linux/syscalls_compat32.cpp.
    {78, SyscallId::gettimeofday}, {166, SyscallId::nanosleep}, {263, SyscallId::clock_gettime},
    {264, SyscallId::clock_getres}, {265, SyscallId::clock_nanosleep},
    // o32's getrlimit is the word-sized one (what arm calls ugetrlimit).
    {76, SyscallId::ugetrlimit},
    // mips' own: set_thread_area takes the TLS pointer itself (UserLocal).
    {283, SyscallId::set_thread_area},
    {253, SyscallId::restart_syscall}, {1, SyscallId::exit}, {2, SyscallId::fork},
    {3, SyscallId::read}, {4, SyscallId::write}, {5, SyscallId::open},
    {6, SyscallId::close}, {8, SyscallId::creat}, {9, SyscallId::link},
    {10, SyscallId::unlink}, {11, SyscallId::execve}, {12, SyscallId::chdir},
    {15, SyscallId::chmod}, {16, SyscallId::lchown}, {19, SyscallId::lseek},
    {20, SyscallId::getpid}, {23, SyscallId::setuid}, {24, SyscallId::getuid},
    {29, SyscallId::pause}, {119, SyscallId::sigreturn}, {196, SyscallId::rt_sigpending}, {197, SyscallId::rt_sigtimedwait}, {199, SyscallId::rt_sigsuspend}, {421, SyscallId::rt_sigtimedwait_time64}, {27, SyscallId::alarm}, {104, SyscallId::setitimer}, {105, SyscallId::getitimer}, {206, SyscallId::sigaltstack}, {33, SyscallId::access}, {36, SyscallId::sync},
    {37, SyscallId::kill}, {38, SyscallId::rename}, {39, SyscallId::mkdir},
    {40, SyscallId::rmdir}, {41, SyscallId::dup}, {45, SyscallId::brk},
    {46, SyscallId::setgid}, {47, SyscallId::getgid}, {49, SyscallId::geteuid},
    {50, SyscallId::getegid}, {54, SyscallId::ioctl}, {55, SyscallId::fcntl},
    {57, SyscallId::setpgid}, {60, SyscallId::umask}, {63, SyscallId::dup2},
    {64, SyscallId::getppid}, {65, SyscallId::getpgrp}, {66, SyscallId::setsid},
    {80, SyscallId::getgroups}, {81, SyscallId::setgroups}, {83, SyscallId::symlink},
    {85, SyscallId::readlink}, {90, SyscallId::mmap}, {91, SyscallId::munmap},
    {92, SyscallId::truncate}, {93, SyscallId::ftruncate}, {94, SyscallId::fchmod},
    {95, SyscallId::fchown}, {118, SyscallId::fsync}, {120, SyscallId::clone},
    {122, SyscallId::uname}, {125, SyscallId::mprotect}, {132, SyscallId::getpgid},
    {133, SyscallId::fchdir}, {140, SyscallId::_llseek}, {143, SyscallId::flock},
    {144, SyscallId::msync}, {145, SyscallId::readv}, {146, SyscallId::writev},
    {151, SyscallId::getsid}, {152, SyscallId::fdatasync}, {154, SyscallId::mlock},
    {155, SyscallId::munlock}, {159, SyscallId::sched_getparam}, {161, SyscallId::sched_getscheduler},
    {162, SyscallId::sched_yield}, {167, SyscallId::mremap}, {168, SyscallId::accept},
    {169, SyscallId::bind}, {170, SyscallId::connect}, {171, SyscallId::getpeername},
    {172, SyscallId::getsockname}, {173, SyscallId::getsockopt}, {174, SyscallId::listen},
    {176, SyscallId::recvfrom}, {180, SyscallId::sendto}, {181, SyscallId::setsockopt},
    {182, SyscallId::shutdown}, {183, SyscallId::socket}, {184, SyscallId::socketpair},
    {186, SyscallId::getresuid}, {188, SyscallId::poll}, {191, SyscallId::getresgid},
    {192, SyscallId::prctl}, {193, SyscallId::rt_sigreturn}, {194, SyscallId::rt_sigaction},
    {195, SyscallId::rt_sigprocmask}, {200, SyscallId::pread64}, {201, SyscallId::pwrite64},
    {202, SyscallId::chown}, {203, SyscallId::getcwd}, {210, SyscallId::mmap2},
    {211, SyscallId::truncate64}, {212, SyscallId::ftruncate64}, {213, SyscallId::stat64},
    {214, SyscallId::lstat64}, {215, SyscallId::fstat64}, {217, SyscallId::mincore},
    {218, SyscallId::madvise}, {219, SyscallId::getdents64}, {220, SyscallId::fcntl64},
    {222, SyscallId::gettid}, {227, SyscallId::getxattr}, {228, SyscallId::lgetxattr},
    {229, SyscallId::fgetxattr}, {230, SyscallId::listxattr}, {231, SyscallId::llistxattr},
    {236, SyscallId::tkill}, {237, SyscallId::sendfile64}, {238, SyscallId::futex}, {239, SyscallId::sched_setaffinity},
    {240, SyscallId::sched_getaffinity}, {246, SyscallId::exit_group}, {252, SyscallId::set_tid_address},
    {262, SyscallId::clock_settime}, {266, SyscallId::tgkill}, {288, SyscallId::openat},
    {289, SyscallId::mkdirat}, {291, SyscallId::fchownat}, {293, SyscallId::fstatat64},
    {294, SyscallId::unlinkat}, {295, SyscallId::renameat}, {296, SyscallId::linkat},
    {297, SyscallId::symlinkat}, {298, SyscallId::readlinkat}, {299, SyscallId::fchmodat},
    {300, SyscallId::faccessat}, {309, SyscallId::set_robust_list}, {310, SyscallId::get_robust_list},
    {320, SyscallId::fallocate}, {198, SyscallId::rt_sigqueueinfo}, {332, SyscallId::rt_tgsigqueueinfo}, {317, SyscallId::signalfd}, {324, SyscallId::signalfd4}, {325, SyscallId::eventfd2}, {326, SyscallId::epoll_create1},
    {327, SyscallId::dup3}, {328, SyscallId::pipe2}, {330, SyscallId::preadv},
    {331, SyscallId::pwritev}, {338, SyscallId::prlimit64}, {351, SyscallId::renameat2},
    {353, SyscallId::getrandom}, {354, SyscallId::memfd_create}, {356, SyscallId::execveat},
    {358, SyscallId::membarrier}, {360, SyscallId::copy_file_range}, {366, SyscallId::statx},
    {367, SyscallId::rseq}, {403, SyscallId::clock_gettime64}, {406, SyscallId::clock_getres_time64},
    {407, SyscallId::clock_nanosleep_time64}, {422, SyscallId::futex_time64}, {435, SyscallId::clone3},
    {7, SyscallId::waitpid}, {114, SyscallId::wait4}, {278, SyscallId::waitid}, {434, SyscallId::pidfd_open},
    {424, SyscallId::pidfd_send_signal},
    {96, SyscallId::getpriority}, {97, SyscallId::setpriority}, {185, SyscallId::setresuid}, {190, SyscallId::setresgid},
    {248, SyscallId::epoll_create}, {249, SyscallId::epoll_ctl}, {250, SyscallId::epoll_wait}, {313, SyscallId::epoll_pwait},
    {319, SyscallId::eventfd}, {321, SyscallId::timerfd_create}, {322, SyscallId::timerfd_gettime}, {323, SyscallId::timerfd_settime},
    {410, SyscallId::timerfd_gettime64}, {411, SyscallId::timerfd_settime64},
    {257, SyscallId::timer_create}, {258, SyscallId::timer_settime}, {259, SyscallId::timer_gettime},
    {260, SyscallId::timer_getoverrun}, {261, SyscallId::timer_delete}, {408, SyscallId::timer_gettime64},
    {409, SyscallId::timer_settime64},
    {436, SyscallId::close_range}, {437, SyscallId::openat2}, {439, SyscallId::faccessat2},
    {147, SyscallId::cacheflush},
};

constexpr SyscallTable kSyscallTable{kSyscallNumbers};

SyscallId mips_syscall_id(std::uint64_t number) {
  return number < kNrLinux ? SyscallId::unknown : kSyscallTable(number - kNrLinux);
}

// MIPS errno values (arch/mips/include/uapi/asm/errno.h) by host (asm-generic)
// errno 0..133, generated from the two headers (41 and 58 are unused on the
// host and kept); 1-34 agree.
constexpr std::uint16_t kMipsErrno[] = {
    0,   1,   2,   3,   4,   5,   6,   7,   8,   9,   10,  11,  12,  13,  14,  15,  16,  17,  18,  19,
    20,  21,  22,  23,  24,  25,  26,  27,  28,  29,  30,  31,  32,  33,  34,  45,  78,  46,  89,  93,
    90,  41,  35,  36,  37,  38,  39,  40,  41,  42,  43,  44,  50,  51,  52,  53,  54,  55,  58,  59,
    60,  61,  62,  63,  64,  65,  66,  67,  68,  69,  70,  71,  74,  73,  77,  79,  80,  81,  82,  83,
    84,  85,  86,  87,  88,  91,  92,  94,  95,  96,  97,  98,  99,  120, 121, 122, 123, 124, 125, 126,
    127, 128, 129, 130, 131, 132, 133, 134, 143, 144, 145, 146, 147, 148, 149, 150, 151, 135, 137, 138,
    139, 140, 1133, 159, 160, 158, 161, 162, 163, 164, 165, 166, 167, 168,
};
constexpr std::uint32_t kMaxErrno = 4095;  // Linux: results in [-4095, -1] are errors

// QEMU's MIPS exception numbers (target/mips/cpu.h), as UC_HOOK_INTR reports them.
constexpr std::uint32_t kExcpAdel = 12, kExcpAdes = 13, kExcpIbe = 15, kExcpSyscall = 17, kExcpBreak = 18,
                        kExcpCpu = 19, kExcpRi = 20, kExcpOverflow = 21, kExcpTrap = 22, kExcpFpe = 23,
                        kExcpTlbl = 26, kExcpTlbs = 27, kExcpDbe = 28;

// Linux's break codes that mean an arithmetic error (arch/mips/include/uapi/
// asm/break.h): do_trap_or_bp sends SIGFPE for them, SIGTRAP for any other.
constexpr std::uint32_t kBrkOverflow = 6, kBrkDivZero = 7;

// What a trap or break instruction word is, and its code as Linux reads it
// (arch/mips/kernel/traps.c: do_bp, do_tr).
struct TrapInstruction {
  enum class Kind : std::uint8_t { kNone, kBreak, kTrap } kind = Kind::kNone;
  std::uint32_t code = 0;
  // kTrap: the condition, its operands (register numbers; rt < 0: the
  // sign-extended immediate instead).
  std::uint8_t condition = 0;  // 0 ge, 1 geu, 2 lt, 3 ltu, 4 eq, 6 ne (the funct's low 3 bits)
  int rs = 0, rt = -1;
  std::int32_t immediate = 0;
};

TrapInstruction decode_trap(std::uint32_t word) {
  TrapInstruction out;
  const std::uint32_t opcode = word >> 26, funct = word & 0x3f;
  if (opcode == 0 && funct == 0x0d) {  // break: a 20-bit code from bit 6; gas puts `break n` at bit 16
    out.kind = TrapInstruction::Kind::kBreak;
    out.code = (word >> 6) & 0xfffff;
    if (out.code >= (1u << 10)) out.code = ((out.code & 0x3ff) << 10) | (out.code >> 10);
  } else if (opcode == 0 && funct >= 0x30 && funct <= 0x36 && funct != 0x35) {  // tge tgeu tlt tltu teq tne
    out.kind = TrapInstruction::Kind::kTrap;
    out.code = (word >> 6) & 0x3ff;
    out.condition = static_cast<std::uint8_t>(funct & 7);
    out.rs = static_cast<int>((word >> 21) & 31);
    out.rt = static_cast<int>((word >> 16) & 31);
  } else if (opcode == 1) {  // REGIMM: tgei tgeiu tlti tltiu teqi tnei (no code: 0)
    const std::uint32_t rt_field = (word >> 16) & 31;
    if (rt_field >= 0x08 && rt_field <= 0x0e && rt_field != 0x0d) {
      out.kind = TrapInstruction::Kind::kTrap;
      out.condition = static_cast<std::uint8_t>(rt_field & 7);
      out.rs = static_cast<int>((word >> 21) & 31);
      out.immediate = static_cast<std::int16_t>(word & 0xffff);
    }
  }
  return out;
}

bool trap_condition_holds(const TrapInstruction& trap, std::uint32_t left, std::uint32_t right) {
  const auto signed_left = static_cast<std::int32_t>(left), signed_right = static_cast<std::int32_t>(right);
  switch (trap.condition) {
    case 0: return signed_left >= signed_right;
    case 1: return left >= right;
    case 2: return signed_left < signed_right;
    case 3: return left < right;
    case 4: return left == right;
    case 6: return left != right;
    default: return false;
  }
}

class MipsGuestCpu final : public InterruptTrapCpu {
 public:
  explicit MipsGuestCpu(uc_engine* engine) : InterruptTrapCpu(engine, UC_MIPS_REG_PC, UC_MIPS_REG_CP0_USERLOCAL) {}
  ~MipsGuestCpu() override {
    if (block_hook_) uc_hook_del(engine_, block_hook_);
  }

  // Clears UserLocal and hooks every block's start (see fault_signal). Fails
  // (kEmulator) when Unicorn refuses either.
  Status init() {
    std::uint64_t zero = 0;
    if (uc_reg_write(engine_, UC_MIPS_REG_CP0_USERLOCAL, &zero) != UC_ERR_OK)
      return make_error(ErrorCode::kEmulator, "cannot clear CP0 UserLocal");
    if (uc_hook_add(engine_, &block_hook_, UC_HOOK_BLOCK, reinterpret_cast<void*>(&on_block), this, 1, 0) !=
        UC_ERR_OK)
      return make_error(ErrorCode::kEmulator, "cannot hook block starts");
    std::size_t mode = 0;
    if (uc_query(engine_, UC_QUERY_MODE, &mode) != UC_ERR_OK)
      return make_error(ErrorCode::kEmulator, "cannot query the engine's mode");
    little_endian_ = (mode & UC_MODE_BIG_ENDIAN) == 0;
    return ok_status();
  }

  // PC is past the 4-byte `syscall` (never in a delay slot: that is reserved).
  std::uint64_t trap_pc() const override { return pc() - 4; }

  // Signal frames (arch/mips_signal.cpp). A syscall returns to the
  // instruction after `syscall`: Unicorn's pc already.
  bool has_signal_frames() const override { return true; }
  std::uint64_t syscall_return_pc() const override { return pc(); }
  SignalFrame build_signal_frame(const SignalFrameRequest& request) const override {
    return mips_build_signal_frame(engine_, little_endian_, request);
  }
  void enter_signal_handler(const SignalFrameRequest& request, const SignalFrame& frame) override {
    mips_enter_signal_handler(engine_, request, frame);
  }
  std::optional<SignalReturn> return_from_signal(bool rt) override {
    return mips_return_from_signal(engine_, little_endian_, rt);
  }

  // Linux gives a MIPS32r2 74K no AT_HWCAP bit (R6, MSA, CRC32... are absent).
  std::uint64_t hwcap() const override { return 0; }

  // The o32 result convention (arch/mips/kernel/scall32-o32.S): v0 holds what
  // the kernel wrote (a negative errno on failure); failures become a3 = 1
  // with v0 = the positive MIPS errno, successes a3 = 0.
  void apply_kernel_exit_effects() override {
    std::uint64_t v0 = 0;
    uc_reg_read(engine_, UC_MIPS_REG_V0, &v0);
    const auto value = static_cast<std::uint32_t>(v0);
    std::uint64_t a3 = 0;
    if (value > 0xffffffffu - kMaxErrno) {
      const std::uint32_t host_errno = 0u - value;
      const std::uint64_t guest_errno = host_errno < std::size(kMipsErrno) ? kMipsErrno[host_errno] : host_errno;
      uc_reg_write(engine_, UC_MIPS_REG_V0, &guest_errno);
      a3 = 1;
    }
    uc_reg_write(engine_, UC_MIPS_REG_A3, &a3);
  }

  // Unicorn 2.0.1 leaves the pc at the faulting block's start after a memory
  // fault. The block (from the block hook when it is the reported one, else up
  // to 64 instructions) is scanned for the first load or store (I-type: base
  // register + signed 16-bit offset, delay slots included; COP1X indexed:
  // base + index) whose address, evaluated with the current registers (TCG
  // writes them back before every guest memory access) and rounded down to
  // its word, lies within 8 bytes below `fault_address`. A fetch fault reports
  // the fetched address itself; no match: the block start.
  std::uint64_t locate_faulting_instruction(std::uint64_t reported_pc, std::uint64_t fault_address) const override {
    if (fault_address == reported_pc) return reported_pc;
    constexpr std::size_t kMaxScan = 64 * 4;
    std::size_t size = block_address_ == reported_pc && block_size_ ? std::min<std::size_t>(block_size_, kMaxScan)
                                                                     : kMaxScan;
    size &= ~std::size_t{3};
    std::uint8_t bytes[kMaxScan];
    while (size >= 4 && uc_mem_read(engine_, reported_pc, bytes, size) != UC_ERR_OK) size = (size / 2) & ~std::size_t{3};
    const auto fault = static_cast<std::uint32_t>(fault_address);
    for (std::size_t at = 0; at + 4 <= size; at += 4) {
      const auto effective = memory_operand_address(instruction_word(bytes + at));
      if (effective && fault - (*effective & ~3u) < 8) return reported_pc + at;  // lwl/lwr also access the aligned word
    }
    return reported_pc;
  }

 private:
  bool is_syscall_interrupt(std::uint32_t number) const override { return number == kExcpSyscall; }
  // arch/mips/kernel/traps.c and unaligned.c: address errors SIGBUS (Linux
  // emulates unaligned accesses of user code only with MIPS_FIXADE, which
  // glibc does not set), bus errors SIGBUS, break and trap instructions
  // SIGTRAP (Linux makes the BRK_DIVZERO/BRK_OVERFLOW codes SIGFPE: the code
  // is not looked at here), reserved and coprocessor-unusable instructions
  // SIGILL, integer overflow and FP exceptions SIGFPE.
  int fault_signal(std::uint32_t number) const override {
    trap_address_.reset();
    switch (number) {
      case kExcpAdel: case kExcpAdes: case kExcpIbe: case kExcpDbe: return SIGBUS;
      case kExcpBreak: case kExcpTrap: return trap_signal(number == kExcpBreak);
      case kExcpOverflow: case kExcpFpe: return SIGFPE;
      case kExcpTlbl: case kExcpTlbs: return SIGSEGV;
      case kExcpCpu: case kExcpRi: locate_block_end(); return SIGILL;
      default: return SIGILL;
    }
  }

  // A reserved or coprocessor-unusable instruction has the same problem as
  // break (see below: Unicorn reports the last syscall's return address),
  // and QEMU's translator ends the block with it: it is the running block's
  // last instruction. A signal handler that moves the ucontext's pc past it
  // (samples/guest/signal_faults.c) needs that address.
  void locate_block_end() const {
    if (block_size_ >= 4) trap_address_ = block_address_ + ((block_size_ & ~std::uint32_t{3}) - 4);
  }

  // Unicorn 2.0.1 gives no address with a break or trap exception: its
  // cpu_handle_exception sets the PC to `next_pc`, which only `syscall` sets,
  // before UC_HOOK_INTR runs (the hook reads 0, or the last syscall's return
  // address). The instruction is found in the block that was running: a
  // `break` ends its block, so it is the block's last break; a trap does not,
  // so it is the first trap of the block whose condition holds with the
  // registers as they are (the trap changed none). Linux's rule then gives the
  // signal: codes 6 and 7 SIGFPE, others SIGTRAP. A block that cannot be read
  // gives SIGTRAP.
  std::uint64_t exception_pc(std::uint64_t reported_pc) const override {
    return trap_address_ ? *trap_address_ : reported_pc;
  }

  int trap_signal(bool is_break) const {
    trap_address_.reset();
    constexpr std::size_t kMaxBlockBytes = 4096;  // QEMU's TBs hold at most 512 MIPS instructions (2 KiB)
    std::uint8_t bytes[kMaxBlockBytes];
    const std::size_t size = std::min<std::size_t>(block_size_, kMaxBlockBytes) & ~std::size_t{3};
    if (size == 0 || uc_mem_read(engine_, block_address_, bytes, size) != UC_ERR_OK) return SIGTRAP;
    std::optional<TrapInstruction> found;
    std::uint64_t found_at = 0;
    for (std::size_t at = 0; at < size; at += 4) {
      const TrapInstruction trap = decode_trap(instruction_word(bytes + at));
      if (is_break && trap.kind == TrapInstruction::Kind::kBreak) {
        found = trap;  // the last one
        found_at = block_address_ + at;
      } else if (!is_break && trap.kind == TrapInstruction::Kind::kTrap) {
        const std::uint32_t left = general_register(trap.rs);
        const auto right = trap.rt >= 0 ? general_register(trap.rt) : static_cast<std::uint32_t>(trap.immediate);
        if (trap_condition_holds(trap, left, right)) {
          found = trap;
          found_at = block_address_ + at;
          break;
        }
      }
    }
    if (!found) return SIGTRAP;
    trap_address_ = found_at;
    return found->code == kBrkOverflow || found->code == kBrkDivZero ? SIGFPE : SIGTRAP;
  }

  // The 32-bit instruction at `bytes`, in the guest's byte order.
  std::uint32_t instruction_word(const std::uint8_t* bytes) const {
    std::uint32_t word = 0;
    for (std::size_t b = 0; b < 4; ++b) word |= std::uint32_t{bytes[b]} << (8 * (little_endian_ ? b : 3 - b));
    return word;
  }

  // The address a MIPS32 load or store `word` accesses with the current
  // registers; nullopt for other instructions.
  std::optional<std::uint32_t> memory_operand_address(std::uint32_t word) const {
    const std::uint32_t opcode = word >> 26;
    const int rs = static_cast<int>((word >> 21) & 31), rt = static_cast<int>((word >> 16) & 31);
    // lb lh lwl lw lbu lhu lwr, sb sh swl sw swr, ll lwc1 lwc2 pref ldc1 ldc2, sc swc1 swc2 sdc1 sdc2
    const bool base_offset = (opcode >= 0x20 && opcode <= 0x26) || (opcode >= 0x28 && opcode <= 0x2b) ||
                             opcode == 0x2e || (opcode >= 0x30 && opcode <= 0x33) || opcode == 0x35 ||
                             opcode == 0x36 || (opcode >= 0x38 && opcode <= 0x3a) || opcode == 0x3d || opcode == 0x3e;
    if (base_offset)
      return general_register(rs) + static_cast<std::uint32_t>(static_cast<std::int32_t>(static_cast<std::int16_t>(word & 0xffff)));
    // COP1X lwxc1 ldxc1 luxc1 swxc1 sdxc1 suxc1: base rs + index rt
    const std::uint32_t function = word & 63;
    if (opcode == 0x13 && (function <= 1 || function == 5 || function == 8 || function == 9 || function == 0xd))
      return general_register(rs) + general_register(rt);
    return std::nullopt;
  }

  std::uint32_t general_register(int number) const {
    std::uint64_t value = 0;
    uc_reg_read(engine_, UC_MIPS_REG_0 + number, &value);
    return static_cast<std::uint32_t>(value);
  }

  static void on_block(uc_engine*, std::uint64_t address, std::uint32_t size, void* user) noexcept {
    auto* self = static_cast<MipsGuestCpu*>(user);
    self->block_address_ = address;
    self->block_size_ = size;
  }

  uc_hook block_hook_ = 0;
  std::uint64_t block_address_ = 0;  // the block running now (on_block), for trap_signal
  std::uint32_t block_size_ = 0;
  bool little_endian_ = true;  // the engine's byte order (mipsel), from its mode
  // Where trap_signal found the last break or trap (signal_for_interrupt is
  // const: this is what it learnt, for exception_pc).
  mutable std::optional<std::uint64_t> trap_address_;
};

Expected<std::unique_ptr<GuestCpu>> make_mips_guest_cpu(uc_engine* engine) {
  auto cpu = std::make_unique<MipsGuestCpu>(engine);
  if (auto status = cpu->init(); !status) return status.error();
  return std::unique_ptr<GuestCpu>(std::move(cpu));
}

// struct stat64 of arch/mips/include/uapi/asm/stat.h (o32), 104 bytes, in the
// guest's byte order:
//   0 dev u32 | 4 pad[3] | 16 ino u64 | 24 mode u32 | 28 nlink u32 | 32 uid | 36 gid
//  40 rdev u32 | 44 pad[3] | 56 size i64 | 64 atime i32 | 68 atime_nsec | 72 mtime
//  76 mtime_nsec | 80 ctime | 84 ctime_nsec | 88 blksize u32 | 92 pad | 96 blocks i64
// dev and rdev are the old 32-bit encoding new_encode_dev of fs/stat.c gives
// (minor & 0xff | major << 8 | (minor & ~0xff) << 12).
std::uint64_t new_encode_dev(std::uint64_t dev) {
  const std::uint64_t major = ((dev >> 8) & 0xfff) | ((dev >> 32) & ~0xfffull);
  const std::uint64_t minor = (dev & 0xff) | ((dev >> 12) & 0xffffff00);
  return ((minor & 0xff) | (major << 8) | ((minor & ~0xffull) << 12)) & 0xffffffffu;
}

std::size_t encode_stat(const FileStatus& s, std::span<std::uint8_t, kMaxStatBytes> out, bool little_endian) {
  constexpr std::size_t kSize = 104;
  std::fill_n(out.begin(), kSize, std::uint8_t{0});
  const StructField fields[] = {
      {0, 4, new_encode_dev(s.dev)}, {16, 8, s.ino},       {24, 4, s.mode},       {28, 4, s.nlink},
      {32, 4, s.uid},                {36, 4, s.gid},       {40, 4, new_encode_dev(s.rdev)},
      {56, 8, s.size},               {64, 4, s.atime_sec}, {68, 4, s.atime_nsec}, {72, 4, s.mtime_sec},
      {76, 4, s.mtime_nsec},         {80, 4, s.ctime_sec}, {84, 4, s.ctime_nsec}, {88, 4, s.blksize},
      {96, 8, s.blocks},
  };
  for (const auto& field : fields) store_field(out, field, little_endian);
  return kSize;
}
std::size_t mips_encode_stat(const FileStatus& s, std::span<std::uint8_t, kMaxStatBytes> out) {
  return encode_stat(s, out, false);
}
std::size_t mipsel_encode_stat(const FileStatus& s, std::span<std::uint8_t, kMaxStatBytes> out) {
  return encode_stat(s, out, true);
}

// arch/mips/include/uapi/asm/fcntl.h against asm-generic/fcntl.h (octal on
// the host side); O_CLOEXEC, O_PATH, O_NOATIME and O_TMPFILE's __O_TMPFILE
// part agree... except O_TMPFILE's, which mips moves with O_DIRECTORY.
constexpr FlagValue kOpenFlags[] = {
    {0x0008, 02000},      // O_APPEND
    {0x0010, 010000},     // O_DSYNC
    {0x0080, 04000},      // O_NONBLOCK
    {0x0100, 0100},       // O_CREAT
    {0x0200, 01000},      // O_TRUNC
    {0x0400, 0200},       // O_EXCL
    {0x0800, 0400},       // O_NOCTTY
    {0x1000, 020000},     // FASYNC
    {0x2000, 0100000},    // O_LARGEFILE
    {0x4000, 04000000},   // __O_SYNC
    {0x8000, 040000},     // O_DIRECT
};

// arch/mips/include/uapi/asm/mman.h against asm-generic/mman*.h (MAP_SHARED,
// MAP_PRIVATE, MAP_FIXED, MAP_FIXED_NOREPLACE agree).
constexpr FlagValue kMmapFlags[] = {
    {0x0800, 0x0020},   // MAP_ANONYMOUS
    {0x0400, 0x4000},   // MAP_NORESERVE
    {0x1000, 0x0100},   // MAP_GROWSDOWN
    {0x2000, 0x0800},   // MAP_DENYWRITE
    {0x4000, 0x1000},   // MAP_EXECUTABLE
    {0x8000, 0x2000},   // MAP_LOCKED
    {0x10000, 0x8000},  // MAP_POPULATE
    {0x20000, 0x10000}, // MAP_NONBLOCK
    {0x40000, 0x20000}, // MAP_STACK
    {0x80000, 0x40000}, // MAP_HUGETLB
};

// arch/mips/include/uapi/asm/signal.h against the host's (asm-generic): 1-6,
// 8, 9, 11, 13-15 and the real-time signals from 32 agree; mips' SIGEMT (7)
// and the host's SIGSTKFLT (16) have no counterpart.
constexpr FlagValue kSignalNumbers[] = {
    {10, SIGBUS},    {12, SIGSYS},    {16, SIGUSR1},   {17, SIGUSR2},   {18, SIGCHLD},   {19, SIGPWR},
    {20, SIGWINCH},  {21, SIGURG},    {22, SIGIO},     {23, SIGSTOP},   {24, SIGTSTP},   {25, SIGCONT},
    {26, SIGTTIN},   {27, SIGTTOU},   {28, SIGVTALRM}, {29, SIGPROF},   {30, SIGXCPU},   {31, SIGXFSZ},
};

// The ioctl requests the Linux layer serves, mips' numbers (arch/mips/include/
// uapi/asm/ioctls.h: its own tty numbers, and _IOR/_IOW with the direction in
// bits 29-31, read 2 and write 4) against the host's (asm-generic/ioctls.h).
constexpr FlagValue kIoctlRequests[] = {
    {0x540d, 0x5401},      // TCGETS
    {0x540e, 0x5402},      // TCSETS
    {0x540f, 0x5403},      // TCSETSW
    {0x5410, 0x5404},      // TCSETSF
    {0x40087468, 0x5413},  // TIOCGWINSZ _IOR('t', 104, struct winsize)
    {0x80087467, 0x5414},  // TIOCSWINSZ _IOW('t', 103, struct winsize)
    {0x40047477, 0x540f},  // TIOCGPGRP  _IOR('t', 119, int)
    {0x467f, 0x541b},      // FIONREAD
    {0x667e, 0x5421},      // FIONBIO
    {0x6601, 0x5451},      // FIOCLEX
    {0x6602, 0x5450},      // FIONCLEX
};

// arch/mips/include/uapi/asm/resource.h against asm-generic/resource.h.
constexpr FlagValue kRlimitResources[] = {
    {5, 7},  // RLIMIT_NOFILE
    {6, 9},  // RLIMIT_AS
    {7, 5},  // RLIMIT_RSS
    {8, 6},  // RLIMIT_NPROC
    {9, 8},  // RLIMIT_MEMLOCK
};

// struct termios of arch/mips/include/uapi/asm/termbits.h, 40 bytes in the
// guest's byte order, against the host's (asm-generic, 36 bytes):
//   0 c_iflag u32 | 4 c_oflag u32 | 8 c_cflag u32 | 12 c_lflag u32 | 16 c_line u8 | 17 c_cc[NCCS]
// NCCS is 23 (19 on the host); c_iflag, c_oflag and c_cflag bits agree,
// c_lflag moves IEXTEN, TOSTOP and FLUSHO; c_cc orders VMIN, VEOL2, VEOF and
// VEOL its own way (mips' VDSUSP, 11, has no host counterpart: 0).
constexpr FlagValue kTermiosLocalFlags[] = {
    {0x00100, 0x08000},  // IEXTEN
    {0x08000, 0x00100},  // TOSTOP
    {0x02000, 0x01000},  // FLUSHO
};
constexpr std::size_t kTermiosCcOffset = 17, kHostNccs = kHostTermiosBytes - kTermiosCcOffset;
constexpr std::size_t kMipsNccs = kMaxTermiosBytes - kTermiosCcOffset;
constexpr int kNoHostCc = -1;
// The host's c_cc index of each mips one.
constexpr int kHostCcIndex[kMipsNccs] = {
    0,  1,  2,  3,  // VINTR VQUIT VERASE VKILL
    6,              // VMIN
    5,              // VTIME
    16,             // VEOL2
    7,  8,  9,  10, // VSWTC VSTART VSTOP VSUSP
    kNoHostCc,      // VDSUSP
    12, 13, 14, 15, // VREPRINT VDISCARD VWERASE VLNEXT
    4,              // VEOF
    11,             // VEOL
    kNoHostCc, kNoHostCc, kNoHostCc, kNoHostCc, kNoHostCc,
};
static_assert(kHostNccs == 19 && kMipsNccs == 23);

std::uint32_t load_word(std::span<const std::uint8_t> bytes, std::size_t at, bool little_endian) {
  std::uint32_t value = 0;
  for (std::size_t b = 0; b < 4; ++b) value |= std::uint32_t{bytes[at + b]} << (8 * (little_endian ? b : 3 - b));
  return value;
}

std::size_t termios_to_guest(std::span<const std::uint8_t, kHostTermiosBytes> host,
                             std::span<std::uint8_t, kMaxTermiosBytes> out, bool little_endian) {
  std::fill(out.begin(), out.end(), std::uint8_t{0});
  for (std::size_t word = 0; word < 4; ++word) {
    std::uint64_t value = load_word(host, 4 * word, true);
    if (word == 3) value = translate_flags(kTermiosLocalFlags, value, false);
    store_field(out, {4 * word, 4, value}, little_endian);
  }
  out[16] = host[16];
  for (std::size_t i = 0; i < kMipsNccs; ++i)
    if (kHostCcIndex[i] != kNoHostCc) out[kTermiosCcOffset + i] = host[kTermiosCcOffset + static_cast<std::size_t>(kHostCcIndex[i])];
  return kMaxTermiosBytes;
}

void termios_to_host(std::span<const std::uint8_t, kMaxTermiosBytes> guest, std::span<std::uint8_t, kHostTermiosBytes> host,
                     bool little_endian) {
  std::fill(host.begin(), host.end(), std::uint8_t{0});
  for (std::size_t word = 0; word < 4; ++word) {
    std::uint64_t value = load_word(guest, 4 * word, little_endian);
    if (word == 3) value = translate_flags(kTermiosLocalFlags, value, true);
    store_field(host, {4 * word, 4, value}, true);
  }
  host[16] = guest[16];
  for (std::size_t i = 0; i < kMipsNccs; ++i)
    if (kHostCcIndex[i] != kNoHostCc) host[kTermiosCcOffset + static_cast<std::size_t>(kHostCcIndex[i])] = guest[kTermiosCcOffset + i];
}

std::size_t mips_termios_to_guest(std::span<const std::uint8_t, kHostTermiosBytes> host,
                                  std::span<std::uint8_t, kMaxTermiosBytes> out) {
  return termios_to_guest(host, out, false);
}
std::size_t mipsel_termios_to_guest(std::span<const std::uint8_t, kHostTermiosBytes> host,
                                    std::span<std::uint8_t, kMaxTermiosBytes> out) {
  return termios_to_guest(host, out, true);
}
void mips_termios_to_host(std::span<const std::uint8_t, kMaxTermiosBytes> guest,
                          std::span<std::uint8_t, kHostTermiosBytes> host) {
  termios_to_host(guest, host, false);
}
void mipsel_termios_to_host(std::span<const std::uint8_t, kMaxTermiosBytes> guest,
                            std::span<std::uint8_t, kHostTermiosBytes> host) {
  termios_to_host(guest, host, true);
}

// Capstone 4's MIPS register ids -> kRegisters: $0-$31 are contiguous and in
// table order; hi/lo (and ac0, the DSP name of the same pair, as hi) and pc.
int mips_register_index_for_capstone(unsigned r) {
  if (r >= MIPS_REG_0 && r <= MIPS_REG_31) return static_cast<int>(r - MIPS_REG_0);
  if (r == MIPS_REG_HI || r == MIPS_REG_AC0) return kTableHi;
  if (r == MIPS_REG_LO) return kTableLo;
  if (r == MIPS_REG_PC) return kTablePc;
  return -1;  // FPU, MSA, DSP and coprocessor registers: not in the table
}

void add_once(std::vector<std::uint16_t>& list, int index) {
  if (index < 0) return;
  const auto value = static_cast<std::uint16_t>(index);
  if (std::find(list.begin(), list.end(), value) == list.end()) list.push_back(value);
}

bool starts_with(std::string_view text, std::string_view prefix) { return text.substr(0, prefix.size()) == prefix; }

bool is_store(std::string_view m) {
  return m == "sb" || m == "sh" || m == "sw" || m == "swl" || m == "swr" || m == "sc" || m == "swc1" ||
         m == "sdc1" || m == "swxc1" || m == "sdxc1" || m == "suxc1" || m == "swc2" || m == "sdc2";
}
bool is_load(std::string_view m) {
  return m == "lb" || m == "lbu" || m == "lh" || m == "lhu" || m == "lw" || m == "lwl" || m == "lwr" || m == "ll" ||
         m == "lwc1" || m == "ldc1" || m == "lwxc1" || m == "ldxc1" || m == "luxc1";
}

// The instructions whose register operands are all read: stores, branches and
// jumps (their link register comes from Capstone's implicit writes),
// multiply/divide into hi/lo, moves to the FPU and to hi/lo, traps, cache ops.
bool writes_no_operand(std::string_view m) {
  if (is_store(m)) return true;
  if (starts_with(m, "b") && m != "bitswap") return true;  // beq, bnez, bgezal, b, bal...
  if (m == "j" || m == "jr" || m == "jal" || m == "jr.hb" || starts_with(m, "t")) return m != "tlbp";  // teq, tne...
  if (m == "mult" || m == "multu" || m == "div" || m == "divu" || m == "madd" || m == "maddu" || m == "msub" ||
      m == "msubu")
    return true;
  return m == "mtc1" || m == "mthc1" || m == "ctc1" || m == "mthi" || m == "mtlo" || m == "cache" || m == "pref" ||
         m == "sync" || m == "syscall" || m == "break" || m == "nop" || m == "ssnop" || m == "ehb" ||
         starts_with(m, "c.") || m == "wait";
}

// Capstone 4 gives no access lists for MIPS (cs_regs_access fails there), so
// the writes come from the operands by MIPS convention: the first register
// operand is the destination unless writes_no_operand; plus Capstone's
// implicit writes (ra of jal/bal/bgezal, hi/lo of mult/div/madd, mthi/mtlo).
// jalr writes its first operand (rd; `jalr $t9` is `jalr $ra, $t9`).
void mips_add_unlisted_writes(const cs_insn& insn, std::vector<std::uint16_t>& written) {
  if (!insn.detail) return;
  const cs_mips& detail = insn.detail->mips;
  const std::string_view m = insn.mnemonic;
  for (std::uint8_t i = 0; i < insn.detail->regs_write_count; ++i)
    add_once(written, mips_register_index_for_capstone(insn.detail->regs_write[i]));
  if (m == "jalr" || m == "jalr.hb") {
    add_once(written, detail.op_count >= 2 && detail.operands[0].type == MIPS_OP_REG
                          ? mips_register_index_for_capstone(detail.operands[0].reg)
                          : kTableRa);
  } else if (m == "mthi" || m == "mtlo") {
    add_once(written, m == "mthi" ? kTableHi : kTableLo);
  } else if (m == "mult" || m == "multu" || m == "div" || m == "divu" || starts_with(m, "madd") ||
             starts_with(m, "msub")) {
    add_once(written, kTableHi);
    add_once(written, kTableLo);
  } else if (!writes_no_operand(m) && detail.op_count > 0 && detail.operands[0].type == MIPS_OP_REG) {
    add_once(written, mips_register_index_for_capstone(detail.operands[0].reg));
  }
  if (m == "sc") add_once(written, mips_register_index_for_capstone(detail.operands[0].reg));  // the success flag
  std::erase(written, kTablePc);  // pc is implied by the instruction sequence
  std::erase(written, std::uint16_t{0});  // $zero never changes
}

// The registers an instruction reads, by the same convention (Capstone 4
// lists none for MIPS): every register operand but a destination, the base of
// a memory operand, Capstone's implicit reads, hi/lo for mfhi/mflo and the
// multiply-accumulates, and the destination too where the instruction merges
// into it (movn/movz keep it when the condition fails, lwl/lwr/ins replace
// part of it, sc reads the value it stores).
bool mips_add_unlisted_reads(const cs_insn& insn, std::vector<std::uint16_t>& read) {
  if (!insn.detail) return false;
  const cs_mips& detail = insn.detail->mips;
  const std::string_view m = insn.mnemonic;
  for (std::uint8_t i = 0; i < insn.detail->regs_read_count; ++i)
    add_once(read, mips_register_index_for_capstone(insn.detail->regs_read[i]));
  const bool destination_first = (!writes_no_operand(m) || m == "jalr" || m == "jalr.hb") && detail.op_count > 1;
  const bool merges = m == "movn" || m == "movz" || m == "lwl" || m == "lwr" || m == "ins" || m == "sc";
  for (std::uint8_t i = 0; i < detail.op_count; ++i) {
    const cs_mips_op& op = detail.operands[i];
    if (op.type == MIPS_OP_REG && (i > 0 || !destination_first || merges))
      add_once(read, mips_register_index_for_capstone(op.reg));
    if (op.type == MIPS_OP_MEM) add_once(read, mips_register_index_for_capstone(op.mem.base));
  }
  if (m == "mfhi") add_once(read, kTableHi);
  if (m == "mflo") add_once(read, kTableLo);
  if (starts_with(m, "madd") || starts_with(m, "msub")) add_once(read, kTableHi), add_once(read, kTableLo);
  std::erase(read, kTablePc);
  std::erase(read, std::uint16_t{0});  // $zero is always 0: no value comes from it
  return true;
}

// How many accesses Unicorn reports (QEMU 5's mips translator): one per load
// or store, 8-byte FPU transfers once; lwl and lwr two reads (a byte read at
// the unaligned address first, to fault there, then the aligned word: seen in
// a full-level trace). Not fixed: sc (it stores only when the link holds) and
// swl/swr (a helper stores byte by byte, as many as the alignment gives).
bool mips_count_memory_accesses(const cs_insn& insn, std::uint8_t& reads, std::uint8_t& writes) {
  reads = writes = 0;
  const std::string_view m = insn.mnemonic;
  if (m == "sc" || m == "swl" || m == "swr") return false;
  if (m == "lwl" || m == "lwr") reads = 2;
  else if (is_load(m)) reads = 1;
  else if (is_store(m)) writes = 1;
  return true;
}

void mips_address_registers(const cs_insn& insn, std::vector<std::uint16_t>& base, std::vector<std::uint16_t>&) {
  if (!insn.detail) return;
  const cs_mips& detail = insn.detail->mips;
  for (std::uint8_t i = 0; i < detail.op_count; ++i)
    if (detail.operands[i].type == MIPS_OP_MEM) add_once(base, mips_register_index_for_capstone(detail.operands[i].mem.base));
}

constexpr std::uint16_t kEmMips = 8;

// Linux's signal return code (arch/mips/vdso/sigreturn.S, the signal page
// before it): `li v0, 4119 (__NR_sigreturn); syscall` for struct sigframe,
// then `li v0, 4193 (__NR_rt_sigreturn); syscall` for struct rt_sigframe, in
// each byte order. mips' struct sigaction has no sa_restorer, so every
// handler returns here (arch/mips_signal.cpp picks the pair).
constexpr std::uint8_t kSigreturnTrampolineBig[] = {0x24, 0x02, 0x10, 0x17, 0x00, 0x00, 0x00, 0x0c,
                                                    0x24, 0x02, 0x10, 0x61, 0x00, 0x00, 0x00, 0x0c};
constexpr std::uint8_t kSigreturnTrampolineLittle[] = {0x17, 0x10, 0x02, 0x24, 0x0c, 0x00, 0x00, 0x00,
                                                       0x61, 0x10, 0x02, 0x24, 0x0c, 0x00, 0x00, 0x00};

// Linux mips, 32-bit process, randomisation off: TASK_SIZE = 0x80000000 (2 GiB
// user space, kseg0 above it) = STACK_TOP (minus the VDSO's page, which the
// kernel maps above the stack: 0x7ffff000); mmap_base = STACK_TOP - 128 MiB
// gap; ELF_ET_DYN_BASE = TASK_SIZE / 3 * 2, page aligned.
constexpr AddressSpaceLayout kLayout{.stack_top = 0x7ffff000,
                                     .stack_size = 8ull << 20,
                                     .mmap_top = 0x77fff000,
                                     .et_dyn_base = 0x55555000,
                                     .lowest_mmap = 0x10000};

// Unicorn's and Capstone's view of each byte order (arch/arch_engine.h).
constexpr ArchEngine make_engine(bool little_endian) {
  return ArchEngine{
      .unicorn_arch = UC_ARCH_MIPS,
      .unicorn_mode = static_cast<uc_mode>(UC_MODE_MIPS32 | (little_endian ? UC_MODE_LITTLE_ENDIAN : UC_MODE_BIG_ENDIAN)),
      .capstone_arch = CS_ARCH_MIPS,
      .capstone_mode = static_cast<cs_mode>(CS_MODE_MIPS32 | (little_endian ? CS_MODE_LITTLE_ENDIAN : CS_MODE_BIG_ENDIAN)),
      .make_guest_cpu = &make_mips_guest_cpu,
      .register_index_for_capstone = &mips_register_index_for_capstone,
      .add_unlisted_writes = &mips_add_unlisted_writes,
      .add_unlisted_reads = &mips_add_unlisted_reads,
      .count_memory_accesses = &mips_count_memory_accesses,
      .address_registers = &mips_address_registers,
  };
}
constexpr ArchEngine kEngineBig = make_engine(false);
constexpr ArchEngine kEngineLittle = make_engine(true);

// UCIR: usercorn's name "mips" (go/arch/mips/arch.go, whose MIPS is little
// endian) for both byte orders: the header's code and data byte order fields
// tell them apart. bap-frames: mips 8, mach mipsisa32 32 for both, as BAP's
// qemu tracer writes them for TARGET_MIPS (docs/formats/bap-frames.md); binary
// trace v1.0 defines no mips machine (the writer refuses, naming the architecture).
// The trampoline page's two sequences and the frame each one unwinds.
std::span<const SignalTrampoline> mips_trampolines(bool little_endian) {
  static const SignalTrampoline kLittle[] = {
      {std::span(kSigreturnTrampolineLittle).first(8), mips_signal_saved_registers(true, false), false},
      {std::span(kSigreturnTrampolineLittle).subspan(8), mips_signal_saved_registers(true, true)}};
  static const SignalTrampoline kBig[] = {
      {std::span(kSigreturnTrampolineBig).first(8), mips_signal_saved_registers(false, false), false},
      {std::span(kSigreturnTrampolineBig).subspan(8), mips_signal_saved_registers(false, true)}};
  return little_endian ? std::span<const SignalTrampoline>(kLittle) : std::span<const SignalTrampoline>(kBig);
}

// ArchInfo::has_delay_slot for MIPS32: the jumps (j, jal, jr, jalr) and the
// branches (beq, bne, blez, bgtz and their "likely" forms, the REGIMM bltz,
// bgez family, and the coprocessor branches bc1f/bc1t, bc2*), by their opcode
// fields (MIPS32 Architecture for Programmers, Volume II, the opcode tables).
template <bool kLittleEndian>
bool mips_has_delay_slot(std::span<const std::uint8_t> bytes) {
  if (bytes.size() < 4) return false;
  const std::uint32_t word = kLittleEndian
                                 ? std::uint32_t{bytes[0]} | std::uint32_t{bytes[1]} << 8 | std::uint32_t{bytes[2]} << 16 |
                                       std::uint32_t{bytes[3]} << 24
                                 : std::uint32_t{bytes[3]} | std::uint32_t{bytes[2]} << 8 | std::uint32_t{bytes[1]} << 16 |
                                       std::uint32_t{bytes[0]} << 24;
  const std::uint32_t opcode = word >> 26, rs = word >> 21 & 31, rt = word >> 16 & 31, funct = word & 63;
  switch (opcode) {
    case 0: return funct == 8 || funct == 9;                      // jr, jalr
    case 1: return (rt & ~0x13u) == 0;                            // bltz, bgez, bltzl, bgezl, bltzal, bgezal, ...l
    case 2: case 3: case 4: case 5: case 6: case 7: return true;  // j, jal, beq, bne, blez, bgtz
    case 17: case 18: return rs == 8;                             // bc1f/bc1t (and -l), bc2*
    case 20: case 21: case 22: case 23: return true;              // beql, bnel, blezl, bgtzl
    default: return false;
  }
}

// How gdb sees it (gdb manual, "MIPS Features"): the o32 CPU, CP0 and FPU
// features gdb requires; the FPU registers and CP0's are not in the traces
// (unavailable to gdb), the pc, lo and hi are.
constexpr GdbRegister kGdbCpu[] = {
    {"r0", 32, "int", "zero"},   {"r1", 32, "int", "at"},
    {"r2", 32, "int", "v0"},     {"r3", 32, "int", "v1"},
    {"r4", 32, "int", "a0"},     {"r5", 32, "int", "a1"},
    {"r6", 32, "int", "a2"},     {"r7", 32, "int", "a3"},
    {"r8", 32, "int", "t0"},     {"r9", 32, "int", "t1"},
    {"r10", 32, "int", "t2"},    {"r11", 32, "int", "t3"},
    {"r12", 32, "int", "t4"},    {"r13", 32, "int", "t5"},
    {"r14", 32, "int", "t6"},    {"r15", 32, "int", "t7"},
    {"r16", 32, "int", "s0"},    {"r17", 32, "int", "s1"},
    {"r18", 32, "int", "s2"},    {"r19", 32, "int", "s3"},
    {"r20", 32, "int", "s4"},    {"r21", 32, "int", "s5"},
    {"r22", 32, "int", "s6"},    {"r23", 32, "int", "s7"},
    {"r24", 32, "int", "t8"},    {"r25", 32, "int", "t9"},
    {"r26", 32, "int", "k0"},    {"r27", 32, "int", "k1"},
    {"r28", 32, "int", "gp"},    {"r29", 32, "int", "sp"},
    {"r30", 32, "int", "fp"},    {"r31", 32, "int", "ra"},
    {"lo", 32, "int", "lo"},     {"hi", 32, "int", "hi"},
    {"pc", 32, "code_ptr", "pc"}};
constexpr GdbRegister kGdbCp0[] = {{"status", 32, "int", ""},
                                   {"badvaddr", 32, "int", ""},
                                   {"cause", 32, "int", ""}};
constexpr GdbRegister kGdbFpu[] = {
    {"f0", 32, "ieee_single", ""},  {"f1", 32, "ieee_single", ""},
    {"f2", 32, "ieee_single", ""},  {"f3", 32, "ieee_single", ""},
    {"f4", 32, "ieee_single", ""},  {"f5", 32, "ieee_single", ""},
    {"f6", 32, "ieee_single", ""},  {"f7", 32, "ieee_single", ""},
    {"f8", 32, "ieee_single", ""},  {"f9", 32, "ieee_single", ""},
    {"f10", 32, "ieee_single", ""}, {"f11", 32, "ieee_single", ""},
    {"f12", 32, "ieee_single", ""}, {"f13", 32, "ieee_single", ""},
    {"f14", 32, "ieee_single", ""}, {"f15", 32, "ieee_single", ""},
    {"f16", 32, "ieee_single", ""}, {"f17", 32, "ieee_single", ""},
    {"f18", 32, "ieee_single", ""}, {"f19", 32, "ieee_single", ""},
    {"f20", 32, "ieee_single", ""}, {"f21", 32, "ieee_single", ""},
    {"f22", 32, "ieee_single", ""}, {"f23", 32, "ieee_single", ""},
    {"f24", 32, "ieee_single", ""}, {"f25", 32, "ieee_single", ""},
    {"f26", 32, "ieee_single", ""}, {"f27", 32, "ieee_single", ""},
    {"f28", 32, "ieee_single", ""}, {"f29", 32, "ieee_single", ""},
    {"f30", 32, "ieee_single", ""}, {"f31", 32, "ieee_single", ""},
    {"fcsr", 32, "int", ""},        {"fir", 32, "int", ""}};
constexpr GdbFeature kGdbFeatures[] = {{"org.gnu.gdb.mips.cpu", "", kGdbCpu},
                                       {"org.gnu.gdb.mips.cp0", "", kGdbCp0},
                                       {"org.gnu.gdb.mips.fpu", "", kGdbFpu}};
constexpr GdbTarget kGdbTarget{"mips", kGdbFeatures};

ArchInfo make_info(bool little_endian) {
  return ArchInfo{
      .name = little_endian ? "mipsel" : "mips",
      // Capstone 4 decodes no `c.cond.d $fccN` with N != 0 (glibc's printf has
      // c.ule.d $fcc1): such instructions are recorded as opaque 4-byte ones.
      .fixed_instruction_size = 4,
      .branch_delay_slot = 4,
      .has_delay_slot = little_endian ? &mips_has_delay_slot<true> : &mips_has_delay_slot<false>,
      .elf_machine = kEmMips,
      .elf_64bit = false,
      .little_endian = little_endian,
      .platform = {},  // Linux sets ELF_PLATFORM only for some CPUs (octeon, loongson), not a 74K
      .uname_machine = "mips",
      .registers = kRegisters,
      .pc_reg = UC_MIPS_REG_PC,
      .sp_reg = UC_MIPS_REG_SP,
      .fp_reg = UC_MIPS_REG_FP,
      .syscall_abi = {.number_reg = UC_MIPS_REG_V0,
                      .arg_regs = {UC_MIPS_REG_A0, UC_MIPS_REG_A1, UC_MIPS_REG_A2, UC_MIPS_REG_A3, UC_MIPS_REG_INVALID,
                                   UC_MIPS_REG_INVALID},
                      .return_reg = UC_MIPS_REG_V0,
                      .trap_instruction = "syscall",
                      .trap_length = 4,
                      .register_arguments = 4,
                      .stack_arguments_offset = 16,
                      .thread_area_is_pointer = true,
                      .clone_tls_before_child_tid = true},
      .aligned_argument_pairs = true,
      // arch/mips/include/uapi/asm/signal.h: _NSIG 128, SIG_BLOCK 1, struct
      // sigaction { unsigned int sa_flags; handler; sigset_t sa_mask; } (no
      // sa_restorer), SA_SIGINFO 8; siginfo_t is { signo, code, errno };
      // stack_t is { ss_sp, ss_size, ss_flags }.
      .signal_abi = {.sigset_bytes = 16,
                     .sig_block = 1,
                     .sigaction_flags_first = true,
                     .numbers = kSignalNumbers,
                     .has_sa_restorer = false,
                     .sa_siginfo = 8,
                     .sa_nocldwait = 0x10000,
                     .siginfo_code_before_errno = true,
                     .si_timer_code = -3,
                     .sigreturn_trampoline = little_endian ? std::span<const std::uint8_t>(kSigreturnTrampolineLittle)
                                                           : std::span<const std::uint8_t>(kSigreturnTrampolineBig),
                     .stack_size_before_flags = true,
                     .trampolines = mips_trampolines(little_endian)},
      .open_flags = kOpenFlags,
      .mmap_flags = kMmapFlags,
      .ioctl_requests = kIoctlRequests,
      .rlimit_resources = kRlimitResources,
      .termios_to_guest = little_endian ? &mipsel_termios_to_guest : &mips_termios_to_guest,
      .termios_to_host = little_endian ? &mipsel_termios_to_host : &mips_termios_to_host,
      .termios_bytes = kMaxTermiosBytes,
      .rlimit_infinity32 = 0x7fffffff,
      .encode_stat = little_endian ? &mipsel_encode_stat : &mips_encode_stat,
      .layout = kLayout,
      .format_ids = {.ucir_arch = "mips", .bap_architecture = 8, .bap_machine = 32,
                     .bintrace_magic = 0, .bintrace = nullptr},
      .gdb = &kGdbTarget,
      .syscall_id = &mips_syscall_id,
      .engine = little_endian ? &kEngineLittle : &kEngineBig,
      .analyze_prologue = little_endian ? &analyze_mips_prologue_little : &analyze_mips_prologue_big,
  };
}

}  // namespace

const ArchInfo& mips_arch() {
  static const ArchInfo kInfo = make_info(false);
  return kInfo;
}

const ArchInfo& mipsel_arch() {
  static const ArchInfo kInfo = make_info(true);
  return kInfo;
}

}  // namespace tracecorn::arch
