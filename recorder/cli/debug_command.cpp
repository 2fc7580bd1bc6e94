// Role: implementation of `tracecorn debug` (debug_command.h): parse the
// listening address, build the trace index, start the session, serve.
#include "recorder/cli/debug_command.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "recorder/cli/saved_index.h"
#include "recorder/cli/stack_display.h"
#include "recorder/debug/debug_server.h"
#include "recorder/debug/gdb_session.h"
#include "recorder/debug/time_travel.h"
#include "recorder/replay/trace_index.h"
#include "recorder/replay/trace_reader.h"

namespace tracecorn::cli {
namespace {

constexpr int kExitToolError = 125;

// One process image's trace, ready to debug (the first, and the children and
// next images gdb follows): its index saved beside it, its modules named.
Expected<std::unique_ptr<debug::DebuggedImage>> open_image(const std::string& trace) {
  auto image = std::make_unique<debug::DebuggedImage>();
  auto reader = replay::TraceReader::open(trace);
  if (!reader) return reader.error();
  if (!(*reader)->arch().gdb)
    return make_error(ErrorCode::kInvalidArgument,
                      fmt::format("tracecorn debug does not serve {} traces yet", (*reader)->arch().name), trace);
  image->program = (*reader)->info().program;
  auto index = open_saved_index(**reader, trace, "tracecorn debug");
  if (!index) return index.error();
  auto travel = debug::TimeTravel::start(**index);
  if (!travel) return make_error(travel.error().code, trace + ": " + travel.error().to_string());
  auto namer = std::make_unique<SymbolNamer>("");  // the recorded call stacks named from the modules' files, where readable here
  (*index)->name_mappings(*namer);
  image->reader = std::move(*reader);
  image->index = std::move(*index);
  image->namer = std::move(namer);
  image->travel = std::move(*travel);
  return image;
}

// "HOST:PORT", "[V6HOST]:PORT", ":PORT" (loopback) or "PORT".
Expected<debug::ServerOptions> parse_listen(const std::string& text) {
  debug::ServerOptions options;
  std::string port = text;
  const auto colon = text.rfind(':');
  if (colon != std::string::npos) {
    std::string host = text.substr(0, colon);
    if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
    if (!host.empty()) options.host = host;
    port = text.substr(colon + 1);
  }
  unsigned long value = 0;
  std::size_t used = 0;
  try {
    value = std::stoul(port, &used, 10);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != port.size() || value > 65535)
    return make_error(ErrorCode::kInvalidArgument, "--listen wants HOST:PORT (a port 0-65535), not '" + text + "'");
  options.port = static_cast<std::uint16_t>(value);
  return options;
}

}  // namespace

CLI::App* add_debug_command(CLI::App& app, DebugCommandOptions& options) {
  CLI::App* command = app.add_subcommand(
      "debug", "Serve a trace to gdb or LLDB (remote protocol): step, continue and watch forwards and backwards");
  command->footer(
      "\nExample:\n"
      "  tracecorn debug prog.ucir &              # recorded by: tracecorn record --format ucir --level full -o prog.ucir -- ./prog\n"
      "  gdb -ex 'target remote :1234' ./prog     # then: break main, continue, reverse-stepi, reverse-continue...\n"
      "Monitor commands in gdb: monitor help");
  command->add_option("trace", options.trace, "The trace file (level regs or full)")->required();
  command->add_option("--listen", options.listen,
                      "Address to listen on, HOST:PORT (default 127.0.0.1:1234: loopback only; port 0: any free port)");
  return command;
}

int debug_command(const DebugCommandOptions& options) {
  auto fail = [](const std::string& message) {
    fmt::print(stderr, "tracecorn: {}\n", message);
    return kExitToolError;
  };
  auto address = parse_listen(options.listen);
  if (!address) return fail(address.error().to_string());
  auto opened = open_image(options.trace);
  if (!opened) return fail(opened.error().to_string());
  const replay::TraceIndex& index = *(*opened)->index;
  if (!index.memory_tracked())
    fmt::print(stderr, "tracecorn debug: {} has no memory accesses (recorded at level regs?): gdb sees the program's "
                       "code and registers, not its data (record at level full for that)\n", options.trace);
  const std::string program = (*opened)->program;
  const std::uint64_t events = index.event_count(), instructions = index.instructions();
  debug::GdbSession session(std::move(*opened), options.trace, open_image);
  auto status = debug::serve_one_client(session, *address, [&](const std::string& host, std::uint16_t port) {
    const std::string shown = host.find(':') != std::string::npos ? "[" + host + "]" : host;
    fmt::print(stderr, "tracecorn debug: {} ({} events, {} instructions), listening on {}:{}\n", options.trace,
               events, instructions, shown, port);
    fmt::print(stderr, "  in gdb: target remote {}:{}{}\n", shown, port,
               program.empty() ? "" : fmt::format("   (load the program first: file {})", program));
    std::fflush(stderr);
  });
  if (!status) return fail(status.error().to_string());
  return 0;
}

}  // namespace tracecorn::cli
