// Role: names of the trace levels, as `--level` spells them.
#include "recorder/core/trace_level.h"

namespace tracecorn::core {

std::string_view trace_level_name(TraceLevel level) {
  switch (level) {
    case TraceLevel::kBlocks: return "blocks";
    case TraceLevel::kInstructions: return "insns";
    case TraceLevel::kMemory: return "mem";
    case TraceLevel::kRegisters: return "regs";
    case TraceLevel::kFull: return "full";
  }
  return "blocks";
}

std::optional<TraceLevel> parse_trace_level(std::string_view name) {
  for (TraceLevel level : {TraceLevel::kBlocks, TraceLevel::kInstructions, TraceLevel::kMemory, TraceLevel::kRegisters,
                           TraceLevel::kFull})
    if (trace_level_name(level) == name) return level;
  return std::nullopt;
}

}  // namespace tracecorn::core
