// Role: the recorder's producer output: what the hooks and the process events
// write into the ring, in execution order. Three channels share it: the run of
// blocks executed since the last record (block ids, written as kBlockRun
// records), the register batch of the regs levels (register changes, block
// markers and memory accesses as kRegisterBatch items), and every other record
// through reserve(), which writes what is pending first. A record that cannot
// be written is counted, and a kGap record stands in its place as soon as one
// fits, so a loss is never silent (ring_records.h has the layouts).
// Threads: emulation thread only, but for records_lost() (any thread).
// Invariants: an item goes into the batch only when no run is pending (the
// run is written first, as markers or as a record), so records stay in order.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "recorder/core/ring_records.h"
#include "recorder/ring/spsc_ring.h"

namespace tracecorn::core {

class RecordOutput {
 public:
  // `fast_blocks`: the block hook's fast-path flag, cleared when a run is
  // written while `sink_failed` says the trace cannot be written (the block
  // hook then takes its full path, which stops the emulation).
  RecordOutput(std::atomic<bool>& fast_blocks, const std::atomic<bool>& sink_failed)
      : fast_blocks_(fast_blocks), sink_failed_(sink_failed) {}

  // Before any record: the ring written to (it outlives this output).
  void attach(ring::SpscRing& ring) noexcept;
  ring::SpscRing& ring() noexcept { return *ring_; }

  // ---- the block run ----
  // Appends a block executed (its id); a full run is written at once.
  [[gnu::always_inline]] void append_block(std::uint32_t id) noexcept {
    run_[run_count_] = id;
    if (++run_count_ == kMaxBlockRun) [[unlikely]] write_full_run();
  }
  // The id of the last block appended and not yet written (a block the
  // kernel may take back: a signal delivered at its start, a thread switch).
  bool has_pending_block() const noexcept { return run_count_ != 0; }
  std::uint32_t last_pending_block() const noexcept { return run_[run_count_ - 1]; }
  void drop_last_pending_block() noexcept { --run_count_; }

  // ---- the register batch (regs levels) ----
  // Before an item of up to `item_bytes` goes into the batch: the blocks run
  // since the last item go first (as markers, or as a run record when there
  // are many), then the batch is written if the item would not fit. Returns
  // where the item goes; add_item() then counts it.
  [[gnu::always_inline]] std::uint8_t* make_room_for_item(std::size_t item_bytes) noexcept {
    if (run_count_ == 0 && register_batch_used_ + item_bytes <= register_batch_limit_) [[likely]]
      return register_batch_.data() + register_batch_used_;
    return make_room_after_blocks(item_bytes);
  }
  // The largest item one batch can hold (what one ring record can carry).
  std::size_t batch_limit() const noexcept { return register_batch_limit_; }
  std::uint8_t* batch_data() noexcept { return register_batch_.data(); }
  // The item make_room_for_item placed ends at `end`.
  void add_item(const std::uint8_t* end) noexcept {
    register_batch_used_ = static_cast<std::size_t>(end - register_batch_.data());
    ++register_batch_items_;
  }

  // ---- every other record ----
  // Room for a record of `size` bytes after what is pending (the batch, then
  // the run); nullptr when it cannot be written (counted as lost).
  std::byte* reserve_bytes(std::uint32_t size) noexcept {
    write_pending();
    return reserve_uncut(size);
  }
  template <typename T>
  T* reserve(RecordKind kind, std::uint8_t flags, std::uint16_t aux) noexcept {
    auto* record = static_cast<T*>(static_cast<void*>(reserve_bytes(sizeof(T))));
    if (!record) return nullptr;
    record->header = {kind, flags, aux, 0};
    return record;
  }
  void commit() noexcept { ring_->commit(); }
  void publish() noexcept { ring_->publish(); }
  // A kRegisters/kSyscallRegisters record of `count` entries at `pc`.
  void write_registers(RecordKind kind, std::uint64_t pc, const RegisterEntry* entries, std::uint16_t count) noexcept;
  // Writes the batch and the run (before another record, at the end).
  void write_pending() noexcept {
    if (run_count_) {
      write_run();  // (the batch first)
    } else if (register_batch_used_) {
      write_register_batch();
    }
  }

  // ---- losses ----
  // One record (or `count`) could not be written: counted, and a kGap record
  // follows as soon as one fits.
  void count_lost(std::uint64_t count = 1) noexcept {
    records_lost_.store(records_lost_.load(std::memory_order_relaxed) + count, std::memory_order_relaxed);
    pending_lost_ += count;
  }
  std::uint64_t records_lost() const noexcept { return records_lost_.load(std::memory_order_relaxed); }

 private:
  void write_run() noexcept { write_run_prefix(run_count_); }
  // The block hook's run is full: every block but the one being entered is
  // written, that one stays (the kernel's block hook, called next, may take
  // it back, which it could not once written).
  void write_full_run() noexcept;
  // Writes the first `total` blocks of the run as kBlockRun records of at
  // most run_piece_ blocks (the ring's smallest records hold fewer than
  // kMaxBlockRun). (The hooks compare run_count_ with the constant
  // kMaxBlockRun, not with run_piece_: a member load there costs measurably.)
  void write_run_prefix(std::uint32_t total) noexcept;
  void write_register_batch() noexcept;
  std::uint8_t* make_room_after_blocks(std::size_t item_bytes) noexcept;
  std::byte* reserve_uncut(std::uint32_t size) noexcept {
    if (pending_lost_) [[unlikely]] write_gap();
    std::byte* bytes = ring_->reserve(size);
    if (!bytes) [[unlikely]] count_lost();
    return bytes;
  }
  void write_gap() noexcept;

  std::atomic<bool>& fast_blocks_;
  const std::atomic<bool>& sink_failed_;
  ring::SpscRing* ring_ = nullptr;
  std::uint32_t run_count_ = 0;
  std::uint32_t run_piece_ = 1;
  std::uint32_t run_[kMaxBlockRun];  // ids of the blocks executed since the last record
  // kRegisterBatch items back to back, register_batch_items_ of them in
  // register_batch_used_ bytes; at most register_batch_limit_ bytes.
  alignas(8) std::array<std::uint8_t, 4096> register_batch_{};
  std::size_t register_batch_used_ = 0;
  std::uint64_t register_batch_items_ = 0;
  std::size_t register_batch_limit_ = 0;
  std::atomic<std::uint64_t> records_lost_{0};
  std::uint64_t pending_lost_ = 0;  // lost since the last kGap record
};

inline std::uint8_t* RecordOutput::make_room_after_blocks(std::size_t item_bytes) noexcept {
  constexpr std::uint32_t kMostMarkers = 4;
  if (run_count_ > kMostMarkers) write_run();  // (writes the batch first)
  const std::size_t markers = run_count_ * sizeof(RegisterBatchItem);
  if (register_batch_used_ + markers + item_bytes > register_batch_limit_) write_register_batch();
  if (run_count_ != 0) {
    std::uint8_t* out = register_batch_.data() + register_batch_used_;
    for (std::uint32_t i = 0; i < run_count_; ++i, out += sizeof(RegisterBatchItem)) {
      const std::uint64_t id = run_[i], count_word = kBlockMarkerCount;  // RegisterBatchItem, as two integers
      std::memcpy(out, &id, 8);
      std::memcpy(out + 8, &count_word, 8);
    }
    register_batch_used_ += markers;
    register_batch_items_ += run_count_;
    run_count_ = 0;
  }
  return register_batch_.data() + register_batch_used_;
}

}  // namespace tracecorn::core
