// Role: the recorder's knowledge of translated blocks: each block the guest
// enters is read from guest memory and decoded once (with Capstone, or with the
// architecture's own decoder where Capstone has none: riscv64's
// arch::ArchInfo::decode_without_capstone), and the
// result (instruction boundaries, the registers each instruction can change,
// the memory accesses it makes) is cached by address, size and instruction-set
// mode (arm: the same bytes are different instructions in ARM and Thumb state).
// Who uses it: the recorder's hooks on the emulation thread (producer side) and
// the event assembler (decoding block records back into instruction events).
// Not thread safe: the producer and the consumer each keep their own cache; the
// producer's definitions travel to the consumer through the ring.
// Invariants: a cached block is never changed; blocks are dropped from the
// lookup (forget_range) when the guest unmaps or rewrites code, so a stale decode
// is never reused; a dropped block stays alive under its id (records already in
// the ring name it), so ids are never reused and a pointer stays valid for the
// cache's lifetime.
//
// Block ids: the producer numbers blocks in the order it defines them (0, 1,
// 2...); a kBlockDefinition record carries the id and kBlockRun records name
// executed blocks by id (4 bytes each). The consumer keeps a BlockTable indexed
// by the same ids.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <unordered_map>
#include <vector>

#include <capstone/capstone.h>

#include "arch/arch.h"
#include "arch/derived_registers.h"
#include "recorder/events/event.h"
#include "recorder/support/expected.h"

namespace tracecorn::core {

struct DecodedInstruction {
  std::uint64_t address = 0;
  std::uint8_t size = 0;
  std::uint16_t offset = 0;  // bytes from the block start (a block is at most a page and an instruction)
  // Indices into arch::ArchInfo::registers of what the instruction can write,
  // the flags register included when it sets flags; partial writes (al, eax) are
  // reported as their full register.
  std::vector<std::uint16_t> written_registers;
  std::vector<int> written_unicorn_ids;  // the same registers as Unicorn ids, for uc_reg_read_batch
  // x86 integer instructions whose written registers the producer may compute
  // instead of reading (arch/derived_registers.h): set only when decoded with
  // registers and the recipe writes exactly written_registers.
  arch::DerivedWrites derived;
  // Guest memory accesses one execution makes (arch::ArchEngine::count_memory_accesses);
  // `memory_count_fixed` false when it varies (rep prefixes...).
  std::uint8_t memory_reads = 0;
  std::uint8_t memory_writes = 0;
  bool memory_count_fixed = false;
};

struct DecodedBlock {
  std::uint64_t address = 0;
  std::uint32_t size = 0;
  std::uint32_t id = 0;                 // the producer's number for it (see above); set by BlockCache::insert
  std::uint32_t instruction_count = 0;  // instructions.size(), kept for the hot path
  std::uint8_t mode = 0;  // instruction set (arch::AlternateInstructionSet), 0 for one-mode architectures
  std::vector<std::uint8_t> bytes;
  std::vector<DecodedInstruction> instructions;
  std::vector<events::InstructionBounds> bounds;  // the same instructions' bounds, for InstructionRun
  // Index of the last instruction that accesses memory (or whose count varies); 0 if none.
  std::size_t last_memory_instruction = 0;
  // The producer's: the block lies (partly) on a page mapped writable, where the
  // guest may rewrite it in place, and no write hook watches that page (the
  // recorder then compares its bytes at each entry).
  bool unwatched_writable = false;
  // Both sides: the block was read from memory mapped writable, so its bytes
  // may be the guest's own (a JIT) rather than a file's (BlockEvent).
  bool from_writable_memory = false;
};

class BlockDecoder {
 public:
  static Expected<std::unique_ptr<BlockDecoder>> create(const arch::ArchInfo& arch);
  ~BlockDecoder();
  BlockDecoder(const BlockDecoder&) = delete;
  BlockDecoder& operator=(const BlockDecoder&) = delete;

  // Decodes `bytes` as the block at `address`, in instruction-set `mode` (0 on
  // one-mode architectures; arm: 1 = Thumb). With `with_registers`, fills
  // written_registers (costs Capstone detail mode). Never fails: undecodable
  // bytes become one pseudo-instruction.
  DecodedBlock decode(std::uint64_t address, std::span<const std::uint8_t> bytes, bool with_registers,
                      std::uint8_t mode = 0) const;

 private:
  explicit BlockDecoder(const arch::ArchInfo& arch) : arch_(arch) {}
  // Fill block.instructions from block.bytes: with Capstone, or with the
  // architecture's own decoder (arch::ArchInfo::decode_without_capstone).
  void decode_with_capstone(DecodedBlock& block, bool with_registers) const;
  void decode_without_capstone(DecodedBlock& block, bool with_registers) const;
  // Sets the fields derived from block.instructions (count, bounds, last memory instruction).
  static void finish_block(DecodedBlock& block);
  const arch::ArchInfo& arch_;
  std::array<csh, 2> handles_{};  // one per instruction-set mode
};

// (address, size, mode) -> decoded block: a direct-mapped cache in front of a
// hash map, so that the lookup made at every block entry is a few loads in the
// common case. Owns its blocks (by id).
class BlockCache {
 public:
  const DecodedBlock* find(std::uint64_t address, std::uint32_t size, std::uint8_t mode = 0) const {
    const Slot& slot = slots_[slot_index(address)];
    if (slot.block && slot.address == address && slot.size == size && slot.block->mode == mode) [[likely]]
      return slot.block;
    return find_slow(address, size, mode);
  }
  // Stores `block` under the next id (written into the stored block's `id`) and
  // returns it; a block already cached at the same (address, size, mode) is replaced
  // in the lookup (it keeps its id). Allocates; throws std::bad_alloc.
  const DecodedBlock* insert(DecodedBlock block);
  // Drops every block overlapping [start, end) from the lookup (not from by_id).
  void forget_range(std::uint64_t start, std::uint64_t end);
  // True when [start, end) overlaps a block in the lookup: a guest write there
  // rewrites decoded code. Costs a bit test per page when no block is on the
  // page (the filter below), which is what nearly every data write finds.
  bool covers_code(std::uint64_t start, std::uint64_t end) const {
    if (end <= start) return false;
    for (std::uint64_t page = start >> kPageShift; page <= (end - 1) >> kPageShift; ++page)
      if (page_filter_[(page >> 6) & (kFilterWords - 1)] >> (page & 63) & 1) return covers_code_slow(start, end);
    return false;
  }
  // The block with this id (also a forgotten one), or nullptr when no block has it.
  const DecodedBlock* by_id(std::uint32_t id) const { return id < by_id_.size() ? by_id_[id].get() : nullptr; }
  // Blocks in the lookup.
  std::size_t size() const { return blocks_.size(); }
  // Every block ever inserted, forgotten ones included, by id (for a flight-recorder dump).
  std::vector<const DecodedBlock*> all() const {
    std::vector<const DecodedBlock*> out;
    for (const auto& block : by_id_) out.push_back(block.get());
    return out;
  }

 private:
  struct Slot {
    std::uint64_t address = 0;
    std::uint32_t size = 0;
    const DecodedBlock* block = nullptr;
  };
  static constexpr std::size_t kSlots = 4096;
  static std::size_t slot_index(std::uint64_t address) { return (address ^ (address >> 12)) & (kSlots - 1); }
  const DecodedBlock* find_slow(std::uint64_t address, std::uint32_t size, std::uint8_t mode) const;
  bool covers_code_slow(std::uint64_t start, std::uint64_t end) const;

  std::vector<std::unique_ptr<DecodedBlock>> by_id_;
  std::unordered_map<std::uint64_t, const DecodedBlock*> blocks_;
  mutable std::vector<Slot> slots_ = std::vector<Slot>(kSlots);
  // Pages that blocks cover: a filter of one bit per page-number hash (set, never
  // cleared: a stale bit only sends a write to the exact check) and, exactly,
  // each page's blocks (forgotten ones dropped by forget_range).
  static constexpr unsigned kPageShift = 12;
  static constexpr std::size_t kFilterWords = 1024;  // 65536 bits
  std::array<std::uint64_t, kFilterWords> page_filter_{};
  std::unordered_map<std::uint64_t, std::vector<const DecodedBlock*>> blocks_by_page_;
};

// id -> decoded block, on the consumer side: filled from kBlockDefinition
// records (or from the producer's cache for a flight-recorder dump).
class BlockTable {
 public:
  // The block with this id, or nullptr when none was defined.
  const DecodedBlock* find(std::uint32_t id) const { return id < blocks_.size() ? blocks_[id].get() : nullptr; }
  // Stores `block` under block.id, replacing what was there. Returns it. Allocates;
  // throws std::bad_alloc (an id is at most the number of blocks the producer decoded).
  const DecodedBlock* define(DecodedBlock block);

 private:
  std::vector<std::unique_ptr<DecodedBlock>> blocks_;
};

}  // namespace tracecorn::core
