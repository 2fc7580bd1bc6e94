// Role: the vocabulary shared by the unwinder's parts: how guest state reaches
// the unwinder (MemoryReader, RegisterSet) and what an unwind table says about
// one pc (UnwindRow: the CFA rule plus one rule per saved register), whatever
// table it came from (DWARF CFI, SFrame, or the frame-pointer convention).
// Who uses it: the CFI and SFrame parsers produce rows, the DW_OP evaluator and
// the Unwinder consume them; all on one thread (the emulation thread when
// recording). Nothing here knows Unicorn.
// Invariants: registers are named by their DWARF numbers; only numbers below
// kMaxRegisters are tracked (others, like aarch64's d8..d15, are parsed and
// ignored); a row holds at most kMaxRowRules rules, sorted by column, each
// column once; an expression rule's bytes point into the section it was parsed
// from, which outlives the row (modules are kept while any row of theirs is cached).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

namespace tracecorn::unwind {

inline constexpr unsigned kMaxRegisters = 64;  // DWARF numbers 0..63 are tracked
inline constexpr unsigned kMaxRowRules = 36;   // aarch64 sigreturn saves x0..x30, sp, pc

// Guest memory as the unwinder sees it. Implementations read the live guest
// (an adapter over a uc_engine in recorder/core) or a memory image (tests).
class MemoryReader {
 public:
  virtual ~MemoryReader() = default;
  // Copies `size` bytes at `address` into `out`; false when any byte is unmapped.
  virtual bool read(std::uint64_t address, void* out, std::size_t size) noexcept = 0;
};

// Register values by DWARF number, with a bit per register that is known.
struct RegisterSet {
  std::array<std::uint64_t, kMaxRegisters> value{};
  std::uint64_t known = 0;  // bit n: value[n] is valid

  bool has(unsigned reg) const { return reg < kMaxRegisters && ((known >> reg) & 1); }
  void set(unsigned reg, std::uint64_t v) {
    if (reg >= kMaxRegisters) return;
    value[reg] = v;
    known |= std::uint64_t{1} << reg;
  }
  void forget(unsigned reg) {
    if (reg < kMaxRegisters) known &= ~(std::uint64_t{1} << reg);
  }
};

enum class RuleKind : std::uint8_t {
  kUnspecified = 0,  // no rule: the register keeps its value (same as kSameValue for unwinding)
  kUndefined,        // not recoverable (for the return address column: the end of the stack)
  kSameValue,
  kOffset,           // saved at CFA + offset
  kValOffset,        // value is CFA + offset
  kRegister,         // value is in register `reg`
  kExpression,       // saved at the address the expression computes (CFA pushed first)
  kValExpression,    // value is what the expression computes (CFA pushed first)
};

struct RegisterRule {
  RuleKind kind = RuleKind::kUnspecified;
  std::uint16_t column = 0;
  std::uint32_t expression_size = 0;
  union {
    std::int64_t offset;
    std::uint64_t reg;
    const std::uint8_t* expression;
  };
  RegisterRule() : offset(0) {}
};
static_assert(sizeof(RegisterRule) == 16, "rules are packed in rows kept in the per-pc cache");

struct CfaRule {
  bool is_expression = false;
  std::uint16_t reg = 0;
  std::uint32_t expression_size = 0;
  std::int64_t offset = 0;
  const std::uint8_t* expression = nullptr;
};

// What one table says for one pc.
struct UnwindRow {
  std::uint64_t start = 0;  // file address range of the row (for CFI: [loc, next loc))
  std::uint64_t end = 0;
  CfaRule cfa;
  std::uint16_t return_column = 0;  // the column that holds the return address
  bool signal_frame = false;        // CIE augmentation 'S': the caller's pc is exact, not a return address
  bool return_address_signed = false;  // aarch64 DW_CFA_AARCH64_negate_ra_state toggled an odd number of times
  bool return_address_is_value = false;  // prologue analysis on Arm: exempt from gdb's no-saved-pc rule
  std::uint8_t rule_count = 0;
  std::uint64_t args_size = 0;      // DW_CFA_GNU_args_size (informational)
  const std::uint8_t* section_base = nullptr;  // for error offsets of expressions
  std::array<RegisterRule, kMaxRowRules> rules;

  std::span<const RegisterRule> rule_list() const { return {rules.data(), rule_count}; }
  // The rule of `column` (kUnspecified when the row has none).
  RegisterRule rule_for(unsigned column) const {
    for (std::uint8_t i = 0; i < rule_count; ++i)
      if (rules[i].column == column) return rules[i];
    RegisterRule none;
    none.column = static_cast<std::uint16_t>(column);
    return none;
  }
};

}  // namespace tracecorn::unwind
