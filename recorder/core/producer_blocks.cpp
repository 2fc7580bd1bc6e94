// Role: implementation of ProducerBlocks (see producer_blocks.h). Emulation thread.
#include "recorder/core/producer_blocks.h"

#include <cstring>

namespace tracecorn::core {

Status ProducerBlocks::attach(bool with_registers, CodeWriteWatch::WriteCallback on_code_write, void* user) {
  auto decoder = BlockDecoder::create(arch_);
  if (!decoder) return decoder.error();
  decoder_ = std::move(*decoder);
  with_registers_ = with_registers;
  stores_hooked_ = on_code_write == nullptr;
  if (on_code_write) watch_.attach(engine_, on_code_write, user);
  // What is writable now may hold the guest's stores, whatever it becomes.
  uc_mem_region* regions = nullptr;
  std::uint32_t count = 0;
  if (uc_mem_regions(engine_, &regions, &count) == UC_ERR_OK) {
    for (std::uint32_t i = 0; i < count; ++i)
      if (regions[i].perms & UC_PROT_WRITE) mapping_changed(regions[i].begin, regions[i].end + 1, false, false, true);
    uc_free(regions);
  }
  return ok_status();
}

const DecodedBlock* ProducerBlocks::lookup(std::uint64_t address, std::uint32_t size, std::uint8_t mode) noexcept {
  const DecodedBlock* decoded = cache_.find(address, size, mode);
  // Unwatched code on a writable page may have been rewritten in place since it was decoded.
  if (decoded && decoded->unwatched_writable && !same_code(*decoded)) [[unlikely]] {
    forget(address, address + size);
    decoded = nullptr;
  }
  if (!decoded) [[unlikely]] decoded = define(address, size, mode);
  return decoded;
}

const DecodedBlock* ProducerBlocks::define(std::uint64_t address, std::uint32_t size, std::uint8_t mode) noexcept {
  try {
    std::vector<std::uint8_t> bytes(size);
    if (size == 0 || uc_mem_read(engine_, address, bytes.data(), size) != UC_ERR_OK) {
      output_.count_lost();
      return nullptr;
    }
    DecodedBlock fresh = decoder_->decode(address, bytes, with_registers_, mode);
    // Code on a writable page: stores there must be seen (a hook over its pages).
    const bool writable = on_writable_page(address, size);
    fresh.from_writable_memory = writable || was_writable(address, size);
    fresh.unwatched_writable = !stores_hooked_ && writable && !watch_.watch(address, size);
    const DecodedBlock* decoded = cache_.insert(std::move(fresh));
    decoded_.store(decoded_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    const std::uint32_t total = static_cast<std::uint32_t>(sizeof(BlockDefinitionRecord)) + padded8(size);
    if (auto* record = static_cast<BlockDefinitionRecord*>(static_cast<void*>(output_.reserve_bytes(total)))) {
      record->header = {RecordKind::kBlockDefinition, mode,
                        decoded->from_writable_memory ? kBlockFromWritableMemory : std::uint16_t{0}, 0};
      record->address = address;
      record->size = size;
      record->id = decoded->id;
      std::memcpy(reinterpret_cast<std::uint8_t*>(record) + sizeof *record, bytes.data(), size);
      output_.commit();
    }
    return decoded;
  } catch (...) {
    output_.count_lost();
    return nullptr;
  }
}

// Whether [address, address + size) lies (partly) in a region Unicorn maps
// writable: the guest may rewrite that code in place. Unknown counts as yes.
// (Called when a block is decoded; the Linux layer keeps few regions.)
bool ProducerBlocks::on_writable_page(std::uint64_t address, std::uint32_t size) const noexcept {
  uc_mem_region* regions = nullptr;
  std::uint32_t count = 0;
  if (uc_mem_regions(engine_, &regions, &count) != UC_ERR_OK) return true;
  bool writable = false;
  for (std::uint32_t i = 0; i < count; ++i)
    if (regions[i].begin < address + size && regions[i].end >= address && (regions[i].perms & UC_PROT_WRITE))
      writable = true;
  uc_free(regions);
  return writable;
}

void ProducerBlocks::mapping_changed(std::uint64_t start, std::uint64_t end, bool map, bool unmap,
                                     bool writable) noexcept {
  if (end <= start) return;
  try {
    if (map || unmap || writable) {  // [start, end) leaves the set (and comes back whole if writable)
      auto at = once_writable_.lower_bound(start);
      if (at != once_writable_.begin() && std::prev(at)->second > start) --at;
      while (at != once_writable_.end() && at->first < end) {
        const auto [first, last] = *at;
        at = once_writable_.erase(at);
        if (first < start) once_writable_.emplace(first, start);
        if (last > end) at = once_writable_.emplace(end, last).first;
      }
    }
    if (writable && !unmap) once_writable_.emplace(start, end);
  } catch (...) {
    once_writable_.clear();  // (out of memory: forgets the history; the current protection still counts)
  }
}

bool ProducerBlocks::was_writable(std::uint64_t address, std::uint32_t size) const noexcept {
  auto at = once_writable_.upper_bound(address + size - 1);
  return at != once_writable_.begin() && std::prev(at)->second > address;
}

// Whether guest memory still holds the bytes `block` was decoded from.
bool ProducerBlocks::same_code(const DecodedBlock& block) noexcept {
  try {
    if (code_scratch_.size() < block.size) code_scratch_.resize(block.size);  // (grows a few times at most)
  } catch (...) {
    return false;  // decoded again
  }
  return uc_mem_read(engine_, block.address, code_scratch_.data(), block.size) == UC_ERR_OK &&
         std::memcmp(code_scratch_.data(), block.bytes.data(), block.size) == 0;
}

void ProducerBlocks::forget(std::uint64_t start, std::uint64_t end) noexcept {
  try {
    cache_.forget_range(start, end);
  } catch (...) {
  }
  for (IdSlot& slot : id_slots_)
    if (slot.size != kEmptySlotSize && slot.address < end && slot.address + slot.size > start) slot = IdSlot{};
}

}  // namespace tracecorn::core
