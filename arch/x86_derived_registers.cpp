// Role: x86's instruction semantics for derived registers (arch/derived_registers.h):
// which x86-64 and i386 instructions have a recipe, read from Capstone's x86
// detail (ArchEngine::describe_derived_writes of both).
#include "arch/derived_registers.h"

#include "arch/arch_engine.h"
#include "arch/x86_common.h"

#include <algorithm>
#include <string_view>

namespace tracecorn::arch {

namespace {

// The general-purpose registers (their full names in the arch tables): the only
// registers a recipe reads or writes (not segment, control or vector registers).
bool is_general_register(const ArchInfo& arch, int index) {
  static constexpr std::string_view kNames[] = {"rax", "rbx", "rcx", "rdx", "rsi", "rdi", "rbp", "rsp",
                                                "r8",  "r9",  "r10", "r11", "r12", "r13", "r14", "r15",
                                                "eax", "ebx", "ecx", "edx", "esi", "edi", "ebp", "esp"};
  if (index < 0 || static_cast<std::size_t>(index) >= arch.registers.size()) return false;
  const std::string_view name = arch.registers[static_cast<std::size_t>(index)].name;
  return std::find(std::begin(kNames), std::end(kNames), name) != std::end(kNames);
}

bool is_high_byte(unsigned reg) {
  return reg == X86_REG_AH || reg == X86_REG_BH || reg == X86_REG_CH || reg == X86_REG_DH;
}

bool register_operand(const ArchInfo& arch, unsigned reg, DerivedOperand& out) {
  const int index = arch.engine->register_index_for_capstone(reg);
  if (!is_general_register(arch, index)) return false;
  out.index = static_cast<std::uint16_t>(index);
  out.shift = is_high_byte(reg) ? 8 : 0;
  return true;
}

bool source_operand(const ArchInfo& arch, const cs_x86_op& op, DerivedOperand& out) {
  if (op.type == X86_OP_IMM) {
    out.keep = 0;
    out.constant = static_cast<std::uint64_t>(op.imm);
    return true;
  }
  return op.type == X86_OP_REG && register_operand(arch, op.reg, out);
}

// lea's memory operand: base (a general register, rip, or none), index (a
// general register or none) and scale, no segment base (lea ignores it).
bool address_operands(const ArchInfo& arch, const cs_insn& insn, const cs_x86_op& op, DerivedWrites& recipe) {
  if (op.type != X86_OP_MEM) return false;
  const x86_op_mem& mem = op.mem;
  if (mem.base == X86_REG_RIP) {
    recipe.a.keep = 0;
    recipe.a.constant = insn.address + insn.size;
  } else if (mem.base == X86_REG_INVALID) {
    recipe.a.keep = 0;
  } else if (!register_operand(arch, mem.base, recipe.a) || recipe.a.shift) {
    return false;
  }
  if (mem.index == X86_REG_INVALID) {
    recipe.b.keep = 0;
  } else if (!register_operand(arch, mem.index, recipe.b) || recipe.b.shift) {
    return false;
  }
  if (mem.scale != 1 && mem.scale != 2 && mem.scale != 4 && mem.scale != 8) return false;
  recipe.scale = static_cast<std::uint8_t>(mem.scale);
  recipe.displacement = static_cast<std::uint64_t>(mem.disp);
  const std::uint8_t address_bytes = insn.detail->x86.addr_size;
  if (address_bytes != 2 && address_bytes != 4 && address_bytes != 8) return false;
  recipe.address_bytes = address_bytes;
  return true;
}

}  // namespace

bool x86_describe_derived_writes(const ArchInfo& arch, const cs_insn& insn, DerivedWrites& out) {
  if (!insn.detail) return false;
  DerivedWrites recipe;
  std::uint8_t operands = 2;
  recipe.stores_result = true;
  recipe.sets_flags = true;
  switch (insn.id) {
    case X86_INS_MOV:
    case X86_INS_MOVABS: recipe.operation = DerivedOperation::kMove, recipe.sets_flags = false; break;
    case X86_INS_ADD: recipe.operation = DerivedOperation::kAdd; break;
    case X86_INS_SUB: recipe.operation = DerivedOperation::kSub; break;
    case X86_INS_CMP: recipe.operation = DerivedOperation::kSub, recipe.stores_result = false; break;
    case X86_INS_AND: recipe.operation = DerivedOperation::kAnd; break;
    case X86_INS_TEST: recipe.operation = DerivedOperation::kAnd, recipe.stores_result = false; break;
    case X86_INS_OR: recipe.operation = DerivedOperation::kOr; break;
    case X86_INS_XOR: recipe.operation = DerivedOperation::kXor; break;
    case X86_INS_INC: recipe.operation = DerivedOperation::kInc, operands = 1; break;
    case X86_INS_DEC: recipe.operation = DerivedOperation::kDec, operands = 1; break;
    case X86_INS_NEG: recipe.operation = DerivedOperation::kNeg, operands = 1; break;
    case X86_INS_NOT: recipe.operation = DerivedOperation::kNot, operands = 1, recipe.sets_flags = false; break;
    case X86_INS_LEA: recipe.operation = DerivedOperation::kLea, recipe.sets_flags = false; break;
    default: return false;
  }
  const cs_x86& x86 = insn.detail->x86;
  if (x86.op_count != operands) return false;
  // lock (invalid with a register operand) or rep: leave it to Unicorn.
  if (x86.prefix[0] != 0) return false;
  recipe.width = x86.operands[0].size;
  if (recipe.width != 1 && recipe.width != 2 && recipe.width != 4 && recipe.width != 8) return false;
  const cs_x86_op& target = x86.operands[0];
  if (target.type != X86_OP_REG) return false;
  DerivedOperand destination;
  if (!register_operand(arch, target.reg, destination)) return false;
  recipe.destination = destination.index;
  recipe.destination_shift = destination.shift;
  recipe.destination_bytes = arch.registers[destination.index].size;
  recipe.destination_head = destination.index | std::uint64_t{recipe.destination_bytes} << 16;
  if (recipe.destination_bytes != 4 && recipe.destination_bytes != 8) return false;
  if (recipe.operation == DerivedOperation::kLea) {
    if (!address_operands(arch, insn, x86.operands[1], recipe)) return false;
  } else if (recipe.operation == DerivedOperation::kMove) {
    if (!source_operand(arch, x86.operands[1], recipe.a)) return false;
  } else {
    recipe.a = destination;
    if (operands == 2 && !source_operand(arch, x86.operands[1], recipe.b)) return false;
  }
  if (recipe.sets_flags) {
    const int flags = arch.engine->register_index_for_capstone(X86_REG_EFLAGS);
    if (flags < 0) return false;
    recipe.flags_index = static_cast<std::uint16_t>(flags);
    recipe.flags_head = recipe.flags_index | std::uint64_t{arch.registers[recipe.flags_index].size} << 16;
  }
  out = recipe;
  return true;
}

}  // namespace tracecorn::arch
