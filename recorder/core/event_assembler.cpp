// Role: implementation of EventAssembler (see event_assembler.h for the rules).
#include "recorder/core/event_assembler.h"

#include <algorithm>

#include "recorder/core/ring_records.h"

namespace tracecorn::core {

using events::EventKind;

EventAssembler::EventAssembler(const arch::ArchInfo& arch, const BlockDecoder& decoder, TraceLevel level,
                               std::vector<events::Sink*> sinks)
    : arch_(arch), decoder_(decoder), level_(level), sinks_(std::move(sinks)), batch_(kBatchEvents) {}

void EventAssembler::begin(const events::TraceInfo& info) {
  current_thread_ = events::ThreadId{static_cast<std::uint32_t>(info.process_id)};
  for (auto* sink : sinks_) sink->begin(info);
}

void EventAssembler::adopt_block(const DecodedBlock& block) { blocks_.define(block); }

void EventAssembler::memory_accessed(const PendingMemory& access) {
  pending_memory_.push_back(access);
  if (!pending_block_) flush_block(0, true);  // no block to tie it to: emitted as unattributed below
  if (!pending_block_) {
    emit_memory(pending_memory_.front(), access.pc != 0, access.pc);
    pending_memory_.pop_front();
  }
}

void EventAssembler::flush_events() {
  if (batch_used_ == 0) return;
  const std::span<const events::Event> events(batch_.data(), batch_used_);
  for (auto* sink : sinks_) sink->on_events(events);
  batch_used_ = 0;
}

void EventAssembler::flush_sinks() {
  flush_events();
  for (auto* sink : sinks_) sink->flush();
}

void EventAssembler::emit_memory(const PendingMemory& access, bool pc_known, std::uint64_t pc) {
  events::MemoryEvent memory{events::GuestAddress{access.address}, access.size, access.value,
                             events::GuestAddress{pc}, pc_known};
  emit(access.write ? EventKind::kMemoryWrite : EventKind::kMemoryRead, memory);
}

// From `index`, the first instruction of `block` that flush_block's loop has
// work for when no register change waits and the whole block ran: the one the
// next waiting access names by its pc, else (accesses matched by count) the
// next that makes an access or may; the block's end when no access waits or
// their attribution broke (they are then emitted after the block).
std::size_t EventAssembler::next_with_work(const DecodedBlock& block, std::size_t index, bool attribution_broken) const {
  const std::size_t count = block.instructions.size();
  if (pending_memory_.empty()) return count;
  const std::uint64_t pc = pending_memory_.front().pc;
  if (pc != 0) {
    while (index < count && block.instructions[index].address != pc) ++index;
    return index;
  }
  if (attribution_broken) return count;
  while (index < count) {
    const DecodedInstruction& insn = block.instructions[index];
    if (!insn.memory_count_fixed || insn.memory_reads != 0 || insn.memory_writes != 0) break;
    ++index;
  }
  return index;
}

void EventAssembler::flush_block(std::uint64_t stop_pc, bool inclusive) {
  const DecodedBlock* block = pending_block_;
  if (!block) return;
  const bool with_instructions = level_has_instructions(level_);
  bool attribution_broken = false;
  // Instructions [run_begin, end) not yet handed over go to the sinks as one
  // run, before whatever comes after them (a memory access, a register change).
  std::size_t run_begin = pending_index_;
  auto hand_over = [&](std::size_t end) {
    if (!with_instructions || end <= run_begin) return;
    const std::size_t count = end - run_begin;
    flush_events();
    const events::InstructionRun run{events::EventSequence{next_sequence_}, current_thread_, std::span(block->bytes),
                                     std::span(block->bounds).subspan(run_begin, count),
                                     static_cast<std::uint32_t>(run_begin), block->mode};
    for (auto* sink : sinks_) sink->on_instructions(run);
    next_sequence_ += count;
    by_kind_[static_cast<std::size_t>(events::EventKind::kInstruction)] += count;
    run_begin = end;
  };
  auto emit_access = [&](const PendingMemory& access, bool pc_known, std::uint64_t pc) {
    hand_over(pending_index_ + 1);  // the access comes after its instruction
    emit_memory(access, pc_known, pc);
  };
  auto emit_registers_for = [&](std::uint64_t pc) {
    while (!pending_registers_.empty() && pending_registers_.front().pc == pc) {
      hand_over(pending_index_ + 1);
      emit(EventKind::kRegisters, events::RegistersEvent{events::GuestAddress{pc}, values_of(pending_registers_.front())});
      pending_registers_.pop_front();
    }
    if (pending_registers_.empty()) register_pool_.clear();
  };
  // Nothing recorded inside the block and it runs to its end: no per-instruction
  // work; hand_over below gives its instructions to the sinks as one run.
  if (!stop_pc && pending_memory_.empty() && pending_registers_.empty()) {
    instructions_ += block->instructions.size() - pending_index_;
    pending_index_ = block->instructions.size();
  }
  const std::size_t block_instructions = block->instructions.size();
  for (; pending_index_ < block_instructions; ++pending_index_) {
    if (!stop_pc && pending_registers_.empty()) {
      // Instructions with nothing to attribute ran back to back: pass them
      // at once (this loop runs once per instruction of every block that
      // made a memory access).
      const std::size_t next = next_with_work(*block, pending_index_, attribution_broken);
      instructions_ += next - pending_index_;
      pending_index_ = next;
      if (pending_index_ >= block_instructions) break;
    }
    const DecodedInstruction& insn = block->instructions[pending_index_];
    if (stop_pc && insn.address == stop_pc && !inclusive) break;
    ++instructions_;  // its event goes out in a run (hand_over)
    // Memory accesses of this instruction: by exact pc when the producer knew it,
    // else by the instruction's fixed read/write counts, in order.
    if (!pending_memory_.empty() && pending_memory_.front().pc != 0) {
      while (!pending_memory_.empty() && pending_memory_.front().pc == insn.address) {
        emit_access(pending_memory_.front(), true, insn.address);
        pending_memory_.pop_front();
      }
    } else if (!attribution_broken && !pending_memory_.empty()) {
      const bool last_with_memory = pending_index_ >= block->last_memory_instruction;
      if (!insn.memory_count_fixed) {
        if (last_with_memory) {
          while (!pending_memory_.empty()) {
            emit_access(pending_memory_.front(), true, insn.address);
            pending_memory_.pop_front();
          }
        } else {
          attribution_broken = true;
        }
      } else {
        std::uint8_t reads = insn.memory_reads, writes = insn.memory_writes;
        while ((reads || writes) && !pending_memory_.empty()) {
          const PendingMemory& next = pending_memory_.front();
          if (next.write ? writes == 0 : reads == 0) break;  // not this instruction's next access
          next.write ? --writes : --reads;
          emit_access(next, true, insn.address);
          pending_memory_.pop_front();
        }
      }
    }
    emit_registers_for(insn.address);
    if (stop_pc && insn.address == stop_pc) {
      ++pending_index_;
      break;
    }
  }
  hand_over(pending_index_);  // the instructions up to where the loop stopped
  const bool finished = pending_index_ >= block->instructions.size();
  if (finished || attribution_broken) {
    // Accesses that could not be tied to an instruction are kept, marked as such.
    while (!pending_memory_.empty()) {
      emit_memory(pending_memory_.front(), false, block->address);
      pending_memory_.pop_front();
    }
  }
  if (finished) {
    while (!pending_registers_.empty()) {
      const auto& front = pending_registers_.front();
      emit(EventKind::kRegisters, events::RegistersEvent{events::GuestAddress{front.pc}, values_of(front)});
      pending_registers_.pop_front();
    }
    register_pool_.clear();
    pending_block_ = nullptr;
  }
}

namespace {

// The `length` bytes after the `fixed` bytes of `record`; empty when it is shorter.
std::span<const std::uint8_t> record_tail(std::span<const std::byte> record, std::size_t fixed, std::size_t length) {
  if (record.size() < fixed + length) return {};
  return std::span(reinterpret_cast<const std::uint8_t*>(record.data()) + fixed, length);
}

}  // namespace

// One record of the ring: each kind's step below; a record that does not
// hold what its kind says counts as malformed. (The steps of the frequent
// kinds are inlined here, as when this was one function: called apart, the
// drain thread's cost at the regs level rose by 6%.)
void EventAssembler::on_record(std::span<const std::byte> record) {
  if (record.size() < sizeof(RecordHeader)) {
    ++malformed_;
    return;
  }
  const auto header = load_record<RecordHeader>(record);
  bool whole = true;
  switch (header.kind) {
    case RecordKind::kBlockDefinition: whole = block_defined(header, record); break;
    case RecordKind::kBlockRun: whole = blocks_run(header, record); break;
    case RecordKind::kMemoryRead:
    case RecordKind::kMemoryWrite: {
      const auto memory = load_record<MemoryRecord>(record);
      memory_accessed({header.kind == RecordKind::kMemoryWrite, static_cast<std::uint8_t>(header.aux), memory.address,
                       memory.value, memory.pc});
      break;
    }
    case RecordKind::kRegisters:
    case RecordKind::kSyscallRegisters: registers_recorded(header, record); break;
    case RecordKind::kRegisterBatch: register_batch(record); break;
    case RecordKind::kSyscallMemoryWrite: whole = syscall_memory_written(record); break;
    case RecordKind::kSyscallMapping: whole = syscall_mapping_changed(header, record); break;
    case RecordKind::kSyscall: syscall_made(header, record); break;
    case RecordKind::kFault: {
      const auto fault = load_record<FaultRecord>(record);
      flush_block(fault.pc, false);
      drop_pending_block();
      const auto text = record_tail(record, sizeof fault, header.aux);
      emit(EventKind::kFault, events::FaultEvent{events::GuestAddress{fault.pc}, events::GuestAddress{fault.address},
                                                 static_cast<std::uint32_t>(fault.signal),
                                                 std::string_view(reinterpret_cast<const char*>(text.data()), text.size())});
      break;
    }
    case RecordKind::kModuleLoad: {
      const auto module = load_record<ModuleLoadRecord>(record);
      const auto path = record_tail(record, sizeof module, header.aux);
      emit(EventKind::kModuleLoad,
           events::ModuleLoadEvent{events::GuestAddress{module.start}, events::GuestAddress{module.end},
                                   module.load_bias,
                                   std::string_view(reinterpret_cast<const char*>(path.data()), path.size())});
      break;
    }
    case RecordKind::kExit: {
      const auto exit = load_record<ExitRecord>(record);
      drop_pending_block();  // the rest of the block never ran
      emit(EventKind::kExit, events::ExitEvent{header.flags == 1, static_cast<std::int32_t>(exit.code),
                                               static_cast<std::int32_t>(exit.signal)});
      break;
    }
    case RecordKind::kStop: {
      const auto stop = load_record<StopRecord>(record);
      if (header.flags & kStopAtBlockBoundary) {
        flush_block(0, true);  // the last block ran whole
      } else {
        flush_block(stop.pc, false);
      }
      drop_pending_block();
      break;
    }
    case RecordKind::kSignal: signal_delivered(load_record<SignalRecord>(record)); break;
    case RecordKind::kThread: thread_changed(load_record<ThreadRecord>(record)); break;
    case RecordKind::kProcess: process_changed(record); break;
    case RecordKind::kGap: note_lost(load_record<GapRecord>(record).lost_events, "events dropped by the recorder"); break;
    default: whole = false;
  }
  if (!whole) ++malformed_;
}

// kBlockDefinition: the producer decoded a new block (its bytes follow); decoded here again.
bool EventAssembler::block_defined(const RecordHeader& header, std::span<const std::byte> record) {
  const auto definition = load_record<BlockDefinitionRecord>(record);
  const auto bytes = record_tail(record, sizeof definition, definition.size);
  if (bytes.size() != definition.size) return false;
  DecodedBlock decoded = decoder_.decode(definition.address, bytes, false, header.flags);
  decoded.id = definition.id;
  decoded.from_writable_memory = (header.aux & kBlockFromWritableMemory) != 0;
  blocks_.define(std::move(decoded));
  return true;
}

// kBlockRun: the ids of the blocks executed one after another.
[[gnu::always_inline]] inline
bool EventAssembler::blocks_run(const RecordHeader& header, std::span<const std::byte> record) {
  const auto ids = record_tail(record, sizeof(BlockRunRecord), std::size_t{header.aux} * 4);
  if (ids.size() != std::size_t{header.aux} * 4) return false;
  for (std::size_t i = 0; i < header.aux; ++i) {
    std::uint32_t id;
    std::memcpy(&id, ids.data() + i * 4, 4);
    const DecodedBlock* block = blocks_.find(id);
    if (!block) {
      ++malformed_;
      continue;
    }
    block_executed(*block);
  }
  return true;
}

// kRegisters (an instruction's changes) and kSyscallRegisters (the kernel's,
// kept for the syscall, signal or thread record that follows).
[[gnu::always_inline]] inline
void EventAssembler::registers_recorded(const RecordHeader& header, std::span<const std::byte> record) {
  const auto registers = load_record<RegistersRecord>(record);
  // Decoded straight into the pool (or the syscall's list): no per-record allocation.
  const bool for_block = header.kind == RecordKind::kRegisters && pending_block_;
  std::vector<events::RegisterValue>& target =
      header.kind == RecordKind::kSyscallRegisters ? register_effects_ : for_block ? register_pool_ : decoded_registers_;
  if (!for_block && header.kind == RecordKind::kRegisters) target.clear();
  const std::size_t first = target.size();
  const std::size_t available = (record.size() - std::min(record.size(), sizeof registers)) / sizeof(RegisterEntry);
  const std::size_t count = std::min<std::size_t>(header.aux, available);
  target.resize(first + count);
  const auto* entries = reinterpret_cast<const RegisterEntry*>(record.data() + sizeof registers);
  for (std::size_t i = 0; i < count; ++i) {
    events::RegisterValue& value = target[first + i];
    value.index = entries[i].index;
    value.size = entries[i].size;
    std::memcpy(value.bytes.data(), entries[i].value, 16);
  }
  if (for_block) {
    pending_registers_.push_back({registers.pc, static_cast<std::uint32_t>(first), static_cast<std::uint32_t>(count)});
  } else if (header.kind == RecordKind::kRegisters) {
    emit(EventKind::kRegisters, events::RegistersEvent{events::GuestAddress{registers.pc}, target});
  }
}

// kRegisterBatch: items back to back (ring_records.h), each handled as a
// kRegisters record with the same pc and values, or a block or memory marker.
[[gnu::always_inline]] inline
void EventAssembler::register_batch(std::span<const std::byte> record) {
  const auto* bytes = reinterpret_cast<const std::uint8_t*>(record.data());
  std::size_t at = sizeof(RecordHeader);
  while (at + sizeof(RegisterBatchItem) <= record.size()) {
    RegisterBatchItem item;
    std::memcpy(&item, bytes + at, sizeof item);
    at += sizeof item;
    if (item.count == kMemoryReadMarkerCount || item.count == kMemoryWriteMarkerCount) {
      std::uint64_t address_and_value[2];
      if (at + sizeof address_and_value > record.size()) {
        ++malformed_;
        return;
      }
      std::memcpy(address_and_value, bytes + at, sizeof address_and_value);
      at += sizeof address_and_value;
      memory_accessed({item.count == kMemoryWriteMarkerCount, item.reserved[0], address_and_value[0],
                       address_and_value[1], item.pc});
      continue;
    }
    if (item.count == kBlockMarkerCount) {  // a block executed
      const DecodedBlock* block = item.pc >> 32 ? nullptr : blocks_.find(static_cast<std::uint32_t>(item.pc));
      if (block)
        block_executed(*block);
      else
        ++malformed_;
      continue;
    }
    if (!register_batch_item(item, record, at)) return;
  }
}

// One instruction's item of a kRegisterBatch, its entries at `at` (moved past
// them). False when the record ends inside it (what was whole is kept).
[[gnu::always_inline]] inline
bool EventAssembler::register_batch_item(const RegisterBatchItem& item, std::span<const std::byte> record,
                                         std::size_t& at) {
  const auto* bytes = reinterpret_cast<const std::uint8_t*>(record.data());
  const bool for_block = pending_block_ != nullptr;
  std::vector<events::RegisterValue>& target = for_block ? register_pool_ : decoded_registers_;
  if (!for_block) target.clear();
  const std::size_t first = target.size();
  for (std::uint16_t i = 0; i < item.count; ++i) {
    RegisterBatchEntryHead head;
    if (at + sizeof head > record.size()) break;
    std::memcpy(&head, bytes + at, sizeof head);
    const std::size_t value_bytes = register_batch_value_bytes(head.size);
    if (at + sizeof head + value_bytes > record.size()) break;
    events::RegisterValue& value = target.emplace_back();
    value.index = head.index;
    value.size = head.size;
    value.bytes.fill(0);
    std::memcpy(value.bytes.data(), bytes + at + sizeof head, value_bytes);
    at += sizeof head + value_bytes;
  }
  const std::size_t count = target.size() - first;
  if (count != item.count) ++malformed_;  // cut short
  if (for_block) {
    pending_registers_.push_back({item.pc, static_cast<std::uint32_t>(first), static_cast<std::uint32_t>(count)});
  } else {
    emit(EventKind::kRegisters, events::RegistersEvent{events::GuestAddress{item.pc}, target});
  }
  return count == item.count;
}

// kSyscallMemoryWrite: bytes the kernel wrote, kept for the syscall's event.
bool EventAssembler::syscall_memory_written(std::span<const std::byte> record) {
  const auto write = load_record<SyscallMemoryWriteRecord>(record);
  const auto bytes = record_tail(record, sizeof write, write.length);
  if (bytes.size() != write.length) return false;
  effect_bytes_.emplace_back(bytes.begin(), bytes.end());
  memory_effects_.push_back({events::GuestAddress{write.address}, {}});
  return true;
}

// kSyscallMapping: a mapping the kernel changed (name and file follow), kept for the syscall's event.
bool EventAssembler::syscall_mapping_changed(const RecordHeader& header, std::span<const std::byte> record) {
  const auto mapping = load_record<SyscallMappingRecord>(record);
  const auto names = record_tail(record, sizeof mapping, std::uint64_t{mapping.name_length} + mapping.file_length);
  if (names.size() != std::uint64_t{mapping.name_length} + mapping.file_length) return false;
  events::MappingEffect effect{static_cast<events::MappingChangeKind>(header.aux), events::GuestAddress{mapping.start},
                               mapping.length, static_cast<std::uint32_t>(mapping.prot)};
  effect.file_offset = mapping.file_offset;
  effect.file_size = mapping.file_size;
  mapping_effects_.push_back(effect);
  const auto* text = reinterpret_cast<const char*>(names.data());
  mapping_names_.emplace_back(text, mapping.name_length);
  mapping_names_.emplace_back(text + mapping.name_length, mapping.file_length);
  return true;
}

// kSyscall: the syscall's event, with the effects gathered before it and its call stack.
void EventAssembler::syscall_made(const RecordHeader& header, std::span<const std::byte> record) {
  const auto syscall = load_record<SyscallRecord>(record);
  flush_block(syscall.pc, true);
  std::vector<std::uint64_t> stack(header.aux);
  const auto stack_bytes = record_tail(record, sizeof syscall, stack.size() * 8);
  if (stack_bytes.size() == stack.size() * 8 && !stack.empty())
    std::memcpy(stack.data(), stack_bytes.data(), stack_bytes.size());
  for (std::size_t i = 0; i < memory_effects_.size(); ++i) memory_effects_[i].bytes = effect_bytes_[i];
  for (std::size_t i = 0; i < mapping_effects_.size(); ++i) {
    mapping_effects_[i].name = mapping_names_[2 * i];
    mapping_effects_[i].file = mapping_names_[2 * i + 1];
  }
  const arch::SyscallId id = arch_.syscall_id(syscall.number);
  const std::string name = id == arch::SyscallId::unknown ? "syscall_" + std::to_string(syscall.number)
                                                          : std::string(arch::syscall_name(id));
  events::SyscallEvent event;
  event.pc = events::GuestAddress{syscall.pc};
  event.number = syscall.number;
  event.name = name;
  std::copy(std::begin(syscall.args), std::end(syscall.args), std::begin(event.args));
  event.result = syscall.result;
  event.memory_writes = memory_effects_;
  event.mapping_changes = mapping_effects_;
  event.register_changes = register_effects_;
  event.call_stack = stack;
  emit(EventKind::kSyscall, event);
  clear_effects();
}

void EventAssembler::signal_delivered(const SignalRecord& signal) {
  // Where the interrupted code stopped (ring_records.h, SignalRecord::flags).
  if (signal.header.flags & kSignalFault)
    flush_block(signal.interrupted_pc, false);
  else if (!(signal.header.flags & kSignalAtSyscallReturn))
    flush_block(0, true);  // at a block boundary: the block before ran whole
  drop_pending_block();
  for (std::size_t i = 0; i < memory_effects_.size(); ++i) memory_effects_[i].bytes = effect_bytes_[i];
  events::SignalEvent event;
  event.signal = static_cast<std::uint32_t>(signal.signal);
  event.code = static_cast<std::int32_t>(signal.code);
  event.sender_pid = signal.sender_pid;
  event.fault_address = events::GuestAddress{signal.fault_address};
  event.interrupted_pc = events::GuestAddress{signal.interrupted_pc};
  event.handler = events::GuestAddress{signal.handler};
  event.frame = events::GuestAddress{signal.frame};
  event.fault = (signal.header.flags & kSignalFault) != 0;
  event.frame_writes = memory_effects_;
  event.register_changes = register_effects_;
  emit(EventKind::kSignal, event);
  clear_effects();
}

void EventAssembler::thread_changed(const ThreadRecord& thread) {
  const auto change = static_cast<events::ThreadChange>(thread.header.aux);
  const events::ThreadId about{static_cast<std::uint32_t>(thread.thread)};
  events::ThreadEvent event;
  event.change = change;
  event.from = events::ThreadId{static_cast<std::uint32_t>(thread.from)};
  event.exit_code = static_cast<std::int32_t>(thread.exit_code);
  event.registers = register_effects_;
  const events::ThreadId running = current_thread_;
  // In a block hook the block before ran whole. Inside a syscall its record
  // emitted the block up to the syscall; after a switch the rest of that block
  // did not run (the thread resumes there later, in a block of its own).
  if (!(thread.header.flags & kThreadInSyscall)) flush_block(0, true);
  if (change == events::ThreadChange::kSwitched) drop_pending_block();
  current_thread_ = about;  // the event's own thread
  emit(EventKind::kThread, event);
  if (change != events::ThreadChange::kSwitched) current_thread_ = running;
  clear_effects();
}

void EventAssembler::process_changed(std::span<const std::byte> record) {
  if (record.size() < sizeof(ProcessRecord)) {
    ++malformed_;
    return;
  }
  const auto process = load_record<ProcessRecord>(record);
  const std::size_t strings = std::size_t{process.trace_length} + process.detail_length;
  if (record.size() < sizeof process + strings) {
    ++malformed_;
    return;
  }
  const char* text = reinterpret_cast<const char*>(record.data()) + sizeof process;
  events::ProcessEvent event;
  event.change = static_cast<events::ProcessChange>(process.header.aux);
  event.pid = process.pid;
  event.trace = std::string_view(text, process.trace_length);
  event.detail = std::string_view(text + process.trace_length, process.detail_length);
  emit(EventKind::kProcess, event);
}

void EventAssembler::clear_effects() {
  effect_bytes_.clear();
  memory_effects_.clear();
  mapping_effects_.clear();
  mapping_names_.clear();
  register_effects_.clear();
}

void EventAssembler::block_executed(const DecodedBlock& block) {
  if (pending_block_) flush_block(0, true);
  emit(EventKind::kBlock, events::BlockEvent{events::GuestAddress{block.address}, block.size, block.instruction_count,
                                             std::span(block.bytes), block.mode, block.from_writable_memory});
  if (level_ == TraceLevel::kBlocks) {
    instructions_ += block.instruction_count;
  } else {
    pending_block_ = &block;
    pending_index_ = 0;
  }
}

void EventAssembler::drop_pending_block() {
  pending_block_ = nullptr;
  pending_memory_.clear();
  pending_registers_.clear();
  register_pool_.clear();
}

void EventAssembler::note_lost(std::uint64_t lost_events, std::string_view reason) {
  if (lost_events == 0) return;
  flush_block(0, true);
  drop_pending_block();
  emit(EventKind::kGap, events::GapEvent{lost_events, reason});
  next_sequence_ += lost_events;  // the lost events had these numbers
  lost_ += lost_events;
}

std::string EventAssembler::end(bool interrupted) {
  flush_block(0, true);
  flush_events();
  events::TraceSummary summary{next_sequence_, lost_, instructions_, interrupted};
  std::string errors;
  for (auto* sink : sinks_) {
    const std::string error = sink->end(summary);
    if (!error.empty()) errors += (errors.empty() ? "" : "; ") + error;
  }
  return errors;
}

}  // namespace tracecorn::core
