// Role: implementation of the progress line (see progress.h). Writes with
// write(2) on the descriptor: no stdio buffering shared with the output.
#include "recorder/replay/progress.h"

#include <fmt/format.h>

namespace tracecorn::replay {

Progress::Progress(std::string what, std::uint64_t total_bytes, int fd)
    : what_(std::move(what)), total_bytes_(total_bytes), fd_(fd), active_(isatty(fd) == 1) {}

Progress::~Progress() {
  if (!drawn_) return;
  static constexpr char kErase[] = "\r\033[K";  // back to the start of the line, erase it
  (void)!::write(fd_, kErase, sizeof kErase - 1);
}

void Progress::draw_if_due(std::uint64_t events, std::uint64_t bytes) {
  const auto now = std::chrono::steady_clock::now();
  if (drawn_ && now - last_ < std::chrono::milliseconds(100)) return;
  last_ = now;
  drawn_ = true;
  constexpr double kMiB = 1024.0 * 1024.0;
  const std::string line =
      total_bytes_ ? fmt::format("\rtracecorn: {}: {} events, {:.1f} of {:.1f} MiB read ({:.0f}%)\033[K", what_, events,
                                 static_cast<double>(bytes) / kMiB, static_cast<double>(total_bytes_) / kMiB,
                                 100.0 * static_cast<double>(bytes) / static_cast<double>(total_bytes_))
                   : fmt::format("\rtracecorn: {}: {} events, {:.1f} MiB read\033[K", what_, events,
                                 static_cast<double>(bytes) / kMiB);
  (void)!::write(fd_, line.data(), line.size());
}

}  // namespace tracecorn::replay
