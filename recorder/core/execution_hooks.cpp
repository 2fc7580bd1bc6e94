// Role: implementation of ExecutionHooks (see execution_hooks.h): the hooks'
// paths, hot first. Emulation thread, inside Unicorn.
//
// Hooks per level (costs measured on Debian's Unicorn 2.0.1, see bench/):
//   blocks, insns  UC_HOOK_BLOCK only; instructions are derived from the block's
//                  decode by the consumer.
//   mem            plus UC_HOOK_MEM_READ_AFTER (the loaded value; MEM_READ reports 0)
//                  and UC_HOOK_MEM_WRITE; no instruction hook.
//   regs           UC_HOOK_BLOCK + UC_HOOK_CODE: at each instruction, the registers
//                  the previous instruction can write (Capstone's access list,
//                  cached per block) are read, or derived (below), and compared
//                  with a shadow copy; the changes collect in a local
//                  kRegisterBatch buffer, with the blocks and memory accesses
//                  between them as marker items, written to the ring as one
//                  record (ring_records.h).
//   full           all of the above; memory records carry the exact pc.
// The block hook's hot path is a direct-mapped cache lookup and 4 bytes (the
// block's id) appended to a local run of up to 256 blocks, written to the ring as
// one kBlockRun record when full or before any other record (ring_records.h).
// At the blocks, insns and mem levels on one-mode architectures that lookup is
// one 16-byte slot read in on_block itself (about 20 instructions in all); the
// rest (stop conditions, mode, decoding new blocks) runs in block() when the
// slot misses or a flag says so (fast_blocks_).
// Register changes: flags are the full rflags register, recorded when an
// instruction writes any flag; a partial write (al, eax) is recorded as its full
// register (rax). Registers the kernel changes at a syscall are found by
// comparing the whole register table before and after. With
// RecorderOptions::derive_registers (x86), the values of simple integer
// instructions are computed from the shadow copy instead of read
// (arch/derived_registers.h); the shadow must then hold every register's current
// value, so whenever it may not (an instruction the hooks did not see, a run
// that ended and may restart with new registers) it is marked stale, and the
// next block hook reads it whole again (RegisterShadow::refresh_if_stale).
#include "recorder/core/execution_hooks.h"

#include <algorithm>
#include <bit>
#include <cstring>

namespace tracecorn::core {

Status ExecutionHooks::install(ring::SpscRing& ring) {
  output_.attach(ring);
  // The memory levels' write hook sees every guest store; the others watch
  // the pages of code decoded from writable memory (code_write_watch.h).
  const bool stores_hooked = level_has_memory(options_.level);
  if (auto status = blocks_.attach(level_has_registers(options_.level), stores_hooked ? nullptr : &on_code_write, this);
      !status)
    return status;
  // With a code range the hooks do not see the code outside it, whose
  // register changes the shadow would miss: no derivation there.
  registers_.attach(options_.derive_registers && level_has_registers(options_.level) && !options_.code_range);
  active_ = !options_.start_at.has_value();
  fast_blocks_allowed_ = !level_has_registers(options_.level) &&
                         !(level_has_memory(options_.level) && options_.code_range) && !arch_.alternate_isa &&
                         options_.stop_after_instructions == 0;

  const std::uint64_t begin = options_.code_range ? options_.code_range->start : 1;
  const std::uint64_t end = options_.code_range ? options_.code_range->end - 1 : 0;
  if (!add_hook(UC_HOOK_BLOCK, reinterpret_cast<void*>(&on_block), begin, end)) return hook_error("block");
  if (level_has_memory(options_.level)) {
    // Only the program's side of the address space (below TASK_SIZE, the
    // layout's stack top): above it lie the CPU's own tables (i386's GDT,
    // whose descriptor loads on `mov gs` are no access of the program's).
    const std::uint64_t user_end = arch_.layout.stack_top - 1;
    if (!add_hook(UC_HOOK_MEM_READ_AFTER, reinterpret_cast<void*>(&on_memory), 1, user_end) ||
        !add_hook(UC_HOOK_MEM_WRITE, reinterpret_cast<void*>(&on_memory), 1, user_end))
      return hook_error("memory");
  }
  if (level_has_registers(options_.level))
    if (!add_hook(UC_HOOK_CODE, reinterpret_cast<void*>(&on_code), begin, end)) return hook_error("code");
  if (options_.start_at)
    if (!add_hook(UC_HOOK_CODE, reinterpret_cast<void*>(&on_start_address), *options_.start_at, *options_.start_at))
      return hook_error("start address");
  if (options_.stop_at)
    if (!add_hook(UC_HOOK_CODE, reinterpret_cast<void*>(&on_stop_address), *options_.stop_at, *options_.stop_at))
      return hook_error("stop address");
  return ok_status();
}

void ExecutionHooks::remove() noexcept {
  for (uc_hook hook : hooks_) uc_hook_del(engine_, hook);
  hooks_.clear();
  blocks_.remove_hooks();
}

// The block hook. Fast path (fast_blocks_: see there): one direct-mapped slot
// gives the block's id, which is appended to the local run. Anything else (a
// new block, a slot collision, another level, recording off, the first block
// after a syscall, a failed sink) takes block().
void ExecutionHooks::on_block(uc_engine*, std::uint64_t address, std::uint32_t size, void* user) noexcept {
  auto* self = static_cast<ExecutionHooks*>(user);
  const ProducerBlocks::IdSlot& slot = self->blocks_.slot(address);
  if (self->fast_blocks_.load(std::memory_order_relaxed) && ((slot.address ^ address) | (slot.size ^ size)) == 0)
      [[likely]] {
    self->output_.append_block(slot.id);
    return;
  }
  self->block(address, size);
  // (After block()'s store of fast_blocks_: see interrupt_next_block.)
  if (self->block_interrupt_.load(std::memory_order_seq_cst)) [[unlikely]] self->take_block_interrupt(address);
}

inline void ExecutionHooks::instruction(std::uint64_t address) noexcept {
  if (!active_ || !current_block_) return;
  if (const DecodedInstruction* pending = pending_instruction_) {
    if (pending->derived.operation != arch::DerivedOperation::kNone && registers_.derive_now()) {
      pending_instruction_ = nullptr;
      flush_derived(*pending);
    } else {
      flush_pending_registers();
    }
  }
  // Find this instruction in the current block (usually the next one).
  const auto& list = current_block_->instructions;
  if (current_index_ >= list.size() || list[current_index_].address != address) [[unlikely]] {
    current_index_ = 0;
    while (current_index_ < list.size() && list[current_index_].address != address) ++current_index_;
    if (current_index_ >= list.size()) {
      pending_instruction_ = nullptr;
      current_pc_ = address;
      registers_.mark_stale();  // its writes go unseen
      return;
    }
  }
  pending_instruction_ = &list[current_index_];
  current_pc_ = address;
  ++current_index_;
}

void ExecutionHooks::on_code(uc_engine*, std::uint64_t address, std::uint32_t, void* user) noexcept {
  static_cast<ExecutionHooks*>(user)->instruction(address);
}

void ExecutionHooks::on_memory(uc_engine*, uc_mem_type type, std::uint64_t address, int size, std::int64_t value,
                               void* user) noexcept {
  static_cast<ExecutionHooks*>(user)->memory(type == UC_MEM_WRITE, address, size, value);
}

// A guest store into a page that holds code decoded from writable memory
// (the levels without a memory hook).
void ExecutionHooks::on_code_write(uc_engine*, uc_mem_type, std::uint64_t address, int size, std::int64_t,
                                   void* user) noexcept {
  static_cast<ExecutionHooks*>(user)->code_written(address, static_cast<std::uint64_t>(size));
}

// Recording starts with the block that contains the start address (its block
// hook ran before this instruction hook, while recording was still off). At
// the regs levels the start instruction becomes the pending one here: its own
// instruction hook (on_code, added first, so called first) saw recording off.
void ExecutionHooks::on_start_address(uc_engine*, std::uint64_t address, std::uint32_t, void* user) noexcept {
  auto* self = static_cast<ExecutionHooks*>(user);
  if (self->active_) return;
  self->active_ = true;
  self->registers_.mark_stale();  // the instructions before this one were not seen
  self->block(self->last_block_address_, self->last_block_size_);
  if (level_has_registers(self->options_.level)) self->instruction(address);
}

void ExecutionHooks::on_stop_address(uc_engine* engine, std::uint64_t, std::uint32_t, void* user) noexcept {
  static_cast<ExecutionHooks*>(user)->stop_requested_ = true;
  uc_emu_stop(engine);
}

// The block hook's full path (every level; see on_block for the fast one):
// the stop conditions, the block cache lookup (decoding a new block) and 4
// bytes into the local run.
void ExecutionHooks::block(std::uint64_t address, std::uint32_t size) noexcept {
  last_record_was_syscall_ = false;
  fast_blocks_.store(fast_blocks_allowed_ && active_ && !sink_failed_.load(std::memory_order_relaxed),
                     std::memory_order_seq_cst);
  last_block_address_ = address;
  last_block_size_ = size;
  if (!active_) [[unlikely]] return;
  if (sink_failed_.load(std::memory_order_relaxed)) [[unlikely]] {  // the trace cannot be written: stop here
    stop_requested_ = true;
    uc_emu_stop(engine_);
    return;
  }
  // --stop-after: the emulation stops at the first block boundary at or after N
  // recorded instructions; this block does not run.
  if (options_.stop_after_instructions && recorded_instructions_ >= options_.stop_after_instructions) [[unlikely]] {
    stop_requested_ = true;
    uc_emu_stop(engine_);
    return;
  }
  if (pending_instruction_) flush_pending_registers();
  registers_.refresh_if_stale();
  const std::uint8_t mode = current_mode();
  // (Code rewritten in place was forgotten by code_written, from a write
  // hook; where no hook watches it, lookup compares its bytes.)
  const DecodedBlock* decoded = blocks_.lookup(address, size, mode);
  if (!decoded) [[unlikely]] {
    current_block_ = nullptr;  // its instructions go unseen
    registers_.mark_stale();
    return;
  }
  current_block_ = decoded;
  current_index_ = 0;
  if (fast_blocks_.load(std::memory_order_relaxed)) blocks_.remember(*decoded);
  output_.append_block(decoded->id);
  recorded_instructions_ += decoded->instruction_count;
}

// The instruction-set mode the CPU is in (arch::AlternateInstructionSet; 0 on
// one-mode architectures). At a block hook the mode register already holds the
// block's state (Unicorn 2.0.1 arm: CPSR.T is set when a Thumb block starts;
// block addresses never carry bit 0).
std::uint8_t ExecutionHooks::current_mode() const noexcept {
  const arch::AlternateInstructionSet* isa = arch_.alternate_isa;
  if (!isa) return 0;
  std::uint64_t value = 0;
  uc_reg_read(engine_, isa->uc_register, &value);
  return (value & isa->mask) ? 1 : 0;
}


// Records the registers the last started instruction changed (regs/full
// levels): one kRegisterBatch item appended to the local batch (the run of
// blocks so far is written first, so the item follows its block), or, when
// the item could not fit in a batch the ring accepts, one kRegisters record.
void ExecutionHooks::flush_pending_registers() noexcept {
  const DecodedInstruction* insn = pending_instruction_;
  pending_instruction_ = nullptr;
  if (!insn || insn->written_registers.empty()) return;
  if (registers_.derive_now() && insn->derived.operation != arch::DerivedOperation::kNone) {
    flush_derived(*insn);
    return;
  }
  const std::size_t written = std::min(insn->written_registers.size(), RegisterShadow::kMaxWritten);
  const std::size_t largest_item = sizeof(RegisterBatchItem) + written * (sizeof(RegisterBatchEntryHead) + 16);
  if (largest_item > output_.batch_limit()) [[unlikely]] {
    RegisterEntry changed[RegisterShadow::kMaxWritten];
    std::uint16_t count = 0;
    registers_.read_changes(*insn, written, [&](std::uint16_t index, std::uint8_t size, std::uint64_t low, std::uint64_t high) {
      RegisterEntry& entry = changed[count++];
      entry = RegisterEntry{};
      entry.index = index;
      entry.size = size;
      std::memcpy(entry.value, &low, 8);
      std::memcpy(entry.value + 8, &high, 8);
    });
    if (count) output_.write_registers(RecordKind::kRegisters, insn->address, changed, count);
    return;
  }
  std::uint8_t* const item_at = output_.make_room_for_item(largest_item);
  std::uint8_t* out = item_at + sizeof(RegisterBatchItem);
  std::uint16_t count = 0;
  registers_.read_changes(*insn, written, [&](std::uint16_t index, std::uint8_t size, std::uint64_t low, std::uint64_t high) {
    // The head as one 8-byte integer (RegisterBatchEntryHead's layout on this
    // little-endian host): a head assembled field by field on the stack and
    // copied as 8 bytes stalls on store forwarding.
    static_assert(std::endian::native == std::endian::little && sizeof(RegisterBatchEntryHead) == 8);
    const std::uint64_t head = index | (std::uint64_t{size} << 16);
    std::memcpy(out, &head, 8);
    std::memcpy(out + 8, &low, 8);
    out += 16;
    if (register_batch_value_bytes(size) == 16) {
      std::memcpy(out, &high, 8);
      out += 8;
    }
    ++count;
  });
  if (count == 0) return;
  const std::uint64_t pc = insn->address, count_word = count;  // RegisterBatchItem, as two integers
  std::memcpy(item_at, &pc, 8);
  std::memcpy(item_at + 8, &count_word, 8);
  output_.add_item(out);
}

// flush_pending_registers for an instruction with a recipe (arch/derived_registers.h):
// its values are computed from the shadow, which holds every register's value
// before it, and go into the batch as read values would. A recipe writes
// exactly the written list (the destination, the flags or both): general
// registers and flags, whose shadows and values fit in 8 bytes (the upper 8
// stay zero).
void ExecutionHooks::flush_derived(const DecodedInstruction& insn) noexcept {
  const arch::DerivedWrites& recipe = insn.derived;
  // (A local pointer: the byte stores below may alias members, which would be reloaded.)
  RegisterShadow::Slot* const slots = registers_.data();
  auto low = [slots](std::uint16_t index) {
    std::uint64_t value;
    std::memcpy(&value, slots[index].bytes, 8);
    return value;
  };
  const arch::DerivedValues values = arch::derive_values(recipe, low(recipe.a.index), low(recipe.b.index),
                                                         low(recipe.destination), low(recipe.flags_index));
  registers_.count_derived();
  // The entries go straight into the batch; one that did not change is
  // overwritten by the next (no branch on it), and an item with none is not kept.
  std::uint8_t* const item_at =
      output_.make_room_for_item(sizeof(RegisterBatchItem) + 2 * (sizeof(RegisterBatchEntryHead) + 8));
  std::uint8_t* out = item_at + sizeof(RegisterBatchItem);
  auto put = [&](std::uint64_t head, std::uint16_t index, std::uint64_t value) {
    const std::uint64_t before = low(index);
    std::memcpy(slots[index].bytes, &value, 8);
    std::memcpy(out, &head, 8);  // (head: RegisterBatchEntryHead as one integer, see flush_pending_registers)
    std::memcpy(out + 8, &value, 8);
    out += before != value ? 16 : 0;
  };
  // In the order of the written list, as a read would give them.
  if (recipe.destination_first) put(recipe.destination_head, recipe.destination, values.destination);
  if (recipe.sets_flags) put(recipe.flags_head, recipe.flags_index, values.flags);
  if (recipe.stores_result && !recipe.destination_first)
    put(recipe.destination_head, recipe.destination, values.destination);
  const std::uint64_t count = static_cast<std::uint64_t>(out - item_at - sizeof(RegisterBatchItem)) / 16;
  if (count == 0) return;
  const std::uint64_t pc = insn.address;  // RegisterBatchItem, as two integers
  std::memcpy(item_at, &pc, 8);
  std::memcpy(item_at + 8, &count, 8);
  output_.add_item(out);
}

void ExecutionHooks::memory(bool is_write, std::uint64_t address, int size, std::int64_t value) noexcept {
  if (is_write) code_written(address, static_cast<std::uint64_t>(size));
  if (!active_) return;
  if (options_.code_range && (current_pc_or_block() < options_.code_range->start ||
                              current_pc_or_block() >= options_.code_range->end))
    return;
  if (level_has_registers(options_.level)) {  // into the register batch (ring_records.h), at current_pc_
    constexpr std::size_t kItemBytes = sizeof(RegisterBatchItem) + 16;
    std::uint8_t* const out = output_.make_room_for_item(kItemBytes);
    const std::uint64_t words[4] = {
        current_pc_, (is_write ? kMemoryWriteMarkerCount : kMemoryReadMarkerCount) | std::uint64_t{static_cast<std::uint8_t>(size)} << 16,
        address, static_cast<std::uint64_t>(value)};
    std::memcpy(out, words, kItemBytes);
    output_.add_item(out + kItemBytes);
    return;
  }
  if (auto* record = output_.reserve<MemoryRecord>(is_write ? RecordKind::kMemoryWrite : RecordKind::kMemoryRead, 0,
                                                  static_cast<std::uint16_t>(size))) {
    record->address = address;
    record->value = static_cast<std::uint64_t>(value);
    record->pc = level_has_registers(options_.level) ? current_pc_ : 0;
    output_.commit();
  }
}

std::uint64_t ExecutionHooks::current_pc_or_block() const {
  if (level_has_registers(options_.level)) return current_pc_;
  return current_block_ ? current_block_->address : 0;
}

// A guest or kernel write over code the recorder has decoded (self-modifying
// code, a JIT reusing its buffer): Unicorn drops its translations of it, and
// so does the recorder, so that no stale decode (instructions, written
// registers, derived values) is used again. The writing instruction stays
// pending: it has not completed.
void ExecutionHooks::code_written(std::uint64_t address, std::uint64_t size) noexcept {
  if (!blocks_.covers_code(address, address + size)) [[likely]] return;
  blocks_.forget(address, address + size);
  if (current_block_ && current_block_->address < address + size &&
      current_block_->address + current_block_->size > address) {
    current_block_ = nullptr;  // the rest of it goes unseen (Unicorn ends the block after the write)
    registers_.mark_stale();
  }
}

// Code changed under us: blocks decoded there are stale.
void ExecutionHooks::forget_code(std::uint64_t start, std::uint64_t end) noexcept {
  blocks_.forget_mapping(start, end);
  current_block_ = nullptr;
  pending_instruction_ = nullptr;
  registers_.mark_stale();  // the rest of the block goes unseen
}

// The interrupted code stops here: a fault's instruction did not complete
// (its registers are not read); the block at `resume_pc`, recorded by the
// block hook that ran just before the kernel's, did not run.
void ExecutionHooks::leave_interrupted_code(bool fault, std::uint64_t resume_pc) noexcept {
  pending_instruction_ = nullptr;
  current_block_ = nullptr;
  if (fault || !output_.has_pending_block()) return;
  const DecodedBlock* last = blocks_.by_id(output_.last_pending_block());
  if (!last || last->address != resume_pc) return;
  output_.drop_last_pending_block();
  recorded_instructions_ -= std::min<std::uint64_t>(recorded_instructions_, last->instruction_count);
}

// Any thread. The flag first, then the fast path off: a block() that stored
// fast_blocks_ before this store reads the flag after it (both seq_cst), so
// either that block sees the flag or the next one takes block() again.
void ExecutionHooks::interrupt_next_block() noexcept {
  if (!block_interrupt_handler_) return;
  block_interrupt_.store(true, std::memory_order_seq_cst);
  fast_blocks_.store(false, std::memory_order_seq_cst);
}

// The block hook, at the start of the block at `address` (recorded).
void ExecutionHooks::take_block_interrupt(std::uint64_t address) noexcept {
  block_interrupt_.store(false, std::memory_order_seq_cst);
  block_interrupt_handler_(address);
}

bool ExecutionHooks::add_hook(int type, void* callback, std::uint64_t begin, std::uint64_t end) {
  uc_hook hook = 0;
  if (uc_hook_add(engine_, &hook, type, callback, this, begin, end) != UC_ERR_OK) return false;
  hooks_.push_back(hook);
  return true;
}

Error ExecutionHooks::hook_error(const char* what) {
  return make_error(ErrorCode::kEmulator, std::string("cannot add the recorder's ") + what + " hook");
}

}  // namespace tracecorn::core
