// Role: test helper shared by the format round-trip tests: the guest samples to
// run, and one recording of a sample into given sinks with the process kept
// alive afterwards (its engine holds the guest's final state).
// Who calls it: doctest cases, on the test thread.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "recorder/core/trace_level.h"
#include "recorder/events/event.h"
#include "recorder/linux/linux_process.h"

namespace tracecorn::test {

// Whether sample `name` (a path ending in the sample's name) takes signals
// in handlers (samples/guest/signal_{handlers,timers,faults,x86_traps}.c):
// the formats have no signal event yet (issue 18), so a trace of the handler's
// entry and return shows pc jumps and registers nothing explains, and frames
// written after a fault or at a block boundary are not in it. The round trips
// and the replay of every sample leave these out; the behaviour tests run them.
bool takes_signals_in_handlers(const std::string& name);

// "dynamic/hello" and every sample under static/, sorted, except those that
// take signals in handlers.
std::vector<std::string> all_samples(const std::string& samples_dir);

struct SampleRun {
  std::unique_ptr<linux_layer::LinuxProcess> process;  // after the run: its engine holds the final state
  linux_layer::RunOutcome outcome;
  std::string finish_error;  // the recorder's finish() result ("" when the sinks succeeded)
};

// Runs `program` (argv: program, then `scratch_dir` when not empty; environment
// LC_ALL=C) under a recorder at `level` feeding the sinks `make_sinks` returns
// for the created process. Fails the calling test (REQUIRE) when the process or
// the recorder cannot be set up.
SampleRun record_sample(const std::string& program, core::TraceLevel level,
                        const std::function<std::vector<events::Sink*>(linux_layer::LinuxProcess&)>& make_sinks,
                        const std::string& scratch_dir = "");

}  // namespace tracecorn::test
