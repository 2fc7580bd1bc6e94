// Role: the CLI's `tracecorn why TRACE (--reg NAME | --addr A[:LEN]) [--at
// EVENT] [--depth N] [--json]`: where a register's or memory's value came
// from (recorder/debug/why.h), printed as a tree or as JSON. Only this folder
// parses options.
// Who calls it: main.cpp; the main thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace CLI {
class App;
}

namespace tracecorn::cli {

struct WhyCommandOptions {
  std::string trace;
  std::string reg;      // a register's name, or ""
  std::string address;  // "A" or "A:LEN", or ""
  std::optional<std::uint64_t> at;  // the event (default: the trace's end)
  unsigned depth = 16;
  bool json = false;
};

// Adds the `why` subcommand to `app`, filling `options` when parsed.
CLI::App* add_why_command(CLI::App& app, WhyCommandOptions& options);
// Runs it: 0 with the answer on stdout; 125 on an unreadable trace, a trace
// not at level full, an unknown register, a malformed address or event (each named on stderr).
int why_command(const WhyCommandOptions& options);

}  // namespace tracecorn::cli
