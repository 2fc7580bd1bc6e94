// Role: implementation of `tracecorn why` (why_command.h): parse the target,
// index the trace (or load its saved index), explain, print.
#include "recorder/cli/why_command.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "recorder/cli/saved_index.h"
#include "recorder/cli/stack_display.h"
#include "recorder/debug/why.h"

namespace tracecorn::cli {
namespace {

constexpr int kWhyRefused = 125;

bool parse_why_number(const std::string& text, std::uint64_t& value) {
  std::size_t used = 0;
  try {
    value = std::stoull(text, &used, 0);
  } catch (const std::exception&) {
    return false;
  }
  return used == text.size() && !text.empty();
}

// The value to explain: --reg NAME or --addr A[:LEN].
Expected<debug::WhyTarget> parse_target(const WhyCommandOptions& options, const arch::ArchInfo& arch) {
  debug::WhyTarget target;
  if (!options.reg.empty()) {
    const auto* reg = arch.find_register(options.reg);
    if (!reg) return make_error(ErrorCode::kInvalidArgument, fmt::format("no register '{}' on {}", options.reg, arch.name));
    target.is_register = true;
    target.register_index = static_cast<std::size_t>(reg - arch.registers.data());
    return target;
  }
  const auto colon = options.address.find(':');
  target.length = 1;
  if (!parse_why_number(options.address.substr(0, colon), target.address) ||
      (colon != std::string::npos && !parse_why_number(options.address.substr(colon + 1), target.length)) ||
      target.length == 0 || target.length > 4096)
    return make_error(ErrorCode::kInvalidArgument,
                      "--addr wants ADDRESS or ADDRESS:LENGTH (1 to 4096 bytes), not '" + options.address + "'");
  return target;
}

}  // namespace

CLI::App* add_why_command(CLI::App& app, WhyCommandOptions& options) {
  CLI::App* command = app.add_subcommand(
      "why", "Where a value came from: the instructions, syscalls (file and offset) and initial bytes behind it");
  command->footer(
      "\nExample:\n"
      "  tracecorn why prog.ucir --addr 0x7ffffffde010:4 --at 51234   # 4 bytes before event 51234 (see tracecorn dump)\n"
      "  tracecorn why prog.ucir --reg rax --json                     # rax at the trace's end, as JSON\n"
      "Needs a trace recorded at level full.");
  command->add_option("trace", options.trace, "The trace file (level full)")->required();
  auto* reg = command->add_option("--reg", options.reg, "A register, by the trace's name for it (rax, x0, r0...)");
  auto* addr = command->add_option("--addr", options.address, "Memory: ADDRESS or ADDRESS:LENGTH (hex with 0x)");
  reg->excludes(addr);
  command->add_option("--at", options.at, "The event: the value as it is before this event (default: the trace's end)");
  command->add_option("--depth", options.depth, "Levels of writers to follow (default 16)")
      ->check(CLI::Range(1u, 1000u));
  command->add_flag("--json", options.json, "Print the tree as JSON");
  return command;
}

int why_command(const WhyCommandOptions& options) {
  auto fail = [](const std::string& message) {
    fmt::print(stderr, "tracecorn: {}\n", message);
    return kWhyRefused;
  };
  if (options.reg.empty() && options.address.empty()) return fail("why: say what to explain: --reg NAME or --addr A[:LEN]");
  auto reader = replay::TraceReader::open(options.trace);
  if (!reader) return fail(reader.error().to_string());
  const auto& arch = (*reader)->arch();
  auto target = parse_target(options, arch);
  if (!target) return fail(target.error().to_string());
  auto decoder = arch::InstructionDecoder::open(arch, true);
  if (!decoder)
    return fail(fmt::format("{}: `why` needs the registers each {} instruction reads: {}", options.trace, arch.name,
                            decoder.error().to_string()));
  auto index = open_saved_index(**reader, options.trace, "tracecorn why");
  if (!index) return fail(index.error().to_string());
  if (const std::string missing = debug::why_unsupported(**index); !missing.empty())
    return fail(options.trace + ": " + missing);
  SymbolNamer namer("");  // names from the modules' files, where readable here
  (*index)->name_mappings(namer);
  debug::WhyOptions why;
  why.depth = options.depth;
  auto tree = debug::explain(**index, **decoder, &namer, *target, options.at.value_or((*index)->event_count()), why);
  if (!tree) return fail(options.trace + ": " + tree.error().to_string());
  fmt::print("{}", options.json ? debug::why_json(*tree, arch) : debug::why_text(*tree, arch));
  return 0;
}

}  // namespace tracecorn::cli
