// Role: ColumnCache (see column_cache.h): filling it during a pass of the
// reader, and answering a column from memory.
#include "recorder/python/column_cache.h"

#include <algorithm>
#include <limits>

namespace tracecorn::python {
namespace {

constexpr std::uint64_t kNoLimit = std::numeric_limits<std::uint64_t>::max();

template <typename T>
std::uint64_t bytes_of(const std::vector<T>& values) {
  return values.capacity() * sizeof(T);
}

// Appends `value` from event `index` on, unless the last run already holds it.
template <typename Run>
void extend_runs(std::vector<Run>& runs, std::uint64_t index, std::uint64_t value) {
  if (runs.empty() || runs.back().value != value) runs.push_back({index, value});
}

// The run that holds event `index` (runs start at event 0).
template <typename Run>
std::size_t run_holding(const std::vector<Run>& runs, std::uint64_t index) {
  const auto after = std::upper_bound(runs.begin(), runs.end(), index,
                                      [](std::uint64_t i, const Run& run) { return i < run.start; });
  return static_cast<std::size_t>(after - runs.begin()) - 1;
}

template <typename T>
void shrink(std::vector<T>& values) {
  if (values.capacity() > values.size()) values.shrink_to_fit();
}

}  // namespace

std::optional<std::size_t> ColumnCache::data_slot(Column column) {
  switch (column) {
    case Column::kPc: return 0;
    case Column::kAddress: return 1;
    case Column::kSize: return 2;
    case Column::kValue: return 3;
    default: return std::nullopt;
  }
}

std::uint64_t ColumnCache::bytes() const {
  std::uint64_t total = bytes_of(kinds_) + bytes_of(threads_) + bytes_of(sequence_offsets_);
  for (const auto& values : data_) total += bytes_of(values);
  return total;
}

bool ColumnCache::answers(Column column, const Selection& selection) const {
  if (!keys_held_ || selection.filter.range) return false;
  const auto slot = data_slot(column);
  return !slot || held_[*slot];
}

bool ColumnCache::worth_filling(Column column) const {
  if (budget_bytes_ == 0 || keys_over_budget_) return false;
  const auto slot = data_slot(column);
  if (!slot || data_over_budget_) return !keys_held_;
  return !held_[*slot];
}

std::uint64_t ColumnCache::sequence_at(std::uint64_t index) const {
  return index + sequence_offsets_[run_holding(sequence_offsets_, index)].value;
}

// The first event whose sequence number is `sequence` or more (sequence
// numbers grow with the index); the event count when there is none.
std::uint64_t ColumnCache::index_of_sequence(std::uint64_t sequence) const {
  std::uint64_t low = 0, high = kinds_.size();
  while (low < high) {
    const std::uint64_t middle = low + (high - low) / 2;
    if (sequence_at(middle) < sequence) low = middle + 1;
    else high = middle;
  }
  return low;
}

// Calls visit(first, end, thread, sequence offset) for each stretch of events
// in [first, end) over which neither the thread nor the sequence offset changes.
template <typename Visit>
void ColumnCache::for_each_segment(std::uint64_t first, std::uint64_t end, Visit&& visit) const {
  if (first >= end) return;
  std::size_t thread = run_holding(threads_, first), offset = run_holding(sequence_offsets_, first);
  for (std::uint64_t start = first; start < end;) {
    const std::uint64_t thread_end = thread + 1 < threads_.size() ? threads_[thread + 1].start : kNoLimit;
    const std::uint64_t offset_end =
        offset + 1 < sequence_offsets_.size() ? sequence_offsets_[offset + 1].start : kNoLimit;
    const std::uint64_t stop = std::min({end, thread_end, offset_end});
    visit(start, stop, threads_[thread].value, sequence_offsets_[offset].value);
    start = stop;
    if (start == thread_end) ++thread;
    if (start == offset_end) ++offset;
  }
}

std::vector<std::uint64_t> ColumnCache::select(Column column, const Selection& selection) const {
  const auto& filter = selection.filter;
  const std::uint64_t first_sequence = std::max(selection.first, filter.first);
  const std::uint64_t end_sequence = std::min(selection.end, filter.last == kNoLimit ? kNoLimit : filter.last + 1);
  if (first_sequence >= end_sequence) return {};
  const std::uint64_t first = index_of_sequence(first_sequence), end = index_of_sequence(end_sequence);
  std::array<std::uint8_t, 256> wanted{};
  for (std::size_t kind = 0; kind < events::kEventKindCount; ++kind) wanted[kind] = filter.kinds[kind] ? 1 : 0;
  const auto thread_kept = [&](std::uint64_t thread) { return !filter.thread || thread == *filter.thread; };

  std::uint64_t count = 0;
  for_each_segment(first, end, [&](std::uint64_t from, std::uint64_t to, std::uint64_t thread, std::uint64_t) {
    if (!thread_kept(thread)) return;
    for (std::uint64_t i = from; i < to; ++i) count += wanted[kinds_[i]];
  });
  // Every event's value is written at the next free place, which only a kept
  // event claims: no branch per event (the last write may land in the spare place).
  std::vector<std::uint64_t> values(count + 1);
  std::uint64_t kept = 0;
  const auto fill = [&](auto value_of) {
    for_each_segment(first, end, [&](std::uint64_t from, std::uint64_t to, std::uint64_t thread, std::uint64_t offset) {
      if (!thread_kept(thread)) return;
      for (std::uint64_t i = from; i < to; ++i) {
        values[kept] = value_of(i, thread, offset);
        kept += wanted[kinds_[i]];
      }
    });
  };
  switch (column) {
    case Column::kIndex: fill([](std::uint64_t i, std::uint64_t, std::uint64_t) { return i; }); break;
    case Column::kSequence:
      fill([](std::uint64_t i, std::uint64_t, std::uint64_t offset) { return i + offset; });
      break;
    case Column::kThread: fill([](std::uint64_t, std::uint64_t thread, std::uint64_t) { return thread; }); break;
    case Column::kKind:
      fill([this](std::uint64_t i, std::uint64_t, std::uint64_t) { return std::uint64_t{kinds_[i]}; });
      break;
    default: {
      const auto& data = data_[*data_slot(column)];
      fill([&data](std::uint64_t i, std::uint64_t, std::uint64_t) { return data[i]; });
    }
  }
  values.resize(count);
  return values;
}

ColumnCache::Filler::Filler(ColumnCache& cache, Column column, std::optional<std::uint64_t> expected_events)
    : cache_(cache), fill_keys_(!cache.keys_held_) {
  const auto slot = data_slot(column);
  if (slot && !cache.held_[*slot] && !cache.data_over_budget_) data_column_ = column;
  const std::uint64_t held = cache.bytes();
  const std::uint64_t room = cache.budget_bytes_ > held ? cache.budget_bytes_ - held : 0;
  const std::uint64_t key_bytes = fill_keys_ ? sizeof(std::uint8_t) : 0;
  max_events_with_data_ = data_column_ ? room / (key_bytes + sizeof(std::uint64_t)) : kNoLimit;
  max_events_with_keys_ = fill_keys_ ? room / key_bytes : kNoLimit;
  if (expected_events && *expected_events <= max_events_with_data_) {
    if (fill_keys_) kinds_.reserve(*expected_events);
    if (data_column_) values_.reserve(*expected_events);
  }
}

void ColumnCache::Filler::add(const events::Event& event, std::uint64_t index) {
  if (index >= max_events_with_data_ && data_column_) {
    data_column_.reset();
    values_ = {};
    data_dropped_ = true;
  }
  if (index >= max_events_with_keys_ && fill_keys_) {
    fill_keys_ = false;
    kinds_ = {};
    threads_ = {};
    sequence_offsets_ = {};
    keys_dropped_ = true;
  }
  if (fill_keys_) {
    kinds_.push_back(static_cast<std::uint8_t>(event.kind));
    extend_runs(threads_, index, event.thread.value);
    extend_runs(sequence_offsets_, index, event.sequence.value - index);
  }
  if (data_column_) values_.push_back(column_value(event, index, *data_column_));
}

void ColumnCache::Filler::finish() {
  if (data_dropped_) cache_.data_over_budget_ = true;
  if (keys_dropped_) cache_.keys_over_budget_ = true;
  if (fill_keys_) {
    shrink(kinds_);
    shrink(threads_);
    shrink(sequence_offsets_);
    const std::uint64_t key_bytes = bytes_of(kinds_) + bytes_of(threads_) + bytes_of(sequence_offsets_);
    if (cache_.bytes() + key_bytes > cache_.budget_bytes_) {
      cache_.keys_over_budget_ = true;
      return;
    }
    cache_.kinds_ = std::move(kinds_);
    cache_.threads_ = std::move(threads_);
    cache_.sequence_offsets_ = std::move(sequence_offsets_);
    cache_.keys_held_ = true;
  }
  if (!data_column_ || !cache_.keys_held_ || values_.size() != cache_.kinds_.size()) return;
  shrink(values_);
  if (cache_.bytes() + bytes_of(values_) > cache_.budget_bytes_) {
    cache_.data_over_budget_ = true;
    return;
  }
  const std::size_t slot = *data_slot(*data_column_);
  cache_.data_[slot] = std::move(values_);
  cache_.held_[slot] = true;
}

}  // namespace tracecorn::python
