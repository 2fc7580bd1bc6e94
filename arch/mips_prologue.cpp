// Role: the MIPS o32 prologue analyser (arch/prologue.h), for functions the
// unwind tables leave out. It follows the rules of gdb's mips32_scan_prologue
// (gdb 13, the reference the stack tests compare with), so that where gdb
// finds a caller by prologue analysis, tracecorn finds the same one:
// - at most 200 bytes from the function's start are looked at, and only
//   instructions before the limit (those that ran before the pc);
// - `addiu/addi sp,sp,-N` grows the frame by N; a positive adjustment ends the
//   scan (the epilogue);
// - `sw REG,off(sp)` saves REG (the first store of a register counts);
//   `move s8,sp` (addu/or/daddu s8,sp,zero) makes s8 the frame base;
//   `addiu s8,sp,N` sets s8 to sp + N (the frame base when N is the frame
//   size); `sw REG,off(s8)` then saves relative to s8;
// - gp set-up (lui/addiu gp, addu gp,gp,t9), `move REG,a0..a3`, FP and s8
//   stores, and lui/ori of at/t0 before the stack adjustment are prologue
//   instructions that change nothing here; a branch or jump ends the scan
//   after its delay slot; any other instruction is a "non-prologue" one, and
//   the second such ends the scan (the compiler may schedule one into the
//   prologue).
// The frame base (CFA) is sp (or s8) + the frame size; the return address is
// where ra was saved, else still in ra (right only for a leaf or an innermost
// frame: the unwinder then applies gdb's rule that two frames cannot take
// their return address from the same place).
// Deliberate difference from gdb: gdb re-reads s8 and sp to detect alloca
// (s8 above sp + N) and restarts its scan; here the frame base is s8 itself
// whenever the prologue set s8 up, which gives the same CFA without reading
// registers, except for gdb's `addiu s8,sp,N` + alloca case, where gdb's
// restart counts the frame size twice.
// Who calls it: the unwinder through ArchInfo::analyze_prologue (arch/mips.cpp).
// Invariants: see arch/prologue.h (bounded, never reads outside `code`).
#include "arch/prologue.h"

namespace tracecorn::arch {
namespace {

constexpr unsigned kSp = 29, kS8 = 30, kRa = 31;
constexpr std::size_t kMipsScanBytes = 200;  // gdb: limit_pc = min(limit_pc, start_pc + 200)

// Branches and jumps: the instructions with a delay slot (MIPS32 release 2,
// with the branch-likely and FPU condition branches).
bool has_delay_slot(std::uint32_t insn) {
  const unsigned op = insn >> 26;
  const unsigned rs = (insn >> 21) & 0x1f, rt = (insn >> 16) & 0x1f;
  if (op >= 8) {
    return (op >> 2) == 5       // beql, bnel, blezl, bgtzl
           || op == 29          // jalx
           || (op == 17 && (rs == 8 || ((rs == 9 || rs == 10) && (rt & 2) == 0)));  // bc1f/t, bc1any2/4
  }
  switch (op & 7) {
    case 0: {  // SPECIAL: jr, jalr
      const unsigned funct = insn & 0x3f;
      return funct == 8 || funct == 9;
    }
    case 1:  // REGIMM: bltz, bgez, bltzl, bgezl, bltzal, bgezal (bal), ...; bposge32/64
      return (rt & 0xc) == 0 || ((rt & 0x1e) == 0x1c && rs == 0);
    default:  // j, jal, beq, bne, blez, bgtz
      return true;
  }
}

// A store found by the scan: REG at (sp at the pc) + sp_offset.
struct Store {
  std::uint16_t reg;
  std::int64_t sp_offset;
};

bool analyze(std::span<const std::uint8_t> code, std::size_t limit, bool little_endian, PrologueFrame& out) noexcept {
  out = PrologueFrame{};
  out.cfa_register = kSp;
  out.return_address_register = kRa;
  if (limit > kMipsScanBytes) limit = kMipsScanBytes;
  std::int64_t frame_size = 0;     // bytes the prologue took from sp
  bool frame_in_s8 = false;        // s8 is the frame base (s8 == sp at the pc, as gdb assumes)
  std::int64_t s8_base_delta = 0;  // s8 - sp when frame_in_s8 came from `addiu s8,sp,N`
  bool s8_known = false;           // s8 = sp + s8_delta, for stores through s8
  std::int64_t s8_delta = 0;
  bool seen_sp_adjust = false;
  bool prev_delay_slot = false;
  int non_prologue = 0;
  Store stores[PrologueFrame::kMaxSaved];
  std::size_t store_count = 0;
  auto store = [&](unsigned reg, std::int64_t sp_offset) {
    if (reg == 0) return;  // $zero: nothing to restore
    for (std::size_t i = 0; i < store_count; ++i)
      if (stores[i].reg == reg) return;  // the first store keeps the caller's value
    if (store_count < PrologueFrame::kMaxSaved) stores[store_count++] = {static_cast<std::uint16_t>(reg), sp_offset};
  };
  bool decoded_any = false;
  for (std::size_t at = 0; at < limit && at + 4 <= code.size(); at += 4) {
    const std::uint8_t* b = code.data() + at;
    const std::uint32_t insn =
        little_endian ? (std::uint32_t{b[0]} | std::uint32_t{b[1]} << 8 | std::uint32_t{b[2]} << 16 |
                         std::uint32_t{b[3]} << 24)
                      : (std::uint32_t{b[3]} | std::uint32_t{b[2]} << 8 | std::uint32_t{b[1]} << 16 |
                         std::uint32_t{b[0]} << 24);
    decoded_any = true;
    const unsigned high = insn >> 16;
    const std::int64_t imm = static_cast<std::int16_t>(insn & 0xffff);
    const unsigned reg = high & 0x1f;
    bool in_delay_slot = false;
    bool non_prologue_insn = false;
    if (high == 0x27bd || high == 0x23bd || high == 0x67bd) {  // addiu/addi/daddiu sp,sp,imm
      if (imm >= 0) break;                                      // the epilogue's stack release
      frame_size -= imm;
      seen_sp_adjust = true;
    } else if ((high & 0xffe0) == 0xafa0) {  // sw reg,imm(sp)
      store(reg, imm);
    } else if (high == 0x27be) {  // addiu s8,sp,imm
      if (imm != frame_size) {
        s8_known = true;
        s8_delta = imm;
      } else if (!frame_in_s8) {
        frame_in_s8 = true;
        s8_base_delta = imm;
        s8_known = true;
        s8_delta = imm;
        frame_size = 0;  // s8 is the caller's sp itself
      }
    } else if (insn == 0x03a0f021 || insn == 0x03a0f025 || insn == 0x03a0f02d) {  // move s8,sp
      if (!frame_in_s8) {
        frame_in_s8 = true;
        s8_base_delta = 0;
        s8_known = true;
        s8_delta = 0;
      }
    } else if ((high & 0xffe0) == 0xafc0) {  // sw reg,imm(s8)
      if (s8_known) store(reg, s8_delta + imm);  // gdb: s8 unknown is address 0 + imm (no frame slot)
    } else if ((high & 0xffe0) == 0xe7a0            // swc1 freg,n(sp)
               || (high & 0xf3e0) == 0xa3c0         // sb/sh/sw/sd reg,n(s8) family
               || (insn & 0xff9f07ff) == 0x00800021  // move reg,a0..a3
               || high == 0x3c1c || high == 0x279c || high == 0x679c  // lui gp; (d)addiu gp,gp
               || insn == 0x0399e021 || insn == 0x033ce021 || insn == 0x0399e02d || insn == 0x033ce02d) {
      // prologue instructions that change nothing the unwinder needs
    } else if (!seen_sp_adjust && !prev_delay_slot &&
               (high == 0x3c01 || high == 0x3c08 || high == 0x3421 || high == 0x3508 || high == 0x3401 ||
                high == 0x3408)) {
      // lui/ori of at or t0: a large frame size being built (before the adjustment only)
    } else if (has_delay_slot(insn)) {
      in_delay_slot = true;
    } else {
      non_prologue_insn = true;
    }
    non_prologue += non_prologue_insn ? 1 : 0;
    if (prev_delay_slot || non_prologue > 1) break;
    prev_delay_slot = in_delay_slot;
  }
  if (!decoded_any && code.size() < 4) return false;  // not one instruction readable
  // CFA = base + frame_size, where base = sp + base_delta; a store at
  // sp + off lies at CFA + (off - base_delta - frame_size).
  const std::int64_t base_delta = frame_in_s8 ? s8_base_delta : 0;
  out.cfa_register = frame_in_s8 ? kS8 : kSp;
  out.cfa_offset = frame_size;
  for (std::size_t i = 0; i < store_count; ++i) out.save(stores[i].reg, stores[i].sp_offset - base_delta - frame_size);
  return true;
}

}  // namespace

bool analyze_mips_prologue_big(std::span<const std::uint8_t> code, std::size_t limit, std::uint8_t,
                               PrologueFrame& out) noexcept {
  return analyze(code, limit, false, out);
}

bool analyze_mips_prologue_little(std::span<const std::uint8_t> code, std::size_t limit, std::uint8_t,
                                  PrologueFrame& out) noexcept {
  return analyze(code, limit, true, out);
}

}  // namespace tracecorn::arch
