// Role: the Arm prologue analyser (arch/prologue.h) for Thumb code, used where
// glibc's code has no unwind table (EXIDX_CANTUNWIND ranges of Debian's armhf
// glibc). It follows the rules of gdb's thumb_analyze_prologue (gdb 13, the
// reference the stack tests compare with), over symbolic register values
// (arch/prologue_values.h):
// - 16-bit: `push {rlist, lr}` stores and moves sp; `sub sp,#N`; `add Rd,sp,#N`
//   (r7 as frame pointer), `add Rd,Rn,#N` and `add Rd,#N` on sp-based values;
//   `mov Rd,Rm` copies; `movs Rd,#N` loads a constant; `str Rd,[sp,#N]` and
//   `str Rd,[Rn,#N]` store (a store gdb cannot place ends the scan); loads,
//   strb/strh, lsls/adds copies change nothing here;
// - 32-bit: `stmdb/push.w sp!,{...}`, `strd`, `str.w`, `str Rt,[sp,#-N]!`
//   store; `vpush` moves sp (the FP registers are not tracked);
//   `add.w/addw/sub.w/subw Rd,Rn,#N` on sp-based values; `mov.w/movw Rd,#N`
//   constants;
// - a branch, `bl`, anything that writes the pc, or an instruction that
//   restores sp (`mov sp,r7`, `add sp,#N`, `pop`) ends the scan; any other
//   instruction is skipped (gdb: "the optimizer might shove anything into the
//   prologue").
// The frame base is r11 or else r7 when it holds "sp at entry + k", else sp:
// CFA = base - k; registers are saved where a 4-byte slot holds their entry
// value; the return address is lr's slot, else lr.
// Deliberate differences: constant-pool loads (`ldr Rd,[pc,#N]`) give an
// unknown value here (gdb reads the pool; only an `add` of such a constant to
// sp could tell the two apart), and ARM (not Thumb) code is not analysed
// (mode 0: returns false; Debian's armhf glibc is Thumb-2).
// Who calls it: the unwinder through ArchInfo::analyze_prologue (arch/arm.cpp).
// Invariants: see arch/prologue.h (bounded, never reads outside `code`).
#include "arch/prologue.h"
#include "arch/prologue_values.h"

namespace tracecorn::arch {
namespace {

using detail::FrameModel;
using Value = detail::PrologueValue;

constexpr unsigned kR7 = 7, kR11 = 11, kSp = 13, kLr = 14, kPc = 15;

unsigned bits(std::uint32_t value, unsigned high, unsigned low) { return (value >> low) & ((1u << (high - low + 1)) - 1); }

// ThumbExpandImm (Arm ARM A6.3.2) of i:imm3:imm8.
std::uint32_t thumb_expand_immediate(unsigned imm12) {
  const unsigned imm8 = imm12 & 0xff;
  if ((imm12 >> 10) == 0) {
    switch ((imm12 >> 8) & 3) {
      case 0: return imm8;
      case 1: return imm8 << 16 | imm8;
      case 2: return imm8 << 24 | imm8 << 8;
      default: return imm8 << 24 | imm8 << 16 | imm8 << 8 | imm8;
    }
  }
  const unsigned rotation = imm12 >> 7;  // 8..31
  const std::uint32_t value = 0x80 | (imm12 & 0x7f);
  return (value >> rotation) | (value << (32 - rotation));
}

bool thumb16_changes_pc(unsigned insn) {
  return (insn & 0xff00) == 0xbd00      // pop {rlist, pc}
         || (insn & 0xf000) == 0xd000   // conditional branch (and svc, udf)
         || (insn & 0xf800) == 0xe000   // b
         || (insn & 0xff00) == 0x4700   // bx, blx
         || (insn & 0xff87) == 0x4687   // mov pc, Rm
         || (insn & 0xf500) == 0xb100;  // cbz, cbnz
}

bool thumb16_restores_sp(unsigned insn) {
  return insn == 0x46bd                 // mov sp, r7
         || (insn & 0xff80) == 0xb000   // add sp, #N
         || (insn & 0xfe00) == 0xbc00;  // pop
}

bool thumb32_changes_pc(unsigned insn1, unsigned insn2) {
  if ((insn1 & 0xf800) == 0xf000 && (insn2 & 0x8000) == 0x8000) {
    if ((insn2 & 0x1000) != 0 || (insn2 & 0xd001) == 0xc000) return true;  // b.w, bl, blx
    if (insn1 == 0xf3de && (insn2 & 0xff00) == 0x3f00) return true;        // subs pc, lr, #N
    if ((insn2 & 0xd000) == 0x8000 && (insn1 & 0x0380) != 0x0380) return true;  // conditional b.w
    return false;
  }
  if ((insn1 & 0xfe50) == 0xe810) return (insn2 & 0x8000) != 0;           // ldm/pop.w with pc
  if ((insn1 & 0xffef) == 0xea4f && (insn2 & 0xfff0) == 0x0f00) return true;  // mov(s).w pc, Rm
  if ((insn1 & 0xff70) == 0xf850 && (insn2 & 0xf000) == 0xf000) return true;  // ldr pc
  if ((insn1 & 0xfff0) == 0xe8d0 && (insn2 & 0xffe0) == 0xf000) return true;  // tbb, tbh
  return false;
}

}  // namespace

bool analyze_arm_prologue(std::span<const std::uint8_t> code, std::size_t limit, std::uint8_t mode,
                          PrologueFrame& out) noexcept {
  out = PrologueFrame{};
  out.cfa_register = kSp;
  out.return_address_register = kLr;
  if (mode != 1 || code.size() < 2) return false;  // ARM code is not analysed
  if (limit > kMaxPrologueBytes) limit = kMaxPrologueBytes;
  Value regs[16];
  for (unsigned r = 0; r < 16; ++r) regs[r] = Value::entry(r);
  FrameModel stack(kSp);
  auto sp_based = [&](unsigned r) { return regs[r].is_register(kSp); };
  for (std::size_t at = 0; at < limit && at + 2 <= code.size(); at += 2) {
    const unsigned insn = code[at] | code[at + 1] << 8;
    if ((insn & 0xfe00) == 0xb400) {  // push {rlist[, lr]}
      if (stack.store_would_trash(regs[kSp])) break;
      const unsigned mask = (insn & 0xff) | ((insn & 0x100) << 6);
      for (int r = kLr; r >= 0; --r) {
        if (!(mask & (1u << r))) continue;
        regs[kSp] = regs[kSp].plus(-4);
        stack.store(regs[kSp], 4, regs[r]);
      }
    } else if ((insn & 0xff80) == 0xb080) {  // sub sp, #N
      regs[kSp] = regs[kSp].plus(-static_cast<std::int64_t>((insn & 0x7f) << 2));
    } else if (thumb16_restores_sp(insn)) {
      break;  // the epilogue
    } else if ((insn & 0xf800) == 0xa800) {  // add Rd, sp, #N
      regs[bits(insn, 10, 8)] = regs[kSp].plus((insn & 0xff) << 2);
    } else if ((insn & 0xfe00) == 0x1c00 && sp_based(bits(insn, 5, 3))) {  // adds Rd, Rn, #N
      regs[bits(insn, 2, 0)] = regs[bits(insn, 5, 3)].plus(bits(insn, 8, 6));
    } else if ((insn & 0xf800) == 0x3000 && sp_based(bits(insn, 10, 8))) {  // adds Rd, #N
      regs[bits(insn, 10, 8)] = regs[bits(insn, 10, 8)].plus(bits(insn, 7, 0));
    } else if ((insn & 0xfe00) == 0x1800 && sp_based(bits(insn, 8, 6)) &&
               regs[bits(insn, 5, 3)].kind == Value::kConstant) {  // adds Rd, Rn, Rm
      regs[bits(insn, 2, 0)] = detail::add_values(regs[bits(insn, 5, 3)], regs[bits(insn, 8, 6)]);
    } else if ((insn & 0xff00) == 0x4400 && sp_based(bits(insn, 6, 3)) &&
               regs[(insn & 7) | ((insn >> 4) & 8)].kind == Value::kConstant) {  // add Rd, Rm
      const unsigned rd = (insn & 7) | ((insn >> 4) & 8);
      regs[rd] = detail::add_values(regs[rd], regs[bits(insn, 6, 3)]);
    } else if ((insn & 0xff00) == 0x4600) {  // mov Rd, Rm
      regs[(insn & 7) | ((insn & 0x80) >> 4)] = regs[(insn & 0x78) >> 3];
    } else if ((insn & 0xf800) == 0x9000) {  // str Rd, [sp, #N]
      const Value address = regs[kSp].plus((insn & 0xff) << 2);
      if (stack.store_would_trash(address)) break;
      stack.store(address, 4, regs[bits(insn, 10, 8)]);
    } else if ((insn & 0xf800) == 0x6000) {  // str Rd, [Rn, #N]
      const Value address = regs[bits(insn, 5, 3)].plus(bits(insn, 10, 6) << 2);
      if (stack.store_would_trash(address)) break;
      stack.store(address, 4, regs[bits(insn, 2, 0)]);
    } else if ((insn & 0xf800) == 0x2000) {  // movs Rd, #N
      regs[bits(insn, 10, 8)] = Value::constant(insn & 0xff);
    } else if ((insn & 0xf800) == 0x4800) {  // ldr Rd, [pc, #N]: the pool is not read
      regs[bits(insn, 10, 8)] = Value{};
    } else if ((insn & 0xe000) == 0xe000 && (insn & 0x1800) != 0) {  // a 32-bit instruction
      if (at + 4 > code.size()) break;
      const unsigned insn2 = code[at + 2] | code[at + 3] << 8;
      const unsigned rn = bits(insn, 3, 0);
      if ((insn & 0xf800) == 0xf000 && (insn2 & 0xe800) == 0xe800) {
        break;  // bl, blx: a call ends the prologue
      } else if ((insn & 0xffd0) == 0xe900 && sp_based(rn)) {  // stmdb Rn{!}, {rlist}
        Value address = regs[rn];
        if (stack.store_would_trash(address)) break;
        for (int r = kLr; r >= 0; --r) {
          if (!(insn2 & (1u << r))) continue;
          address = address.plus(-4);
          stack.store(address, 4, regs[r]);
        }
        if (insn & 0x20) regs[rn] = address;
      } else if ((insn & 0xff50) == 0xe940 && sp_based(rn)) {  // strd Rt, Rt2, [Rn, #+-N]{!}
        const std::int64_t offset = (insn2 & 0xff) << 2;
        const Value address = regs[rn].plus(insn & 0x80 ? offset : -offset);
        if (stack.store_would_trash(address)) break;
        stack.store(address, 4, regs[bits(insn2, 15, 12)]);
        stack.store(address.plus(4), 4, regs[bits(insn2, 11, 8)]);
        if (insn & 0x20) regs[rn] = address;
      } else if ((insn & 0xfff0) == 0xf8c0 && sp_based(rn)) {  // str.w Rt, [Rn, #N]
        const Value address = regs[rn].plus(insn2 & 0xfff);
        if (stack.store_would_trash(address)) break;
        stack.store(address, 4, regs[bits(insn2, 15, 12)]);
      } else if ((insn & 0xfff0) == 0xf840 && (insn2 & 0x0800) && sp_based(rn)) {  // str Rt, [Rn, #+-N]{!}
        const std::int64_t offset = insn2 & 0xff;
        const Value address = regs[rn].plus(insn2 & 0x200 ? offset : -offset);
        if (stack.store_would_trash(address)) break;
        stack.store(address, 4, regs[bits(insn2, 15, 12)]);
        if (insn2 & 0x100) regs[rn] = address;
      } else if ((insn2 & 0x8000) == 0 && sp_based(rn) &&
                 ((insn & 0xfbf0) == 0xf100 || (insn & 0xfbf0) == 0xf1a0 || (insn & 0xfbf0) == 0xf200 ||
                  (insn & 0xfbf0) == 0xf2a0)) {  // add.w, sub.w, addw, subw Rd, Rn, #N
        const unsigned imm12 = (bits(insn, 10, 10) << 11) | (bits(insn2, 14, 12) << 8) | (insn2 & 0xff);
        const bool wide = (insn & 0x0200) != 0;  // addw/subw: a plain 12-bit immediate
        const std::int64_t imm = wide ? imm12 : thumb_expand_immediate(imm12);
        const bool subtract = (insn & 0x00a0) == 0x00a0;
        regs[bits(insn2, 11, 8)] = regs[rn].plus(subtract ? -imm : imm);
      } else if ((insn & 0xfbef) == 0xf04f && (insn2 & 0x8000) == 0) {  // mov.w Rd, #N
        const unsigned imm12 = (bits(insn, 10, 10) << 11) | (bits(insn2, 14, 12) << 8) | (insn2 & 0xff);
        regs[bits(insn2, 11, 8)] = Value::constant(thumb_expand_immediate(imm12));
      } else if ((insn & 0xfbf0) == 0xf240 && (insn2 & 0x8000) == 0) {  // movw Rd, #N
        const unsigned imm16 =
            (bits(insn, 3, 0) << 12) | (bits(insn, 10, 10) << 11) | (bits(insn2, 14, 12) << 8) | (insn2 & 0xff);
        regs[bits(insn2, 11, 8)] = Value::constant(imm16);
      } else if ((insn & 0xffbf) == 0xed2d && (insn2 & 0x0e00) == 0x0a00) {  // vpush {s/d registers}
        regs[kSp] = regs[kSp].plus(-static_cast<std::int64_t>((insn2 & 0xff) * 4));
      } else if ((insn & 0xff7f) == 0xf85f) {  // ldr.w Rt, [pc, #N]: the pool is not read
        regs[bits(insn2, 15, 12)] = Value{};
      } else if (thumb32_changes_pc(insn, insn2)) {
        break;
      }
      at += 2;  // other 32-bit instructions are skipped
    } else if (thumb16_changes_pc(insn)) {
      break;
    }
    // other 16-bit instructions are skipped
  }
  if (regs[kR11].is_register(kSp)) {
    out.cfa_register = kR11;
    out.cfa_offset = static_cast<std::int64_t>(0 - static_cast<std::uint64_t>(regs[kR11].k));
  } else if (regs[kR7].is_register(kSp)) {
    out.cfa_register = kR7;
    out.cfa_offset = static_cast<std::int64_t>(0 - static_cast<std::uint64_t>(regs[kR7].k));
  } else if (regs[kSp].is_register(kSp)) {
    out.cfa_offset = static_cast<std::int64_t>(0 - static_cast<std::uint64_t>(regs[kSp].k));
  }
  stack.saved_registers(kPc, 4, out);  // r1..r14 (r0 is never a callee-saved register)
  out.return_address_is_value = true;
  return true;
}

}  // namespace tracecorn::arch
