// Role: a trace's columns kept in memory, behind Trace.column(): every
// event's kind (a byte), its thread and sequence number (as runs: they change
// rarely), and, for each numeric column asked for (pc, address, size, value),
// every event's value. A column of any kinds, sequence window and thread is
// then a loop over memory instead of a pass of the reader.
// Threads: one at a time (the handle's rule: the Python thread holding the
// GIL, or the call it released the GIL for).
// Invariants: filled by whole passes over the trace, each from its first
// event to its last (a Filler); every column held has one value per event
// counted by the kinds; never holds more than its budget of bytes: a pass
// that would go past it keeps nothing new, and no later pass tries again.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <vector>

#include "recorder/events/event.h"
#include "recorder/python/event_record.h"
#include "recorder/python/selection.h"

namespace tracecorn::python {

class ColumnCache {
 public:
  // Keeps at most `budget_bytes` (0: nothing, every column() reads the file).
  explicit ColumnCache(std::uint64_t budget_bytes) : budget_bytes_(budget_bytes) {}

  // Whether select() can answer: the events' keys are held, and `column`
  // (unless it is index, seq, thread or kind), and `selection` has no address
  // range (tested on fields the cache does not keep).
  bool answers(Column column, const Selection& selection) const;
  // `column` of every event `selection` keeps, in order (answers() must hold).
  std::vector<std::uint64_t> select(Column column, const Selection& selection) const;
  // Whether a pass over the whole trace should fill `column` in: not held yet,
  // and no pass has found the budget too small for it.
  bool worth_filling(Column column) const;
  // The bytes held.
  std::uint64_t bytes() const;

  // A value (a thread; a sequence number minus the index) that holds from
  // event `start` to the next run's start.
  struct Run {
    std::uint64_t start;
    std::uint64_t value;
  };

  // Fills the cache during one pass over the whole trace: add() every event in
  // order, then finish(). Keeps nothing when the pass is abandoned (a damaged
  // file: destroyed without finish()) or goes past the budget.
  class Filler {
   public:
    // `expected_events`: the trace's event count when known (reserves once).
    Filler(ColumnCache& cache, Column column, std::optional<std::uint64_t> expected_events);
    void add(const events::Event& event, std::uint64_t index);
    void finish();

   private:
    ColumnCache& cache_;
    std::optional<Column> data_column_;  // none: the keys only
    bool fill_keys_;
    std::uint64_t max_events_with_data_, max_events_with_keys_;  // the budget, in events
    bool data_dropped_ = false, keys_dropped_ = false;
    std::vector<std::uint8_t> kinds_;
    std::vector<Run> threads_, sequence_offsets_;
    std::vector<std::uint64_t> values_;
  };

 private:
  static constexpr std::size_t kDataColumns = 4;  // pc, address, size, value
  static std::optional<std::size_t> data_slot(Column column);
  template <typename Visit>
  void for_each_segment(std::uint64_t first, std::uint64_t end, Visit&& visit) const;
  std::uint64_t index_of_sequence(std::uint64_t sequence) const;
  std::uint64_t sequence_at(std::uint64_t index) const;

  std::uint64_t budget_bytes_;
  bool keys_held_ = false;
  std::vector<std::uint8_t> kinds_;       // by event index
  std::vector<Run> threads_;              // the thread from `start` on
  std::vector<Run> sequence_offsets_;     // sequence - index from `start` on
  std::array<std::vector<std::uint64_t>, kDataColumns> data_;
  std::array<bool, kDataColumns> held_{};
  bool data_over_budget_ = false, keys_over_budget_ = false;
};

}  // namespace tracecorn::python
