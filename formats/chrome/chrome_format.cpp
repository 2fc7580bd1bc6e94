// Role: the Chrome trace-event JSON export's entry in the format registry
// (formats/registry.h): written only (`tracecorn convert IN OUT --format
// chrome`), never read back.
#include "formats/chrome/chrome_writer.h"
#include "formats/registry.h"

namespace tracecorn::formats {
namespace {

Expected<std::unique_ptr<events::Sink>> open_chrome_writer(WriterRequest& request) {
  ChromeWriterOptions options;
  options.source_has_instructions = request.source_has_instructions;
  options.source_name = std::move(request.source_name);
  options.events_written = request.records_written;
  auto writer = ChromeWriter::open(request.path, std::move(options));
  if (!writer) return writer.error();
  return std::unique_ptr<events::Sink>(std::move(*writer));
}

}  // namespace

const FormatDescriptor& chrome_format() {
  static const FormatDescriptor format{.name = "chrome", .open_writer = &open_chrome_writer};
  return format;
}

}  // namespace tracecorn::formats
