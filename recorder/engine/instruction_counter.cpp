// Role: implementation of InstructionCounter (see instruction_counter.h).
#include "recorder/engine/instruction_counter.h"

#include <vector>

namespace tracecorn::engine {

Expected<std::unique_ptr<InstructionCounter>> InstructionCounter::attach(uc_engine* engine, const arch::ArchInfo& arch) {
  std::unique_ptr<InstructionCounter> counter(new InstructionCounter());
  counter->engine_ = engine;
  counter->arch_ = &arch;
  counter->isa_ = arch.alternate_isa;
  if (!arch.decode_without_capstone && !arch::open_capstone_handles(arch, false, counter->capstone_))
    return make_error(ErrorCode::kEmulator, "cs_open failed");
  if (uc_hook_add(engine, &counter->hook_, UC_HOOK_BLOCK, reinterpret_cast<void*>(&on_block), counter.get(), 1, 0) !=
      UC_ERR_OK)
    return make_error(ErrorCode::kEmulator, "cannot add the block hook");
  return counter;
}

InstructionCounter::~InstructionCounter() {
  if (hook_) uc_hook_del(engine_, hook_);
  arch::close_capstone_handles(capstone_);
}

std::uint32_t InstructionCounter::decode_count(std::uint64_t address, std::uint32_t size, std::uint8_t mode) noexcept {
  std::uint8_t bytes[4096];
  if (size == 0 || size > sizeof bytes || uc_mem_read(engine_, address, bytes, size) != UC_ERR_OK) return 1;
  std::size_t undecoded = 0;
  const std::uint32_t count = arch::count_instructions(*arch_, capstone_[mode], std::span(bytes, size), address, undecoded);
  return count ? count : 1;
}

void InstructionCounter::on_block(uc_engine*, std::uint64_t address, std::uint32_t size, void* user) noexcept {
  auto* self = static_cast<InstructionCounter*>(user);
  ++self->blocks_;
  std::uint8_t mode = 0;  // arm: Thumb blocks (CPSR.T) decode in Thumb mode
  if (self->isa_) {
    std::uint64_t value = 0;
    uc_reg_read(self->engine_, self->isa_->uc_register, &value);
    mode = (value & self->isa_->mask) ? 1 : 0;
  }
  const std::uint64_t key =
      address ^ (static_cast<std::uint64_t>(size) << 48) ^ (static_cast<std::uint64_t>(mode) << 63);
  self->last_address_ = address;
  self->last_size_ = size;
  self->last_mode_ = mode;
  auto it = self->counts_.find(key);
  if (it == self->counts_.end()) {
    try {
      it = self->counts_.emplace(key, self->decode_count(address, size, mode)).first;
    } catch (...) {
      self->last_count_ = self->decode_count(address, size, mode);
      self->instructions_ += self->last_count_;
      return;
    }
  }
  self->last_count_ = it->second;
  self->instructions_ += it->second;
}

std::uint64_t InstructionCounter::instructions_before(std::uint64_t pc) noexcept {
  if (blocks_ == 0 || pc < last_address_ || pc >= last_address_ + last_size_) return instructions_;
  // The instructions from the block's start up to `pc` (none when pc is the start).
  std::uint32_t ran = 0;
  if (pc > last_address_) {
    std::uint8_t bytes[4096];
    const auto length = static_cast<std::size_t>(pc - last_address_);
    if (length > sizeof bytes || uc_mem_read(engine_, last_address_, bytes, length) != UC_ERR_OK) return instructions_;
    std::size_t undecoded = 0;
    ran = arch::count_instructions(*arch_, capstone_[last_mode_], std::span(bytes, length), last_address_, undecoded);
    if (undecoded != 0) return instructions_;  // pc is not an instruction boundary: keep the whole block
  }
  return instructions_ - last_count_ + ran;
}

}  // namespace tracecorn::engine
