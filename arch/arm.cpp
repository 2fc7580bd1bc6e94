// Role: everything tracecorn knows about 32-bit ARM (EABI, armhf) Linux guests,
// in ARM and Thumb code: Unicorn arch/mode, the register table with DWARF
// numbers ("DWARF for the Arm Architecture": r0-r15 0-15, d0-d31 256-287), the
// Linux syscall ABI (svc #0, number in r7, arguments r0-r5, result r0, 64-bit
// arguments in aligned register pairs) and numbering (arch/arm/tools/
// syscall.tbl, EABI), arm's private set_tls, TLS in TPIDRURO (CP15 c13), the
// `struct stat64` layout, the 3G/1G no-ASLR layout and the CPU set-up Debian's
// Unicorn 2.0.1 needs.
// Who calls it: the registry hands the ArchInfo out; the GuestCpu runs on the
// emulation thread inside Unicorn's hooks.
// Invariant: nothing outside arch/ names an ARM register or syscall number.
//
// Unicorn 2.0.1 facts this file relies on (observed on Debian 12's library with
// its Python binding):
// - `svc #0` reaches UC_HOOK_INTR with intno 2 (EXCP_SWI), PC already past it
//   (2 bytes in Thumb, 4 in ARM); the CPU starts in SVC mode, ARM state, and a
//   start address with bit 0 set runs Thumb code.
// - VFP/NEON instructions are undefined until FPEXC.EN is set.
// - TPIDRURO (UC_ARM_REG_C13_C0_3) is what `mrc p15, 0, rX, c13, c0, 3` reads.
// - A block hook's address never has bit 0 set; CPSR.T read in the block hook
//   is the block's state (checked with ARM code that `bx`es into Thumb code), so
//   the recorder decodes each block in the mode CPSR.T gives (kThumb below).

#include "arch/arch.h"

#include <capstone/capstone.h>

#include <algorithm>
#include <optional>

#include "arch/arm_exceptions.h"
#include "arch/block_scan.h"
#include "arch/syscall_table.h"
#include "arch/interrupt_trap_cpu.h"
#include "arch/signal_frames.h"

namespace tracecorn::arch {
namespace {

constexpr RegisterInfo kRegisters[] = {
    {UC_ARM_REG_R0, "r0", 4, 0},     {UC_ARM_REG_R1, "r1", 4, 1},     {UC_ARM_REG_R2, "r2", 4, 2},
    {UC_ARM_REG_R3, "r3", 4, 3},     {UC_ARM_REG_R4, "r4", 4, 4},     {UC_ARM_REG_R5, "r5", 4, 5},
    {UC_ARM_REG_R6, "r6", 4, 6},     {UC_ARM_REG_R7, "r7", 4, 7},     {UC_ARM_REG_R8, "r8", 4, 8},
    {UC_ARM_REG_R9, "r9", 4, 9},     {UC_ARM_REG_R10, "r10", 4, 10},  {UC_ARM_REG_R11, "r11", 4, 11},
    {UC_ARM_REG_R12, "r12", 4, 12},  {UC_ARM_REG_SP, "sp", 4, 13},    {UC_ARM_REG_LR, "lr", 4, 14},
    {UC_ARM_REG_PC, "pc", 4, 15},    {UC_ARM_REG_CPSR, "cpsr", 4, kNoDwarfNumber},
    {UC_ARM_REG_C13_C0_3, "tpidruro", 4, kNoDwarfNumber},
    {UC_ARM_REG_FPSCR, "fpscr", 4, kNoDwarfNumber},
    {UC_ARM_REG_D0, "d0", 8, 256},   {UC_ARM_REG_D1, "d1", 8, 257},   {UC_ARM_REG_D2, "d2", 8, 258},
    {UC_ARM_REG_D3, "d3", 8, 259},   {UC_ARM_REG_D4, "d4", 8, 260},   {UC_ARM_REG_D5, "d5", 8, 261},
    {UC_ARM_REG_D6, "d6", 8, 262},   {UC_ARM_REG_D7, "d7", 8, 263},   {UC_ARM_REG_D8, "d8", 8, 264},
    {UC_ARM_REG_D9, "d9", 8, 265},   {UC_ARM_REG_D10, "d10", 8, 266}, {UC_ARM_REG_D11, "d11", 8, 267},
    {UC_ARM_REG_D12, "d12", 8, 268}, {UC_ARM_REG_D13, "d13", 8, 269}, {UC_ARM_REG_D14, "d14", 8, 270},
    {UC_ARM_REG_D15, "d15", 8, 271}, {UC_ARM_REG_D16, "d16", 8, 272}, {UC_ARM_REG_D17, "d17", 8, 273},
    {UC_ARM_REG_D18, "d18", 8, 274}, {UC_ARM_REG_D19, "d19", 8, 275}, {UC_ARM_REG_D20, "d20", 8, 276},
    {UC_ARM_REG_D21, "d21", 8, 277}, {UC_ARM_REG_D22, "d22", 8, 278}, {UC_ARM_REG_D23, "d23", 8, 279},
    {UC_ARM_REG_D24, "d24", 8, 280}, {UC_ARM_REG_D25, "d25", 8, 281}, {UC_ARM_REG_D26, "d26", 8, 282},
    {UC_ARM_REG_D27, "d27", 8, 283}, {UC_ARM_REG_D28, "d28", 8, 284}, {UC_ARM_REG_D29, "d29", 8, 285},
    {UC_ARM_REG_D30, "d30", 8, 286}, {UC_ARM_REG_D31, "d31", 8, 287},
};

// From the cross compiler's <asm/unistd.h> (arm EABI), checked by
// tests/arch/arch_test.cpp. Left out on purpose (ENOSYS, so glibc uses the
// 64-bit call it tries first): the calls whose structs have word-sized or
// 32-bit time fields that no converter handles yet (old stat/fstat/lstat,
// statfs, getdents, times, sysinfo, getrusage, setrlimit, itimers,
// utimes, select/pselect6/ppoll,
// sigaltstack, sendfile, sendmsg/recvmsg).
constexpr SyscallNumber kSyscallNumbers[] = {
    // time32 calls, converted by recorder/linux/syscalls_compat32.cpp.
    {78, SyscallId::gettimeofday}, {162, SyscallId::nanosleep}, {263, SyscallId::clock_gettime},
    {264, SyscallId::clock_getres}, {265, SyscallId::clock_nanosleep},
    // 32-bit uid/gid calls (the unsuffixed ones take 16-bit ids), run by the base calls.
    {198, SyscallId::lchown32}, {199, SyscallId::getuid32}, {200, SyscallId::getgid32},
    {201, SyscallId::geteuid32}, {202, SyscallId::getegid32}, {205, SyscallId::getgroups32},
    {206, SyscallId::setgroups32}, {207, SyscallId::fchown32}, {209, SyscallId::getresuid32},
    {211, SyscallId::getresgid32}, {212, SyscallId::chown32}, {213, SyscallId::setuid32},
    {214, SyscallId::setgid32},
    {0, SyscallId::restart_syscall}, {1, SyscallId::exit}, {2, SyscallId::fork},
    {3, SyscallId::read}, {4, SyscallId::write}, {5, SyscallId::open},
    {6, SyscallId::close}, {8, SyscallId::creat}, {9, SyscallId::link},
    {10, SyscallId::unlink}, {11, SyscallId::execve}, {12, SyscallId::chdir},
    {15, SyscallId::chmod}, {16, SyscallId::lchown}, {19, SyscallId::lseek},
    {20, SyscallId::getpid}, {23, SyscallId::setuid}, {24, SyscallId::getuid},
    {29, SyscallId::pause}, {119, SyscallId::sigreturn}, {176, SyscallId::rt_sigpending}, {177, SyscallId::rt_sigtimedwait}, {179, SyscallId::rt_sigsuspend}, {421, SyscallId::rt_sigtimedwait_time64}, {104, SyscallId::setitimer}, {105, SyscallId::getitimer}, {186, SyscallId::sigaltstack}, {33, SyscallId::access}, {36, SyscallId::sync},
    {37, SyscallId::kill}, {38, SyscallId::rename}, {39, SyscallId::mkdir},
    {40, SyscallId::rmdir}, {41, SyscallId::dup}, {42, SyscallId::pipe},
    {45, SyscallId::brk}, {46, SyscallId::setgid}, {47, SyscallId::getgid},
    {49, SyscallId::geteuid}, {50, SyscallId::getegid}, {54, SyscallId::ioctl},
    {55, SyscallId::fcntl}, {57, SyscallId::setpgid}, {60, SyscallId::umask},
    {63, SyscallId::dup2}, {64, SyscallId::getppid}, {65, SyscallId::getpgrp},
    {66, SyscallId::setsid}, {80, SyscallId::getgroups}, {81, SyscallId::setgroups},
    {83, SyscallId::symlink}, {85, SyscallId::readlink}, {91, SyscallId::munmap},
    {92, SyscallId::truncate}, {93, SyscallId::ftruncate}, {94, SyscallId::fchmod},
    {95, SyscallId::fchown}, {118, SyscallId::fsync}, {120, SyscallId::clone},
    {122, SyscallId::uname}, {125, SyscallId::mprotect}, {132, SyscallId::getpgid},
    {133, SyscallId::fchdir}, {140, SyscallId::_llseek}, {143, SyscallId::flock},
    {144, SyscallId::msync}, {145, SyscallId::readv}, {146, SyscallId::writev},
    {147, SyscallId::getsid}, {148, SyscallId::fdatasync}, {150, SyscallId::mlock},
    {151, SyscallId::munlock}, {155, SyscallId::sched_getparam}, {157, SyscallId::sched_getscheduler},
    {158, SyscallId::sched_yield}, {163, SyscallId::mremap}, {165, SyscallId::getresuid},
    {168, SyscallId::poll}, {171, SyscallId::getresgid}, {172, SyscallId::prctl},
    {173, SyscallId::rt_sigreturn}, {174, SyscallId::rt_sigaction}, {175, SyscallId::rt_sigprocmask},
    {180, SyscallId::pread64}, {181, SyscallId::pwrite64}, {182, SyscallId::chown},
    {183, SyscallId::getcwd}, {190, SyscallId::vfork}, {191, SyscallId::ugetrlimit},
    {192, SyscallId::mmap2}, {193, SyscallId::truncate64}, {194, SyscallId::ftruncate64},
    {195, SyscallId::stat64}, {196, SyscallId::lstat64}, {197, SyscallId::fstat64},
    {217, SyscallId::getdents64}, {219, SyscallId::mincore}, {220, SyscallId::madvise},
    {221, SyscallId::fcntl64}, {224, SyscallId::gettid}, {229, SyscallId::getxattr},
    {230, SyscallId::lgetxattr}, {231, SyscallId::fgetxattr}, {232, SyscallId::listxattr},
    {233, SyscallId::llistxattr}, {238, SyscallId::tkill}, {240, SyscallId::futex},
    {241, SyscallId::sched_setaffinity}, {242, SyscallId::sched_getaffinity}, {248, SyscallId::exit_group},
    {256, SyscallId::set_tid_address}, {262, SyscallId::clock_settime}, {268, SyscallId::tgkill},
    {281, SyscallId::socket}, {282, SyscallId::bind}, {283, SyscallId::connect},
    {284, SyscallId::listen}, {285, SyscallId::accept}, {286, SyscallId::getsockname},
    {287, SyscallId::getpeername}, {288, SyscallId::socketpair}, {290, SyscallId::sendto},
    {292, SyscallId::recvfrom}, {293, SyscallId::shutdown}, {294, SyscallId::setsockopt},
    {295, SyscallId::getsockopt}, {322, SyscallId::openat}, {323, SyscallId::mkdirat},
    {325, SyscallId::fchownat}, {327, SyscallId::fstatat64}, {328, SyscallId::unlinkat},
    {329, SyscallId::renameat}, {330, SyscallId::linkat}, {331, SyscallId::symlinkat},
    {332, SyscallId::readlinkat}, {333, SyscallId::fchmodat}, {334, SyscallId::faccessat},
    {338, SyscallId::set_robust_list}, {339, SyscallId::get_robust_list}, {352, SyscallId::fallocate},
    {178, SyscallId::rt_sigqueueinfo}, {363, SyscallId::rt_tgsigqueueinfo}, {349, SyscallId::signalfd}, {355, SyscallId::signalfd4}, {356, SyscallId::eventfd2}, {357, SyscallId::epoll_create1}, {358, SyscallId::dup3},
    {359, SyscallId::pipe2}, {361, SyscallId::preadv}, {362, SyscallId::pwritev},
    {369, SyscallId::prlimit64}, {382, SyscallId::renameat2}, {384, SyscallId::getrandom},
    {385, SyscallId::memfd_create}, {389, SyscallId::membarrier}, {391, SyscallId::copy_file_range},
    {397, SyscallId::statx}, {398, SyscallId::rseq}, {403, SyscallId::clock_gettime64},
    {406, SyscallId::clock_getres_time64}, {407, SyscallId::clock_nanosleep_time64}, {422, SyscallId::futex_time64},
    {436, SyscallId::close_range}, {437, SyscallId::openat2}, {439, SyscallId::faccessat2},
    {435, SyscallId::clone3}, {387, SyscallId::execveat},
    {114, SyscallId::wait4}, {280, SyscallId::waitid}, {434, SyscallId::pidfd_open},
    {424, SyscallId::pidfd_send_signal},
    {96, SyscallId::getpriority}, {97, SyscallId::setpriority}, {208, SyscallId::setresuid32}, {210, SyscallId::setresgid32},
    {250, SyscallId::epoll_create}, {251, SyscallId::epoll_ctl}, {252, SyscallId::epoll_wait}, {346, SyscallId::epoll_pwait},
    {350, SyscallId::timerfd_create}, {351, SyscallId::eventfd}, {353, SyscallId::timerfd_settime}, {354, SyscallId::timerfd_gettime},
    {410, SyscallId::timerfd_gettime64}, {411, SyscallId::timerfd_settime64},
    {257, SyscallId::timer_create}, {258, SyscallId::timer_settime}, {259, SyscallId::timer_gettime},
    {260, SyscallId::timer_getoverrun}, {261, SyscallId::timer_delete}, {408, SyscallId::timer_gettime64},
    {409, SyscallId::timer_settime64},
};

constexpr SyscallTable kSyscallTable{kSyscallNumbers};
constexpr std::uint64_t kArmNrBase = 0xf0000;              // __ARM_NR_BASE
constexpr std::uint64_t kArmCacheflush = kArmNrBase + 2;    // __ARM_NR_cacheflush
constexpr std::uint64_t kArmSetTls = kArmNrBase + 5;        // __ARM_NR_set_tls

SyscallId arm_syscall_id(std::uint64_t number) {
  if (number == kArmSetTls) return SyscallId::set_tls;
  if (number == kArmCacheflush) return SyscallId::cacheflush;
  return kSyscallTable(number);
}


constexpr std::uint32_t kCpsrThumb = 1u << 5;
constexpr std::uint64_t kFpexcEnable = 0x40000000;

// AT_HWCAP (arch/arm/include/uapi/asm/hwcap.h) of a Cortex-A15 with VFPv4 and
// NEON, what Unicorn runs: HALF THUMB FAST_MULT VFP EDSP NEON VFPv3 TLS VFPv4
// IDIVA IDIVT VFPD32 LPAE.
constexpr std::uint64_t kHwcap = (1u << 1) | (1u << 2) | (1u << 4) | (1u << 6) | (1u << 7) | (1u << 12) |
                                 (1u << 13) | (1u << 15) | (1u << 16) | (1u << 17) | (1u << 18) | (1u << 19) |
                                 (1u << 20);

class ArmGuestCpu final : public InterruptTrapCpu {
 public:
  explicit ArmGuestCpu(uc_engine* engine) : InterruptTrapCpu(engine, UC_ARM_REG_PC, UC_ARM_REG_C13_C0_3) {}
  ~ArmGuestCpu() override {
    for (csh& handle : capstone_)
      if (handle) cs_close(&handle);
  }
  ArmGuestCpu(const ArmGuestCpu&) = delete;
  ArmGuestCpu& operator=(const ArmGuestCpu&) = delete;

  Status init() {
    std::uint64_t fpexc = kFpexcEnable, zero = 0;
    if (uc_reg_write(engine_, UC_ARM_REG_FPEXC, &fpexc) != UC_ERR_OK ||
        uc_reg_write(engine_, UC_ARM_REG_C13_C0_3, &zero) != UC_ERR_OK)
      return make_error(ErrorCode::kEmulator, "cannot enable VFP (FPEXC) or clear TPIDRURO");
    const cs_mode modes[2] = {CS_MODE_ARM, CS_MODE_THUMB};
    for (int i = 0; i < 2; ++i)
      if (cs_open(CS_ARCH_ARM, modes[i], &capstone_[i]) != CS_ERR_OK ||
          cs_option(capstone_[i], CS_OPT_DETAIL, CS_OPT_ON) != CS_ERR_OK)
        return make_error(ErrorCode::kEmulator, "cannot open Capstone for ARM/Thumb");
    return ok_status();
  }

  // PC is past the svc: 2 bytes back in Thumb state, 4 in ARM state.
  std::uint64_t trap_pc() const override {
    std::uint64_t cpsr = 0;
    uc_reg_read(engine_, UC_ARM_REG_CPSR, &cpsr);
    return pc() - ((cpsr & kCpsrThumb) ? 2 : 4);
  }
  std::uint64_t hwcap() const override { return kHwcap; }

  bool has_signal_frames() const override { return true; }
  std::uint64_t syscall_return_pc() const override { return pc(); }
  std::uint64_t syscall_restart_pc() const override {
    std::uint64_t cpsr = 0;
    uc_reg_read(engine_, UC_ARM_REG_CPSR, &cpsr);
    return trap_pc() | ((cpsr & kCpsrThumb) ? 1 : 0);
  }
  SignalFrame build_signal_frame(const SignalFrameRequest& request) const override {
    return arm_build_signal_frame(engine_, request);
  }
  void enter_signal_handler(const SignalFrameRequest& request, const SignalFrame& frame) override {
    arm_enter_signal_handler(engine_, request, frame);
  }
  std::optional<SignalReturn> return_from_signal(bool rt) override { return arm_return_from_signal(engine_, rt); }

  // Unicorn 2.0.1 leaves the pc at the faulting block's start after a memory
  // fault. The block is decoded in the state CPSR.T gives, and the first
  // instruction whose memory operand, evaluated with the current registers
  // (TCG writes them back before every guest memory access), lies within 64
  // bytes below `fault_address` is the one; for a register list (push, pop,
  // ldm, stm, vpush, vldm...) the list's span around its base register counts.
  // A fetch fault reports the fetched address itself; no match: the block start.
  std::uint64_t locate_faulting_instruction(std::uint64_t reported_pc, std::uint64_t fault_address) const override {
    if (fault_address == reported_pc) return reported_pc;
    std::uint64_t cpsr = 0;
    uc_reg_read(engine_, UC_ARM_REG_CPSR, &cpsr);
    const bool thumb = (cpsr & kCpsrThumb) != 0;
    return find_instruction_in_block(engine_, capstone_[thumb ? 1 : 0], reported_pc, 256, thumb ? 2 : 4, fault_address,
                                     [&](const cs_insn& insn) { return touches(insn, thumb, fault_address); });
  }

 private:
  bool is_syscall_interrupt(std::uint32_t number) const override { return number == kArmExcpSwi; }
  int fault_signal(std::uint32_t number) const override { return arm_fault_signal(number); }

  // The value of a Capstone ARM core register as the instruction at `address`
  // sees it (pc reads as the instruction + 8 in ARM state, + 4 in Thumb);
  // nullopt for anything else.
  std::optional<std::uint32_t> register_value(unsigned reg, std::uint64_t address, bool thumb) const {
    if (reg == ARM_REG_INVALID) return 0;
    if (reg == ARM_REG_PC) return static_cast<std::uint32_t>(address + (thumb ? 4 : 8));
    int uc_id = -1;
    if (reg >= ARM_REG_R0 && reg <= ARM_REG_R12) uc_id = UC_ARM_REG_R0 + static_cast<int>(reg - ARM_REG_R0);
    if (reg == ARM_REG_SP) uc_id = UC_ARM_REG_SP;
    if (reg == ARM_REG_LR) uc_id = UC_ARM_REG_LR;
    if (uc_id < 0) return std::nullopt;
    std::uint64_t value = 0;
    uc_reg_read(engine_, uc_id, &value);
    return static_cast<std::uint32_t>(value);
  }

  bool touches(const cs_insn& insn, bool thumb, std::uint64_t fault_address) const {
    const cs_arm& detail = insn.detail->arm;
    const auto fault = static_cast<std::uint32_t>(fault_address);
    for (std::uint8_t i = 0; i < detail.op_count; ++i) {
      const cs_arm_op& op = detail.operands[i];
      if (op.type != ARM_OP_MEM) continue;
      auto base = register_value(op.mem.base, insn.address, thumb);
      const auto index = register_value(op.mem.index, insn.address, thumb);
      if (!base || !index) continue;
      if (op.mem.base == ARM_REG_PC && thumb) *base &= ~3u;  // Thumb literal loads use Align(pc, 4)
      const std::uint32_t scaled = (op.mem.index == ARM_REG_INVALID) ? 0 : (*index << (op.mem.lshift & 31));
      const std::uint32_t effective = *base + (op.mem.scale < 0 ? 0u - scaled : scaled) +
                                      static_cast<std::uint32_t>(op.mem.disp);
      if (fault - effective < 64) return true;
    }
    // Register lists: push/pop/vpush/vpop through sp, ldm/stm/vldm/vstm through
    // their first operand; the list is at most 16 words (or 32 doublewords).
    std::optional<std::uint32_t> base;
    switch (insn.id) {
      case ARM_INS_PUSH: case ARM_INS_POP: case ARM_INS_VPUSH: case ARM_INS_VPOP:
        base = register_value(ARM_REG_SP, insn.address, thumb);
        break;
      case ARM_INS_LDM: case ARM_INS_LDMDA: case ARM_INS_LDMDB: case ARM_INS_LDMIB:
      case ARM_INS_STM: case ARM_INS_STMDA: case ARM_INS_STMDB: case ARM_INS_STMIB:
      case ARM_INS_VLDMIA: case ARM_INS_VLDMDB: case ARM_INS_VSTMIA: case ARM_INS_VSTMDB:
        if (detail.op_count > 0 && detail.operands[0].type == ARM_OP_REG)
          base = register_value(detail.operands[0].reg, insn.address, thumb);
        break;
      default:
        break;
    }
    if (!base) return false;
    const std::uint32_t span = 8u * detail.op_count;  // bytes a list of op_count registers can cover
    return fault - (*base - span) < 2 * span;
  }

  csh capstone_[2] = {0, 0};  // ARM state, Thumb state; detail on
};

// For handlers without SA_RESTORER (glibc always gives one): the sigpage's
// ARM code, mov r7, #119 (__NR_sigreturn); svc #0 at +0 and mov r7, #173
// (__NR_rt_sigreturn); svc #0 at +8.
constexpr std::uint8_t kSigreturnTrampoline[] = {0x77, 0x70, 0xa0, 0xe3, 0x00, 0x00, 0x00, 0xef,
                                                 0xad, 0x70, 0xa0, 0xe3, 0x00, 0x00, 0x00, 0xef};

Expected<std::unique_ptr<GuestCpu>> make_arm_guest_cpu(uc_engine* engine) {
  auto cpu = std::make_unique<ArmGuestCpu>(engine);
  if (auto status = cpu->init(); !status) return status.error();
  return std::unique_ptr<GuestCpu>(std::move(cpu));
}

// struct stat64 of arch/arm/include/uapi/asm/stat.h, 104 bytes, little endian:
//   0 dev u64 | 8 pad[4] | 12 __st_ino u32 | 16 mode u32 | 20 nlink u32 | 24 uid | 28 gid
//  32 rdev u64 | 40 pad[4] | 48 size i64 | 56 blksize u32 | 64 blocks u64 | 72 atime u32
//  76 atime_nsec | 80 mtime | 84 mtime_nsec | 88 ctime | 92 ctime_nsec | 96 ino u64
std::size_t arm_encode_stat(const FileStatus& s, std::span<std::uint8_t, kMaxStatBytes> out) {
  constexpr std::size_t kSize = 104;
  std::fill_n(out.begin(), kSize, std::uint8_t{0});
  const StructField fields[] = {
      {0, 8, s.dev},         {12, 4, s.ino},        {16, 4, s.mode},       {20, 4, s.nlink},
      {24, 4, s.uid},        {28, 4, s.gid},        {32, 8, s.rdev},       {48, 8, s.size},
      {56, 4, s.blksize},    {64, 8, s.blocks},     {72, 4, s.atime_sec},  {76, 4, s.atime_nsec},
      {80, 4, s.mtime_sec},  {84, 4, s.mtime_nsec}, {88, 4, s.ctime_sec},  {92, 4, s.ctime_nsec},
      {96, 8, s.ino},
  };
  for (const auto& field : fields) store_field(out, field, true);
  return kSize;
}

// arch/arm/include/uapi/asm/fcntl.h against asm-generic/fcntl.h (octal), as arm64.
constexpr FlagValue kOpenFlags[] = {
    {040000, 0200000},   // O_DIRECTORY
    {0100000, 0400000},  // O_NOFOLLOW
    {0200000, 040000},   // O_DIRECT
    {0400000, 0100000},  // O_LARGEFILE
};

constexpr std::uint16_t table_index(std::string_view name) {
  for (std::size_t i = 0; i < std::size(kRegisters); ++i)
    if (kRegisters[i].name == name) return static_cast<std::uint16_t>(i);
  throw "no such register";  // a compile-time error in a constant expression
}
constexpr std::uint16_t kTableR0 = table_index("r0");
constexpr std::uint16_t kTableSp = table_index("sp");
constexpr std::uint16_t kTableLr = table_index("lr");
constexpr std::uint16_t kTablePc = table_index("pc");
constexpr std::uint16_t kTableCpsr = table_index("cpsr");
constexpr std::uint16_t kTableFpscr = table_index("fpscr");
constexpr std::uint16_t kTableD0 = table_index("d0");
static_assert(table_index("r12") == kTableR0 + 12 && table_index("d31") == kTableD0 + 31);

// Capstone 4's ARM register ids -> kRegisters: r0-r12, d0-d31, s0-s31 and
// q0-q15 are contiguous; s2n and s2n+1 are halves of dn, qn is d2n:d2n+1
// (given as d2n here; arm_add_unlisted_writes adds d2n+1); the flag views
// (apsr, apsr_nzcv) are parts of cpsr, fpscr_nzcv of fpscr. itstate is left
// out: Unicorn 2.0.1 keeps the IT state in the translation (a code hook never
// sees it in CPSR; only a block that ends inside an IT block stores it), so
// the IT instruction and the conditional instructions it governs are not
// listed as writing cpsr.
int arm_register_index_for_capstone(unsigned r) {
  if (r >= ARM_REG_R0 && r <= ARM_REG_R12) return kTableR0 + static_cast<int>(r - ARM_REG_R0);
  if (r == ARM_REG_SP) return kTableSp;
  if (r == ARM_REG_LR) return kTableLr;
  if (r == ARM_REG_PC) return kTablePc;
  if (r == ARM_REG_CPSR || r == ARM_REG_APSR || r == ARM_REG_APSR_NZCV) return kTableCpsr;
  if (r == ARM_REG_FPSCR || r == ARM_REG_FPSCR_NZCV) return kTableFpscr;
  if (r >= ARM_REG_D0 && r <= ARM_REG_D31) return kTableD0 + static_cast<int>(r - ARM_REG_D0);
  if (r >= ARM_REG_S0 && r <= ARM_REG_S31) return kTableD0 + static_cast<int>(r - ARM_REG_S0) / 2;
  if (r >= ARM_REG_Q0 && r <= ARM_REG_Q15) return kTableD0 + 2 * static_cast<int>(r - ARM_REG_Q0);
  return -1;  // spsr, fpexc, fpsid, mvfr*: not in the table (a user process cannot change them)
}

void add_once(std::vector<std::uint16_t>& list, int index) {
  if (index < 0) return;
  const auto value = static_cast<std::uint16_t>(index);
  if (std::find(list.begin(), list.end(), value) == list.end()) list.push_back(value);
}

bool starts_with(std::string_view text, std::string_view prefix) { return text.substr(0, prefix.size()) == prefix; }

// The mnemonic without Capstone's width qualifier or data type ("push.w" ->
// "push", "ldr.w" -> "ldr", "vld1.8" -> "vld1"). Condition suffixes stay
// ("popeq"): conditional instructions are handled through detail.cc.
std::string_view base_mnemonic(const cs_insn& insn) {
  const std::string_view m = insn.mnemonic;
  return m.substr(0, m.find('.'));
}

bool is_list_transfer(std::string_view m) {
  return starts_with(m, "ldm") || starts_with(m, "stm") || m == "push" || m == "pop";
}
bool is_vector_list_transfer(std::string_view m) {
  return starts_with(m, "vldm") || starts_with(m, "vstm") || m == "vpush" || m == "vpop";
}

// What Capstone 4's ARM access lists leave out (checked instruction by
// instruction against a brute-force comparison of the register file, see
// tests/recorder/core/recorder_test.cpp):
// - cpsr: the flags of flag-setting instructions (adds...), msr, the GE/Q bits
//   of the parallel and saturating arithmetic, and the T bit of any write to
//   pc (bx, blx, pop {pc}, ldr pc interwork);
// - fpscr: the cumulative exception bits any VFP/NEON arithmetic may set;
// - the base register of a written-back transfer, sp of vpush/vpop;
// - the destination of mrc (listed as read), the high half of a written q register.
// It also takes pc out of the list (see below).
void arm_add_unlisted_writes(const cs_insn& insn, std::vector<std::uint16_t>& written) {
  if (!insn.detail) return;
  const cs_arm& detail = insn.detail->arm;
  const std::string_view m = base_mnemonic(insn);
  // pc is implied by the instruction sequence (as rip on x86-64): a branch's
  // write of it is not a register change (and read at the next hook, Unicorn's
  // pc may still be the branch's own address).
  bool writes_pc = std::find(written.begin(), written.end(), kTablePc) != written.end();
  std::erase(written, kTablePc);
  for (std::uint8_t i = 0; i < detail.op_count; ++i) {
    const cs_arm_op& op = detail.operands[i];
    if (op.type == ARM_OP_REG && (op.access & CS_AC_WRITE)) {
      if (op.reg == ARM_REG_PC) writes_pc = true;
      if (op.reg >= ARM_REG_Q0 && op.reg <= ARM_REG_Q15) add_once(written, arm_register_index_for_capstone(op.reg) + 1);
    }
    if (op.type == ARM_OP_MEM && detail.writeback) add_once(written, arm_register_index_for_capstone(op.mem.base));
  }
  if (detail.writeback && (is_list_transfer(m) || is_vector_list_transfer(m)) && detail.op_count > 0 &&
      detail.operands[0].type == ARM_OP_REG && m != "push" && m != "pop")
    add_once(written, arm_register_index_for_capstone(detail.operands[0].reg));
  if (m == "push" || m == "pop" || m == "vpush" || m == "vpop") add_once(written, kTableSp);
  if (m == "mrc" || m == "vmrs") {
    for (std::uint8_t i = 0; i < detail.op_count; ++i)
      if (detail.operands[i].type == ARM_OP_REG) add_once(written, arm_register_index_for_capstone(detail.operands[i].reg));
  }
  if (m == "bx" || m == "blx") writes_pc = true;
  const bool parallel_or_saturating =
      starts_with(m, "q") || starts_with(m, "uq") || starts_with(m, "sadd") || starts_with(m, "ssub") ||
      starts_with(m, "uadd") || starts_with(m, "usub") || starts_with(m, "sasx") || starts_with(m, "ssax") ||
      starts_with(m, "uasx") || starts_with(m, "usax") || starts_with(m, "ssat") || starts_with(m, "usat") ||
      starts_with(m, "smla") || starts_with(m, "smlsd") || starts_with(m, "smuad");
  if (detail.update_flags || writes_pc || parallel_or_saturating || starts_with(m, "msr") || m == "setend")
    add_once(written, kTableCpsr);
  if (starts_with(m, "v") && !starts_with(m, "vld") && !starts_with(m, "vst") && !starts_with(m, "vmov") &&
      !is_vector_list_transfer(m) && m != "vmrs" && m != "vdup")
    add_once(written, kTableFpscr);
}

// How many accesses Unicorn reports (QEMU 5's arm translator): one per
// register a single or list transfer moves (ldrd/strd and ldm/stm/push/pop:
// one 32-bit access per core register; vldr/vstr and vldm/vstm: one per s or d
// register), a read then a write for swp and strex (a compare-and-exchange, as
// on aarch64). Not fixed: conditional transfers (they may not run), the
// element-wise vector structures (vld1-vld4, vst1-vst4), ldrexd/strexd and
// coprocessor transfers.
bool arm_count_memory_accesses(const cs_insn& insn, std::uint8_t& reads, std::uint8_t& writes) {
  reads = writes = 0;
  if (!insn.detail) return false;
  const cs_arm& detail = insn.detail->arm;
  const std::string_view m = base_mnemonic(insn);
  bool has_memory = false;
  std::uint8_t registers = 0;
  for (std::uint8_t i = 0; i < detail.op_count; ++i) {
    has_memory |= detail.operands[i].type == ARM_OP_MEM;
    registers += detail.operands[i].type == ARM_OP_REG;
  }
  const bool list = is_list_transfer(m) || is_vector_list_transfer(m);
  if (!has_memory && !list) return true;
  if (starts_with(m, "pld") || starts_with(m, "pli")) return true;
  const bool conditional = detail.cc != ARM_CC_AL && detail.cc != ARM_CC_INVALID;
  if (conditional) return false;
  if (starts_with(m, "vld") && !starts_with(m, "vldr") && !starts_with(m, "vldm")) return false;
  if (starts_with(m, "vst") && !starts_with(m, "vstr") && !starts_with(m, "vstm")) return false;
  if (starts_with(m, "ldc") || starts_with(m, "stc") || m == "ldrexd" || m == "strexd" || m == "ldaexd" ||
      m == "stlexd")
    return false;
  if (list) {
    // The register list, after the base register of ldm/stm/vldm/vstm.
    const std::uint8_t count = (m == "push" || m == "pop" || m == "vpush" || m == "vpop") ? registers
                                                                                            : registers - 1;
    (starts_with(m, "ld") || starts_with(m, "vld") || m == "pop" || m == "vpop" ? reads : writes) = count;
    return true;
  }
  if (m == "swp" || m == "swpb") {
    reads = writes = 1;
    return true;
  }
  if (starts_with(m, "strex") || starts_with(m, "stlex")) {
    reads = writes = 1;
    return true;
  }
  if (m == "tbb" || m == "tbh") {
    reads = 1;
    return true;
  }
  const bool pair = m == "ldrd" || m == "strd";
  const bool is_load = starts_with(m, "ld") || starts_with(m, "vld");
  const bool is_store = starts_with(m, "st") || starts_with(m, "vst");
  if (!is_load && !is_store) return false;
  (is_load ? reads : writes) = pair ? 2 : 1;
  return true;
}

void arm_address_registers(const cs_insn& insn, std::vector<std::uint16_t>& base, std::vector<std::uint16_t>& index) {
  if (!insn.detail) return;
  const cs_arm& detail = insn.detail->arm;
  const std::string_view m = base_mnemonic(insn);
  for (std::uint8_t i = 0; i < detail.op_count; ++i) {
    const cs_arm_op& op = detail.operands[i];
    if (op.type != ARM_OP_MEM) continue;
    add_once(base, arm_register_index_for_capstone(op.mem.base));
    add_once(index, arm_register_index_for_capstone(op.mem.index));
  }
  if (m == "push" || m == "pop" || m == "vpush" || m == "vpop") {
    add_once(base, kTableSp);
  } else if ((is_list_transfer(m) || is_vector_list_transfer(m)) && detail.op_count > 0 &&
             detail.operands[0].type == ARM_OP_REG) {
    add_once(base, arm_register_index_for_capstone(detail.operands[0].reg));
  }
}

// Thumb state is CPSR.T (bit 5); Unicorn reports block addresses without bit 0.
constexpr AlternateInstructionSet kThumb{.uc_register = UC_ARM_REG_CPSR,
                                         .mask = kCpsrThumb,
                                         .names = {"ARM", "Thumb"},
                                         .trap_length = 2,  // svc #0 in Thumb (T1 encoding)
                                         .address_bit0 = true};

constexpr std::uint16_t kEmArm = 40;

// How gdb sees it (gdb manual, "ARM Features"): the core registers and
// VFPv3's 32 double registers.
constexpr GdbRegister kGdbCore[] = {
    {"r0", 32, "uint32", "r0"},   {"r1", 32, "uint32", "r1"},
    {"r2", 32, "uint32", "r2"},   {"r3", 32, "uint32", "r3"},
    {"r4", 32, "uint32", "r4"},   {"r5", 32, "uint32", "r5"},
    {"r6", 32, "uint32", "r6"},   {"r7", 32, "uint32", "r7"},
    {"r8", 32, "uint32", "r8"},   {"r9", 32, "uint32", "r9"},
    {"r10", 32, "uint32", "r10"}, {"r11", 32, "uint32", "r11"},
    {"r12", 32, "uint32", "r12"}, {"sp", 32, "data_ptr", "sp"},
    {"lr", 32, "int", "lr"},      {"pc", 32, "code_ptr", "pc"},
    {"cpsr", 32, "int", "cpsr"}};
constexpr GdbRegister kGdbVfp[] = {
    {"d0", 64, "ieee_double", "d0"},   {"d1", 64, "ieee_double", "d1"},
    {"d2", 64, "ieee_double", "d2"},   {"d3", 64, "ieee_double", "d3"},
    {"d4", 64, "ieee_double", "d4"},   {"d5", 64, "ieee_double", "d5"},
    {"d6", 64, "ieee_double", "d6"},   {"d7", 64, "ieee_double", "d7"},
    {"d8", 64, "ieee_double", "d8"},   {"d9", 64, "ieee_double", "d9"},
    {"d10", 64, "ieee_double", "d10"}, {"d11", 64, "ieee_double", "d11"},
    {"d12", 64, "ieee_double", "d12"}, {"d13", 64, "ieee_double", "d13"},
    {"d14", 64, "ieee_double", "d14"}, {"d15", 64, "ieee_double", "d15"},
    {"d16", 64, "ieee_double", "d16"}, {"d17", 64, "ieee_double", "d17"},
    {"d18", 64, "ieee_double", "d18"}, {"d19", 64, "ieee_double", "d19"},
    {"d20", 64, "ieee_double", "d20"}, {"d21", 64, "ieee_double", "d21"},
    {"d22", 64, "ieee_double", "d22"}, {"d23", 64, "ieee_double", "d23"},
    {"d24", 64, "ieee_double", "d24"}, {"d25", 64, "ieee_double", "d25"},
    {"d26", 64, "ieee_double", "d26"}, {"d27", 64, "ieee_double", "d27"},
    {"d28", 64, "ieee_double", "d28"}, {"d29", 64, "ieee_double", "d29"},
    {"d30", 64, "ieee_double", "d30"}, {"d31", 64, "ieee_double", "d31"},
    {"fpscr", 32, "int", "fpscr"}};
constexpr GdbFeature kGdbFeatures[] = {{"org.gnu.gdb.arm.core", "", kGdbCore},
                                       {"org.gnu.gdb.arm.vfp", "", kGdbVfp}};
constexpr GdbTarget kGdbTarget{"arm", kGdbFeatures};

}  // namespace

// Linux's arm vectors page (0xffff0000): the kuser helpers at its top, as
// arch/arm/kernel/entry-armv.S assembles them for ARMv7 (SMP: dmb ish), in ARM
// code, little endian; a helper returns with bx lr, so ARM and Thumb callers
// both work. Assembled with arm-linux-gnueabihf-as; checked by the Go sample,
// whose runtime calls cmpxchg and the barrier.
constexpr std::uint8_t kKuserHelpers[] = {
    0xf0, 0x00, 0x2d, 0xe9, 0xd0, 0x40, 0xc0, 0xe1, 0xd0, 0x60, 0xc1, 0xe1, 0x5b, 0xf0, 0x7f, 0xf5,  // 0xf60 __kuser_cmpxchg64: push {r4-r7}; ldrd r4, r5, [r0]; ldrd r6, r7, [r1]; dmb ish
    0x9f, 0x0f, 0xb2, 0xe1, 0x04, 0x30, 0x30, 0xe0, 0x05, 0x30, 0x31, 0x00, 0x96, 0x3f, 0xa2, 0x01,  // 1: ldrexd r0, r1, [r2]; eors r3, r0, r4; eorseq r3, r1, r5; strexdeq r3, r6, r7, [r2]
    0x01, 0x00, 0x33, 0x03, 0xf9, 0xff, 0xff, 0x0a, 0x5b, 0xf0, 0x7f, 0xf5, 0x00, 0x00, 0x73, 0xe2,  // teqeq r3, #1; beq 1b; dmb ish; rsbs r0, r3, #0
    0xf0, 0x00, 0xbd, 0xe8, 0x1e, 0xff, 0x2f, 0xe1, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  // pop {r4-r7}; bx lr
    0x5b, 0xf0, 0x7f, 0xf5, 0x1e, 0xff, 0x2f, 0xe1, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  // 0xfa0 __kuser_memory_barrier: dmb ish; bx lr
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x5b, 0xf0, 0x7f, 0xf5, 0x9f, 0x3f, 0x92, 0xe1, 0x00, 0x30, 0x53, 0xe0, 0x91, 0x3f, 0x82, 0x01,  // 0xfc0 __kuser_cmpxchg: dmb ish; 1: ldrex r3, [r2]; subs r3, r3, r0; strexeq r3, r1, [r2]
    0x01, 0x00, 0x33, 0x03, 0xfa, 0xff, 0xff, 0x0a, 0x00, 0x00, 0x73, 0xe2, 0xef, 0xff, 0xff, 0xea,  // teqeq r3, #1; beq 1b; rsbs r0, r3, #0; b __kuser_memory_barrier
    0x70, 0x0f, 0x1d, 0xee, 0x1e, 0xff, 0x2f, 0xe1, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  // 0xfe0 __kuser_get_tls: mrc p15, 0, r0, c13, c0, 3 (TPIDRURO); bx lr
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x05, 0x00, 0x00, 0x00,  // 0xffc __kuser_helper_version: 5 (32-byte slots from 0xf60)
};
constexpr FixedPage kVectorsPage{0xffff0000, 0xf60, kKuserHelpers, "[vectors]"};

const ArchInfo& arm_arch() {
  // Unicorn's and Capstone's view of it (arch/arch_engine.h).
  static constexpr ArchEngine kEngine{
      .unicorn_arch = UC_ARCH_ARM,
      .unicorn_mode = UC_MODE_ARM,
      .capstone_arch = CS_ARCH_ARM,
      .capstone_mode = CS_MODE_ARM,
      .alternate_capstone_mode = CS_MODE_THUMB,  // kThumb's
      .make_guest_cpu = &make_arm_guest_cpu,
      .register_index_for_capstone = &arm_register_index_for_capstone,
      .add_unlisted_writes = &arm_add_unlisted_writes,
      .count_memory_accesses = &arm_count_memory_accesses,
      .address_registers = &arm_address_registers,
  };
  // The sigpage's ARM sequences (glibc's __default_sa_restorer and
  // __default_rt_sa_restorer in ARM code), then the Thumb-2 (mov.w r7, #n;
  // svc 0) and Thumb (movs r7, #n; svc 0) forms gdb also recognises.
  static constexpr std::uint8_t kThumb2Sigreturn[] = {0x4f, 0xf0, 0x77, 0x07, 0x00, 0xdf};
  static constexpr std::uint8_t kThumb2RtSigreturn[] = {0x4f, 0xf0, 0xad, 0x07, 0x00, 0xdf};
  static constexpr std::uint8_t kThumbSigreturn[] = {0x77, 0x27, 0x00, 0xdf};
  static constexpr std::uint8_t kThumbRtSigreturn[] = {0xad, 0x27, 0x00, 0xdf};
  static const SignalTrampoline kTrampolines[] = {
      {std::span(kSigreturnTrampoline).first(8), arm_signal_saved_registers(false), false},
      {std::span(kSigreturnTrampoline).subspan(8), arm_signal_saved_registers(true)},
      {kThumb2Sigreturn, arm_signal_saved_registers(false), false},
      {kThumb2RtSigreturn, arm_signal_saved_registers(true)},
      {kThumbSigreturn, arm_signal_saved_registers(false), false},
      {kThumbRtSigreturn, arm_signal_saved_registers(true)}};
  static const ArchInfo kInfo{
      .name = "arm",
      .alternate_isa = &kThumb,
      .elf_machine = kEmArm,
      .elf_64bit = false,
      .little_endian = true,
      .platform = "v7l",
      .uname_machine = "armv7l",
      .registers = kRegisters,
      .pc_reg = UC_ARM_REG_PC,
      .sp_reg = UC_ARM_REG_SP,
      .fp_reg = UC_ARM_REG_R11,
      .syscall_abi = {.number_reg = UC_ARM_REG_R7,
                      .arg_regs = {UC_ARM_REG_R0, UC_ARM_REG_R1, UC_ARM_REG_R2, UC_ARM_REG_R3, UC_ARM_REG_R4,
                                   UC_ARM_REG_R5},
                      .return_reg = UC_ARM_REG_R0,
                      .trap_instruction = "svc #0",
                      .trap_length = 4,
                      .private_base = kArmNrBase,
                      .clone_tls_before_child_tid = true},
      .aligned_argument_pairs = true,
      .signal_abi = {.sigreturn_trampoline = kSigreturnTrampoline, .trampolines = kTrampolines},
      .open_flags = kOpenFlags,
      .encode_stat = &arm_encode_stat,
      // Linux arm with CONFIG_VMSPLIT_3G, randomisation off: TASK_SIZE =
      // PAGE_OFFSET - 16 MiB = 0xbf000000 = STACK_TOP; mmap_base = STACK_TOP -
      // 128 MiB gap; ELF_ET_DYN_BASE = TASK_SIZE / 3 * 2, page aligned down.
      .layout = {.stack_top = 0xbf000000,
                 .stack_size = 8ull << 20,
                 .mmap_top = 0xb7000000,
                 .et_dyn_base = 0x7f555000,
                 .lowest_mmap = 0x10000},
      .fixed_page = &kVectorsPage,
      // UCIR: usercorn's name "arm"; bap-frames: arm 35, machine 0
      // (docs/formats/bap-frames.md); binary trace v1.0 defines no arm machine
      // (the writer refuses with an error naming the architecture).
      .format_ids = {.ucir_arch = "arm", .bap_architecture = 35, .bap_machine = 0, .bintrace_magic = 0,
                     .bintrace = nullptr},
      .gdb = &kGdbTarget,
      .syscall_id = &arm_syscall_id,
      .engine = &kEngine,
      .analyze_prologue = &analyze_arm_prologue,
  };
  return kInfo;
}

}  // namespace tracecorn::arch
