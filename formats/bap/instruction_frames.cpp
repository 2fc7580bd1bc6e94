// Role: implementation of InstructionFrames and FrameInputs (see instruction_frames.h).
#include "formats/bap/instruction_frames.h"

#include <algorithm>
#include <cstring>

namespace tracecorn::formats::bap {

// What the writer needs to know of one instruction, decoded once per address:
// its registers (read, written, base, index: register indices).
struct InstructionFrames::Decoded : arch::InstructionDecoder::Registers {
  std::vector<std::uint8_t> bytes;      // to notice code that changed
  std::vector<OperandUsage> read_usage;  // of each register of `read` (a pre-list operand)
};

// The instruction whose std_frame is being built (bap_writer.h), encoded as it
// goes: its pre-list registers when it arrives (their values before it ran),
// its memory reads and unattributed accesses as they come, its post list when
// its events are complete. The buffers are reused.
struct InstructionFrames::Pending {
  bool active = false;
  std::uint64_t address = 0;
  std::uint64_t thread_id = 0;
  std::uint8_t mode = 0;
  const Decoded* operands = nullptr;  // the decode cache's entry: its bytes are the instruction's
  ByteBuffer pre_list;                // operand_value_list bodies
  ByteBuffer post_list;
  ByteBuffer unattributed;
  std::vector<events::MemoryEvent> writes;  // go after the post-list registers
};

namespace {

constexpr std::size_t kRecentDecodes = 4096;

void put_u64(std::uint8_t* at, std::uint64_t value) {
  for (int i = 0; i < 8; ++i) at[i] = static_cast<std::uint8_t>(value >> (8 * i));
}

void encode_memory(ByteBuffer& list, const events::MemoryEvent& access, bool written) {
  const std::size_t size = std::min<std::size_t>(access.size, 8);
  std::uint8_t bytes[8];
  for (std::size_t i = 0; i < size; ++i) bytes[i] = static_cast<std::uint8_t>(access.value >> (8 * i));
  const OperandUsage usage{.read = !written, .written = written, .index = false, .base = false};
  append_operand(list, memory_operand_specific(access.address.value).span(), static_cast<std::int32_t>(size * 8),
                 usage, {bytes, size});
}

}  // namespace

Expected<std::unique_ptr<InstructionFrames>> InstructionFrames::open(
    const arch::ArchInfo& arch, std::shared_ptr<const std::vector<RegisterOperandEncoder>> operands) {
  auto decoder = arch::InstructionDecoder::open(arch, true);
  if (!decoder) return make_error(ErrorCode::kUnsupported, "Capstone cannot decode " + std::string(arch.name));
  return std::unique_ptr<InstructionFrames>(new InstructionFrames(arch, std::move(operands), std::move(*decoder)));
}

std::unique_ptr<InstructionFrames> InstructionFrames::open_encoder(
    const arch::ArchInfo& arch, std::shared_ptr<const std::vector<RegisterOperandEncoder>> operands) {
  return std::unique_ptr<InstructionFrames>(new InstructionFrames(arch, std::move(operands), nullptr));
}

InstructionFrames::InstructionFrames(const arch::ArchInfo& arch,
                                     std::shared_ptr<const std::vector<RegisterOperandEncoder>> operands,
                                     std::unique_ptr<arch::InstructionDecoder> decoder)
    : arch_(arch), operands_(std::move(operands)), decoder_(std::move(decoder)), pending_(std::make_unique<Pending>()),
      recent_(kRecentDecodes) {
  registers_.values.resize(arch.registers.size());
  registers_.known.assign(arch.registers.size(), 0);
  for (std::size_t i = 0; i < arch.registers.size(); ++i) {
    registers_.values[i].index = static_cast<std::uint16_t>(i);
    registers_.values[i].size = static_cast<std::uint8_t>(std::min<std::size_t>(arch.registers[i].size, 16));
    if (arch.registers[i].uc_id == arch.pc_reg) pc_index_ = static_cast<int>(i);
  }
}

InstructionFrames::~InstructionFrames() = default;

std::uint8_t* InstructionFrames::stage_frame(std::size_t size, bool counted) {
  if (counted) frame_starts_.push_back(out_.size());
  std::uint8_t* at = out_.append(8 + size);
  put_u64(at, size);
  return at + 8;
}

// The instruction's operands, decoded once per address, instruction set and bytes.
const InstructionFrames::Decoded* InstructionFrames::decode(std::uint64_t address, std::uint8_t mode,
                                                            std::span<const std::uint8_t> bytes) {
  const bool alternate = mode == 1 && arch_.alternate_isa;  // decoded in the second instruction set
  const std::uint64_t key = address | (std::uint64_t{alternate} << 63);
  RecentDecode& slot = recent_[(key ^ (key >> 12)) % kRecentDecodes];
  if (slot.decoded && slot.key == key && std::ranges::equal(bytes, slot.decoded->bytes)) return slot.decoded;
  const Decoded* decoded = find_or_decode(key, address, mode, bytes);
  slot = {key, decoded};
  return decoded;
}

const InstructionFrames::Decoded* InstructionFrames::find_or_decode(std::uint64_t key, std::uint64_t address,
                                                                    std::uint8_t mode,
                                                                    std::span<const std::uint8_t> bytes) {
  auto found = decoded_.find(key);
  if (found != decoded_.end() && std::ranges::equal(bytes, found->second->bytes)) return found->second.get();
  auto operands = std::make_unique<Decoded>();
  operands->bytes.assign(bytes.begin(), bytes.end());
  if (decoder_ && decoder_->registers(bytes, address, mode, *operands)) {  // (open_encoder's never decode)
    // Address registers are read even where Capstone's list leaves them out.
    for (const auto list : {&operands->base, &operands->index})
      for (const std::uint16_t reg : *list)
        if (std::find(operands->read.begin(), operands->read.end(), reg) == operands->read.end())
          operands->read.push_back(reg);
  }
  for (const std::uint16_t reg : operands->read) {
    const bool is_base = std::find(operands->base.begin(), operands->base.end(), reg) != operands->base.end();
    const bool is_index = std::find(operands->index.begin(), operands->index.end(), reg) != operands->index.end();
    operands->read_usage.push_back({.read = true, .written = false, .index = is_index, .base = is_base});
  }
  auto& slot = decoded_[key];
  slot = std::move(operands);
  return slot.get();
}

void InstructionFrames::clear_decode_cache() {
  decoded_.clear();
  std::fill(recent_.begin(), recent_.end(), RecentDecode{});
}

void InstructionFrames::start_instruction(events::ThreadId thread, const events::InstructionEvent& instruction) {
  finish_instruction();  // (its decode may go with the cache)
  if (decode_cache_full()) clear_decode_cache();
  start_decoded(thread, instruction.address.value, instruction.mode,
                decode(instruction.address.value, instruction.mode, instruction.bytes));
}

void InstructionFrames::start_decoded(events::ThreadId thread, std::uint64_t address, std::uint8_t mode,
                                      const Decoded* operands) {
  finish_instruction();
  Pending& pending = *pending_;
  pending.active = true;
  pending.address = address;
  pending.thread_id = thread.value;
  pending.mode = mode;
  pending.operands = operands;
  pending.pre_list.clear();
  pending.post_list.clear();
  pending.unattributed.clear();
  pending.writes.clear();
  // The program counter is never recorded as a change (no access list names it
  // as written by straight-line code): it is the instruction's own address.
  if (pc_index_ >= 0) {
    auto& pc = registers_.values[static_cast<std::size_t>(pc_index_)];
    for (std::size_t i = 0; i < 8 && i < pc.size; ++i) pc.bytes[i] = static_cast<std::uint8_t>(address >> (8 * i));
    registers_.known[static_cast<std::size_t>(pc_index_)] = 1;
  }
  const std::vector<RegisterOperandEncoder>& encoders = *operands_;
  for (std::size_t i = 0; i < operands->read.size(); ++i) {
    const std::uint16_t reg = operands->read[i];
    if (registers_.known[reg]) encoders[reg].append(pending.pre_list, operands->read_usage[i], registers_.values[reg].bytes);
  }
}

void InstructionFrames::start_instructions(const events::InstructionRun& run) {
  for (std::size_t i = 0; i < run.instructions.size(); ++i) {
    const events::InstructionBounds& bounds = run.instructions[i];
    const events::InstructionEvent instruction{bounds.address, bounds.size,
                                               run.block_bytes.subspan(bounds.offset, bounds.size),
                                               static_cast<std::uint32_t>(run.first_index + i), run.mode};
    start_instruction(run.thread, instruction);
  }
}

void InstructionFrames::on_memory(const events::MemoryEvent& access, bool written) {
  Pending& pending = *pending_;
  if (!pending.active) {
    ++dropped_;  // no instruction to tie it to
    return;
  }
  if (!access.pc_known || access.pc.value != pending.address)
    encode_memory(pending.unattributed, access, written);
  else if (written)
    pending.writes.push_back(access);  // after the post-list registers, at finish_instruction()
  else
    encode_memory(pending.pre_list, access, false);
}

void InstructionFrames::finish_instruction() {
  Pending& pending = *pending_;
  if (!pending.active) return;
  pending.active = false;
  constexpr OperandUsage kWritten{.read = false, .written = true, .index = false, .base = false};
  const std::vector<RegisterOperandEncoder>& encoders = *operands_;
  for (const std::uint16_t reg : pending.operands->written)
    if (registers_.known[reg]) encoders[reg].append(pending.post_list, kWritten, registers_.values[reg].bytes);
  for (const auto& access : pending.writes) encode_memory(pending.post_list, access, true);
  StdFrameFields fields;
  fields.address = pending.address;
  fields.thread_id = pending.thread_id;
  fields.rawbytes = pending.operands->bytes;
  fields.operand_pre_list = pending.pre_list.bytes();
  fields.operand_post_list = pending.post_list.bytes();
  // An architecture with two instruction sets names the instruction's (arm: "ARM", "Thumb").
  if (arch_.alternate_isa) fields.mode = arch_.alternate_isa->names[pending.mode == 1 ? 1 : 0];
  if (!pending.unattributed.empty()) fields.tracecorn_unattributed = pending.unattributed.bytes();
  const StdFrameSizes sizes = std_frame_sizes(fields);
  write_std_frame(stage_frame(sizes.message, true), fields, sizes);
}

void InstructionFrames::apply(std::span<const events::RegisterValue> values) {
  for (const auto& value : values) {
    if (value.index >= registers_.values.size()) continue;
    events::RegisterValue& held = registers_.values[value.index];
    held = value;
    held.size = static_cast<std::uint8_t>(std::min<std::size_t>(arch_.registers[value.index].size, 16));
    registers_.known[value.index] = 1;
  }
}

void InstructionFrames::forget_registers() { std::fill(registers_.known.begin(), registers_.known.end(), 0); }

// ---- FrameInputs: items are a tag byte, then the item's fields (unaligned, read with memcpy).

namespace {

struct RunHeader {
  std::uint32_t thread;
  std::uint32_t count;
  std::uint8_t mode;
};

// One instruction of an item: where it is and its decode.
struct DecodedInstruction {
  std::uint64_t address;
  const InstructionFrames::Decoded* decoded;
};

struct InstructionHeader {
  DecodedInstruction instruction;
  std::uint32_t thread;
  std::uint8_t mode;
};

template <typename T>
std::uint8_t* put(std::uint8_t* at, const T& value) {
  std::memcpy(at, &value, sizeof value);
  return at + sizeof value;
}

template <typename T>
const std::uint8_t* get(const std::uint8_t* at, T& value) {
  std::memcpy(&value, at, sizeof value);
  return at + sizeof value;
}

}  // namespace

std::uint8_t* FrameInputs::add(Item item, std::size_t payload) {
  if (item == Item::kInstruction || item == Item::kRun)
    unfinished_ = items_.size();
  else if (item == Item::kBlock || item == Item::kFrame)
    unfinished_ = kNone;
  std::uint8_t* at = items_.append(1 + payload);
  *at = static_cast<std::uint8_t>(item);
  return at + 1;
}

void FrameInputs::add_instruction(events::ThreadId thread, const events::InstructionEvent& instruction,
                                  const InstructionFrames::Decoded* decoded) {
  const InstructionHeader header{{instruction.address.value, decoded}, thread.value, instruction.mode};
  put(add(Item::kInstruction, sizeof header), header);
}

void FrameInputs::add_instructions(const events::InstructionRun& run, InstructionFrames& frames) {
  if (run.instructions.empty()) return;  // (no instruction: the pending one goes on)
  const RunHeader header{run.thread.value, static_cast<std::uint32_t>(run.instructions.size()), run.mode};
  std::uint8_t* at = put(add(Item::kRun, sizeof header + run.instructions.size() * sizeof(DecodedInstruction)), header);
  for (const events::InstructionBounds& bounds : run.instructions)
    at = put(at, DecodedInstruction{bounds.address.value,
                                    frames.decode(bounds.address.value, run.mode,
                                                  run.block_bytes.subspan(bounds.offset, bounds.size))});
}

void FrameInputs::add_memory(const events::MemoryEvent& access, bool written) {
  put(add(written ? Item::kMemoryWrite : Item::kMemoryRead, sizeof access), access);
}

void FrameInputs::add_registers(std::span<const events::RegisterValue> values) {
  const auto count = static_cast<std::uint32_t>(values.size());
  std::uint8_t* at = put(add(Item::kRegisters, sizeof count + values.size_bytes()), count);
  if (count) std::memcpy(at, values.data(), values.size_bytes());
}

void FrameInputs::add_block() { add(Item::kBlock, 0); }

void FrameInputs::add_frame(std::span<const std::uint8_t> message) {
  const std::uint64_t size = message.size();
  std::uint8_t* at = put(add(Item::kFrame, sizeof size + message.size()), size);
  if (size) std::memcpy(at, message.data(), message.size());
}

void FrameInputs::add_forget_registers() { add(Item::kForget, 0); }

void FrameInputs::split_at(std::size_t at, FrameInputs& rest) {
  rest.clear();
  rest.items_.append(items_.bytes().subspan(at));
  rest.unfinished_ = unfinished_ == kNone || unfinished_ < at ? kNone : unfinished_ - at;
  items_.shrink_to(at);
  if (unfinished_ != kNone && unfinished_ >= at) unfinished_ = kNone;
}

void FrameInputs::clear() {
  items_.clear();
  unfinished_ = kNone;
}

void InstructionFrames::encode(const FrameInputs& inputs) {
  using Item = FrameInputs::Item;
  set_registers(inputs.start);
  const std::span<const std::uint8_t> items = inputs.items_.bytes();
  const std::uint8_t* at = items.data();
  const std::uint8_t* const end = at + items.size();
  while (at < end) {
    const auto item = static_cast<Item>(*at++);
    switch (item) {
      case Item::kInstruction: {
        InstructionHeader header;
        at = get(at, header);
        start_decoded(events::ThreadId{header.thread}, header.instruction.address, header.mode,
                      header.instruction.decoded);
        break;
      }
      case Item::kRun: {
        RunHeader header;
        at = get(at, header);
        for (std::uint32_t i = 0; i < header.count; ++i) {
          DecodedInstruction instruction;
          at = get(at, instruction);
          start_decoded(events::ThreadId{header.thread}, instruction.address, header.mode, instruction.decoded);
        }
        break;
      }
      case Item::kMemoryRead:
      case Item::kMemoryWrite: {
        events::MemoryEvent access;
        at = get(at, access);
        on_memory(access, item == Item::kMemoryWrite);
        break;
      }
      case Item::kRegisters: {
        std::uint32_t count = 0;
        at = get(at, count);
        for (std::uint32_t i = 0; i < count; ++i) {
          events::RegisterValue value;
          at = get(at, value);
          apply({&value, 1});
        }
        break;
      }
      case Item::kBlock:
        finish_instruction();
        break;
      case Item::kFrame: {
        std::uint64_t size = 0;
        at = get(at, size);
        finish_instruction();
        std::memcpy(stage_frame(size, true), at, size);
        at += size;
        break;
      }
      case Item::kForget:
        forget_registers();
        break;
    }
  }
  finish_instruction();
}

}  // namespace tracecorn::formats::bap
