// Role: the session layer's recording of a uc_engine someone else owns (a
// fuzzing harness, a Python script driving python3-unicorn): a recorder
// attached to the engine, writing a trace file in any format of the registry
// (formats/registry.h), or, as a flight recorder, keeping the last events in
// its ring until dump() writes them in any format. Used by the Python package
// (recorder/python); options come as a struct, parsed by the caller.
// Threads: the caller's emulation thread (the one that runs uc_emu_start) for
// everything; the recorder's drain thread writes the trace file.
// Invariants: the engine outlives the recording; finish() (or destruction)
// removes every hook; a lossless recording's file holds every event once
// finish() returned ok.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <unicorn/unicorn.h>

#include "formats/common/zstd_compression.h"
#include "arch/arch_engine.h"
#include "recorder/core/recorder.h"

namespace tracecorn::session {

struct EngineRecordingOptions {
  std::string arch;                 // tracecorn's architecture name ("x86_64"); must be the engine's
  core::TraceLevel level = core::TraceLevel::kBlocks;
  core::RingPolicy policy = core::RingPolicy::kLossless;
  std::size_t ring_bytes = 64u << 20;
  std::optional<core::AddressRange> code_range;  // only code in [start, end) is recorded
  // The trace file (lossless only): a format of the registry ("ucir",
  // "frames", "bintrace", "text", "null"), its path, and zstd.
  std::string format = "ucir";
  std::string path;
  bool compress_zstd = false;
  formats::ZstdCompression zstd{0, 0};  // level 0: formats::default_zstd_level for `level`
  std::string program;              // what the trace says the program is ("" when none)
};

// The writer of `format` ("ucir", "frames", "bintrace", "text", "null") for
// `path`, as a recording at `level` fills it: kInvalidArgument for an unknown
// format or one that needs registers below the regs level, else the writer's
// own errors (kIo naming the file). A zstd level of 0 and workers of
// ZstdCompression::kDefaultWorkers pick the defaults for `level`
// (formats::with_zstd_defaults).
Expected<std::unique_ptr<events::Sink>> open_trace_writer(const arch::ArchInfo& arch, std::string_view format,
                                                          const std::string& path, bool compress_zstd,
                                                          formats::ZstdCompression zstd, core::TraceLevel level,
                                                          const std::string& program);

class EngineRecording {
 public:
  // Checks the options (kInvalidArgument naming the one at fault), opens the
  // trace file (the writer's kIo), and attaches the recorder.
  static Expected<std::unique_ptr<EngineRecording>> attach(uc_engine* engine, const EngineRecordingOptions& options);
  ~EngineRecording();
  EngineRecording(const EngineRecording&) = delete;
  EngineRecording& operator=(const EngineRecording&) = delete;

  core::Recorder& recorder() { return *recorder_; }
  const arch::ArchInfo& arch() const { return *arch_; }
  // Stops recording and closes the trace file; the file's error, naming it.
  // Idempotent: later calls return the first result.
  Status finish();
  // Flight recorder: writes the events the ring still holds (a gap first when
  // older ones were overwritten) to `path` in `format`. May be called several
  // times, before or after finish(). kInvalidArgument for a lossless
  // recording, whose events went to its file.
  Status dump(const std::string& path, std::string_view format, bool compress_zstd);
  core::RecorderStats stats() const { return recorder_->stats(); }

 private:
  EngineRecording() = default;

  const arch::ArchInfo* arch_ = nullptr;
  core::TraceLevel level_ = core::TraceLevel::kBlocks;
  bool flight_recorder_ = false;
  std::unique_ptr<events::Sink> writer_;     // the trace file (lossless); destroyed after the recorder
  std::unique_ptr<core::Recorder> recorder_;
  std::optional<Status> finished_;
};

}  // namespace tracecorn::session
