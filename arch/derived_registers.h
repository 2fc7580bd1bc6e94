// Role: the instruction semantics behind derived registers: register values the
// recorder's producer computes instead of reading them through Unicorn (regs and
// full levels; x86-64 and i386 describe their instructions, through
// ArchEngine::describe_derived_writes, in arch/x86_derived_registers.cpp). Each read costs
// a call into Unicorn, and reading the flags makes it compute QEMU's lazy flags
// (helper_cc_compute_all); most instructions of real code are simple integer
// operations whose results and flags are a pure function of the registers
// before them. For those, the block decoder stores a recipe
// (describe_derived_writes), and the producer computes the values the
// instruction writes from its shadow copy of the register file (which holds
// every register's value before the instruction) with derive_values.
//
// Recipes exist for, with register or immediate operands only (no memory
// operand; 8/16/32/64-bit; ah..dh included):
//   mov, movabs                 the result, no flags
//   add, sub, and, or, xor      the result and CF PF AF ZF SF OF
//   cmp, test                   the flags only
//   inc, dec                    the result and PF AF ZF SF OF (CF kept)
//   neg                         the result and CF PF AF ZF SF OF
//   not                         the result, no flags
//   lea                         the address (base + index * scale + disp, rip-relative
//                               included, truncated to the address size), no flags
// A recipe is only kept when Capstone's access list for the instruction names
// exactly the registers the recipe writes (the full destination register and,
// when it sets flags, the flags register), so what the producer computes is
// what it would otherwise read.
//
// Who calls it: the recorder core's BlockDecoder (decode time, either thread:
// pure functions) and its producer (emulation thread), which keeps the shadow
// register file. No state.
// Invariants: the computed values equal what Unicorn 2.0.1 reports after the
// instruction (Intel SDM semantics for defined flags; AF = 0 after logic ops,
// as QEMU's CC_OP_LOGIC leaves it; a 32-bit result zero-extends into its 64-bit
// register, an 8- or 16-bit result keeps the register's other bits), which
// tests/arch/derived_registers_test.cpp checks against Unicorn itself.
#pragma once

#include <cstdint>

#include <capstone/capstone.h>

#include "arch/arch_info.h"

namespace tracecorn::arch {

enum class DerivedOperation : std::uint8_t { kNone, kMove, kAdd, kSub, kAnd, kOr, kXor, kInc, kDec, kNeg, kNot, kLea };

// One source: a register (index into ArchInfo::registers, its value
// shifted right by `shift` bits: 8 for ah/bh/ch/dh), an immediate, or, for
// lea's base and index, nothing (value 0). Its value is
// ((register >> shift) & keep) | constant: keep is all ones for a register and
// 0 otherwise, constant the immediate (lea: a rip-relative base's address).
struct DerivedOperand {
  std::uint8_t shift = 0;
  std::uint16_t index = 0;
  std::uint64_t keep = ~std::uint64_t{0};
  std::uint64_t constant = 0;
};

struct DerivedWrites {
  DerivedOperation operation = DerivedOperation::kNone;
  std::uint8_t width = 0;            // operand bytes: 1, 2, 4 or 8
  bool stores_result = false;        // false for cmp and test
  bool sets_flags = false;           // false for mov, not and lea
  std::uint16_t destination = 0;     // the full register the result goes to
  std::uint8_t destination_shift = 0;  // 8 for ah..dh
  std::uint8_t destination_bytes = 0;  // the full register's size (8 on x86-64, 4 on i386)
  std::uint16_t flags_index = 0;     // the flags register (when sets_flags)
  // Sources: `a` is the first source (the destination's own value for the
  // two-operand ALU forms; lea's base), `b` the second (lea's index).
  DerivedOperand a, b;
  std::uint8_t scale = 1;          // lea
  std::uint8_t address_bytes = 8;  // lea: the address size (the 0x67 prefix makes it 4)
  std::uint64_t displacement = 0;  // lea
  // For the producer's batch (set by writes_exactly): each written register's
  // RegisterBatchEntryHead as one little-endian integer (index | size << 16),
  // and whether the destination comes before the flags in the written list.
  std::uint64_t destination_head = 0;
  std::uint64_t flags_head = 0;
  bool destination_first = false;
};

// Fills `out` and returns true when `insn` (decoded with detail for `arch`) is
// one of the forms above (the architecture's ArchEngine::describe_derived_writes
// says); false (out untouched) for anything else, and for every instruction of
// an architecture without recipes. The caller checks the recipe against the
// instruction's written registers (writes_exactly).
bool describe_derived_writes(const ArchInfo& arch, const cs_insn& insn, DerivedWrites& out);

// True when `written` (indices into the arch's register table, as
// arch::instruction_registers gives them) is exactly the registers `recipe`
// computes: the destination when it stores a result, the flags when it sets
// them; then also records their order in the recipe (destination_first).
bool writes_exactly(DerivedWrites& recipe, const std::uint16_t* written, std::size_t count);

struct DerivedValues {
  std::uint64_t destination = 0;  // the destination register's full value after the instruction
  std::uint64_t flags = 0;        // the flags register after it
};

namespace derived_detail {
inline constexpr std::uint64_t kCarry = 1u << 0, kParity = 1u << 2, kAdjust = 1u << 4, kZero = 1u << 6,
                               kSign = 1u << 7, kOverflow = 1u << 11;
inline constexpr std::uint64_t kArithmeticFlags = kCarry | kParity | kAdjust | kZero | kSign | kOverflow;
inline constexpr std::uint64_t mask_of(unsigned bytes) {
  return bytes >= 8 ? ~std::uint64_t{0} : (std::uint64_t{1} << (bytes * 8)) - 1;
}
}  // namespace derived_detail

// The values after the instruction, from the full values before it of the
// sources `a` and `b` (ignored unless registers), of the destination
// register, and of the flags register. Pure; inline for the producer's hook.
[[gnu::always_inline]] inline DerivedValues derive_values(const DerivedWrites& recipe, std::uint64_t a,
                                                          std::uint64_t b, std::uint64_t destination,
                                                          std::uint64_t old_flags) {
  using namespace derived_detail;
  const unsigned bits = recipe.width * 8u;
  const std::uint64_t mask = mask_of(recipe.width);
  const std::uint64_t sign = std::uint64_t{1} << (bits - 1);
  auto source = [](const DerivedOperand& operand, std::uint64_t value) {
    return ((value >> operand.shift) & operand.keep) | operand.constant;
  };
  a = source(recipe.a, a);
  b = source(recipe.b, b);
  std::uint64_t result = 0, flags = 0;
  switch (recipe.operation) {
    case DerivedOperation::kNone: return {destination, old_flags};
    case DerivedOperation::kMove: result = a & mask; break;
    case DerivedOperation::kLea:
      result = (a + b * recipe.scale + recipe.displacement) & mask_of(recipe.address_bytes) & mask;
      break;
    case DerivedOperation::kNot: result = ~a & mask; break;
    case DerivedOperation::kAdd:
      a &= mask, b &= mask;
      result = (a + b) & mask;
      if (result < a) flags |= kCarry;
      if ((a ^ result) & (b ^ result) & sign) flags |= kOverflow;
      flags |= (a ^ b ^ result) & kAdjust;
      break;
    case DerivedOperation::kSub:
      a &= mask, b &= mask;
      result = (a - b) & mask;
      if (a < b) flags |= kCarry;
      if ((a ^ b) & (a ^ result) & sign) flags |= kOverflow;
      flags |= (a ^ b ^ result) & kAdjust;
      break;
    case DerivedOperation::kAnd: result = a & b & mask; break;  // CF = OF = 0; AF = 0 as QEMU leaves it
    case DerivedOperation::kOr: result = (a | b) & mask; break;
    case DerivedOperation::kXor: result = (a ^ b) & mask; break;
    case DerivedOperation::kInc:
      a &= mask;
      result = (a + 1) & mask;
      flags |= old_flags & kCarry;
      if (result == sign) flags |= kOverflow;
      flags |= (a ^ 1 ^ result) & kAdjust;
      break;
    case DerivedOperation::kDec:
      a &= mask;
      result = (a - 1) & mask;
      flags |= old_flags & kCarry;
      if (a == sign) flags |= kOverflow;
      flags |= (a ^ 1 ^ result) & kAdjust;
      break;
    case DerivedOperation::kNeg:
      a &= mask;
      result = (0 - a) & mask;
      if (a != 0) flags |= kCarry;
      if (a == sign) flags |= kOverflow;
      flags |= (a ^ result) & kAdjust;
      break;
  }
  DerivedValues values{destination, old_flags};
  if (recipe.sets_flags) {
    if (result == 0) flags |= kZero;
    if (result & sign) flags |= kSign;
    if (!__builtin_parityll(result & 0xff)) flags |= kParity;
    values.flags = (old_flags & ~kArithmeticFlags) | flags;
  }
  if (recipe.stores_result) {
    if (recipe.width >= 4) {
      values.destination = result;  // a 32-bit result zero-extends into its 64-bit register
    } else {
      const std::uint64_t field = mask << recipe.destination_shift;
      values.destination = (destination & ~field) | (result << recipe.destination_shift);
    }
    values.destination &= mask_of(recipe.destination_bytes);
  }
  return values;
}

}  // namespace tracecorn::arch
