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
// in handlers (samples/guest/signal_{handlers,timers,faults,x86_traps}.c).
// Their traces carry signal events; a test that cannot take them yet asks
// for the samples without them (with_signal_samples = false).
bool takes_signals_in_handlers(const std::string& name);
// Whether sample `name` runs several threads (threads, futex_ops,
// robust_mutex, posix_timers: glibc's SIGEV_THREAD helper,
// thread_timer_spin): their
// recordings depend on the host's timing (how long a spin waits for a
// sleeping thread), so the every-sample round trips and replays leave them
// out and test them on their own (thread_samples, replayer_threads_test.cpp).
bool runs_several_threads(const std::string& name);
// Whether sample `name` starts processes (fork_wait, exec_programs,
// event_loops, parent_death, busy_kill, signal_fd, pidfd_wait,
// thread_signal_wait, thread_spin_signal, job_control, child_reaping,
// busy_signal, signal_fd_exec): each
// child writes a trace of its own (recorded through the CLI only), so the in-process round trips
// and replay leave them out.
bool starts_processes(const std::string& name);

// The samples under static/ that run several threads (runs_several_threads), sorted.
std::vector<std::string> thread_samples(const std::string& samples_dir);

// "dynamic/hello" and every sample under static/, sorted; the signal samples
// unless `with_signal_samples` is false.
std::vector<std::string> all_samples(const std::string& samples_dir, bool with_signal_samples = true);

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
