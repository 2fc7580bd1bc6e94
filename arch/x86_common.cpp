// Role: implementation of the shared x86 pieces (see x86_common.h).
#include "arch/x86_common.h"

#include "arch/block_scan.h"

#include <algorithm>
#include <cctype>
#include <csignal>
#include <string>

#include <unicorn/x86.h>

namespace tracecorn::arch {
namespace {

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

}  // namespace

CpuidProbe::~CpuidProbe() {
  if (probe_) uc_close(probe_);
}

Status CpuidProbe::init() {
  if (uc_open(UC_ARCH_X86, UC_MODE_64, &probe_) != UC_ERR_OK)
    return make_error(ErrorCode::kEmulator, "cannot open the CPUID probe engine");
  static constexpr std::uint8_t kCpuidInstruction[] = {0x0f, 0xa2};
  if (uc_mem_map(probe_, kProbeCode, 0x1000, UC_PROT_ALL) != UC_ERR_OK ||
      uc_mem_write(probe_, kProbeCode, kCpuidInstruction, sizeof kCpuidInstruction) != UC_ERR_OK)
    return make_error(ErrorCode::kEmulator, "cannot set up the CPUID probe engine");
  return ok_status();
}

std::array<std::uint32_t, 4> CpuidProbe::query(std::uint32_t leaf, std::uint32_t subleaf) noexcept {
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

X86GuestCpuBase::~X86GuestCpuBase() {
  if (capstone_) cs_close(&capstone_);
  if (cpuid_hook_) uc_hook_del(engine_, cpuid_hook_);
}

Status X86GuestCpuBase::init_x86() {
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
  if (cs_open(CS_ARCH_X86, mode_, &capstone_) != CS_ERR_OK ||
      cs_option(capstone_, CS_OPT_DETAIL, CS_OPT_ON) != CS_ERR_OK)
    return make_error(ErrorCode::kEmulator, "cannot open Capstone for x86");
  return ok_status();
}

std::uint64_t X86GuestCpuBase::locate_faulting_instruction(std::uint64_t reported_pc, std::uint64_t fault_address) const {
  if (fault_address == reported_pc) return reported_pc;
  return find_instruction_in_block(engine_, capstone_, reported_pc, 512, 1, fault_address,
                                   [&](const cs_insn& insn) { return touches(insn, fault_address); });
}

int X86GuestCpuBase::signal_for_interrupt(std::uint32_t interrupt_number) const {
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

// The value of a Capstone register, through our register table (by name).
std::optional<std::uint64_t> X86GuestCpuBase::register_value(unsigned capstone_register) const {
  if (capstone_register == X86_REG_INVALID) return 0;
  const char* name = cs_reg_name(capstone_, capstone_register);
  if (!name) return std::nullopt;
  for (const auto& reg : registers_)
    if (reg.name == name && reg.size == word_bytes_) {
      std::uint64_t value = 0;
      uc_reg_read(engine_, reg.uc_id, &value);
      return value;
    }
  return std::nullopt;
}

bool X86GuestCpuBase::touches(const cs_insn& insn, std::uint64_t fault_address) const {
  const cs_x86& x86 = insn.detail->x86;
  auto covers = [&](std::uint64_t start, std::uint64_t length) {
    return fault_address >= start && fault_address - start < std::max<std::uint64_t>(length, 1);
  };
  for (std::uint8_t i = 0; i < x86.op_count; ++i) {
    const cs_x86_op& op = x86.operands[i];
    if (op.type != X86_OP_MEM) continue;
    std::uint64_t effective = static_cast<std::uint64_t>(op.mem.disp);
    if (op.mem.base == X86_REG_RIP || op.mem.base == X86_REG_EIP) {
      effective += insn.address + insn.size;
    } else {
      auto base = register_value(op.mem.base);
      auto index = register_value(op.mem.index);
      if (!base || !index) continue;
      effective += *base + *index * static_cast<std::uint64_t>(op.mem.scale);
    }
    effective += segment_base(op.mem.segment);
    if (covers(effective, op.size)) return true;
  }
  // Implicit accesses: the stack (push, call, pop, ret...) and string instructions.
  const bool wide = word_bytes_ == 8;
  const auto rsp = register_value(wide ? X86_REG_RSP : X86_REG_ESP).value_or(0);
  const std::uint64_t word = word_bytes_;
  if (cs_insn_group(capstone_, &insn, CS_GRP_CALL) || insn.id == X86_INS_PUSH || insn.id == X86_INS_PUSHFQ ||
      insn.id == X86_INS_PUSHFD)
    if (covers(rsp - word, word)) return true;
  if (cs_insn_group(capstone_, &insn, CS_GRP_RET) || insn.id == X86_INS_POP || insn.id == X86_INS_POPFQ ||
      insn.id == X86_INS_POPFD ||
      insn.id == X86_INS_LEAVE)
    if (covers(rsp, word) ||
        (insn.id == X86_INS_LEAVE && covers(register_value(wide ? X86_REG_RBP : X86_REG_EBP).value_or(0), word)))
      return true;
  for (const unsigned reg : {wide ? X86_REG_RSI : X86_REG_ESI, wide ? X86_REG_RDI : X86_REG_EDI}) {
    const bool string_op = x86.prefix[0] == X86_PREFIX_REP || x86.prefix[0] == X86_PREFIX_REPNE ||
                           (insn.id >= X86_INS_MOVSB && insn.id <= X86_INS_MOVSW) ||
                           (insn.id >= X86_INS_STOSB && insn.id <= X86_INS_STOSW);
    if (string_op && covers(register_value(reg).value_or(0), 8)) return true;
  }
  return false;
}

int X86GuestCpuBase::on_cpuid(uc_engine* engine, void* user) noexcept {
  auto* self = static_cast<X86GuestCpuBase*>(user);
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

X86CapstoneRegisterMap::X86CapstoneRegisterMap(cs_mode mode, std::span<const RegisterInfo> registers,
                                               std::span<const X86SubRegister> sub_registers) {
  index_.fill(-1);
  csh handle = 0;
  if (cs_open(CS_ARCH_X86, mode, &handle) != CS_ERR_OK) return;
  for (unsigned id = 1; id < X86_REG_ENDING; ++id) {
    const char* raw = cs_reg_name(handle, id);
    if (!raw) continue;
    std::string name = raw;
    for (const auto& sub : sub_registers)
      if (sub.name == name) name = std::string(sub.full);
    if (name.size() == 4 && (name.rfind("ymm", 0) == 0 || name.rfind("zmm", 0) == 0)) name = "x" + name.substr(1);
    if (name.size() == 5 && (name.rfind("ymm", 0) == 0 || name.rfind("zmm", 0) == 0)) name = "x" + name.substr(1);
    if (name.size() >= 2 && name[0] == 'r' && (name.back() == 'd' || name.back() == 'w' || name.back() == 'b') &&
        std::isdigit(static_cast<unsigned char>(name[1])))
      name.pop_back();  // r8d, r8w, r8b -> r8
    for (std::size_t i = 0; i < registers.size(); ++i)
      if (registers[i].name == name) index_[id] = static_cast<int>(i);
  }
  cs_close(&handle);
}

void x86_add_unlisted_writes(std::span<const RegisterInfo> registers, const X86RegisterNames& names,
                             const cs_insn& insn, std::vector<std::uint16_t>& written) {
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
    for (std::size_t i = 0; i < registers.size(); ++i)
      if (registers[i].name == name &&
          std::find(written.begin(), written.end(), static_cast<std::uint16_t>(i)) == written.end())
        written.push_back(static_cast<std::uint16_t>(i));
  };
  if (insn.detail->x86.eflags & kFlagWrites) add(names.flags);
  // x87: Capstone lists the status word for some x87 instructions and nothing
  // for others (fxch, fstp st(i)), and never the stack slots an instruction
  // pushes, pops or writes, nor the tag word. So every x87 instruction (escape
  // opcodes 0xd8-0xdf) is taken to write all of them.
  const std::uint8_t opcode = insn.detail->x86.opcode[0];
  if (opcode >= 0xd8 && opcode <= 0xdf)
    for (const char* name : {"st0", "st1", "st2", "st3", "st4", "st5", "st6", "st7", "fpsw", "fptag", "fpcw"})
      add(name);
  if (insn.id == X86_INS_CMPXCHG || insn.id == X86_INS_CMPXCHG8B || insn.id == X86_INS_CMPXCHG16B) add(names.accumulator);
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

bool x86_count_memory_accesses(const cs_insn& insn, std::uint8_t& reads, std::uint8_t& writes) {
  reads = writes = 0;
  if (!insn.detail) return false;
  const cs_x86& x86 = insn.detail->x86;
  switch (insn.id) {
    case X86_INS_LEA: case X86_INS_NOP: case X86_INS_PREFETCH: case X86_INS_PREFETCHW: case X86_INS_PREFETCHNTA:
    case X86_INS_PREFETCHT0: case X86_INS_PREFETCHT1: case X86_INS_PREFETCHT2: case X86_INS_CLFLUSH:
      return true;  // an address operand that is not accessed
    case X86_INS_PUSHAL: case X86_INS_POPAL: case X86_INS_PUSHAW: case X86_INS_POPAW:  // 32-bit only
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
    case X86_INS_PUSH: case X86_INS_PUSHFQ: case X86_INS_PUSHFD: case X86_INS_CALL: ++writes; break;
    case X86_INS_POP: case X86_INS_POPFQ: case X86_INS_POPFD: case X86_INS_RET: case X86_INS_LEAVE: ++reads; break;
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

void x86_address_registers(const X86CapstoneRegisterMap& map, const cs_insn& insn, std::vector<std::uint16_t>& base,
                           std::vector<std::uint16_t>& index) {
  if (!insn.detail) return;
  auto add = [&map](std::vector<std::uint16_t>& list, unsigned capstone_register) {
    const int found = map(capstone_register);
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

bool x86_reads_host_clock(std::span<const std::uint8_t> bytes) {
  const bool rdtsc = bytes.size() == 2 && bytes[0] == 0x0f && bytes[1] == 0x31;
  const bool rdtscp = bytes.size() == 3 && bytes[0] == 0x0f && bytes[1] == 0x01 && bytes[2] == 0xf9;
  return rdtsc || rdtscp;
}

}  // namespace tracecorn::arch
