// Role: implementation of open_saved_index (saved_index.h).
#include "recorder/cli/saved_index.h"

#include <fmt/format.h>

namespace tracecorn::cli {

Expected<std::unique_ptr<replay::TraceIndex>> open_saved_index(replay::TraceReader& reader, const std::string& trace,
                                                               const std::string& command) {
  const std::string saved = trace + ".tcindex";
  auto identity = replay::identify_trace(trace);
  if (!identity) return identity.error();
  auto loaded = replay::TraceIndex::load(saved, *identity, reader.arch());
  if (loaded) {
    fmt::print(stderr, "{}: using the saved index {}\n", command, saved);
    return loaded;
  }
  if (loaded.error().code != ErrorCode::kNotFound)
    fmt::print(stderr, "{}: not using {}: {}; indexing the trace again\n", command, saved, loaded.error().message);
  reader.show_progress("index");
  auto index = replay::TraceIndex::build(reader);
  if (!index) return index.error();
  if (auto status = (*index)->save(saved, *identity); !status)
    fmt::print(stderr, "{}: the index is not saved: {}\n", command, status.error().to_string());
  return index;
}

}  // namespace tracecorn::cli
