// Role: implementation of MachineDescription, SparseMemory and MachineState (see bintrace_state.h).
#include "formats/bintrace/bintrace_state.h"

#include <algorithm>

#include "formats/bintrace/bintrace_layout.h"

namespace tracecorn::formats::bintrace {

void MachineDescription::index() {
  register_slots_.assign(65536, -1);
  for (std::size_t i = 0; i < registers.size(); ++i) register_slots_[registers[i].id] = static_cast<std::int32_t>(i);
  operation_slots_.fill(-1);
  for (std::size_t i = 0; i < operations.size(); ++i) operation_slots_[operations[i].id] = static_cast<std::int16_t>(i);
}

int MachineDescription::find_register(std::string_view name) const {
  for (std::size_t i = 0; i < registers.size(); ++i)
    if (registers[i].name == name) return static_cast<int>(i);
  return -1;
}

bool MachineDescription::covers(std::uint64_t address, std::uint64_t size) const {
  // Regions are ascending and disjoint (the reader checks it; the writer merges them).
  auto it = std::upper_bound(regions.begin(), regions.end(), address,
                             [](std::uint64_t value, const MemoryRegion& region) { return value < region.start; });
  if (it == regions.begin()) return false;
  --it;
  const std::uint64_t offset = address - it->start;
  return offset < it->size && size <= it->size - offset;
}

SparseMemory::Page* SparseMemory::page_for_write(std::uint64_t number) {
  if (number == cached_number_) return cached_page_;
  auto& slot = pages_[number];
  if (!slot) {
    slot = std::make_unique<Page>();
    slot->fill(0);
  }
  cached_number_ = number;
  cached_page_ = slot.get();
  return cached_page_;
}

const SparseMemory::Page* SparseMemory::page(std::uint64_t number) const {
  if (number == cached_number_) return cached_page_;
  const auto it = pages_.find(number);
  return it == pages_.end() ? nullptr : it->second.get();
}

void SparseMemory::write(std::uint64_t address, std::span<const std::uint8_t> bytes) {
  while (!bytes.empty()) {
    const std::uint64_t offset = address % kPageBytes;
    const std::size_t chunk = static_cast<std::size_t>(std::min<std::uint64_t>(bytes.size(), kPageBytes - offset));
    Page* target = nullptr;
    if (std::any_of(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(chunk), [](std::uint8_t b) { return b; }))
      target = page_for_write(address / kPageBytes);
    else if (auto it = pages_.find(address / kPageBytes); it != pages_.end())
      target = it->second.get();  // zeros into a page that exists; a missing page already reads as zero
    if (target) std::copy_n(bytes.begin(), chunk, target->begin() + static_cast<std::ptrdiff_t>(offset));
    bytes = bytes.subspan(chunk);
    address += chunk;
  }
}

void SparseMemory::read(std::uint64_t address, std::span<std::uint8_t> out) const {
  while (!out.empty()) {
    const std::uint64_t offset = address % kPageBytes;
    const std::size_t chunk = static_cast<std::size_t>(std::min<std::uint64_t>(out.size(), kPageBytes - offset));
    if (const Page* source = page(address / kPageBytes))
      std::copy_n(source->begin() + static_cast<std::ptrdiff_t>(offset), chunk, out.begin());
    else
      std::fill_n(out.begin(), chunk, std::uint8_t{0});
    out = out.subspan(chunk);
    address += chunk;
  }
}

std::vector<std::uint64_t> SparseMemory::page_numbers() const {
  std::vector<std::uint64_t> numbers;
  numbers.reserve(pages_.size());
  for (const auto& entry : pages_) numbers.push_back(entry.first);
  return numbers;
}

MachineState::MachineState(const MachineDescription& description) {
  values_.reserve(description.registers.size());
  for (const auto& reg : description.registers) values_.emplace_back(reg.size, std::uint8_t{0});
}

void MachineState::set(std::size_t slot, std::span<const std::uint8_t> bytes) {
  auto& value = values_[slot];
  const std::size_t count = std::min(value.size(), bytes.size());
  std::copy_n(bytes.begin(), count, value.begin());
  std::fill(value.begin() + static_cast<std::ptrdiff_t>(count), value.end(), std::uint8_t{0});
}

void MachineState::apply(const OperationDeclaration& operation, std::size_t target_slot) {
  auto& value = values_[target_slot];
  const std::size_t count = std::min(value.size(), operation.value.size());
  switch (operation.op) {
    case kSet:
      set(target_slot, operation.value);
      return;
    case kAdd: {
      unsigned carry = 0;
      for (std::size_t i = 0; i < count; ++i) {
        const unsigned sum = value[i] + operation.value[i] + carry;
        value[i] = static_cast<std::uint8_t>(sum);
        carry = sum >> 8;
      }
      return;
    }
    case kAnd:
      for (std::size_t i = 0; i < count; ++i) value[i] &= operation.value[i];
      return;
    case kOr:
      for (std::size_t i = 0; i < count; ++i) value[i] |= operation.value[i];
      return;
    default:
      return;  // the reader refuses unknown operators when it reads the description
  }
}

}  // namespace tracecorn::formats::bintrace
