// Role: the architecture-neutral part of derived registers (arch/derived_registers.h):
// asking the architecture's engine for a recipe, and checking a recipe against
// the registers Capstone says the instruction writes.
#include "arch/derived_registers.h"

#include "arch/arch_engine.h"

namespace tracecorn::arch {

bool describe_derived_writes(const ArchInfo& arch, const cs_insn& insn, DerivedWrites& out) {
  return arch.engine->describe_derived_writes && arch.engine->describe_derived_writes(arch, insn, out);
}

bool writes_exactly(DerivedWrites& recipe, const std::uint16_t* written, std::size_t count) {
  if (recipe.operation == DerivedOperation::kNone) return false;
  bool destination_seen = false, flags_seen = false;
  for (std::size_t i = 0; i < count; ++i) {
    if (recipe.stores_result && written[i] == recipe.destination && !destination_seen)
      destination_seen = true;
    else if (recipe.sets_flags && written[i] == recipe.flags_index && !flags_seen)
      flags_seen = true;
    else
      return false;
  }
  if (destination_seen != recipe.stores_result || flags_seen != recipe.sets_flags) return false;
  recipe.destination_first = recipe.stores_result && written[0] == recipe.destination;
  return true;
}

}  // namespace tracecorn::arch
