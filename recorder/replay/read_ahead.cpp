// Role: implementation of read_ahead() (see read_ahead.h).
#include "recorder/replay/read_ahead.h"

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <thread>
#include <vector>

#include "recorder/events/event_batch.h"

namespace tracecorn::replay {

namespace {

// A batch is handed over once it holds this many events or bytes of copies:
// small enough to stay in the caches between the two threads (16384 events,
// 2.9 MB of events per batch, cost the reader a quarter of its time in cache
// misses). Sixteen batches (about 12 MB) let the reader go on through a pause
// of the caller's as long as one trace index chunk's compression (65536
// events). Measured on a 153M-event full-level trace (replay_seek_bench):
// 16384 x 4: 11.5-14 s, 4096 x 4: 10.8 s, 4096 x 8: 8.5 s, 4096 x 16: 8.3 s.
constexpr std::size_t kBatchEvents = 4096;
constexpr std::size_t kBatchBytes = 1u << 20;
constexpr std::size_t kBatches = 16;  // in flight at most: being filled, waiting, being consumed

// The hand-over between the reader thread and the caller: full batches in
// order, then the end (an error or none); empty batches back for reuse.
class BatchQueue {
 public:
  BatchQueue() {
    for (std::size_t i = 0; i < kBatches; ++i) free_.push_back(std::make_unique<events::EventBatch>());
  }
  // Reader side. nullptr once the caller stopped.
  std::unique_ptr<events::EventBatch> take_free() {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return !free_.empty() || stopped_; });
    if (stopped_) return nullptr;
    auto batch = std::move(free_.back());
    free_.pop_back();
    return batch;
  }
  void put_full(std::unique_ptr<events::EventBatch> batch) {
    std::lock_guard lock(mutex_);
    full_.push_back(std::move(batch));
    changed_.notify_all();
  }
  void finish(Status status) {
    std::lock_guard lock(mutex_);
    end_ = std::move(status);
    changed_.notify_all();
  }
  // Caller side: the next full batch, or nullptr at the end (then end()).
  std::unique_ptr<events::EventBatch> take_full() {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return !full_.empty() || end_.has_value(); });
    if (full_.empty()) return nullptr;
    auto batch = std::move(full_.front());
    full_.pop_front();
    return batch;
  }
  void put_free(std::unique_ptr<events::EventBatch> batch) {
    batch->clear();
    std::lock_guard lock(mutex_);
    free_.push_back(std::move(batch));
    changed_.notify_all();
  }
  void stop() {
    std::lock_guard lock(mutex_);
    stopped_ = true;
    changed_.notify_all();
  }
  Status end() {
    std::lock_guard lock(mutex_);
    return end_.value_or(ok_status());
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<std::unique_ptr<events::EventBatch>> free_;
  std::deque<std::unique_ptr<events::EventBatch>> full_;
  std::optional<Status> end_;
  bool stopped_ = false;
};

// The reader thread: records into batches until the end, an error, or the caller stops.
void read_into(TraceReader& reader, BatchQueue& queue) {
  try {
    std::unique_ptr<events::EventBatch> batch = queue.take_free();
    const TraceReader::EventCallback keep = [&](const events::Event& event) { batch->add(event); };
    while (batch) {
      auto more = reader.next(keep);
      const bool ended = !more || !*more;
      if (ended || batch->size() >= kBatchEvents || batch->stored_bytes() >= kBatchBytes) {
        if (batch->size()) {
          queue.put_full(std::move(batch));
          if (!ended) batch = queue.take_free();
        }
        if (ended) return queue.finish(more ? ok_status() : Status(more.error()));
      }
    }
    queue.finish(ok_status());  // the caller stopped
  } catch (const std::bad_alloc&) {
    queue.finish(make_error(ErrorCode::kLimit, "out of memory reading ahead", reader.path()));
  }
}

Status read_in_turn(TraceReader& reader, const std::function<void(const events::Event&)>& on_event,
                    const std::function<bool()>& stop) {
  for (;;) {
    auto more = reader.next(on_event);
    if (!more) return more.error();
    if (!*more || stop()) return ok_status();
  }
}

}  // namespace

Status read_ahead(TraceReader& reader, const std::function<void(const events::Event&)>& on_event,
                  const std::function<bool()>& stop, bool parallel) {
  if (!parallel || std::thread::hardware_concurrency() < 2) return read_in_turn(reader, on_event, stop);
  BatchQueue queue;
  std::thread reading;
  try {
    reading = std::thread(read_into, std::ref(reader), std::ref(queue));
  } catch (const std::system_error&) {
    return read_in_turn(reader, on_event, stop);  // no thread to be had: in turn
  }
  struct Join {  // the reader thread never outlives the call, whatever on_event throws
    BatchQueue& queue;
    std::thread& thread;
    ~Join() {
      queue.stop();
      thread.join();
    }
  } join{queue, reading};
  while (auto batch = queue.take_full()) {
    for (const events::Event& event : batch->events()) on_event(event);
    queue.put_free(std::move(batch));
    if (stop()) return ok_status();
  }
  return queue.end();
}

}  // namespace tracecorn::replay
