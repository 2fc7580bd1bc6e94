// Role: how a writer compresses with zstd (its level and worker threads), and
// the one place that sets it on a zstd compression context (OutputFile, the
// binary trace's events spool).
// Threads: plain data; configure_zstd runs on the writer's thread.
// Invariants: with workers >= 1 the compressed bytes are the same for every
// worker count (zstd's multithreaded mode, as `zstd -T`), so a trace does not
// depend on the machine's cores; only 0 writes other, equally valid, bytes.
#pragma once

#include <string>

typedef struct ZSTD_CCtx_s ZSTD_CCtx;  // <zstd.h>'s compression context

namespace tracecorn::formats {

struct ZstdCompression {
  int level = 3;    // zstd's level, 1 (fastest) to 19; 0: not chosen (with_zstd_defaults)
  // Threads compressing beside the writer's own while it goes on (0: on the
  // writer's thread; kDefaultWorkers: not chosen). Each holds about 8 MiB at level 3.
  int workers = 0;
  static constexpr int kDefaultWorkers = -1;
};

// The level a trace is compressed at unless the user chose one: 1 for a
// trace with every instruction's registers (levels regs and full), whose
// stream it compresses with a quarter less CPU than level 3 for a file 2 to
// 5% larger; 3 for the others (blocks, insns, mem), whose file level 1 makes
// up to twice as large for no time saved (bench/README.md, format_speed).
int default_zstd_level(bool per_instruction_registers);

// The worker threads a trace is compressed with unless the user chose: the
// cores but one (1 to 8) for a trace with every instruction's registers, whose
// compression is most of the writing; none below, where the compressed stream
// is small and a worker only adds its hand-over to the run (blocks-level UCIR
// 0.37 s with one, 0.28 s without; bench/README.md, format_speed).
int default_zstd_workers(bool per_instruction_registers);

// `chosen` with its unchosen level (0) and workers (kDefaultWorkers) set to
// the defaults above for a trace of that kind.
ZstdCompression with_zstd_defaults(ZstdCompression chosen, bool per_instruction_registers);

// Sets `compression` on `context`: "" or why zstd refuses it (a level out of
// range, a libzstd built without threads).
std::string configure_zstd(ZSTD_CCtx* context, const ZstdCompression& compression);

}  // namespace tracecorn::formats
