// Role: how one recording names the traces of its process tree, as
// `strace -ff -o BASE` names its files: BASE for the first process's first
// image, BASE.PID for another process's first image, BASE.PID.N for the N-th
// image process PID exec'd. A recording to standard output ("-") holds the
// first image only.
// Who uses it: the CLI (the file each image writes), ProcessRecording (the
// names its fork and exec events give) and the process-tree reader. Plain
// values and functions: any thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace tracecorn::session {

struct TraceNaming {
  std::string base;             // the recording's output (-o): a path, or "-"
  std::uint64_t tree_root = 0;  // the first process's pid

  // The trace of process `pid`'s image number `image` (0: its first); "" when
  // that image is not recorded (the output is standard output).
  std::string path_of(std::uint64_t pid, std::uint64_t image) const;
};

// What follows the last '/' of `path` (all of it when there is none): the
// name a fork or exec event gives, as a tree's traces lie in one directory.
std::string_view file_name_of(std::string_view path);

}  // namespace tracecorn::session
