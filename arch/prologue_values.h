// Role: the symbolic register values and frame model that the riscv64 and arm
// prologue analysers share (gdb's "prologue values", prologue-value.h): a
// register holds unknown, a constant, or "register R at entry + k"; stores
// into the frame (addresses "sp at entry + k") are remembered per slot.
// Who uses it: arch/riscv64_prologue.cpp and arch/arm_prologue.cpp, on the
// unwinder's thread. Header-only, internal to arch/.
// Invariants: sums wrap around modulo 2^64 (as registers do: no signed
// overflow whatever the code); at most kMaxSlots slots, a store past that is
// dropped (analysis then knows less, never more); a store through an address
// not relative to the entry sp forgets every slot (it could be any of them).
#pragma once

#include <cstddef>
#include <cstdint>

#include "arch/prologue.h"

namespace tracecorn::arch::detail {

struct PrologueValue {
  enum Kind : std::uint8_t { kUnknown, kConstant, kRegister } kind = kUnknown;
  std::uint8_t reg = 0;
  std::int64_t k = 0;

  static PrologueValue constant(std::int64_t value) { return {kConstant, 0, value}; }
  static PrologueValue entry(unsigned reg) { return {kRegister, static_cast<std::uint8_t>(reg), 0}; }
  bool is_register(unsigned r) const { return kind == kRegister && reg == r; }
  PrologueValue plus(std::int64_t c) const {
    PrologueValue v = *this;
    if (v.kind != kUnknown) v.k = static_cast<std::int64_t>(static_cast<std::uint64_t>(v.k) + static_cast<std::uint64_t>(c));
    return v;
  }
};

// a + b when one of them is a constant; unknown otherwise.
inline PrologueValue add_values(PrologueValue a, PrologueValue b) {
  if (a.kind == PrologueValue::kConstant && b.kind != PrologueValue::kUnknown) return b.plus(a.k);
  if (b.kind == PrologueValue::kConstant && a.kind != PrologueValue::kUnknown) return a.plus(b.k);
  return {};
}

// The frame below the entry stack pointer, register `sp_reg`.
class FrameModel {
 public:
  explicit FrameModel(unsigned sp_reg) : sp_reg_(sp_reg) {}

  // Whether a store at `address` would forget every slot.
  bool store_would_trash(PrologueValue address) const { return !address.is_register(sp_reg_); }
  void store(PrologueValue address, std::uint8_t size, PrologueValue value) {
    if (store_would_trash(address)) {
      count_ = 0;
      return;
    }
    std::size_t kept = 0;
    for (std::size_t i = 0; i < count_; ++i) {
      const std::uint64_t distance = static_cast<std::uint64_t>(address.k) - static_cast<std::uint64_t>(slots_[i].offset);
      const bool overlaps = distance < slots_[i].size || 0 - distance < size;  // the ranges meet (modulo 2^64)
      if (!overlaps) slots_[kept++] = slots_[i];
    }
    count_ = kept;
    if (count_ < kMaxSlots) slots_[count_++] = {address.k, size, value};
  }
  // What a load of `size` bytes at `address` gives: a slot stored exactly there, else unknown.
  PrologueValue fetch(PrologueValue address, std::uint8_t size) const {
    if (!address.is_register(sp_reg_)) return {};
    for (std::size_t i = 0; i < count_; ++i)
      if (slots_[i].offset == address.k && slots_[i].size == size) return slots_[i].value;
    return {};
  }
  // Records in `out` every register 1..registers-1 whose entry value a slot
  // of `size` bytes holds (the first such slot), at its offset from the entry sp.
  void saved_registers(unsigned registers, std::uint8_t size, PrologueFrame& out) const {
    for (unsigned r = 1; r < registers; ++r) {
      for (std::size_t i = 0; i < count_; ++i) {
        const PrologueValue& v = slots_[i].value;
        if (slots_[i].size == size && v.is_register(r) && v.k == 0) {
          out.save(static_cast<std::uint16_t>(r), slots_[i].offset);
          break;
        }
      }
    }
  }

 private:
  static constexpr std::size_t kMaxSlots = 64;
  struct Slot {
    std::int64_t offset;  // from the entry sp
    std::uint8_t size;
    PrologueValue value;
  };
  unsigned sp_reg_;
  Slot slots_[kMaxSlots];
  std::size_t count_ = 0;
};

}  // namespace tracecorn::arch::detail
