// Role: the recorder's consumer side. A drain thread takes what the ring
// publishes to the event assembler (and, through it, to the sinks); a gate
// lets the emulation thread hold it between two batches (across a host
// fork); a flush request makes it hand everything published so far to the
// sinks' files (a process about to stop); a one-way flag tells the hooks
// that a sink failed.
// Threads: start, hold, release, flush_to_files, join and abandon are called on
// the emulation thread; the loop runs on the drain thread.
// Invariants: only the drain thread consumes the ring and feeds the assembler
// (the ring has one consumer); the failure flag is written once, by the
// drain, and never read by it (the hooks' cache line is left alone).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <thread>

#include "recorder/core/event_assembler.h"
#include "recorder/ring/spsc_ring.h"

namespace tracecorn::core {

class Drain {
 public:
  // `sink_failed`: set once when a sink cannot write; the hooks read it.
  Drain(ring::SpscRing& ring, EventAssembler& assembler, std::atomic<bool>& sink_failed)
      : ring_(ring), assembler_(assembler), sink_failed_(sink_failed) {}
  ~Drain();
  Drain(const Drain&) = delete;
  Drain& operator=(const Drain&) = delete;

  // Starts the drain thread (running once this returns).
  void start();
  // Waits until the drain is between two batches and keeps it there
  // (before a host fork: the child must not inherit the gate held);
  // release() lets it go on. A second hold() before release() does nothing.
  void hold() noexcept;
  void release() noexcept;
  // Asks the drain to consume what the ring has published (publish first),
  // then to flush every sink (Sink::flush), and waits for it. Gives up,
  // returning false, when that takes longer than `patience` (a sink stuck
  // writing to a pipe nobody reads), or while the drain is held.
  bool flush_to_files(std::chrono::milliseconds patience) noexcept;
  // After the ring is closed: the drain consumes what is left and ends. True
  // when a drain thread ran (and the assembler may be ended).
  bool join();
  // In a forked child: the parent's drain thread does not exist here; its
  // handle is let go without a join (a thread started later may reuse it).
  void abandon() noexcept;

 private:
  void loop();

  ring::SpscRing& ring_;
  EventAssembler& assembler_;
  std::atomic<bool>& sink_failed_;
  std::thread thread_;
  std::mutex gate_;
  bool held_ = false;  // (emulation thread)
  // Flush requests made (emulation thread) and served (drain thread).
  std::atomic<std::uint64_t> flushes_requested_{0}, flushes_done_{0};
};

}  // namespace tracecorn::core
