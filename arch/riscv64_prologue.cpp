// Role: the RV64GC prologue analyser (arch/prologue.h), for functions the
// unwind tables leave out (Debian 12's riscv64 glibc has no FDE for many C
// functions). It follows the rules of gdb's riscv_scan_prologue, the
// reference the stack tests compare with:
// - at most 100 bytes from the function's start are looked at (gdb's bound
//   when no line table gives the prologue's end), and only instructions that
//   start before the limit;
// - each integer register holds a symbolic value: unknown, a constant, or
//   "register R at entry + k"; `addi/addiw sp,sp,N`, `addi`, `add`, `mv`
//   (c.mv), `lui`, `auipc` and `ld`/`lw` (a slot stored earlier, else
//   unknown) update them (compressed forms included: c.addi16sp, c.addi4spn,
//   c.addi, c.addiw sp, c.lui, c.mv, c.add, c.ldsp/c.lwsp, c.ld/c.lw);
// - `sd`/`sw` (and c.sdsp, c.swsp, c.sd, c.sw) through sp or s0 store the
//   register's symbolic value in a model of the frame (offsets from the
//   entry sp); a store through an address not relative to the entry sp
//   forgets the whole model (it could have overwritten any slot);
// - the first instruction of any other kind ends the scan, c.li included:
//   gdb 13 (Debian 12's gdb-multiarch) stops there, which the stack tests
//   show (__libc_early_init saves ra after a `li`, and gdb's stack ends
//   there), while later gdbs go on.
// The CFA is s0 - k when s0 holds "sp at entry + k", else sp - k for sp's own
// k; a register is saved where the model holds its entry value in an 8-byte
// slot; the return address is where ra's entry value is, else still in ra.
// Not done (later gdbs add it; gdb 13, the reference here, does not):
// detecting a pc inside the epilogue (`ld s0; addi sp,sp,N; ret`).
// Who calls it: the unwinder through ArchInfo::analyze_prologue (arch/riscv64.cpp).
// Invariants: see arch/prologue.h (bounded, never reads outside `code`).
#include "arch/prologue.h"
#include "arch/prologue_values.h"

namespace tracecorn::arch {
namespace {

using detail::FrameModel;
using Value = detail::PrologueValue;

constexpr unsigned kZero = 0, kRa = 1, kSp = 2, kS0 = 8;
constexpr std::size_t kRiscvScanBytes = 100;  // gdb: start_pc + 100 without line information

// The decoded instruction: only what the scan distinguishes.
struct Insn {
  enum Op : std::uint8_t { kOther, kAddi, kAddiw, kAdd, kAddw, kMv, kLi, kLui, kAuipc, kSw, kSd, kLw, kLd } op = kOther;
  std::uint8_t length = 0;
  std::uint8_t rd = 0, rs1 = 0, rs2 = 0;
  std::int64_t imm = 0;
};

std::int64_t sign_extend(std::uint64_t value, unsigned bits) {
  const std::uint64_t sign = std::uint64_t{1} << (bits - 1);
  return static_cast<std::int64_t>((value ^ sign) - sign);
}

unsigned bits(std::uint32_t value, unsigned high, unsigned low) { return (value >> low) & ((1u << (high - low + 1)) - 1); }

Insn decode32(std::uint32_t i) {
  Insn insn;
  insn.length = 4;
  const unsigned opcode = i & 0x7f, funct3 = bits(i, 14, 12), funct7 = bits(i, 31, 25);
  insn.rd = static_cast<std::uint8_t>(bits(i, 11, 7));
  insn.rs1 = static_cast<std::uint8_t>(bits(i, 19, 15));
  insn.rs2 = static_cast<std::uint8_t>(bits(i, 24, 20));
  const std::int64_t i_imm = sign_extend(i >> 20, 12);
  const std::int64_t s_imm = sign_extend((bits(i, 31, 25) << 5) | bits(i, 11, 7), 12);
  const std::int64_t u_imm = sign_extend(i & 0xfffff000u, 32);
  if (opcode == 0x13 && funct3 == 0) {
    insn.op = Insn::kAddi, insn.imm = i_imm;
  } else if (opcode == 0x1b && funct3 == 0) {
    insn.op = Insn::kAddiw, insn.imm = i_imm;
  } else if (opcode == 0x33 && funct3 == 0 && funct7 == 0) {
    insn.op = Insn::kAdd;
  } else if (opcode == 0x3b && funct3 == 0 && funct7 == 0) {
    insn.op = Insn::kAddw;
  } else if (opcode == 0x37) {
    insn.op = Insn::kLui, insn.imm = u_imm;
  } else if (opcode == 0x17) {
    insn.op = Insn::kAuipc, insn.imm = u_imm;
  } else if (opcode == 0x23 && (funct3 == 2 || funct3 == 3)) {
    insn.op = funct3 == 2 ? Insn::kSw : Insn::kSd, insn.imm = s_imm;
  } else if (opcode == 0x03 && (funct3 == 2 || funct3 == 3)) {
    insn.op = funct3 == 2 ? Insn::kLw : Insn::kLd, insn.imm = i_imm;
  }
  return insn;
}

Insn decode16(std::uint32_t i) {
  Insn insn;
  insn.length = 2;
  const unsigned quadrant = i & 3, funct3 = bits(i, 15, 13);
  const std::uint8_t rd = static_cast<std::uint8_t>(bits(i, 11, 7)), rs2 = static_cast<std::uint8_t>(bits(i, 6, 2));
  const std::uint8_t rs1_short = static_cast<std::uint8_t>(8 + bits(i, 9, 7));
  const std::uint8_t rs2_short = static_cast<std::uint8_t>(8 + bits(i, 4, 2));
  const std::int64_t ci_imm = sign_extend((bits(i, 12, 12) << 5) | bits(i, 6, 2), 6);
  const std::int64_t lw_imm = (bits(i, 12, 10) << 3) | (bits(i, 6, 6) << 2) | (bits(i, 5, 5) << 6);
  const std::int64_t ld_imm = (bits(i, 12, 10) << 3) | (bits(i, 6, 5) << 6);
  if (quadrant == 0) {
    if (funct3 == 0) {  // c.addi4spn
      const unsigned imm = (bits(i, 12, 11) << 4) | (bits(i, 10, 7) << 6) | (bits(i, 6, 6) << 2) | (bits(i, 5, 5) << 3);
      if (imm != 0) insn.op = Insn::kAddi, insn.rd = rs2_short, insn.rs1 = kSp, insn.imm = imm;
    } else if (funct3 == 2 || funct3 == 3) {  // c.lw, c.ld
      insn.op = funct3 == 2 ? Insn::kLw : Insn::kLd, insn.rd = rs2_short, insn.rs1 = rs1_short;
      insn.imm = funct3 == 2 ? lw_imm : ld_imm;
    } else if (funct3 == 6 || funct3 == 7) {  // c.sw, c.sd
      insn.op = funct3 == 6 ? Insn::kSw : Insn::kSd, insn.rs1 = rs1_short, insn.rs2 = rs2_short;
      insn.imm = funct3 == 6 ? lw_imm : ld_imm;
    }
  } else if (quadrant == 1) {
    if (funct3 == 0) {  // c.addi (c.nop when rd is x0)
      insn.op = Insn::kAddi, insn.rd = insn.rs1 = rd, insn.imm = ci_imm;
    } else if (funct3 == 1 && rd != 0) {  // c.addiw
      insn.op = Insn::kAddiw, insn.rd = insn.rs1 = rd, insn.imm = ci_imm;
    } else if (funct3 == 2) {  // c.li
      insn.op = Insn::kLi, insn.rd = rd, insn.imm = ci_imm;
    } else if (funct3 == 3 && rd == kSp) {  // c.addi16sp
      const std::uint64_t imm = (bits(i, 12, 12) << 9) | (bits(i, 6, 6) << 4) | (bits(i, 5, 5) << 6) |
                                (bits(i, 4, 3) << 7) | (bits(i, 2, 2) << 5);
      if (imm != 0) insn.op = Insn::kAddi, insn.rd = insn.rs1 = kSp, insn.imm = sign_extend(imm, 10);
    } else if (funct3 == 3 && rd != 0) {  // c.lui
      const std::uint64_t imm = (bits(i, 12, 12) << 17) | (bits(i, 6, 2) << 12);
      if (imm != 0) insn.op = Insn::kLui, insn.rd = rd, insn.imm = sign_extend(imm, 18);
    } else if (funct3 == 4 && bits(i, 12, 10) == 7 && bits(i, 6, 5) == 1) {  // c.addw
      insn.op = Insn::kAddw, insn.rd = insn.rs1 = rs1_short, insn.rs2 = rs2_short;
    }
  } else if (quadrant == 2) {
    if (funct3 == 2 && rd != 0) {  // c.lwsp
      insn.op = Insn::kLw, insn.rd = rd, insn.rs1 = kSp;
      insn.imm = (bits(i, 12, 12) << 5) | (bits(i, 6, 4) << 2) | (bits(i, 3, 2) << 6);
    } else if (funct3 == 3 && rd != 0) {  // c.ldsp
      insn.op = Insn::kLd, insn.rd = rd, insn.rs1 = kSp;
      insn.imm = (bits(i, 12, 12) << 5) | (bits(i, 6, 5) << 3) | (bits(i, 4, 2) << 6);
    } else if (funct3 == 4 && rs2 != 0 && rd != 0) {  // c.mv (bit 12 clear), c.add (set)
      insn.op = bits(i, 12, 12) ? Insn::kAdd : Insn::kMv, insn.rd = rd, insn.rs1 = rd, insn.rs2 = rs2;
      if (insn.op == Insn::kMv) insn.rs1 = kZero;
    } else if (funct3 == 6) {  // c.swsp
      insn.op = Insn::kSw, insn.rs1 = kSp, insn.rs2 = rs2;
      insn.imm = (bits(i, 12, 9) << 2) | (bits(i, 8, 7) << 6);
    } else if (funct3 == 7) {  // c.sdsp
      insn.op = Insn::kSd, insn.rs1 = kSp, insn.rs2 = rs2;
      insn.imm = (bits(i, 12, 10) << 3) | (bits(i, 9, 7) << 6);
    }
  }
  return insn;
}

}  // namespace

bool analyze_riscv64_prologue(std::span<const std::uint8_t> code, std::size_t limit, std::uint8_t,
                              PrologueFrame& out) noexcept {
  out = PrologueFrame{};
  out.cfa_register = kSp;
  out.return_address_register = kRa;
  if (limit > kRiscvScanBytes) limit = kRiscvScanBytes;
  Value regs[32];
  for (unsigned r = 0; r < 32; ++r) regs[r] = Value::entry(r);
  FrameModel stack(kSp);
  bool decoded_any = false;
  for (std::size_t at = 0; at < limit && at + 2 <= code.size();) {
    const std::uint32_t low = std::uint32_t{code[at]} | std::uint32_t{code[at + 1]} << 8;
    Insn insn;
    if ((low & 3) != 3) {
      insn = decode16(low);
    } else if ((low & 0x1c) != 0x1c && at + 4 <= code.size()) {
      insn = decode32(low | (std::uint32_t{code[at + 2]} << 16) | (std::uint32_t{code[at + 3]} << 24));
    } else {
      break;  // cut short, or a 48-bit or longer encoding: not a prologue instruction
    }
    decoded_any = true;
    at += insn.length;
    switch (insn.op) {
      case Insn::kAddi:
        if (insn.rd != kZero) regs[insn.rd] = regs[insn.rs1].plus(insn.imm);
        continue;
      case Insn::kAddiw:  // only the stack adjustment form
        if (insn.rd == kSp && insn.rs1 == kSp) {
          regs[kSp] = regs[kSp].plus(insn.imm);
          continue;
        }
        break;
      case Insn::kSw: case Insn::kSd:
        if (insn.rs1 == kSp || insn.rs1 == kS0) {
          stack.store(regs[insn.rs1].plus(insn.imm), insn.op == Insn::kSw ? 4 : 8, regs[insn.rs2]);
          continue;
        }
        break;
      case Insn::kAdd:
        if (insn.rd != kZero) regs[insn.rd] = detail::add_values(regs[insn.rs1], regs[insn.rs2]);
        continue;
      case Insn::kAddw:
        if (insn.rd == kS0 && insn.rs1 == kSp && insn.rs2 == kZero) {
          regs[kS0] = regs[kSp];
          continue;
        }
        break;
      case Insn::kMv:
        regs[insn.rd] = regs[insn.rs2];
        continue;
      case Insn::kLui:
        if (insn.rd != kZero) regs[insn.rd] = Value::constant(insn.imm);
        continue;
      case Insn::kLi:
        break;  // gdb 13 has no case for c.li: it ends the prologue
      case Insn::kAuipc:
        if (insn.rd != kZero) regs[insn.rd] = Value::constant(insn.imm);  // pc-relative: a constant, never a frame slot
        continue;
      case Insn::kLw: case Insn::kLd:
        if (insn.rd != kZero) regs[insn.rd] = stack.fetch(regs[insn.rs1].plus(insn.imm), insn.op == Insn::kLw ? 4 : 8);
        continue;
      case Insn::kOther: break;
    }
    break;  // the first instruction a prologue does not have
  }
  if (!decoded_any && code.size() < 2) return false;  // not one instruction readable
  const Value fp = regs[kS0], sp = regs[kSp];
  if (fp.kind == Value::kRegister && fp.reg == kSp) {
    out.cfa_register = kS0;
    out.cfa_offset = static_cast<std::int64_t>(0 - static_cast<std::uint64_t>(fp.k));
  } else {
    out.cfa_offset = sp.kind == Value::kRegister && sp.reg == kSp ? static_cast<std::int64_t>(0 - static_cast<std::uint64_t>(sp.k)) : 0;
  }
  stack.saved_registers(32, 8, out);
  return true;
}

}  // namespace tracecorn::arch
