// Role: implementation of the format registry (see registry.h): the list of
// descriptors, detection by content, opening a trace, and the one writer
// factory's checks shared by every format (a binary format to a terminal,
// compression the format lacks). The null format (formats/null) is here: it
// has nothing but a writer.
#include "formats/registry.h"

#include <unistd.h>

#include <array>

#include <fmt/format.h>

#include "formats/common/byte_stream.h"
#include "formats/null/null_sink.h"

namespace tracecorn::formats {
namespace {

Expected<std::unique_ptr<events::Sink>> open_null_writer(WriterRequest&) {
  return std::unique_ptr<events::Sink>(std::make_unique<NullSink>());
}

}  // namespace

const FormatDescriptor& null_format() {
  static const FormatDescriptor format{.name = "null", .open_writer = &open_null_writer};
  return format;
}

Capabilities capabilities_of_kinds(bool (*carries)(events::EventKind)) {
  using events::EventKind;
  Capabilities caps;
  for (int k = static_cast<int>(EventKind::kBlock); k < static_cast<int>(events::kEventKindCount); ++k) {
    caps.kinds[k] = carries(static_cast<EventKind>(k));
    if (!caps.kinds[k])
      caps.cannot_carry.push_back(std::string(events::event_kind_name(static_cast<EventKind>(k))) + " events");
  }
  return caps;
}

std::span<const FormatDescriptor> all_formats() {
  // Copies of the descriptors, made once; readable formats first, in TraceFormat order.
  static const std::array<FormatDescriptor, 8> formats = {ucir_format(),  frames_format(), bintrace_format(),
                                                          text_format(),  null_format(),   drcov_format(),
                                                          chrome_format(), tenet_format()};
  return formats;
}

const FormatDescriptor& descriptor(TraceFormat format) { return all_formats()[static_cast<std::size_t>(format)]; }

const FormatDescriptor* find_format(std::string_view name) {
  for (const auto& format : all_formats())
    if (format.name == name) return &format;
  return nullptr;
}

std::string_view format_name(TraceFormat format) { return descriptor(format).name; }

const FormatDescriptor* detect_format(std::span<const std::uint8_t> head) {
  // BAP frames and binary traces first: their magics are longer than UCIR's four bytes.
  for (const TraceFormat format : {TraceFormat::kFrames, TraceFormat::kBintrace, TraceFormat::kUcir})
    if (descriptor(format).detect(head)) return &descriptor(format);
  return nullptr;
}

Expected<OpenedTrace> open_trace(const std::string& path) {
  // Let the file's own problems (missing, unreadable) speak first.
  auto source = open_file_source(path);
  if (!source) {
    if (source.error().code == ErrorCode::kNotFound)
      for (const auto& format : all_formats())
        if (format.explain_missing)
          if (std::string why = format.explain_missing(path); !why.empty())
            return make_error(ErrorCode::kNotFound, std::move(why), path);
    return source.error();
  }
  source->reset();
  const auto head = read_head(path, 16);
  const FormatDescriptor* format = detect_format(head);
  if (!format) {
    std::string bytes;
    for (const std::uint8_t b : head) bytes += fmt::format(" {:02x}", b);
    return make_error(ErrorCode::kBadFormat,
                      head.empty() ? std::string("empty file: not a trace")
                                   : "not a trace: not a UCIR file, nor BAP frames, nor a binary trace (first bytes" +
                                         bytes + ")",
                      path, 0);
  }
  auto reader = format->open_reader(path);
  if (!reader) return reader.error();
  return OpenedTrace{*format->readable, std::move(*reader)};
}

Expected<std::unique_ptr<events::Sink>> open_writer(std::string_view name, WriterRequest request) {
  const FormatDescriptor* format = find_format(name);
  if (!format || !format->open_writer)
    return make_error(ErrorCode::kInvalidArgument, "unknown trace format \"" + std::string(name) + "\"");
  if (!request.arch) return make_error(ErrorCode::kInvalidArgument, "a writer needs an architecture", request.path);
  if (request.compress_zstd && !format->compressible)
    return make_error(ErrorCode::kInvalidArgument, "the " + std::string(name) + " format cannot be compressed",
                      request.path);
  if (!format->binary_name.empty() && request.path == "-" && ::isatty(STDOUT_FILENO))
    return make_error(ErrorCode::kInvalidArgument, std::string(format->binary_name) + " is binary: give -o FILE");
  return format->open_writer(request);
}

}  // namespace tracecorn::formats
