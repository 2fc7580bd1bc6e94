// Role: implementation of GuestStacks (see guest_stacks.h).
#include "recorder/core/guest_stacks.h"

#include <chrono>
#include <cstring>

namespace tracecorn::core {

int unwind_column(const arch::ArchInfo& arch, const arch::RegisterInfo& reg) {
  if (arch.unwind_pc_column == arch::kNoDwarfNumber) return reg.dwarf;
  if (reg.uc_id == arch.pc_reg) return arch.unwind_pc_column;
  return reg.dwarf == arch.unwind_pc_column ? arch::kNoDwarfNumber : reg.dwarf;  // the pc has its column
}

Expected<unwind::UnwinderConfig> unwinder_config_for(const arch::ArchInfo& arch) {
  auto dwarf_of = [&](int uc_id) -> int {
    for (const auto& reg : arch.registers)
      if (reg.uc_id == uc_id) return unwind_column(arch, reg);
    return arch::kNoDwarfNumber;
  };
  int pc = dwarf_of(arch.pc_reg);
  const int sp = dwarf_of(arch.sp_reg), fp = dwarf_of(arch.fp_reg);
  const int limit = static_cast<int>(unwind::kMaxRegisters);
  if (pc >= limit) {
    // mips: the pc's column is GCC's DWARF_ALT_FRAME_RETURN_COLUMN (66), above
    // the tracked ones. The unwinder only keeps the pc in its column (the
    // caller's comes from the CIE's return address column), so it gets the
    // lowest column no table register has (mips: 32, f0, a result register
    // that no CFI saves).
    for (int column = 0; column < limit && pc >= limit; ++column) {
      bool used = false;
      for (const auto& reg : arch.registers) used |= reg.dwarf == column;
      if (!used) pc = column;
    }
  }
  if (pc < 0 || sp < 0 || fp < 0 || pc >= limit || sp >= limit || fp >= limit)
    return make_error(ErrorCode::kUnsupported,
                      std::string(arch.name) + ": no DWARF numbers for the pc, stack and frame pointer registers");
  unwind::UnwinderConfig config;
  config.pc_register = static_cast<unsigned>(pc);
  config.sp_register = static_cast<unsigned>(sp);
  config.fp_register = static_cast<unsigned>(fp);
  config.address_size = arch.elf_64bit ? 8 : 4;
  config.little_endian = arch.little_endian;
  config.thumb_bit = arch.alternate_isa && arch.alternate_isa->address_bit0;
  config.analyze_prologue = arch.analyze_prologue;
  // The signal frames' saved registers, in the columns above (the pc in its own).
  for (const auto& trampoline : arch.signal_abi.trampolines) {
    unwind::UnwinderConfig::SignalTrampoline converted{trampoline.code, {}};
    for (const auto& slot : trampoline.saved) {
      const int column = slot.uc_id == arch.pc_reg ? pc : dwarf_of(slot.uc_id);
      if (column >= 0 && column < limit) converted.saved.push_back({static_cast<std::uint16_t>(column), slot.offset});
    }
    config.signal_trampolines.push_back(std::move(converted));
  }
  return config;
}

Expected<std::unique_ptr<GuestStacks>> GuestStacks::create(uc_engine* engine, const arch::ArchInfo& arch,
                                                           unwind::UnwindMethod method, HostPathMapper host_path) {
  auto config = unwinder_config_for(arch);
  if (!config) return config.error();
  return std::unique_ptr<GuestStacks>(new GuestStacks(engine, arch, *config, method, std::move(host_path)));
}

GuestStacks::GuestStacks(uc_engine* engine, const arch::ArchInfo& arch, unwind::UnwinderConfig config,
                         unwind::UnwindMethod method, HostPathMapper host_path)
    : engine_(engine),
      arch_(arch),
      config_(config),
      method_(method),
      host_path_(std::move(host_path)),
      unwinder_(config),
      memory_(engine) {
  for (const auto& reg : arch.registers) {
    const int column = unwind_column(arch, reg);
    if (column < 0 || column >= static_cast<int>(unwind::kMaxRegisters) || reg.size > 8) continue;
    register_ids_.push_back(reg.uc_id);
    register_dwarf_.push_back(static_cast<unsigned>(column));
  }
  register_values_.resize(register_ids_.size());
  for (auto& value : register_values_) register_pointers_.push_back(&value);
  frames_.resize(256);
}

std::string GuestStacks::host_path(std::string_view guest_path) const {
  return host_path_ ? host_path_(guest_path) : std::string(guest_path);
}

void GuestStacks::module_loaded(std::uint64_t start, std::uint64_t end, std::uint64_t load_bias,
                                std::string_view path) noexcept {
  try {
    if (!unwinder_.add_module(start, end, load_bias, host_path(path))) ++unreadable_modules_;
  } catch (...) {  // allocation failure: the module stays unknown, its frames end stacks
    ++unreadable_modules_;
  }
}

void GuestStacks::unmapped(std::uint64_t start, std::uint64_t length) noexcept {
  unwinder_.remove_range(start, length);
}

bool GuestStacks::EngineMemory::read(std::uint64_t address, void* out, std::size_t size) noexcept {
  const std::uint64_t base = address & ~(kPage - 1);
  if (size == 0 || size > kPage || address - base > kPage - size)  // crosses a page: read it directly
    return uc_mem_read(engine_, address, out, size) == UC_ERR_OK;
  for (std::size_t i = 0; i < used_; ++i) {
    if (pages_[i].base == base) {
      std::memcpy(out, pages_[i].bytes + (address - base), size);
      return true;
    }
  }
  const std::size_t slot = used_ < kPages ? used_++ : (next_victim_++ % kPages);
  pages_[slot].base = 1;  // never a page base: the slot is empty until the read succeeds
  if (uc_mem_read(engine_, base, pages_[slot].bytes, kPage) != UC_ERR_OK)
    return uc_mem_read(engine_, address, out, size) == UC_ERR_OK;  // part of the page is unmapped: read the word
  pages_[slot].base = base;
  std::memcpy(out, pages_[slot].bytes + (address - base), size);
  return true;
}

unwind::UnwindResult GuestStacks::walk(std::uint64_t trap_pc, std::span<unwind::StackFrame> out) noexcept {
  const auto started = std::chrono::steady_clock::now();
  memory_.forget();
  for (auto& value : register_values_) value = 0;
  uc_reg_read_batch(engine_, register_ids_.data(), register_pointers_.data(), static_cast<int>(register_ids_.size()));
  unwind::RegisterSet registers;
  for (std::size_t i = 0; i < register_ids_.size(); ++i) registers.set(register_dwarf_[i], register_values_[i]);
  // Frame 0 is the address the syscall returns to (see unwinder.h).
  // In the alternate instruction set (Thumb) the trap may be shorter.
  std::uint64_t trap_length = arch_.syscall_abi.trap_length;
  if (const auto* alternate = arch_.alternate_isa; alternate && alternate->trap_length) {
    std::uint64_t state = 0;
    if (uc_reg_read(engine_, alternate->uc_register, &state) == UC_ERR_OK && (state & alternate->mask))
      trap_length = alternate->trap_length;
  }
  registers.set(config_.pc_register, trap_pc + trap_length);
  const auto result = unwinder_.unwind(registers, memory_, method_, unwind::FirstFrame::kAfterTrap, out);
  ++stats_.stacks;
  stats_.frames += result.depth;
  stats_.nanoseconds += static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - started).count());
  return result;
}

std::size_t GuestStacks::capture(std::uint64_t trap_pc, std::span<std::uint64_t> out) noexcept {
  const std::size_t limit = std::min(out.size(), frames_.size());
  const auto result = walk(trap_pc, std::span(frames_.data(), limit));
  for (std::size_t i = 0; i < result.depth; ++i) out[i] = frames_[i].pc;
  return result.depth;
}

}  // namespace tracecorn::core
