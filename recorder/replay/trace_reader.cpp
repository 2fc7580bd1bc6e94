// Role: implementation of TraceReader (see trace_reader.h): one adapter per
// format reader, chosen by content, and the format capability tables.
#include "recorder/replay/trace_reader.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "formats/bap/bap_reader.h"
#include "formats/bintrace/bintrace_reader.h"
#include "formats/common/byte_stream.h"
#include "formats/ucir/ucir_reader.h"

namespace tracecorn::replay {
namespace {

using events::EventKind;

// The kinds `carries` accepts, as a Capabilities table, with the rest filled by `fill`.
template <typename Fill>
Capabilities make_capabilities(bool (*carries)(EventKind), Fill fill) {
  Capabilities caps;
  for (int k = static_cast<int>(EventKind::kBlock); k <= static_cast<int>(EventKind::kGap); ++k) {
    caps.kinds[k] = carries(static_cast<EventKind>(k));
    if (!caps.kinds[k]) caps.cannot_carry.push_back(std::string(events::event_kind_name(static_cast<EventKind>(k))) + " events");
  }
  fill(caps);
  return caps;
}

class UcirAdapter final : public TraceReader {
 public:
  UcirAdapter(std::unique_ptr<formats::UcirReader> reader, std::string path)
      : TraceReader(TraceFormat::kUcir, std::move(path)), reader_(std::move(reader)) {}
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
  std::string warning() const override { return reader_->warning(); }
  bool interrupted() const override { return reader_->interrupted(); }

 private:
  Expected<bool> next_record(const EventCallback& on_event) override { return reader_->next(on_event); }
  std::uint64_t bytes_read() const override { return reader_->file_bytes_read(); }
  std::unique_ptr<formats::UcirReader> reader_;
};

class FramesAdapter final : public TraceReader {
 public:
  FramesAdapter(std::unique_ptr<formats::FramesReader> reader, std::string path)
      : TraceReader(TraceFormat::kFrames, std::move(path)), reader_(std::move(reader)) {}
  const arch::ArchInfo& arch() const override { return reader_->arch(); }
  bool resolve_arch(const arch::ArchInfo& candidate) override { return reader_->resolve_arch(candidate); }
  const events::TraceInfo& info() const override { return reader_->info(); }
  std::string describe() const override {
    const auto& header = reader_->header();
    const auto& meta = reader_->meta();
    using Layout = formats::FramesHeader::TocLayout;
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
  std::string warning() const override { return reader_->warning(); }
  bool interrupted() const override { return reader_->interrupted(); }
  std::vector<std::string> environment() const override { return reader_->meta().target_envp; }

 private:
  Expected<bool> next_record(const EventCallback& on_event) override { return reader_->next(on_event); }
  std::uint64_t bytes_read() const override { return reader_->file_bytes_read(); }
  std::unique_ptr<formats::FramesReader> reader_;
};

class BintraceAdapter final : public TraceReader {
 public:
  BintraceAdapter(std::unique_ptr<formats::BintraceReader> reader, std::string path)
      : TraceReader(TraceFormat::kBintrace, std::move(path)), reader_(std::move(reader)) {
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
  std::string warning() const override {
    if (!reader_->unrecognized_events()) return "";
    return fmt::format("{} other events with descriptions tracecorn does not know (their diffs were applied)",
                       reader_->unrecognized_events());
  }
  // A cut binary trace is an error (its sections' sizes are checked), never a warning.
  std::string ended_early() const override { return ""; }
  bool interrupted() const override { return reader_->interrupted(); }

 private:
  Expected<bool> next_record(const EventCallback& on_event) override { return reader_->next(on_event); }
  std::uint64_t bytes_read() const override { return reader_->file_bytes_read(); }
  std::unique_ptr<formats::BintraceReader> reader_;
  events::TraceInfo info_;
};

}  // namespace

std::string_view trace_format_name(TraceFormat format) {
  switch (format) {
    case TraceFormat::kUcir: return "ucir";
    case TraceFormat::kFrames: return "frames";
    case TraceFormat::kBintrace: return "bintrace";
  }
  return "?";
}

const Capabilities& TraceReader::capabilities(TraceFormat format) {
  // Built once per call site from the readers' own can_carry(); immutable after.
  static const Capabilities ucir = make_capabilities(&formats::UcirReader::can_carry, [](Capabilities& c) {
    c.initial_memory = c.initial_registers = true;
    c.memory_read_values = false;  // not recorded: rebuilt from the reader's image (see cannot_carry)
    c.exit_code = true;           // the first argument of the last exit/exit_group
    c.syscall_effects = true;
    c.syscall_pc = true;  // not at blocks level (no OP_STEP): the block's address
    c.cannot_carry.push_back("memory read values (rebuilt from the written bytes: exact only at levels mem and full)");
    c.cannot_carry.push_back("an exit status (taken from the last exit syscall's argument)");
  });
  static const Capabilities frames = make_capabilities(&formats::FramesReader::can_carry, [](Capabilities& c) {
    c.initial_registers = true;
    c.memory_read_values = true;
    c.syscall_effects = true;  // our fields numbered from 1000
    c.syscall_pc = true;
    c.fault_events = true;
    c.cannot_carry.push_back("the initial memory (only what instructions read and write)");
  });
  static const Capabilities bintrace = make_capabilities(&formats::BintraceReader::can_carry, [](Capabilities& c) {
    c.initial_memory = c.initial_registers = true;
    c.exit_code = true;
    c.syscall_effects = true;
    c.syscall_pc = true;
    c.fault_events = true;
    c.cannot_carry.push_back("memory read values");
  });
  switch (format) {
    case TraceFormat::kUcir: return ucir;
    case TraceFormat::kFrames: return frames;
    case TraceFormat::kBintrace: return bintrace;
  }
  return ucir;
}

bool TraceReader::detect(std::span<const std::uint8_t> head, TraceFormat& format) {
  if (formats::FramesReader::recognizes(head)) {
    format = TraceFormat::kFrames;
    return true;
  }
  if (formats::BintraceReader::recognizes(head)) {
    format = TraceFormat::kBintrace;
    return true;
  }
  if (head.size() >= 4 && std::memcmp(head.data(), "UCIR", 4) == 0) {
    format = TraceFormat::kUcir;
    return true;
  }
  return false;
}

Expected<std::unique_ptr<TraceReader>> TraceReader::open(const std::string& path) {
  // Let the file's own problems (missing, unreadable) speak first.
  auto source = formats::open_file_source(path);
  if (!source) {
    // A binary trace recording that was killed leaves only its events spool
    // (formats/bintrace/bintrace_writer.h): say so rather than just "not found".
    if (source.error().code == ErrorCode::kNotFound && ::access((path + ".events.part").c_str(), F_OK) == 0)
      return make_error(ErrorCode::kNotFound,
                        "not found, but " + path + ".events.part is: the events spool of a binary trace recording "
                        "that never finished (killed?); a binary trace is written whole when the recording ends: "
                        "`tracecorn recover " + path + "` rebuilds it from the spool's complete events",
                        path);
    return source.error();
  }
  source->reset();
  const auto head = formats::read_head(path, 16);
  TraceFormat format{};
  if (!detect(head, format)) {
    std::string bytes;
    for (const std::uint8_t b : head) bytes += fmt::format(" {:02x}", b);
    return make_error(ErrorCode::kBadFormat,
                      head.empty() ? std::string("empty file: not a trace")
                                   : "not a trace: not a UCIR file, nor BAP frames, nor a binary trace (first bytes" + bytes + ")",
                      path, 0);
  }
  switch (format) {
    case TraceFormat::kUcir: {
      auto reader = formats::UcirReader::open(path);
      if (!reader) return reader.error();
      return std::unique_ptr<TraceReader>(new UcirAdapter(std::move(*reader), path));
    }
    case TraceFormat::kFrames: {
      auto reader = formats::FramesReader::open(path);
      if (!reader) return reader.error();
      return std::unique_ptr<TraceReader>(new FramesAdapter(std::move(*reader), path));
    }
    case TraceFormat::kBintrace: {
      auto reader = formats::BintraceReader::open(path);
      if (!reader) return reader.error();
      return std::unique_ptr<TraceReader>(new BintraceAdapter(std::move(*reader), path));
    }
  }
  return make_error(ErrorCode::kUnsupported, "unknown format", path);
}

Expected<bool> TraceReader::next(const EventCallback& on_event) {
  auto more = next_record([&](const events::Event& event) {
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
  sink.begin(info());
  events::TraceSummary summary;
  // Instructions: counted from the instruction events, or from the blocks when
  // the trace has none (UCIR at blocks level), as the recorder counts them.
  std::uint64_t from_instructions = 0, from_blocks = 0;
  for (;;) {
    auto more = next([&](const events::Event& event) {
      ++summary.events;
      if (event.kind == events::EventKind::kInstruction) ++from_instructions;
      if (event.kind == events::EventKind::kBlock)
        from_blocks += std::get<events::BlockEvent>(event.payload).instruction_count;
      if (event.kind == events::EventKind::kGap) summary.lost_events += std::get<events::GapEvent>(event.payload).lost_events;
      summary.instructions = from_instructions ? from_instructions : from_blocks;
      sink.on_event(event);
    });
    if (!more) {
      (void)sink.end(summary);
      return more.error();
    }
    if (!*more) break;
  }
  // The interruption note means a recording stopped by SIGINT or SIGTERM and
  // nothing else: a file that ends early is check_complete()'s error, never a
  // note that a writer would carry into a converted trace.
  summary.interrupted = interrupted();
  const std::string error = sink.end(summary);
  if (!error.empty()) return make_error(ErrorCode::kIo, error, path_);
  return ok_status();
}

}  // namespace tracecorn::replay
