// Role: everything tracecorn knows about AArch64 (arm64) Linux guests: Unicorn
// arch/mode, the register table with DWARF numbers (AADWARF64, "DWARF for the
// Arm 64-bit Architecture", table 3: x0-x30 0-30, sp 31, pc 32, tpidr_el0 36,
// v0-v31 64-95), the Linux syscall ABI (svc #0, number in x8, arguments x0-x5,
// result x0) with the generic syscall numbering and `struct stat`
// (linux_generic.h), the no-ASLR address-space layout of a 48-bit VA kernel,
// the ids each trace format uses, and the CPU set-up Debian's Unicorn 2.0.1 needs.
// Who calls it: the registry (arch/registry.cpp) hands the ArchInfo out; the
// GuestCpu runs on the emulation thread inside Unicorn's hooks.
// Invariant: nothing outside arch/ names an AArch64 register or syscall number.
//
// Unicorn 2.0.1 facts this file relies on (observed on Debian 12's library with
// its Python binding; docs/architectures.md, "Unicorn 2.0.1"):
// - `svc #0` reaches UC_HOOK_INTR with intno 2 (QEMU's EXCP_SWI), PC already
//   past the svc, ESR_EL1 not filled in. `udf` gives intno 1 (EXCP_UDEF) with PC
//   at the instruction, `brk` intno 7 (EXCP_BKPT).
// - The default CPU is a Cortex-A72 (MIDR_EL1 0x410fd083), running at EL1 with
//   SP_EL1 as the stack pointer; FP/SIMD work without touching CPACR_EL1;
//   TPIDR_EL0 is readable and writable from the guest and through uc_reg_*.
// - Integer division by zero does not trap (the architecture returns 0).
#include <algorithm>
#include <cstring>
#include <optional>
#include <string>

#include <unicorn/unicorn.h>  // includes arm64.h (which cannot be included first)
#include "arch/block_scan.h"

#include "arch/arch.h"
#include "arch/arm_exceptions.h"
#include "arch/interrupt_trap_cpu.h"
#include "arch/signal_frames.h"
#include "arch/linux_generic.h"

namespace tracecorn::arch {
namespace {

constexpr RegisterInfo kRegisters[] = {
    {UC_ARM64_REG_X0, "x0", 8, 0},     {UC_ARM64_REG_X1, "x1", 8, 1},     {UC_ARM64_REG_X2, "x2", 8, 2},
    {UC_ARM64_REG_X3, "x3", 8, 3},     {UC_ARM64_REG_X4, "x4", 8, 4},     {UC_ARM64_REG_X5, "x5", 8, 5},
    {UC_ARM64_REG_X6, "x6", 8, 6},     {UC_ARM64_REG_X7, "x7", 8, 7},     {UC_ARM64_REG_X8, "x8", 8, 8},
    {UC_ARM64_REG_X9, "x9", 8, 9},     {UC_ARM64_REG_X10, "x10", 8, 10},  {UC_ARM64_REG_X11, "x11", 8, 11},
    {UC_ARM64_REG_X12, "x12", 8, 12},  {UC_ARM64_REG_X13, "x13", 8, 13},  {UC_ARM64_REG_X14, "x14", 8, 14},
    {UC_ARM64_REG_X15, "x15", 8, 15},  {UC_ARM64_REG_X16, "x16", 8, 16},  {UC_ARM64_REG_X17, "x17", 8, 17},
    {UC_ARM64_REG_X18, "x18", 8, 18},  {UC_ARM64_REG_X19, "x19", 8, 19},  {UC_ARM64_REG_X20, "x20", 8, 20},
    {UC_ARM64_REG_X21, "x21", 8, 21},  {UC_ARM64_REG_X22, "x22", 8, 22},  {UC_ARM64_REG_X23, "x23", 8, 23},
    {UC_ARM64_REG_X24, "x24", 8, 24},  {UC_ARM64_REG_X25, "x25", 8, 25},  {UC_ARM64_REG_X26, "x26", 8, 26},
    {UC_ARM64_REG_X27, "x27", 8, 27},  {UC_ARM64_REG_X28, "x28", 8, 28},  {UC_ARM64_REG_X29, "x29", 8, 29},
    {UC_ARM64_REG_X30, "x30", 8, 30},  {UC_ARM64_REG_SP, "sp", 8, 31},    {UC_ARM64_REG_PC, "pc", 8, 32},
    {UC_ARM64_REG_NZCV, "nzcv", 4, kNoDwarfNumber},
    {UC_ARM64_REG_TPIDR_EL0, "tpidr_el0", 8, 36},
    {UC_ARM64_REG_FPCR, "fpcr", 4, kNoDwarfNumber},    {UC_ARM64_REG_FPSR, "fpsr", 4, kNoDwarfNumber},
    {UC_ARM64_REG_V0, "v0", 16, 64},   {UC_ARM64_REG_V1, "v1", 16, 65},   {UC_ARM64_REG_V2, "v2", 16, 66},
    {UC_ARM64_REG_V3, "v3", 16, 67},   {UC_ARM64_REG_V4, "v4", 16, 68},   {UC_ARM64_REG_V5, "v5", 16, 69},
    {UC_ARM64_REG_V6, "v6", 16, 70},   {UC_ARM64_REG_V7, "v7", 16, 71},   {UC_ARM64_REG_V8, "v8", 16, 72},
    {UC_ARM64_REG_V9, "v9", 16, 73},   {UC_ARM64_REG_V10, "v10", 16, 74}, {UC_ARM64_REG_V11, "v11", 16, 75},
    {UC_ARM64_REG_V12, "v12", 16, 76}, {UC_ARM64_REG_V13, "v13", 16, 77}, {UC_ARM64_REG_V14, "v14", 16, 78},
    {UC_ARM64_REG_V15, "v15", 16, 79}, {UC_ARM64_REG_V16, "v16", 16, 80}, {UC_ARM64_REG_V17, "v17", 16, 81},
    {UC_ARM64_REG_V18, "v18", 16, 82}, {UC_ARM64_REG_V19, "v19", 16, 83}, {UC_ARM64_REG_V20, "v20", 16, 84},
    {UC_ARM64_REG_V21, "v21", 16, 85}, {UC_ARM64_REG_V22, "v22", 16, 86}, {UC_ARM64_REG_V23, "v23", 16, 87},
    {UC_ARM64_REG_V24, "v24", 16, 88}, {UC_ARM64_REG_V25, "v25", 16, 89}, {UC_ARM64_REG_V26, "v26", 16, 90},
    {UC_ARM64_REG_V27, "v27", 16, 91}, {UC_ARM64_REG_V28, "v28", 16, 92}, {UC_ARM64_REG_V29, "v29", 16, 93},
    {UC_ARM64_REG_V30, "v30", 16, 94}, {UC_ARM64_REG_V31, "v31", 16, 95},
};

constexpr std::uint16_t table_index(std::string_view name) {
  for (std::size_t i = 0; i < std::size(kRegisters); ++i)
    if (kRegisters[i].name == name) return static_cast<std::uint16_t>(i);
  throw "no such register";  // a compile-time error in a constant expression
}
constexpr std::uint16_t kTableNzcv = table_index("nzcv");
constexpr std::uint16_t kTableSp = table_index("sp");
constexpr std::uint16_t kTableX0 = table_index("x0");
constexpr std::uint16_t kTableV0 = table_index("v0");
static_assert(table_index("x30") == kTableX0 + 30 && table_index("v31") == kTableV0 + 31);



// AT_HWCAP bits (arch/arm64/include/uapi/asm/hwcap.h) for what Unicorn's
// Cortex-A72 executes: FP, ASIMD, AES, PMULL, SHA1, SHA2, CRC32, and CPUID
// (Linux emulates EL0 reads of the ID registers; the guest runs at EL1 here, so
// they read directly). No ATOMICS (LSE): the A72 has none, so glibc's outline
// atomics use exclusives.
constexpr std::uint64_t kHwcap = (1u << 0) | (1u << 1) | (1u << 3) | (1u << 4) | (1u << 5) | (1u << 6) |
                                 (1u << 7) | (1u << 11);

constexpr std::uint64_t kSvcLength = 4;

// The AArch64 CPU as a Linux process sees it, on top of Unicorn 2.0.1 (see the
// facts at the top of this file). The syscall trap is InterruptTrapCpu's
// UC_HOOK_INTR hook on intno 2; LinuxProcess's own interrupt hook sees the same
// interrupt and ignores it because signal_for_interrupt(2) is 0.
class Aarch64GuestCpu final : public InterruptTrapCpu {
 public:
  explicit Aarch64GuestCpu(uc_engine* engine) : InterruptTrapCpu(engine, UC_ARM64_REG_PC, UC_ARM64_REG_TPIDR_EL0) {}
  ~Aarch64GuestCpu() override {
    if (capstone_) cs_close(&capstone_);
  }

  Status init() {
    if (cs_open(CS_ARCH_ARM64, CS_MODE_ARM, &capstone_) != CS_ERR_OK ||
        cs_option(capstone_, CS_OPT_DETAIL, CS_OPT_ON) != CS_ERR_OK)
      return make_error(ErrorCode::kEmulator, "cannot open Capstone for AArch64");
    // FPCR = 0 (round to nearest, no traps) and TPIDR_EL0 = 0, as Linux starts a process.
    std::uint64_t zero = 0;
    if (uc_reg_write(engine_, UC_ARM64_REG_FPCR, &zero) != UC_ERR_OK ||
        uc_reg_write(engine_, UC_ARM64_REG_TPIDR_EL0, &zero) != UC_ERR_OK)
      return make_error(ErrorCode::kEmulator, "cannot set FPCR/TPIDR_EL0");
    return ok_status();
  }

  // Unicorn leaves PC after the svc; the trap instruction is 4 bytes before.
  std::uint64_t trap_pc() const override { return pc() - kSvcLength; }
  std::uint64_t hwcap() const override { return kHwcap; }

  bool has_signal_frames() const override { return true; }
  std::uint64_t syscall_return_pc() const override { return pc(); }
  SignalFrame build_signal_frame(const SignalFrameRequest& request) const override {
    return aarch64_build_signal_frame(engine_, request);
  }
  void enter_signal_handler(const SignalFrameRequest& request, const SignalFrame& frame) override {
    aarch64_enter_signal_handler(engine_, request, frame);
  }
  std::optional<SignalReturn> return_from_signal(bool) override { return aarch64_return_from_signal(engine_); }

  // Decodes the block from `reported_pc` and returns the first instruction whose
  // memory operand (base + index + displacement, evaluated with the current
  // registers, which TCG writes back before every guest memory access) lies
  // within 64 bytes below `fault_address` (pairs and vector structures access
  // several consecutive words). A fetch fault reports the fetched address itself.
  std::uint64_t locate_faulting_instruction(std::uint64_t reported_pc, std::uint64_t fault_address) const override {
    if (fault_address == reported_pc) return reported_pc;
    return find_instruction_in_block(engine_, capstone_, reported_pc, 256, 4, fault_address,
                                     [&](const cs_insn& insn) { return touches(insn, fault_address); });
  }

 private:
  bool is_syscall_interrupt(std::uint32_t number) const override { return number == kArmExcpSwi; }
  int fault_signal(std::uint32_t number) const override { return arm_fault_signal(number); }

  std::optional<std::uint64_t> register_value(unsigned capstone_register) const {
    if (capstone_register == ARM64_REG_INVALID) return 0;
    const int index = aarch64_register_index(capstone_register);
    if (index < 0 || kRegisters[index].size != 8) return std::nullopt;
    std::uint64_t value = 0;
    uc_reg_read(engine_, kRegisters[index].uc_id, &value);
    return value;
  }

  bool touches(const cs_insn& insn, std::uint64_t fault_address) const {
    const cs_arm64& detail = insn.detail->arm64;
    for (std::uint8_t i = 0; i < detail.op_count; ++i) {
      const cs_arm64_op& op = detail.operands[i];
      if (op.type != ARM64_OP_MEM) continue;
      const auto base = register_value(op.mem.base);
      const auto index = register_value(op.mem.index);
      if (!base || !index) continue;
      const std::uint64_t effective = *base + (*index << op.shift.value) + static_cast<std::uint64_t>(op.mem.disp);
      if (fault_address >= effective && fault_address - effective < 64) return true;
    }
    return false;
  }

 public:
  // Capstone AArch64 register id -> index in kRegisters (or -1).
  static int aarch64_register_index(unsigned capstone_register);

 private:
  csh capstone_ = 0;
};

// Capstone 4's AArch64 register ids: x0-x28 and v0-v31 are contiguous, x29/x30
// (fp/lr) separate, and each w/b/h/s/d/q register names a part of an x or v
// register.
int Aarch64GuestCpu::aarch64_register_index(unsigned r) {
  if (r >= ARM64_REG_X0 && r <= ARM64_REG_X28) return kTableX0 + static_cast<int>(r - ARM64_REG_X0);
  if (r >= ARM64_REG_W0 && r <= ARM64_REG_W30) return kTableX0 + static_cast<int>(r - ARM64_REG_W0);
  if (r == ARM64_REG_X29) return kTableX0 + 29;
  if (r == ARM64_REG_X30) return kTableX0 + 30;
  if (r == ARM64_REG_SP || r == ARM64_REG_WSP) return kTableSp;
  if (r == ARM64_REG_NZCV) return kTableNzcv;
  for (const unsigned first : {unsigned{ARM64_REG_V0}, unsigned{ARM64_REG_Q0}, unsigned{ARM64_REG_D0},
                               unsigned{ARM64_REG_S0}, unsigned{ARM64_REG_H0}, unsigned{ARM64_REG_B0}})
    if (r >= first && r <= first + 31) return kTableV0 + static_cast<int>(r - first);
  return -1;  // xzr, wzr, system registers
}

int aarch64_register_index_for_capstone(unsigned capstone_register) {
  return Aarch64GuestCpu::aarch64_register_index(capstone_register);
}

// The vDSO's __kernel_rt_sigreturn (arch/arm64/kernel/vdso/sigreturn.S):
// mov x8, #139 (__NR_rt_sigreturn); svc #0. glibc gives aarch64 handlers no
// restorer, so they return here (gdb recognises this sequence as a signal
// trampoline).
constexpr std::uint8_t kSigreturnTrampoline[] = {0x68, 0x11, 0x80, 0xd2, 0x01, 0x00, 0x00, 0xd4};

Expected<std::unique_ptr<GuestCpu>> make_aarch64_guest_cpu(uc_engine* engine) {
  auto cpu = std::make_unique<Aarch64GuestCpu>(engine);
  if (auto status = cpu->init(); !status) return status.error();
  return std::unique_ptr<GuestCpu>(std::move(cpu));
}

void add_once(std::vector<std::uint16_t>& list, int index) {
  if (index < 0) return;
  const auto value = static_cast<std::uint16_t>(index);
  if (std::find(list.begin(), list.end(), value) == list.end()) list.push_back(value);
}

// Capstone 4 leaves out of its AArch64 access lists the flags of flag-setting
// instructions (adds, cmp...) and the base register a pre/post-indexed access
// writes back; both come from the instruction's detail.
void aarch64_add_unlisted_writes(const cs_insn& insn, std::vector<std::uint16_t>& written) {
  if (!insn.detail) return;
  const cs_arm64& detail = insn.detail->arm64;
  if (detail.update_flags) add_once(written, kTableNzcv);
  if (detail.writeback)
    for (std::uint8_t i = 0; i < detail.op_count; ++i)
      if (detail.operands[i].type == ARM64_OP_MEM)
        add_once(written, aarch64_register_index_for_capstone(detail.operands[i].mem.base));
}

bool starts_with(std::string_view text, std::string_view prefix) { return text.substr(0, prefix.size()) == prefix; }

// How many 8-byte pieces a transfer of register `reg` makes (q registers: two;
// QEMU splits 128-bit loads and stores into two 64-bit accesses).
std::uint8_t register_pieces(unsigned reg) {
  if ((reg >= ARM64_REG_Q0 && reg <= ARM64_REG_Q31) || (reg >= ARM64_REG_V0 && reg <= ARM64_REG_V31)) return 2;
  return 1;
}

bool aarch64_count_memory_accesses(const cs_insn& insn, std::uint8_t& reads, std::uint8_t& writes) {
  reads = writes = 0;
  if (!insn.detail) return false;
  const std::string_view m = insn.mnemonic;
  const cs_arm64& detail = insn.detail->arm64;
  bool has_memory = false;
  for (std::uint8_t i = 0; i < detail.op_count; ++i) has_memory |= detail.operands[i].type == ARM64_OP_MEM;
  const bool literal_load = !has_memory && (m == "ldr" || m == "ldrsw");  // pc-relative: an immediate operand
  if (m == "dc" || m == "ic") return false;  // dc zva writes a whole block
  if (!has_memory && !literal_load) return true;
  if (starts_with(m, "prfm") || starts_with(m, "prfum")) return true;
  // Vector structure loads/stores (ld1-ld4, st1-st4 and replicate forms): QEMU
  // accesses element by element; LSE atomics and compare-and-swap: helpers.
  if (m.size() >= 3 && (starts_with(m, "ld") || starts_with(m, "st")) && m[2] >= '1' && m[2] <= '4') return false;
  for (const char* atomic : {"ldadd", "ldclr", "ldeor", "ldset", "ldsmax", "ldsmin", "ldumax", "ldumin", "swp",
                             "cas", "stadd", "stclr", "steor", "stset", "stsmax", "stsmin", "stumax", "stumin"})
    if (starts_with(m, atomic)) return false;
  const bool is_load = starts_with(m, "ld");
  const bool is_store = starts_with(m, "st");
  if (!is_load && !is_store) return false;
  const bool pair = m == "ldp" || m == "stp" || m == "ldnp" || m == "stnp" || m == "ldpsw" || m == "ldxp" ||
                    m == "ldaxp" || m == "stxp" || m == "stlxp";
  // The transferred register: the first register operand, after the status
  // register of a store-exclusive (stxr w1, x2, [x0]).
  unsigned reg = ARM64_REG_INVALID;
  const bool exclusive_store = starts_with(m, "stx") || starts_with(m, "stlx");
  std::uint8_t first = exclusive_store ? 1 : 0;
  if (first < detail.op_count && detail.operands[first].type == ARM64_OP_REG) reg = detail.operands[first].reg;
  const std::uint8_t count = static_cast<std::uint8_t>(register_pieces(reg) * (pair ? 2 : 1));
  if (exclusive_store) {
    // QEMU runs a store-exclusive as a compare-and-exchange: Unicorn reports a
    // read of the location, then the write (observed on stxr/stlxr in glibc's
    // locks). Pairs go through a 128-bit helper: not counted.
    if (pair) return false;
    reads = writes = count;
    return true;
  }
  (is_load ? reads : writes) = count;
  return true;
}

void aarch64_address_registers(const cs_insn& insn, std::vector<std::uint16_t>& base, std::vector<std::uint16_t>& index) {
  if (!insn.detail) return;
  const cs_arm64& detail = insn.detail->arm64;
  for (std::uint8_t i = 0; i < detail.op_count; ++i) {
    const cs_arm64_op& op = detail.operands[i];
    if (op.type != ARM64_OP_MEM) continue;
    add_once(base, aarch64_register_index_for_capstone(op.mem.base));
    add_once(index, aarch64_register_index_for_capstone(op.mem.index));
  }
}

// arch/arm64/include/uapi/asm/fcntl.h against asm-generic/fcntl.h (octal).
constexpr FlagValue kOpenFlags[] = {
    {040000, 0200000},   // O_DIRECTORY
    {0100000, 0400000},  // O_NOFOLLOW
    {0200000, 040000},   // O_DIRECT
    {0400000, 0100000},  // O_LARGEFILE
};

constexpr std::uint16_t kEmAarch64 = 183;

// The names the Tenet forks that read arm64 traces give (x0..x28, fp, lr,
// sp, pc; upstream Tenet defines no arm64).
constexpr TenetRegister kTenetRegisters[] = {
    {"x0", "x0"},   {"x1", "x1"},   {"x2", "x2"},   {"x3", "x3"},   {"x4", "x4"},   {"x5", "x5"},
    {"x6", "x6"},   {"x7", "x7"},   {"x8", "x8"},   {"x9", "x9"},   {"x10", "x10"}, {"x11", "x11"},
    {"x12", "x12"}, {"x13", "x13"}, {"x14", "x14"}, {"x15", "x15"}, {"x16", "x16"}, {"x17", "x17"},
    {"x18", "x18"}, {"x19", "x19"}, {"x20", "x20"}, {"x21", "x21"}, {"x22", "x22"}, {"x23", "x23"},
    {"x24", "x24"}, {"x25", "x25"}, {"x26", "x26"}, {"x27", "x27"}, {"x28", "x28"}, {"fp", "x29"},
    {"lr", "x30"},  {"sp", "sp"},   {"pc", "pc"}};

// How gdb sees it (gdb manual, "AArch64 Features"): the core and FP/SIMD
// features; cpsr shows the nzcv flags (what user code can see of PSTATE), the
// vector registers as 128-bit integers.
constexpr GdbRegister kGdbCore[] = {
    {"x0", 64, "int", "x0"},      {"x1", 64, "int", "x1"},
    {"x2", 64, "int", "x2"},      {"x3", 64, "int", "x3"},
    {"x4", 64, "int", "x4"},      {"x5", 64, "int", "x5"},
    {"x6", 64, "int", "x6"},      {"x7", 64, "int", "x7"},
    {"x8", 64, "int", "x8"},      {"x9", 64, "int", "x9"},
    {"x10", 64, "int", "x10"},    {"x11", 64, "int", "x11"},
    {"x12", 64, "int", "x12"},    {"x13", 64, "int", "x13"},
    {"x14", 64, "int", "x14"},    {"x15", 64, "int", "x15"},
    {"x16", 64, "int", "x16"},    {"x17", 64, "int", "x17"},
    {"x18", 64, "int", "x18"},    {"x19", 64, "int", "x19"},
    {"x20", 64, "int", "x20"},    {"x21", 64, "int", "x21"},
    {"x22", 64, "int", "x22"},    {"x23", 64, "int", "x23"},
    {"x24", 64, "int", "x24"},    {"x25", 64, "int", "x25"},
    {"x26", 64, "int", "x26"},    {"x27", 64, "int", "x27"},
    {"x28", 64, "int", "x28"},    {"x29", 64, "int", "x29"},
    {"x30", 64, "int", "x30"},    {"sp", 64, "data_ptr", "sp"},
    {"pc", 64, "code_ptr", "pc"}, {"cpsr", 32, "int", "nzcv"}};
constexpr GdbRegister kGdbFpu[] = {
    {"v0", 128, "uint128", "v0"},   {"v1", 128, "uint128", "v1"},
    {"v2", 128, "uint128", "v2"},   {"v3", 128, "uint128", "v3"},
    {"v4", 128, "uint128", "v4"},   {"v5", 128, "uint128", "v5"},
    {"v6", 128, "uint128", "v6"},   {"v7", 128, "uint128", "v7"},
    {"v8", 128, "uint128", "v8"},   {"v9", 128, "uint128", "v9"},
    {"v10", 128, "uint128", "v10"}, {"v11", 128, "uint128", "v11"},
    {"v12", 128, "uint128", "v12"}, {"v13", 128, "uint128", "v13"},
    {"v14", 128, "uint128", "v14"}, {"v15", 128, "uint128", "v15"},
    {"v16", 128, "uint128", "v16"}, {"v17", 128, "uint128", "v17"},
    {"v18", 128, "uint128", "v18"}, {"v19", 128, "uint128", "v19"},
    {"v20", 128, "uint128", "v20"}, {"v21", 128, "uint128", "v21"},
    {"v22", 128, "uint128", "v22"}, {"v23", 128, "uint128", "v23"},
    {"v24", 128, "uint128", "v24"}, {"v25", 128, "uint128", "v25"},
    {"v26", 128, "uint128", "v26"}, {"v27", 128, "uint128", "v27"},
    {"v28", 128, "uint128", "v28"}, {"v29", 128, "uint128", "v29"},
    {"v30", 128, "uint128", "v30"}, {"v31", 128, "uint128", "v31"},
    {"fpsr", 32, "int", "fpsr"},    {"fpcr", 32, "int", "fpcr"}};
constexpr GdbFeature kGdbFeatures[] = {
    {"org.gnu.gdb.aarch64.core", "", kGdbCore},
    {"org.gnu.gdb.aarch64.fpu", "", kGdbFpu}};
constexpr GdbTarget kGdbTarget{"aarch64", kGdbFeatures};

}  // namespace

const ArchInfo& aarch64_arch() {
  // Unicorn's and Capstone's view of it (arch/arch_engine.h).
  static constexpr ArchEngine kEngine{
      .unicorn_arch = UC_ARCH_ARM64,
      .unicorn_mode = UC_MODE_ARM,
      .capstone_arch = CS_ARCH_ARM64,
      .capstone_mode = CS_MODE_ARM,
      .make_guest_cpu = &make_aarch64_guest_cpu,
      .register_index_for_capstone = &aarch64_register_index_for_capstone,
      .add_unlisted_writes = &aarch64_add_unlisted_writes,
      .count_memory_accesses = &aarch64_count_memory_accesses,
      .address_registers = &aarch64_address_registers,
  };
  static const SignalTrampoline kTrampolines[] = {{kSigreturnTrampoline, aarch64_signal_saved_registers()}};
  static const ArchInfo kInfo{
      .name = "aarch64",
      .elf_machine = kEmAarch64,
      .elf_64bit = true,
      .little_endian = true,
      .platform = "aarch64",
      .uname_machine = "aarch64",
      .registers = kRegisters,
      .pc_reg = UC_ARM64_REG_PC,
      .sp_reg = UC_ARM64_REG_SP,
      .fp_reg = UC_ARM64_REG_X29,
      .syscall_abi = {.number_reg = UC_ARM64_REG_X8,
                      .arg_regs = {UC_ARM64_REG_X0, UC_ARM64_REG_X1, UC_ARM64_REG_X2, UC_ARM64_REG_X3,
                                   UC_ARM64_REG_X4, UC_ARM64_REG_X5},
                      .return_reg = UC_ARM64_REG_X0,
                      .trap_instruction = "svc #0",
                      .trap_length = 4,
                      .clone_tls_before_child_tid = true},
      .signal_abi = {.sigreturn_trampoline = kSigreturnTrampoline,
                     .min_signal_stack = 5120,
                     .trampolines = kTrampolines},
      .open_flags = kOpenFlags,
      .encode_stat = &generic_encode_stat,
      // Linux arm64 with 4 KiB pages and 48-bit VA (Debian's kernel), randomisation
      // off: STACK_TOP = TASK_SIZE = 1 << 48; mmap_base = STACK_TOP - 128 MiB gap;
      // ELF_ET_DYN_BASE = 2/3 of TASK_SIZE, aligned down to the 64 KiB p_align of
      // Debian's arm64 binaries as binfmt_elf does since 5.10 (0xaaaaaaaa0000).
      .layout = {.stack_top = 0x1000000000000,
                 .stack_size = 8ull << 20,
                 .mmap_top = 0xfffff8000000,
                 .et_dyn_base = 0xaaaaaaaa0000,
                 .lowest_mmap = 0x10000},
      // UCIR: usercorn's name "arm64"; bap-frames: aarch64 78, machine 0
      // (docs/formats/bap-frames.md); binary trace: the reference library
      // (tetrane/rvnbintrace) writes and reads the 'arm1' magic, but neither
      // its format description (its trace-format.md, which
      // defines "amd64 version 1" only) nor its code names an aarch64 register,
      // mandatory register or static register, so no description: the writer
      // and the reader refuse with this reason.
      .format_ids = {.ucir_arch = "arm64", .bap_architecture = 78, .bap_machine = 0,
                     .bintrace_magic = 0x316d7261, .bintrace = nullptr,
                     .bintrace_missing = "binary trace v1.0 defines no aarch64 register set: the specification "
                                         "describes only amd64 ('x641'); the reference rvnbintrace knows the "
                                         "'arm1' magic but names no register for it",
                     .tenet_registers = kTenetRegisters},
      .gdb = &kGdbTarget,
      .syscall_id = &generic_syscall_id,
      .engine = &kEngine,
  };
  return kInfo;
}

}  // namespace tracecorn::arch
