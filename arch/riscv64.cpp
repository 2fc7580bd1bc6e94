// Role: everything tracecorn knows about RISC-V 64 (riscv64, RV64GC) Linux
// guests: Unicorn arch/mode, the register table under the psABI names with their
// DWARF numbers (RISC-V ELF psABI, "DWARF register numbers": x0-x31 0-31,
// f0-f31 32-63), the Linux syscall ABI (ecall, number in a7, arguments a0-a5,
// result a0) with the generic numbering and `struct stat` (linux_generic.h),
// the no-ASLR layout of an Sv39 kernel, and the CPU set-up Debian's Unicorn
// 2.0.1 needs.
// Who calls it: the registry hands the ArchInfo out; the GuestCpu runs on the
// emulation thread inside Unicorn's hooks.
// Invariant: nothing outside arch/ names a RISC-V register or syscall number.
//
// Unicorn 2.0.1 facts this file relies on (observed on Debian 12's library with
// its Python binding):
// - `ecall` reaches UC_HOOK_INTR with intno 8 (RISCV_EXCP_U_ECALL) and PC
//   already past it; an illegal instruction gives intno 2, ebreak 3, both with
//   PC past the instruction.
// - mstatus starts at 0, so FS is off and every floating-point instruction is
//   illegal: the CPU set-up sets FS (as Linux does for a new process).
// Capstone 4 (Debian 12) has no RISC-V: the architecture runs, but nothing that
// decodes instructions (recording, the text format) can serve it; those refuse
// with an error naming the architecture.
#include <csignal>

#include "arch/arch.h"
#include "arch/interrupt_trap_cpu.h"
#include "arch/linux_generic.h"

namespace tracecorn::arch {
namespace {

constexpr RegisterInfo kRegisters[] = {
    {UC_RISCV_REG_X0, "zero", 8, 0}, {UC_RISCV_REG_X1, "ra", 8, 1}, {UC_RISCV_REG_X2, "sp", 8, 2},
    {UC_RISCV_REG_X3, "gp", 8, 3}, {UC_RISCV_REG_X4, "tp", 8, 4}, {UC_RISCV_REG_X5, "t0", 8, 5},
    {UC_RISCV_REG_X6, "t1", 8, 6}, {UC_RISCV_REG_X7, "t2", 8, 7}, {UC_RISCV_REG_X8, "s0", 8, 8},
    {UC_RISCV_REG_X9, "s1", 8, 9}, {UC_RISCV_REG_X10, "a0", 8, 10}, {UC_RISCV_REG_X11, "a1", 8, 11},
    {UC_RISCV_REG_X12, "a2", 8, 12}, {UC_RISCV_REG_X13, "a3", 8, 13}, {UC_RISCV_REG_X14, "a4", 8, 14},
    {UC_RISCV_REG_X15, "a5", 8, 15}, {UC_RISCV_REG_X16, "a6", 8, 16}, {UC_RISCV_REG_X17, "a7", 8, 17},
    {UC_RISCV_REG_X18, "s2", 8, 18}, {UC_RISCV_REG_X19, "s3", 8, 19}, {UC_RISCV_REG_X20, "s4", 8, 20},
    {UC_RISCV_REG_X21, "s5", 8, 21}, {UC_RISCV_REG_X22, "s6", 8, 22}, {UC_RISCV_REG_X23, "s7", 8, 23},
    {UC_RISCV_REG_X24, "s8", 8, 24}, {UC_RISCV_REG_X25, "s9", 8, 25}, {UC_RISCV_REG_X26, "s10", 8, 26},
    {UC_RISCV_REG_X27, "s11", 8, 27}, {UC_RISCV_REG_X28, "t3", 8, 28}, {UC_RISCV_REG_X29, "t4", 8, 29},
    {UC_RISCV_REG_X30, "t5", 8, 30}, {UC_RISCV_REG_X31, "t6", 8, 31}, {UC_RISCV_REG_PC, "pc", 8, kNoDwarfNumber},
    {UC_RISCV_REG_F0, "ft0", 8, 32}, {UC_RISCV_REG_F1, "ft1", 8, 33}, {UC_RISCV_REG_F2, "ft2", 8, 34},
    {UC_RISCV_REG_F3, "ft3", 8, 35}, {UC_RISCV_REG_F4, "ft4", 8, 36}, {UC_RISCV_REG_F5, "ft5", 8, 37},
    {UC_RISCV_REG_F6, "ft6", 8, 38}, {UC_RISCV_REG_F7, "ft7", 8, 39}, {UC_RISCV_REG_F8, "fs0", 8, 40},
    {UC_RISCV_REG_F9, "fs1", 8, 41}, {UC_RISCV_REG_F10, "fa0", 8, 42}, {UC_RISCV_REG_F11, "fa1", 8, 43},
    {UC_RISCV_REG_F12, "fa2", 8, 44}, {UC_RISCV_REG_F13, "fa3", 8, 45}, {UC_RISCV_REG_F14, "fa4", 8, 46},
    {UC_RISCV_REG_F15, "fa5", 8, 47}, {UC_RISCV_REG_F16, "fa6", 8, 48}, {UC_RISCV_REG_F17, "fa7", 8, 49},
    {UC_RISCV_REG_F18, "fs2", 8, 50}, {UC_RISCV_REG_F19, "fs3", 8, 51}, {UC_RISCV_REG_F20, "fs4", 8, 52},
    {UC_RISCV_REG_F21, "fs5", 8, 53}, {UC_RISCV_REG_F22, "fs6", 8, 54}, {UC_RISCV_REG_F23, "fs7", 8, 55},
    {UC_RISCV_REG_F24, "fs8", 8, 56}, {UC_RISCV_REG_F25, "fs9", 8, 57}, {UC_RISCV_REG_F26, "fs10", 8, 58},
    {UC_RISCV_REG_F27, "fs11", 8, 59}, {UC_RISCV_REG_F28, "ft8", 8, 60}, {UC_RISCV_REG_F29, "ft9", 8, 61},
    {UC_RISCV_REG_F30, "ft10", 8, 62}, {UC_RISCV_REG_F31, "ft11", 8, 63}, {UC_RISCV_REG_FCSR, "fcsr", 4, kNoDwarfNumber},
};

// QEMU's RISC-V exception causes (target/riscv/cpu_bits.h) as UC_HOOK_INTR reports them.
constexpr std::uint32_t kInstructionMisaligned = 0, kInstructionAccessFault = 1, kIllegalInstruction = 2,
                        kBreakpoint = 3, kLoadMisaligned = 4, kStoreMisaligned = 6, kUserEcall = 8,
                        kSupervisorEcall = 9, kMachineEcall = 11;

// AT_HWCAP: one bit per single-letter ISA extension, bit = letter - 'a'
// (arch/riscv/include/asm/hwcap.h): I M A F D C, what Unicorn's default CPU runs.
constexpr std::uint64_t kHwcap = (1u << ('i' - 'a')) | (1u << ('m' - 'a')) | (1u << ('a' - 'a')) |
                                 (1u << ('f' - 'a')) | (1u << ('d' - 'a')) | (1u << ('c' - 'a'));
constexpr std::uint64_t kMstatusFsDirty = 0x6000;  // mstatus.FS = 3
constexpr std::uint64_t kEcallLength = 4;

class Riscv64GuestCpu final : public InterruptTrapCpu {
 public:
  explicit Riscv64GuestCpu(uc_engine* engine) : InterruptTrapCpu(engine, UC_RISCV_REG_PC, UC_RISCV_REG_TP) {}

  Status init() {
    std::uint64_t mstatus = kMstatusFsDirty, zero = 0;
    if (uc_reg_write(engine_, UC_RISCV_REG_MSTATUS, &mstatus) != UC_ERR_OK ||
        uc_reg_write(engine_, UC_RISCV_REG_FCSR, &zero) != UC_ERR_OK)
      return make_error(ErrorCode::kEmulator, "cannot enable the FPU (mstatus.FS)");
    return ok_status();
  }

  // Unicorn leaves PC after the ecall (4 bytes; there is no compressed ecall).
  std::uint64_t trap_pc() const override { return pc() - kEcallLength; }
  std::uint64_t hwcap() const override { return kHwcap; }

  // Without a RISC-V decoder (Capstone 4 has none) the instruction cannot be found.
  std::uint64_t locate_faulting_instruction(std::uint64_t reported_pc, std::uint64_t) const override {
    return reported_pc;
  }

 private:
  bool is_syscall_interrupt(std::uint32_t number) const override {
    return number == kUserEcall || number == kSupervisorEcall || number == kMachineEcall;
  }
  // Linux's riscv trap handlers (arch/riscv/kernel/traps.c): illegal
  // instruction SIGILL, ebreak SIGTRAP, misaligned accesses SIGBUS, access and
  // page faults SIGSEGV.
  int fault_signal(std::uint32_t number) const override {
    switch (number) {
      case kIllegalInstruction: return SIGILL;
      case kBreakpoint: return SIGTRAP;
      case kInstructionMisaligned: case kLoadMisaligned: case kStoreMisaligned: return SIGBUS;
      case kInstructionAccessFault: default: return SIGSEGV;
    }
  }
};

Expected<std::unique_ptr<GuestCpu>> make_riscv64_guest_cpu(uc_engine* engine) {
  auto cpu = std::make_unique<Riscv64GuestCpu>(engine);
  if (auto status = cpu->init(); !status) return status.error();
  return std::unique_ptr<GuestCpu>(std::move(cpu));
}

// Without a decoder there is nothing to map: these answer "unknown".
int riscv64_register_index_for_capstone(unsigned) { return -1; }
void riscv64_add_unlisted_writes(const cs_insn&, std::vector<std::uint16_t>&) {}
bool riscv64_count_memory_accesses(const cs_insn&, std::uint8_t& reads, std::uint8_t& writes) {
  reads = writes = 0;
  return false;
}
void riscv64_address_registers(const cs_insn&, std::vector<std::uint16_t>&, std::vector<std::uint16_t>&) {}

// The generic table without renameat (38): riscv does not define
// __ARCH_WANT_RENAMEAT, so its kernel has only renameat2 (checked against the
// cross compiler's <asm/unistd.h> by tests/arch/arch_test.cpp).
SyscallId riscv64_syscall_id(std::uint64_t number) {
  constexpr std::uint64_t kRenameat = 38;
  return number == kRenameat ? SyscallId::unknown : generic_syscall_id(number);
}

constexpr std::uint16_t kEmRiscv = 243;

}  // namespace

const ArchInfo& riscv64_arch() {
  static const ArchInfo kInfo{
      .name = "riscv64",
      .unicorn_arch = UC_ARCH_RISCV,
      .unicorn_mode = UC_MODE_RISCV64,
      .capstone_arch = CS_ARCH_MAX,  // no RISC-V in Capstone 4: cs_open fails, decoding users refuse
      .capstone_mode = CS_MODE_LITTLE_ENDIAN,
      .decoding_unsupported = "Debian 12's Capstone 4 has no RISC-V",
      .elf_machine = kEmRiscv,
      .elf_64bit = true,
      .little_endian = true,
      .platform = "",  // arch/riscv defines no ELF_PLATFORM: no AT_PLATFORM
      .uname_machine = "riscv64",
      .registers = kRegisters,
      .pc_reg = UC_RISCV_REG_PC,
      .sp_reg = UC_RISCV_REG_SP,
      .fp_reg = UC_RISCV_REG_S0,
      .syscall_abi = {.number_reg = UC_RISCV_REG_A7,
                      .arg_regs = {UC_RISCV_REG_A0, UC_RISCV_REG_A1, UC_RISCV_REG_A2, UC_RISCV_REG_A3,
                                   UC_RISCV_REG_A4, UC_RISCV_REG_A5},
                      .return_reg = UC_RISCV_REG_A0,
                      .trap_instruction = "ecall",
                      .trap_length = 4},
      .open_flags = {},  // asm-generic/fcntl.h, as x86-64
      .encode_stat = &generic_encode_stat,
      // Linux riscv64 with Sv39 (mmap stays below 1 << 38 unless asked: the
      // user half of Sv39 is TASK_SIZE = 0x4000000000), randomisation off:
      // STACK_TOP = TASK_SIZE, mmap_base = STACK_TOP - 128 MiB gap, ELF_ET_DYN_BASE
      // = 2/3 of TASK_SIZE, page aligned down.
      .layout = {.stack_top = 0x4000000000,
                 .stack_size = 8ull << 20,
                 .mmap_top = 0x3ff8000000,
                 .et_dyn_base = 0x2aaaaaa000,
                 .lowest_mmap = 0x10000},
      // usercorn (UCIR) and bap-frames have no RISC-V id; binary trace neither.
      .format_ids = {.ucir_arch = "", .bap_architecture = 0, .bap_machine = 0, .bintrace_magic = 0,
                     .bintrace = nullptr},
      .syscall_id = &riscv64_syscall_id,
      .make_guest_cpu = &make_riscv64_guest_cpu,
      .register_index_for_capstone = &riscv64_register_index_for_capstone,
      .add_unlisted_writes = &riscv64_add_unlisted_writes,
      .count_memory_accesses = &riscv64_count_memory_accesses,
      .address_registers = &riscv64_address_registers,
  };
  return kInfo;
}

}  // namespace tracecorn::arch
