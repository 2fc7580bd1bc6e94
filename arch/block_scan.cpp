// Role: see block_scan.h (one instruction found in a translated block).
#include "arch/block_scan.h"

#include <vector>

namespace tracecorn::arch {

std::uint64_t find_instruction_in_block(uc_engine* engine, csh capstone, std::uint64_t start, std::size_t max_bytes,
                                        std::size_t min_bytes, std::uint64_t unreadable,
                                        const std::function<bool(const cs_insn&)>& matches) {
  std::vector<std::uint8_t> code(max_bytes);
  std::size_t size = max_bytes;
  while (size >= min_bytes && size > 0 && uc_mem_read(engine, start, code.data(), size) != UC_ERR_OK) size /= 2;
  if (size < min_bytes || size == 0) return unreadable;  // the block itself is not readable
  const std::uint8_t* cursor = code.data();
  std::uint64_t address = start;
  cs_insn* insn = cs_malloc(capstone);
  std::uint64_t found = start;
  for (int count = 0; count < 64 && cs_disasm_iter(capstone, &cursor, &size, &address, insn); ++count) {
    if (matches(*insn)) {
      found = insn->address;
      break;
    }
    if (cs_insn_group(capstone, insn, CS_GRP_JUMP) || cs_insn_group(capstone, insn, CS_GRP_CALL) ||
        cs_insn_group(capstone, insn, CS_GRP_RET))
      break;  // a block ends here
  }
  cs_free(insn, 1);
  return found;
}

}  // namespace tracecorn::arch
