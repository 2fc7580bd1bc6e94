// Role: one reader API over every trace format tracecorn reads: UCIR (the
// spec's flavour and usercorn's own), BAP frames and binary trace v1.0, each
// plain or zstd. The format is chosen by the file's content (its first bytes,
// decompressed when the file is a zstd stream), never by its name, through the
// format registry (formats/registry.h), which holds each format's detection,
// capabilities and reader adapter; this class adds what every reader of a trace
// needs on top: event indices, the progress line, check_complete() and
// read_all(). Events come
// out in order in the common event model (recorder/events/event.h), exactly as
// the format's own reader produces them; capabilities() says what the format
// cannot carry, so that a consumer never mistakes a missing value for a zero.
// Who calls it: the CLI (dump, stat, convert, replay), TraceIndex and Replayer
// (recorder/replay/), tests; one thread per reader (not thread safe).
// Untrusted input: every byte of the file; errors come back from open() and
// next() as an Error with the byte offset and the reason (the formats' readers
// check everything); nothing here aborts or throws on bad input.
// Invariants: event indices (index()) count the events produced so far, from 0,
// in file order; they are what "event N" means everywhere in recorder/replay/.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "arch/arch.h"
#include "formats/registry.h"
#include "recorder/events/event.h"
#include "recorder/replay/progress.h"
#include "recorder/support/expected.h"

namespace tracecorn::replay {

// The formats and what they carry live in the format registry (formats/registry.h).
using formats::Capabilities;
using formats::TraceFormat;
std::string_view trace_format_name(TraceFormat format);  // "ucir", "frames", "bintrace"

class TraceReader {
 public:
  using EventCallback = std::function<void(const events::Event&)>;

  // Opens `path` and chooses the reader by content. Fails with kNotFound/kIo
  // (the file), kBadFormat ("not a trace": the first bytes match no format, with
  // what they were), or the format reader's own errors (offset and reason).
  static Expected<std::unique_ptr<TraceReader>> open(const std::string& path);
  // Which format the first bytes of a file (decompressed) belong to; false when none.
  static bool detect(std::span<const std::uint8_t> head, TraceFormat& format);
  // What `format` can carry.
  static const Capabilities& capabilities(TraceFormat format);

  TraceReader(TraceFormat format, std::string path, std::unique_ptr<formats::FormatReader> reader)
      : format_(format), path_(std::move(path)), reader_(std::move(reader)) {}
  ~TraceReader();
  TraceReader(const TraceReader&) = delete;
  TraceReader& operator=(const TraceReader&) = delete;

  TraceFormat format() const { return format_; }
  const Capabilities& capabilities() const { return capabilities(format_); }
  const std::string& path() const { return path_; }
  const arch::ArchInfo& arch() const { return reader_->arch(); }
  // Whether the trace may be of `candidate`: it is arch(), or the file cannot
  // tell the two apart (BAP frames: mips and mipsel share frame_architecture 8
  // and frame_machine 32, and the header has no byte order; see
  // FramesReader::resolve_arch). When it may, the trace is read as `candidate`
  // from now on (arch(), and the byte order of memory values); the replayer
  // calls it with the program's architecture before it reads any event.
  bool resolve_arch(const arch::ArchInfo& candidate) { return reader_->resolve_arch(candidate); }
  // Arch, program, argv and level where the format says them, and the initial
  // state it carries (see capabilities()).
  const events::TraceInfo& info() const { return reader_->info(); }
  // The guest's environment when the format records it (BAP frames' meta
  // frame), else empty.
  std::vector<std::string> environment() const { return reader_->environment(); }
  // One line about the file (version, flavour, compression), for dump and stat.
  std::string describe() const { return reader_->describe(); }

  // Reads the next record of the file (one UCIR frame, one BAP frame, one
  // bintrace event) and calls `on_event` for each of its events (valid during
  // the call only). Returns true when a record was read, false at the end (see
  // warning() for a file that ends early), or an Error with the byte offset.
  Expected<bool> next(const EventCallback& on_event);
  // Reads everything left into `sink`: begin(info()), the events, end(). Returns
  // the first error (the file's, or the sink's end() error as kIo).
  Status read_all(events::Sink& sink);
  // Events produced so far (the index of the next event).
  std::uint64_t index() const { return produced_; }
  // "" or why the file ended before its natural end.
  std::string warning() const { return reader_->warning(); }
  // After the end: kBadFormat naming the file and where it ended, when it ended
  // before its natural end (warning() is set: a killed recording, a truncated
  // copy); ok otherwise. Every tool fails with it (after dump has printed
  // what it could read), so that a cut trace never passes for a whole one.
  Status check_complete() const;
  // Whether the records read so far include the format's interruption note:
  // the recording was stopped by SIGINT or SIGTERM and finished (UCIR: a frame
  // of OP_NOPs, ucir_layout.h; BAP frames: an exception_frame with
  // tracecorn_interrupted; binary trace: an "interrupted" other event). Known
  // for sure once next() has returned false (the note is the last record).
  // read_all()'s summary says interrupted for this only (a file that ends early
  // is check_complete()'s error).
  bool interrupted() const { return reader_->interrupted(); }
  // The signal that killed the process, where the format says it in a note
  // and not in an exit event (BAP frames: FramesReader::killed_by_signal()),
  // once read; else 0.
  std::uint32_t killed_by_signal() const { return reader_->killed_by_signal(); }
  // "" or why the file ended before its natural end: warning() unless the
  // format's warnings are about something else (binary trace: unknown events).
  std::string ended_early() const { return reader_->ended_early(); }
  // Bytes of the file read so far (compressed bytes for a zstd file).
  std::uint64_t bytes_read() const { return reader_->bytes_read(); }
  // From now on, next() shows a progress line labelled `what` on stderr when
  // stderr is a terminal (progress.h), erased when the file ends or the reader goes.
  void show_progress(std::string what);

 private:
  TraceFormat format_;
  std::string path_;
  std::unique_ptr<formats::FormatReader> reader_;
  std::uint64_t produced_ = 0;
  std::unique_ptr<Progress> progress_;
};

// Reads every event of the trace at `path`, in order, into on_event(event,
// index). Fails with the reader's error (the file, the offset).
template <typename OnEvent>
Status read_every_event(const std::string& path, OnEvent&& on_event) {
  auto reader = TraceReader::open(path);
  if (!reader) return reader.error();
  std::uint64_t index = 0;
  for (;;) {
    auto more = (*reader)->next([&](const events::Event& event) { on_event(event, index++); });
    if (!more) return more.error();
    if (!*more) return ok_status();
  }
}

}  // namespace tracecorn::replay
