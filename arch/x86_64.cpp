// Role: everything tracecorn knows about x86-64 guests: Unicorn arch/mode, the
// register table with DWARF numbers (System V psABI, figure 3.36), the Linux
// syscall ABI and numbering, the no-ASLR address-space layout, the ids each
// trace format uses, and the CPU set-up that Debian's Unicorn 2.0.1 needs before
// glibc programs run (see ../shared/notes/unicorn-2.0.1.md).
// Invariant: nothing outside arch/ names an x86 register or syscall number.
#include <algorithm>
#include <cctype>
#include <csignal>
#include <string>
#include <cstring>
#include <optional>

#include <unicorn/x86.h>

#include "arch/arch.h"
#include "arch/syscall_table.h"

namespace tracecorn::arch {
namespace {

constexpr RegisterInfo kRegisters[] = {
    {UC_X86_REG_RAX, "rax", 8, 0},     {UC_X86_REG_RDX, "rdx", 8, 1},
    {UC_X86_REG_RCX, "rcx", 8, 2},     {UC_X86_REG_RBX, "rbx", 8, 3},
    {UC_X86_REG_RSI, "rsi", 8, 4},     {UC_X86_REG_RDI, "rdi", 8, 5},
    {UC_X86_REG_RBP, "rbp", 8, 6},     {UC_X86_REG_RSP, "rsp", 8, 7},
    {UC_X86_REG_R8, "r8", 8, 8},       {UC_X86_REG_R9, "r9", 8, 9},
    {UC_X86_REG_R10, "r10", 8, 10},    {UC_X86_REG_R11, "r11", 8, 11},
    {UC_X86_REG_R12, "r12", 8, 12},    {UC_X86_REG_R13, "r13", 8, 13},
    {UC_X86_REG_R14, "r14", 8, 14},    {UC_X86_REG_R15, "r15", 8, 15},
    {UC_X86_REG_RIP, "rip", 8, 16},
    {UC_X86_REG_XMM0, "xmm0", 16, 17}, {UC_X86_REG_XMM1, "xmm1", 16, 18},
    {UC_X86_REG_XMM2, "xmm2", 16, 19}, {UC_X86_REG_XMM3, "xmm3", 16, 20},
    {UC_X86_REG_XMM4, "xmm4", 16, 21}, {UC_X86_REG_XMM5, "xmm5", 16, 22},
    {UC_X86_REG_XMM6, "xmm6", 16, 23}, {UC_X86_REG_XMM7, "xmm7", 16, 24},
    {UC_X86_REG_XMM8, "xmm8", 16, 25}, {UC_X86_REG_XMM9, "xmm9", 16, 26},
    {UC_X86_REG_XMM10, "xmm10", 16, 27}, {UC_X86_REG_XMM11, "xmm11", 16, 28},
    {UC_X86_REG_XMM12, "xmm12", 16, 29}, {UC_X86_REG_XMM13, "xmm13", 16, 30},
    {UC_X86_REG_XMM14, "xmm14", 16, 31}, {UC_X86_REG_XMM15, "xmm15", 16, 32},
    {UC_X86_REG_ST0, "st0", 10, 33},   {UC_X86_REG_ST1, "st1", 10, 34},
    {UC_X86_REG_ST2, "st2", 10, 35},   {UC_X86_REG_ST3, "st3", 10, 36},
    {UC_X86_REG_ST4, "st4", 10, 37},   {UC_X86_REG_ST5, "st5", 10, 38},
    {UC_X86_REG_ST6, "st6", 10, 39},   {UC_X86_REG_ST7, "st7", 10, 40},
    {UC_X86_REG_EFLAGS, "rflags", 8, 49},
    {UC_X86_REG_ES, "es", 2, 50},      {UC_X86_REG_CS, "cs", 2, 51},
    {UC_X86_REG_SS, "ss", 2, 52},      {UC_X86_REG_DS, "ds", 2, 53},
    {UC_X86_REG_FS, "fs", 2, 54},      {UC_X86_REG_GS, "gs", 2, 55},
    {UC_X86_REG_FS_BASE, "fs_base", 8, 58}, {UC_X86_REG_GS_BASE, "gs_base", 8, 59},
    {UC_X86_REG_MXCSR, "mxcsr", 4, 64}, {UC_X86_REG_FPCW, "fpcw", 2, 65},
    {UC_X86_REG_FPSW, "fpsw", 2, 66},  {UC_X86_REG_FPTAG, "fptag", 2, kNoDwarfNumber},
};

// From the kernel's arch/x86/entry/syscalls/syscall_64.tbl.
constexpr SyscallNumber kSyscallNumbers[] = {
    {0, SyscallId::read},
    {1, SyscallId::write},
    {2, SyscallId::open},
    {3, SyscallId::close},
    {4, SyscallId::stat},
    {5, SyscallId::fstat},
    {6, SyscallId::lstat},
    {7, SyscallId::poll},
    {8, SyscallId::lseek},
    {9, SyscallId::mmap},
    {10, SyscallId::mprotect},
    {11, SyscallId::munmap},
    {12, SyscallId::brk},
    {13, SyscallId::rt_sigaction},
    {14, SyscallId::rt_sigprocmask},
    {15, SyscallId::rt_sigreturn},
    {16, SyscallId::ioctl},
    {17, SyscallId::pread64},
    {18, SyscallId::pwrite64},
    {19, SyscallId::readv},
    {20, SyscallId::writev},
    {21, SyscallId::access},
    {22, SyscallId::pipe},
    {23, SyscallId::select},
    {24, SyscallId::sched_yield},
    {25, SyscallId::mremap},
    {26, SyscallId::msync},
    {27, SyscallId::mincore},
    {28, SyscallId::madvise},
    {32, SyscallId::dup},
    {33, SyscallId::dup2},
    {34, SyscallId::pause},
    {35, SyscallId::nanosleep},
    {36, SyscallId::getitimer},
    {37, SyscallId::alarm},
    {38, SyscallId::setitimer},
    {39, SyscallId::getpid},
    {40, SyscallId::sendfile},
    {41, SyscallId::socket},
    {42, SyscallId::connect},
    {43, SyscallId::accept},
    {44, SyscallId::sendto},
    {45, SyscallId::recvfrom},
    {46, SyscallId::sendmsg},
    {47, SyscallId::recvmsg},
    {48, SyscallId::shutdown},
    {49, SyscallId::bind},
    {50, SyscallId::listen},
    {51, SyscallId::getsockname},
    {52, SyscallId::getpeername},
    {53, SyscallId::socketpair},
    {54, SyscallId::setsockopt},
    {55, SyscallId::getsockopt},
    {56, SyscallId::clone},
    {57, SyscallId::fork},
    {58, SyscallId::vfork},
    {59, SyscallId::execve},
    {60, SyscallId::exit},
    {61, SyscallId::wait4},
    {62, SyscallId::kill},
    {63, SyscallId::uname},
    {72, SyscallId::fcntl},
    {73, SyscallId::flock},
    {74, SyscallId::fsync},
    {75, SyscallId::fdatasync},
    {76, SyscallId::truncate},
    {77, SyscallId::ftruncate},
    {78, SyscallId::getdents},
    {79, SyscallId::getcwd},
    {80, SyscallId::chdir},
    {81, SyscallId::fchdir},
    {82, SyscallId::rename},
    {83, SyscallId::mkdir},
    {84, SyscallId::rmdir},
    {85, SyscallId::creat},
    {86, SyscallId::link},
    {87, SyscallId::unlink},
    {88, SyscallId::symlink},
    {89, SyscallId::readlink},
    {90, SyscallId::chmod},
    {91, SyscallId::fchmod},
    {92, SyscallId::chown},
    {93, SyscallId::fchown},
    {94, SyscallId::lchown},
    {95, SyscallId::umask},
    {96, SyscallId::gettimeofday},
    {97, SyscallId::getrlimit},
    {98, SyscallId::getrusage},
    {99, SyscallId::sysinfo},
    {100, SyscallId::times},
    {102, SyscallId::getuid},
    {104, SyscallId::getgid},
    {105, SyscallId::setuid},
    {106, SyscallId::setgid},
    {107, SyscallId::geteuid},
    {108, SyscallId::getegid},
    {109, SyscallId::setpgid},
    {110, SyscallId::getppid},
    {111, SyscallId::getpgrp},
    {112, SyscallId::setsid},
    {115, SyscallId::getgroups},
    {116, SyscallId::setgroups},
    {121, SyscallId::getpgid},
    {124, SyscallId::getsid},
    {131, SyscallId::sigaltstack},
    {137, SyscallId::statfs},
    {138, SyscallId::fstatfs},
    {157, SyscallId::prctl},
    {158, SyscallId::arch_prctl},
    {160, SyscallId::setrlimit},
    {162, SyscallId::sync},
    {186, SyscallId::gettid},
    {191, SyscallId::getxattr},
    {192, SyscallId::lgetxattr},
    {193, SyscallId::fgetxattr},
    {194, SyscallId::listxattr},
    {195, SyscallId::llistxattr},
    {201, SyscallId::time},
    {202, SyscallId::futex},
    {203, SyscallId::sched_setaffinity},
    {204, SyscallId::sched_getaffinity},
    {217, SyscallId::getdents64},
    {218, SyscallId::set_tid_address},
    {221, SyscallId::fadvise64},
    {227, SyscallId::clock_settime},
    {228, SyscallId::clock_gettime},
    {229, SyscallId::clock_getres},
    {230, SyscallId::clock_nanosleep},
    {231, SyscallId::exit_group},
    {234, SyscallId::tgkill},
    {235, SyscallId::utimes},
    {257, SyscallId::openat},
    {258, SyscallId::mkdirat},
    {260, SyscallId::fchownat},
    {261, SyscallId::futimesat},
    {262, SyscallId::newfstatat},
    {263, SyscallId::unlinkat},
    {264, SyscallId::renameat},
    {265, SyscallId::linkat},
    {266, SyscallId::symlinkat},
    {267, SyscallId::readlinkat},
    {268, SyscallId::fchmodat},
    {269, SyscallId::faccessat},
    {270, SyscallId::pselect6},
    {271, SyscallId::ppoll},
    {273, SyscallId::set_robust_list},
    {274, SyscallId::get_robust_list},
    {280, SyscallId::utimensat},
    {285, SyscallId::fallocate},
    {292, SyscallId::dup3},
    {293, SyscallId::pipe2},
    {302, SyscallId::prlimit64},
    {316, SyscallId::renameat2},
    {318, SyscallId::getrandom},
    {319, SyscallId::memfd_create},
    {332, SyscallId::statx},
    {334, SyscallId::rseq},
    {439, SyscallId::faccessat2},
    {326, SyscallId::copy_file_range},
    {295, SyscallId::preadv},
    {296, SyscallId::pwritev},
    {200, SyscallId::tkill},
    {118, SyscallId::getresuid},
    {120, SyscallId::getresgid},
    {143, SyscallId::sched_getparam},
    {145, SyscallId::sched_getscheduler},
    {149, SyscallId::mlock},
    {150, SyscallId::munlock},
    {291, SyscallId::epoll_create1},
    {290, SyscallId::eventfd2},
    {436, SyscallId::close_range},
    {437, SyscallId::openat2},
    {324, SyscallId::membarrier},
    {219, SyscallId::restart_syscall},
    {205, SyscallId::set_thread_area},
    {211, SyscallId::get_thread_area},
    {452, SyscallId::fchmodat2},
    {435, SyscallId::clone3},
    {322, SyscallId::execveat},
};

constexpr SyscallTable kSyscallTable{kSyscallNumbers};

SyscallId x86_64_syscall_id(std::uint64_t number) {
  return kSyscallTable(number);
}

// CPUID bits (Intel SDM vol. 2A, table 3-8 and 3-10).
constexpr std::uint32_t kLeaf1EdxFpu = 1u << 0;
constexpr std::uint32_t kLeaf1EdxTsc = 1u << 4;
constexpr std::uint32_t kLeaf1EdxMmx = 1u << 23;
constexpr std::uint32_t kLeaf1EcxPclmul = 1u << 1;
constexpr std::uint32_t kLeaf1EcxFma = 1u << 12;
constexpr std::uint32_t kLeaf1EcxMovbe = 1u << 22;
constexpr std::uint32_t kLeaf1EcxPopcnt = 1u << 23;
constexpr std::uint32_t kLeaf1EcxXsave = 1u << 26;
constexpr std::uint32_t kLeaf1EcxOsxsave = 1u << 27;
constexpr std::uint32_t kLeaf1EcxAvx = 1u << 28;
constexpr std::uint32_t kLeaf1EcxF16c = 1u << 29;
constexpr std::uint32_t kLeaf1EcxRdrand = 1u << 30;
// Leaf 7 EBX: AVX2 (5), AVX-512 family (16,17,21,26,27,28,30,31), RDSEED (18), SHA (29).
constexpr std::uint32_t kLeaf7EbxRejected = (1u << 5) | (1u << 16) | (1u << 17) | (1u << 18) |
                                            (1u << 21) | (1u << 26) | (1u << 27) | (1u << 28) |
                                            (1u << 29) | (1u << 30) | (1u << 31);

// Answers CPUID as the guest sees it: Unicorn's real CPUID instruction, run on
// a private engine, with the fixes listed below X86_64GuestCpu. Used by the
// guest CPU's CPUID hook and by the binary trace's static registers. Not thread
// safe: one instance per user.
class CpuidProbe {
 public:
  CpuidProbe() = default;
  ~CpuidProbe() {
    if (probe_) uc_close(probe_);
  }
  CpuidProbe(const CpuidProbe&) = delete;
  CpuidProbe& operator=(const CpuidProbe&) = delete;

  Status init() {
    if (uc_open(UC_ARCH_X86, UC_MODE_64, &probe_) != UC_ERR_OK)
      return make_error(ErrorCode::kEmulator, "cannot open the CPUID probe engine");
    static constexpr std::uint8_t kCpuidInstruction[] = {0x0f, 0xa2};
    if (uc_mem_map(probe_, kProbeCode, 0x1000, UC_PROT_ALL) != UC_ERR_OK ||
        uc_mem_write(probe_, kProbeCode, kCpuidInstruction, sizeof kCpuidInstruction) != UC_ERR_OK)
      return make_error(ErrorCode::kEmulator, "cannot set up the CPUID probe engine");
    return ok_status();
  }

  // Runs the real CPUID of Unicorn on the probe engine, then applies the fixes
  // (see X86_64GuestCpu). Returns eax, ebx, ecx, edx (zeros if the probe fails).
  std::array<std::uint32_t, 4> query(std::uint32_t leaf, std::uint32_t subleaf) noexcept {
    std::uint64_t eax = leaf, ecx = subleaf, zero = 0;
    uc_reg_write(probe_, UC_X86_REG_RAX, &eax);
    uc_reg_write(probe_, UC_X86_REG_RCX, &ecx);
    uc_reg_write(probe_, UC_X86_REG_RBX, &zero);
    uc_reg_write(probe_, UC_X86_REG_RDX, &zero);
    std::array<std::uint32_t, 4> out{};  // eax, ebx, ecx, edx
    if (uc_emu_start(probe_, kProbeCode, kProbeCode + 2, 0, 1) != UC_ERR_OK) return out;
    const int regs[4] = {UC_X86_REG_EAX, UC_X86_REG_EBX, UC_X86_REG_ECX, UC_X86_REG_EDX};
    for (int i = 0; i < 4; ++i) uc_reg_read(probe_, regs[i], &out[static_cast<std::size_t>(i)]);
    if (leaf == 1) {
      out[3] |= kLeaf1EdxFpu | kLeaf1EdxTsc | kLeaf1EdxMmx;
      out[2] &= ~(kLeaf1EcxPclmul | kLeaf1EcxFma | kLeaf1EcxMovbe | kLeaf1EcxPopcnt |
                  kLeaf1EcxXsave | kLeaf1EcxOsxsave | kLeaf1EcxAvx | kLeaf1EcxF16c |
                  kLeaf1EcxRdrand);
    } else if (leaf == 7 && subleaf == 0) {
      out[1] &= ~kLeaf7EbxRejected;
      out[2] = 0;  // AVX-512 VBMI etc.
      out[3] = 0;
    } else if (leaf == 0xd) {
      out = {};  // no XSAVE state components
    }
    return out;
  }

 private:
  static constexpr std::uint64_t kProbeCode = 0x1000;
  uc_engine* probe_ = nullptr;
};

// The x86-64 CPU as a Linux process sees it, on top of Unicorn 2.0.1.
//
// Workarounds, each from ../shared/notes/unicorn-2.0.1.md:
// - CPUID: 2.0.1's leaf 1 lacks FPU/TSC/MMX (upstream #1787, fixed in 2.1.0), so
//   glibc's ld.so rejects the CPU ("ISA level is lower than required"). We answer
//   CPUID from a second, private engine running the real instruction, then add
//   FPU|TSC|MMX and hide what 2.0.1 cannot execute (XSAVE/OSXSAVE -> xgetbv is
//   rejected; AVX computes wrong results, #1074/#917; POPCNT, MOVBE, RDRAND,
//   PCLMULQDQ, SHA, RDSEED are rejected by the translator).
// - CR4 = 0x600 (OSFXSR|OSXMMEXCPT), else fxsave/fxrstor skip the XMM registers.
// - FPCW = 0x37f and MXCSR = 0x1f80 as Linux starts a process.
// - The syscall hook sees RIP at the `syscall` instruction and Unicorn adds 2
//   after the hook returns (#1048); rcx/r11 are not set as the kernel sets them.
class X86_64GuestCpu final : public GuestCpu {
 public:
  explicit X86_64GuestCpu(uc_engine* engine) : engine_(engine) {}
  ~X86_64GuestCpu() override {
    if (capstone_) cs_close(&capstone_);
    if (cpuid_hook_) uc_hook_del(engine_, cpuid_hook_);
    if (syscall_hook_) uc_hook_del(engine_, syscall_hook_);
  }
  X86_64GuestCpu(const X86_64GuestCpu&) = delete;
  X86_64GuestCpu& operator=(const X86_64GuestCpu&) = delete;

  Status init() {
    if (auto status = probe_.init(); !status) return status;

    std::uint64_t cr4 = 0x600, fpcw = 0x37f, mxcsr = 0x1f80;
    if (uc_reg_write(engine_, UC_X86_REG_CR4, &cr4) != UC_ERR_OK ||
        uc_reg_write(engine_, UC_X86_REG_FPCW, &fpcw) != UC_ERR_OK ||
        uc_reg_write(engine_, UC_X86_REG_MXCSR, &mxcsr) != UC_ERR_OK)
      return make_error(ErrorCode::kEmulator, "cannot set CR4/FPCW/MXCSR");

    if (uc_hook_add(engine_, &cpuid_hook_, UC_HOOK_INSN, reinterpret_cast<void*>(&on_cpuid), this, 1,
                    0, UC_X86_INS_CPUID) != UC_ERR_OK)
      return make_error(ErrorCode::kEmulator, "cannot hook CPUID");
    std::array<std::uint32_t, 4> leaf1 = probe_.query(1, 0);
    hwcap_ = leaf1[3];
    if (cs_open(CS_ARCH_X86, CS_MODE_64, &capstone_) != CS_ERR_OK ||
        cs_option(capstone_, CS_OPT_DETAIL, CS_OPT_ON) != CS_ERR_OK)
      return make_error(ErrorCode::kEmulator, "cannot open Capstone for x86-64");
    return ok_status();
  }

  Status install_syscall_trap(SyscallCallback callback, void* user) override {
    syscall_callback_ = callback;
    syscall_user_ = user;
    if (uc_hook_add(engine_, &syscall_hook_, UC_HOOK_INSN, reinterpret_cast<void*>(&on_syscall), this,
                    1, 0, UC_X86_INS_SYSCALL) != UC_ERR_OK)
      return make_error(ErrorCode::kEmulator, "cannot hook the syscall instruction");
    return ok_status();
  }

  std::uint64_t trap_pc() const override {
    std::uint64_t rip = 0;
    uc_reg_read(engine_, UC_X86_REG_RIP, &rip);
    return rip;
  }

  void resume_at(std::uint64_t pc) override {
    // Unicorn adds the 2 bytes of `syscall` after the hook returns (#1048).
    std::uint64_t adjusted = pc - kSyscallLength;
    uc_reg_write(engine_, UC_X86_REG_RIP, &adjusted);
  }

  void apply_kernel_exit_effects() override {
    // The kernel's syscall path leaves rcx = address after `syscall`, r11 = rflags.
    std::uint64_t rip = 0, rflags = 0;
    uc_reg_read(engine_, UC_X86_REG_RIP, &rip);
    uc_reg_read(engine_, UC_X86_REG_EFLAGS, &rflags);
    std::uint64_t return_address = rip + kSyscallLength;
    uc_reg_write(engine_, UC_X86_REG_RCX, &return_address);
    uc_reg_write(engine_, UC_X86_REG_R11, &rflags);
  }

  std::uint64_t hwcap() const override { return hwcap_; }

  std::uint64_t thread_pointer() const override {
    std::uint64_t value = 0;
    uc_reg_read(engine_, UC_X86_REG_FS_BASE, &value);
    return value;
  }

  // Decodes the block from `reported_pc` and returns the first instruction whose
  // memory operand (explicit, or the implicit stack and string accesses) covers
  // `fault_address`, evaluated with the current registers: TCG writes guest
  // registers back before every guest memory access, so they hold the values the
  // faulting instruction saw. A fetch fault reports the fetched address itself.
  std::uint64_t locate_faulting_instruction(std::uint64_t reported_pc, std::uint64_t fault_address) const override {
    if (fault_address == trap_pc_candidate(reported_pc)) return reported_pc;
    std::uint8_t code[512];
    std::size_t size = sizeof code;
    while (size > 0 && uc_mem_read(engine_, reported_pc, code, size) != UC_ERR_OK) size /= 2;
    if (size == 0) return fault_address;  // the block itself is not readable: a fetch fault
    const std::uint8_t* cursor = code;
    std::uint64_t address = reported_pc;
    cs_insn* insn = cs_malloc(capstone_);
    std::uint64_t found = reported_pc;
    for (int count = 0; count < 64 && cs_disasm_iter(capstone_, &cursor, &size, &address, insn); ++count) {
      if (touches(*insn, fault_address)) {
        found = insn->address;
        break;
      }
      if (cs_insn_group(capstone_, insn, CS_GRP_JUMP) || cs_insn_group(capstone_, insn, CS_GRP_CALL) ||
          cs_insn_group(capstone_, insn, CS_GRP_RET))
        break;  // a block ends here
    }
    cs_free(insn, 1);
    return found;
  }

  int signal_for_interrupt(std::uint32_t interrupt_number) const override {
    // Linux's x86 trap handlers (arch/x86/kernel/traps.c).
    switch (interrupt_number) {
      case 0: case 16: case 19: return SIGFPE;   // #DE, #MF, #XM
      case 1: case 3: return SIGTRAP;            // #DB, int3
      case 6: return SIGILL;                     // #UD
      case 7: return SIGFPE;                     // #NM without FPU
      case 17: return SIGBUS;                    // #AC
      default: return SIGSEGV;                   // #GP, #PF, #SS, int N, into, bound
    }
  }

  Status set_thread_pointer(std::uint64_t value) override {
    if (uc_reg_write(engine_, UC_X86_REG_FS_BASE, &value) != UC_ERR_OK)
      return make_error(ErrorCode::kEmulator, "cannot write FS_BASE");
    return ok_status();
  }

 private:
  static std::uint64_t trap_pc_candidate(std::uint64_t pc) { return pc; }

  // The value of a Capstone register, through our register table (by name).
  std::optional<std::uint64_t> register_value(unsigned capstone_register) const {
    if (capstone_register == X86_REG_INVALID) return 0;
    const char* name = cs_reg_name(capstone_, capstone_register);
    if (!name) return std::nullopt;
    for (const auto& reg : kRegisters)
      if (reg.name == name && reg.size == 8) {
        std::uint64_t value = 0;
        uc_reg_read(engine_, reg.uc_id, &value);
        return value;
      }
    return std::nullopt;
  }

  bool touches(const cs_insn& insn, std::uint64_t fault_address) const {
    const cs_x86& x86 = insn.detail->x86;
    auto covers = [&](std::uint64_t start, std::uint64_t length) {
      return fault_address >= start && fault_address - start < std::max<std::uint64_t>(length, 1);
    };
    for (std::uint8_t i = 0; i < x86.op_count; ++i) {
      const cs_x86_op& op = x86.operands[i];
      if (op.type != X86_OP_MEM) continue;
      std::uint64_t effective = static_cast<std::uint64_t>(op.mem.disp);
      if (op.mem.base == X86_REG_RIP) {
        effective += insn.address + insn.size;
      } else {
        auto base = register_value(op.mem.base);
        auto index = register_value(op.mem.index);
        if (!base || !index) continue;
        effective += *base + *index * static_cast<std::uint64_t>(op.mem.scale);
      }
      if (op.mem.segment == X86_REG_FS) effective += thread_pointer();
      if (covers(effective, op.size)) return true;
    }
    // Implicit accesses: the stack (push, call, pop, ret...) and string instructions.
    const auto rsp = register_value(X86_REG_RSP).value_or(0);
    if (cs_insn_group(capstone_, &insn, CS_GRP_CALL) || insn.id == X86_INS_PUSH || insn.id == X86_INS_PUSHFQ)
      if (covers(rsp - 8, 8)) return true;
    if (cs_insn_group(capstone_, &insn, CS_GRP_RET) || insn.id == X86_INS_POP || insn.id == X86_INS_POPFQ ||
        insn.id == X86_INS_LEAVE)
      if (covers(rsp, 8) || (insn.id == X86_INS_LEAVE && covers(register_value(X86_REG_RBP).value_or(0), 8)))
        return true;
    for (const unsigned reg : {X86_REG_RSI, X86_REG_RDI}) {
      const bool string_op = x86.prefix[0] == X86_PREFIX_REP || x86.prefix[0] == X86_PREFIX_REPNE ||
                             (insn.id >= X86_INS_MOVSB && insn.id <= X86_INS_MOVSW) ||
                             (insn.id >= X86_INS_STOSB && insn.id <= X86_INS_STOSW);
      if (string_op && covers(register_value(reg).value_or(0), 8)) return true;
    }
    return false;
  }
  static constexpr std::uint64_t kSyscallLength = 2;

  static int on_cpuid(uc_engine* engine, void* user) noexcept {
    auto* self = static_cast<X86_64GuestCpu*>(user);
    std::uint64_t rax = 0, rcx = 0;
    uc_reg_read(engine, UC_X86_REG_RAX, &rax);
    uc_reg_read(engine, UC_X86_REG_RCX, &rcx);
    const auto values = self->probe_.query(static_cast<std::uint32_t>(rax), static_cast<std::uint32_t>(rcx));
    const int regs[4] = {UC_X86_REG_RAX, UC_X86_REG_RBX, UC_X86_REG_RCX, UC_X86_REG_RDX};
    for (int i = 0; i < 4; ++i) {
      std::uint64_t value = values[static_cast<std::size_t>(i)];
      uc_reg_write(engine, regs[i], &value);
    }
    return 1;  // skip Unicorn's own CPUID
  }

  static void on_syscall(uc_engine*, void* user) noexcept {
    auto* self = static_cast<X86_64GuestCpu*>(user);
    self->syscall_callback_(self->syscall_user_);
  }

  uc_engine* engine_;
  CpuidProbe probe_;
  csh capstone_ = 0;
  uc_hook cpuid_hook_ = 0;
  uc_hook syscall_hook_ = 0;
  SyscallCallback syscall_callback_ = nullptr;
  void* syscall_user_ = nullptr;
  std::uint64_t hwcap_ = 0;
};

Expected<std::unique_ptr<GuestCpu>> make_x86_64_guest_cpu(uc_engine* engine) {
  auto cpu = std::make_unique<X86_64GuestCpu>(engine);
  if (auto status = cpu->init(); !status) return status.error();
  return std::unique_ptr<GuestCpu>(std::move(cpu));
}

constexpr std::uint16_t kEmX86_64 = 62;

// Sub-registers and their full register, for Capstone's register names.
struct SubRegister {
  std::string_view name;
  std::string_view full;
};
constexpr SubRegister kSubRegisters[] = {
    {"eax", "rax"}, {"ax", "rax"}, {"al", "rax"}, {"ah", "rax"}, {"ebx", "rbx"}, {"bx", "rbx"}, {"bl", "rbx"},
    {"bh", "rbx"}, {"ecx", "rcx"}, {"cx", "rcx"}, {"cl", "rcx"}, {"ch", "rcx"}, {"edx", "rdx"}, {"dx", "rdx"},
    {"dl", "rdx"}, {"dh", "rdx"}, {"esi", "rsi"}, {"si", "rsi"}, {"sil", "rsi"}, {"edi", "rdi"}, {"di", "rdi"},
    {"dil", "rdi"}, {"ebp", "rbp"}, {"bp", "rbp"}, {"bpl", "rbp"}, {"esp", "rsp"}, {"sp", "rsp"}, {"spl", "rsp"},
    {"eip", "rip"}, {"ip", "rip"}, {"eflags", "rflags"}, {"flags", "rflags"},
};

// Capstone x86 register id -> index in kRegisters (or -1), built once from names.
struct CapstoneRegisterMap {
  std::array<int, X86_REG_ENDING> index{};
  CapstoneRegisterMap() {
    index.fill(-1);
    csh handle = 0;
    if (cs_open(CS_ARCH_X86, CS_MODE_64, &handle) != CS_ERR_OK) return;
    for (unsigned id = 1; id < X86_REG_ENDING; ++id) {
      const char* raw = cs_reg_name(handle, id);
      if (!raw) continue;
      std::string name = raw;
      for (const auto& sub : kSubRegisters)
        if (sub.name == name) name = std::string(sub.full);
      if (name.size() == 4 && (name.rfind("ymm", 0) == 0 || name.rfind("zmm", 0) == 0)) name = "x" + name.substr(1);
      if (name.size() == 5 && (name.rfind("ymm", 0) == 0 || name.rfind("zmm", 0) == 0)) name = "x" + name.substr(1);
      if (name.size() >= 2 && name[0] == 'r' && (name.back() == 'd' || name.back() == 'w' || name.back() == 'b') &&
          std::isdigit(static_cast<unsigned char>(name[1])))
        name.pop_back();  // r8d, r8w, r8b -> r8
      for (std::size_t i = 0; i < std::size(kRegisters); ++i)
        if (kRegisters[i].name == name) index[id] = static_cast<int>(i);
    }
    cs_close(&handle);
  }
};

int x86_64_register_index_for_capstone(unsigned capstone_register) {
  static const CapstoneRegisterMap kMap;
  return capstone_register < X86_REG_ENDING ? kMap.index[capstone_register] : -1;
}

void x86_64_add_unlisted_writes(const cs_insn& insn, std::vector<std::uint16_t>& written) {
  if (!insn.detail) return;
  // Capstone 4 omits EFLAGS from some access lists (cmpxchg); its eflags detail has them.
  constexpr std::uint64_t kFlagWrites = X86_EFLAGS_MODIFY_AF | X86_EFLAGS_MODIFY_CF | X86_EFLAGS_MODIFY_SF |
      X86_EFLAGS_MODIFY_ZF | X86_EFLAGS_MODIFY_PF | X86_EFLAGS_MODIFY_OF | X86_EFLAGS_MODIFY_TF |
      X86_EFLAGS_MODIFY_IF | X86_EFLAGS_MODIFY_DF | X86_EFLAGS_MODIFY_NT | X86_EFLAGS_MODIFY_RF |
      X86_EFLAGS_RESET_OF | X86_EFLAGS_RESET_CF | X86_EFLAGS_RESET_DF | X86_EFLAGS_RESET_IF | X86_EFLAGS_RESET_SF |
      X86_EFLAGS_RESET_AF | X86_EFLAGS_RESET_TF | X86_EFLAGS_RESET_NT | X86_EFLAGS_RESET_PF | X86_EFLAGS_SET_CF |
      X86_EFLAGS_SET_DF | X86_EFLAGS_SET_IF | X86_EFLAGS_UNDEFINED_OF | X86_EFLAGS_UNDEFINED_SF |
      X86_EFLAGS_UNDEFINED_ZF | X86_EFLAGS_UNDEFINED_PF | X86_EFLAGS_UNDEFINED_AF | X86_EFLAGS_UNDEFINED_CF |
      X86_EFLAGS_RESET_RF | X86_EFLAGS_RESET_ZF | X86_EFLAGS_SET_OF | X86_EFLAGS_SET_SF | X86_EFLAGS_SET_ZF |
      X86_EFLAGS_SET_AF | X86_EFLAGS_SET_PF;
  auto add = [&](std::string_view name) {
    for (std::size_t i = 0; i < std::size(kRegisters); ++i)
      if (kRegisters[i].name == name &&
          std::find(written.begin(), written.end(), static_cast<std::uint16_t>(i)) == written.end())
        written.push_back(static_cast<std::uint16_t>(i));
  };
  if (insn.detail->x86.eflags & kFlagWrites) add("rflags");
  // x87: Capstone lists the status word for some x87 instructions and nothing
  // for others (fxch, fstp st(i)), and never the stack slots an instruction
  // pushes, pops or writes, nor the tag word. So every x87 instruction (escape
  // opcodes 0xd8-0xdf) is taken to write all of them.
  const std::uint8_t opcode = insn.detail->x86.opcode[0];
  if (opcode >= 0xd8 && opcode <= 0xdf)
    for (const char* name : {"st0", "st1", "st2", "st3", "st4", "st5", "st6", "st7", "fpsw", "fptag", "fpcw"})
      add(name);
  if (insn.id == X86_INS_CMPXCHG || insn.id == X86_INS_CMPXCHG8B || insn.id == X86_INS_CMPXCHG16B) add("rax");
  // fxrstor/xrstor load the x87, MXCSR and XMM state from memory; Capstone 4
  // lists none of it (found by the binary trace's replay check on ld.so's
  // _dl_runtime_resolve_fxsave). ldmxcsr loads MXCSR.
  if (insn.id == X86_INS_FXRSTOR || insn.id == X86_INS_FXRSTOR64 || insn.id == X86_INS_XRSTOR ||
      insn.id == X86_INS_XRSTOR64) {
    for (const char* name : {"st0", "st1", "st2", "st3", "st4", "st5", "st6", "st7", "fpsw", "fptag", "fpcw", "mxcsr",
                             "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10",
                             "xmm11", "xmm12", "xmm13", "xmm14", "xmm15"})
      add(name);
  }
  if (insn.id == X86_INS_LDMXCSR) add("mxcsr");
}

bool x86_64_count_memory_accesses(const cs_insn& insn, std::uint8_t& reads, std::uint8_t& writes) {
  reads = writes = 0;
  if (!insn.detail) return false;
  const cs_x86& x86 = insn.detail->x86;
  switch (insn.id) {
    case X86_INS_LEA: case X86_INS_NOP: case X86_INS_PREFETCH: case X86_INS_PREFETCHW: case X86_INS_PREFETCHNTA:
    case X86_INS_PREFETCHT0: case X86_INS_PREFETCHT1: case X86_INS_PREFETCHT2: case X86_INS_CLFLUSH:
      return true;  // an address operand that is not accessed
    case X86_INS_FXSAVE: case X86_INS_FXRSTOR: case X86_INS_FXSAVE64: case X86_INS_FXRSTOR64: case X86_INS_XSAVE:
    case X86_INS_XRSTOR: case X86_INS_FNSTENV: case X86_INS_FLDENV: case X86_INS_FNSAVE: case X86_INS_FRSTOR:
      return false;
    default:
      break;
  }
  // A rep prefix makes a string instruction's count vary (F2/F3 on SSE moves such
  // as movsd xmm, [mem] are mandatory prefixes, not repeats).
  const bool string_instruction =
      (insn.id >= X86_INS_MOVSB && insn.id <= X86_INS_MOVSW) || (insn.id >= X86_INS_STOSB && insn.id <= X86_INS_STOSW) ||
      insn.id == X86_INS_LODSB || insn.id == X86_INS_LODSW || insn.id == X86_INS_LODSD || insn.id == X86_INS_LODSQ ||
      insn.id == X86_INS_CMPSB || insn.id == X86_INS_CMPSW || insn.id == X86_INS_CMPSD || insn.id == X86_INS_CMPSQ ||
      insn.id == X86_INS_SCASB || insn.id == X86_INS_SCASW || insn.id == X86_INS_SCASD || insn.id == X86_INS_SCASQ;
  if (string_instruction && (x86.prefix[0] == X86_PREFIX_REP || x86.prefix[0] == X86_PREFIX_REPNE)) return false;
  const bool read_modify_write = insn.id == X86_INS_CMPXCHG || insn.id == X86_INS_XADD || insn.id == X86_INS_XCHG;
  auto pieces = [](std::uint8_t size) { return static_cast<std::uint8_t>(size <= 8 ? 1 : (size + 7) / 8); };
  // Capstone 4's access flags are missing for many SSE moves (movq, movups: 0)
  // and wrong for a few read-only instructions (test, cmp, bt: read|write).
  const bool read_only = insn.id == X86_INS_TEST || insn.id == X86_INS_CMP || insn.id == X86_INS_BT ||
                         insn.id == X86_INS_UCOMISS || insn.id == X86_INS_UCOMISD || insn.id == X86_INS_COMISS ||
                         insn.id == X86_INS_COMISD || insn.id == X86_INS_PTEST;
  bool has_vector_register = false;
  for (std::uint8_t i = 0; i < x86.op_count; ++i) {
    const cs_x86_op& op = x86.operands[i];
    if (op.type == X86_OP_REG && ((op.reg >= X86_REG_XMM0 && op.reg <= X86_REG_XMM31) ||
                                  (op.reg >= X86_REG_MM0 && op.reg <= X86_REG_MM7)))
      has_vector_register = true;
  }
  // x87 memory operands: stores are told apart by the ModRM reg field (Intel SDM
  // vol. 2, x87 opcode map); Capstone 4 marks them all as reads.
  const std::uint8_t escape = x86.opcode[0];
  const bool x87 = escape >= 0xd8 && escape <= 0xdf;
  const unsigned modrm_reg = (x86.modrm >> 3) & 7;
  const bool x87_store = x87 && ((escape == 0xd9 && (modrm_reg == 2 || modrm_reg == 3 || modrm_reg == 7)) ||
                                 (escape == 0xdb && (modrm_reg == 1 || modrm_reg == 2 || modrm_reg == 3 || modrm_reg == 7)) ||
                                 (escape == 0xdd && (modrm_reg == 1 || modrm_reg == 2 || modrm_reg == 3 || modrm_reg == 7)) ||
                                 (escape == 0xdf && (modrm_reg == 1 || modrm_reg == 2 || modrm_reg == 3 || modrm_reg >= 6)));
  for (std::uint8_t i = 0; i < x86.op_count; ++i) {
    const cs_x86_op& op = x86.operands[i];
    if (op.type != X86_OP_MEM) continue;
    std::uint8_t access = op.access;
    if (x87) access = x87_store ? CS_AC_WRITE : CS_AC_READ;
    if (insn.id == X86_INS_STMXCSR) access = CS_AC_WRITE;  // Capstone 4 says read
    if (access == 0) access = (i == 0 && x86.op_count > 1) ? CS_AC_WRITE : CS_AC_READ;  // Intel order: destination first
    // A memory destination next to a vector register is an SSE/MMX store (movq, movups,
    // pextrd...): SSE arithmetic never writes memory. Capstone 4 marks these as reads.
    if (i == 0 && x86.op_count > 1 && !x87) {
      for (std::uint8_t j = 1; j < x86.op_count; ++j) {
        const cs_x86_op& other = x86.operands[j];
        if (other.type == X86_OP_REG && ((other.reg >= X86_REG_XMM0 && other.reg <= X86_REG_XMM31) ||
                                         (other.reg >= X86_REG_MM0 && other.reg <= X86_REG_MM7)))
          access = CS_AC_WRITE;
      }
    }
    if (read_only) access = CS_AC_READ;
    if (read_modify_write) access = CS_AC_READ | CS_AC_WRITE;  // Capstone 4 says read only
    if (access & CS_AC_READ) reads = static_cast<std::uint8_t>(reads + pieces(op.size));
    if (access & CS_AC_WRITE) writes = static_cast<std::uint8_t>(writes + pieces(op.size));
  }
  switch (insn.id) {
    case X86_INS_PUSH: case X86_INS_PUSHFQ: case X86_INS_CALL: ++writes; break;
    case X86_INS_POP: case X86_INS_POPFQ: case X86_INS_RET: case X86_INS_LEAVE: ++reads; break;
    case X86_INS_MOVSB: case X86_INS_MOVSW: case X86_INS_MOVSD: case X86_INS_MOVSQ:
      // The string move reads [rsi] and writes [rdi]; SSE's movsd (same id) is an
      // ordinary load or store, already counted from its operands.
      if (!has_vector_register) {
        if (reads == 0) ++reads;
        if (writes == 0) ++writes;
      }
      break;
    default: break;
  }
  return true;
}

// ---- Binary trace v1.0 (REVEN's rvnbintrace) machine description ('x641') ----

constexpr std::uint16_t table_index(std::string_view name) {
  for (std::size_t i = 0; i < std::size(kRegisters); ++i)
    if (kRegisters[i].name == name) return static_cast<std::uint16_t>(i);
  throw "no such register";  // a compile-time error in a constant expression
}

using BtSource = BintraceRegister::Source;
constexpr BintraceRegister copy(std::string_view name, std::uint16_t size, std::string_view table_name) {
  return {name, size, BtSource::kTable, table_index(table_name), 0};
}
constexpr BintraceRegister constant(std::string_view name, std::uint16_t size, std::uint64_t value) {
  return {name, size, BtSource::kConstant, 0, value};
}
constexpr BintraceRegister derived(std::string_view name, std::uint16_t size) {
  return {name, size, BtSource::kDerived, 0, 0};
}

// Values a user process cannot read get what Linux gives a process (Debian 12's
// kernel 6.1, 4-level paging, on CPU 0), from the kernel's sources:
// - gdtr: the per-CPU GDT at the start of CPU 0's cpu_entry_area
//   (CPU_ENTRY_AREA_PER_CPU = 0xfffffe0000001000), GDT_ENTRIES 16 -> limit 0x7f.
// - idtr: the read-only IDT mapping CPU_ENTRY_AREA_RO_IDT = 0xfffffe0000000000,
//   256 16-byte gates -> limit 0xfff.
// - ldtr: null (a process that never called modify_ldt has no LDT).
// - tr: CPU 0's TSS, two pages into its cpu_entry_area (after the GDT page and the
//   entry stack page); limit __KERNEL_TSS_LIMIT with CONFIG_X86_IOPL_IOPERM
//   (offset of the I/O bitmap's mapall 0x2080 + 8192 bytes + 8 - 1 = 0x4087).
// - shadows in descriptor form: cs = __USER_CS's descriptor GDT_ENTRY_INIT(0xa0fb,
//   0, 0xfffff) = 0x00affb000000ffff (64-bit code, DPL 3), ss = __USER_DS's
//   GDT_ENTRY_INIT(0xc0f3, 0, 0xfffff) = 0x00cff3000000ffff; ds, es, fs and gs
//   hold the null selector for a 64-bit process (start_thread), so 0.
// - cr0 = CR0_STATE 0x80050033 (PE MP ET NE WP AM PG).
// - cr3 = 0: the trace has no page tables (its "physical" addresses are the
//   guest's virtual addresses), so no page-table root is meaningful.
// - cr4 = 0x6b0: the bits Linux sets that the emulated CPU's CPUID offers
//   (PSE PAE PGE OSFXSR OSXMMEXCPT; no OSXSAVE, FSGSBASE, PCIDE, SMEP, UMIP).
// - EFER (msr_c0000080) = 0xd01 (SCE LME LMA NXE).
// - pkru = 0: the emulated CPU has no protection keys (CPUID 7:ECX is 0).
// The selectors, eflags, fs/gs bases, x87, SSE and mxcsr come from the engine.
// xmm registers are declared as the spec's zmm (64 bytes); their upper 48 bytes
// are 0 (the guest is told there is no AVX, so nothing writes them).
// x87: the spec's x87r0-7 are the physical registers R0-R7, our table's st0-7
// the stack ST(i) = R((TOP + i) mod 8), TOP being bits 11-13 of fpsw (which
// Unicorn gives with TOP in it); `top` is declared on its own too.
constexpr BintraceRegister kBintraceRegisters[] = {
    copy("rax", 8, "rax"), copy("rcx", 8, "rcx"), copy("rdx", 8, "rdx"), copy("rbx", 8, "rbx"),
    copy("rsp", 8, "rsp"), copy("rbp", 8, "rbp"), copy("rsi", 8, "rsi"), copy("rdi", 8, "rdi"),
    copy("r8", 8, "r8"), copy("r9", 8, "r9"), copy("r10", 8, "r10"), copy("r11", 8, "r11"),
    copy("r12", 8, "r12"), copy("r13", 8, "r13"), copy("r14", 8, "r14"), copy("r15", 8, "r15"),
    copy("rip", 8, "rip"), copy("eflags", 4, "rflags"),
    copy("cs", 2, "cs"), copy("ds", 2, "ds"), copy("es", 2, "es"), copy("ss", 2, "ss"), copy("fs", 2, "fs"),
    copy("gs", 2, "gs"),
    copy("msr_c0000100", 8, "fs_base"), copy("msr_c0000101", 8, "gs_base"),
    constant("gdtr_base", 8, 0xfffffe0000001000), constant("gdtr_limit", 2, 0x7f),
    constant("ldtr_base", 8, 0), constant("ldtr_limit", 3, 0),
    constant("idtr_base", 8, 0xfffffe0000000000), constant("idtr_limit", 2, 0xfff),
    constant("tr_base", 8, 0xfffffe0000003000), constant("tr_limit", 3, 0x4087),
    constant("cs_shadow", 8, 0x00affb000000ffff), constant("ds_shadow", 8, 0), constant("es_shadow", 8, 0),
    constant("ss_shadow", 8, 0x00cff3000000ffff), constant("fs_shadow", 8, 0), constant("gs_shadow", 8, 0),
    constant("cr0", 8, 0x80050033), constant("cr3", 8, 0), constant("cr4", 8, 0x6b0),
    constant("msr_c0000080", 8, 0xd01), constant("pkru", 4, 0),
    derived("x87r0", 10), derived("x87r1", 10), derived("x87r2", 10), derived("x87r3", 10),
    derived("x87r4", 10), derived("x87r5", 10), derived("x87r6", 10), derived("x87r7", 10), derived("top", 1),
    copy("x87status", 2, "fpsw"), copy("x87control", 2, "fpcw"), copy("x87tags", 2, "fptag"),
    copy("zmm0", 64, "xmm0"), copy("zmm1", 64, "xmm1"), copy("zmm2", 64, "xmm2"), copy("zmm3", 64, "xmm3"),
    copy("zmm4", 64, "xmm4"), copy("zmm5", 64, "xmm5"), copy("zmm6", 64, "xmm6"), copy("zmm7", 64, "xmm7"),
    copy("zmm8", 64, "xmm8"), copy("zmm9", 64, "xmm9"), copy("zmm10", 64, "xmm10"), copy("zmm11", 64, "xmm11"),
    copy("zmm12", 64, "xmm12"), copy("zmm13", 64, "xmm13"), copy("zmm14", 64, "xmm14"), copy("zmm15", 64, "xmm15"),
    copy("mxcsr", 4, "mxcsr"),
};

constexpr std::size_t bintrace_index(std::string_view name) {
  for (std::size_t i = 0; i < std::size(kBintraceRegisters); ++i)
    if (kBintraceRegisters[i].name == name) return i;
  throw "no such bintrace register";
}
constexpr std::size_t kBintraceX87r0 = bintrace_index("x87r0");
constexpr std::size_t kBintraceTop = bintrace_index("top");
static_assert(bintrace_index("x87r7") == kBintraceX87r0 + 7);
constexpr std::uint16_t kTableSt0 = table_index("st0");
constexpr std::uint16_t kTableFpsw = table_index("fpsw");
static_assert(table_index("st7") == kTableSt0 + 7);
constexpr std::uint16_t kBintraceDerivedInputs[] = {kTableSt0,     kTableSt0 + 1, kTableSt0 + 2, kTableSt0 + 3,
                                                    kTableSt0 + 4, kTableSt0 + 5, kTableSt0 + 6, kTableSt0 + 7,
                                                    kTableFpsw};
constexpr std::size_t kX87Bytes = 10;

unsigned x87_top(std::span<const std::array<std::uint8_t, 16>> table) {
  return (static_cast<unsigned>(table[kTableFpsw][1]) >> 3) & 7u;  // fpsw bits 11-13
}

void x86_64_bintrace_derive(std::span<const std::array<std::uint8_t, 16>> table, std::size_t index,
                            std::span<std::uint8_t> out) {
  std::fill(out.begin(), out.end(), std::uint8_t{0});
  if (table.size() < std::size(kRegisters)) return;
  const unsigned top = x87_top(table);
  if (index == kBintraceTop && !out.empty()) {
    out[0] = static_cast<std::uint8_t>(top);
  } else if (index >= kBintraceX87r0 && index < kBintraceX87r0 + 8) {
    // R(j) = ST((j - TOP) mod 8).
    const unsigned physical = static_cast<unsigned>(index - kBintraceX87r0);
    const auto& st = table[kTableSt0 + ((physical - top) & 7u)];
    std::copy_n(st.begin(), std::min(out.size(), kX87Bytes), out.begin());
  }
}

void x86_64_bintrace_underive(std::span<const std::span<const std::uint8_t>> values,
                              std::span<std::array<std::uint8_t, 16>> table) {
  if (values.size() < std::size(kBintraceRegisters) || table.size() < std::size(kRegisters)) return;
  const unsigned top = values[kBintraceTop].empty() ? 0u : values[kBintraceTop][0] & 7u;
  for (unsigned i = 0; i < 8; ++i) {
    const auto& physical = values[kBintraceX87r0 + ((top + i) & 7u)];  // ST(i) = R((TOP + i) mod 8)
    auto& st = table[kTableSt0 + i];
    st.fill(0);
    std::copy_n(physical.begin(), std::min(physical.size(), kX87Bytes), st.begin());
  }
}

// CPUID facts the reference writers store (REVEN's QEMU/Bochs tracers): PAT and
// PSE-36 (leaf 1 EDX bits 16, 17), 1 GiB pages (leaf 0x80000001 EDX bit 26),
// physical and linear address bits (leaf 0x80000008 EAX bits 0-7, 8-15), from
// the CPUID the guest is given (the probe above, with its fixes).
Expected<std::vector<BintraceStaticRegister>> x86_64_bintrace_static_registers() {
  CpuidProbe probe;
  if (auto status = probe.init(); !status) return status.error();
  const auto leaf1 = probe.query(1, 0);
  const auto max_extended = probe.query(0x80000000u, 0)[0];
  const auto extended1 = max_extended >= 0x80000001u ? probe.query(0x80000001u, 0) : std::array<std::uint32_t, 4>{};
  const auto sizes = max_extended >= 0x80000008u ? probe.query(0x80000008u, 0) : std::array<std::uint32_t, 4>{};
  if (sizes[0] == 0) return make_error(ErrorCode::kEmulator, "CPUID leaf 0x80000008 gives no address sizes");
  return std::vector<BintraceStaticRegister>{
      {"cpuid_pat", static_cast<std::uint8_t>((leaf1[3] >> 16) & 1)},
      {"cpuid_pse36", static_cast<std::uint8_t>((leaf1[3] >> 17) & 1)},
      {"cpuid_1gb_pages", static_cast<std::uint8_t>((extended1[3] >> 26) & 1)},
      {"cpuid_max_phy_addr", static_cast<std::uint8_t>(sizes[0] & 0xff)},
      {"cpuid_max_lin_addr", static_cast<std::uint8_t>((sizes[0] >> 8) & 0xff)},
  };
}

// The reference x64 writer's operations: rip += 1..15, eflags bits CF PF AF ZF
// SF TF IF DF OF set and cleared, rsp += +-2, 4, 8, 16.
constexpr std::uint8_t kBintraceFlagBits[] = {0, 2, 4, 6, 7, 8, 9, 10, 11};
constexpr std::int8_t kBintraceSpSteps[] = {2, 4, 8, 16, -2, -4, -8, -16};

const BintraceMachine kBintraceMachine{
    .magic = 0x31343678,  // 'x641'
    .registers = kBintraceRegisters,
    .pc_register = "rip",
    .sp_register = "rsp",
    .flags_register = "eflags",
    .max_pc_step = 15,
    .flag_bits = kBintraceFlagBits,
    .sp_steps = kBintraceSpSteps,
    .derive = &x86_64_bintrace_derive,
    .derived_inputs = kBintraceDerivedInputs,
    .underive = &x86_64_bintrace_underive,
    .static_registers = &x86_64_bintrace_static_registers,
};

void x86_64_address_registers(const cs_insn& insn, std::vector<std::uint16_t>& base, std::vector<std::uint16_t>& index) {
  if (!insn.detail) return;
  auto add = [](std::vector<std::uint16_t>& list, unsigned capstone_register) {
    const int found = x86_64_register_index_for_capstone(capstone_register);
    if (capstone_register == X86_REG_INVALID || found < 0) return;
    const auto value = static_cast<std::uint16_t>(found);
    if (std::find(list.begin(), list.end(), value) == list.end()) list.push_back(value);
  };
  const cs_x86& x86 = insn.detail->x86;
  for (std::uint8_t i = 0; i < x86.op_count; ++i) {
    const cs_x86_op& op = x86.operands[i];
    if (op.type != X86_OP_MEM) continue;
    add(base, op.mem.base);
    add(index, op.mem.index);
  }
}

// struct stat of arch/x86/include/uapi/asm/stat.h (x86-64), 144 bytes:
//   0 dev u64 | 8 ino u64 | 16 nlink u64 | 24 mode u32 | 28 uid u32 | 32 gid u32
//  36 pad | 40 rdev u64 | 48 size i64 | 56 blksize i64 | 64 blocks i64
//  72 atime | 80 atime_nsec | 88 mtime | 96 mtime_nsec | 104 ctime | 112 ctime_nsec | 120 unused[3]
std::size_t x86_64_encode_stat(const FileStatus& s, std::span<std::uint8_t, kMaxStatBytes> out) {
  constexpr std::size_t kSize = 144;
  std::fill_n(out.begin(), kSize, std::uint8_t{0});
  const StructField fields[] = {
      {0, 8, s.dev},        {8, 8, s.ino},         {16, 8, s.nlink},        {24, 4, s.mode},
      {28, 4, s.uid},       {32, 4, s.gid},        {40, 8, s.rdev},         {48, 8, s.size},
      {56, 8, s.blksize},   {64, 8, s.blocks},     {72, 8, s.atime_sec},    {80, 8, s.atime_nsec},
      {88, 8, s.mtime_sec}, {96, 8, s.mtime_nsec}, {104, 8, s.ctime_sec},   {112, 8, s.ctime_nsec},
  };
  for (const auto& field : fields) store_field(out, field, true);
  return kSize;
}

}  // namespace

const ArchInfo& x86_64_arch() {
  static const ArchInfo kInfo{
      .name = "x86_64",
      .unicorn_arch = UC_ARCH_X86,
      .unicorn_mode = UC_MODE_64,
      .capstone_arch = CS_ARCH_X86,
      .capstone_mode = CS_MODE_64,
      .elf_machine = kEmX86_64,
      .elf_64bit = true,
      .little_endian = true,
      .platform = "x86_64",
      .uname_machine = "x86_64",
      .registers = kRegisters,
      .pc_reg = UC_X86_REG_RIP,
      .sp_reg = UC_X86_REG_RSP,
      .fp_reg = UC_X86_REG_RBP,
      .syscall_abi = {.number_reg = UC_X86_REG_RAX,
                      .arg_regs = {UC_X86_REG_RDI, UC_X86_REG_RSI, UC_X86_REG_RDX, UC_X86_REG_R10,
                                   UC_X86_REG_R8, UC_X86_REG_R9},
                      .return_reg = UC_X86_REG_RAX,
                      .trap_instruction = "syscall",
                      .trap_length = 2},
      .open_flags = {},
      .encode_stat = &x86_64_encode_stat,
      // Linux x86-64 with 47-bit user space and randomisation off.
      .layout = {.stack_top = 0x7ffffffff000,
                 .stack_size = 8ull << 20,
                 .mmap_top = 0x7ffff7fff000,
                 .et_dyn_base = 0x555555554000,
                 .lowest_mmap = 0x10000},
      .format_ids = {.ucir_arch = "x86_64", .bap_architecture = 9, .bap_machine = 64,
                     .bintrace_magic = 0x31343678, .bintrace = &kBintraceMachine},
      .syscall_id = &x86_64_syscall_id,
      .make_guest_cpu = &make_x86_64_guest_cpu,
      .register_index_for_capstone = &x86_64_register_index_for_capstone,
      .add_unlisted_writes = &x86_64_add_unlisted_writes,
      .count_memory_accesses = &x86_64_count_memory_accesses,
      .address_registers = &x86_64_address_registers,
  };
  return kInfo;
}

}  // namespace tracecorn::arch
