// Role: implementation of the Recorder (see recorder.h), composed of units
// with their own state: the level's Unicorn hooks (execution_hooks.h, whose
// file comment has the hooks per level and their costs) and what they write
// with: the record output (record_output.h: the block run, the register
// batch, every record, losses), the producer's blocks and the rewritten-code
// check (producer_blocks.h), the register shadow (register_shadow.h). Here:
// the syscall path, signals, threads, modules, process changes, faults and
// exits (emulation thread, outside the hot path), and the recorder's life
// (attach, finish, the flight recorder's dump); the consumer side (the drain
// thread and the assembler that feeds the sinks) is drain.h's, the initial
// snapshot initial_state.h's.

#include "recorder/core/recorder.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <chrono>
#include <cstring>
#include <optional>
#include <span>
#include <utility>

#include "recorder/core/block_cache.h"
#include "recorder/core/drain.h"
#include "recorder/core/event_assembler.h"
#include "recorder/core/execution_hooks.h"
#include "recorder/core/initial_state.h"
#include "recorder/core/producer_blocks.h"
#include "recorder/core/record_output.h"
#include "recorder/core/register_shadow.h"
#include "recorder/core/ring_records.h"
#include "recorder/ring/spsc_ring.h"

namespace tracecorn::core {

class Recorder::Impl {
  // A signal or thread change, as its ring record; those reported inside a
  // syscall wait for its record (see signal_delivered).
  struct DeferredRecord {
    bool is_thread = false;
    SignalRecord signal{};
    ThreadRecord thread{};
  };

 public:
  Impl(uc_engine* engine, const arch::ArchInfo& arch, const RecorderOptions& options)
      : engine_(engine), arch_(arch), options_(options) {}

  ~Impl() { finish(false); }

  Status init(std::vector<events::Sink*> sinks, events::TraceInfo info) {
    std::size_t engine_arch = 0, engine_mode = 0;
    if (uc_query(engine_, UC_QUERY_ARCH, &engine_arch) == UC_ERR_OK &&
        uc_query(engine_, UC_QUERY_MODE, &engine_mode) == UC_ERR_OK &&
        (engine_arch != static_cast<std::size_t>(arch_.engine->unicorn_arch) ||
         (engine_mode & static_cast<std::size_t>(arch_.engine->unicorn_mode)) != static_cast<std::size_t>(arch_.engine->unicorn_mode)))
      return make_error(ErrorCode::kInvalidArgument,
                        "the engine is not a " + std::string(arch_.name) + " engine (Unicorn arch/mode differ)");
    auto consumer_decoder = BlockDecoder::create(arch_);
    if (!consumer_decoder) return consumer_decoder.error();
    consumer_decoder_ = std::move(*consumer_decoder);

    ring::RingOptions ring_options;
    ring_options.capacity_bytes = options_.ring_bytes;
    ring_options.policy = options_.policy == RingPolicy::kLossless ? ring::OverflowPolicy::kLossless
                                                                   : ring::OverflowPolicy::kFlightRecorder;
    auto ring = ring::SpscRing::create(ring_options);
    if (!ring) return ring.error();
    ring_ = std::move(*ring);
    if (auto status = hooks_.install(*ring_); !status) return status;

    info.level = std::string(trace_level_name(options_.level));
    info.arch_name = arch_.name;
    if (options_.capture_initial_state) capture_initial_state(engine_, arch_, info);
    info_ = std::move(info);
    sinks_ = std::move(sinks);
    assembler_ = std::make_unique<EventAssembler>(arch_, *consumer_decoder_, options_.level, sinks_);

    if (options_.policy == RingPolicy::kLossless) {
      assembler_->begin(info_);
      drain_ = std::make_unique<Drain>(*ring_, *assembler_, hooks_.sink_failed());
      drain_->start();
    }
    return ok_status();
  }

  // ---- producer: hooks (emulation thread, inside Unicorn) ----

  // ---- producer: process events (emulation thread, outside the hot path) ----

  void syscall_enter(std::optional<std::uint64_t> trap_pc) noexcept {
    in_syscall_ = true;
    captured_stack_depth_ = 0;
    if (trap_pc && options_.stack_provider)
      captured_stack_depth_ = options_.stack_provider->capture(*trap_pc, captured_stack_);
    hooks_.flush_pending_registers();
    if (syscall_snapshot_.size() != arch_.registers.size()) syscall_snapshot_.resize(arch_.registers.size());
    registers_.read_all(syscall_snapshot_);
  }

  void syscall_memory_written(std::uint64_t address, std::span<const std::uint8_t> bytes) noexcept {
    hooks_.code_written(address, bytes.size());
    const std::uint32_t chunk_limit = ring_->max_record_size() - sizeof(SyscallMemoryWriteRecord) - 8;
    while (!bytes.empty()) {
      const std::uint32_t chunk = static_cast<std::uint32_t>(std::min<std::size_t>(bytes.size(), chunk_limit));
      const std::uint32_t total = sizeof(SyscallMemoryWriteRecord) + padded8(chunk);
      auto* record = static_cast<SyscallMemoryWriteRecord*>(static_cast<void*>(output_.reserve_bytes(total)));
      if (!record) return;
      record->header = {RecordKind::kSyscallMemoryWrite, 0, 0, 0};
      record->address = address;
      record->length = chunk;
      std::memcpy(reinterpret_cast<std::uint8_t*>(record) + sizeof *record, bytes.data(), chunk);
      output_.commit();
      bytes = bytes.subspan(chunk);
      address += chunk;
    }
  }

  void syscall_mapping_changed(const events::MappingEffect& change) noexcept {
    const std::uint64_t start = change.start.value;
    // Decoded code there is stale unless it stays executable and read-only
    // (a block's on_writable_page is decided when it is decoded).
    if (change.kind != events::MappingChangeKind::kProtect || !(change.prot & 4) || (change.prot & 2))
      hooks_.forget_code(start, start + change.length);
    if (change.kind == events::MappingChangeKind::kUnmap && options_.stack_provider)
      options_.stack_provider->unmapped(start, change.length);
    // Names longer than a path can be are cut (they only describe the mapping).
    constexpr std::size_t kNameLimit = 4096;
    const std::string_view name = change.name.substr(0, kNameLimit);
    const std::string_view file = change.file.substr(0, kNameLimit);
    const std::uint32_t total =
        static_cast<std::uint32_t>(sizeof(SyscallMappingRecord) + padded8(name.size() + file.size()));
    auto* record = static_cast<SyscallMappingRecord*>(static_cast<void*>(output_.reserve_bytes(total)));
    if (!record) return;
    record->header = {RecordKind::kSyscallMapping, 0, static_cast<std::uint16_t>(change.kind), 0};
    record->start = start;
    record->length = change.length;
    record->prot = change.prot;
    record->file_offset = change.file_offset;
    record->file_size = change.file_size;
    record->name_length = static_cast<std::uint32_t>(name.size());
    record->file_length = static_cast<std::uint32_t>(file.size());
    auto* tail = reinterpret_cast<std::uint8_t*>(record) + sizeof *record;
    // (an empty view may have a null data(), which memcpy must not get)
    if (!name.empty()) std::memcpy(tail, name.data(), name.size());
    if (!file.empty()) std::memcpy(tail + name.size(), file.data(), file.size());
    output_.commit();
  }

  // The guest's registers may have changed outside the hooks (Recorder::registers_changed).
  void registers_changed() noexcept { registers_.mark_stale(); }

  void syscall_exit(std::uint64_t pc, std::uint64_t number, const std::uint64_t (&args)[6], std::int64_t result,
                    std::span<const std::uint64_t> call_stack) noexcept {
    // Registers the kernel changed: compare the whole table with the snapshot
    // (none when the scheduler switched threads meanwhile: the registers are
    // another thread's, and the thread record that follows holds them all).
    in_syscall_ = false;
    std::vector<RegisterShadow::Slot>& after = syscall_after_;
    if (after.size() != arch_.registers.size()) after.resize(arch_.registers.size());
    registers_.read_all(after);
    RegisterEntry changed[64];
    std::uint16_t count = 0;
    for (std::size_t i = 0; i < after.size() && count < 64 && !switched_in_syscall_; ++i) {
      const std::uint8_t size = arch_.registers[i].size;
      if (i < syscall_snapshot_.size() && std::memcmp(after[i].bytes, syscall_snapshot_[i].bytes, size) == 0) continue;
      RegisterEntry& entry = changed[count++];
      entry = RegisterEntry{};
      entry.index = static_cast<std::uint16_t>(i);
      entry.size = size;
      std::memcpy(entry.value, after[i].bytes, size);
    }
    // A signal delivered as it returned: the guest goes on in its handler.
    // (The engine's pc moved from the trap to the handler: it is among `changed`.)
    if (const auto handler = handler_entered_in_syscall())
      (void)set_pc_entry(std::span(changed, count), *handler);
    registers_.assign(after);
    registers_.publish_derived();
    if (count) output_.write_registers(RecordKind::kSyscallRegisters, pc, changed, count);
    if (call_stack.empty() && captured_stack_depth_) call_stack = std::span(captured_stack_, captured_stack_depth_);
    captured_stack_depth_ = 0;
    const std::uint16_t depth = static_cast<std::uint16_t>(std::min<std::size_t>(call_stack.size(), 256));
    const std::uint32_t total = sizeof(SyscallRecord) + depth * 8u;
    auto* record = static_cast<SyscallRecord*>(static_cast<void*>(output_.reserve_bytes(total)));
    if (!record) {
      write_deferred_process_events();
      return;
    }
    record->header = {RecordKind::kSyscall, 0, depth, 0};
    record->pc = pc;
    record->number = number;
    record->result = result;
    std::copy(std::begin(args), std::end(args), std::begin(record->args));
    if (depth) std::memcpy(reinterpret_cast<std::uint8_t*>(record) + sizeof *record, call_stack.data(), depth * 8u);
    output_.commit();
    write_deferred_process_events();
    output_.publish();  // a syscall is a natural point to let the drain thread see the batch
    hooks_.syscall_recorded();
  }

  // ---- producer: signals and threads (emulation thread, outside the hot path) ----
  // Both are rare: they cost a full register read and one record with every
  // register of the table. Inside a syscall (between syscall_enter and
  // syscall_exit) their records are deferred until the syscall's record is
  // written, so they follow it. At a block hook, the recorder's own block hook
  // ran first (Unicorn calls hooks in the order they were added, and the Linux
  // layer adds its hook later) and recorded the block being entered, which the
  // kernel then left for a handler or another thread: that entry is taken back.

  void signal_delivered(const events::SignalEvent& signal) noexcept {
    DeferredRecord deferred;
    deferred.is_thread = false;
    SignalRecord& record = deferred.signal;
    record.header = {RecordKind::kSignal, signal.fault ? kSignalFault : std::uint8_t{0}, 0, 0};
    record.signal = signal.signal;
    record.code = signal.code;
    record.sender_pid = signal.sender_pid;
    record.fault_address = signal.fault_address.value;
    record.interrupted_pc = signal.interrupted_pc.value;
    record.handler = signal.handler.value;
    record.frame = signal.frame.value;
    if (in_syscall_) {  // the syscall's effects hold the frame: it is not written twice
      record.header.flags |= kSignalAtSyscallReturn;
      defer(deferred);
      return;
    }
    hooks_.leave_interrupted_code(signal.fault, signal.interrupted_pc.value);
    for (const events::MemoryWriteEffect& write : signal.frame_writes)
      syscall_memory_written(write.address.value, write.bytes);
    write_process_event(deferred);
  }

  void thread_event(events::ThreadId thread, const events::ThreadEvent& change) noexcept {
    DeferredRecord deferred;
    deferred.is_thread = true;
    ThreadRecord& record = deferred.thread;
    record.header = {RecordKind::kThread, 0, static_cast<std::uint16_t>(change.change), 0};
    record.thread = thread.value;
    record.from = change.from.value;
    record.exit_code = change.exit_code;
    if (in_syscall_) {
      record.header.flags = kThreadInSyscall;
      if (change.change == events::ThreadChange::kSwitched) switched_in_syscall_ = true;
      defer(deferred);
      return;
    }
    if (change.change == events::ThreadChange::kSwitched) hooks_.leave_interrupted_code(false, change.from_pc.value);
    write_process_event(deferred);
  }

  // Sets the pc among `entries` to the handler's, as the handler starts: the
  // engine's pc register does not say it yet (inside x86's syscall hook it is
  // 2 bytes short, Unicorn adding the syscall's length after the hook; after
  // a fault the run restarts at the handler without the register being
  // written). An arm Thumb handler's address has bit 0 set; the pc does not.
  // Returns whether `entries` held the pc.
  bool set_pc_entry(std::span<RegisterEntry> entries, std::uint64_t handler) noexcept {
    const arch::AlternateInstructionSet* isa = arch_.alternate_isa;
    const std::uint64_t pc = isa && isa->address_bit0 ? handler & ~std::uint64_t{1} : handler;
    bool found = false;
    for (RegisterEntry& entry : entries)
      if (arch_.registers[entry.index].uc_id == arch_.pc_reg) {
        std::memset(entry.value, 0, sizeof entry.value);
        std::memcpy(entry.value, &pc, std::min<std::size_t>(entry.size, 8));
        found = true;
      }
    return found;
  }
  // The handler a signal delivered as the current syscall returned runs
  // first (the last one delivered), if any.
  std::optional<std::uint64_t> handler_entered_in_syscall() const noexcept {
    std::optional<std::uint64_t> handler;
    for (std::size_t i = 0; i < deferred_count_; ++i)
      if (!deferred_[i].is_thread && !(deferred_[i].signal.header.flags & kSignalFault))
        handler = deferred_[i].signal.handler;
    return handler;
  }

  // Keeps a signal or thread record until the syscall's own is written.
  void defer(const DeferredRecord& record) noexcept {
    if (deferred_count_ == deferred_.size()) {  // (64 signals in one syscall: more cannot be pending)
      output_.count_lost();
      return;
    }
    deferred_[deferred_count_++] = record;
  }
  void write_deferred_process_events() noexcept {
    for (std::size_t i = 0; i < deferred_count_; ++i) write_process_event(deferred_[i]);
    deferred_count_ = 0;
    switched_in_syscall_ = false;
  }

  // A signal or thread record, after every register of the table (as a
  // kSyscallRegisters record, which the consumer gives the event): the
  // recorder's register copy is now exact again.
  void write_process_event(DeferredRecord& deferred) noexcept {
    const bool with_registers =
        !deferred.is_thread || deferred.thread.header.aux == static_cast<std::uint16_t>(events::ThreadChange::kSwitched);
    if (with_registers) {
      registers_.reload();
      const std::vector<RegisterShadow::Slot>& values = registers_.slots();
      all_registers_.resize(values.size());
      for (std::size_t i = 0; i < values.size(); ++i) {
        RegisterEntry& entry = all_registers_[i];
        entry = RegisterEntry{};
        entry.index = static_cast<std::uint16_t>(i);
        entry.size = arch_.registers[i].size;
        std::memcpy(entry.value, values[i].bytes, entry.size);
      }
      if (!deferred.is_thread) set_pc_entry(all_registers_, deferred.signal.handler);
      const std::uint64_t pc = deferred.is_thread ? 0 : deferred.signal.interrupted_pc;
      output_.write_registers(RecordKind::kSyscallRegisters, pc, all_registers_.data(),
                      static_cast<std::uint16_t>(all_registers_.size()));
    }
    const std::size_t size = deferred.is_thread ? sizeof(ThreadRecord) : sizeof(SignalRecord);
    if (std::byte* record = output_.reserve_bytes(static_cast<std::uint32_t>(size))) {
      std::memcpy(record, deferred.is_thread ? static_cast<const void*>(&deferred.thread) : &deferred.signal, size);
      output_.commit();
    }
    output_.publish();
  }

  void module_loaded(std::uint64_t start, std::uint64_t end, std::uint64_t load_bias, std::string_view path) noexcept {
    if (options_.stack_provider) options_.stack_provider->module_loaded(start, end, load_bias, path);
    const std::uint16_t length = static_cast<std::uint16_t>(std::min<std::size_t>(path.size(), 4096));
    auto* record = static_cast<ModuleLoadRecord*>(
        static_cast<void*>(output_.reserve_bytes(sizeof(ModuleLoadRecord) + padded8(length))));
    if (!record) return;
    record->header = {RecordKind::kModuleLoad, 0, length, 0};
    record->start = start;
    record->end = end;
    record->load_bias = load_bias;
    if (length) std::memcpy(reinterpret_cast<char*>(record) + sizeof *record, path.data(), length);
    output_.commit();
  }

  void process_event(const events::ProcessEvent& change) noexcept {
    const auto trace = static_cast<std::uint32_t>(std::min<std::size_t>(change.trace.size(), 4096));
    const auto detail = static_cast<std::uint32_t>(std::min<std::size_t>(change.detail.size(), 4096));
    auto* record = static_cast<ProcessRecord*>(
        static_cast<void*>(output_.reserve_bytes(static_cast<std::uint32_t>(sizeof(ProcessRecord) + padded8(std::uint64_t{trace} + detail)))));
    if (!record) return;
    record->header = {RecordKind::kProcess, 0, static_cast<std::uint16_t>(change.change), 0};
    record->pid = change.pid;
    record->trace_length = trace;
    record->detail_length = detail;
    char* text = reinterpret_cast<char*>(record) + sizeof *record;
    if (trace) std::memcpy(text, change.trace.data(), trace);
    if (detail) std::memcpy(text + trace, change.detail.data(), detail);
    output_.commit();
    output_.publish();  // rare, and the last record of an image before an exec
  }

  void fault(std::uint64_t pc, std::uint64_t address, std::uint32_t signal, std::string_view description) noexcept {
    ended_ = true;
    registers_.mark_stale();  // a harness may set new registers and run again
    const std::uint16_t length = static_cast<std::uint16_t>(std::min<std::size_t>(description.size(), 1024));
    auto* record =
        static_cast<FaultRecord*>(static_cast<void*>(output_.reserve_bytes(sizeof(FaultRecord) + padded8(length))));
    if (!record) return;
    record->header = {RecordKind::kFault, 0, length, 0};
    record->pc = pc;
    record->address = address;
    record->signal = signal;
    if (length) std::memcpy(reinterpret_cast<char*>(record) + sizeof *record, description.data(), length);
    output_.commit();
  }

  void exited(bool by_signal, std::int32_t code, std::int32_t signal) noexcept {
    if (!hooks_.last_record_was_syscall()) write_stop_if_cut_short();
    ended_ = true;
    hooks_.flush_pending_registers();
    registers_.mark_stale();  // a harness may set new registers and run again
    if (auto* record = output_.reserve<ExitRecord>(RecordKind::kExit, by_signal ? 1 : 0, 0)) {
      record->code = code;
      record->signal = signal;
      output_.commit();
    }
    output_.publish();
  }

  // ---- consumer ----

  // When the emulation ended without an exit or a fault (a stop condition, a
  // limit, the caller's own uc_emu_stop), the instruction at the engine's pc did
  // not run: a kStop record ends the block there.
  void write_stop_if_cut_short() noexcept {
    if (ended_ || stop_written_) return;
    stop_written_ = true;
    std::uint64_t pc = 0;
    uc_reg_read(engine_, arch_.pc_reg, &pc);
    if (auto* record = output_.reserve<StopRecord>(RecordKind::kStop, 0, 0)) {
      record->pc = pc;
      output_.commit();
    }
  }

  std::string dump(events::Sink& sink) {
    write_stop_if_cut_short();
    output_.write_pending();
    output_.publish();
    EventAssembler replay(arch_, *consumer_decoder_, options_.level, {&sink});
    replay.begin(info_);
    const auto stats = ring_->stats();
    replay.note_lost(stats.records_overwritten, "overwritten by the flight recorder");
    for (const DecodedBlock* block : hooks_.blocks().all()) replay.adopt_block(*block);
    ring_->for_each_retained([&](std::span<const std::byte> record) { replay.on_record(record); });
    return replay.end(false);
  }

  // (A drain stuck in a sink's write, to a pipe nobody reads now, is not
  // waited for long: the process stops all the same, its trace unflushed.)
  void flush_to_files() noexcept {
    if (finished_ || !drain_) return;
    output_.write_pending();
    output_.publish();
    drain_->flush_to_files(std::chrono::milliseconds(500));
  }

  void hold_drain() noexcept {
    if (drain_) drain_->hold();
  }
  void release_drain() noexcept {
    if (drain_) drain_->release();
  }

  void abandon_in_forked_child() noexcept {
    finished_ = true;
    hooks_.remove();
    if (drain_) drain_->abandon();
    sinks_.clear();
  }

  std::string finish(bool interrupted) {
    if (finished_) return finish_error_;
    finished_ = true;
    hooks_.remove();
    if (!ring_) return finish_error_;
    hooks_.flush_pending_registers();
    write_stop_if_cut_short();
    output_.write_pending();
    registers_.publish_derived();
    ring_->close();
    if (drain_ && drain_->join()) {
      finish_error_ = assembler_->end(interrupted);
      events_ = assembler_->events();
      events_by_kind_ = assembler_->events_by_kind();
      instructions_ = assembler_->instructions();
    }
    return finish_error_;
  }

  RecorderStats stats() const {
    RecorderStats result;
    if (ring_) {
      const auto ring_stats = ring_->stats();
      result.records = ring_stats.records_written;
      result.ring_bytes_written = ring_stats.bytes_written;
      result.producer_stalls = ring_stats.producer_stalls;
      result.records_overwritten = ring_stats.records_overwritten;
    }
    result.records_lost = output_.records_lost();
    result.blocks_decoded = hooks_.blocks().decoded();
    result.registers_derived = registers_.derived_total();
    result.events = events_;
    result.events_by_kind = events_by_kind_;
    result.instructions = instructions_;
    return result;
  }

  bool stop_requested() const { return hooks_.stop_requested(); }
  bool sink_failed() { return hooks_.sink_failed().load(std::memory_order_relaxed); }
  void interrupt_next_block() noexcept { hooks_.interrupt_next_block(); }
  void set_block_interrupt_handler(std::function<void(std::uint64_t)> handler) {
    hooks_.set_block_interrupt_handler(std::move(handler));
  }

 private:
  uc_engine* engine_;
  const arch::ArchInfo& arch_;
  RecorderOptions options_;
  events::TraceInfo info_;
  std::vector<events::Sink*> sinks_;
  std::unique_ptr<BlockDecoder> consumer_decoder_;
  std::unique_ptr<ring::SpscRing> ring_;
  std::unique_ptr<EventAssembler> assembler_;
  std::unique_ptr<Drain> drain_;  // the consumer side (lossless policy only)
  // The hooks and the units they write with (the process events write with them too).
  ExecutionHooks hooks_{engine_, arch_, options_};
  RecordOutput& output_ = hooks_.output();
  RegisterShadow& registers_ = hooks_.registers();

  // The syscall path and the process events (emulation thread).
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
  bool ended_ = false;         // an exit or fault record was written
  bool stop_written_ = false;

  // Results (set by finish, on the emulation thread).
  bool finished_ = false;
  std::string finish_error_;
  std::uint64_t events_ = 0;
  std::array<std::uint64_t, events::kEventKindCount> events_by_kind_{};
  std::uint64_t instructions_ = 0;
};

Recorder::Recorder(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Recorder::~Recorder() = default;

Expected<std::unique_ptr<Recorder>> Recorder::attach(uc_engine* engine, const arch::ArchInfo& arch,
                                                     const RecorderOptions& options, std::vector<events::Sink*> sinks,
                                                     events::TraceInfo info) {
  auto impl = std::make_unique<Impl>(engine, arch, options);
  if (auto status = impl->init(std::move(sinks), std::move(info)); !status) return status.error();
  return std::unique_ptr<Recorder>(new Recorder(std::move(impl)));
}

void Recorder::syscall_enter() noexcept { impl_->syscall_enter(std::nullopt); }
void Recorder::syscall_enter(std::uint64_t trap_pc) noexcept { impl_->syscall_enter(trap_pc); }
void Recorder::syscall_memory_written(std::uint64_t address, std::span<const std::uint8_t> bytes) noexcept {
  impl_->syscall_memory_written(address, bytes);
}
void Recorder::syscall_mapping_changed(const events::MappingEffect& change) noexcept {
  impl_->syscall_mapping_changed(change);
}
void Recorder::syscall_exit(std::uint64_t pc, std::uint64_t number, const std::uint64_t (&args)[6], std::int64_t result,
                            std::span<const std::uint64_t> call_stack) noexcept {
  impl_->syscall_exit(pc, number, args, result, call_stack);
}
void Recorder::module_loaded(std::uint64_t start, std::uint64_t end, std::uint64_t load_bias,
                             std::string_view path) noexcept {
  impl_->module_loaded(start, end, load_bias, path);
}
void Recorder::fault(std::uint64_t pc, std::uint64_t address, std::uint32_t signal,
                     std::string_view description) noexcept {
  impl_->fault(pc, address, signal, description);
}
void Recorder::exited(bool by_signal, std::int32_t code, std::int32_t signal) noexcept {
  impl_->exited(by_signal, code, signal);
}
std::string Recorder::dump(events::Sink& sink) { return impl_->dump(sink); }
std::string Recorder::finish(bool interrupted) { return impl_->finish(interrupted); }
void Recorder::abandon_in_forked_child() noexcept { impl_->abandon_in_forked_child(); }
void Recorder::set_block_interrupt_handler(std::function<void(std::uint64_t)> handler) {
  impl_->set_block_interrupt_handler(std::move(handler));
}
void Recorder::interrupt_next_block() noexcept { impl_->interrupt_next_block(); }
void Recorder::hold_drain() noexcept { impl_->hold_drain(); }
void Recorder::flush_to_files() noexcept { impl_->flush_to_files(); }
void Recorder::release_drain() noexcept { impl_->release_drain(); }
RecorderStats Recorder::stats() const { return impl_->stats(); }
bool Recorder::stop_requested() const { return impl_->stop_requested(); }
void Recorder::registers_changed() noexcept { impl_->registers_changed(); }
void Recorder::signal_delivered(const events::SignalEvent& signal) noexcept { impl_->signal_delivered(signal); }
void Recorder::thread_event(events::ThreadId thread, const events::ThreadEvent& change) noexcept {
  impl_->thread_event(thread, change);
}
void Recorder::process_event(const events::ProcessEvent& change) noexcept { impl_->process_event(change); }
bool Recorder::sink_failed() const { return impl_->sink_failed(); }

}  // namespace tracecorn::core
