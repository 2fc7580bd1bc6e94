// Role: UCIR's entry in the format registry (formats/registry.h): detection by
// the magic "UCIR", what UCIR carries, the FormatReader adapter over
// UcirReader, and the writer built from a WriterRequest.
#include <cstring>

#include <fmt/format.h>

#include "formats/registry.h"
#include "formats/ucir/ucir_reader.h"
#include "formats/ucir/ucir_writer.h"

namespace tracecorn::formats {
namespace {

class UcirAdapter final : public FormatReader {
 public:
  explicit UcirAdapter(std::unique_ptr<UcirReader> reader) : reader_(std::move(reader)) {}
  const arch::ArchInfo& arch() const override { return reader_->arch(); }
  const events::TraceInfo& info() const override { return reader_->info(); }
  std::string describe() const override {
    const auto& header = reader_->header();
    const auto& info = reader_->info();
    std::string text = fmt::format("# UCIR version {}, arch {}, os {}{}{}, pid {}; initial state: {} regions, {} registers\n",
                                   header.version, header.arch, header.os, header.zstd ? ", zstd" : "",
                                   header.usercorn_flavour ? ", usercorn's flavour (snappy)" : "", info.process_id,
                                   info.initial_memory.size(), info.initial_registers.size());
    for (const auto& region : info.initial_memory)
      text += fmt::format("#   map {:#x}-{:#x} prot {} {}{}\n", region.start.value, region.start.value + region.size,
                          region.prot, region.name,
                          region.file.empty() ? "" : fmt::format(" (file {} offset {:#x}, {:#x} bytes)", region.file,
                                                                 region.file_offset, region.file_size));
    return text;
  }
  Expected<bool> next(const EventCallback& on_event) override { return reader_->next(on_event); }
  std::string warning() const override { return reader_->warning(); }
  bool interrupted() const override { return reader_->interrupted(); }
  std::uint64_t bytes_read() const override { return reader_->file_bytes_read(); }

 private:
  std::unique_ptr<UcirReader> reader_;
};

bool detect_ucir(std::span<const std::uint8_t> head) {
  return head.size() >= 4 && std::memcmp(head.data(), "UCIR", 4) == 0;
}

const Capabilities& ucir_capabilities() {
  // Built once from the reader's own can_carry(); immutable after.
  static const Capabilities caps = [] {
    Capabilities c = capabilities_of_kinds(&UcirReader::can_carry);
    c.initial_memory = c.initial_registers = true;
    c.memory_read_values = false;  // not recorded: rebuilt from the reader's image (see cannot_carry)
    c.exit_code = true;            // the first argument of the last exit/exit_group
    c.syscall_effects = true;
    c.syscall_pc = true;  // not at blocks level (no OP_STEP): the block's address
    c.cannot_carry.push_back("memory read values (rebuilt from the written bytes: exact only at levels mem and full)");
    c.cannot_carry.push_back("an exit status (taken from the last exit syscall's argument)");
    return c;
  }();
  return caps;
}

Expected<std::unique_ptr<FormatReader>> open_ucir_reader(const std::string& path) {
  auto reader = UcirReader::open(path);
  if (!reader) return reader.error();
  return std::unique_ptr<FormatReader>(new UcirAdapter(std::move(*reader)));
}

Expected<std::unique_ptr<events::Sink>> open_ucir_writer(WriterRequest& request) {
  UcirWriterOptions options;
  options.compress_zstd = request.compress_zstd;
  options.zstd = request.zstd;
  options.strict = request.ucir_strict;
  auto writer = UcirWriter::open(request.path, *request.arch, options);
  if (!writer) return writer.error();
  return std::unique_ptr<events::Sink>(std::move(*writer));
}

}  // namespace

const FormatDescriptor& ucir_format() {
  static const FormatDescriptor format{.name = "ucir",
                                       .readable = TraceFormat::kUcir,
                                       .binary_name = "UCIR",
                                       .compressible = true,
                                       .needs_registers = false,
                                       .detect = &detect_ucir,
                                       .capabilities = &ucir_capabilities,
                                       .open_reader = &open_ucir_reader,
                                       .open_writer = &open_ucir_writer,
                                       .explain_missing = nullptr};
  return format;
}

}  // namespace tracecorn::formats
