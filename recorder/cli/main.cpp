// Role: the `tracecorn` command line. Parses options (CLI11) and drives the
// library; nothing below the CLI parses options.
//   tracecorn run [options] -- PROGRAM [ARGS...]
// Exit status: the guest's own status (128+signal when it is killed), 124 when a
// --max-insns/--timeout limit stops it, 125 for tracecorn's own errors, 126 when
// the program cannot be run (not an ELF, unsupported architecture), 127 when it
// is not found. Every message tracecorn prints starts with "tracecorn: ".
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "recorder/engine/instruction_counter.h"
#include "recorder/linux/linux_process.h"

extern char** environ;

namespace {

using tracecorn::ErrorCode;

constexpr int kExitToolError = 125;
constexpr int kExitCannotRun = 126;
constexpr int kExitNotFound = 127;

struct RunOptions {
  std::vector<std::string> command;
  std::uint64_t max_instructions = 0;
  double timeout_seconds = 0;
  std::string rootfs;
  std::vector<std::string> set_env;
  std::vector<std::string> unset_env;
  bool clear_env = false;
  bool stats = false;
  std::string syscall_log;
};

// Finds PROGRAM the way a shell would: as given when it contains a slash, else in $PATH.
std::string find_program(const std::string& name) {
  if (name.find('/') != std::string::npos) return name;
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/local/bin:/usr/bin:/bin";
  std::size_t start = 0;
  while (start <= dirs.size()) {
    std::size_t end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    std::string dir = dirs.substr(start, end - start);
    if (dir.empty()) dir = ".";
    const std::string candidate = dir + "/" + name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    start = end + 1;
  }
  return name;
}

std::vector<std::string> guest_environment(const RunOptions& options) {
  std::vector<std::string> env;
  if (!options.clear_env)
    for (char** entry = environ; *entry; ++entry) env.emplace_back(*entry);
  auto remove = [&](const std::string& name) {
    std::erase_if(env, [&](const std::string& item) { return item.compare(0, name.size() + 1, name + "=") == 0; });
  };
  for (const auto& name : options.unset_env) remove(name);
  for (const auto& assignment : options.set_env) {
    remove(assignment.substr(0, assignment.find('=')));
    env.push_back(assignment);
  }
  return env;
}

int run_command(const RunOptions& options) {
  namespace linux = tracecorn::linux_layer;
  linux::ProcessConfig config;
  config.program = find_program(options.command.front());
  config.argv = options.command;
  config.envp = guest_environment(options);
  config.rootfs = options.rootfs;
  config.max_instructions = options.max_instructions;
  config.timeout = std::chrono::microseconds(static_cast<std::int64_t>(options.timeout_seconds * 1e6));

  std::unique_ptr<std::FILE, int (*)(std::FILE*)> log(nullptr, &std::fclose);
  if (!options.syscall_log.empty()) {
    log.reset(std::fopen(options.syscall_log.c_str(), "w"));
    if (!log) {
      fmt::print(stderr, "tracecorn: {}: cannot open the syscall log: {}\n", options.syscall_log, std::strerror(errno));
      return kExitToolError;
    }
    config.syscall_log = log.get();
  }

  const auto started = std::chrono::steady_clock::now();
  auto process = linux::LinuxProcess::create(std::move(config));
  if (!process) {
    const auto& error = process.error();
    fmt::print(stderr, "tracecorn: {}\n", error.to_string());
    switch (error.code) {
      case ErrorCode::kNotFound: return kExitNotFound;
      case ErrorCode::kBadFormat: case ErrorCode::kTruncated: case ErrorCode::kUnsupported:
      case ErrorCode::kInvalidArgument:
        return kExitCannotRun;
      default: return kExitToolError;
    }
  }
  std::unique_ptr<tracecorn::engine::InstructionCounter> counter;
  if (options.stats) {
    auto attached = tracecorn::engine::InstructionCounter::attach((*process)->engine(), (*process)->arch());
    if (!attached) {
      fmt::print(stderr, "tracecorn: {}\n", attached.error().to_string());
      return kExitToolError;
    }
    counter = std::move(*attached);
  }

  const linux::RunOutcome outcome = (*process)->run();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  std::fflush(stdout);
  if (outcome.kind != linux::RunOutcome::Kind::kExited) fmt::print(stderr, "tracecorn: {}\n", outcome.description);
  if (options.stats)
    fmt::print(stderr, "tracecorn: {} instructions, {} syscalls, {:.3f} s, exit status {}\n", counter->instructions(),
               (*process)->syscall_count(), seconds, outcome.host_exit_status());
  return outcome.host_exit_status();
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"tracecorn: run and trace Linux programs inside the Unicorn CPU emulator"};
  app.require_subcommand(1);
  RunOptions run;
  CLI::App* run_app = app.add_subcommand("run", "Run a program in the emulator, with no trace");
  run_app->add_option("--max-insns", run.max_instructions, "Stop after N guest instructions (exit status 124)");
  run_app->add_option("--timeout", run.timeout_seconds, "Stop after S seconds (exit status 124)")
      ->check(CLI::NonNegativeNumber);
  run_app->add_option("--rootfs", run.rootfs, "Resolve every guest path inside DIR")->check(CLI::ExistingDirectory);
  run_app->add_option("--env", run.set_env, "Set NAME=VALUE in the guest's environment (repeatable)");
  run_app->add_option("--unset-env", run.unset_env, "Remove NAME from the guest's environment (repeatable)");
  run_app->add_flag("--clear-env", run.clear_env, "Start the guest with an empty environment");
  run_app->add_flag("--stats", run.stats, "Print instructions, syscalls and time on stderr at the end");
  run_app->add_option("--syscall-log", run.syscall_log, "Write one line per guest syscall to FILE");
  run_app->add_option("command", run.command, "PROGRAM [ARGS...] (after --)")->required();

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    if (error.get_exit_code() != 0) {
      fmt::print(stderr, "tracecorn: {}\n", error.what());
      std::fputs(app.help().c_str(), stderr);
      return kExitToolError;
    }
    return app.exit(error);
  }
  try {
    if (run_app->parsed()) return run_command(run);
  } catch (const std::exception& error) {
    fmt::print(stderr, "tracecorn: internal error: {}\n", error.what());
    return kExitToolError;
  }
  return kExitToolError;
}
