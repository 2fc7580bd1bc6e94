// Role: the list of supported architectures and lookups over it.
// Adding an architecture: add its accessor to kArchs. Nothing else changes.
#include "arch/arch.h"

namespace tracecorn::arch {

const RegisterInfo* ArchInfo::find_register(std::string_view register_name) const {
  for (const auto& reg : registers)
    if (reg.name == register_name) return &reg;
  return nullptr;
}

std::span<const ArchInfo* const> all_archs() {
  static const ArchInfo* const kArchs[] = {&x86_64_arch()};
  return kArchs;
}

const ArchInfo* find_arch_for_elf(std::uint16_t elf_machine, bool is_64bit, bool little_endian) {
  for (const ArchInfo* info : all_archs())
    if (info->elf_machine == elf_machine && info->elf_64bit == is_64bit &&
        info->little_endian == little_endian)
      return info;
  return nullptr;
}

}  // namespace tracecorn::arch
