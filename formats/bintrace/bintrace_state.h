// Role: what a binary trace declares (MachineDescription) and the machine state
// it describes at one event (MachineState: every declared register and the
// memory), shared by BintraceWriter (which keeps the state to choose register
// operations and to zero memory that a new mapping replaces) and BintraceReader
// (which gives the state at any event).
// Who calls it: the writer on the drain thread, a reader on its own thread; not
// thread safe, one instance per writer or reader.
// Invariants: MachineState holds one value per declared register, of the
// declared size; memory never written reads as zero; an operation applies
// `reg = reg OP value` byte-wise (ADD with carry, little endian).
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace tracecorn::formats::bintrace {

struct MemoryRegion {
  std::uint64_t start = 0;
  std::uint64_t size = 0;
  friend bool operator==(const MemoryRegion&, const MemoryRegion&) = default;
};

struct RegisterDeclaration {
  std::uint16_t id = 0;
  std::uint16_t size = 0;
  std::string name;
};

struct OperationDeclaration {
  std::uint8_t id = 0;
  std::uint16_t target_id = 0;
  std::uint8_t op = 0;  // bintrace::Operator
  std::vector<std::uint8_t> value;  // the target's size
};

struct StaticRegister {
  std::string name;
  std::vector<std::uint8_t> value;
};

struct MachineDescription {
  std::uint32_t magic = 0;
  std::uint8_t physical_address_size = 0;
  std::vector<MemoryRegion> regions;
  std::vector<RegisterDeclaration> registers;  // in declaration order
  std::vector<OperationDeclaration> operations;
  std::vector<StaticRegister> statics;

  // Rebuilds the id lookups below from `registers` and `operations`.
  void index();
  // The position in `registers` of register `id`, or -1.
  int register_slot(std::uint16_t id) const { return register_slots_.empty() ? -1 : register_slots_[id]; }
  // The position in `operations` of operation `id`, or -1.
  int operation_slot(std::uint16_t id) const { return id < 256 ? operation_slots_[id] : -1; }
  // The position in `registers` of the register named `name`, or -1.
  int find_register(std::string_view name) const;
  // Whether [address, address + size) lies inside one declared region
  // (`regions` ascending and disjoint).
  bool covers(std::uint64_t address, std::uint64_t size) const;

 private:
  std::vector<std::int32_t> register_slots_;  // 65536 entries once indexed
  std::array<std::int16_t, 256> operation_slots_{};
};

// Memory as 4 KiB pages created on first write; unwritten bytes are zero.
class SparseMemory {
 public:
  static constexpr std::uint64_t kPageBytes = 4096;
  void write(std::uint64_t address, std::span<const std::uint8_t> bytes);
  void read(std::uint64_t address, std::span<std::uint8_t> out) const;
  // Calls on_run(address, length) for each run of non-zero bytes inside
  // [start, start + length), by address.
  template <typename OnRun>
  void for_each_nonzero_run(std::uint64_t start, std::uint64_t length, OnRun on_run) const;
  std::size_t page_count() const { return pages_.size(); }
  // Page numbers that exist (unordered).
  std::vector<std::uint64_t> page_numbers() const;

 private:
  using Page = std::array<std::uint8_t, kPageBytes>;
  Page* page_for_write(std::uint64_t number);
  const Page* page(std::uint64_t number) const;
  std::unordered_map<std::uint64_t, std::unique_ptr<Page>> pages_;
  std::uint64_t cached_number_ = ~0ull;  // the last page written (one-entry cache)
  Page* cached_page_ = nullptr;
};

class MachineState {
 public:
  // One zeroed value per declared register.
  explicit MachineState(const MachineDescription& description);
  std::span<const std::uint8_t> value(std::size_t slot) const { return values_[slot]; }
  std::span<std::uint8_t> value(std::size_t slot) { return values_[slot]; }
  // Sets register `slot` (bytes beyond the declared size are ignored; missing ones are zero).
  void set(std::size_t slot, std::span<const std::uint8_t> bytes);
  // Applies operation `operation` to its target (whose slot is `target_slot`).
  void apply(const OperationDeclaration& operation, std::size_t target_slot);
  std::size_t register_count() const { return values_.size(); }
  SparseMemory& memory() { return memory_; }
  const SparseMemory& memory() const { return memory_; }

 private:
  std::vector<std::vector<std::uint8_t>> values_;
  SparseMemory memory_;
};

// Reads a little-endian number of `bytes` (at most 8) bytes. Inline: the
// writer reads the pc's old and new values at every instruction.
inline std::uint64_t read_le(std::span<const std::uint8_t> bytes) {
  std::uint64_t value = 0;
  const std::size_t count = std::min<std::size_t>(bytes.size(), 8);
  if constexpr (std::endian::native == std::endian::little) {
    if (count) std::memcpy(&value, bytes.data(), count);
  } else {
    for (std::size_t i = count; i-- > 0;) value = value << 8 | bytes[i];
  }
  return value;
}

template <typename OnRun>
void SparseMemory::for_each_nonzero_run(std::uint64_t start, std::uint64_t length, OnRun on_run) const {
  if (length == 0) return;
  const std::uint64_t end = start + length < start ? ~0ull : start + length;
  // Visit only pages that exist, in address order.
  std::vector<std::uint64_t> numbers;
  const std::uint64_t first = start / kPageBytes, last = (end - 1) / kPageBytes;
  if (last - first < pages_.size()) {
    for (std::uint64_t n = first; n <= last; ++n)
      if (pages_.count(n)) numbers.push_back(n);
  } else {
    for (const auto& [n, p] : pages_)
      if (n >= first && n <= last) numbers.push_back(n);
    std::sort(numbers.begin(), numbers.end());
  }
  std::uint64_t run_start = 0, run_length = 0;
  for (const std::uint64_t n : numbers) {
    const Page& bytes = *pages_.at(n);
    const std::uint64_t base = n * kPageBytes;
    const std::uint64_t from = std::max(start, base), to = std::min(end, base + kPageBytes);
    for (std::uint64_t at = from; at < to; ++at) {
      if (bytes[at - base] != 0) {
        if (run_length && run_start + run_length == at) {
          ++run_length;
        } else {
          if (run_length) on_run(run_start, run_length);
          run_start = at;
          run_length = 1;
        }
      }
    }
  }
  if (run_length) on_run(run_start, run_length);
}

}  // namespace tracecorn::formats::bintrace
