// Role: the `monitor` commands of the debug server (GdbSession::monitor, the
// qRcmd packet): where the session is in the trace, jumping to an event, the
// last write to memory, the call stack recorded at the current thread's
// last syscall, and where a value came from (why.h).
// The reply is the command's output, hex encoded (the gdb manual, "qRcmd").
#include <algorithm>
#include <sstream>

#include <fmt/format.h>

#include "recorder/debug/gdb_session.h"
#include "recorder/debug/why.h"

namespace tracecorn::debug {
namespace {

constexpr std::string_view kHelp =
    "tracecorn debug: monitor commands\n"
    "  when                  the current event and instruction numbers\n"
    "  seek EVENT            go to the first instruction at or after EVENT (then 'flushregs')\n"
    "  last-write ADDR [LEN] the last write to [ADDR, ADDR+LEN) before the current position\n"
    "  stack                 the call stack recorded at this thread's last syscall before here\n"
    "  why REG|ADDR [LEN]    where a register's or memory's value here came from (full-level traces)\n"
    "  help                  this list\n";

std::string hex_of(std::string_view text) {
  return to_hex(std::span(reinterpret_cast<const std::uint8_t*>(text.data()), text.size()));
}

bool parse_number(const std::string& text, std::uint64_t& value) {
  std::size_t used = 0;
  try {
    value = std::stoull(text, &used, 0);
  } catch (const std::exception&) {
    return false;
  }
  return used == text.size();
}

std::string when(TimeTravel& travel) {
  auto count = travel.index().instructions_before(travel.position().event);
  if (!count) return "error: " + count.error().to_string() + "\n";
  return fmt::format("event {} of {}, instruction {} of {}, pc {:#x}, thread {}\n", travel.position().event,
                     travel.index().event_count(), *count, travel.index().instructions(), travel.position().pc,
                     travel.current_thread());
}

std::string last_write(TimeTravel& travel, std::uint64_t address, std::uint64_t length) {
  auto write = travel.index().previous_write(travel.position().event, address, length);
  if (!write) return "error: " + write.error().to_string() + "\n";
  if (!*write) return fmt::format("no write to {:#x} (+{}) is recorded before event {}\n", address, length,
                                  travel.position().event);
  auto by = travel.index().previous_instruction((*write)->event);
  if (!by)
    return "error: " + by.error().to_string() + "\n";
  std::string bytes;
  for (const std::uint8_t b : (*write)->bytes)
    bytes += fmt::format("{:02x}", b);
  return fmt::format("event {}: {} bytes at {:#x} = {} (by the instruction at "
                     "{:#x}, event {})\n",
                     (*write)->event, (*write)->bytes.size(), (*write)->address,
                     bytes, *by ? (*by)->pc : 0, *by ? (*by)->event : 0);
}

std::string stack(TimeTravel &travel, formats::AddressNamer *namer) {
  const auto &calls = travel.index().syscalls();
  // The syscall at the position (a syscall stop) or the last one before it.
  auto it = std::upper_bound(
      calls.begin(), calls.end(), travel.position().event,
      [](std::uint64_t event, const replay::SyscallRecord &call) {
        return event < call.event;
      });
  // The current thread's (a syscall event belongs to the thread that runs it).
  const std::uint32_t thread = travel.current_thread();
  while (it != calls.begin() && travel.index().thread_at((it - 1)->event) != thread) --it;
  if (it == calls.begin())
    return "no syscall of this thread before here\n";
  --it;
  std::string text = fmt::format(
      "at event {}: {} (pc {:#x})\n", it->event,
      it->name.empty() ? "syscall " + std::to_string(it->number) : it->name,
      it->pc);
  if (it->call_stack.empty())
    return text + "  (no call stack was recorded: the trace was made with "
                  "--stacks none)\n";
  for (std::size_t i = 0; i < it->call_stack.size(); ++i) {
    const std::string name = namer ? namer->name(it->call_stack[i]) : "";
    text += fmt::format("  #{} {:#x}{}\n", i, it->call_stack[i],
                        name.empty() ? "" : " " + name);
  }
  return text;
}

} // namespace

std::string GdbSession::monitor_why(const std::vector<std::string>& arguments) {
  replay::TraceIndex& index = travel().index();
  debug::WhyTarget target;
  std::string name = arguments[0];
  if (!name.empty() && name[0] == '$') name.erase(0, 1);
  if (const auto* reg = arch().find_register(name)) {
    if (arguments.size() != 1) return "why: a register takes no length\n";
    target.is_register = true;
    target.register_index = static_cast<std::size_t>(reg - arch().registers.data());
  } else if (!parse_number(arguments[0], target.address) ||
             (arguments.size() == 2 && !parse_number(arguments[1], target.length))) {
    return fmt::format("why: '{}' is neither a register of {} nor an address\n", arguments[0], arch().name);
  } else if (arguments.size() == 1) {
    target.length = 1;
  }
  if (!why_decoder_ || why_arch_ != &arch()) {
    why_arch_ = &arch();
    why_text_.reset();
    auto decoder = arch::InstructionDecoder::open(arch(), true);
    if (!decoder) return "why: " + decoder.error().to_string() + "\n";
    why_decoder_ = std::move(*decoder);
    if (arch().decode_without_capstone && arch().llvm_target)  // opened once, not at every `monitor why`
      if (auto text = formats::LlvmDisassembler::open(*arch().llvm_target)) why_text_ = std::move(*text);
  }
  WhyOptions options;
  options.instruction_text = why_text_.get();
  auto tree = explain(index, *why_decoder_, general_->namer, target, travel().position().event, options);
  // explain() moved the index: back to the position.
  if (auto status = index.seek(travel().position().event); !status) return "error: " + status.error().to_string() + "\n";
  if (!tree) return "why: " + tree.error().to_string() + "\n";
  return why_text(*tree, arch());
}

std::string GdbSession::monitor(std::string_view hex_command) {
  std::vector<std::uint8_t> bytes;
  if (!from_hex(hex_command, bytes)) return "E01";
  std::istringstream words(std::string(bytes.begin(), bytes.end()));
  std::string command;
  words >> command;
  std::vector<std::string> arguments;
  for (std::string word; words >> word;) arguments.push_back(word);
  std::uint64_t a = 0, b = 1;
  if (command == "when" && arguments.empty()) return hex_of(when(travel()));
  if (command == "seek" && arguments.size() == 1 && parse_number(arguments[0], a)) {
    auto stop = travel().seek(a);
    if (!stop) return hex_of("error: " + stop.error().to_string() + "\n");
    general_->last_stop = *stop;
    general_thread_ = 0;  // gdb's 'flushregs' reads the thread at the new position
    return hex_of(when(travel()));
  }
  if (command == "last-write" && !arguments.empty() && arguments.size() <= 2 && parse_number(arguments[0], a) &&
      (arguments.size() == 1 || parse_number(arguments[1], b)) && b > 0)
    return hex_of(last_write(travel(), a, b));
  if (command == "stack" && arguments.empty()) return hex_of(stack(travel(), general_->namer));
  if (command == "why" && !arguments.empty() && arguments.size() <= 2) return hex_of(monitor_why(arguments));
  if (command == "help" || command.empty()) return hex_of(kHelp);
  return hex_of(fmt::format("unknown or malformed monitor command '{}'; 'monitor help' lists them\n",
                            std::string(bytes.begin(), bytes.end())));
}

}  // namespace tracecorn::debug
