// Role: the process tree of a recording, read back from its traces. A
// recording of a program that forks and execs writes one trace per process
// image (the CLI's naming, as strace -ff -o names its files): BASE for the
// first process's first image, BASE.PID for another process's first image,
// BASE.PID.N for the N-th image a process exec'd (recorder/session/
// trace_naming.h). This follows the fork and exec events each trace recorded
// (events::ProcessEvent: each names the child's trace, or the next image's,
// looked for beside the trace that names it); in a trace without them (an
// older recording), the fork-family syscalls (their results name the
// children), the execve that ends an image and the naming rule. It says how
// each image ended. `tracecorn stat`/`dump` print it; `tracecorn replay`
// replays it.
// Who calls it: the CLI, tests; any thread (it only reads files).
// Invariants: processes in preorder (a parent before its children, children
// in fork order); a child whose trace is missing is listed, with no images.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "recorder/support/expected.h"

namespace tracecorn::replay {

// One process image's trace.
struct TraceImage {
  std::string path;               // the trace file
  std::vector<std::string> argv;  // from the image's initial stack (or the trace's header); empty when unknown
  std::string ending;             // "exit 0", "killed by SIGTERM", "exec", "no exit (the trace ends early)"
};

// One process of the tree.
struct TreeProcess {
  std::uint64_t pid = 0;
  std::uint64_t parent = 0;          // 0 for the first process
  std::string started_by;            // the parent's syscall ("fork", "vfork", "clone", "clone3"); "" for the first
  std::size_t depth = 0;             // 0 for the first process
  std::vector<TraceImage> images;    // in exec order; empty when its trace is missing
  std::vector<std::uint64_t> children;  // pids, in fork order
};

struct ProcessTree {
  std::vector<TreeProcess> processes;  // preorder
  std::size_t traces() const;
};

// Whether syscall `name` returning `result` replaced the process image (a
// successful execve or execveat): the image's trace ends there, and the next
// image has a trace of its own.
bool replaces_image(std::string_view name, std::int64_t result);

// The trace a fork or exec event of the trace at `path` names (`name`): the
// file `name` beside it, as a recording's traces lie in one directory wherever
// it was moved. Fails (kBadFormat, naming `path`) when `name` is empty or not
// a plain file name: a trace is input, and may not send its reader elsewhere.
Expected<std::string> trace_named_beside(const std::string& path, std::string_view name);

// The tree of the recording whose trace `path` is (the first process's, or any
// process's: the tree below that one). An unreadable trace is an error naming
// its file and offset.
Expected<ProcessTree> read_process_tree(const std::string& path);

// One line per process and image, indented by depth, ending with '\n':
//   "12011 fork_wait -> exit 0  (t.ucir)".
std::string format_process_tree(const ProcessTree& tree, std::string_view line_prefix = "");

// "SIGTERM" for 15, "signal N" for a number with no name (0, above 64, negative).
std::string signal_name(std::int32_t signal);

}  // namespace tracecorn::replay
