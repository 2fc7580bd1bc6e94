// Role: replay of signals: where a trace says each signal was delivered to a
// handler, and making the re-run take it there (LinuxProcess's signal
// injection, recorder/linux/signal_injection.cpp). A signal delivered as a
// syscall returned is raised again when the re-run makes that syscall (the
// replayer's syscall source asks after_syscall()); one delivered between two
// instructions (a timer's) is raised and delivered by a code hook at the
// interrupted instruction, at its same execution as in the trace; a fault's
// comes by itself (the re-run faults at the same instruction).
// Who uses it: the replayer (replayer.cpp), on the emulation thread; the
// hooks run inside Unicorn. One plan per replay.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <unicorn/unicorn.h>

#include "recorder/support/expected.h"

namespace tracecorn::linux_layer {
class LinuxProcess;
}

namespace tracecorn::replay {

struct PlannedSignal {
  std::uint64_t event = 0;  // its index in the trace
  int signal = 0;           // host number
  int code = 0;             // si_code
  std::uint64_t sender_pid = 0;
  std::uint64_t interrupted_pc = 0;
  std::uint64_t frame = 0;
  // Delivered as the trace's syscall number `after_syscall` (0, 1, ... in
  // trace order) returned; ~0 when not.
  std::uint64_t after_syscall = ~std::uint64_t{0};
  // Else, between instructions: the executions of interrupted_pc before it.
  std::uint64_t executions_before = 0;
  bool fault = false;
  // The frame the trace wrote for it (at `frame`), given to the re-run's delivery.
  std::shared_ptr<const std::vector<std::uint8_t>> frame_bytes = nullptr;
};

class SignalPlan {
 public:
  // Reads the trace at `path` (one or two passes) for its signal events;
  // `own_pid` is the recorded process's (a signal from another pid came from
  // outside). Fails with the reader's error.
  Status collect(const std::string& path, std::uint64_t own_pid);
  // The signals delivered as syscall `index` (trace order) returned.
  std::span<const PlannedSignal> after_syscall(std::uint64_t index) const;
  // The signals from outside (another process, an itimer) that thread switch
  // `index` (trace order: 0, 1, ...) delivered to the thread it switched to.
  std::span<const PlannedSignal> at_switch(std::uint64_t index) const;
  // Adds the code hooks that deliver the signals between instructions (after
  // the recorder's hooks, so that the instruction and block they interrupt
  // are recorded, then taken back, as when recording).
  void install(uc_engine* engine, linux_layer::LinuxProcess& process);
  void remove();
  bool empty() const { return by_syscall_.empty() && by_switch_.empty() && sites_.empty(); }

 private:
  struct Site {
    std::uint64_t pc = 0;
    std::uint64_t arrivals = 0;             // executions of pc so far
    std::vector<PlannedSignal> signals;      // by executions_before
    std::size_t next = 0;
    linux_layer::LinuxProcess* process = nullptr;
    uc_hook hook = 0;
  };
  static void on_code(uc_engine* engine, std::uint64_t address, std::uint32_t size, void* user) noexcept;
  Status count_executions(const std::string& path);

  std::map<std::uint64_t, std::vector<PlannedSignal>> by_syscall_;
  std::map<std::uint64_t, std::vector<PlannedSignal>> by_switch_;
  std::map<std::uint64_t, std::unique_ptr<Site>> sites_;  // by pc
  uc_engine* engine_ = nullptr;
};

}  // namespace tracecorn::replay
