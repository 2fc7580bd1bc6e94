// Role: reading a trace on a thread of its own while the caller consumes its
// events: decoding (zstd, the format's parser, the memory image) and what the
// caller does with each event (building the trace index) then share two
// cores instead of taking turns on one.
// Threads: read_ahead() starts one reader thread, which alone calls
// reader.next() and copies each record's events into a batch
// (events::EventBatch); the calling thread hands every event to `on_event`,
// in order, and joins the reader thread before returning. At most sixteen
// batches of 4096 events wait between the two (about 12 MB). With one core,
// or when `parallel` is false, the caller reads in turn, as a plain loop would.
// Invariants: `on_event` sees exactly the events, in the same order, that
// calling reader.next(on_event) until it returns false would give it; an
// error of the reader comes back after every event produced before it. When
// `stop` returns true (checked after each batch) reading ends early with ok.
// The reader is not used by another thread once read_ahead() returns.
#pragma once

#include <functional>

#include "recorder/events/event.h"
#include "recorder/replay/trace_reader.h"
#include "recorder/support/expected.h"

namespace tracecorn::replay {

Status read_ahead(TraceReader& reader, const std::function<void(const events::Event&)>& on_event,
                  const std::function<bool()>& stop, bool parallel = true);

}  // namespace tracecorn::replay
