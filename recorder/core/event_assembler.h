// Role: the consumer half of the recorder: turns ring records back into
// events::Event values, in order, and hands them to the sinks. It keeps its own
// block cache (from kBlockDefinition records), expands executed blocks into
// instruction events when the level asks for them, interleaves each
// instruction's memory and register events after it, and groups syscall
// effects into their syscall event.
// Who calls it: the drain thread (lossless), or the emulation thread when a
// flight-recorder ring is dumped. One thread at a time; not thread safe.
//
// Memory accesses and instructions: Unicorn's memory hooks do not give a
// reliable pc (Unicorn 2.0.1 updates RIP only where an instruction needs it),
// so at `mem` level (no per-instruction hook, by design: a code hook would
// cost ~3.3 ns per instruction) the accesses recorded inside one block are
// matched to its instructions in order, using the number of reads and writes
// each instruction makes (arch::ArchEngine::count_memory_accesses). When the
// observed accesses do not fit that plan (a rep-prefixed instruction, an
// instruction with a varying count), the rest of the block's accesses are
// emitted with pc_known = false rather than guessed. At `regs` and `full`
// levels the producer has an instruction hook and stores the exact pc.
//
// Batching: blocks, instructions and memory accesses reach the sinks in
// batches (Sink::on_events), and a block whose instructions ran with nothing
// recorded between them (no memory access, no register change, no syscall)
// reaches them as one InstructionRun (Sink::on_instructions): no event is built
// per instruction unless a sink asks for it (the default expands the run).
//
// Blocks that end early: a fault, a syscall or the stop of the emulation ends
// a block's instruction events at the instruction concerned (inclusive for a
// syscall, exclusive for a fault, as the fault did not complete it).
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "arch/arch.h"
#include "recorder/core/block_cache.h"
#include "recorder/core/ring_records.h"
#include "recorder/core/trace_level.h"
#include "recorder/events/event.h"

namespace tracecorn::core {

// A FIFO over a vector that keeps its capacity: pushing and popping never
// allocate once warmed up (std::deque allocates per chunk).
template <typename T>
class FlatQueue {
 public:
  bool empty() const { return head_ == items_.size(); }
  const T& front() const { return items_[head_]; }
  void pop_front() {
    if (++head_ == items_.size()) clear();
  }
  void push_back(const T& item) { items_.push_back(item); }
  void clear() {
    items_.clear();
    head_ = 0;
  }

 private:
  std::vector<T> items_;
  std::size_t head_ = 0;
};

class EventAssembler {
 public:
  EventAssembler(const arch::ArchInfo& arch, const BlockDecoder& decoder, TraceLevel level,
                 std::vector<events::Sink*> sinks);

  void begin(const events::TraceInfo& info);
  // One ring record. Malformed records (a bug, never guest data) are counted and skipped.
  void on_record(std::span<const std::byte> record);
  // Records that were lost before the next one (flight-recorder overwrite): a Gap event.
  void note_lost(std::uint64_t lost_events, std::string_view reason);
  // Flushes what is pending and ends every sink; returns the sinks' errors, joined.
  std::string end(bool interrupted);

  std::uint64_t events() const { return next_sequence_; }
  // Whether a sink cannot write any more (Sink::failed); on the consumer thread.
  bool sink_failed() const {
    for (const auto* sink : sinks_)
      if (sink->failed()) return true;
    return false;
  }
  // Events emitted so far by kind, indexed by EventKind (index 0 unused).
  const std::array<std::uint64_t, events::kEventKindCount>& events_by_kind() const { return by_kind_; }
  std::uint64_t instructions() const { return instructions_; }
  std::uint64_t malformed_records() const { return malformed_; }
  // Definitions the producer already holds (flight-recorder dumps read them directly).
  void adopt_block(const DecodedBlock& block);
  // Hands the batched events to the sinks now (the drain thread calls it when it
  // has consumed what was published; end() calls it too).
  void flush_events();
  // flush_events(), then each sink hands what it wrote to its file (Sink::flush).
  void flush_sinks();

 private:
  struct PendingMemory {
    bool write;
    std::uint8_t size;
    std::uint64_t address, value, pc;
  };
  struct PendingRegisters {
    std::uint64_t pc;
    std::uint32_t first;  // into register_pool_
    std::uint32_t count;
  };
  std::span<const events::RegisterValue> values_of(const PendingRegisters& pending) const {
    return std::span(register_pool_).subspan(pending.first, pending.count);
  }

  // Hands one event to every sink. Blocks, instructions and memory accesses
  // (whose spans point into blocks, which live as long as the assembler) are
  // batched: written into a reused slot of batch_ (no variant is built and
  // destroyed per event: this runs once per instruction) and handed over with
  // one Sink::on_events call per batch. Other events point into the assembler's
  // scratch state, so the batch is flushed and they go out at once, alone.
  template <typename Payload>
  void emit(events::EventKind kind, const Payload& payload) {
    constexpr bool kBatched = std::is_same_v<Payload, events::BlockEvent> ||
                              std::is_same_v<Payload, events::InstructionEvent> ||
                              std::is_same_v<Payload, events::MemoryEvent>;
    events::Event* event = &event_;
    if constexpr (kBatched) {
      if (batch_used_ == batch_.size()) flush_events();
      event = &batch_[batch_used_++];
    } else {
      flush_events();
    }
    event->sequence = events::EventSequence{next_sequence_++};
    event->thread = current_thread_;
    event->kind = kind;
    ++by_kind_[static_cast<std::size_t>(kind)];
    if (auto* same = std::get_if<Payload>(&event->payload))
      *same = payload;  // the common case: the same kind as the slot's last event
    else
      event->payload.template emplace<Payload>(payload);
    if constexpr (!kBatched)
      for (auto* sink : sinks_) sink->on_event(*event);
  }
  // A block of a kBlockRun: its event, then its instructions are pending.
  void block_executed(const DecodedBlock& block);
  // Emits the pending block's instructions (and their memory/register events) up
  // to `stop_pc`: inclusive or exclusive; all when stop_pc is 0.
  void flush_block(std::uint64_t stop_pc, bool inclusive);
  std::size_t next_with_work(const DecodedBlock& block, std::size_t index, bool attribution_broken) const;
  void emit_memory(const PendingMemory& access, bool pc_known, std::uint64_t pc);
  // A memory access from a record or a batch item: tied to the pending block.
  void memory_accessed(const PendingMemory& access);
  // Forgets the pending block and what was recorded inside it (its rest did not run).
  void drop_pending_block();
  // kSignal and kThread records: the event, with the frame writes and
  // registers gathered before it (as a syscall's effects).
  void signal_delivered(const SignalRecord& signal);
  void thread_changed(const ThreadRecord& thread);
  // A kProcess record (its tail holds the event's two strings).
  void process_changed(std::span<const std::byte> record);
  // on_record's steps, one per record kind (event_assembler.cpp); those that
  // return bool say false for a record shorter than its kind says.
  bool block_defined(const RecordHeader& header, std::span<const std::byte> record);
  bool blocks_run(const RecordHeader& header, std::span<const std::byte> record);
  void registers_recorded(const RecordHeader& header, std::span<const std::byte> record);
  void register_batch(std::span<const std::byte> record);
  bool register_batch_item(const RegisterBatchItem& item, std::span<const std::byte> record, std::size_t& at);
  bool syscall_memory_written(std::span<const std::byte> record);
  bool syscall_mapping_changed(const RecordHeader& header, std::span<const std::byte> record);
  void syscall_made(const RecordHeader& header, std::span<const std::byte> record);
  void clear_effects();

  const arch::ArchInfo& arch_;
  const BlockDecoder& decoder_;
  TraceLevel level_;
  std::vector<events::Sink*> sinks_;
  BlockTable blocks_;
  events::Event event_;  // the unbatched events' slot
  static constexpr std::size_t kBatchEvents = 64;
  std::vector<events::Event> batch_;  // kBatchEvents slots, batch_used_ of them filled
  std::size_t batch_used_ = 0;
  std::uint64_t next_sequence_ = 0;
  events::ThreadId current_thread_;  // every event's thread (TraceInfo::process_id, then each switch's)
  std::array<std::uint64_t, events::kEventKindCount> by_kind_{};
  std::uint64_t instructions_ = 0;
  std::uint64_t lost_ = 0;
  std::uint64_t malformed_ = 0;

  // The block being executed, and what was recorded inside it so far.
  const DecodedBlock* pending_block_ = nullptr;
  std::size_t pending_index_ = 0;  // next instruction to emit
  FlatQueue<PendingMemory> pending_memory_;
  FlatQueue<PendingRegisters> pending_registers_;
  std::vector<events::RegisterValue> register_pool_;  // values of pending_registers_, reset when it empties
  std::vector<events::RegisterValue> decoded_registers_;  // scratch for one record

  // Syscall effects seen before their kSyscall record.
  std::vector<std::vector<std::uint8_t>> effect_bytes_;
  std::vector<events::MemoryWriteEffect> memory_effects_;
  std::vector<events::MappingEffect> mapping_effects_;
  std::vector<std::string> mapping_names_;  // two per mapping effect: its name, then its file
  std::vector<events::RegisterValue> register_effects_;
};

}  // namespace tracecorn::core
