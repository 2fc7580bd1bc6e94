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
// Capstone 4 (Debian 12) has no RISC-V: a small RV64GC decoder here
// (decode_riscv64, ArchInfo::decode_without_capstone) gives the recorder the
// instruction boundaries, written registers and memory accesses instead.
#include <csignal>
#include <ctime>
#include <initializer_list>
#include <utility>

#include "arch/arch.h"
#include "arch/interrupt_trap_cpu.h"
#include "arch/signal_frames.h"
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
constexpr std::uint32_t kCsrCycle = 0xc00, kCsrInstret = 0xc02;  // the user counter CSRs: cycle, time, instret

// csrrs rd, cycle|time|instret, zero: what rdcycle, rdtime and rdinstret
// assemble to (`word` little endian, as riscv64 stores it).
bool is_counter_read(std::uint32_t word) {
  const std::uint32_t csr = word >> 20;
  return (word & 0x7f) == 0x73 && ((word >> 12) & 7) == 2 && ((word >> 15) & 31) == 0 && csr >= kCsrCycle &&
         csr <= kCsrInstret;
}

// ArchInfo::reads_host_clock: the counter reads (the CPU layer gives them the host's clock).
bool reads_counter_csr(std::span<const std::uint8_t> bytes) {
  return bytes.size() == 4 &&
         is_counter_read(bytes[0] | bytes[1] << 8 | bytes[2] << 16 | static_cast<std::uint32_t>(bytes[3]) << 24);
}
constexpr std::uint32_t kInstructionMisaligned = 0, kInstructionAccessFault = 1, kIllegalInstruction = 2,
                        kBreakpoint = 3, kLoadMisaligned = 4, kStoreMisaligned = 6, kUserEcall = 8,
                        kSupervisorEcall = 9, kMachineEcall = 11;

// AT_HWCAP: one bit per single-letter ISA extension, bit = letter - 'a'
// (arch/riscv/include/asm/hwcap.h): I M A F D C, what Unicorn's default CPU runs.
constexpr std::uint64_t kHwcap = (1u << ('i' - 'a')) | (1u << ('m' - 'a')) | (1u << ('a' - 'a')) |
                                 (1u << ('f' - 'a')) | (1u << ('d' - 'a')) | (1u << ('c' - 'a'));
constexpr std::uint64_t kMstatusFsDirty = 0x6000;  // mstatus.FS = 3
constexpr std::uint64_t kEcallLength = 4;

bool decode_riscv64(std::span<const std::uint8_t> bytes, EncodedInstruction& out);  // below

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
  // Unicorn 2.0.1 reports an illegal instruction with the pc 4 bytes past its
  // start, whatever its length (seen with a 32-bit and a 16-bit all-zero
  // encoding and 0xffffffff); Linux's sepc is the instruction itself.
  std::uint64_t exception_pc(std::uint64_t reported_pc) const override {
    return last_fault_ == kIllegalInstruction ? reported_pc - 4 : reported_pc;
  }

  // The counter CSRs read with csrrs rd, cycle|time|instret, zero (what
  // rdcycle, rdtime and rdinstret assemble to; Go's runtime reads time):
  // Unicorn 2.0.1 refuses them in user mode; Linux 6.1 (Debian 12's) lets a
  // program read all three.
  // All three read the host's monotonic clock in ticks of 100 ns (QEMU virt's
  // 10 MHz timebase), as qemu-user gives the host's ticks: an input, like
  // x86's time stamp counter.
  bool emulate_refused_instruction(std::uint32_t number) override {
    if (number != kIllegalInstruction) return false;
    const std::uint64_t at = pc() - 4;  // (Unicorn's pc is 4 bytes past it: see exception_pc)
    std::uint8_t bytes[4] = {};
    if (uc_mem_read(engine_, at, bytes, sizeof bytes) != UC_ERR_OK) return false;
    const std::uint32_t word = bytes[0] | bytes[1] << 8 | bytes[2] << 16 | static_cast<std::uint32_t>(bytes[3]) << 24;
    if (!is_counter_read(word)) return false;
    const std::uint32_t rd = (word >> 7) & 31;
    timespec now{};
    ::clock_gettime(CLOCK_MONOTONIC, &now);
    const std::uint64_t ticks = static_cast<std::uint64_t>(now.tv_sec) * 10'000'000 + static_cast<std::uint64_t>(now.tv_nsec) / 100;
    if (rd) uc_reg_write(engine_, UC_RISCV_REG_X0 + static_cast<int>(rd), &ticks);
    const std::uint64_t next = at + 4;
    uc_reg_write(engine_, UC_RISCV_REG_PC, &next);
    return true;
  }

  bool has_signal_frames() const override { return true; }
  std::uint64_t syscall_return_pc() const override { return pc(); }
  SignalFrame build_signal_frame(const SignalFrameRequest& request) const override {
    return riscv64_build_signal_frame(engine_, request);
  }
  void enter_signal_handler(const SignalFrameRequest& request, const SignalFrame& frame) override {
    riscv64_enter_signal_handler(engine_, request, frame);
  }
  std::optional<SignalReturn> return_from_signal(bool) override { return riscv64_return_from_signal(engine_); }

  // Decodes the block (decode_riscv64) and returns the first instruction whose
  // memory operand (base register + offset, with the registers as QEMU restored
  // them for the faulting instruction) is `fault_address`; `reported_pc` when
  // none is, or when the block cannot be read (a fetch fault).
  std::uint64_t locate_faulting_instruction(std::uint64_t reported_pc, std::uint64_t fault_address) const override {
    constexpr std::size_t kMaxInstructions = 64;
    std::array<std::uint8_t, kMaxInstructions * 4> code{};
    std::size_t size = code.size();
    while (size >= 2 && uc_mem_read(engine_, reported_pc, code.data(), size) != UC_ERR_OK) size /= 2;
    if (size < 2) return reported_pc;
    std::size_t offset = 0;
    for (std::size_t count = 0; count < kMaxInstructions && offset < size; ++count) {
      EncodedInstruction insn;
      if (!decode_riscv64(std::span(code).subspan(offset, size - offset), insn)) break;
      if (insn.base_register >= 0 && (insn.memory_reads || insn.memory_writes)) {
        std::uint64_t base = 0;
        uc_reg_read(engine_, kRegisters[insn.base_register].uc_id, &base);
        if (base + static_cast<std::uint64_t>(static_cast<std::int64_t>(insn.memory_offset)) == fault_address)
          return reported_pc + offset;
      }
      offset += insn.size;
    }
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
    last_fault_ = number;
    switch (number) {
      case kIllegalInstruction: return SIGILL;
      case kBreakpoint: return SIGTRAP;
      case kInstructionMisaligned: case kLoadMisaligned: case kStoreMisaligned: return SIGBUS;
      case kInstructionAccessFault: default: return SIGSEGV;
    }
  }

  mutable std::uint32_t last_fault_ = 0;  // the exception fault_signal() classified last
};

// The vDSO's __vdso_rt_sigreturn (arch/riscv/kernel/vdso/rt_sigreturn.S):
// li a7, 139 (__NR_rt_sigreturn); ecall. riscv's struct sigaction has no
// sa_restorer, so every handler returns here.
constexpr std::uint8_t kSigreturnTrampoline[] = {0x93, 0x08, 0xb0, 0x08, 0x73, 0x00, 0x00, 0x00};

Expected<std::unique_ptr<GuestCpu>> make_riscv64_guest_cpu(uc_engine* engine) {
  auto cpu = std::make_unique<Riscv64GuestCpu>(engine);
  if (auto status = cpu->init(); !status) return status.error();
  return std::unique_ptr<GuestCpu>(std::move(cpu));
}

// Capstone has no RISC-V: its hooks answer "unknown"; decode_riscv64 below
// stands in for it.
int riscv64_register_index_for_capstone(unsigned) { return -1; }
void riscv64_add_unlisted_writes(const cs_insn&, std::vector<std::uint16_t>&) {}
bool riscv64_count_memory_accesses(const cs_insn&, std::uint8_t& reads, std::uint8_t& writes) {
  reads = writes = 0;
  return false;
}
void riscv64_address_registers(const cs_insn&, std::vector<std::uint16_t>&, std::vector<std::uint16_t>&) {}

// Positions in kRegisters: x0-x31 at 0-31, pc, f0-f31, fcsr.
constexpr std::uint16_t kFirstF = 33, kFcsrIndex = 65, kSpIndex = 2, kRaIndex = 1;
static_assert(kRegisters[kFirstF].uc_id == UC_RISCV_REG_F0 && kRegisters[kFirstF + 31].uc_id == UC_RISCV_REG_F31);
static_assert(kRegisters[kFcsrIndex].uc_id == UC_RISCV_REG_FCSR && kRegisters[kSpIndex].uc_id == UC_RISCV_REG_SP);
static_assert(kRegisters[kRaIndex].uc_id == UC_RISCV_REG_RA && kRegisters[31].uc_id == UC_RISCV_REG_X31);

// The RV64GC decoder, from "The RISC-V Instruction Set Manual, Volume I:
// Unprivileged ISA" (20191213): instruction length from the low bits (1.5: xx11
// with bits 4:2 != 111 is 32 bits, any other low pair 16 bits; longer encodings
// are not RV64GC), the major opcode map (chapter 24, table 24.1), the RVC
// quadrants (chapter 16, tables 16.4-16.6). It gives what the recorder and
// `why` need: the registers an instruction reads (rs1, rs2, rs3 in their
// files, sp for the stack-relative RVC forms; x0, the pc and the rounding mode
// left out) and can write (rd of the integer or FP file; fcsr
// for the FP operations that may raise exception flags and the CSR accesses of
// fflags/frm/fcsr; c.jalr's ra), its memory accesses (one per load, store, LR;
// a read and a write per AMO, as Unicorn reports them; sc varies: none when it
// fails, a read and a write when it succeeds) and the base register of its
// memory operand.
class Riscv64Decoding {
 public:
  explicit Riscv64Decoding(EncodedInstruction& out) : out_(out) { out_ = EncodedInstruction{}; }

  bool decode(std::span<const std::uint8_t> bytes) {
    if (bytes.size() < 2) return false;
    const std::uint32_t low = static_cast<std::uint32_t>(bytes[0] | bytes[1] << 8);
    if ((low & 3) != 3) return decode_compressed(low);
    if ((low & 0x1c) == 0x1c || bytes.size() < 4) return false;  // 48 bits or longer: not RV64GC
    const std::uint32_t word = low | static_cast<std::uint32_t>(bytes[2]) << 16 | static_cast<std::uint32_t>(bytes[3]) << 24;
    return decode_word(word);
  }

 private:
  void write_x(std::uint32_t number) {
    if (number != 0) write(static_cast<std::uint16_t>(number));
  }
  void write_f(std::uint32_t number) { write(static_cast<std::uint16_t>(kFirstF + number)); }
  void write(std::uint16_t index) { out_.written[out_.written_count++] = index; }
  void read_x(std::uint32_t number) {
    if (number != 0) out_.read[out_.read_count++] = static_cast<std::uint16_t>(number);
  }
  void read_f(std::uint32_t number) { out_.read[out_.read_count++] = static_cast<std::uint16_t>(kFirstF + number); }
  void access(std::uint32_t base, std::uint8_t reads, std::uint8_t writes, std::int32_t offset = 0) {
    out_.base_register = static_cast<std::int16_t>(base);
    out_.memory_offset = offset;
    out_.memory_reads = reads;
    out_.memory_writes = writes;
  }
  bool done(std::uint8_t size) {
    out_.size = size;
    return true;
  }

  // I-type imm[11:0] = inst[31:20]; S-type imm[11:5] = inst[31:25], imm[4:0] = inst[11:7]; sign-extended.
  static std::int32_t i_immediate(std::uint32_t word) { return static_cast<std::int32_t>(word) >> 20; }
  static std::int32_t s_immediate(std::uint32_t word) {
    return static_cast<std::int32_t>(word & 0xfe000000) >> 20 | static_cast<std::int32_t>(word >> 7 & 31);
  }
  // The RVC offsets (zero-extended, scaled): bit `from` of the instruction is bit `to` of the offset.
  static std::int32_t bits(std::uint32_t half, std::initializer_list<std::pair<int, int>> from_to) {
    std::int32_t value = 0;
    for (const auto& [from, to] : from_to) value |= static_cast<std::int32_t>(half >> from & 1) << to;
    return value;
  }
  // c.ld c.sd c.fld c.fsd: uimm[5:3] = 12:10, uimm[7:6] = 6:5. c.lw c.sw: uimm[5:3] = 12:10, [2] = 6, [6] = 5.
  static std::int32_t cl_double(std::uint32_t h) { return bits(h, {{10, 3}, {11, 4}, {12, 5}, {5, 6}, {6, 7}}); }
  static std::int32_t cl_word(std::uint32_t h) { return bits(h, {{10, 3}, {11, 4}, {12, 5}, {6, 2}, {5, 6}}); }
  // c.ldsp c.fldsp: uimm[5] = 12, [4:3] = 6:5, [8:6] = 4:2. c.lwsp: [5] = 12, [4:2] = 6:4, [7:6] = 3:2.
  static std::int32_t ci_double(std::uint32_t h) {
    return bits(h, {{12, 5}, {5, 3}, {6, 4}, {2, 6}, {3, 7}, {4, 8}});
  }
  static std::int32_t ci_word(std::uint32_t h) { return bits(h, {{12, 5}, {4, 2}, {5, 3}, {6, 4}, {2, 6}, {3, 7}}); }
  // c.sdsp c.fsdsp: uimm[5:3] = 12:10, [8:6] = 9:7. c.swsp: uimm[5:2] = 12:9, [7:6] = 8:7.
  static std::int32_t css_double(std::uint32_t h) {
    return bits(h, {{10, 3}, {11, 4}, {12, 5}, {7, 6}, {8, 7}, {9, 8}});
  }
  static std::int32_t css_word(std::uint32_t h) { return bits(h, {{9, 2}, {10, 3}, {11, 4}, {12, 5}, {7, 6}, {8, 7}}); }

  bool decode_word(std::uint32_t word) {
    const std::uint32_t rd = word >> 7 & 31, funct3 = word >> 12 & 7, rs1 = word >> 15 & 31, rs2 = word >> 20 & 31,
                        funct5 = word >> 27;
    switch (word & 0x7f) {
      case 0x37: case 0x17: case 0x6f: write_x(rd); return done(4);  // lui auipc jal: no register read
      case 0x67: case 0x13: case 0x1b:                               // jalr op-imm op-imm-32
        read_x(rs1);
        write_x(rd);
        return done(4);
      case 0x33: case 0x3b:  // op op-32
        read_x(rs1);
        read_x(rs2);
        write_x(rd);
        return done(4);
      case 0x63: read_x(rs1); read_x(rs2); return done(4);                            // branches
      case 0x0f: return done(4);                                                      // fence, fence.i
      case 0x03: read_x(rs1); write_x(rd); access(rs1, 1, 0, i_immediate(word)); return done(4);  // loads
      case 0x07: read_x(rs1); write_f(rd); access(rs1, 1, 0, i_immediate(word)); return done(4);  // fp loads
      case 0x23: case 0x27:  // stores, fp stores
        read_x(rs1);
        if ((word & 0x7f) == 0x23) read_x(rs2);
        else read_f(rs2);
        access(rs1, 0, 1, s_immediate(word));
        return done(4);
      case 0x2f:  // A: lr, sc, amo*
        if (funct3 != 2 && funct3 != 3) return false;
        read_x(rs1);
        if (funct5 != 0x02) read_x(rs2);  // lr has no rs2
        write_x(rd);
        if (funct5 == 0x02) {
          access(rs1, 1, 0);
        } else if (funct5 == 0x03) {
          access(rs1, 1, 1);
          out_.memory_count_fixed = false;
        } else {
          access(rs1, 1, 1);
        }
        return done(4);
      case 0x43: case 0x47: case 0x4b: case 0x4f:  // fmadd fmsub fnmsub fnmadd
        read_f(rs1);
        read_f(rs2);
        read_f(word >> 27);  // rs3
        write_f(rd);
        write(kFcsrIndex);
        return done(4);
      case 0x53: return decode_op_fp(rd, rs1, rs2, funct5);
      case 0x73: {  // system: ecall, ebreak (no writes); csr* write rd and the csr
        if (funct3 == 0 || funct3 == 4) return funct3 == 0 ? done(4) : false;
        if (funct3 < 4) read_x(rs1);  // csrrw csrrs csrrc (the i forms take an immediate)
        write_x(rd);
        const std::uint32_t csr = word >> 20;
        if (csr >= 1 && csr <= 3) {  // fflags, frm, fcsr: all in Unicorn's fcsr, which rd gets
          out_.read[out_.read_count++] = kFcsrIndex;
          write(kFcsrIndex);
        }
        return done(4);
      }
      default: return false;
    }
  }

  // OP-FP by funct5: which file rd and rs1 are in, whether rs2 is read, whether fcsr's flags change.
  bool decode_op_fp(std::uint32_t rd, std::uint32_t rs1, std::uint32_t rs2, std::uint32_t funct5) {
    switch (funct5) {
      case 0x04: read_f(rs1); read_f(rs2); write_f(rd); return done(4);  // fsgnj*: no flags
      case 0x1c: read_f(rs1); write_x(rd); return done(4);               // fmv.x.*, fclass: no flags
      case 0x1e: read_x(rs1); write_f(rd); return done(4);               // fmv.*.x: no flags
      case 0x14: read_f(rs1); read_f(rs2); write_x(rd); break;           // feq flt fle
      case 0x18: read_f(rs1); write_x(rd); break;                        // fcvt to integer
      case 0x00: case 0x01: case 0x02: case 0x03: case 0x05:             // fadd fsub fmul fdiv fmin/fmax
        read_f(rs1);
        read_f(rs2);
        write_f(rd);
        break;
      case 0x0b: case 0x08: read_f(rs1); write_f(rd); break;  // fsqrt; fcvt.s.d/d.s
      case 0x1a: read_x(rs1); write_f(rd); break;             // fcvt from integer
      default: return false;
    }
    write(kFcsrIndex);
    return done(4);
  }

  bool decode_compressed(std::uint32_t half) {
    if (half == 0) return false;  // defined illegal
    const std::uint32_t funct3 = half >> 13, rd = half >> 7 & 31, rd_prime = 8 + (half >> 2 & 7),
                        rs1_prime = 8 + (half >> 7 & 7), rs2 = half >> 2 & 31;
    const std::uint32_t rs2_prime = rd_prime;  // CS and CA put rs2' where CIW and CL put rd'
    switch ((half & 3) << 3 | funct3) {
      // Quadrant 0.
      case 000: read_x(kSpIndex); write_x(rd_prime); return done(2);  // c.addi4spn
      case 001: case 002: case 003:                                   // c.fld c.lw c.ld
        read_x(rs1_prime);
        if (funct3 == 1) write_f(rd_prime);
        else write_x(rd_prime);
        access(rs1_prime, 1, 0, funct3 == 2 ? cl_word(half) : cl_double(half));
        return done(2);
      case 005: case 006: case 007:  // c.fsd c.sw c.sd
        read_x(rs1_prime);
        if (funct3 == 5) read_f(rs2_prime);
        else read_x(rs2_prime);
        access(rs1_prime, 0, 1, funct3 == 6 ? cl_word(half) : cl_double(half));
        return done(2);
      // Quadrant 1.
      case 010: case 011: read_x(rd); write_x(rd); return done(2);  // c.addi c.addiw
      case 012: write_x(rd); return done(2);                        // c.li
      case 013:                                                     // c.addi16sp (rd = sp), c.lui
        if (rd == kSpIndex) read_x(kSpIndex);
        write_x(rd);
        return done(2);
      case 014:  // c.srli c.srai c.andi (an immediate), c.sub .. c.addw (bits 11:10 = 3: rs2')
        read_x(rs1_prime);
        if ((half >> 10 & 3) == 3) read_x(8 + (half >> 2 & 7));
        write_x(rs1_prime);
        return done(2);
      case 015: return done(2);                               // c.j
      case 016: case 017: read_x(rs1_prime); return done(2);  // c.beqz c.bnez
      // Quadrant 2.
      case 020: read_x(rd); write_x(rd); return done(2);  // c.slli
      case 021: case 022: case 023:                       // c.fldsp c.lwsp c.ldsp
        read_x(kSpIndex);
        if (funct3 == 1) write_f(rd);
        else write_x(rd);
        access(kSpIndex, 1, 0, funct3 == 2 ? ci_word(half) : ci_double(half));
        return done(2);
      case 024:
        if (rs2 != 0) {  // c.mv (rd = rs2), c.add (rd += rs2)
          if (half >> 12 & 1) read_x(rd);
          read_x(rs2);
          write_x(rd);
        } else if (half >> 12 & 1) {  // c.jalr (c.ebreak when rd = 0)
          if (rd != 0) {
            read_x(rd);
            write(kRaIndex);
          }
        } else if (rd == 0) {
          return false;  // c.jr x0: reserved
        } else {
          read_x(rd);  // c.jr
        }
        return done(2);
      case 025: case 026: case 027:  // c.fsdsp c.swsp c.sdsp
        read_x(kSpIndex);
        if (funct3 == 5) read_f(rs2);
        else read_x(rs2);
        access(kSpIndex, 0, 1, funct3 == 6 ? css_word(half) : css_double(half));
        return done(2);
      default: return false;  // 004: reserved
    }
  }

  EncodedInstruction& out_;
};

bool decode_riscv64(std::span<const std::uint8_t> bytes, EncodedInstruction& out) {
  if (Riscv64Decoding(out).decode(bytes)) return true;
  out = EncodedInstruction{};
  return false;
}

// The generic table without renameat (38): riscv does not define
// __ARCH_WANT_RENAMEAT, so its kernel has only renameat2; plus riscv's own
// riscv_flush_icache (__NR_arch_specific_syscall + 15) (checked against the
// cross compiler's <asm/unistd.h> by tests/arch/arch_test.cpp).
SyscallId riscv64_syscall_id(std::uint64_t number) {
  constexpr std::uint64_t kRenameat = 38, kRiscvFlushIcache = 244 + 15;
  if (number == kRiscvFlushIcache) return SyscallId::riscv_flush_icache;
  return number == kRenameat ? SyscallId::unknown : generic_syscall_id(number);
}

constexpr std::uint16_t kEmRiscv = 243;

// RV64GC as LLVM 14 names it (its RISCV target: triple, feature strings).
constexpr LlvmTarget kLlvmTarget = {.target = "RISCV", .triple = "riscv64-unknown-linux-gnu", .features = "+m,+a,+f,+d,+c"};

// How gdb sees it (gdb manual, "RISC-V Features"): the integer registers, the
// pc, and the double FP registers with the FP CSRs (gdb requires FP registers
// as wide as the ELF's float ABI); fflags and frm are fcsr's fields, not kept
// apart.
constexpr GdbRegister kGdbCpu[] = {
    {"zero", 64, "int", "zero"},  {"ra", 64, "code_ptr", "ra"},
    {"sp", 64, "data_ptr", "sp"}, {"gp", 64, "data_ptr", "gp"},
    {"tp", 64, "data_ptr", "tp"}, {"t0", 64, "int", "t0"},
    {"t1", 64, "int", "t1"},      {"t2", 64, "int", "t2"},
    {"fp", 64, "data_ptr", "s0"}, {"s1", 64, "int", "s1"},
    {"a0", 64, "int", "a0"},      {"a1", 64, "int", "a1"},
    {"a2", 64, "int", "a2"},      {"a3", 64, "int", "a3"},
    {"a4", 64, "int", "a4"},      {"a5", 64, "int", "a5"},
    {"a6", 64, "int", "a6"},      {"a7", 64, "int", "a7"},
    {"s2", 64, "int", "s2"},      {"s3", 64, "int", "s3"},
    {"s4", 64, "int", "s4"},      {"s5", 64, "int", "s5"},
    {"s6", 64, "int", "s6"},      {"s7", 64, "int", "s7"},
    {"s8", 64, "int", "s8"},      {"s9", 64, "int", "s9"},
    {"s10", 64, "int", "s10"},    {"s11", 64, "int", "s11"},
    {"t3", 64, "int", "t3"},      {"t4", 64, "int", "t4"},
    {"t5", 64, "int", "t5"},      {"t6", 64, "int", "t6"},
    {"pc", 64, "code_ptr", "pc"}};
constexpr GdbRegister kGdbFpu[] = {
    {"ft0", 64, "ieee_double", "ft0"},   {"ft1", 64, "ieee_double", "ft1"},
    {"ft2", 64, "ieee_double", "ft2"},   {"ft3", 64, "ieee_double", "ft3"},
    {"ft4", 64, "ieee_double", "ft4"},   {"ft5", 64, "ieee_double", "ft5"},
    {"ft6", 64, "ieee_double", "ft6"},   {"ft7", 64, "ieee_double", "ft7"},
    {"fs0", 64, "ieee_double", "fs0"},   {"fs1", 64, "ieee_double", "fs1"},
    {"fa0", 64, "ieee_double", "fa0"},   {"fa1", 64, "ieee_double", "fa1"},
    {"fa2", 64, "ieee_double", "fa2"},   {"fa3", 64, "ieee_double", "fa3"},
    {"fa4", 64, "ieee_double", "fa4"},   {"fa5", 64, "ieee_double", "fa5"},
    {"fa6", 64, "ieee_double", "fa6"},   {"fa7", 64, "ieee_double", "fa7"},
    {"fs2", 64, "ieee_double", "fs2"},   {"fs3", 64, "ieee_double", "fs3"},
    {"fs4", 64, "ieee_double", "fs4"},   {"fs5", 64, "ieee_double", "fs5"},
    {"fs6", 64, "ieee_double", "fs6"},   {"fs7", 64, "ieee_double", "fs7"},
    {"fs8", 64, "ieee_double", "fs8"},   {"fs9", 64, "ieee_double", "fs9"},
    {"fs10", 64, "ieee_double", "fs10"}, {"fs11", 64, "ieee_double", "fs11"},
    {"ft8", 64, "ieee_double", "ft8"},   {"ft9", 64, "ieee_double", "ft9"},
    {"ft10", 64, "ieee_double", "ft10"}, {"ft11", 64, "ieee_double", "ft11"},
    {"fflags", 32, "int", ""},           {"frm", 32, "int", ""},
    {"fcsr", 32, "int", "fcsr"}};
constexpr GdbFeature kGdbFeatures[] = {{"org.gnu.gdb.riscv.cpu", "", kGdbCpu},
                                       {"org.gnu.gdb.riscv.fpu", "", kGdbFpu}};
constexpr GdbTarget kGdbTarget{"riscv:rv64", kGdbFeatures};

}  // namespace

const ArchInfo& riscv64_arch() {
  // Unicorn's and Capstone's view of it (arch/arch_engine.h).
  static constexpr ArchEngine kEngine{
      .unicorn_arch = UC_ARCH_RISCV,
      .unicorn_mode = UC_MODE_RISCV64,
      .capstone_arch = CS_ARCH_MAX,  // no RISC-V in Capstone 4: decode_riscv64 stands in
      .capstone_mode = CS_MODE_LITTLE_ENDIAN,
      .make_guest_cpu = &make_riscv64_guest_cpu,
      .register_index_for_capstone = &riscv64_register_index_for_capstone,
      .add_unlisted_writes = &riscv64_add_unlisted_writes,
      .count_memory_accesses = &riscv64_count_memory_accesses,
      .address_registers = &riscv64_address_registers,
  };
  static const SignalTrampoline kTrampolines[] = {{kSigreturnTrampoline, riscv64_signal_saved_registers()}};
  static const ArchInfo kInfo{
      .name = "riscv64",
      .elf_machine = kEmRiscv,
      .elf_64bit = true,
      .little_endian = true,
      .platform = "",  // arch/riscv defines no ELF_PLATFORM: no AT_PLATFORM
      .uname_machine = "riscv64",
      .registers = kRegisters,
      .pc_reg = UC_RISCV_REG_PC,
      .sp_reg = UC_RISCV_REG_SP,
      .fp_reg = UC_RISCV_REG_S0,
      // The psABI numbers no pc and uses all of 0-63, the unwinder's columns:
      // the pc borrows ft11's (63), a caller-saved temporary no CFI describes
      // (compilers record saves of callee-saved registers only).
      .unwind_pc_column = 63,
      .syscall_abi = {.number_reg = UC_RISCV_REG_A7,
                      .arg_regs = {UC_RISCV_REG_A0, UC_RISCV_REG_A1, UC_RISCV_REG_A2, UC_RISCV_REG_A3,
                                   UC_RISCV_REG_A4, UC_RISCV_REG_A5},
                      .return_reg = UC_RISCV_REG_A0,
                      .trap_instruction = "ecall",
                      .trap_length = 4,
                      .clone_tls_before_child_tid = true},
      .signal_abi = {.has_sa_restorer = false,
                     .sigreturn_trampoline = kSigreturnTrampoline,
                     .trampolines = kTrampolines},
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
      // usercorn has no RISC-V, so no UCIR reader could disagree: tracecorn's
      // own name (formats/ucir/ucir_layout.h). bap-frames has no RISC-V id,
      // binary trace no machine: both refuse.
      .format_ids = {.ucir_arch = "riscv64", .bap_architecture = 0, .bap_machine = 0, .bintrace_magic = 0,
                     .bintrace = nullptr},
      .gdb = &kGdbTarget,
      .syscall_id = &riscv64_syscall_id,
      .engine = &kEngine,
      .decode_without_capstone = &decode_riscv64,
      .reads_host_clock = &reads_counter_csr,
      .llvm_target = &kLlvmTarget,
      .analyze_prologue = &analyze_riscv64_prologue,
  };
  return kInfo;
}

}  // namespace tracecorn::arch
