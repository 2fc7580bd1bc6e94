// Role: which events a Python iteration or column keeps (Trace.events(),
// Trace.column()): a replay::EventFilter and a window of sequence numbers.
// Threads: a plain value.
#pragma once

#include <cstdint>

#include "recorder/events/event.h"
#include "recorder/replay/trace_tools.h"

namespace tracecorn::python {

// Which events an iteration or a column keeps: a replay::EventFilter (kinds,
// address range, thread) and a window of sequence numbers [first, end).
struct Selection {
  replay::EventFilter filter;
  std::uint64_t first = 0, end = ~std::uint64_t{0};
  bool matches(const events::Event& event) const {
    return event.sequence.value >= first && event.sequence.value < end && filter.matches(event);
  }
  // Whether every sequence number is inside the window (the filter's and ours).
  bool whole_window() const {
    return first == 0 && end == ~std::uint64_t{0} && filter.first == 0 && filter.last == ~std::uint64_t{0};
  }
};

}  // namespace tracecorn::python
