// Role: implementation of the recording of a caller's engine (see engine_recording.h).
#include "recorder/session/engine_recording.h"

#include <utility>

#include <fmt/format.h>

#include "formats/registry.h"

namespace tracecorn::session {
namespace {

Error invalid(std::string message) { return make_error(ErrorCode::kInvalidArgument, std::move(message)); }

// Whether `format` is a writable format of the registry that can carry `level`.
Status check_format(std::string_view format, core::TraceLevel level) {
  const formats::FormatDescriptor* descriptor = formats::find_format(format);
  if (!descriptor) return invalid(fmt::format("unknown format '{}'", format));
  if (descriptor->needs_registers && !core::level_has_registers(level))
    return invalid(fmt::format("format '{}' needs per-instruction registers: level regs or full", format));
  return ok_status();
}

// Checks what attach() can check before anything is opened.
Status check_options(uc_engine* engine, const EngineRecordingOptions& options, const arch::ArchInfo*& arch) {
  if (!engine) return invalid("no engine");
  arch = arch::find_arch(options.arch);
  if (!arch) return invalid(fmt::format("unknown architecture '{}' (known: {})", options.arch, arch::arch_names()));
  if (std::string mismatch = arch::engine_mismatch(engine, *arch); !mismatch.empty()) return invalid(mismatch);
  if (options.code_range && options.code_range->end <= options.code_range->start)
    return invalid("empty code range (its end must be above its start)");
  const bool flight = options.policy == core::RingPolicy::kFlightRecorder;
  if (flight && !options.path.empty())
    return invalid("a flight recorder writes its events only when dumped: give no output, call dump()");
  if (!flight && options.path.empty()) return invalid("no output file (a lossless recording writes one)");
  return ok_status();
}

}  // namespace

Expected<std::unique_ptr<events::Sink>> open_trace_writer(const arch::ArchInfo& arch, std::string_view format,
                                                          const std::string& path, bool compress_zstd,
                                                          formats::ZstdCompression zstd, core::TraceLevel level,
                                                          const std::string& program) {
  if (auto valid = check_format(format, level); !valid) return valid.error();
  formats::WriterRequest request;
  request.path = path;
  request.arch = &arch;
  request.compress_zstd = compress_zstd;
  request.zstd = formats::with_zstd_defaults(zstd, core::level_has_registers(level));
  request.program = program;
  return formats::open_writer(format, std::move(request));
}

Expected<std::unique_ptr<EngineRecording>> EngineRecording::attach(uc_engine* engine,
                                                                   const EngineRecordingOptions& options) {
  const arch::ArchInfo* arch = nullptr;
  if (auto valid = check_options(engine, options, arch); !valid) return valid.error();
  std::unique_ptr<EngineRecording> recording(new EngineRecording());
  recording->arch_ = arch;
  recording->level_ = options.level;
  recording->flight_recorder_ = options.policy == core::RingPolicy::kFlightRecorder;
  std::vector<events::Sink*> sinks;
  if (!recording->flight_recorder_) {
    auto writer = open_trace_writer(*arch, options.format, options.path, options.compress_zstd, options.zstd,
                                    options.level, options.program);
    if (!writer) return writer.error();
    recording->writer_ = std::move(*writer);
    sinks.push_back(recording->writer_.get());
  }
  core::RecorderOptions recorder_options;
  recorder_options.level = options.level;
  recorder_options.policy = options.policy;
  recorder_options.ring_bytes = options.ring_bytes;
  recorder_options.code_range = options.code_range;
  events::TraceInfo info;
  info.program = options.program;
  auto recorder = core::Recorder::attach(engine, *arch, recorder_options, std::move(sinks), std::move(info));
  if (!recorder) return recorder.error();
  recording->recorder_ = std::move(*recorder);
  return recording;
}

EngineRecording::~EngineRecording() {
  if (recorder_) (void)finish();
}

Status EngineRecording::finish() {
  if (!finished_) {
    const std::string error = recorder_->finish();
    finished_ = error.empty() ? ok_status() : Status(make_error(ErrorCode::kIo, error));
  }
  return *finished_;
}

Status EngineRecording::dump(const std::string& path, std::string_view format, bool compress_zstd) {
  if (!flight_recorder_)
    return invalid("dump needs a flight recorder: a lossless recording writes every event to its file");
  auto writer = open_trace_writer(*arch_, format, path, compress_zstd, formats::ZstdCompression{0, 0}, level_, "");
  if (!writer) return writer.error();
  const std::string error = recorder_->dump(**writer);
  if (!error.empty()) return make_error(ErrorCode::kIo, error);
  return ok_status();
}

}  // namespace tracecorn::session
