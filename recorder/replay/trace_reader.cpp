// Role: implementation of TraceReader (see trace_reader.h) over the format
// registry's readers (formats/registry.h).
#include "recorder/replay/trace_reader.h"

#include <sys/stat.h>

#include "formats/common/read_all.h"
#include "recorder/replay/read_ahead.h"

namespace tracecorn::replay {

std::string_view trace_format_name(TraceFormat format) { return formats::format_name(format); }

const Capabilities& TraceReader::capabilities(TraceFormat format) { return formats::descriptor(format).capabilities(); }

bool TraceReader::detect(std::span<const std::uint8_t> head, TraceFormat& format) {
  const formats::FormatDescriptor* found = formats::detect_format(head);
  if (found) format = *found->readable;
  return found != nullptr;
}

Expected<std::unique_ptr<TraceReader>> TraceReader::open(const std::string& path) {
  auto opened = formats::open_trace(path);
  if (!opened) return opened.error();
  return std::make_unique<TraceReader>(opened->format, path, std::move(opened->reader));
}

TraceReader::~TraceReader() = default;

Expected<bool> TraceReader::next(const EventCallback& on_event) {
  auto more = reader_->next([&](const events::Event& event) {
    ++produced_;
    on_event(event);
  });
  if (progress_) {
    if (more && *more) progress_->update(produced_, bytes_read());
    else progress_.reset();  // the end, or an error about to be printed: erase the line first
  }
  return more;
}

Status TraceReader::check_complete() const {
  const std::string why = ended_early();
  if (why.empty()) return ok_status();
  return make_error(ErrorCode::kBadFormat, "the file ends early: " + why, path_);
}

void TraceReader::show_progress(std::string what) {
  struct stat status {};
  const std::uint64_t size = ::stat(path_.c_str(), &status) == 0 ? static_cast<std::uint64_t>(status.st_size) : 0;
  auto progress = std::make_unique<Progress>(std::move(what), size);
  if (progress->active()) progress_ = std::move(progress);
}

Status TraceReader::read_all(events::Sink& sink) {
  // (The file is decoded on a thread of its own while the sink works: read_ahead.h.)
  return formats::read_all(*this, sink, path_, [&](const auto& on_event) {
    return read_ahead(*this, on_event, [] { return false; });
  });
}

}  // namespace tracecorn::replay
