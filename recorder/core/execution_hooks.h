// Role: the recorder's Unicorn hooks, the set its level needs (execution_hooks.cpp's
// file comment has the costs): the block hook (a fast path for the levels
// that record blocks only), the instruction hook of the regs levels (the
// registers the previous instruction changed, read or derived), the memory
// hooks of the mem levels, the start and stop addresses; the filters (a code
// range, recording off before a start address, a stop after N instructions)
// and where execution is (the current block and instruction). It owns the
// units the hooks write with: the record output, the producer's blocks and
// the register shadow, which the recorder's process events (syscalls,
// signals, threads, exits) use too.
// Threads: the emulation thread, inside Unicorn, but for interrupt_next_block
// (any thread) and the flags the drain thread sets (sink_failed).
// Invariants: records leave in execution order (record_output.h); the fast
// path runs only while fast_blocks_ says nothing but the block's id is needed.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include <unicorn/unicorn.h>

#include "arch/arch.h"
#include "recorder/core/producer_blocks.h"
#include "recorder/core/record_output.h"
#include "recorder/core/recorder.h"
#include "recorder/core/register_shadow.h"
#include "recorder/support/expected.h"

namespace tracecorn::core {

class ExecutionHooks {
 public:
  // `options` must outlive the hooks.
  ExecutionHooks(uc_engine* engine, const arch::ArchInfo& arch, const RecorderOptions& options)
      : engine_(engine), arch_(arch), options_(options) {}
  ExecutionHooks(const ExecutionHooks&) = delete;
  ExecutionHooks& operator=(const ExecutionHooks&) = delete;

  // Sets the units up for `ring` and adds the level's hooks to the engine.
  Status install(ring::SpscRing& ring);
  // Removes the hooks (the engine may run on without them).
  void remove() noexcept;

  RecordOutput& output() noexcept { return output_; }
  RegisterShadow& registers() noexcept { return registers_; }
  const RegisterShadow& registers() const noexcept { return registers_; }
  const ProducerBlocks& blocks() const noexcept { return blocks_; }
  // Set by the drain thread when a sink failed: the next block stops the run.
  std::atomic<bool>& sink_failed() noexcept { return sink_failed_; }
  bool stop_requested() const noexcept { return stop_requested_; }

  // The registers of the instruction that started last, into the batch
  // (before anything that must follow it: a syscall, the end).
  void flush_pending_registers() noexcept;
  // A syscall's record was written: the next block takes the full path (and
  // an exit before it ends the trace there).
  void syscall_recorded() noexcept {
    last_record_was_syscall_ = true;
    fast_blocks_.store(false, std::memory_order_relaxed);
  }
  bool last_record_was_syscall() const noexcept { return last_record_was_syscall_; }
  // Guest memory written outside an instruction's hooks (a syscall): decoded
  // code there is dropped.
  void code_written(std::uint64_t address, std::uint64_t size) noexcept;
  // Code changed under us (unmapped, protections changed): blocks decoded in
  // [start, end) are stale and the current block goes unseen.
  void forget_code(std::uint64_t start, std::uint64_t end) noexcept;
  // The Linux layer changed a mapping (ProducerBlocks::mapping_changed).
  void mapping_changed(std::uint64_t start, std::uint64_t end, events::MappingChangeKind kind, bool writable) noexcept {
    blocks_.mapping_changed(start, end, kind == events::MappingChangeKind::kMap,
                            kind == events::MappingChangeKind::kUnmap, writable);
  }
  // A signal or thread switch leaves the code: a fault's instruction did not
  // complete; the block at `resume_pc`, recorded just before the kernel's
  // block hook took the guest elsewhere, did not run.
  void leave_interrupted_code(bool fault, std::uint64_t resume_pc) noexcept;

  // The block interrupt (Recorder::interrupt_next_block): `handler` runs at
  // the start of the next block. Any thread.
  void set_block_interrupt_handler(std::function<void(std::uint64_t)> handler) {
    block_interrupt_handler_ = std::move(handler);
  }
  void interrupt_next_block() noexcept;

 private:
  static void on_block(uc_engine*, std::uint64_t address, std::uint32_t size, void* user) noexcept;
  static void on_code(uc_engine*, std::uint64_t address, std::uint32_t, void* user) noexcept;
  static void on_memory(uc_engine*, uc_mem_type type, std::uint64_t address, int size, std::int64_t value,
                        void* user) noexcept;
  static void on_code_write(uc_engine*, uc_mem_type, std::uint64_t address, int size, std::int64_t,
                            void* user) noexcept;
  static void on_start_address(uc_engine*, std::uint64_t address, std::uint32_t, void* user) noexcept;
  static void on_stop_address(uc_engine* engine, std::uint64_t, std::uint32_t, void* user) noexcept;
  void block(std::uint64_t address, std::uint32_t size) noexcept;
  std::uint8_t current_mode() const noexcept;
  [[gnu::always_inline]] inline void instruction(std::uint64_t address) noexcept;  // (in on_code: per instruction)
  void flush_derived(const DecodedInstruction& insn) noexcept;
  void memory(bool is_write, std::uint64_t address, int size, std::int64_t value) noexcept;
  std::uint64_t current_pc_or_block() const;
  void take_block_interrupt(std::uint64_t address) noexcept;
  bool add_hook(int type, void* callback, std::uint64_t begin, std::uint64_t end);
  static Error hook_error(const char* what);

  uc_engine* engine_;
  const arch::ArchInfo& arch_;
  const RecorderOptions& options_;
  std::vector<uc_hook> hooks_;
  std::function<void(std::uint64_t)> block_interrupt_handler_;  // set before the runs
  std::atomic<bool> block_interrupt_{false};

  // First what the block hook's fast path touches, together: the flags, the
  // run (output_) and the slots (blocks_).
  //
  // The fast path may run when a block needs nothing but its id recorded
  // (fast_blocks_allowed_, set at install): the blocks, insns and mem levels
  // (without a code range at mem level, whose memory filter needs
  // current_block_), a one-mode architecture (no mode register to read), no
  // stop after N instructions (no instruction count to keep). fast_blocks_ is
  // that and more, kept by block(): recording is on and no sink failed. It is
  // cleared where the next block must take block(): after a syscall
  // (syscall_recorded) and when output_ writes a run while a sink failed (so a
  // failed sink stops the emulation within kMaxBlockRun blocks).
  bool fast_blocks_allowed_ = false;
  std::atomic<bool> fast_blocks_{false};  // (atomic: interrupt_next_block clears it from another thread)
  bool last_record_was_syscall_ = false;  // the guest's last act was a syscall (exit ends there)
  std::atomic<bool> sink_failed_{false};  // set once by the drain thread (drain.h)
  RecordOutput output_{fast_blocks_, sink_failed_};  // the block run, the register batch, every record
  ProducerBlocks blocks_{engine_, arch_, output_};  // found by the block hook, decoded once
  const DecodedBlock* current_block_ = nullptr;
  std::size_t current_index_ = 0;
  const DecodedInstruction* pending_instruction_ = nullptr;
  std::uint64_t current_pc_ = 0;
  RegisterShadow registers_{engine_, arch_};  // regs levels: what each instruction changed
  bool active_ = true;  // recording is on (off before the start address)
  std::uint64_t last_block_address_ = 0;
  std::uint32_t last_block_size_ = 0;
  std::uint64_t recorded_instructions_ = 0;
  std::atomic<bool> stop_requested_{false};
};

}  // namespace tracecorn::core
