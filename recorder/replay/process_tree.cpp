// Role: reads a recording's process tree back from its traces (process_tree.h).
// Who calls it: the CLI, tests; any thread.
// Invariants: each trace is read once, start to end; nothing is written.
#include "recorder/replay/process_tree.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <optional>
#include <set>
#include <string_view>

#include <fmt/format.h>

#include "recorder/replay/trace_reader.h"

namespace tracecorn::replay {

namespace {

constexpr std::uint64_t kCloneThread = 0x10000;  // the same bit on every architecture
constexpr std::size_t kMostArguments = 4096, kLongestArgument = 4096;

bool is_fork(std::string_view name) {
  return name == "fork" || name == "vfork" || name == "clone" || name == "clone3";
}

// A child an image made: from its fork event, or (a trace without process
// events) from the fork's syscall, its trace then found by the naming rule.
struct Fork {
  std::uint64_t pid = 0;
  std::string via;                  // the syscall's name
  std::optional<std::string> path;  // from the fork event: the child's trace ("" when not recorded)
};

// What one image's trace says about its process.
struct ImageFacts {
  TraceImage image;
  std::uint64_t pid = 0;
  std::vector<Fork> forks;
  std::optional<std::string> next_image;  // from the exec event: the next image's trace ("" when not recorded)
};

// `name` (a fork or exec event's trace) beside the trace at `path`: a
// recording's traces lie in one directory, wherever it was moved.
std::string beside(const std::string& path, std::string_view name) {
  if (name.empty()) return "";
  return (std::filesystem::path(path).parent_path() / std::string(name)).string();
}

// Whether a process event's trace name is a file name (what the recorder
// writes): a trace is input, and may not send the tree reader elsewhere.
bool plain_file_name(std::string_view name) {
  return name.find('/') == std::string_view::npos && name != "." && name != "..";
}

// A little-endian or big-endian word of the image's initial memory; false where none is captured.
bool read_initial(const events::TraceInfo& info, std::uint64_t address, std::size_t size, bool little_endian,
                  std::uint64_t& value) {
  for (const auto& region : info.initial_memory) {
    const std::uint64_t start = region.start.value;
    if (address < start || address + size > start + region.bytes.size()) continue;
    value = 0;
    for (std::size_t i = 0; i < size; ++i) {
      const std::uint64_t byte = region.bytes[address - start + i];
      value |= byte << (8 * (little_endian ? i : size - 1 - i));
    }
    return true;
  }
  return false;
}

std::string read_initial_string(const events::TraceInfo& info, std::uint64_t address, bool little_endian) {
  std::string text;
  std::uint64_t byte = 0;
  while (text.size() < kLongestArgument && read_initial(info, address + text.size(), 1, little_endian, byte) && byte)
    text.push_back(static_cast<char>(byte));
  return text;
}

// argc and argv at the initial stack pointer, as Linux lays them out at a
// program's entry on every architecture; empty when the trace has no initial
// state (or it does not look like an entry's stack).
std::vector<std::string> entry_arguments(const TraceReader& reader) {
  const events::TraceInfo& info = reader.info();
  const arch::ArchInfo& arch = reader.arch();
  std::uint64_t sp = 0;
  bool found = false;
  for (const auto& value : info.initial_registers) {
    if (value.index >= arch.registers.size() || arch.registers[value.index].uc_id != arch.sp_reg) continue;
    for (std::size_t i = 0; i < std::min<std::size_t>(value.size, 8); ++i)
      sp |= static_cast<std::uint64_t>(value.bytes[i]) << (8 * i);  // register values are stored little-endian
    found = true;
  }
  const std::size_t word = arch.elf_64bit ? 8 : 4;
  std::uint64_t argc = 0;
  if (!found || !read_initial(info, sp, word, arch.little_endian, argc) || argc == 0 || argc > kMostArguments) return {};
  std::vector<std::string> argv;
  for (std::uint64_t i = 0; i < argc; ++i) {
    std::uint64_t pointer = 0;
    if (!read_initial(info, sp + word * (i + 1), word, arch.little_endian, pointer)) return {};
    argv.push_back(read_initial_string(info, pointer, arch.little_endian));
  }
  return argv;
}

// How an image ended: its exit event, else its last syscall. A process
// ends normally only through exit/exit_group: an exit event without one is a
// death by a signal (which one, UCIR's exit does not say).
std::string ending(const std::optional<events::ExitEvent>& exit, const std::string& last_call, std::int64_t last_result,
                   std::uint64_t last_argument, const Capabilities& capabilities) {
  const bool exit_call = last_call == "exit" || last_call == "exit_group";
  const auto exit_argument = static_cast<std::int32_t>(last_argument & 0xff);
  if (exit && exit->by_signal) return "killed by " + signal_name(exit->signal);
  if (exit_call) return fmt::format("exit {}", exit && capabilities.exit_code ? exit->code : exit_argument);
  if (replaces_image(last_call, last_result)) return "exec";
  if (exit) return "killed by a signal (which one, the trace does not say)";
  if (!capabilities.carries(events::EventKind::kExit))
    return last_call.empty() ? "no syscall (this format records no exit)"
                             : "no exit recorded (this format has none); its last syscall: " + last_call;
  return "no exit (the trace ends early)";
}

// Reads one image's trace to its end.
Expected<ImageFacts> read_image(const std::string& path, bool at_entry) {
  auto reader = TraceReader::open(path);
  if (!reader) return reader.error();
  ImageFacts facts;
  facts.pid = (*reader)->info().process_id;
  facts.image.path = path;
  if (at_entry) facts.image.argv = entry_arguments(**reader);
  if (facts.image.argv.empty()) facts.image.argv = (*reader)->info().argv;
  std::optional<events::ExitEvent> exit;
  std::string last_call;
  std::int64_t last_result = 0;
  std::uint64_t last_argument = 0;
  std::vector<Fork> fork_calls, fork_events;
  bool process_events = false;
  std::string bad_name;  // a process event's trace name that is no file name
  for (;;) {
    auto more = (*reader)->next([&](const events::Event& event) {
      if (const auto* ended = std::get_if<events::ExitEvent>(&event.payload)) {
        exit = *ended;
      } else if (const auto* change = std::get_if<events::ProcessEvent>(&event.payload)) {
        process_events = true;
        if (!plain_file_name(change->trace) && bad_name.empty()) bad_name = std::string(change->trace);
        if (change->change == events::ProcessChange::kForked)
          fork_events.push_back(Fork{change->pid, std::string(change->detail), beside(path, change->trace)});
        else
          facts.next_image = beside(path, change->trace);
      } else if (const auto* call = std::get_if<events::SyscallEvent>(&event.payload)) {
        last_call = call->name, last_result = call->result, last_argument = call->args[0];
        if ((call->name == "getpid" || call->name == "gettid") && !facts.pid && call->result > 0)
          facts.pid = static_cast<std::uint64_t>(call->result);  // (a format without the pid in its header)
        if (is_fork(call->name) && call->result > 0 && !(call->name == "clone" && (call->args[0] & kCloneThread)))
          fork_calls.push_back(Fork{static_cast<std::uint64_t>(call->result), std::string(call->name), std::nullopt});
      }
    });
    if (!more) return more.error();
    if (!*more) break;
  }
  if (!bad_name.empty())
    return make_error(ErrorCode::kBadFormat,
                      "a fork or exec event names the trace \"" + bad_name +
                          "\", which is not a file name beside this trace (the file is damaged)",
                      path);
  // A trace with process events names every child in them (a clone3 that made
  // a thread has none); an older one only through its syscalls.
  facts.forks = process_events ? std::move(fork_events) : std::move(fork_calls);
  facts.image.ending = ending(exit, last_call, last_result, last_argument, (*reader)->capabilities());
  return facts;
}

// Where a trace's name puts it: BASE, BASE.PID or BASE.PID.N.
struct TraceName {
  std::string base;
  std::uint64_t image = 0;  // N (0: the process's first image)
  bool first_process = true;
};

TraceName parse_name(const std::string& path, std::uint64_t pid) {
  const std::string own = "." + std::to_string(pid);
  if (pid && path.size() > own.size() && path.ends_with(own))
    return {path.substr(0, path.size() - own.size()), 0, false};
  const std::size_t dot = path.rfind('.');
  if (pid && dot != std::string::npos && dot + 1 < path.size() &&
      std::all_of(path.begin() + static_cast<std::ptrdiff_t>(dot) + 1, path.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    const std::string front = path.substr(0, dot);
    if (front.size() > own.size() && front.ends_with(own))
      return {front.substr(0, front.size() - own.size()), std::stoull(path.substr(dot + 1)), false};
  }
  return {path, 0, true};
}

class TreeReader {
 public:
  explicit TreeReader(std::string base) : base_(std::move(base)) {}

  // Process `pid` from its image `image` (at `path`) on, then its children.
  Status visit(TreeProcess process, std::string path, std::uint64_t image, bool at_entry,
               const std::vector<std::string>& inherited_argv) {
    if (!seen_.insert(process.pid).second) return ok_status();
    const std::size_t at = tree_.processes.size();
    tree_.processes.push_back(std::move(process));
    std::vector<Fork> forks;
    std::vector<std::vector<std::string>> fork_argv;
    std::vector<std::string> argv = inherited_argv;
    for (std::error_code ignored; !path.empty() && std::filesystem::exists(path, ignored);) {
      auto facts = read_image(path, at_entry);
      if (!facts) return facts.error();
      if (facts->image.argv.empty()) facts->image.argv = argv;
      if (!tree_.processes[at].pid) tree_.processes[at].pid = facts->pid;  // (from its getpid)
      argv = facts->image.argv;
      for (auto& fork : facts->forks) {
        forks.push_back(std::move(fork));
        fork_argv.push_back(argv);
      }
      const bool exec = facts->image.ending == "exec";
      tree_.processes[at].images.push_back(std::move(facts->image));
      if (!exec) break;
      ++image;
      path = facts->next_image.value_or(fmt::format("{}.{}.{}", base_, tree_.processes[at].pid, image));
      at_entry = true;
    }
    for (std::size_t i = 0; i < forks.size(); ++i) {
      TreeProcess child;
      child.pid = forks[i].pid;
      child.parent = tree_.processes[at].pid;
      child.started_by = forks[i].via;
      child.depth = tree_.processes[at].depth + 1;
      const std::string child_path = forks[i].path.value_or(fmt::format("{}.{}", base_, child.pid));
      // Without a fork event, a clone3 whose child has no trace made a thread (its flags are in memory).
      if (!forks[i].path && forks[i].via == "clone3" && !std::filesystem::exists(child_path)) continue;
      tree_.processes[at].children.push_back(child.pid);
      if (auto status = visit(std::move(child), child_path, 0, false, fork_argv[i]); !status) return status;
    }
    return ok_status();
  }
  ProcessTree take() { return std::move(tree_); }

 private:
  std::string base_;
  ProcessTree tree_;
  std::set<std::uint64_t> seen_;
};

std::string quoted(const std::string& argument) {
  if (!argument.empty() && argument.find_first_of(" \t\n'\"\\$;|&<>*?()") == std::string::npos) return argument;
  std::string text = "'";
  for (const char c : argument) text += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return text + "'";
}

std::string command_line(const std::vector<std::string>& argv) {
  if (argv.empty()) return "(program unknown)";
  std::string text;
  for (const auto& argument : argv) text += (text.empty() ? "" : " ") + quoted(argument);
  constexpr std::size_t kWidest = 160;
  if (text.size() > kWidest) text = text.substr(0, kWidest - 3) + "...";
  return text;
}

}  // namespace

bool replaces_image(std::string_view name, std::int64_t result) {
  return (name == "execve" || name == "execveat") && result == 0;
}

Expected<std::string> trace_named_beside(const std::string& path, std::string_view name) {
  if (name.empty() || !plain_file_name(name))
    return make_error(ErrorCode::kBadFormat,
                      "a fork or exec event names the trace \"" + std::string(name) +
                          "\", which is not a file name beside this trace",
                      path);
  return beside(path, name);
}

std::size_t ProcessTree::traces() const {
  std::size_t count = 0;
  for (const auto& process : processes) count += process.images.size();
  return count;
}

Expected<ProcessTree> read_process_tree(const std::string& path) {
  auto reader = TraceReader::open(path);
  if (!reader) return reader.error();
  const std::uint64_t pid = (*reader)->info().process_id;
  const TraceName name = parse_name(path, pid);
  reader->reset();  // closed: visit() reads it again, with the others
  TreeReader tree(name.base);
  TreeProcess first;
  first.pid = pid;
  // A forked child's first image starts at its fork's return, not at an entry.
  const bool at_entry = name.first_process || name.image > 0;
  if (auto status = tree.visit(std::move(first), path, name.image, at_entry, {}); !status) return status.error();
  return tree.take();
}

std::string format_process_tree(const ProcessTree& tree, std::string_view line_prefix) {
  std::string text;
  for (const auto& process : tree.processes) {
    const std::string indent(2 * process.depth, ' ');
    text += fmt::format("{}{}{}", line_prefix, indent, process.pid);
    if (process.depth) text += fmt::format(" ({} of {})", process.started_by, process.parent);
    if (process.images.empty()) text += ": no trace";
    text += "\n";
    for (const auto& image : process.images)
      text += fmt::format("{}{}  {} -> {}  [{}]\n", line_prefix, indent, command_line(image.argv), image.ending,
                          std::filesystem::path(image.path).filename().string());
  }
  return text;
}

std::string signal_name(std::int32_t signal) {
  const char* abbrev = signal > 0 && signal < 65 ? sigabbrev_np(signal) : nullptr;
  return abbrev ? std::string("SIG") + abbrev : "signal " + std::to_string(signal);
}

}  // namespace tracecorn::replay
