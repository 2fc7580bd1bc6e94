// Role: OrderedJobs, worker threads that do one kind of work on jobs handed in
// one after another, and give the jobs back in the order they came in: how a
// trace writer encodes independent chunks of its trace on several threads
// and still writes them to its file in order.
// Who calls it: one owner thread submits and takes jobs; the workers run
// `work(job, worker)` on jobs they take from the queue, each on one job at a
// time, under no lock. A job belongs to the owner until submit(), to one
// worker while its work runs, and to the owner again from take_oldest().
// Invariants: take_oldest() returns jobs in submission order, and only once
// their work has returned; the destructor stops the workers after the work
// that has started (jobs never started are dropped with the object).
// Errors: `work` must not throw (it keeps its errors in the job); starting a
// thread may throw std::system_error from the constructor.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

namespace tracecorn::formats {

template <typename Job>
class OrderedJobs {
 public:
  using Work = std::function<void(Job& job, std::size_t worker)>;

  // Starts `threads` workers (at least 1); `work` runs on them.
  OrderedJobs(std::size_t threads, Work work) : work_(std::move(work)) {
    if (threads == 0) threads = 1;
    workers_.reserve(threads);
    try {
      for (std::size_t i = 0; i < threads; ++i) workers_.emplace_back([this, i] { run(i); });
    } catch (...) {
      stop();
      throw;
    }
  }
  ~OrderedJobs() { stop(); }
  OrderedJobs(const OrderedJobs&) = delete;
  OrderedJobs& operator=(const OrderedJobs&) = delete;

  std::size_t threads() const { return workers_.size(); }

  void submit(std::unique_ptr<Job> job) {
    {
      std::lock_guard lock(mutex_);
      entries_.push_back({std::move(job), false});
    }
    queued_.notify_one();
  }

  // Jobs submitted and not taken back yet.
  std::size_t outstanding() const {
    std::lock_guard lock(mutex_);
    return entries_.size();
  }

  // The oldest job not taken back, once its work is done: waits for it when
  // `wait`, else returns null when it is not done. Null when there is none.
  std::unique_ptr<Job> take_oldest(bool wait) {
    std::unique_lock lock(mutex_);
    if (entries_.empty()) return nullptr;
    if (!entries_.front().done) {
      if (!wait) return nullptr;
      finished_.wait(lock, [this] { return entries_.front().done; });
    }
    std::unique_ptr<Job> job = std::move(entries_.front().job);
    entries_.pop_front();
    --next_;  // (next_ counts from the front)
    return job;
  }

 private:
  struct Entry {
    std::unique_ptr<Job> job;
    bool done = false;
  };

  void run(std::size_t worker) {
    std::unique_lock lock(mutex_);
    for (;;) {
      queued_.wait(lock, [this] { return stopping_ || next_ < entries_.size(); });
      if (stopping_) return;
      Entry& entry = entries_[next_++];  // (a deque's elements stay put while others are added or popped)
      Job* job = entry.job.get();
      lock.unlock();
      work_(*job, worker);
      lock.lock();
      entry.done = true;
      finished_.notify_all();
    }
  }

  void stop() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    queued_.notify_all();
    for (auto& worker : workers_)
      if (worker.joinable()) worker.join();
  }

  Work work_;
  mutable std::mutex mutex_;
  std::condition_variable queued_;    // a job was submitted, or the workers must stop
  std::condition_variable finished_;  // a job's work is done
  std::deque<Entry> entries_;         // submitted, not taken back, in submission order
  std::size_t next_ = 0;              // entries_[next_] is the first not started
  bool stopping_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace tracecorn::formats
