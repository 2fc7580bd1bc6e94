// Role: implementation of BlockDecoder and BlockCache (see block_cache.h).
#include "recorder/core/block_cache.h"

#include <algorithm>

namespace tracecorn::core {

Expected<std::unique_ptr<BlockDecoder>> BlockDecoder::create(const arch::ArchInfo& arch) {
  if (!arch.decoding_unsupported.empty())
    return make_error(ErrorCode::kUnsupported,
                      std::string(arch.name) + " cannot be recorded: " + std::string(arch.decoding_unsupported));
  std::unique_ptr<BlockDecoder> decoder(new BlockDecoder(arch));
  if (arch.decode_without_capstone) return decoder;  // no Capstone for it: decode_without_capstone serves
  if (!arch::open_capstone_handles(arch, true, decoder->handles_))
    return make_error(ErrorCode::kEmulator, "cs_open failed for " + std::string(arch.name));
  return decoder;
}

BlockDecoder::~BlockDecoder() { arch::close_capstone_handles(handles_); }

DecodedBlock BlockDecoder::decode(std::uint64_t address, std::span<const std::uint8_t> bytes, bool with_registers,
                                  std::uint8_t mode) const {
  DecodedBlock block;
  block.address = address;
  block.size = static_cast<std::uint32_t>(bytes.size());
  block.mode = handles_[1] && mode == 1 ? 1 : 0;
  block.bytes.assign(bytes.begin(), bytes.end());
  if (arch_.decode_without_capstone)
    decode_without_capstone(block, with_registers);
  else
    decode_with_capstone(block, with_registers);
  finish_block(block);
  return block;
}

void BlockDecoder::decode_without_capstone(DecodedBlock& block, bool with_registers) const {
  std::size_t offset = 0;
  while (offset < block.bytes.size()) {
    arch::EncodedInstruction encoded;
    DecodedInstruction decoded;
    decoded.address = block.address + offset;
    decoded.offset = static_cast<std::uint16_t>(offset);
    if (!arch_.decode_without_capstone(std::span(block.bytes).subspan(offset), encoded)) {
      // Undecodable bytes: one pseudo-instruction covers the rest, as with Capstone.
      decoded.size = static_cast<std::uint8_t>(std::min<std::size_t>(block.bytes.size() - offset, 255));
      block.instructions.push_back(std::move(decoded));
      break;
    }
    decoded.size = encoded.size;
    if (with_registers) {
      decoded.written_registers.assign(encoded.written.begin(), encoded.written.begin() + encoded.written_count);
      for (const std::uint16_t index : decoded.written_registers)
        decoded.written_unicorn_ids.push_back(arch_.registers[index].uc_id);
    }
    decoded.memory_reads = encoded.memory_reads;
    decoded.memory_writes = encoded.memory_writes;
    decoded.memory_count_fixed = encoded.memory_count_fixed;
    block.instructions.push_back(std::move(decoded));
    offset += encoded.size;
  }
}

void BlockDecoder::decode_with_capstone(DecodedBlock& block, bool with_registers) const {
  const std::uint64_t address = block.address;
  const csh handle = handles_[block.mode];
  cs_insn* insn = cs_malloc(handle);
  const std::uint8_t* cursor = block.bytes.data();
  std::size_t remaining = block.bytes.size();
  std::uint64_t pc = address;
  while (remaining > 0) {
    if (!cs_disasm_iter(handle, &cursor, &remaining, &pc, insn)) {
      const std::size_t width = arch_.fixed_instruction_size;
      if (width && remaining >= width) {
        // A fixed-width ISA (mips: Capstone 4 decodes no c.cond.d with a
        // condition code other than 0): one opaque instruction of that width
        // (no registers known, its memory count not fixed), then decoding goes on.
        DecodedInstruction opaque;
        opaque.address = pc;
        opaque.size = static_cast<std::uint8_t>(width);
        opaque.offset = static_cast<std::uint16_t>(pc - address);
        block.instructions.push_back(std::move(opaque));
        cursor += width;
        remaining -= width;
        pc += width;
        continue;
      }
      // Undecodable bytes: one pseudo-instruction covers the rest, so counts stay honest.
      DecodedInstruction rest;
      rest.address = pc;
      rest.size = static_cast<std::uint8_t>(std::min<std::size_t>(remaining, 255));
      rest.offset = static_cast<std::uint16_t>(pc - address);
      block.instructions.push_back(std::move(rest));
      break;
    }
    DecodedInstruction decoded;
    decoded.address = insn->address;
    decoded.size = static_cast<std::uint8_t>(insn->size);
    decoded.offset = static_cast<std::uint16_t>(insn->address - address);
    if (with_registers) {
      arch::instruction_registers(arch_, handle, *insn, nullptr, decoded.written_registers);
      for (const std::uint16_t index : decoded.written_registers)
        decoded.written_unicorn_ids.push_back(arch_.registers[index].uc_id);
      if (arch::describe_derived_writes(arch_, *insn, decoded.derived) &&
          !arch::writes_exactly(decoded.derived, decoded.written_registers.data(), decoded.written_registers.size()))
        decoded.derived = arch::DerivedWrites{};
    }
    decoded.memory_count_fixed = arch_.engine->count_memory_accesses(*insn, decoded.memory_reads, decoded.memory_writes);
    block.instructions.push_back(std::move(decoded));
  }
  cs_free(insn, 1);
}

void BlockDecoder::finish_block(DecodedBlock& block) {
  block.instruction_count = static_cast<std::uint32_t>(block.instructions.size());
  block.bounds.reserve(block.instructions.size());
  for (const DecodedInstruction& decoded : block.instructions)
    block.bounds.push_back({events::GuestAddress{decoded.address}, decoded.offset, decoded.size});
  for (std::size_t i = 0; i < block.instructions.size(); ++i) {
    const DecodedInstruction& decoded = block.instructions[i];
    if (decoded.memory_reads || decoded.memory_writes || !decoded.memory_count_fixed) block.last_memory_instruction = i;
  }
}

namespace {
// Blocks are identified by address, size and mode: Unicorn may translate a
// shorter block at the same address (after a fault, or at a page boundary), and
// arm code at one address may run in ARM or in Thumb state.
std::uint64_t block_key(std::uint64_t address, std::uint32_t size, std::uint8_t mode) {
  return address ^ (static_cast<std::uint64_t>(size) << 48) ^ (static_cast<std::uint64_t>(mode) << 63);
}
}  // namespace

const DecodedBlock* BlockCache::find_slow(std::uint64_t address, std::uint32_t size, std::uint8_t mode) const {
  auto it = blocks_.find(block_key(address, size, mode));
  if (it == blocks_.end() || it->second->address != address || it->second->size != size || it->second->mode != mode)
    return nullptr;
  slots_[slot_index(address)] = Slot{address, size, it->second};
  return it->second;
}

const DecodedBlock* BlockCache::insert(DecodedBlock block) {
  block.id = static_cast<std::uint32_t>(by_id_.size());
  by_id_.push_back(std::make_unique<DecodedBlock>(std::move(block)));
  const DecodedBlock* pointer = by_id_.back().get();
  blocks_[block_key(pointer->address, pointer->size, pointer->mode)] = pointer;
  slots_[slot_index(pointer->address)] = Slot{pointer->address, pointer->size, pointer};
  if (pointer->size) {
    for (std::uint64_t page = pointer->address >> kPageShift;
         page <= (pointer->address + pointer->size - 1) >> kPageShift; ++page) {
      page_filter_[(page >> 6) & (kFilterWords - 1)] |= std::uint64_t{1} << (page & 63);
      blocks_by_page_[page].push_back(pointer);
    }
  }
  return pointer;
}

bool BlockCache::covers_code_slow(std::uint64_t start, std::uint64_t end) const {
  for (std::uint64_t page = start >> kPageShift; page <= (end - 1) >> kPageShift; ++page) {
    const auto found = blocks_by_page_.find(page);
    if (found == blocks_by_page_.end()) continue;
    for (const DecodedBlock* block : found->second)
      if (block->address < end && block->address + block->size > start) return true;
  }
  return false;
}

void BlockCache::forget_range(std::uint64_t start, std::uint64_t end) {
  for (Slot& slot : slots_)
    if (slot.block && slot.address < end && slot.address + slot.size > start) slot = Slot{};
  auto overlaps = [&](const DecodedBlock& block) { return block.address < end && block.address + block.size > start; };
  std::erase_if(blocks_, [&](const auto& entry) { return overlaps(*entry.second); });
  for (auto entry = blocks_by_page_.begin(); entry != blocks_by_page_.end();) {
    std::erase_if(entry->second, [&](const DecodedBlock* block) { return overlaps(*block); });
    entry = entry->second.empty() ? blocks_by_page_.erase(entry) : std::next(entry);
  }
}

const DecodedBlock* BlockTable::define(DecodedBlock block) {
  const std::uint32_t id = block.id;
  if (id >= blocks_.size()) blocks_.resize(std::size_t{id} + 1);
  blocks_[id] = std::make_unique<DecodedBlock>(std::move(block));
  return blocks_[id].get();
}

}  // namespace tracecorn::core
