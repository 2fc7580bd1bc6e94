// Role: the recorder's copy of the guest's registers (the regs and full
// levels): what each instruction changed is found by reading the registers it
// can write and comparing them with this shadow; with derivation (x86,
// arch/derived_registers.h) the values of simple integer instructions are
// computed from it instead of read. The shadow must then hold every
// register's current value, so whenever it may not (an instruction the hooks
// did not see, a run that ended and may restart with new registers) it is
// marked stale and read whole again at the next block (refresh_if_stale).
// Threads: emulation thread, but for derived_total() (any thread, any time).
// Invariants: slots are 16 bytes, zero beyond what Unicorn writes for the
// register (its width, probed at attach: EFLAGS is written as 32 bits).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include <unicorn/unicorn.h>

#include "arch/arch.h"
#include "recorder/core/block_cache.h"

namespace tracecorn::core {

class RegisterShadow {
 public:
  struct Slot {
    std::uint8_t bytes[16] = {};
  };
  // At most this many registers one instruction can write (read in one batch).
  static constexpr std::size_t kMaxWritten = 32;

  RegisterShadow(uc_engine* engine, const arch::ArchInfo& arch) : engine_(engine), arch_(arch) {}
  RegisterShadow(const RegisterShadow&) = delete;
  RegisterShadow& operator=(const RegisterShadow&) = delete;

  // Reads every register and probes the bytes Unicorn writes for each;
  // `derive`: values of instructions with a recipe are computed, not read.
  void attach(bool derive);

  // Every register of the table into `out` (one slot each).
  void read_all(std::vector<Slot>& out) const noexcept;
  const std::vector<Slot>& slots() const noexcept { return slots_; }
  // The shadow holds every register's value again: read now, or `values`.
  void reload() noexcept {
    read_all(slots_);
    exact_again();
  }
  void assign(const std::vector<Slot>& values) {
    slots_ = values;
    exact_again();
  }
  // The shadow may no longer hold every register's value (see above).
  void mark_stale() noexcept {
    if (!derive_) return;
    stale_ = true;
    derive_now_ = false;
  }
  void refresh_if_stale() noexcept {
    if (stale_) [[unlikely]] reload();
  }
  // Whether an instruction's recipe may be used now (derivation on, shadow exact).
  bool derive_now() const noexcept { return derive_now_; }

  // Reads the first `written` registers `insn` can write in one batch (a
  // single uc_reg_read costs ~8 ns; a batch of 16 ~42 ns on Unicorn 2.0.1),
  // then for each that changed updates the shadow and calls
  // changed(index, size, low 8 bytes, high 8 bytes). Common widths are loaded
  // at their own size, so the loads forward from Unicorn's stores.
  template <typename Changed>
  [[gnu::always_inline]] void read_changes(const DecodedInstruction& insn, std::size_t written,
                                           Changed&& changed) noexcept;

  // Derivation reads and writes the slots in place (one per register, in
  // the table's order); they must stay exact (derive_now()).
  Slot* data() noexcept { return slots_.data(); }
  // One more instruction whose writes were derived, which stats read from any
  // thread at any time (one writer: a relaxed load and store, plain moves on
  // x86, no locked add).
  void count_derived() noexcept {
    derived_total_.store(derived_total_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }
  std::uint64_t derived_total() const noexcept { return derived_total_.load(std::memory_order_relaxed); }

 private:
  void exact_again() noexcept {
    stale_ = false;
    derive_now_ = derive_;
  }

  uc_engine* engine_;
  const arch::ArchInfo& arch_;
  std::vector<Slot> slots_;
  std::vector<std::uint8_t> unicorn_width_;  // bytes Unicorn writes per register (index as in arch registers)
  bool derive_ = false;
  bool stale_ = false;       // read the whole shadow again at the next block
  bool derive_now_ = false;  // derive_ && !stale_
  std::atomic<std::uint64_t> derived_total_{0};
  // The batch read's buffers: 64 bytes each (room for any register Unicorn can write).
  std::uint8_t read_values_[kMaxWritten][64] = {};
  void* read_pointers_[kMaxWritten] = {};
};

template <typename Changed>
inline void RegisterShadow::read_changes(const DecodedInstruction& insn, std::size_t written, Changed&& changed) noexcept {
  uc_reg_read_batch(engine_, const_cast<int*>(insn.written_unicorn_ids.data()), read_pointers_,
                    static_cast<int>(written));
  // Locals: `changed` writes through byte pointers, which may alias members,
  // so members read in the loop would be reloaded after every write.
  const std::uint16_t* indices = insn.written_registers.data();
  const std::uint8_t* widths = unicorn_width_.data();
  const arch::RegisterInfo* infos = arch_.registers.data();
  Slot* slots = slots_.data();
  for (std::size_t i = 0; i < written; ++i) {
    const std::uint16_t index = indices[i];
    const std::uint8_t* value = read_values_[i];
    std::uint64_t value_low = 0, value_high = 0, shadow_low, shadow_high;
    switch (widths[index]) {
      case 8: std::memcpy(&value_low, value, 8); break;
      case 4: {
        std::uint32_t narrow;
        std::memcpy(&narrow, value, 4);
        value_low = narrow;
        break;
      }
      default: {
        std::uint8_t wide[16] = {};
        std::memcpy(wide, value, widths[index]);
        std::memcpy(&value_low, wide, 8);
        std::memcpy(&value_high, wide + 8, 8);
      }
    }
    Slot& shadow = slots[index];
    std::memcpy(&shadow_low, shadow.bytes, 8);
    std::memcpy(&shadow_high, shadow.bytes + 8, 8);
    if (value_low == shadow_low && value_high == shadow_high) continue;
    std::memcpy(shadow.bytes, &value_low, 8);
    std::memcpy(shadow.bytes + 8, &value_high, 8);
    changed(index, infos[index].size, value_low, value_high);
  }
}

}  // namespace tracecorn::core
