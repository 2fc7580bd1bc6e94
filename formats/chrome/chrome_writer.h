// Role: the Chrome trace-event JSON exporter, a write-only format: a trace's
// syscalls (with their call stacks), faults, signals and thread changes
// (instant events, each on its thread's tid) and exit as trace events for
// Perfetto's UI and chrome://tracing (the Trace Event Format,
// https://docs.google.com/document/d/1CvAClvFfyA5R-PhYUmn5OOQtYMH4h6I0nSsKchNAySU).
// Timestamps (ts, in µs as the format says) are the instructions executed
// before the event: the instruction events, or the blocks' counts in a trace
// without instruction events. One process (its pid, or 1 when the trace does
// not say) named after the program.
// Who calls it: the trace tools through the format registry's writer factory
// (formats/registry.h), as a Sink fed by a reader; one thread. Write errors
// come back from end(), naming the file.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>

#include "recorder/events/event.h"
#include "recorder/support/expected.h"

namespace tracecorn::formats {

struct ChromeWriterOptions {
  bool source_has_instructions = true;  // the source format carries instruction events (else blocks give the counts)
  std::string source_name;              // names the process when the trace has no program
  std::uint64_t* events_written = nullptr;  // set at end() to the trace events written, when given
};

class ChromeWriter final : public events::Sink {
 public:
  // Opens `path` ("-" for stdout). Fails with kIo naming it.
  static Expected<std::unique_ptr<ChromeWriter>> open(const std::string& path, ChromeWriterOptions options);
  ~ChromeWriter() override;
  ChromeWriter(const ChromeWriter&) = delete;
  ChromeWriter& operator=(const ChromeWriter&) = delete;

  void begin(const events::TraceInfo& info) override;
  void on_event(const events::Event& event) override;
  std::string end(const events::TraceSummary& summary) override;

 private:
  // The event's thread as Chrome's tid (the pid when the event has none).
  std::uint64_t tid(const events::Event& event) const;
  ChromeWriter(std::FILE* file, std::string path, ChromeWriterOptions options)
      : file_(file), path_(std::move(path)), options_(std::move(options)) {}
  void emit(const std::string& record);

  std::FILE* file_;
  std::string path_;
  ChromeWriterOptions options_;
  std::uint64_t pid_ = 1;
  std::uint64_t instructions_ = 0, written_ = 0, index_ = 0;  // index_: the events seen so far
};

}  // namespace tracecorn::formats
