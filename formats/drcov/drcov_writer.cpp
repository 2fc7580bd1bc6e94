// Role: implementation of the drcov exporter (see drcov_writer.h).
#include "formats/drcov/drcov_writer.h"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

namespace tracecorn::formats {

Expected<std::unique_ptr<DrcovWriter>> DrcovWriter::open(const std::string& path, std::uint64_t* blocks_written) {
  std::FILE* file = path == "-" ? stdout : std::fopen(path.c_str(), "wbe");
  if (!file) return make_error(ErrorCode::kIo, std::string("cannot open for writing: ") + std::strerror(errno), path);
  return std::unique_ptr<DrcovWriter>(new DrcovWriter(file, path, blocks_written));
}

DrcovWriter::~DrcovWriter() {
  if (file_ && file_ != stdout) std::fclose(file_);
}

void DrcovWriter::begin(const events::TraceInfo& info) {
  // For formats without module events: the initial regions backed by a file, merged per file.
  for (const auto& region : info.initial_memory) {
    if (region.file.empty()) continue;
    if (!file_regions_.empty() && file_regions_.back().path == region.file &&
        file_regions_.back().end == region.start.value)
      file_regions_.back().end = region.start.value + region.size;
    else
      file_regions_.push_back({region.start.value, region.start.value + region.size, region.file});
  }
}

void DrcovWriter::on_event(const events::Event& event) {
  if (event.kind == events::EventKind::kModuleLoad) {
    const auto& m = std::get<events::ModuleLoadEvent>(event.payload);
    modules_.push_back({m.start.value, m.end.value, std::string(m.path)});
  }
  tracker_.feed(event, [&](std::uint64_t start, std::uint64_t size) { blocks_.insert({start, size}); });
}

void DrcovWriter::write(const void* data, std::size_t size) {
  if (size) std::fwrite(data, 1, size, file_);  // an empty vector's data() may be null
}

std::string DrcovWriter::end(const events::TraceSummary&) {
  tracker_.close([&](std::uint64_t start, std::uint64_t size) { blocks_.insert({start, size}); });
  const std::vector<Module>& modules = modules_.empty() ? file_regions_ : modules_;
  std::vector<std::uint8_t> table;
  std::uint64_t count = 0;
  for (const auto& [start, size] : blocks_) {
    for (std::size_t id = 0; id < modules.size(); ++id) {
      if (start < modules[id].start || start >= modules[id].end) continue;
      const std::uint32_t offset = static_cast<std::uint32_t>(start - modules[id].start);
      const std::uint16_t length = static_cast<std::uint16_t>(std::min<std::uint64_t>(size, 0xffff));
      const std::uint16_t module = static_cast<std::uint16_t>(id);
      for (int i = 0; i < 4; ++i) table.push_back(static_cast<std::uint8_t>(offset >> (8 * i)));
      for (int i = 0; i < 2; ++i) table.push_back(static_cast<std::uint8_t>(length >> (8 * i)));
      for (int i = 0; i < 2; ++i) table.push_back(static_cast<std::uint8_t>(module >> (8 * i)));
      ++count;
      break;
    }
  }
  std::string text = fmt::format("DRCOV VERSION: 2\nDRCOV FLAVOR: drcov\nModule Table: version 2, count {}\n"
                                 "Columns: id, base, end, entry, checksum, timestamp, path\n",
                                 modules.size());
  for (std::size_t id = 0; id < modules.size(); ++id)
    text += fmt::format(" {}, {:#018x}, {:#018x}, 0x0000000000000000, 0x00000000, 0x00000000, {}\n", id,
                        modules[id].start, modules[id].end, modules[id].path);
  text += fmt::format("BB Table: {} bbs\n", count);
  write(text.data(), text.size());
  write(table.data(), table.size());
  if (blocks_written_) *blocks_written_ = count;
  const bool failed = std::ferror(file_) || (file_ != stdout ? std::fclose(file_) != 0 : std::fflush(file_) != 0);
  file_ = nullptr;
  return failed ? path_ + ": write failed" : "";
}

}  // namespace tracecorn::formats
