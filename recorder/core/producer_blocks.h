// Role: the recorder's blocks on the producer side: each block the guest
// enters is found by the block hook, first in a direct-mapped table of ids
// (the fast path: one 16-byte slot), then in the block cache, or read from
// guest memory, decoded and defined (its kBlockDefinition record written to
// the ring, so the consumer can decode it back). Code the guest may rewrite in
// place (on a writable page) is compared with its decoded bytes before reuse
// where no write hook sees the writes (the rewritten-code check); code that
// was written, unmapped or made writable is forgotten.
// Threads: emulation thread only, but for decoded() (any thread).
// Invariants: a slot holds a copy of what the cache answers for a block that
// is not on a writable page; forget() empties both, so a stale decode is
// never found again.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include <unicorn/unicorn.h>

#include "arch/arch.h"
#include "recorder/core/block_cache.h"
#include "recorder/core/record_output.h"
#include "recorder/support/expected.h"

namespace tracecorn::core {

class ProducerBlocks {
 public:
  // One slot of the fast path's table: (address, size) -> the block's id.
  // An empty slot's size matches no block (a block is read from guest
  // memory, so it is far smaller).
  static constexpr std::uint32_t kEmptySlotSize = 0xffffffffu;
  struct IdSlot {
    std::uint64_t address = 0;
    std::uint32_t size = kEmptySlotSize;
    std::uint32_t id = 0;
  };

  ProducerBlocks(uc_engine* engine, const arch::ArchInfo& arch, RecordOutput& output)
      : engine_(engine), arch_(arch), output_(output) {}
  // Creates the decoder; `with_registers`: decode the registers each
  // instruction can write (regs levels).
  Status attach(bool with_registers);

  // The fast path's slot for a block at `address` (it holds another block, or
  // none, when its address and size differ).
  [[gnu::always_inline]] const IdSlot& slot(std::uint64_t address) const noexcept {
    return id_slots_[slot_index(address)];
  }
  // The block at (address, size) in instruction-set `mode`: cached, or read
  // and decoded now (nullptr when it cannot be read: counted as a loss).
  // `check_rewritten`: a cached block on a writable page is compared with
  // guest memory first and decoded again when it changed.
  const DecodedBlock* lookup(std::uint64_t address, std::uint32_t size, std::uint8_t mode,
                             bool check_rewritten) noexcept;
  // The fast path may find `block` from now on (not a block on a writable page).
  void remember(const DecodedBlock& block) noexcept {
    if (!block.on_writable_page) id_slots_[slot_index(block.address)] = IdSlot{block.address, block.size, block.id};
  }
  // Whether any decoded block overlaps [start, end).
  bool covers_code(std::uint64_t start, std::uint64_t end) const noexcept {
    return cache_.covers_code(start, end);
  }
  // Blocks decoded in [start, end) are stale: out of both lookups.
  void forget(std::uint64_t start, std::uint64_t end) noexcept;
  const DecodedBlock* by_id(std::uint32_t id) const noexcept { return cache_.by_id(id); }
  std::vector<const DecodedBlock*> all() const { return cache_.all(); }
  std::uint64_t decoded() const noexcept { return decoded_.load(std::memory_order_relaxed); }

 private:
  static constexpr std::size_t kIdSlots = 2048;  // 32 KiB
  static std::size_t slot_index(std::uint64_t address) noexcept {
    return static_cast<std::size_t>(address ^ (address >> 11)) & (kIdSlots - 1);
  }
  const DecodedBlock* define(std::uint64_t address, std::uint32_t size, std::uint8_t mode) noexcept;
  bool on_writable_page(std::uint64_t address, std::uint32_t size) const noexcept;
  bool same_code(const DecodedBlock& block) noexcept;

  uc_engine* engine_;
  const arch::ArchInfo& arch_;
  RecordOutput& output_;
  std::array<IdSlot, kIdSlots> id_slots_{};
  BlockCache cache_;
  std::unique_ptr<BlockDecoder> decoder_;
  bool with_registers_ = false;
  std::vector<std::uint8_t> code_scratch_;  // same_code's copy of guest code
  std::atomic<std::uint64_t> decoded_{0};
};

}  // namespace tracecorn::core
