// Role: replay of a multi-threaded trace: the schedule the recording's
// scheduler followed, read from the trace's thread events (which thread it
// switched to, after how many syscalls, and for a preemption at which
// execution of which instruction), and which syscalls blocked their thread
// (told unfinished, ERESTARTSYS, then a switch away) or ended a block (a futex
// wait's result, told as its thread was switched back in). The replayer's
// syscall source (replayer.cpp) makes the re-run's scheduler follow it: the
// n-th switch of the re-run goes to the thread the trace's n-th switch went
// to, at the same syscall count, and a preemption at the same quantum's end
// (in a trace without blocks: at the same execution of the instruction the
// preempted thread resumes at); a quantum that ran out where the recording
// found no other thread ready switches nothing.
// Who uses it: the replayer, on the emulation thread after collect(); the
// code hooks install() adds run inside Unicorn.
// Why quanta where blocks are recorded: a block the quantum ran out at did
// not run, and the recorder takes it back from the trace unless it was
// already written; quanta of 20000 blocks do not care about that one.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <unordered_set>
#include <vector>

#include <unicorn/unicorn.h>

#include "recorder/support/expected.h"

namespace tracecorn::replay {

struct PlannedSwitch {
  std::uint64_t event = 0;            // its index in the trace
  std::uint32_t to = 0, from = 0;     // thread ids
  std::uint64_t syscalls_before = 0;  // the trace's syscall events before it
  // A preemption (the quantum ran out), not a switch from a syscall that
  // blocked, exited or yielded: where `from` resumes later (0: it never
  // does); in a trace with blocks, which of its quanta ran out (1: the first
  // since the last switch, or since the first thread's creation); in a trace
  // without, how many times that instruction ran before the switch.
  bool preemption = false;
  std::uint64_t resume_pc = 0;
  std::uint64_t quantum = 0;
  std::uint64_t executions_before = 0;
};

class ThreadSchedule {
 public:
  ThreadSchedule() = default;
  ThreadSchedule(const ThreadSchedule&) = delete;
  ThreadSchedule& operator=(const ThreadSchedule&) = delete;
  ~ThreadSchedule() { remove(); }

  // Reads the trace at `path` (one pass, two when it has preemptions).
  // Fails with the reader's error.
  Status collect(const std::string& path);
  // Whether the trace has thread events at all (a second thread was created).
  bool has_threads() const { return has_threads_; }
  const std::vector<PlannedSwitch>& switches() const { return switches_; }
  // Syscall `index` (trace order) blocked its thread.
  bool blocked(std::uint64_t index) const { return blocked_.count(index) != 0; }
  // Syscall `index` is a blocked call's end, told as its thread went on.
  bool resumed(std::uint64_t index) const { return resumed_.count(index) != 0; }
  // Whether `tid` is one of the trace's threads (created, switched to or from).
  bool knows_thread(std::uint64_t tid) const { return known_.count(tid) != 0; }
  // The thread that made syscall `index` (0 when the format does not say).
  std::uint32_t thread_of(std::uint64_t index) const { return index < threads_.size() ? threads_[index] : 0; }

  // Whether preemptions are told by quantum (a trace with blocks), else by
  // executions of their resume pc.
  bool counts_quanta() const { return count_blocks_; }
  // In a trace without blocks: counts the re-run's executions of each
  // preemption's resume pc (a code hook per distinct pc; the instruction a
  // quantum interrupts is not one); executions(pc) reads the count.
  void install(uc_engine* engine);
  void remove();
  std::uint64_t executions(std::uint64_t pc) const;

 private:
  Status count_executions(const std::string& path);
  static void on_reached(uc_engine* engine, std::uint64_t address, std::uint32_t size, void* user) noexcept;

  bool has_threads_ = false;
  bool count_blocks_ = false;  // the trace has blocks: quanta are counted, else instructions
  std::vector<PlannedSwitch> switches_;
  std::unordered_set<std::uint64_t> blocked_, resumed_, known_;
  std::vector<std::uint32_t> threads_;  // by syscall index
  struct Site {
    std::uint64_t executions = 0;
    uc_hook hook = 0;
  };
  std::map<std::uint64_t, std::unique_ptr<Site>> sites_;  // by pc
  uc_engine* engine_ = nullptr;
};

}  // namespace tracecorn::replay
