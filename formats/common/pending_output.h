// Role: an output file that appears only when it is complete, so that a failed
// conversion or export never leaves a file that a reader accepts (a trace
// converted from a damaged one would otherwise read as a whole, shorter trace).
// The writer writes to a temporary name beside the final one (same directory,
// hence same file system: "OUT.partial-PID-N", created with O_EXCL); commit()
// renames it over the final name; destroying an uncommitted one removes it.
// "-" (standard output) and an existing target that is not a regular file
// (/dev/null, a FIFO, a terminal) are written in place: they cannot be renamed
// over, and a reader cannot take them for a trace file left behind.
// Who calls it: the trace tools (recorder/replay/trace_tools.h: convert, the
// drcov and Chrome exports), one thread. A recording does not use it: a killed
// recording must leave its readable prefix under its own name.
// Errors: creating the temporary file or renaming it, as kIo naming the path.
#pragma once

#include <string>

#include "recorder/support/expected.h"

namespace tracecorn::formats {

class PendingOutput {
 public:
  // Creates the temporary file beside `path` (or nothing, for "-" and special
  // files). Fails with kIo naming `path` when the directory is not writable.
  static Expected<PendingOutput> create(const std::string& path);
  PendingOutput(PendingOutput&& other) noexcept;
  PendingOutput& operator=(PendingOutput&&) = delete;
  PendingOutput(const PendingOutput&) = delete;
  ~PendingOutput();  // removes the temporary file unless committed

  // Where the writer must write: the temporary name, or the target itself.
  const std::string& write_path() const { return write_path_; }
  // The final name.
  const std::string& path() const { return path_; }
  // Renames the temporary file over the final name (after the writer has
  // closed it). Fails with kIo naming the final path; the temporary file is
  // removed then.
  Status commit();

 private:
  PendingOutput(std::string path, std::string write_path) : path_(std::move(path)), write_path_(std::move(write_path)) {}
  std::string path_;
  std::string write_path_;
  bool pending_ = false;  // a temporary file exists that is ours to rename or remove
};

}  // namespace tracecorn::formats
