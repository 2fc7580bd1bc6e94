// Role: implementation of the shared recording helper (see sample_recording.h).
#include "tests/formats/sample_recording.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>
#include <filesystem>
#include <initializer_list>

#include "recorder/session/process_recording.h"
#include "recorder/core/recorder.h"

namespace tracecorn::test {

bool takes_signals_in_handlers(const std::string& name) {
  for (const char* sample :
       {"signal_handlers", "signal_timers", "signal_faults", "signal_x86_traps", "signal_stacks"}) {
    const std::string suffix = std::string("/") + sample;
    if (name.size() >= suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0)
      return true;
  }
  return false;
}

namespace {
bool names_one_of(const std::string& name, std::initializer_list<const char*> samples) {
  for (const char* sample : samples) {
    const std::string suffix = std::string("/") + sample;
    if (name.size() >= suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0)
      return true;
  }
  return false;
}
}  // namespace

bool runs_several_threads(const std::string& name) {
  return names_one_of(name, {"threads", "futex_ops", "robust_mutex", "posix_timers", "thread_timer_spin"});
}

bool starts_processes(const std::string& name) {
  return names_one_of(name, {"fork_wait", "exec_programs", "event_loops", "parent_death", "busy_kill", "signal_fd",
                              "pidfd_wait", "thread_signal_wait", "thread_spin_signal", "job_control",
                              "child_reaping", "busy_signal", "signal_fd_exec"});
}

std::vector<std::string> all_samples(const std::string& samples_dir, bool with_signal_samples) {
  std::vector<std::string> samples = {"dynamic/hello"};
  for (const auto& entry : std::filesystem::directory_iterator(samples_dir + "/static"))
    if ((with_signal_samples || !takes_signals_in_handlers("/" + entry.path().filename().string())) &&
        !runs_several_threads("/" + entry.path().filename().string()) &&
        !starts_processes("/" + entry.path().filename().string()))
      samples.push_back("static/" + entry.path().filename().string());
  std::sort(samples.begin(), samples.end());
  return samples;
}

std::vector<std::string> thread_samples(const std::string& samples_dir) {
  std::vector<std::string> samples;
  for (const auto& entry : std::filesystem::directory_iterator(samples_dir + "/static"))
    if (runs_several_threads("/" + entry.path().filename().string()))
      samples.push_back("static/" + entry.path().filename().string());
  std::sort(samples.begin(), samples.end());
  return samples;
}

SampleRun record_sample(const std::string& program, core::TraceLevel level,
                        const std::function<std::vector<events::Sink*>(linux_layer::LinuxProcess&)>& make_sinks,
                        const std::string& scratch_dir) {
  linux_layer::ProcessConfig config;
  config.program = program;
  config.argv = {program};
  if (!scratch_dir.empty()) config.argv.push_back(scratch_dir);  // samples that work in a directory take it first
  config.envp = {"LC_ALL=C"};
  config.diagnostics = nullptr;
  auto process = linux_layer::LinuxProcess::create(config);
  REQUIRE(process.has_value());
  core::RecorderOptions options;
  options.level = level;
  options.ring_bytes = 4u << 20;  // small: a ring is zeroed and pre-faulted per recording
  events::TraceInfo info;
  info.program = program;
  info.argv = config.argv;
  for (const auto& module : (*process)->initial_modules())
    info.modules.push_back({events::GuestAddress{module.start}, events::GuestAddress{module.end}, module.path});
  info.mapped_ranges = (*process)->mapped_ranges();
  info.process_id = (*process)->guest_pid();
  auto recorder = core::Recorder::attach((*process)->engine(), (*process)->arch(), options, make_sinks(**process), info);
  REQUIRE(recorder.has_value());
  session::ProcessRecording glue(**recorder);
  (*process)->set_observer(&glue);
  SampleRun run;
  // A guest that waits for ever (a timer sample on a starved machine) is
  // stopped after 5 minutes, and the test fails instead of hanging.
  std::atomic<bool> ran{false}, stopped{false};
  std::thread watchdog([&] {
    for (int i = 0; i < 3000 && !ran.load(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    if (ran.load()) return;
    stopped.store(true);
    (*process)->request_stop();
  });
  run.outcome = (*process)->run();
  ran.store(true);
  watchdog.join();
  CHECK_MESSAGE(!stopped.load(), program << " was stopped after 5 minutes");
  (*process)->set_observer(nullptr);
  glue.finish_run(run.outcome);
  run.finish_error = (*recorder)->finish();
  recorder->reset();
  run.process = std::move(*process);
  return run;
}

}  // namespace tracecorn::test
