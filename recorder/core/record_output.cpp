// Role: implementation of RecordOutput (see record_output.h). Emulation thread.
#include "recorder/core/record_output.h"

namespace tracecorn::core {

void RecordOutput::attach(ring::SpscRing& ring) noexcept {
  ring_ = &ring;
  register_batch_limit_ = std::min<std::size_t>(register_batch_.size(), ring.max_record_size() - sizeof(RecordHeader));
  // The longest run one record can carry in this ring (124 blocks in the
  // smallest ring, kMaxBlockRun from 8 KiB up).
  run_piece_ = static_cast<std::uint32_t>(
      std::min<std::size_t>(kMaxBlockRun, (ring.max_record_size() - sizeof(BlockRunRecord)) / 4));
}

void RecordOutput::write_full_run() noexcept {
  const std::uint32_t last = run_[run_count_ - 1];
  write_run_prefix(run_count_ - 1);
  run_[0] = last;
  run_count_ = 1;
}

void RecordOutput::write_run_prefix(std::uint32_t total) noexcept {
  if (register_batch_used_) write_register_batch();  // it came before these blocks
  run_count_ = 0;
  if (sink_failed_.load(std::memory_order_relaxed)) [[unlikely]] fast_blocks_.store(false, std::memory_order_relaxed);
  for (std::uint32_t first = 0; first < total; first += run_piece_) {
    const auto count = static_cast<std::uint16_t>(std::min(run_piece_, total - first));
    auto* record =
        static_cast<BlockRunRecord*>(static_cast<void*>(reserve_uncut(sizeof(BlockRunRecord) + padded8(count * 4u))));
    if (!record) {
      count_lost(count - 1u);  // reserve_uncut counted one
      continue;
    }
    record->header = {RecordKind::kBlockRun, 0, count, 0};
    std::memcpy(reinterpret_cast<std::uint8_t*>(record) + sizeof *record, run_ + first, count * 4u);
    ring_->commit();
  }
}

void RecordOutput::write_register_batch() noexcept {
  const std::size_t used = register_batch_used_;
  const std::uint64_t items = register_batch_items_;
  register_batch_used_ = 0;
  register_batch_items_ = 0;
  if (used == 0) return;
  std::byte* record = reserve_uncut(static_cast<std::uint32_t>(sizeof(RecordHeader) + used));
  if (!record) {
    count_lost(items - 1);  // reserve_uncut counted one
    return;
  }
  const RecordHeader header{RecordKind::kRegisterBatch, 0, 0, 0};
  std::memcpy(record, &header, sizeof header);
  std::memcpy(record + sizeof header, register_batch_.data(), used);
  ring_->commit();
}

void RecordOutput::write_registers(RecordKind kind, std::uint64_t pc, const RegisterEntry* entries,
                                   std::uint16_t count) noexcept {
  const std::uint32_t total = sizeof(RegistersRecord) + count * sizeof(RegisterEntry);
  auto* record = static_cast<RegistersRecord*>(static_cast<void*>(reserve_bytes(total)));
  if (!record) return;
  record->header = {kind, 0, count, 0};
  record->pc = pc;
  auto* out = reinterpret_cast<RegisterEntry*>(reinterpret_cast<std::uint8_t*>(record) + sizeof *record);
  for (std::uint16_t i = 0; i < count; ++i) std::memcpy(&out[i], &entries[i], sizeof(RegisterEntry));  // fixed size
  ring_->commit();
}

void RecordOutput::write_gap() noexcept {
  if (auto* gap = static_cast<GapRecord*>(static_cast<void*>(ring_->reserve(sizeof(GapRecord))))) {
    gap->header = {RecordKind::kGap, 0, 0, 0};
    gap->lost_events = pending_lost_;
    ring_->commit();
    pending_lost_ = 0;
  }
}

}  // namespace tracecorn::core
