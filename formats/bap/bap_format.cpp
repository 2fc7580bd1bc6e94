// Role: BAP frames' entry in the format registry (formats/registry.h):
// detection (FramesReader::recognizes), what frames carry, the FormatReader
// adapter over FramesReader, and the writer built from a WriterRequest (its
// meta frame names tracecorn and its version, TRACECORN_VERSION).
#include <algorithm>

#include <fmt/format.h>

#include "formats/bap/bap_meta.h"
#include "formats/bap/bap_reader.h"
#include "formats/bap/bap_writer.h"
#include "formats/registry.h"

namespace tracecorn::formats {
namespace {

class FramesAdapter final : public FormatReader {
 public:
  explicit FramesAdapter(std::unique_ptr<FramesReader> reader) : reader_(std::move(reader)) {}
  const arch::ArchInfo& arch() const override { return reader_->arch(); }
  bool resolve_arch(const arch::ArchInfo& candidate) override { return reader_->resolve_arch(candidate); }
  const events::TraceInfo& info() const override { return reader_->info(); }
  std::string describe() const override {
    const auto& header = reader_->header();
    const auto& meta = reader_->meta();
    using Layout = FramesHeader::TocLayout;
    const std::string toc = header.toc_layout == Layout::kNone
                                ? std::string("none")
                                : fmt::format("{} entries of m = {}{}", header.toc.size(), header.frames_per_toc_entry,
                                              header.toc_layout == Layout::kLibtrace ? " (libtrace layout)" : "");
    std::string text =
        fmt::format("# BAP frames version {}, frame_architecture {}, frame_machine {} ({}){}; n = {}, T = {:#x}, TOC: {}\n",
                    header.version, header.architecture, header.machine, reader_->arch().name,
                    header.zstd ? ", zstd" : "", header.frame_count, header.toc_offset, toc);
    if (header.has_meta) {
      std::string md5;
      for (const std::uint8_t byte : meta.target_md5) md5 += fmt::format("{:02x}", byte);
      text += fmt::format(
          "# tracer {} {} ({} args, {} env); target {} ({} args, {} env), md5 {}, {} bytes; user {} host {} time {:.3f}\n",
          meta.tracer_name, meta.tracer_version, meta.tracer_args.size(), meta.tracer_envp.size(), meta.target_path,
          meta.target_args.size(), meta.target_envp.size(), md5, meta.target_size, meta.user, meta.host, meta.time);
    }
    text += fmt::format("# initial registers: {}\n", reader_->info().initial_registers.size());
    return text;
  }
  Expected<bool> next(const EventCallback& on_event) override { return reader_->next(on_event); }
  std::string warning() const override { return reader_->warning(); }
  bool interrupted() const override { return reader_->interrupted(); }
  std::uint32_t killed_by_signal() const override { return reader_->killed_by_signal(); }
  std::vector<std::string> environment() const override { return reader_->meta().target_envp; }
  std::uint64_t bytes_read() const override { return reader_->file_bytes_read(); }

 private:
  std::unique_ptr<FramesReader> reader_;
};

const Capabilities& frames_capabilities() {
  static const Capabilities caps = [] {
    Capabilities c = capabilities_of_kinds(&FramesReader::can_carry);
    c.initial_registers = true;
    c.memory_read_values = true;
    c.syscall_effects = true;  // our fields numbered from 1000
    c.syscall_pc = true;
    c.fault_events = true;
    c.cannot_carry.push_back("the initial memory (only what instructions read and write)");
    return c;
  }();
  return caps;
}

Expected<std::unique_ptr<FormatReader>> open_frames_reader(const std::string& path) {
  auto reader = FramesReader::open(path);
  if (!reader) return reader.error();
  return std::unique_ptr<FormatReader>(new FramesAdapter(std::move(*reader)));
}

Expected<std::unique_ptr<events::Sink>> open_frames_writer(WriterRequest& request) {
  FramesWriterOptions options;
  options.compress_zstd = request.compress_zstd;
  options.zstd = request.zstd;
  options.encoder_threads = static_cast<unsigned>(std::max(request.encoder_threads, 0));
  options.tracer_version = TRACECORN_VERSION;
  if (!request.program.empty()) {
    FramesMeta meta;
    meta.tracer_args = std::move(request.tracer_args);
    meta.tracer_envp = std::move(request.tracer_envp);
    meta.tracer_version = TRACECORN_VERSION;
    meta.target_path = std::move(request.program);
    meta.target_args = std::move(request.program_args);
    meta.target_envp = std::move(request.program_envp);
    (void)collect_host_meta(meta);  // what cannot be read stays empty: the trace is still useful
    options.meta = std::move(meta);
  }
  auto writer = FramesWriter::open(request.path, *request.arch, std::move(options));
  if (!writer) return writer.error();
  return std::unique_ptr<events::Sink>(std::move(*writer));
}

}  // namespace

const FormatDescriptor& frames_format() {
  // Not written to standard output: the writer patches its header at the end.
  static const FormatDescriptor format{.name = "frames",
                                       .readable = TraceFormat::kFrames,
                                       .binary_name = "",
                                       .compressible = true,
                                       .needs_registers = false,
                                       .detect = &FramesReader::recognizes,
                                       .capabilities = &frames_capabilities,
                                       .open_reader = &open_frames_reader,
                                       .open_writer = &open_frames_writer,
                                       .explain_missing = nullptr};
  return format;
}

}  // namespace tracecorn::formats
