// Role: implementation of Drain (see drain.h).
#include "recorder/core/drain.h"

#include <span>
#include <utility>

#include "recorder/support/started_thread.h"

namespace tracecorn::core {

Drain::~Drain() {
  if (thread_.joinable()) thread_.detach();  // (finish() joins; only an abandoned drain is left)
}

void Drain::start() { thread_ = start_thread([this] { loop(); }); }

void Drain::loop() {
  bool failure_reported = false;
  for (;;) {
    const bool more = ring_.wait_for_data(std::chrono::milliseconds(50));
    std::lock_guard gate(gate_);  // (held by the emulation thread across a fork)
    // A request made after its records were published: read before consuming,
    // it promises that this batch holds them.
    const std::uint64_t requested = flushes_requested_.load(std::memory_order_acquire);
    ring_.consume([this](std::span<const std::byte> record) { assembler_.on_record(record); });
    assembler_.flush_events();  // what the producer published so far reaches the sinks now
    if (requested != flushes_done_.load(std::memory_order_relaxed)) {
      assembler_.flush_sinks();
      flushes_done_.store(requested, std::memory_order_release);
    }
    // A sink that cannot write (a full disk) ends the run at the next block.
    if (!failure_reported && assembler_.sink_failed()) {
      sink_failed_.store(true, std::memory_order_relaxed);
      failure_reported = true;
    }
    if (!more) break;
  }
}

void Drain::hold() noexcept {
  if (held_) return;
  try {
    gate_.lock();
    held_ = true;
  } catch (...) {  // (lock throws only on a system error: the fork goes on unheld)
  }
}

void Drain::release() noexcept {
  if (std::exchange(held_, false)) gate_.unlock();
}

bool Drain::flush_to_files(std::chrono::milliseconds patience) noexcept {
  if (held_ || !thread_.joinable()) return false;
  const std::uint64_t wanted = flushes_requested_.fetch_add(1, std::memory_order_acq_rel) + 1;
  // The drain wakes within its 50 ms wait when nothing new was published.
  const auto deadline = std::chrono::steady_clock::now() + patience;
  while (flushes_done_.load(std::memory_order_acquire) < wanted) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  return true;
}

bool Drain::join() {
  if (!thread_.joinable()) return false;
  thread_.join();
  return true;
}

void Drain::abandon() noexcept {
  if (thread_.joinable()) thread_.detach();
}

}  // namespace tracecorn::core
