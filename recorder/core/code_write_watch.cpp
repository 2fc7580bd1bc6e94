// Role: implementation of CodeWriteWatch (see code_write_watch.h). Emulation thread.
#include "recorder/core/code_write_watch.h"

#include <iterator>
#include <vector>

namespace tracecorn::core {

bool CodeWriteWatch::watch(std::uint64_t address, std::uint64_t size) noexcept {
  if (!callback_ || size == 0) return false;
  std::uint64_t first = address & ~kPageMask;
  std::uint64_t last = (address + size - 1) | kPageMask;
  if (last < first) last = UINT64_MAX;  // (wraps at the top of the address space)
  // Already inside one range: nothing to do (the common case).
  auto at = ranges_.upper_bound(first);
  if (at != ranges_.begin() && std::prev(at)->second.last >= last) return true;
  widen_to_bound(first, last);
  // Merge with every range that overlaps or touches [first, last], so that
  // neighbouring code pages share one hook (each store checks every hook).
  const auto [begin, end] = touching(first, last);
  std::vector<Ranges::iterator> merged;
  try {
    for (auto range = begin; range != end; ++range) {
      merged.push_back(range);
      if (range->first < first) first = range->first;
      if (range->second.last > last) last = range->second.last;
    }
    if (merged.empty()) merged.push_back(ranges_.emplace(first, Range{last, 0}).first);  // (hook set below)
  } catch (...) {
    return false;
  }
  uc_hook hook = 0;
  if (uc_hook_add(engine_, &hook, UC_HOOK_MEM_WRITE, reinterpret_cast<void*>(callback_), user_, first, last) !=
      UC_ERR_OK) {
    if (merged.size() == 1 && merged.front()->second.hook == 0) ranges_.erase(merged.front());
    return false;
  }
  // The new hook is in place before the old ones go: no store in between
  // (this runs on the emulation thread) and no page left unwatched. The first
  // merged entry's node becomes the union's (no allocation).
  for (auto range : merged)
    if (range->second.hook) uc_hook_del(engine_, range->second.hook);
  auto node = ranges_.extract(merged.front());
  for (std::size_t i = 1; i < merged.size(); ++i) ranges_.erase(merged[i]);
  node.key() = first;
  node.mapped() = Range{last, hook};
  ranges_.insert(std::move(node));
  return true;
}

std::pair<CodeWriteWatch::Ranges::iterator, CodeWriteWatch::Ranges::iterator> CodeWriteWatch::touching(
    std::uint64_t first, std::uint64_t last) noexcept {
  auto touches = [&](const Ranges::value_type& range) {
    return (last == UINT64_MAX || range.first <= last + 1) &&
           (range.second.last == UINT64_MAX || range.second.last + 1 >= first);
  };
  // Ranges are disjoint and apart: only the one before `first` can reach it.
  auto begin = ranges_.upper_bound(first);
  if (begin != ranges_.begin() && touches(*std::prev(begin))) --begin;
  auto end = begin;
  while (end != ranges_.end() && touches(*end)) ++end;
  return {begin, end};
}

// Each guest store checks every hook: at most kMaxRanges of them. While
// [first, last] would make one range too many, it grows over the nearest gap
// to a neighbouring range (a store into a page of the gap then costs a
// callback that finds no code there).
void CodeWriteWatch::widen_to_bound(std::uint64_t& first, std::uint64_t& last) noexcept {
  for (;;) {
    const auto [begin, end] = touching(first, last);
    if (ranges_.size() - static_cast<std::size_t>(std::distance(begin, end)) + 1 <= kMaxRanges) return;
    const bool has_left = begin != ranges_.begin(), has_right = end != ranges_.end();
    const std::uint64_t left_gap = has_left ? first - std::prev(begin)->second.last : UINT64_MAX;
    const std::uint64_t right_gap = has_right ? end->first - last : UINT64_MAX;
    if (has_left && left_gap <= right_gap) {
      first = std::prev(begin)->first;
    } else {
      last = end->second.last;  // (has_right: more than kMaxRanges ranges exist, so one side has one)
    }
  }
}

// Only ranges wholly inside [start, end) go: a range that also holds other
// pages stays watched (a store there costs a callback that finds no code).
void CodeWriteWatch::unwatch(std::uint64_t start, std::uint64_t end) noexcept {
  for (auto at = ranges_.lower_bound(start); at != ranges_.end() && at->second.last < end;) {
    uc_hook_del(engine_, at->second.hook);
    at = ranges_.erase(at);
  }
}

void CodeWriteWatch::clear() noexcept {
  for (const auto& [first, range] : ranges_) uc_hook_del(engine_, range.hook);
  ranges_.clear();
}

}  // namespace tracecorn::core
