// Role: one process image's trace opened for the debugger: its reader, trace
// index, address namer and time-travel position, owned together (the
// position reads the index). A debug session (gdb_session.h) follows a
// recording's process tree by opening, as gdb asks, the trace of a forked
// child (BASE.PID) or of the image an exec started (BASE.PID.N) through an
// ImageOpener, which the CLI supplies (it knows where saved indexes live).
// Who uses it: GdbSession and the CLI's `tracecorn debug`; one thread.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "formats/address_namer.h"
#include "recorder/debug/time_travel.h"
#include "recorder/replay/trace_index.h"
#include "recorder/replay/trace_reader.h"
#include "recorder/support/expected.h"

namespace tracecorn::debug {

struct DebuggedImage {
  std::string program;  // the image's program, as its trace names it ("" when unknown)
  std::unique_ptr<replay::TraceReader> reader;
  std::unique_ptr<replay::TraceIndex> index;
  std::unique_ptr<formats::AddressNamer> namer;  // may be null
  std::unique_ptr<TimeTravel> travel;             // over `index`: destroyed before it
};

// Opens the trace at the path given: fails with the reader's or the index's
// error (naming the file and offset), or when the trace cannot be debugged.
using ImageOpener = std::function<Expected<std::unique_ptr<DebuggedImage>>(const std::string& trace)>;

}  // namespace tracecorn::debug
