// Role: implementation of the binary trace v1.0 writer (see bintrace_writer.h
// and bintrace_layout.h).
#include "formats/bintrace/bintrace_writer.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstring>
#include <ctime>
#include <filesystem>

#include <zstd.h>

#include "formats/bintrace/bintrace_encode.h"
#include "formats/bintrace/bintrace_layout.h"
#include "recorder/support/hex.h"

namespace tracecorn::formats {

namespace bt = bintrace;

namespace {

using bt::put_bytes;
using bt::put_le;
using bt::put_string;
using bt::put_u16;
using bt::put_u32;
using bt::put_u64;
using bt::put_u8;

const std::vector<std::uint8_t>& zeros() {
  static const std::vector<std::uint8_t> kZeros(bt::kWriterMemoryEntryBytes, 0);
  return kZeros;
}

}  // namespace

// Where encoded events go until end(): a file, optionally through a zstd stream.
struct BintraceWriter::Spool {
  std::FILE* file = nullptr;
  std::string path;  // "" for an anonymous temporary file
  ZSTD_CCtx* zstd = nullptr;
  bool zstd_workers = false;  // zstd compresses on threads of its own (ZstdCompression::workers)
  std::vector<std::uint8_t> buffer = std::vector<std::uint8_t>(ZSTD_CStreamOutSize());
  std::uint64_t bytes = 0;

  ~Spool() {
    if (zstd) ZSTD_freeCCtx(zstd);
    if (file) std::fclose(file);
    if (!path.empty()) std::remove(path.c_str());
  }
  // Hands what stdio holds to the file (a killed process loses only the batch
  // being built). Returns "" or what failed.
  std::string flush() { return std::fflush(file) == 0 ? "" : std::strerror(errno); }
  // Returns "" or what failed.
  std::string write(std::span<const std::uint8_t> data, SpoolStep step) {
    if (!zstd) {
      if (!data.empty() && std::fwrite(data.data(), 1, data.size(), file) != data.size()) return std::strerror(errno);
      bytes += data.size();
      return flush();
    }
    ZSTD_inBuffer in{data.data(), data.size(), 0};
    // Each batch is flushed out of the compressor, so that a killed recording's
    // spool decompresses up to its last batch (bintrace_recover.h); but for
    // zstd's workers, which a flush would make wait for each other at every
    // batch: their jobs reach the file as they end, up to one job (8 MiB of
    // events at level 3) per worker behind.
    const ZSTD_EndDirective mode = step == SpoolStep::kEnd                       ? ZSTD_e_end
                                   : step == SpoolStep::kBatch && zstd_workers ? ZSTD_e_continue
                                                                               : ZSTD_e_flush;
    for (;;) {
      ZSTD_outBuffer out{buffer.data(), buffer.size(), 0};
      const std::size_t remaining = ZSTD_compressStream2(zstd, &out, &in, mode);
      if (ZSTD_isError(remaining)) return std::string("zstd: ") + ZSTD_getErrorName(remaining);
      if (out.pos && std::fwrite(buffer.data(), 1, out.pos, file) != out.pos) return std::strerror(errno);
      bytes += out.pos;
      const bool done = mode == ZSTD_e_continue ? in.pos == in.size : remaining == 0;
      if (done) return flush();
    }
  }
};

Expected<std::unique_ptr<BintraceWriter>> BintraceWriter::open(const std::string& path, const arch::ArchInfo& arch,
                                                               BintraceWriterOptions options) {
  if (!arch.format_ids.bintrace)
    return make_error(ErrorCode::kUnsupported,
                      "binary trace has no machine description for " + std::string(arch.name) +
                          (arch.format_ids.bintrace_missing.empty()
                               ? std::string()
                               : ": " + std::string(arch.format_ids.bintrace_missing)),
                      path);
  std::unique_ptr<BintraceWriter> writer(new BintraceWriter(path, arch, std::move(options)));
  const auto& machine = *arch.format_ids.bintrace;
  auto statics = machine.static_registers();
  if (!statics) return statics.error();
  for (const auto& reg : *statics) writer->description_.statics.push_back({std::string(reg.name), {reg.value}});

  // Registers: ids 0..n-1 in the arch's order; then the operations.
  auto& description = writer->description_;
  description.magic = machine.magic;
  description.physical_address_size = bt::kPhysicalAddressSize;
  for (std::size_t i = 0; i < machine.registers.size(); ++i)
    description.registers.push_back(
        {static_cast<std::uint16_t>(i), machine.registers[i].size, std::string(machine.registers[i].name)});
  const int pc = description.find_register(machine.pc_register);
  const int sp = description.find_register(machine.sp_register);
  const int flags = description.find_register(machine.flags_register);
  if (pc < 0 || sp < 0 || flags < 0 || machine.registers[static_cast<std::size_t>(pc)].source !=
                                           arch::BintraceRegister::Source::kTable)
    return make_error(ErrorCode::kUnsupported, "the architecture's binary trace description lacks pc, sp or flags",
                      path);
  writer->pc_slot_ = static_cast<std::size_t>(pc);
  writer->sp_slot_ = static_cast<std::size_t>(sp);
  writer->flags_slot_ = static_cast<std::size_t>(flags);
  writer->pc_table_index_ = machine.registers[writer->pc_slot_].table_index;
  std::uint16_t next_id = static_cast<std::uint16_t>(description.registers.size());
  auto add_operation = [&](std::size_t target, std::uint8_t op, std::uint64_t value) {
    bt::OperationDeclaration declaration;
    declaration.id = static_cast<std::uint8_t>(next_id++);
    declaration.target_id = description.registers[target].id;
    declaration.op = op;
    put_le(declaration.value, value, description.registers[target].size);
    description.operations.push_back(std::move(declaration));
  };
  writer->first_pc_op_ = next_id;
  for (unsigned step = 1; step <= machine.max_pc_step; ++step) add_operation(writer->pc_slot_, bt::kAdd, step);
  writer->first_flag_set_op_ = next_id;
  for (const auto bit : machine.flag_bits) add_operation(writer->flags_slot_, bt::kOr, 1ull << bit);
  for (const auto bit : machine.flag_bits) writer->flag_mask_ |= 1ull << bit;
  writer->first_flag_clear_op_ = next_id;
  for (const auto bit : machine.flag_bits) add_operation(writer->flags_slot_, bt::kAnd, ~(1ull << bit));
  writer->first_sp_op_ = next_id;
  for (const auto step : machine.sp_steps) add_operation(writer->sp_slot_, bt::kAdd, static_cast<std::uint64_t>(std::int64_t{step}));
  if (next_id > 0xfe)
    return make_error(ErrorCode::kUnsupported, "too many registers and operations for one-byte operation ids", path);
  description.index();

  // How declared registers follow from the arch table.
  writer->slots_of_table_.resize(arch.registers.size());
  writer->derived_input_.assign(arch.registers.size(), 0);
  for (std::size_t i = 0; i < machine.registers.size(); ++i) {
    const auto& reg = machine.registers[i];
    if (reg.size > bt::kMaxRegisterBytes)
      return make_error(ErrorCode::kUnsupported, "register " + std::string(reg.name) + " is too wide", path);
    if (reg.source == arch::BintraceRegister::Source::kTable && reg.table_index < arch.registers.size())
      writer->slots_of_table_[reg.table_index].push_back(static_cast<std::uint16_t>(i));
    if (reg.source == arch::BintraceRegister::Source::kDerived)
      writer->derived_slots_.push_back(static_cast<std::uint16_t>(i));
  }
  for (const auto index : machine.derived_inputs)
    if (index < arch.registers.size()) writer->derived_input_[index] = 1;
  writer->table_.assign(arch.registers.size(), {});
  writer->table_touched_.assign(arch.registers.size(), 0);
  // At most one staged value per declared register (add_register_entry grows
  // its vector if the flags' operations need more).
  writer->staged_.resize(machine.registers.size());
  writer->register_entries_.resize(machine.registers.size() + machine.flag_bits.size());
  writer->state_ = std::make_unique<bt::MachineState>(description);

  // The spool.
  auto spool = std::make_unique<Spool>();
  // A device or a pipe (/dev/full, a FIFO) is written in place at the end, never
  // renamed over; its spool is a temporary file, as stdout's.
  struct stat status {};
  writer->in_place_ = path == "-" || (::stat(path.c_str(), &status) == 0 && !S_ISREG(status.st_mode));
  if (writer->in_place_) {
    spool->file = std::tmpfile();
  } else {
    spool->path = path + ".events.part";
    spool->file = std::fopen(spool->path.c_str(), "w+be");
  }
  if (!spool->file) {
    const std::string reason = std::strerror(errno);
    spool->path.clear();
    return make_error(ErrorCode::kIo, "cannot create the events spool: " + reason, path);
  }
  if (writer->options_.compress_zstd) {
    spool->zstd = ZSTD_createCCtx();
    const std::string refused = spool->zstd ? configure_zstd(spool->zstd, writer->options_.zstd) : "out of memory";
    if (!refused.empty())
      return make_error(ErrorCode::kInvalidArgument, "cannot set up zstd compression: " + refused, path);
    spool->zstd_workers = writer->options_.zstd.workers > 0;
  }
  writer->spool_ = std::move(spool);
  return writer;
}

BintraceWriter::BintraceWriter(std::string path, const arch::ArchInfo& arch, BintraceWriterOptions options)
    : path_(std::move(path)), arch_(arch), machine_(*arch.format_ids.bintrace), options_(std::move(options)) {}

BintraceWriter::~BintraceWriter() { remove_recovery_head(); }

void BintraceWriter::remove_recovery_head() {
  if (!head_path_.empty()) std::remove(head_path_.c_str());
  head_path_.clear();
}

void BintraceWriter::begin(const events::TraceInfo& info) {
  begun_ = true;
  if (!info.has_initial_state) {
    error_ = path_ + ": a binary trace needs the initial state (RecorderOptions::capture_initial_state)";
    return;
  }
  gives_code_ = info.level == "regs";
  if (info.level != "regs" && info.level != "full") {
    error_ = path_ + ": a binary trace needs per-instruction registers: record at level regs or full, not '" +
             info.level + "'";
    return;
  }
  try {
    tool_info_ = options_.tool_info.empty() ? "level " + info.level + ", arch " + std::string(arch_.name) +
                                                  (info.process_id ? ", pid " + std::to_string(info.process_id) : "") +
                                                  (info.program.empty() ? "" : ", program " + info.program)
                                            : options_.tool_info;
    for (const auto& value : info.initial_registers)
      if (value.index < table_.size())
        std::copy_n(value.bytes.begin(), std::min<std::size_t>(value.size, 16), table_[value.index].begin());
    // Every declared register's initial value.
    initial_values_.resize(machine_.registers.size());
    std::array<std::uint8_t, 64> scratch{};
    for (std::size_t i = 0; i < machine_.registers.size(); ++i) {
      const auto& reg = machine_.registers[i];
      scratch.fill(0);
      switch (reg.source) {
        case arch::BintraceRegister::Source::kTable:
          if (reg.table_index < table_.size()) std::copy_n(table_[reg.table_index].begin(), 16, scratch.begin());
          break;
        case arch::BintraceRegister::Source::kConstant:
          for (std::size_t b = 0; b < 8; ++b) scratch[b] = static_cast<std::uint8_t>(reg.constant >> (8 * b));
          break;
        case arch::BintraceRegister::Source::kDerived:
          machine_.derive(table_, i, std::span(scratch).first(reg.size));
          break;
      }
      initial_values_[i].assign(scratch.begin(), scratch.begin() + reg.size);
      state_->set(i, initial_values_[i]);
    }
    initial_memory_ = info.initial_memory;
    for (const auto& region : initial_memory_) state_->memory().write(region.start.value, region.bytes);
  } catch (const std::exception& error) {
    error_ = path_ + ": " + error.what();
  }
}

void BintraceWriter::on_event(const events::Event& event) {
  if (!error_.empty() || !begun_) return;
  try {
    handle(event);
    if (events_.size() >= options_.spool_batch_bytes) flush_events(SpoolStep::kBatch);
  } catch (const std::exception& error) {
    error_ = path_ + ": write error: " + error.what();
  }
}

void BintraceWriter::add_memory(std::vector<MemoryEntry>& out, std::uint64_t address,
                                std::span<const std::uint8_t> bytes) {
  while (!bytes.empty()) {
    const std::size_t chunk = static_cast<std::size_t>(std::min<std::uint64_t>(bytes.size(), bt::kWriterMemoryEntryBytes));
    out.push_back({address, bytes.first(chunk)});
    bytes = bytes.subspan(chunk);
    address += chunk;
  }
}

void BintraceWriter::stage_value(std::size_t slot, std::span<const std::uint8_t> value) {
  const auto current = state_->value(slot);
  // Most registers are 8 bytes: one compare (std::equal calls memcmp).
  if (current.size() == 8) {
    std::uint64_t before, after;
    std::memcpy(&before, current.data(), 8);
    std::memcpy(&after, value.data(), 8);
    if (before == after) return;
  } else if (std::equal(current.begin(), current.end(), value.begin())) {
    return;
  }
  if (staged_count_ == staged_.size()) [[unlikely]]
    staged_.resize(staged_count_ * 2 + 8);
  Staged& staged = staged_[staged_count_++];
  staged.slot = slot;
  std::copy_n(value.begin(), current.size(), staged.value.begin());
}

void BintraceWriter::stage_registers(std::span<const events::RegisterValue> changes, const std::uint64_t* new_pc) {
  staged_count_ = 0;
  register_count_ = 0;
  if (++generation_ == 0) {
    std::fill(table_touched_.begin(), table_touched_.end(), 0);
    generation_ = 1;
  }
  bool derived_changed = false;
  std::array<std::uint8_t, 64> wide{};
  auto touch = [&](std::uint16_t index) {
    if (table_touched_[index] == generation_) return;
    table_touched_[index] = generation_;
    if (derived_input_[index]) derived_changed = true;
    for (const auto slot : slots_of_table_[index]) {
      wide.fill(0);
      std::copy_n(table_[index].begin(), 16, wide.begin());
      stage_value(slot, std::span(wide).first(machine_.registers[slot].size));
    }
  };
  for (const auto& change : changes) {
    if (change.index >= table_.size()) continue;
    auto& slot = table_[change.index];
    slot.fill(0);
    std::copy_n(change.bytes.begin(), std::min<std::size_t>(change.size, 16), slot.begin());
  }
  if (new_pc)
    for (std::size_t b = 0; b < 8; ++b) table_[pc_table_index_][b] = static_cast<std::uint8_t>(*new_pc >> (8 * b));
  for (const auto& change : changes)
    if (change.index < table_.size()) touch(change.index);
  if (new_pc) touch(pc_table_index_);
  if (derived_changed) {
    for (const auto slot : derived_slots_) {
      wide.fill(0);
      machine_.derive(table_, slot, std::span(wide).first(machine_.registers[slot].size));
      stage_value(slot, std::span(wide).first(machine_.registers[slot].size));
    }
  }
  // Declaration order (an insertion sort: a few values per instruction); then
  // the entries, with operations where one fits.
  for (std::size_t i = 1; i < staged_count_; ++i)
    for (std::size_t j = i; j > 0 && staged_[j - 1].slot > staged_[j].slot; --j) std::swap(staged_[j - 1], staged_[j]);
  for (const Staged& staged : std::span(staged_).first(staged_count_)) {
    const auto slot = staged.slot;
    const auto old_value = state_->value(slot);
    const std::span<const std::uint8_t> new_value(staged.value.data(), old_value.size());
    if (!(slot == pc_slot_ || slot == sp_slot_ || slot == flags_slot_) ||
        !add_operation_entries(slot, bt::read_le(old_value), bt::read_le(new_value)))
      add_register_entry({description_.registers[slot].id, new_value});
    state_->set(slot, new_value);
  }
}

bool BintraceWriter::add_operation_entries(std::size_t slot, std::uint64_t old_number, std::uint64_t new_number) {
  if (slot == pc_slot_) {
    const std::uint64_t step = new_number - old_number;
    if (step < 1 || step > machine_.max_pc_step) return false;
    add_register_entry({static_cast<std::uint16_t>(first_pc_op_ + step - 1), {}});
    return true;
  }
  if (slot == sp_slot_) {
    const auto step = static_cast<std::int64_t>(new_number - old_number);
    for (std::size_t k = 0; k < machine_.sp_steps.size(); ++k)
      if (machine_.sp_steps[k] == step) {
        add_register_entry({static_cast<std::uint16_t>(first_sp_op_ + k), {}});
        return true;
      }
    return false;
  }
  const std::uint64_t changed = old_number ^ new_number;  // the flags
  if ((changed & ~flag_mask_) != 0) return false;
  int bits = 0;  // at most 4 operations (std::popcount is a libgcc call without -mpopcnt)
  for (std::uint64_t rest = changed; rest && bits < 5; rest &= rest - 1) ++bits;
  if (bits >= 5) return false;
  for (std::size_t k = 0; k < machine_.flag_bits.size(); ++k) {
    const std::uint64_t bit = 1ull << machine_.flag_bits[k];
    if (!(changed & bit)) continue;
    add_register_entry(
        {static_cast<std::uint16_t>((new_number & bit ? first_flag_set_op_ : first_flag_clear_op_) + k), {}});
  }
  return true;
}

void BintraceWriter::write_diff(std::span<const MemoryEntry> memory, std::span<const RegisterEntry> registers) {
  const std::size_t phy = bt::kPhysicalAddressSize;
  do {
    const bool more_memory = memory.size() > bt::kMaxEntriesPerDiff;
    const bool more_registers = !more_memory && registers.size() > bt::kMaxEntriesPerDiff;
    const std::size_t m = std::min<std::size_t>(memory.size(), bt::kMaxEntriesPerDiff);
    const std::size_t r = std::min<std::size_t>(registers.size(), bt::kMaxEntriesPerDiff);
    const std::uint8_t m_nibble = more_memory ? bt::kContinuation : static_cast<std::uint8_t>(m);
    const std::uint8_t r_nibble = more_registers ? bt::kContinuation : static_cast<std::uint8_t>(r);
    put_u8(events_, static_cast<std::uint8_t>(r_nibble << 4 | m_nibble));
    for (const auto& entry : memory.first(m)) {
      put_le(events_, entry.address, phy);
      if (entry.bytes.size() < bt::kLongSize) {
        put_u8(events_, static_cast<std::uint8_t>(entry.bytes.size()));
      } else {
        put_u8(events_, bt::kLongSize);
        put_le(events_, entry.bytes.size(), phy);
      }
      put_bytes(events_, entry.bytes);
    }
    for (const auto& entry : registers.first(r)) {
      if (entry.id < bt::kLongId) {
        put_u8(events_, static_cast<std::uint8_t>(entry.id));
      } else {
        put_u8(events_, bt::kLongId);
        put_u16(events_, entry.id);
      }
      put_bytes(events_, entry.value);
    }
    memory = memory.subspan(m);
    registers = registers.subspan(r);
    if (!more_memory && !more_registers) break;
  } while (true);
}

void BintraceWriter::write_other(std::string_view description, std::span<const MemoryEntry> memory,
                                 std::span<const RegisterEntry> registers) {
  put_u8(events_, bt::kNotInstruction);
  put_u8(events_, bt::kOtherEvent);
  put_string(events_, description);
  write_diff(memory, registers);
  ++event_count_;
}

void BintraceWriter::finish_instruction(std::uint64_t next_pc) {
  if (!pending_) return;
  pending_ = false;
  memory_entries_.clear();
  for (const auto& write : pending_writes_) {
    const auto bytes = std::span<const std::uint8_t>(pending_bytes_).subspan(write.offset, write.length);
    state_->memory().write(write.address, bytes);
    add_memory(memory_entries_, write.address, bytes);
  }
  stage_registers(pending_registers_, &next_pc);
  write_diff(memory_entries_, staged_entries());
  ++event_count_;
  ++instructions_;
}

void BintraceWriter::finish_pending_fallthrough() { finish_instruction(pending_address_ + pending_size_); }

// An instruction begins: the one before it ends here (its diff is written),
// and this one waits for its memory writes and registers.
void BintraceWriter::instruction_started(std::uint64_t address, std::uint32_t size) {
  if (instructions_ == 0 && !pending_) {
    // The recorder reads the registers before uc_emu_start sets the pc: the
    // initial rip is the first recorded instruction's address.
    for (std::size_t b = 0; b < 8; ++b)
      table_[pc_table_index_][b] = static_cast<std::uint8_t>(address >> (8 * b));
    std::array<std::uint8_t, 8> pc{};
    std::copy_n(table_[pc_table_index_].begin(), 8, pc.begin());
    initial_values_[pc_slot_].assign(pc.begin(), pc.begin() + static_cast<std::ptrdiff_t>(initial_values_[pc_slot_].size()));
    state_->set(pc_slot_, initial_values_[pc_slot_]);
    write_recovery_head();  // the initial state is complete now
  }
  finish_instruction(address);
  if (!pending_ && instructions_ > 0) resume_at(address);
  pending_ = true;
  pending_address_ = address;
  pending_size_ = size;
  pending_writes_.clear();
  pending_bytes_.clear();
  pending_registers_.clear();
}

// A block's run of instructions: what handle() does for each one's event,
// without building the events.
void BintraceWriter::on_instructions(const events::InstructionRun& run) {
  if (!error_.empty() || !begun_) return;
  try {
    for (const events::InstructionBounds& bounds : run.instructions) {
      instruction_started(bounds.address.value, bounds.size);
      if (events_.size() >= options_.spool_batch_bytes) flush_events(SpoolStep::kBatch);  // as on_event
    }
  } catch (const std::exception& error) {
    error_ = path_ + ": write error: " + error.what();
  }
}

void BintraceWriter::handle(const events::Event& event) {
  using events::EventKind;
  switch (event.kind) {
    case EventKind::kBlock: {
      const auto& block = std::get<events::BlockEvent>(event.payload);
      if (gives_code_ && block.from_writable_memory && !block.bytes.empty()) [[unlikely]] give_code(block);
      return;  // not carried: blocks are implicit
    }
    case EventKind::kMemoryRead:
      return;  // not carried: the format has no reads
    case EventKind::kInstruction: {
      const auto& insn = std::get<events::InstructionEvent>(event.payload);
      instruction_started(insn.address.value, insn.size);
      return;
    }
    case EventKind::kMemoryWrite: {
      const auto& memory = std::get<events::MemoryEvent>(event.payload);
      if (!pending_) return;
      const std::size_t size = std::min<std::size_t>(memory.size, 8);
      const std::size_t offset = pending_bytes_.size();
      for (std::size_t i = 0; i < size; ++i) pending_bytes_.push_back(static_cast<std::uint8_t>(memory.value >> (8 * i)));
      if (!pending_writes_.empty() &&
          pending_writes_.back().address + pending_writes_.back().length == memory.address.value &&
          pending_writes_.back().offset + pending_writes_.back().length == offset)
        pending_writes_.back().length += size;
      else
        pending_writes_.push_back({memory.address.value, offset, size});
      return;
    }
    case EventKind::kRegisters: {
      const auto& registers = std::get<events::RegistersEvent>(event.payload);
      if (pending_) pending_registers_.insert(pending_registers_.end(), registers.changes.begin(), registers.changes.end());
      return;
    }
    case EventKind::kSyscall: {
      const auto& call = std::get<events::SyscallEvent>(event.payload);
      finish_pending_fallthrough();
      for (const auto& change : call.mapping_changes) {
        memory_entries_.clear();
        register_count_ = 0;
        std::string text;
        switch (change.kind) {
          case events::MappingChangeKind::kMap: {
            text = "map " + hex(change.start.value) + " " + hex(change.length) + " prot " + std::to_string(change.prot & 7u);
            // A new mapping replaces what was there: zero the bytes that are not zero yet.
            state_->memory().for_each_nonzero_run(change.start.value, change.length,
                                                  [&](std::uint64_t address, std::uint64_t length) {
                                                    while (length) {
                                                      const auto chunk = std::min<std::uint64_t>(length, zeros().size());
                                                      memory_entries_.push_back(
                                                          {address, std::span(zeros()).first(static_cast<std::size_t>(chunk))});
                                                      address += chunk;
                                                      length -= chunk;
                                                    }
                                                  });
            for (const auto& entry : memory_entries_) state_->memory().write(entry.address, entry.bytes);
            mapped_later_.push_back({change.start.value, change.length});
            break;
          }
          case events::MappingChangeKind::kUnmap:
            text = "unmap " + hex(change.start.value) + " " + hex(change.length);
            break;
          case events::MappingChangeKind::kProtect:
            text = "protect " + hex(change.start.value) + " " + hex(change.length) + " prot " +
                   std::to_string(change.prot & 7u);
            break;
        }
        write_other(text, memory_entries_, {});
      }
      // The call stack, innermost first, in as many events as 255 characters need.
      std::string stack;
      for (std::size_t i = 0; i < call.call_stack.size(); ++i) {
        const std::string frame = hex(call.call_stack[i]);
        if (!stack.empty() && stack.size() + 1 + frame.size() > bt::kMaxDescription) {
          write_other(stack, {}, {});
          stack.clear();
        }
        stack += stack.empty() ? "callstack " + frame : " " + frame;
      }
      if (!stack.empty()) write_other(stack, {}, {});
      memory_entries_.clear();
      for (const auto& write : call.memory_writes) {
        state_->memory().write(write.address.value, write.bytes);
        add_memory(memory_entries_, write.address.value, write.bytes);
      }
      stage_registers(call.register_changes, nullptr);
      std::string text = "syscall " + std::string(call.name.substr(0, 40)) + "(";
      for (int i = 0; i < 6; ++i) text += (i ? ", " : "") + hex(call.args[i]);
      text += ") = " + std::to_string(call.result) + " #" + std::to_string(call.number);
      write_other(text, memory_entries_, staged_entries());
      return;
    }
    case EventKind::kFault: {
      const auto& fault = std::get<events::FaultEvent>(event.payload);
      finish_instruction(fault.pc.value);
      write_other("fault signal " + std::to_string(fault.signal) + " pc " + hex(fault.pc.value) + " address " +
                      hex(fault.address.value) + ": " + std::string(fault.description),
                  {}, {});
      return;
    }
    case EventKind::kExit: {
      const auto& exit = std::get<events::ExitEvent>(event.payload);
      finish_pending_fallthrough();
      write_other(exit.by_signal ? "exit signal " + std::to_string(exit.signal) : "exit code " + std::to_string(exit.code),
                  {}, {});
      return;
    }
    case EventKind::kModuleLoad: {
      const auto& module = std::get<events::ModuleLoadEvent>(event.payload);
      finish_pending_fallthrough();
      write_other("module " + hex(module.start.value) + " " + hex(module.end.value) + " bias " + hex(module.load_bias) +
                      " " + std::string(module.path),
                  {}, {});
      return;
    }
    case EventKind::kGap: {
      const auto& gap = std::get<events::GapEvent>(event.payload);
      finish_pending_fallthrough();
      write_other("gap " + std::to_string(gap.lost_events) + ": " + std::string(gap.reason), {}, {});
      return;
    }
    case EventKind::kSignal: write_signal(std::get<events::SignalEvent>(event.payload)); return;
    case EventKind::kThread: write_thread(event.thread, std::get<events::ThreadEvent>(event.payload)); return;
    case EventKind::kProcess: write_process(std::get<events::ProcessEvent>(event.payload)); return;
  }
}

// After "other" events (a syscall, a signal), the first instruction runs where
// the table's pc says; when the kernel's register values did not say it (x86's
// pc inside the syscall hook is 2 bytes short of where a sigreturn resumes),
// an "other" event "pc ADDRESS" sets it (the reader makes no event of it).
void BintraceWriter::resume_at(std::uint64_t pc) {
  if (bt::read_le(std::span(table_[pc_table_index_]).first(8)) == pc) return;
  stage_registers({}, &pc);
  write_other("pc " + hex(pc), {}, staged_entries());
}

// A block whose code the reader's memory does not hold (the guest wrote it,
// and the level has no stores): an "other" event "code ADDRESS" writes it,
// after the instruction before it (which jumped there) and before its first.
void BintraceWriter::give_code(const events::BlockEvent& block) {
  // (Before the first instruction the initial memory, taken at attach, holds
  // the code the first block runs; the events start with that instruction.)
  if (instructions_ == 0 && !pending_) return;
  code_scratch_.resize(block.bytes.size());
  state_->memory().read(block.address.value, code_scratch_);
  if (std::ranges::equal(code_scratch_, block.bytes)) return;
  finish_instruction(block.address.value);
  memory_entries_.clear();
  state_->memory().write(block.address.value, block.bytes);
  add_memory(memory_entries_, block.address.value, block.bytes);
  write_other("code " + hex(block.address.value), memory_entries_, {});
}

// A signal delivery: an "other" event (bintrace_layout.h) whose diff is the
// frame's bytes and the registers the handler starts with. The interrupted
// code's last instruction goes on at interrupted_pc (the faulting one, the
// block that did not run yet; after a syscall nothing is pending).
void BintraceWriter::write_signal(const events::SignalEvent& signal) {
  finish_instruction(signal.interrupted_pc.value);
  memory_entries_.clear();
  for (const auto& write : signal.frame_writes) {
    state_->memory().write(write.address.value, write.bytes);
    add_memory(memory_entries_, write.address.value, write.bytes);
  }
  stage_registers(signal.register_changes, nullptr);
  write_other("signal " + std::to_string(signal.signal) + " code " + std::to_string(signal.code) + " pc " +
                  hex(signal.interrupted_pc.value) + " handler " + hex(signal.handler.value) + " frame " +
                  hex(signal.frame.value) + " sender " + std::to_string(signal.sender_pid) + " address " +
                  hex(signal.fault_address.value) + (signal.fault ? " fault" : ""),
              memory_entries_, staged_entries());
}

// A thread change: an "other" event; a switch's diff is the registers of the
// thread switched to (the format has one register file: the running thread's).
void BintraceWriter::write_thread(events::ThreadId thread, const events::ThreadEvent& change) {
  finish_pending_fallthrough();
  stage_registers(change.registers, nullptr);
  write_other("thread " + std::to_string(static_cast<int>(change.change)) + " " + std::to_string(thread.value) +
                  " from " + std::to_string(change.from.value) + " status " + std::to_string(change.exit_code),
              {}, staged_entries());
}

// A fork or an exec: an "other" event with the two strings' lengths, so that
// any bytes of a name read back whole.
void BintraceWriter::write_process(const events::ProcessEvent& change) {
  finish_pending_fallthrough();
  write_other("process " + std::to_string(static_cast<int>(change.change)) + " " + std::to_string(change.pid) +
                  " trace " + std::to_string(change.trace.size()) + ":" + std::string(change.trace) + " detail " +
                  std::to_string(change.detail.size()) + ":" + std::string(change.detail),
              {}, {});
}

// The events written so far go to the spool (a killed recording's spool is
// what `tracecorn recover` reads).
void BintraceWriter::flush() {
  if (!error_.empty()) return;
  flush_events(SpoolStep::kFlush);
}

void BintraceWriter::flush_events(SpoolStep step) {
  if (!spool_) return;
  if (auto error = spool_->write(events_.bytes(), step); !error.empty() && error_.empty()) {
    struct stat status {};  // what reached the spool (stdio may have held some of what it accepted)
    const auto in_spool = fstat(fileno(spool_->file), &status) == 0 ? static_cast<std::uint64_t>(status.st_size) : 0;
    error_ = path_ + ": write error (events spool " + (spool_->path.empty() ? "in a temporary file" : spool_->path) +
             "): " + error + " after " + std::to_string(in_spool) + " bytes were written";
  }
  events_.clear();
}

std::vector<bt::MemoryRegion> BintraceWriter::declared_regions() const {
  std::vector<bt::MemoryRegion> ranges;
  for (const auto& region : initial_memory_) ranges.push_back({region.start.value, region.size});
  ranges.insert(ranges.end(), mapped_later_.begin(), mapped_later_.end());
  // Pages written outside every mapping (none expected: a guest write outside
  // its mappings faults) are declared too, so that every diff lands in a region.
  for (const auto page : state_->memory().page_numbers()) ranges.push_back({page * bt::SparseMemory::kPageBytes, bt::SparseMemory::kPageBytes});
  return bt::merge_regions(std::move(ranges));
}

std::vector<std::uint8_t> BintraceWriter::build_head(std::span<const bt::MemoryRegion> regions,
                                                     std::uint8_t compression) const {
  const bt::HeadStrings strings{options_.tool_version, tool_info_,
                                options_.unix_time ? options_.unix_time : static_cast<std::uint64_t>(std::time(nullptr))};
  return bt::encode_head(strings, compression, description_, regions);
}

void BintraceWriter::fill_initial_memory(std::uint64_t base, std::span<std::uint8_t> chunk) const {
  for (const auto& initial : initial_memory_) {
    const std::uint64_t from = std::max(initial.start.value, base);
    const std::uint64_t to = std::min(initial.start.value + initial.bytes.size(), base + chunk.size());
    if (from < to)
      std::copy_n(initial.bytes.begin() + static_cast<std::ptrdiff_t>(from - initial.start.value), to - from,
                  chunk.begin() + static_cast<std::ptrdiff_t>(from - base));
  }
}

void BintraceWriter::write_recovery_head() {
  if (spool_->path.empty()) return;  // stdout or a device: nothing is left behind to recover
  // Written under another name and renamed when whole, so that a head that
  // exists is complete (a kill while it is written leaves nothing to recover).
  const std::string head = path_ + ".head.part";
  const std::string part = head + ".tmp";
  std::FILE* out = std::fopen(part.c_str(), "wbe");
  std::uint64_t written = 0;
  std::string problem = out ? "" : std::strerror(errno);
  if (out) {
    try {
      auto put = [&](std::span<const std::uint8_t> bytes) {
        if (!bytes.empty() && std::fwrite(bytes.data(), 1, bytes.size(), out) != bytes.size())
          throw std::runtime_error(std::strerror(errno));
        written += bytes.size();
      };
      std::vector<bt::MemoryRegion> ranges;
      for (const auto& region : initial_memory_) ranges.push_back({region.start.value, region.size});
      const auto regions = bt::merge_regions(std::move(ranges));
      put(build_head(regions, bt::kCompressionNone));
      bt::encode_initial_memory(
          regions, [&](std::uint64_t base, std::span<std::uint8_t> chunk) { fill_initial_memory(base, chunk); }, put);
      put(bt::encode_initial_registers(description_, initial_values_));
      put(bt::encode_events_header(0, 0));
      if (std::fflush(out) != 0 || std::ferror(out)) throw std::runtime_error(std::strerror(errno ? errno : EIO));
    } catch (const std::exception& error) {
      problem = error.what();
      struct stat status {};  // what reached the file (stdio may have held some of what it accepted)
      if (fstat(fileno(out), &status) == 0) written = static_cast<std::uint64_t>(status.st_size);
    }
    if (std::fclose(out) != 0 && problem.empty()) problem = std::strerror(errno);
    if (problem.empty() && std::rename(part.c_str(), head.c_str()) != 0) problem = std::strerror(errno);
  }
  if (problem.empty()) {
    head_path_ = head;
    return;
  }
  std::remove(part.c_str());
  if (error_.empty())
    error_ = path_ + ": write error (recovery head " + head + "): " + problem + " after " + std::to_string(written) +
             " bytes were written";
}

std::string BintraceWriter::end(const events::TraceSummary& summary) {
  if (!spool_) return error_;
  if (error_.empty() && !begun_) error_ = path_ + ": the recording never began";
  if (error_.empty()) {
    try {
      finish_pending_fallthrough();
      if (summary.interrupted) write_other(bt::kInterruptedNote, {}, {});
      flush_events(SpoolStep::kEnd);
    } catch (const std::exception& error) {
      error_ = path_ + ": write error: " + error.what();
    }
  }
  remove_recovery_head();  // the file is written whole below (or not at all): no recovery needed
  if (!error_.empty()) {
    spool_.reset();
    return error_;
  }
  std::FILE* out = nullptr;
  const bool to_stdout = path_ == "-";
  // A regular file is written as PATH.part and renamed when complete.
  const std::string part = in_place_ ? path_ : path_ + ".part";
  try {
    const auto regions = declared_regions();
    out = to_stdout ? stdout : std::fopen(part.c_str(), "wbe");
    if (!out) throw std::runtime_error(std::string("cannot open for writing: ") + std::strerror(errno));
    auto put = [&](std::span<const std::uint8_t> bytes) {
      if (!bytes.empty() && std::fwrite(bytes.data(), 1, bytes.size(), out) != bytes.size())
        throw std::runtime_error(std::strerror(errno));
      bytes_written_ += bytes.size();
    };
    put(build_head(regions, options_.compress_zstd ? bt::kCompressionZstd : bt::kCompressionNone));
    // Initial memory: each region's bytes when recording started (zero where
    // nothing was mapped then), streamed a chunk at a time.
    bt::encode_initial_memory(
        regions, [&](std::uint64_t base, std::span<std::uint8_t> chunk) { fill_initial_memory(base, chunk); }, put);
    put(bt::encode_initial_registers(description_, initial_values_));
    events_payload_bytes_ = spool_->bytes;
    put(bt::encode_events_header(spool_->bytes, event_count_));
    std::vector<std::uint8_t> chunk(1 << 20);
    std::rewind(spool_->file);
    std::uint64_t copied = 0;
    while (copied < spool_->bytes) {
      const std::size_t got = std::fread(chunk.data(), 1, chunk.size(), spool_->file);
      if (got == 0) throw std::runtime_error("the events spool is shorter than written");
      put(std::span(chunk).first(got));
      copied += got;
    }
    if (std::fflush(out) != 0 || std::ferror(out)) throw std::runtime_error(std::strerror(errno ? errno : EIO));
    if (!to_stdout) {
      const int status = std::fclose(out);
      out = nullptr;
      if (status != 0) throw std::runtime_error(std::strerror(errno));
      if (!in_place_) std::filesystem::rename(part, path_);
    }
  } catch (const std::exception& error) {
    if (out && !to_stdout) std::fclose(out);
    if (!in_place_) std::remove(part.c_str());
    error_ = path_ + ": write error after " + std::to_string(bytes_written_) + " bytes were written: " + error.what();
  }
  spool_.reset();
  return error_;
}

}  // namespace tracecorn::formats
