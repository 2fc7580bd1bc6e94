// Role: EventBatch, events that outlive the call that delivered them. An
// Event is a view (its spans and strings point into the reader's or the
// recorder's buffers, valid during one callback); EventBatch::add copies one
// with everything it points at into the batch's own storage, so that a batch
// can be filled on one thread and read on another (replay/read_ahead.h).
// Who uses it: one thread at a time (not thread safe); the events it holds
// stay valid until clear() or the batch's end.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "recorder/events/event.h"

namespace tracecorn::events {

class EventBatch {
 public:
  // Copies `event` and every span and string inside it (may throw bad_alloc).
  void add(const Event& event);
  std::span<const Event> events() const { return events_; }
  std::size_t size() const { return events_.size(); }
  // Bytes of copied spans and strings held (what add() stored besides the events).
  std::size_t stored_bytes() const { return stored_bytes_; }
  // Forgets the events; keeps the storage for the next ones.
  void clear();

 private:
  template <typename T>
  std::span<const T> copy(std::span<const T> items);
  std::string_view copy(std::string_view text);
  void* allocate(std::size_t bytes, std::size_t alignment);

  std::vector<Event> events_;
  // Storage: blocks filled in order, never moved (the copies point into them).
  std::vector<std::unique_ptr<std::byte[]>> blocks_;
  std::vector<std::size_t> block_sizes_;
  std::size_t block_ = 0, used_ = 0;  // the block being filled, and its bytes used
  std::size_t stored_bytes_ = 0;
};

}  // namespace tracecorn::events
