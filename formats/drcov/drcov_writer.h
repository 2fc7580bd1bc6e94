// Role: the drcov exporter, a write-only format: the coverage of a trace as
// DynamoRIO's drcov tool writes it (version 2, flavor drcov), for Lighthouse and
// other disassembler plugins (https://dynamorio.org/page_drcov.html):
//   "DRCOV VERSION: 2\n" "DRCOV FLAVOR: drcov\n"
//   "Module Table: version 2, count N\n"
//   "Columns: id, base, end, entry, checksum, timestamp, path\n"
//   N lines " id, 0xBASE, 0xEND, 0x0000000000000000, 0x00000000, 0x00000000, PATH\n"
//   "BB Table: M bbs\n"
//   M binary records (8 bytes, little endian): u32 start (offset from the
//   module's base), u16 size, u16 module id
// Blocks are the trace's blocks, or runs of consecutive instructions
// (formats/common/block_tracker.h); each block once; blocks outside every
// module are left out. Modules: the module load events, else the initial
// regions backed by a file, merged per file.
// Who calls it: the trace tools through the format registry's writer factory
// (formats/registry.h), as a Sink fed by a reader; one thread. Everything is
// written at end(), which returns the write error naming the file, if any.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "formats/common/block_tracker.h"
#include "recorder/events/event.h"
#include "recorder/support/expected.h"

namespace tracecorn::formats {

class DrcovWriter final : public events::Sink {
 public:
  // Opens `path` ("-" for stdout). Fails with kIo naming it. At end(), the
  // number of blocks written goes to `*blocks_written` when given.
  static Expected<std::unique_ptr<DrcovWriter>> open(const std::string& path, std::uint64_t* blocks_written = nullptr);
  ~DrcovWriter() override;
  DrcovWriter(const DrcovWriter&) = delete;
  DrcovWriter& operator=(const DrcovWriter&) = delete;

  void begin(const events::TraceInfo& info) override;
  void on_event(const events::Event& event) override;
  std::string end(const events::TraceSummary& summary) override;

 private:
  struct Module {
    std::uint64_t start, end;
    std::string path;
  };
  DrcovWriter(std::FILE* file, std::string path, std::uint64_t* blocks_written)
      : file_(file), path_(std::move(path)), blocks_written_(blocks_written) {}
  void write(const void* data, std::size_t size);

  std::FILE* file_;
  std::string path_;
  std::uint64_t* blocks_written_;
  std::vector<Module> modules_, file_regions_;  // from module events; from the initial regions
  std::set<std::pair<std::uint64_t, std::uint64_t>> blocks_;  // start, size
  BlockTracker tracker_;
};

}  // namespace tracecorn::formats
