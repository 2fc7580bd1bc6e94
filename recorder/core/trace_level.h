// Role: the recording levels (`--level`), from cheapest to richest.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace tracecorn::core {

enum class TraceLevel : std::uint8_t {
  kBlocks,        // blocks entered (one hook per block)
  kInstructions,  // every instruction, derived from its block
  kMemory,        // plus every memory access with its value
  kRegisters,     // plus register changes after every instruction (an instruction hook)
  kFull,          // everything: instructions, memory with exact pcs, registers
};

constexpr bool level_has_instructions(TraceLevel level) { return level != TraceLevel::kBlocks; }
constexpr bool level_has_memory(TraceLevel level) { return level == TraceLevel::kMemory || level == TraceLevel::kFull; }
constexpr bool level_has_registers(TraceLevel level) {
  return level == TraceLevel::kRegisters || level == TraceLevel::kFull;
}

std::string_view trace_level_name(TraceLevel level);
std::optional<TraceLevel> parse_trace_level(std::string_view name);

}  // namespace tracecorn::core
