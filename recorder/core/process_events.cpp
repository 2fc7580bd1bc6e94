// Role: implementation of ProcessEvents (see process_events.h). Emulation thread.
#include "recorder/core/process_events.h"

#include <algorithm>
#include <cstring>

namespace tracecorn::core {

void ProcessEvents::syscall_enter(std::optional<std::uint64_t> trap_pc) noexcept {
  in_syscall_ = true;
  captured_stack_depth_ = 0;
  if (trap_pc && options_.stack_provider)
    captured_stack_depth_ = options_.stack_provider->capture(*trap_pc, captured_stack_);
  hooks_.flush_pending_registers();
  if (syscall_snapshot_.size() != arch_.registers.size()) syscall_snapshot_.resize(arch_.registers.size());
  registers_.read_all(syscall_snapshot_);
}

void ProcessEvents::syscall_memory_written(std::uint64_t address, std::span<const std::uint8_t> bytes) noexcept {
  hooks_.code_written(address, bytes.size());
  const std::uint32_t chunk_limit = output_.ring().max_record_size() - sizeof(SyscallMemoryWriteRecord) - 8;
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

void ProcessEvents::syscall_mapping_changed(const events::MappingEffect& change) noexcept {
  const std::uint64_t start = change.start.value;
  // Decoded code there is stale unless it stays executable and read-only
  // (code decoded from writable memory stays watched: producer_blocks.h).
  if (change.kind != events::MappingChangeKind::kProtect || !(change.prot & 4) || (change.prot & 2))
    hooks_.forget_code(start, start + change.length);
  hooks_.mapping_changed(start, start + change.length, change.kind, (change.prot & 2) != 0);
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
void ProcessEvents::registers_changed() noexcept { registers_.mark_stale(); }

void ProcessEvents::syscall_exit(std::uint64_t pc, std::uint64_t number, const std::uint64_t (&args)[6], std::int64_t result,
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

void ProcessEvents::signal_delivered(const events::SignalEvent& signal) noexcept {
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

void ProcessEvents::thread_event(events::ThreadId thread, const events::ThreadEvent& change) noexcept {
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
bool ProcessEvents::set_pc_entry(std::span<RegisterEntry> entries, std::uint64_t handler) noexcept {
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
std::optional<std::uint64_t> ProcessEvents::handler_entered_in_syscall() const noexcept {
  std::optional<std::uint64_t> handler;
  for (std::size_t i = 0; i < deferred_count_; ++i)
    if (!deferred_[i].is_thread && !(deferred_[i].signal.header.flags & kSignalFault))
      handler = deferred_[i].signal.handler;
  return handler;
}

// Keeps a signal or thread record until the syscall's own is written.
void ProcessEvents::defer(const DeferredRecord& record) noexcept {
  if (deferred_count_ == deferred_.size()) {  // (64 signals in one syscall: more cannot be pending)
    output_.count_lost();
    return;
  }
  deferred_[deferred_count_++] = record;
}

void ProcessEvents::write_deferred_process_events() noexcept {
  for (std::size_t i = 0; i < deferred_count_; ++i) write_process_event(deferred_[i]);
  deferred_count_ = 0;
  switched_in_syscall_ = false;
}

// A signal or thread record, after every register of the table (as a
// kSyscallRegisters record, which the consumer gives the event): the
// recorder's register copy is now exact again.
void ProcessEvents::write_process_event(DeferredRecord& deferred) noexcept {
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

void ProcessEvents::module_loaded(std::uint64_t start, std::uint64_t end, std::uint64_t load_bias, std::string_view path) noexcept {
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

void ProcessEvents::process_event(const events::ProcessEvent& change) noexcept {
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

void ProcessEvents::fault(std::uint64_t pc, std::uint64_t address, std::uint32_t signal, std::string_view description) noexcept {
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

void ProcessEvents::exited(bool by_signal, std::int32_t code, std::int32_t signal) noexcept {
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

// When the emulation ended without an exit or a fault (a stop condition, a
// limit, the caller's own uc_emu_stop), the instruction at the engine's pc did
// not run: a kStop record ends the block there.
void ProcessEvents::write_stop_at_block_boundary(std::uint64_t pc) noexcept {
  if (ended_ || stop_written_) return;
  stop_written_ = true;
  if (auto* record = output_.reserve<StopRecord>(RecordKind::kStop, kStopAtBlockBoundary, 0)) {
    record->pc = pc;
    output_.commit();
  }
}

void ProcessEvents::write_stop_if_cut_short() noexcept {
  if (ended_ || stop_written_) return;
  stop_written_ = true;
  std::uint64_t pc = 0;
  uc_reg_read(engine_, arch_.pc_reg, &pc);
  if (auto* record = output_.reserve<StopRecord>(RecordKind::kStop, 0, 0)) {
    record->pc = pc;
    output_.commit();
  }
}

}  // namespace tracecorn::core
