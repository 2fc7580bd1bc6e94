// Role: the public recorder API. Attach a Recorder to a uc_engine the caller
// created and owns (a fuzzer harness, or tracecorn's own Linux process), choose
// a level, filters and a ring policy, and the recorder's hooks push compact
// records into a single-producer single-consumer ring; a drain thread turns them
// back into events and feeds the sinks (trace writers, the text printer).
//
// Threads and ownership:
// - Every member function is called on the emulation thread (the one that runs
//   uc_emu_start), except stats(), which any thread may call.
// - The hooks run inside Unicorn's C callbacks: noexcept, no lock, no syscall
//   (except when a lossless ring is full and the producer must wait), and no
//   allocation on the hot path (a block seen for the first time is decoded and
//   cached, which allocates once per block).
// - The drain thread (lossless policy only) owns the sinks between attach() and
//   finish(); the caller must not touch them in between.
// - The engine must outlive the Recorder; finish() (or the destructor) removes
//   every hook. Several recorders on several engines in one process are fine:
//   there is no global state.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <unicorn/unicorn.h>

#include "arch/arch.h"
#include "recorder/core/stack_provider.h"
#include "recorder/core/trace_level.h"
#include "recorder/events/event.h"
#include "recorder/support/expected.h"

namespace tracecorn::core {

enum class RingPolicy : std::uint8_t {
  kLossless,        // the emulation waits for the drain thread when the ring is full
  kFlightRecorder,  // keep only the most recent ring_bytes of records; dump() on demand
};

struct AddressRange {
  std::uint64_t start = 0;
  std::uint64_t end = 0;  // exclusive
};

struct RecorderOptions {
  TraceLevel level = TraceLevel::kBlocks;
  std::size_t ring_bytes = 64u << 20;
  RingPolicy policy = RingPolicy::kLossless;
  // Only code inside this range is recorded (its blocks, instructions, memory
  // accesses and register changes); syscalls and process events always are.
  std::optional<AddressRange> code_range;
  std::optional<std::uint64_t> start_at;   // recording starts when this address is first executed
  std::optional<std::uint64_t> stop_at;    // the emulation stops when this address is reached
  std::uint64_t stop_after_instructions = 0;  // stop at the first block boundary at or after N recorded instructions
  // Copy every register and every mapped region's bytes into TraceInfo at attach()
  // (for formats that open with a snapshot, such as UCIR). Costs one read of all
  // guest memory; turn it off when no sink needs it.
  bool capture_initial_state = true;
  // Asked for the call stack at every syscall (see stack_provider.h); not
  // owned, must outlive finish(). nullptr: syscall events carry no stack
  // unless the caller passes one to syscall_exit().
  StackProvider* stack_provider = nullptr;
  // regs/full levels on x86-64 and i386: the values that simple integer
  // instructions write (mov, add, sub, and, or, xor, cmp, test, inc, dec, neg,
  // not, lea with register or immediate operands) are computed from the
  // recorder's copy of the register file instead of read through Unicorn, about
  // twice as fast. The copy is read whole at attach, after every syscall and at
  // the first block after exited() or fault(); it is only right if nothing else
  // writes the registers in between: a caller that writes registers with
  // uc_reg_write (or restores a context) at any other time must call
  // Recorder::registers_changed() before running again, or leave this off.
  // Ignored with a code_range (the hooks do not see code outside it). The CLI
  // sets it (the Linux layer changes registers only through syscalls).
  bool derive_registers = false;
};

struct RecorderStats {
  std::uint64_t records = 0;
  std::uint64_t ring_bytes_written = 0;
  std::uint64_t producer_stalls = 0;
  std::uint64_t records_overwritten = 0;
  std::uint64_t records_lost = 0;  // could not be written (decode failure, oversize)
  std::uint64_t blocks_decoded = 0;
  std::uint64_t events = 0;        // events handed to sinks (after finish)
  std::array<std::uint64_t, events::kEventKindCount> events_by_kind{};  // the same by kind, indexed by events::EventKind (after finish)
  std::uint64_t instructions = 0;  // instructions recorded (after finish)
  // Instructions whose register writes were computed rather than read
  // (RecorderOptions::derive_registers).
  std::uint64_t registers_derived = 0;
};

class Recorder {
 public:
  // Adds the hooks the level needs to `engine` and, for a lossless ring, starts
  // the drain thread. `sinks` are not owned and must outlive finish(); a flight
  // recorder ignores them (its events come out through dump()). Fails when the
  // engine is not of `arch`'s Unicorn architecture and mode.
  static Expected<std::unique_ptr<Recorder>> attach(uc_engine* engine, const arch::ArchInfo& arch,
                                                    const RecorderOptions& options, std::vector<events::Sink*> sinks,
                                                    events::TraceInfo info);
  ~Recorder();
  Recorder(const Recorder&) = delete;
  Recorder& operator=(const Recorder&) = delete;

  // Process events, from whoever runs the guest (the Linux layer through the CLI,
  // or a harness). All on the emulation thread.
  void syscall_enter() noexcept;  // before the kernel side runs: snapshots registers
  // The same, knowing the trap instruction's address: with a stack provider,
  // the call stack is captured here (before the kernel changes anything) and
  // attached to the event by syscall_exit().
  void syscall_enter(std::uint64_t trap_pc) noexcept;
  void syscall_memory_written(std::uint64_t address, std::span<const std::uint8_t> bytes) noexcept;
  // A mapping change; for kMap, `change` may name the mapping and its backing file.
  void syscall_mapping_changed(const events::MappingEffect& change) noexcept;
  void syscall_exit(std::uint64_t pc, std::uint64_t number, const std::uint64_t (&args)[6], std::int64_t result,
                    std::span<const std::uint64_t> call_stack = {}) noexcept;
  void module_loaded(std::uint64_t start, std::uint64_t end, std::uint64_t load_bias, std::string_view path) noexcept;
  void fault(std::uint64_t pc, std::uint64_t address, std::uint32_t signal, std::string_view description) noexcept;
  // The guest ended. When it did not end in a syscall (a harness whose run
  // reached its `until` address), the block being executed is cut at the
  // engine's current pc first.
  void exited(bool by_signal, std::int32_t code, std::int32_t signal) noexcept;
  // The caller wrote guest registers itself (uc_reg_write, uc_context_restore)
  // while attached: the recorder reads them all again at the next block
  // (needed with derive_registers; harmless otherwise).
  void registers_changed() noexcept;
  // The caller wrote guest memory itself (uc_mem_write) while attached, over
  // [address, address + size): code the recorder decoded there is decoded
  // again at its next entry. Only needed for code (a harness patching
  // instructions between runs; Unicorn drops its own translations of it): the
  // guest's own stores and the Linux layer's writes are seen without it.
  // Emulation thread, between runs or in a hook.
  void code_written(std::uint64_t address, std::uint64_t size) noexcept;
  // The run was stopped at the start of the block at `address` after the
  // recorder's block hook saw it entered, and none of its instructions ran
  // (a hook added after attach() stopped it there): that entry is taken back,
  // so the trace does not say the block ran. Emulation thread, in that hook.
  void block_not_run(std::uint64_t address) noexcept;
  // A signal was delivered to a guest handler: the frame is written and the
  // registers are the handler's. Inside a syscall (between syscall_enter and
  // syscall_exit: delivered as it returns), its event follows the syscall's,
  // whose effects hold the frame; else it was delivered after a fault
  // (signal.fault: the instruction at interrupted_pc did not complete) or at
  // the start of the block at interrupted_pc (which did not run), and its
  // event carries the frame (signal.frame_writes). The event also carries
  // every register of the table, read here; the recorder's register copy is
  // read again. Emulation thread, in a hook or between runs.
  void signal_delivered(const events::SignalEvent& signal) noexcept;
  // The guest's threads changed: `thread` was created, exited, or is now the
  // running one (kSwitched: its registers are already in the engine, and
  // the events from here on are this thread's: events::Event::thread). A
  // switch records every register of the table, and the recorder's
  // per-thread state (its register copy, the instruction whose registers were
  // pending, the block being entered at change.from_pc) starts afresh. Inside
  // a syscall, the event follows the syscall's, which then carries no
  // register changes (the registers are the new thread's). In a block hook,
  // the recorder's own block hook must run first (add that hook after
  // attach(): Unicorn calls hooks in the order they were added).
  void thread_event(events::ThreadId thread, const events::ThreadEvent& change) noexcept;
  // The process forked a child or exec'd a new image (events::ProcessEvent):
  // called after the syscall that did it has been recorded (syscall_exit), so
  // the event follows it. Strings longer than 4096 bytes are cut there.
  // Emulation thread, between runs or in a hook.
  void process_event(const events::ProcessEvent& change) noexcept;

  // Makes everything recorded so far reach the sinks' files (Sink::flush):
  // a SIGKILL from here on loses none of it. Publishes what is pending and
  // waits (at most 500 ms) until the drain thread has consumed it and flushed
  // the sinks. For a process about to stop (SIGSTOP: a stopped process may
  // be killed). Nothing for a flight recorder, whose sinks get events only
  // at dump().
  void flush_to_files() noexcept;

  // Flight recorder: replays the retained records into `sink` (begin, events, end).
  // Returns the sink's error, if any.
  std::string dump(events::Sink& sink);

  // Stops recording: removes the hooks, drains the ring, ends the sinks. Returns
  // "" or the sinks' errors. Idempotent.
  std::string finish(bool interrupted = false);

  // Block interrupts: once interrupt_next_block() is called (any thread: a
  // signal watcher), the block hook calls `handler` at the start of the next
  // block, after that block's own record (which the handler may take back by
  // delivering a signal there: signal_delivered). It costs the block hook's
  // fast path nothing: the call turns the fast path off once. The handler is
  // set before the emulation runs (emulation thread).
  void set_block_interrupt_handler(std::function<void(std::uint64_t address)> handler);
  void interrupt_next_block() noexcept;
  // In the child of a host fork(): the drain thread did not survive it.
  // Removes the hooks and forgets the drain thread (not joined) and the
  // sinks (not ended: they are the parent's, which goes on writing them).
  // The Recorder may then be destroyed. Emulation thread.
  void abandon_in_forked_child() noexcept;
  // Around a host fork (emulation thread): hold_drain() waits until the drain
  // thread is between two batches and keeps it there (it holds no lock of the
  // allocator's then); release_drain() lets it go on, in the parent.
  void hold_drain() noexcept;
  void release_drain() noexcept;

  RecorderStats stats() const;
  bool stop_requested() const;  // the recorder stopped the emulation (stop_at / instruction limit / a sink failed)
  // A sink could not write (Sink::failed: a full disk): the recorder stopped
  // the emulation at the next block, and finish() returns the sink's error.
  bool sink_failed() const;

 private:
  class Impl;
  explicit Recorder(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace tracecorn::core
