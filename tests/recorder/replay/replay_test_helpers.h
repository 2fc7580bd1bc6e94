// Role: what the replay tests share: record a guest sample into a trace file of
// any format (and into probe sinks on the same recording), and temporary paths.
// Who calls it: doctest cases in tests/recorder/replay, on the test thread.
#pragma once

#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "formats/bap/bap_writer.h"
#include "formats/bintrace/bintrace_writer.h"
#include "formats/ucir/ucir_writer.h"
#include "recorder/replay/trace_reader.h"
#include "tests/formats/sample_recording.h"
#include "tests/support/error_text.h"

namespace tracecorn::test {

inline const std::string kReplaySamples = TRACECORN_SAMPLES_DIR;

// A fresh path in the temporary directory, unique to this process.
inline std::string replay_temp_path(const std::string& stem) {
  return (std::filesystem::temp_directory_path() / ("tracecorn-replay-" + stem + "-" + std::to_string(::getpid())))
      .string();
}

// The writer of `format` for `path`.
inline std::unique_ptr<events::Sink> open_writer(replay::TraceFormat format, const std::string& path,
                                                 const arch::ArchInfo& arch, bool zstd) {
  switch (format) {
    case replay::TraceFormat::kUcir: {
      formats::UcirWriterOptions options;
      options.compress_zstd = zstd;
      auto writer = formats::UcirWriter::open(path, arch, options);
      REQUIRE_MESSAGE(writer.has_value(), tracecorn::test_support::error_text(writer));
      return std::move(*writer);
    }
    case replay::TraceFormat::kFrames: {
      formats::FramesWriterOptions options;
      options.compress_zstd = zstd;
      auto writer = formats::FramesWriter::open(path, arch, std::move(options));
      REQUIRE_MESSAGE(writer.has_value(), tracecorn::test_support::error_text(writer));
      return std::move(*writer);
    }
    case replay::TraceFormat::kBintrace: {
      formats::BintraceWriterOptions options;
      options.compress_zstd = zstd;
      auto writer = formats::BintraceWriter::open(path, arch, options);
      REQUIRE_MESSAGE(writer.has_value(), tracecorn::test_support::error_text(writer));
      return std::move(*writer);
    }
  }
  return nullptr;
}

struct FileToWrite {
  replay::TraceFormat format;
  std::string path;
  bool zstd = false;
};

// Records `program` (argv: program, then `scratch_dir` when given) at `level`
// into every file of `files` and into `probes`, all on the same recording.
inline SampleRun record_files(const std::string& program, core::TraceLevel level, const std::vector<FileToWrite>& files,
                              std::vector<events::Sink*> probes = {}, const std::string& scratch_dir = "") {
  std::vector<std::unique_ptr<events::Sink>> writers;
  auto run = record_sample(
      program, level,
      [&](linux_layer::LinuxProcess& process) {
        std::vector<events::Sink*> sinks = probes;
        for (const auto& file : files) {
          writers.push_back(open_writer(file.format, file.path, process.arch(), file.zstd));
          sinks.push_back(writers.back().get());
        }
        return sinks;
      },
      scratch_dir);
  CHECK_MESSAGE(run.finish_error.empty(), run.finish_error);
  return run;
}

}  // namespace tracecorn::test

#include "recorder/replay/replayer.h"
#include "recorder/replay/trace_index.h"

namespace tracecorn::test {

// The one-line check: replay `trace` against `program` and expect no divergence.
inline void check_replay_matches(const std::string& trace, const std::string& program) {
  CAPTURE(trace);
  replay::ReplayOptions options;
  options.program = program;
  auto report = replay::replay_trace(trace, options);
  REQUIRE_MESSAGE(report.has_value(), tracecorn::test_support::error_text(report));
  CHECK_MESSAGE(!report->divergence.has_value(), report->divergence->to_string());
  CHECK(report->steps_compared > 0);
}

// The first syscall numbered `number` in `trace`, as the trace's own index
// reads it (its event index, result...). Fails the calling test when there is none.
inline replay::SyscallRecord first_syscall(const std::string& trace, std::uint64_t number) {
  auto reader = replay::TraceReader::open(trace);
  REQUIRE(reader.has_value());
  auto index = replay::TraceIndex::build(**reader);
  REQUIRE(index.has_value());
  for (const auto& record : (*index)->syscalls())
    if (record.number == number) return record;
  FAIL("no syscall " << number << " in " << trace);
  return {};
}

// Replays `trace` against `program` and expects the first divergence at
// `event`, a write() (the replay tests' edited syscall results).
inline void check_diverges_at_write(const std::string& trace, const std::string& program, std::uint64_t event) {
  replay::ReplayOptions options;
  options.program = program;
  auto report = replay::replay_trace(trace, options);
  REQUIRE(report.has_value());
  REQUIRE(report->divergence.has_value());
  CHECK(report->divergence->event == event);
  CHECK(report->divergence->what.find("write") != std::string::npos);
  MESSAGE(report->divergence->to_string());
}

}  // namespace tracecorn::test
