// Role: an architecture's syscall numbering as a constant lookup table, built at
// compile time from a list of {number, SyscallId} pairs. Used by the arch/
// files (x86_64.cpp, linux_generic.cpp, arm.cpp); pure, safe from any thread.
// Invariant: numbers at or above kMaxSyscallNumber are never in a table (the
// compile fails); every number not listed maps to SyscallId::unknown.
#pragma once

#include <array>
#include <cstdint>
#include <span>

#include "arch/linux_syscall_ids.h"

namespace tracecorn::arch {

struct SyscallNumber {
  std::uint16_t number;
  SyscallId id;
};

class SyscallTable {
 public:
  static constexpr std::uint16_t kMaxSyscallNumber = 512;

  constexpr explicit SyscallTable(std::span<const SyscallNumber> entries) {
    by_number_.fill(SyscallId::unknown);
    for (const auto& entry : entries) by_number_.at(entry.number) = entry.id;  // throws (compile error) past the end
  }

  // The neutral id of syscall `number`; SyscallId::unknown when not listed.
  constexpr SyscallId operator()(std::uint64_t number) const {
    return number < kMaxSyscallNumber ? by_number_[number] : SyscallId::unknown;
  }

 private:
  std::array<SyscallId, kMaxSyscallNumber> by_number_{};
};

}  // namespace tracecorn::arch
