// Role: everything tracecorn knows about x86-64 guests: Unicorn arch/mode, the
// register table with DWARF numbers (System V psABI, figure 3.36), the Linux
// syscall ABI and numbering, the no-ASLR address-space layout, the ids each
// trace format uses, and the CPU set-up that Debian's Unicorn 2.0.1 needs before
// glibc programs run (see docs/architectures.md, "Unicorn 2.0.1").
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
#include "arch/signal_frames.h"
#include "arch/x86_common.h"
#include "arch/x86_gdb.h"

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
    {15, SyscallId::rt_sigreturn}, {127, SyscallId::rt_sigpending}, {128, SyscallId::rt_sigtimedwait}, {130, SyscallId::rt_sigsuspend},
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
    {129, SyscallId::rt_sigqueueinfo}, {297, SyscallId::rt_tgsigqueueinfo}, {282, SyscallId::signalfd}, {289, SyscallId::signalfd4}, {290, SyscallId::eventfd2},
    {436, SyscallId::close_range},
    {437, SyscallId::openat2},
    {324, SyscallId::membarrier},
    {219, SyscallId::restart_syscall},
    {205, SyscallId::set_thread_area},
    {211, SyscallId::get_thread_area},
    {452, SyscallId::fchmodat2},
    {435, SyscallId::clone3},
    {247, SyscallId::waitid}, {434, SyscallId::pidfd_open}, {424, SyscallId::pidfd_send_signal},
    {117, SyscallId::setresuid}, {119, SyscallId::setresgid}, {140, SyscallId::getpriority}, {141, SyscallId::setpriority},
    {213, SyscallId::epoll_create}, {232, SyscallId::epoll_wait}, {233, SyscallId::epoll_ctl}, {281, SyscallId::epoll_pwait},
    {283, SyscallId::timerfd_create}, {284, SyscallId::eventfd}, {286, SyscallId::timerfd_settime}, {287, SyscallId::timerfd_gettime},
    {222, SyscallId::timer_create}, {223, SyscallId::timer_settime}, {224, SyscallId::timer_gettime},
    {225, SyscallId::timer_getoverrun}, {226, SyscallId::timer_delete},
    {322, SyscallId::execveat},
};

constexpr SyscallTable kSyscallTable{kSyscallNumbers};

SyscallId x86_64_syscall_id(std::uint64_t number) {
  return kSyscallTable(number);
}

// The x86-64 CPU as a Linux process sees it, on top of Unicorn 2.0.1: the
// shared x86 set-up (x86_common.h) plus the `syscall` instruction. Its hook
// sees RIP at the `syscall` instruction and Unicorn adds 2 after the hook
// returns (#1048); rcx/r11 are not set as the kernel sets them.
class X86_64GuestCpu final : public X86GuestCpuBase {
 public:
  explicit X86_64GuestCpu(uc_engine* engine) : X86GuestCpuBase(engine, CS_MODE_64, kRegisters, 8) {}
  ~X86_64GuestCpu() override {
    if (syscall_hook_) uc_hook_del(engine_, syscall_hook_);
  }

  Status init() { return init_x86(); }

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

  std::uint64_t thread_pointer() const override {
    std::uint64_t value = 0;
    uc_reg_read(engine_, UC_X86_REG_FS_BASE, &value);
    return value;
  }

  Status set_thread_pointer(std::uint64_t value) override {
    if (uc_reg_write(engine_, UC_X86_REG_FS_BASE, &value) != UC_ERR_OK)
      return make_error(ErrorCode::kEmulator, "cannot write FS_BASE");
    return ok_status();
  }

  std::uint64_t segment_base(unsigned capstone_segment) const override {
    return capstone_segment == X86_REG_FS ? thread_pointer() : 0;
  }

  bool has_signal_frames() const override { return true; }
  std::uint64_t syscall_return_pc() const override { return trap_pc() + kSyscallLength; }
  SignalFrame build_signal_frame(const SignalFrameRequest& request) const override {
    return x86_64_build_signal_frame(engine_, request);
  }
  void enter_signal_handler(const SignalFrameRequest& request, const SignalFrame& frame) override {
    x86_64_enter_signal_handler(engine_, request, frame);
  }
  std::optional<SignalReturn> return_from_signal(bool) override { return x86_64_return_from_signal(engine_); }

 private:
  static constexpr std::uint64_t kSyscallLength = 2;

  static void on_syscall(uc_engine*, void* user) noexcept {
    auto* self = static_cast<X86_64GuestCpu*>(user);
    self->syscall_callback_(self->syscall_user_);
  }

  uc_hook syscall_hook_ = 0;
  SyscallCallback syscall_callback_ = nullptr;
  void* syscall_user_ = nullptr;
};

Expected<std::unique_ptr<GuestCpu>> make_x86_64_guest_cpu(uc_engine* engine) {
  auto cpu = std::make_unique<X86_64GuestCpu>(engine);
  if (auto status = cpu->init(); !status) return status.error();
  return std::unique_ptr<GuestCpu>(std::move(cpu));
}


constexpr std::uint16_t kEmX86_64 = 62;

// Sub-registers and their full register, for Capstone's register names.
constexpr X86SubRegister kSubRegisters[] = {
    {"eax", "rax"}, {"ax", "rax"}, {"al", "rax"}, {"ah", "rax"}, {"ebx", "rbx"}, {"bx", "rbx"}, {"bl", "rbx"},
    {"bh", "rbx"}, {"ecx", "rcx"}, {"cx", "rcx"}, {"cl", "rcx"}, {"ch", "rcx"}, {"edx", "rdx"}, {"dx", "rdx"},
    {"dl", "rdx"}, {"dh", "rdx"}, {"esi", "rsi"}, {"si", "rsi"}, {"sil", "rsi"}, {"edi", "rdi"}, {"di", "rdi"},
    {"dil", "rdi"}, {"ebp", "rbp"}, {"bp", "rbp"}, {"bpl", "rbp"}, {"esp", "rsp"}, {"sp", "rsp"}, {"spl", "rsp"},
    {"eip", "rip"}, {"ip", "rip"}, {"eflags", "rflags"}, {"flags", "rflags"},
};

const X86CapstoneRegisterMap& capstone_map() {
  static const X86CapstoneRegisterMap kMap(CS_MODE_64, kRegisters, kSubRegisters);
  return kMap;
}
int x86_64_register_index_for_capstone(unsigned capstone_register) { return capstone_map()(capstone_register); }
void x86_64_add_unlisted_writes(const cs_insn& insn, std::vector<std::uint16_t>& written) {
  x86_add_unlisted_writes(kRegisters, {.flags = "rflags", .accumulator = "rax"}, insn, written);
}
void x86_64_address_registers(const cs_insn& insn, std::vector<std::uint16_t>& base, std::vector<std::uint16_t>& index) {
  x86_address_registers(capstone_map(), insn, base, index);
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

// Tenet's AMD64 definition (plugins/tenet/trace/arch/amd64.py): the general
// registers and rip.
constexpr TenetRegister kTenetRegisters[] = {
    {"rax", "rax"}, {"rbx", "rbx"}, {"rcx", "rcx"}, {"rdx", "rdx"}, {"rbp", "rbp"}, {"rsp", "rsp"},
    {"rsi", "rsi"}, {"rdi", "rdi"}, {"r8", "r8"},   {"r9", "r9"},   {"r10", "r10"}, {"r11", "r11"},
    {"r12", "r12"}, {"r13", "r13"}, {"r14", "r14"}, {"r15", "r15"}, {"rip", "rip"}};

}  // namespace

const ArchInfo& x86_64_arch() {
  // Unicorn's and Capstone's view of it (arch/arch_engine.h).
  static constexpr ArchEngine kEngine{
      .unicorn_arch = UC_ARCH_X86,
      .unicorn_mode = UC_MODE_64,
      .capstone_arch = CS_ARCH_X86,
      .capstone_mode = CS_MODE_64,
      .make_guest_cpu = &make_x86_64_guest_cpu,
      .register_index_for_capstone = &x86_64_register_index_for_capstone,
      .add_unlisted_writes = &x86_64_add_unlisted_writes,
      .count_memory_accesses = &x86_count_memory_accesses,
      .address_registers = &x86_64_address_registers,
      .describe_derived_writes = &x86_describe_derived_writes,
  };
  // glibc's __restore_rt (sa_restorer): mov $0xf (__NR_rt_sigreturn), %rax; syscall.
  static constexpr std::uint8_t kRestoreRt[] = {0x48, 0xc7, 0xc0, 0x0f, 0x00, 0x00, 0x00, 0x0f, 0x05};
  static const SignalTrampoline kTrampolines[] = {{kRestoreRt, x86_64_signal_saved_registers()}};
  static const ArchInfo kInfo{
      .name = "x86_64",
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
                      .trap_length = 2,
                      .epoll_event_packed = true},
      .signal_abi = {.trampolines = kTrampolines},
      .open_flags = {},
      .encode_stat = &x86_64_encode_stat,
      // Linux x86-64 with 47-bit user space and randomisation off.
      .layout = {.stack_top = 0x7ffffffff000,
                 .stack_size = 8ull << 20,
                 .mmap_top = 0x7ffff7fff000,
                 .et_dyn_base = 0x555555554000,
                 .lowest_mmap = 0x10000},
      .format_ids = {.ucir_arch = "x86_64", .bap_architecture = 9, .bap_machine = 64,
                     .bintrace_magic = 0x31343678, .bintrace = &kBintraceMachine,
                     .tenet_registers = kTenetRegisters},
      .gdb = &x86_64_gdb_target(),
      .syscall_id = &x86_64_syscall_id,
      .engine = &kEngine,
      .reads_host_clock = &x86_reads_host_clock,
  };
  return kInfo;
}

}  // namespace tracecorn::arch
