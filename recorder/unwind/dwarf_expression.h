// Role: a DW_OP evaluator for the expressions DWARF CFI uses
// (DW_CFA_def_cfa_expression, DW_CFA_expression, DW_CFA_val_expression), as in
// glibc's PLT stubs and signal trampoline.
// Who calls it: the Unwinder, on its thread, for rows with expression rules.
// Invariants: the expression bytes are untrusted. The stack holds at most
// kMaxStack values, at most kMaxSteps operations run (a backward DW_OP_skip
// cannot loop forever), every memory read goes through the MemoryReader and
// fails cleanly, registers not known in the RegisterSet are an error. Never
// aborts: every failure is an Error with the offset of the operation.
// Not supported (an Error names the op): DW_OP_fbreg, DW_OP_piece and other
// operations that only make sense in debug info, not in CFI.
#pragma once

#include <cstdint>
#include <optional>
#include <span>

#include "recorder/support/expected.h"
#include "recorder/unwind/unwind_rules.h"

namespace tracecorn::unwind {

struct ExpressionLimits {
  unsigned max_stack = 64;
  unsigned max_steps = 1000;
};

struct ExpressionContext {
  const RegisterSet* registers = nullptr;  // the frame's registers (DW_OP_breg*, DW_OP_reg*)
  MemoryReader* memory = nullptr;          // for DW_OP_deref*; nullptr: any deref fails
  unsigned address_size = 8;               // bytes (DW_OP_addr, DW_OP_deref)
  bool little_endian = true;
  ExpressionLimits limits;
  std::uint64_t section_offset = 0;  // where the expression starts in its section (for errors)
};

// Evaluates `expression` with `initial` pushed first when given (the CFA, for
// register rules). Returns the value on top of the stack at the end (the
// result of DW_OP_reg*, which names a register's value, is that value).
// Errors: kBadFormat (unknown or truncated op, stack underflow, division by
// zero, an unknown register), kLimit (stack or step limit), kIo (a memory read
// the reader refused); the offset is that of the failing operation.
Expected<std::uint64_t> evaluate_expression(std::span<const std::uint8_t> expression, const ExpressionContext& context,
                                            std::optional<std::uint64_t> initial);

}  // namespace tracecorn::unwind
