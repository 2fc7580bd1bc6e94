// Role: the Tenet text trace export's entry in the format registry
// (formats/registry.h): written only (`tracecorn convert IN OUT --format
// tenet`), never read back.
#include "formats/registry.h"
#include "formats/tenet/tenet_writer.h"

namespace tracecorn::formats {
namespace {

Expected<std::unique_ptr<events::Sink>> open_tenet_writer(WriterRequest& request) {
  auto writer = TenetWriter::open(request.path, *request.arch, request.records_written);
  if (!writer) return writer.error();
  return std::unique_ptr<events::Sink>(std::move(*writer));
}

}  // namespace

const FormatDescriptor& tenet_format() {
  static const FormatDescriptor format{.name = "tenet", .open_writer = &open_tenet_writer};
  return format;
}

}  // namespace tracecorn::formats
