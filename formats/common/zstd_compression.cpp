// Role: sets a writer's zstd level and worker threads on a compression context.
// Threads: the writer's.
#include "formats/common/zstd_compression.h"

#include <zstd.h>

namespace tracecorn::formats {

int default_zstd_level(bool per_instruction_registers) { return per_instruction_registers ? 1 : 3; }

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
