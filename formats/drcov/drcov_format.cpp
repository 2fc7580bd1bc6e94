// Role: drcov's entry in the format registry (formats/registry.h): written
// only (`tracecorn convert IN OUT --format drcov`), never read back.
#include "formats/drcov/drcov_writer.h"
#include "formats/registry.h"

namespace tracecorn::formats {
namespace {

Expected<std::unique_ptr<events::Sink>> open_drcov_writer(WriterRequest& request) {
  auto writer = DrcovWriter::open(request.path, request.records_written);
  if (!writer) return writer.error();
  return std::unique_ptr<events::Sink>(std::move(*writer));
}

}  // namespace

const FormatDescriptor& drcov_format() {
  static const FormatDescriptor format{.name = "drcov", .open_writer = &open_drcov_writer};
  return format;
}

}  // namespace tracecorn::formats
