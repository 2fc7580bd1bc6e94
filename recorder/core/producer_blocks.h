// Role: the recorder's blocks on the producer side: each block the guest
// enters is found by the block hook, first in a direct-mapped table of ids
// (the fast path: one 16-byte slot), then in the block cache, or read from
// guest memory, decoded and defined (its kBlockDefinition record written to
// the ring, so the consumer can decode it back, with whether it was read from
// memory that was writable at some time since it was mapped). Code the guest
// may rewrite in place (on a writable page) is watched for stores: by the
// memory levels' own write hook, or below them by write hooks over just those
// pages (code_write_watch.h); where Unicorn refuses such a hook, its bytes are
// compared with the decode at every entry instead. Code that was written,
// unmapped or made writable is forgotten.
// Threads: emulation thread only, but for decoded() (any thread).
// Invariants: a slot holds a copy of what the cache answers for a block whose
// rewriting would be seen (not unwatched_writable); forget() empties both, so
// a stale decode is never found again.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include <unicorn/unicorn.h>

#include "arch/arch.h"
#include "recorder/core/block_cache.h"
#include "recorder/core/code_write_watch.h"
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
  // instruction can write (regs levels). `on_code_write`: the callback of the
  // write hooks over code on writable pages (with `user`), or nullptr when a
  // write hook already sees every guest store (the memory levels).
  Status attach(bool with_registers, CodeWriteWatch::WriteCallback on_code_write, void* user);
  // Removes the write hooks (detach).
  void remove_hooks() noexcept { watch_.clear(); }

  // The fast path's slot for a block at `address` (it holds another block, or
  // none, when its address and size differ).
  [[gnu::always_inline]] const IdSlot& slot(std::uint64_t address) const noexcept {
    return id_slots_[slot_index(address)];
  }
  // The block at (address, size) in instruction-set `mode`: cached, or read
  // and decoded now (nullptr when it cannot be read: counted as a loss). A
  // cached block on a writable page that no hook watches is compared with
  // guest memory first and decoded again when it changed.
  const DecodedBlock* lookup(std::uint64_t address, std::uint32_t size, std::uint8_t mode) noexcept;
  // The fast path may find `block` from now on (unless its bytes must be compared at each entry).
  void remember(const DecodedBlock& block) noexcept {
    if (!block.unwatched_writable) id_slots_[slot_index(block.address)] = IdSlot{block.address, block.size, block.id};
  }
  // Whether any decoded block overlaps [start, end).
  bool covers_code(std::uint64_t start, std::uint64_t end) const noexcept {
    return cache_.covers_code(start, end);
  }
  // Blocks decoded in [start, end) are stale: out of both lookups.
  void forget(std::uint64_t start, std::uint64_t end) noexcept;
  // [start, end) was unmapped or its protection changed: its blocks are
  // stale and its pages no longer watched.
  void forget_mapping(std::uint64_t start, std::uint64_t end) noexcept {
    forget(start, end);
    watch_.unwatch(start, end);
  }
  // A mapping change (the Linux layer's mmap, munmap, mprotect), for what
  // may hold the guest's own stores: pages mapped or made writable, until
  // they are mapped again without write (a file's bytes, which the trace
  // holds) or unmapped; code read from them is from_writable_memory (a JIT
  // that writes its code and then makes it read-execute).
  void mapping_changed(std::uint64_t start, std::uint64_t end, bool map, bool unmap, bool writable) noexcept;
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
  bool was_writable(std::uint64_t address, std::uint32_t size) const noexcept;
  bool same_code(const DecodedBlock& block) noexcept;

  uc_engine* engine_;
  const arch::ArchInfo& arch_;
  RecordOutput& output_;
  std::array<IdSlot, kIdSlots> id_slots_{};
  BlockCache cache_;
  std::unique_ptr<BlockDecoder> decoder_;
  bool with_registers_ = false;
  CodeWriteWatch watch_;
  std::map<std::uint64_t, std::uint64_t> once_writable_;  // [start, end) made writable since mapped (mapping_changed)
  bool stores_hooked_ = false;              // a write hook sees every guest store
  std::vector<std::uint8_t> code_scratch_;  // same_code's copy of guest code
  std::atomic<std::uint64_t> decoded_{0};
};

}  // namespace tracecorn::core
