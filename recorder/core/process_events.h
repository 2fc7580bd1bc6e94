// Role: the recorder's syscall and fault path: what the emulated kernel
// reports between the hooks' records (syscalls with the registers the kernel
// changed and their call stack, the memory and mappings they changed,
// signals, thread changes, module loads, process changes, faults, exits),
// written to the ring with the hooks' record output, in execution order.
// Signals and thread changes are rare: they cost a full register read and one
// record with every register of the table. Inside a syscall (between
// syscall_enter and syscall_exit) their records are deferred until the
// syscall's record is written, so they follow it. At a block hook, the
// recorder's own block hook ran first (Unicorn calls hooks in the order they
// were added, and the Linux layer adds its hook later) and recorded the block
// being entered, which the kernel then left for a handler or another thread:
// that entry is taken back (ExecutionHooks::leave_interrupted_code).
// Threads: the emulation thread, outside Unicorn's hooks.
// Invariants: after a signal or thread switch record the register shadow is
// exact again (it is read whole); an exit or fault ends the trace (no stop
// record after it).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include <unicorn/unicorn.h>

#include "arch/arch.h"
#include "recorder/core/execution_hooks.h"
#include "recorder/core/recorder.h"
#include "recorder/core/ring_records.h"
#include "recorder/events/event.h"

namespace tracecorn::core {

class ProcessEvents {
 public:
  // `options` and `hooks` must outlive it.
  ProcessEvents(uc_engine* engine, const arch::ArchInfo& arch, const RecorderOptions& options, ExecutionHooks& hooks)
      : engine_(engine), arch_(arch), options_(options), hooks_(hooks) {}
  ProcessEvents(const ProcessEvents&) = delete;
  ProcessEvents& operator=(const ProcessEvents&) = delete;

  // The Recorder's calls of the same names (recorder.h says what each means).
  void syscall_enter(std::optional<std::uint64_t> trap_pc) noexcept;
  void syscall_memory_written(std::uint64_t address, std::span<const std::uint8_t> bytes) noexcept;
  void syscall_mapping_changed(const events::MappingEffect& change) noexcept;
  void syscall_exit(std::uint64_t pc, std::uint64_t number, const std::uint64_t (&args)[6], std::int64_t result,
                    std::span<const std::uint64_t> call_stack) noexcept;
  void signal_delivered(const events::SignalEvent& signal) noexcept;
  void thread_event(events::ThreadId thread, const events::ThreadEvent& change) noexcept;
  void module_loaded(std::uint64_t start, std::uint64_t end, std::uint64_t load_bias, std::string_view path) noexcept;
  void process_event(const events::ProcessEvent& change) noexcept;
  void fault(std::uint64_t pc, std::uint64_t address, std::uint32_t signal, std::string_view description) noexcept;
  void exited(bool by_signal, std::int32_t code, std::int32_t signal) noexcept;
  void registers_changed() noexcept;
  void code_written_by_caller(std::uint64_t address, std::uint64_t size) noexcept {
    hooks_.code_written(address, size);
  }
  // The emulation ended without an exit or a fault (a stop condition, a
  // limit, the caller's own uc_emu_stop): a kStop record ends the block at
  // the engine's pc, whose instruction did not run. Once.
  void write_stop_if_cut_short() noexcept;
  // The run was stopped at the start of the block at `pc` (its entry taken
  // back, ExecutionHooks::leave_interrupted_code): the stop record says the
  // blocks before ran whole. Once, as write_stop_if_cut_short.
  void write_stop_at_block_boundary(std::uint64_t pc) noexcept;

 private:
  // A signal or thread change, as its ring record; those reported inside a
  // syscall wait for its record (see signal_delivered).
  struct DeferredRecord {
    bool is_thread = false;
    SignalRecord signal{};
    ThreadRecord thread{};
  };
  bool set_pc_entry(std::span<RegisterEntry> entries, std::uint64_t handler) noexcept;
  std::optional<std::uint64_t> handler_entered_in_syscall() const noexcept;
  void defer(const DeferredRecord& record) noexcept;
  void write_deferred_process_events() noexcept;
  void write_process_event(DeferredRecord& deferred) noexcept;

  uc_engine* engine_;
  const arch::ArchInfo& arch_;
  const RecorderOptions& options_;
  ExecutionHooks& hooks_;
  RecordOutput& output_ = hooks_.output();
  RegisterShadow& registers_ = hooks_.registers();
  std::vector<RegisterShadow::Slot> syscall_snapshot_;
  std::vector<RegisterShadow::Slot> syscall_after_;
  static constexpr std::size_t kMaxStackDepth = 256;  // as many as a syscall record carries
  std::uint64_t captured_stack_[kMaxStackDepth] = {};
  std::size_t captured_stack_depth_ = 0;
  bool in_syscall_ = false;           // between syscall_enter and syscall_exit
  bool switched_in_syscall_ = false;  // the scheduler switched threads inside this syscall
  std::array<DeferredRecord, 64> deferred_{};
  std::size_t deferred_count_ = 0;
  std::vector<RegisterEntry> all_registers_;  // a signal's or switch's register record, reused
  bool ended_ = false;  // an exit or fault record was written
  bool stop_written_ = false;
};

}  // namespace tracecorn::core
