// Role: the CLI's `tracecorn debug TRACE`: its options, and the command that
// indexes the trace and serves gdb's remote protocol over it
// (recorder/debug/). Only this folder parses options.
// Who calls it: main.cpp; the main thread.
#pragma once

#include <string>

namespace CLI {
class App;
}

namespace tracecorn::cli {

struct DebugCommandOptions {
  std::string trace;
  std::string listen = "127.0.0.1:1234";
};

// Adds the `debug` subcommand to `app`, filling `options` when parsed.
CLI::App* add_debug_command(CLI::App& app, DebugCommandOptions& options);
// Runs it: 0 when the client detached or disconnected, 125 on an unreadable
// trace, a trace without instructions, an architecture gdb is not served for,
// or an address that cannot be listened on (each named on stderr).
int debug_command(const DebugCommandOptions& options);

}  // namespace tracecorn::cli
