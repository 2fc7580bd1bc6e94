// Role: the text format's entry in the format registry (formats/registry.h):
// written only (`record --format text`; `dump` prints with the same writer),
// never read back; the request's address namer names syscall stacks.
#include "formats/registry.h"
#include "formats/text/text_writer.h"

namespace tracecorn::formats {
namespace {

Expected<std::unique_ptr<events::Sink>> open_text_writer(WriterRequest& request) {
  auto writer = TextWriter::open(request.path, *request.arch);
  if (!writer) return writer.error();
  if (request.address_namer) (*writer)->set_address_namer(std::move(request.address_namer));
  return std::unique_ptr<events::Sink>(std::move(*writer));
}

}  // namespace

const FormatDescriptor& text_format() {
  static const FormatDescriptor format{.name = "text", .open_writer = &open_text_writer};
  return format;
}

}  // namespace tracecorn::formats
