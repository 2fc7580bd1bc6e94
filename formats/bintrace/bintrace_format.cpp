// Role: the binary trace's entry in the format registry (formats/registry.h):
// detection (BintraceReader::recognizes), what a binary trace carries, the
// FormatReader adapter over BintraceReader (which reads the declared regions'
// bytes before the first event), the writer built from a WriterRequest (its
// metadata names tracecorn's version, TRACECORN_VERSION), and what a missing
// file's spool means.
#include <unistd.h>

#include <fmt/format.h>

#include "formats/bintrace/bintrace_reader.h"
#include "formats/bintrace/bintrace_writer.h"
#include "formats/registry.h"

namespace tracecorn::formats {
namespace {

class BintraceAdapter final : public FormatReader {
 public:
  explicit BintraceAdapter(std::unique_ptr<BintraceReader> reader) : reader_(std::move(reader)) {
    // The declared regions come without bytes: read them before the first event.
    info_ = reader_->info();
    for (auto& region : info_.initial_memory) {
      region.bytes.resize(region.size);
      reader_->read_memory(region.start.value, region.bytes);
    }
  }
  const arch::ArchInfo& arch() const override { return reader_->arch(); }
  const events::TraceInfo& info() const override { return info_; }
  std::string describe() const override {
    const auto& meta = reader_->metadata();
    const auto& machine = reader_->machine();
    std::string text = fmt::format(
        "# binary trace {}{}, arch {}, {} events{}; {} regions, {} registers, {} operations\n",
        meta.present ? meta.format_version : "(no metadata)",
        meta.present ? fmt::format(" by {} {} ({})", meta.tool_name, meta.tool_version, meta.tool_info) : "",
        reader_->arch().name, reader_->event_count(), reader_->compression() ? ", zstd" : "", machine.regions.size(),
        machine.registers.size(), machine.operations.size());
    for (const auto& region : machine.regions)
      text += fmt::format("#   region {:#x}-{:#x}\n", region.start, region.start + region.size);
    for (const auto& reg : machine.statics)
      text += fmt::format("#   static {} = {}\n", reg.name, reg.value.empty() ? 0 : reg.value[0]);
    return text;
  }
  Expected<bool> next(const EventCallback& on_event) override { return reader_->next(on_event); }
  std::string warning() const override {
    if (!reader_->unrecognized_events()) return "";
    return fmt::format("{} other events with descriptions tracecorn does not know (their diffs were applied)",
                       reader_->unrecognized_events());
  }
  // A cut binary trace is an error (its sections' sizes are checked), never a warning.
  std::string ended_early() const override { return ""; }
  bool interrupted() const override { return reader_->interrupted(); }
  std::uint64_t bytes_read() const override { return reader_->file_bytes_read(); }

 private:
  std::unique_ptr<BintraceReader> reader_;
  events::TraceInfo info_;
};

const Capabilities& bintrace_capabilities() {
  static const Capabilities caps = [] {
    Capabilities c = capabilities_of_kinds(&BintraceReader::can_carry);
    c.initial_memory = c.initial_registers = true;
    c.exit_code = true;
    c.syscall_effects = true;
    c.syscall_pc = true;
    c.fault_events = true;
    c.cannot_carry.push_back("memory read values");
    return c;
  }();
  return caps;
}

Expected<std::unique_ptr<FormatReader>> open_bintrace_reader(const std::string& path) {
  auto reader = BintraceReader::open(path);
  if (!reader) return reader.error();
  return std::unique_ptr<FormatReader>(new BintraceAdapter(std::move(*reader)));
}

Expected<std::unique_ptr<events::Sink>> open_bintrace_writer(WriterRequest& request) {
  BintraceWriterOptions options;
  options.compress_zstd = request.compress_zstd;
  options.zstd = request.zstd;
  options.tool_version = TRACECORN_VERSION;
  auto writer = BintraceWriter::open(request.path, *request.arch, options);
  if (!writer) return writer.error();
  return std::unique_ptr<events::Sink>(std::move(*writer));
}

// A binary trace recording that was killed leaves only its events spool
// (bintrace_writer.h): say so rather than just "not found".
std::string explain_missing_bintrace(const std::string& path) {
  if (::access((path + ".events.part").c_str(), F_OK) != 0) return "";
  return "not found, but " + path + ".events.part is: the events spool of a binary trace recording "
         "that never finished (killed?); a binary trace is written whole when the recording ends: "
         "`tracecorn recover " + path + "` rebuilds it from the spool's complete events";
}

}  // namespace

const FormatDescriptor& bintrace_format() {
  static const FormatDescriptor format{.name = "bintrace",
                                       .readable = TraceFormat::kBintrace,
                                       .binary_name = "a binary trace",
                                       .compressible = true,
                                       .needs_registers = true,
                                       .detect = &BintraceReader::recognizes,
                                       .capabilities = &bintrace_capabilities,
                                       .open_reader = &open_bintrace_reader,
                                       .open_writer = &open_bintrace_writer,
                                       .explain_missing = &explain_missing_bintrace};
  return format;
}

}  // namespace tracecorn::formats
