// Role: the one read_all(): reads what is left of a trace into a sink, for
// every reader that has info(), next(on_event) and interrupted() (each format's
// own reader, and replay::TraceReader over all of them), so that the summary a
// sink gets at the end is computed the same way whichever reader it came from.
// Who calls it: the readers' read_all() members, on the reader's thread.
// Invariants: begin() once, the events in order, end() once, even after an
// error; the summary says interrupted only when the format's interruption note
// was read (a recording stopped by SIGINT or SIGTERM): a file that ends early
// is not an interrupted recording (its readers say so in their warning, and
// replay::TraceReader::check_complete() turns that into an error).
#pragma once

#include <string>
#include <variant>

#include "recorder/events/event.h"
#include "recorder/support/expected.h"

namespace tracecorn::formats {

// begin(reader.info()), every event left, then end() with the events counted,
// the instructions (from the instruction events, else from the blocks' counts,
// as the recorder counts them), the events lost in gaps, and interrupted().
// The events come from pump(on_event), which calls on_event for each event
// left in `reader`, in order, and returns the reader's first error (a plain
// loop over reader.next() by default; replay::TraceReader's reads ahead on a
// thread of its own). Returns the reader's first error, else the sink's end()
// error as kIo (naming `source` when given).
template <typename Reader, typename Pump>
Status read_all(Reader& reader, events::Sink& sink, const std::string& source, Pump&& pump) {
  sink.begin(reader.info());
  events::TraceSummary summary;
  std::uint64_t from_instructions = 0, from_blocks = 0;
  const Status status = pump([&](const events::Event& event) {
    ++summary.events;
    if (event.kind == events::EventKind::kInstruction) ++from_instructions;
    if (event.kind == events::EventKind::kBlock)
      from_blocks += std::get<events::BlockEvent>(event.payload).instruction_count;
    if (event.kind == events::EventKind::kGap) summary.lost_events += std::get<events::GapEvent>(event.payload).lost_events;
    summary.instructions = from_instructions ? from_instructions : from_blocks;
    sink.on_event(event);
  });
  summary.interrupted = status && reader.interrupted();
  const std::string error = sink.end(summary);
  if (!status) return status;
  if (!error.empty()) return make_error(ErrorCode::kIo, error, source);
  return ok_status();
}

template <typename Reader>
Status read_all(Reader& reader, events::Sink& sink, const std::string& source = {}) {
  return read_all(reader, sink, source, [&](const auto& on_event) -> Status {
    for (;;) {
      auto more = reader.next(on_event);
      if (!more) return more.error();
      if (!*more) return ok_status();
    }
  });
}

}  // namespace tracecorn::formats
