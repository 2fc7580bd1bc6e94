// Role: sets a writer's zstd level and worker threads on a compression context.
// Threads: the writer's.
#include "formats/common/zstd_compression.h"

#include <zstd.h>

#include <algorithm>
#include <thread>

namespace tracecorn::formats {

int default_zstd_level(bool per_instruction_registers) { return per_instruction_registers ? 1 : 3; }

int default_zstd_workers(bool per_instruction_registers) {
  if (!per_instruction_registers) return 0;
  const int cores = static_cast<int>(std::thread::hardware_concurrency());
  return std::clamp(cores - 1, 1, 8);
}

ZstdCompression with_zstd_defaults(ZstdCompression chosen, bool per_instruction_registers) {
  if (chosen.level == 0) chosen.level = default_zstd_level(per_instruction_registers);
  if (chosen.workers == ZstdCompression::kDefaultWorkers) chosen.workers = default_zstd_workers(per_instruction_registers);
  return chosen;
}

std::string configure_zstd(ZSTD_CCtx* context, const ZstdCompression& compression) {
  if (const std::size_t status = ZSTD_CCtx_setParameter(context, ZSTD_c_compressionLevel, compression.level);
      ZSTD_isError(status))
    return "zstd refuses level " + std::to_string(compression.level) + ": " + ZSTD_getErrorName(status);
  if (const std::size_t status = ZSTD_CCtx_setParameter(context, ZSTD_c_nbWorkers, compression.workers);
      ZSTD_isError(status))
    return "zstd refuses " + std::to_string(compression.workers) + " worker threads: " + ZSTD_getErrorName(status);
  return "";
}

}  // namespace tracecorn::formats
