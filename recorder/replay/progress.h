// Role: the progress line of long trace operations (dump, stat, convert,
// replay, building a TraceIndex): one line on stderr, redrawn in place, with
// the events done and the bytes of the file read. Shown only when the file
// descriptor is a terminal (isatty): never in a pipe or a file, so that
// output captured by scripts and tests stays exactly the same.
// Who calls it: TraceReader::next() once per record, when a command asked for
// progress (TraceReader::show_progress); one thread.
// Invariants: cheap when inactive (one branch) and when active (a counter
// test per call; the clock is read every 1024 calls, the line redrawn at most
// ten times a second); the destructor erases the line it drew.
#pragma once

#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <string>

namespace tracecorn::replay {

class Progress {
 public:
  // A display labelled `what` ("stat", "replay: comparing") on `fd`, active
  // only when `fd` is a terminal. `total_bytes`: the file's size (0: unknown).
  Progress(std::string what, std::uint64_t total_bytes, int fd = STDERR_FILENO);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  bool active() const { return active_; }
  // `events` done, `bytes` of the file read: redraws the line when due (the
  // first call draws at once).
  void update(std::uint64_t events, std::uint64_t bytes) {
    if (!active_ || (++calls_ & 1023) != 1) return;
    draw_if_due(events, bytes);
  }

 private:
  void draw_if_due(std::uint64_t events, std::uint64_t bytes);

  std::string what_;
  std::uint64_t total_bytes_;
  int fd_;
  bool active_;
  bool drawn_ = false;
  std::uint64_t calls_ = 0;
  std::chrono::steady_clock::time_point last_{};
};

}  // namespace tracecorn::replay
