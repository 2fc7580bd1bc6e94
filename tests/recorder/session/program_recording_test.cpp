// Role: tests of the session layer's recording of a program
// (recorder/session/program_recording.h) without the CLI: parsed options
// record the first image's trace, a run that records nothing leaves the
// writer unopened, and a writer that cannot be opened comes back as an
// error value. One process per case, on the test's thread; no fork.
#include "recorder/session/program_recording.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <doctest/doctest.h>

namespace tracecorn {
namespace {

const std::string kSamples = TRACECORN_SAMPLES_DIR;

// Counts what a fork or an exec asks of the caller's threads (none here).
struct CountingThreads final : session::HostThreads {
  void pause_for_fork() noexcept override { ++paused; }
  void resume_after_fork() noexcept override { ++resumed; }
  void stop_for_exec() noexcept override { ++stopped; }
  int paused = 0, resumed = 0, stopped = 0;
};

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

linux_layer::ProcessConfig hello_config() {
  linux_layer::ProcessConfig config;
  config.program = kSamples + "/static/hello";
  config.argv = {config.program};
  config.envp = {"LC_ALL=C"};
  config.diagnostics = nullptr;
  return config;
}

}  // namespace

TEST_CASE("Program recording: parsed options record the first image's trace") {
  const auto trace = std::filesystem::temp_directory_path() /
                     ("tracecorn-program-recording-" + std::to_string(::getpid()) + ".txt");
  session::RecordingOptions options;
  options.output = trace.string();
  options.format = "text";
  options.level = core::TraceLevel::kInstructions;
  CountingThreads threads;
  linux_layer::ProcessConfig config = hello_config();
  session::ProcessTreeRecording tree(threads, config);
  config.lifecycle = &tree;
  auto process = linux_layer::LinuxProcess::create(config);
  REQUIRE(process.has_value());
  session::ImageRecording image;
  REQUIRE(tree.start(**process, image, options, nullptr).has_value());
  REQUIRE(image.recorder != nullptr);
  const linux_layer::RunOutcome outcome = (*process)->run();
  CHECK(outcome.kind == linux_layer::RunOutcome::Kind::kExited);
  const session::FinishedImage finished = tree.finish_image(outcome, false);
  CHECK(finished.trace_complete);
  CHECK(finished.stats.instructions > 0);
  CHECK(threads.paused == 0);
  image = session::ImageRecording{};
  const std::string text = read_file(trace);
  CHECK(text.find("exit status " + std::to_string(outcome.exit_code)) != std::string::npos);
  std::filesystem::remove(trace);
}

TEST_CASE("Program recording: a writer that cannot be opened is an error value") {
  session::RecordingOptions options;
  options.output = "/nonexistent-directory-of-tracecorn/trace.ucir";
  options.format = "ucir";
  CountingThreads threads;
  linux_layer::ProcessConfig config = hello_config();
  session::ProcessTreeRecording tree(threads, config);
  config.lifecycle = &tree;
  auto process = linux_layer::LinuxProcess::create(config);
  REQUIRE(process.has_value());
  session::ImageRecording image;
  const Status started = tree.start(**process, image, options, nullptr);
  REQUIRE_FALSE(started.has_value());
  CHECK(started.error().to_string().find("nonexistent-directory-of-tracecorn") != std::string::npos);
  CHECK(image.recorder == nullptr);
  CHECK(tree.finish_image(linux_layer::RunOutcome{}, false).trace_complete);
}

}  // namespace tracecorn
