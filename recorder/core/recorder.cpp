// Role: implementation of the Recorder (see recorder.h): the producer hooks
// and the process events, composed of units with their own state: what goes
// into the ring (record_output.h: the block run, the register batch, losses),
// the register shadow (register_shadow.h), the producer's block cache
// (block_cache.h); the consumer side (the drain thread and the assembler that
// feeds the sinks) is drain.h's, the initial snapshot initial_state.h's.
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
#include "recorder/core/initial_state.h"
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
    auto producer_decoder = BlockDecoder::create(arch_);
    if (!producer_decoder) return producer_decoder.error();
    producer_decoder_ = std::move(*producer_decoder);
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
    output_.attach(*ring_);

    info.level = std::string(trace_level_name(options_.level));
    info.arch_name = arch_.name;
    if (options_.capture_initial_state) capture_initial_state(engine_, arch_, info);
    info_ = std::move(info);
    sinks_ = std::move(sinks);
    assembler_ = std::make_unique<EventAssembler>(arch_, *consumer_decoder_, options_.level, sinks_);

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

    if (options_.policy == RingPolicy::kLossless) {
      assembler_->begin(info_);
      drain_ = std::make_unique<Drain>(*ring_, *assembler_, sink_failed_);
      drain_->start();
    }
    return ok_status();
  }

  // ---- producer: hooks (emulation thread, inside Unicorn) ----

  // The block hook. Fast path (fast_blocks_: see there): one direct-mapped slot
  // gives the block's id, which is appended to the local run. Anything else (a
  // new block, a slot collision, another level, recording off, the first block
  // after a syscall, a failed sink) takes block().
  static void on_block(uc_engine*, std::uint64_t address, std::uint32_t size, void* user) noexcept {
    auto* self = static_cast<Impl*>(user);
    const IdSlot& slot = self->id_slots_[id_slot_index(address)];
    if (self->fast_blocks_.load(std::memory_order_relaxed) && ((slot.address ^ address) | (slot.size ^ size)) == 0)
        [[likely]] {
      self->output_.append_block(slot.id);
      return;
    }
    self->block(address, size);
    // (After block()'s store of fast_blocks_: see interrupt_next_block.)
    if (self->block_interrupt_.load(std::memory_order_seq_cst)) [[unlikely]] self->take_block_interrupt(address);
  }
  static void on_code(uc_engine*, std::uint64_t address, std::uint32_t, void* user) noexcept {
    static_cast<Impl*>(user)->instruction(address);
  }
  static void on_memory(uc_engine*, uc_mem_type type, std::uint64_t address, int size, std::int64_t value,
                        void* user) noexcept {
    static_cast<Impl*>(user)->memory(type == UC_MEM_WRITE, address, size, value);
  }
  // Recording starts with the block that contains the start address (its block
  // hook ran before this instruction hook, while recording was still off). At
  // the regs levels the start instruction becomes the pending one here: its own
  // instruction hook (on_code, added first, so called first) saw recording off.
  static void on_start_address(uc_engine*, std::uint64_t address, std::uint32_t, void* user) noexcept {
    auto* self = static_cast<Impl*>(user);
    if (self->active_) return;
    self->active_ = true;
    self->registers_.mark_stale();  // the instructions before this one were not seen
    self->block(self->last_block_address_, self->last_block_size_);
    if (level_has_registers(self->options_.level)) self->instruction(address);
  }
  static void on_stop_address(uc_engine* engine, std::uint64_t, std::uint32_t, void* user) noexcept {
    static_cast<Impl*>(user)->stop_requested_ = true;
    uc_emu_stop(engine);
  }

  // The block hook's full path (every level; see on_block for the fast one):
  // the stop conditions, the block cache lookup (decoding a new block) and 4
  // bytes into the local run.
  void block(std::uint64_t address, std::uint32_t size) noexcept {
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
    const DecodedBlock* decoded = producer_blocks_.find(address, size, mode);
    // Code on a writable page may have been rewritten in place since it was
    // decoded; the levels without a write hook compare its bytes (see
    // define_block). (mem and full see the writes: code_written.)
    if (decoded && decoded->on_writable_page && !level_has_memory(options_.level) && !same_code(*decoded))
      [[unlikely]] {
      forget_blocks(address, address + size);
      decoded = nullptr;
    }
    if (!decoded) [[unlikely]] {
      decoded = define_block(address, size, mode);
      if (!decoded) {
        current_block_ = nullptr;  // its instructions go unseen
        registers_.mark_stale();
        return;
      }
    }
    current_block_ = decoded;
    current_index_ = 0;
    if (fast_blocks_.load(std::memory_order_relaxed) && !decoded->on_writable_page) id_slots_[id_slot_index(address)] = IdSlot{address, size, decoded->id};
    output_.append_block(decoded->id);
    recorded_instructions_ += decoded->instruction_count;
  }

  // The instruction-set mode the CPU is in (arch::AlternateInstructionSet; 0 on
  // one-mode architectures). At a block hook the mode register already holds the
  // block's state (Unicorn 2.0.1 arm: CPSR.T is set when a Thumb block starts;
  // block addresses never carry bit 0).
  std::uint8_t current_mode() const noexcept {
    const arch::AlternateInstructionSet* isa = arch_.alternate_isa;
    if (!isa) return 0;
    std::uint64_t value = 0;
    uc_reg_read(engine_, isa->uc_register, &value);
    return (value & isa->mask) ? 1 : 0;
  }

  const DecodedBlock* define_block(std::uint64_t address, std::uint32_t size, std::uint8_t mode) noexcept {
    try {
      std::vector<std::uint8_t> bytes(size);
      if (size == 0 || uc_mem_read(engine_, address, bytes.data(), size) != UC_ERR_OK) {
        output_.count_lost();
        return nullptr;
      }
      DecodedBlock fresh = producer_decoder_->decode(address, bytes, level_has_registers(options_.level), mode);
      fresh.on_writable_page = on_writable_page(address, size);
      const DecodedBlock* decoded = producer_blocks_.insert(std::move(fresh));
      ++blocks_decoded_;
      const std::uint32_t total = static_cast<std::uint32_t>(sizeof(BlockDefinitionRecord)) + padded8(size);
      if (auto* record = static_cast<BlockDefinitionRecord*>(static_cast<void*>(output_.reserve_bytes(total)))) {
        record->header = {RecordKind::kBlockDefinition, mode, 0, 0};
        record->address = address;
        record->size = size;
        record->id = decoded->id;
        std::memcpy(reinterpret_cast<std::uint8_t*>(record) + sizeof *record, bytes.data(), size);
        ring_->commit();
      }
      return decoded;
    } catch (...) {
      output_.count_lost();
      return nullptr;
    }
  }

  // Whether [address, address + size) lies (partly) in a region Unicorn maps
  // writable: the guest may rewrite that code in place. Unknown counts as yes.
  // (Called when a block is decoded; the Linux layer keeps few regions.)
  bool on_writable_page(std::uint64_t address, std::uint32_t size) const noexcept {
    uc_mem_region* regions = nullptr;
    std::uint32_t count = 0;
    if (uc_mem_regions(engine_, &regions, &count) != UC_ERR_OK) return true;
    bool writable = false;
    for (std::uint32_t i = 0; i < count; ++i)
      if (regions[i].begin < address + size && regions[i].end >= address && (regions[i].perms & UC_PROT_WRITE))
        writable = true;
    uc_free(regions);
    return writable;
  }

  // Whether guest memory still holds the bytes `block` was decoded from.
  bool same_code(const DecodedBlock& block) noexcept {
    try {
      if (code_scratch_.size() < block.size) code_scratch_.resize(block.size);  // (grows a few times at most)
    } catch (...) {
      return false;  // decoded again
    }
    return uc_mem_read(engine_, block.address, code_scratch_.data(), block.size) == UC_ERR_OK &&
           std::memcmp(code_scratch_.data(), block.bytes.data(), block.size) == 0;
  }

  void instruction(std::uint64_t address) noexcept {
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

  // Records the registers the last started instruction changed (regs/full
  // levels): one kRegisterBatch item appended to the local batch (the run of
  // blocks so far is written first, so the item follows its block), or, when
  // the item could not fit in a batch the ring accepts, one kRegisters record.
  void flush_pending_registers() noexcept {
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
  void flush_derived(const DecodedInstruction& insn) noexcept {
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

  void memory(bool is_write, std::uint64_t address, int size, std::int64_t value) noexcept {
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
      ring_->commit();
    }
  }

  std::uint64_t current_pc_or_block() const {
    if (level_has_registers(options_.level)) return current_pc_;
    return current_block_ ? current_block_->address : 0;
  }

  // ---- producer: process events (emulation thread, outside the hot path) ----

  void syscall_enter(std::optional<std::uint64_t> trap_pc) noexcept {
    in_syscall_ = true;
    captured_stack_depth_ = 0;
    if (trap_pc && options_.stack_provider)
      captured_stack_depth_ = options_.stack_provider->capture(*trap_pc, captured_stack_);
    flush_pending_registers();
    if (syscall_snapshot_.size() != arch_.registers.size()) syscall_snapshot_.resize(arch_.registers.size());
    registers_.read_all(syscall_snapshot_);
  }

  // A guest or kernel write over code the recorder has decoded (self-modifying
  // code, a JIT reusing its buffer): Unicorn drops its translations of it, and
  // so does the recorder, so that no stale decode (instructions, written
  // registers, derived values) is used again. The writing instruction stays
  // pending: it has not completed.
  void code_written(std::uint64_t address, std::uint64_t size) noexcept {
    if (!producer_blocks_.covers_code(address, address + size)) [[likely]] return;
    forget_blocks(address, address + size);
    if (current_block_ && current_block_->address < address + size &&
        current_block_->address + current_block_->size > address) {
      current_block_ = nullptr;  // the rest of it goes unseen (Unicorn ends the block after the write)
      registers_.mark_stale();
    }
  }

  void syscall_memory_written(std::uint64_t address, std::span<const std::uint8_t> bytes) noexcept {
    code_written(address, bytes.size());
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
      ring_->commit();
      bytes = bytes.subspan(chunk);
      address += chunk;
    }
  }

  void syscall_mapping_changed(const events::MappingEffect& change) noexcept {
    const std::uint64_t start = change.start.value;
    // Decoded code there is stale unless it stays executable and read-only
    // (a block's on_writable_page is decided when it is decoded).
    if (change.kind != events::MappingChangeKind::kProtect || !(change.prot & 4) || (change.prot & 2))
      forget_code(start, start + change.length);
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
    ring_->commit();
  }

  // Blocks decoded in [start, end) are stale: out of the lookups (the producer's
  // cache and the block hook's id slots).
  void forget_blocks(std::uint64_t start, std::uint64_t end) noexcept {
    try {
      producer_blocks_.forget_range(start, end);
    } catch (...) {
    }
    for (IdSlot& slot : id_slots_)
      if (slot.size != kEmptySlotSize && slot.address < end && slot.address + slot.size > start) slot = IdSlot{};
  }

  // Code changed under us: blocks decoded there are stale.
  void forget_code(std::uint64_t start, std::uint64_t end) noexcept {
    forget_blocks(start, end);
    current_block_ = nullptr;
    pending_instruction_ = nullptr;
    registers_.mark_stale();  // the rest of the block goes unseen
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
    ring_->commit();
    write_deferred_process_events();
    ring_->publish();  // a syscall is a natural point to let the drain thread see the batch
    last_record_was_syscall_ = true;
    fast_blocks_.store(false, std::memory_order_relaxed);  // the next block resets last_record_was_syscall_
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
    leave_interrupted_code(signal.fault, signal.interrupted_pc.value);
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
    if (change.change == events::ThreadChange::kSwitched) leave_interrupted_code(false, change.from_pc.value);
    write_process_event(deferred);
  }

  // The interrupted code stops here: a fault's instruction did not complete
  // (its registers are not read); the block at `resume_pc`, recorded by the
  // block hook that ran just before the kernel's, did not run.
  void leave_interrupted_code(bool fault, std::uint64_t resume_pc) noexcept {
    pending_instruction_ = nullptr;
    current_block_ = nullptr;
    if (fault || !output_.has_pending_block()) return;
    const DecodedBlock* last = producer_blocks_.by_id(output_.last_pending_block());
    if (!last || last->address != resume_pc) return;
    output_.drop_last_pending_block();
    recorded_instructions_ -= std::min<std::uint64_t>(recorded_instructions_, last->instruction_count);
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
      ring_->commit();
    }
    ring_->publish();
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
    ring_->commit();
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
    ring_->commit();
    ring_->publish();  // rare, and the last record of an image before an exec
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
    ring_->commit();
  }

  void exited(bool by_signal, std::int32_t code, std::int32_t signal) noexcept {
    if (!last_record_was_syscall_) write_stop_if_cut_short();
    ended_ = true;
    flush_pending_registers();
    registers_.mark_stale();  // a harness may set new registers and run again
    if (auto* record = output_.reserve<ExitRecord>(RecordKind::kExit, by_signal ? 1 : 0, 0)) {
      record->code = code;
      record->signal = signal;
      ring_->commit();
    }
    ring_->publish();
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
      ring_->commit();
    }
  }

  std::string dump(events::Sink& sink) {
    write_stop_if_cut_short();
    output_.write_pending();
    ring_->publish();
    EventAssembler replay(arch_, *consumer_decoder_, options_.level, {&sink});
    replay.begin(info_);
    const auto stats = ring_->stats();
    replay.note_lost(stats.records_overwritten, "overwritten by the flight recorder");
    for (const DecodedBlock* block : producer_blocks_.all()) replay.adopt_block(*block);
    ring_->for_each_retained([&](std::span<const std::byte> record) { replay.on_record(record); });
    return replay.end(false);
  }

  // Any thread. The flag first, then the fast path off: a block() that stored
  // fast_blocks_ before this store reads the flag after it (both seq_cst), so
  // either that block sees the flag or the next one takes block() again.
  void interrupt_next_block() noexcept {
    if (!block_interrupt_handler_) return;
    block_interrupt_.store(true, std::memory_order_seq_cst);
    fast_blocks_.store(false, std::memory_order_seq_cst);
  }
  void set_block_interrupt_handler(std::function<void(std::uint64_t)> handler) {
    block_interrupt_handler_ = std::move(handler);
  }
  // The block hook, at the start of the block at `address` (recorded).
  void take_block_interrupt(std::uint64_t address) noexcept {
    block_interrupt_.store(false, std::memory_order_seq_cst);
    block_interrupt_handler_(address);
  }

  // (A drain stuck in a sink's write, to a pipe nobody reads now, is not
  // waited for long: the process stops all the same, its trace unflushed.)
  void flush_to_files() noexcept {
    if (finished_ || !drain_) return;
    output_.write_pending();
    ring_->publish();
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
    for (uc_hook hook : hooks_) uc_hook_del(engine_, hook);
    hooks_.clear();
    if (drain_) drain_->abandon();
    sinks_.clear();
  }

  std::string finish(bool interrupted) {
    if (finished_) return finish_error_;
    finished_ = true;
    for (uc_hook hook : hooks_) uc_hook_del(engine_, hook);
    hooks_.clear();
    if (!ring_) return finish_error_;
    flush_pending_registers();
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
    result.blocks_decoded = blocks_decoded_;
    result.registers_derived = registers_.derived_total();
    result.events = events_;
    result.events_by_kind = events_by_kind_;
    result.instructions = instructions_;
    return result;
  }

  bool stop_requested() const { return stop_requested_; }
  bool sink_failed() const { return sink_failed_.load(std::memory_order_relaxed); }

 private:
  bool add_hook(int type, void* callback, std::uint64_t begin, std::uint64_t end) {
    uc_hook hook = 0;
    if (uc_hook_add(engine_, &hook, type, callback, this, begin, end) != UC_ERR_OK) return false;
    hooks_.push_back(hook);
    return true;
  }
  static Error hook_error(const char* what) {
    return make_error(ErrorCode::kEmulator, std::string("cannot add the recorder's ") + what + " hook");
  }

  uc_engine* engine_;
  const arch::ArchInfo& arch_;
  RecorderOptions options_;
  events::TraceInfo info_;
  std::vector<events::Sink*> sinks_;
  std::unique_ptr<BlockDecoder> producer_decoder_;
  std::unique_ptr<BlockDecoder> consumer_decoder_;
  std::unique_ptr<ring::SpscRing> ring_;
  std::unique_ptr<EventAssembler> assembler_;
  std::unique_ptr<Drain> drain_;  // the consumer side (lossless policy only)
  std::function<void(std::uint64_t)> block_interrupt_handler_;  // set before the runs
  std::atomic<bool> block_interrupt_{false};
  std::vector<uc_hook> hooks_;

  // (address, size) -> id of the producer's block, direct mapped: a copy of what
  // producer_blocks_ answers, kept for the fast path, which then reads one 16-byte
  // slot. Filled by block() (only while fast_blocks_), emptied with the blocks by
  // forget_code. An empty slot's size matches no block (define_block reads `size`
  // bytes of guest memory, so a block is far smaller).
  static constexpr std::uint32_t kEmptySlotSize = 0xffffffffu;
  struct IdSlot {
    std::uint64_t address = 0;
    std::uint32_t size = kEmptySlotSize;
    std::uint32_t id = 0;
  };
  static constexpr std::size_t kIdSlots = 2048;  // 32 KiB
  static std::size_t id_slot_index(std::uint64_t address) noexcept {
    return static_cast<std::size_t>(address ^ (address >> 11)) & (kIdSlots - 1);
  }

  // Producer state (emulation thread only). First what the block hook's fast
  // path touches, together: the flags, the run (output_) and the slots.
  //
  // The block hook's fast path may run when a block needs nothing but its id
  // recorded (fast_blocks_allowed_, set at attach): the blocks, insns and mem
  // levels (without --range at mem level, whose memory filter needs
  // current_block_), a one-mode architecture (no mode register to read), no
  // --stop-after (no instruction count to keep). fast_blocks_ is that and more,
  // kept by block(): recording is on and no sink failed. It is cleared where the
  // next block must take block(): after a syscall (last_record_was_syscall_ is
  // reset there) and when output_ writes a run while a sink failed (so a
  // failed sink stops the emulation within kMaxBlockRun blocks).
  bool fast_blocks_allowed_ = false;
  std::atomic<bool> fast_blocks_{false};  // (atomic: interrupt_next_block clears it from another thread)
  bool last_record_was_syscall_ = false;  // the guest's last act was a syscall (exit ends there)
  std::atomic<bool> sink_failed_{false};  // set once by the drain thread (drain.h)
  RecordOutput output_{fast_blocks_, sink_failed_};  // the block run, the register batch, every record
  std::array<IdSlot, kIdSlots> id_slots_{};
  BlockCache producer_blocks_;
  const DecodedBlock* current_block_ = nullptr;
  std::size_t current_index_ = 0;
  const DecodedInstruction* pending_instruction_ = nullptr;
  std::uint64_t current_pc_ = 0;
  std::vector<std::uint8_t> code_scratch_;  // same_code's copy of guest code
  RegisterShadow registers_{engine_, arch_};  // regs levels: what each instruction changed
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
  bool active_ = true;
  bool ended_ = false;         // an exit or fault record was written
  bool stop_written_ = false;
  std::uint64_t last_block_address_ = 0;
  std::uint32_t last_block_size_ = 0;
  std::uint64_t recorded_instructions_ = 0;
  std::atomic<bool> stop_requested_{false};
  std::atomic<std::uint64_t> blocks_decoded_{0};

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
