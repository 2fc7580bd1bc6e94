// Role: the trace index a CLI command works on (`tracecorn debug`, `tracecorn
// why`): the one saved beside the trace (TRACE.tcindex) when it is there and
// matches the trace, else built by reading the trace and saved for next time.
// What happened is said on stderr, prefixed with the command's name.
// Who calls it: the debug and why commands; the main thread.
#pragma once

#include <memory>
#include <string>

#include "recorder/replay/trace_index.h"
#include "recorder/replay/trace_reader.h"

namespace tracecorn::cli {

// `reader` is the trace at path `trace`, just opened; `command` ("tracecorn
// debug") prefixes the lines on stderr. Fails with the reader's error.
Expected<std::unique_ptr<replay::TraceIndex>> open_saved_index(replay::TraceReader& reader, const std::string& trace,
                                                               const std::string& command);

}  // namespace tracecorn::cli
