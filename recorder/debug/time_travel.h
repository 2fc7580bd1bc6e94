// Role: moving through a recorded trace as a debugger does, forwards and
// backwards: the current position, stepping one instruction, and running to
// the next (or previous) breakpoint, write watchpoint, caught syscall,
// signal, or the trace's end. Everything is computed from the trace index
// (recorder/replay/trace_index.h); nothing runs the guest again.
// Positions: "at instruction event i" shows the state before that
// instruction runs, with the pc at it. A syscall stop is between events: its
// entry shows the state before the syscall event, its return the state after
// it, each with the pc after the trap instruction (where Linux shows a
// thread in a syscall). Positions are ordered by (event, at an instruction
// after anything else at the same event).
// Threads: the position shows the thread that runs there (the index's
// thread_at); a step moves one thread to its next (previous) instruction,
// the others running meanwhile as they did when recorded; a resume stops at
// the first stop of any thread. Another thread's registers are those it
// resumes with (the registers recorded when it is next switched in).
// Processes: a trace is one process image; a forward resume can stop at a
// fork the image made or at the exec that ends it (report_process_changes),
// which the session (gdb_session.h) follows into the child's or the next
// image's trace. Backwards, forks and execs are passed without a stop (as gdb
// expects of a replay).
// Watchpoints stop where gdb expects them for the architecture (see
// set_watch_before_write); a breakpoint stops at the instruction, before it runs.
// Who calls it: GdbSession (gdb_session.h) and the `why`/monitor commands; one
// thread (the index is not thread safe).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "recorder/replay/trace_index.h"
#include "recorder/support/expected.h"

namespace tracecorn::debug {

enum class Direction : std::uint8_t { kForward, kBackward };

struct Position {
  std::uint64_t event = 0;     // the state shown is the state before this event
  bool on_instruction = true;  // false: a syscall or signal stop between events
  std::uint64_t pc = 0;
};

// What a watchpoint watches (gdb's watch, rwatch, awatch); reads are those of
// instructions (levels mem and full).
enum class WatchKind : std::uint8_t { kWrite, kRead, kAccess };

struct Stop {
  enum class Kind : std::uint8_t {
    kStep,           // a step ended
    kBreakpoint,
    kWatchpoint,     // `address`: the watched address accessed, `watch` how
    kSyscallEntry,   // `number`: the syscall's number
    kSyscallReturn,
    kSignal,         // `signal` (host numbering): delivered here, or a fatal fault
    kForked,         // `number`: the fork's index in index().process_changes(); after the fork returned
    kExecuted,       // `number`: the exec's index in index().process_changes(); after the image's last syscall
    kBegin,          // nothing earlier: the trace's first instruction
    kEnd,            // nothing later: the trace's last instruction, or the syscall or fatal signal after it
    // What the session (gdb_session.h) reports of the process changes above:
    kVforked,        // `address`: the child's pid (and kForked's, as reported)
    kVforkDone,      // the vforked child exec'd or ended: the parent's vfork returned
  };
  Kind kind = Kind::kStep;
  std::uint64_t address = 0;
  std::uint64_t number = 0;
  std::uint32_t signal = 0;
  WatchKind watch = WatchKind::kWrite;
};

struct Watchpoint {
  std::uint64_t address = 0;
  std::uint64_t length = 0;
  WatchKind kind = WatchKind::kWrite;
  bool operator<(const Watchpoint& other) const {
    if (address != other.address) return address < other.address;
    if (length != other.length) return length < other.length;
    return kind < other.kind;
  }
};

class TimeTravel {
 public:
  // Starts at the trace's first instruction. Fails when the trace has no
  // instruction events (its level records none: say which level it needs).
  static Expected<std::unique_ptr<TimeTravel>> start(replay::TraceIndex& index);

  const Position& position() const { return position_; }
  replay::TraceIndex& index() { return index_; }

  // One instruction of the current thread.
  Expected<Stop> step(Direction direction) { return step(direction, current_thread()); }
  // One instruction of `thread` (forwards: it runs the instruction it resumes
  // at; backwards: its last instruction before the position is undone).
  Expected<Stop> step(Direction direction, std::uint32_t thread);
  Expected<Stop> resume(Direction direction);
  // Moves to the first instruction at or after event `event` (monitor seek).
  Expected<Stop> seek(std::uint64_t event);

  std::set<std::uint64_t>& breakpoints() { return breakpoints_; }
  std::set<Watchpoint>& watchpoints() { return watchpoints_; }
  // Where write watchpoints stop (GdbTarget::watchpoint_before_write): before
  // the writing instruction runs (forwards; after it, backwards), which gdb
  // then steps over itself; or after it (forwards; before it, backwards).
  void set_watch_before_write(bool before) { watch_before_write_ = before; }
  // Whether a forward resume stops at the image's forks and at its exec (off
  // at the start: a client that follows no processes sees neither).
  void report_process_changes(bool report) { report_process_changes_ = report; }
  // Syscall catching: off, every syscall, or those numbers.
  void catch_syscalls(bool enabled, std::vector<std::uint64_t> numbers);

  // The current state: register `table_index` (nullopt when the trace does not
  // know it); the pc is the position's. Memory: as TraceIndex::read_memory,
  // but in a trace without memory accesses (level regs) only the initial
  // read-only regions (code, constants) are known (the rest may have been written unseen).
  std::optional<events::RegisterValue> register_value(std::size_t table_index) const;
  std::size_t read_memory(std::uint64_t address, std::span<std::uint8_t> out) const;

  // The thread the position shows, and the threads alive there (the current
  // one among them, in order of creation).
  std::uint32_t current_thread() const;
  std::vector<std::uint32_t> threads() const { return index_.threads_alive_at(position_.event); }
  bool thread_alive(std::uint32_t thread) const;
  // Register `table_index` of `thread` at the position: the current thread's
  // as register_value(); another's as it resumes (its registers when it is
  // next switched in, its pc that of the next instruction it runs), or, when
  // it never runs again, as it last ran (its pc then known only when it
  // stopped in a syscall: after the trap). Fails (kInvalidArgument) for a
  // thread not alive here; kIo from the index.
  Expected<std::optional<events::RegisterValue>> thread_register_value(std::size_t table_index, std::uint32_t thread);

 private:
  explicit TimeTravel(replay::TraceIndex& index);
  Status go_to(const Position& position);
  // The instruction a backward step of `thread` stops at (the branch, not its delay slot).
  Expected<std::optional<replay::InstructionRecord>> previous_step(std::uint32_t thread);
  // The first instruction of `thread` at or after `from`, or its last one
  // before `before`: the index's searches, limited to the thread's runs.
  Expected<std::optional<replay::InstructionRecord>> next_instruction_of(std::uint32_t thread, std::uint64_t from);
  Expected<std::optional<replay::InstructionRecord>> previous_instruction_of(std::uint32_t thread,
                                                                             std::uint64_t before);
  // The run (index into runs_) that event `event` belongs to.
  std::size_t run_of(std::uint64_t event) const;
  // The first access of `watch` by `thread` in [from, before), as step() reports it.
  Expected<std::optional<std::uint64_t>> thread_access(const Watchpoint& watch, std::uint32_t thread,
                                                       std::uint64_t from, std::uint64_t before);
  // Another thread's registers at the position (thread_register_value).
  Status snapshot_thread(std::uint32_t thread);
  events::RegisterValue pc_value(std::uint64_t pc) const;  // the pc register holding `pc`
  Status go_to_instruction(const replay::InstructionRecord& instruction);
  // Candidates for resume(): each returns the nearest stop of its kind in
  // `direction` from the current position, or nullopt.
  struct Candidate {
    Position position;
    Stop stop;
  };
  Expected<std::optional<Candidate>> next_breakpoint(Direction direction);
  Expected<std::optional<Candidate>> next_watchpoint(Direction direction);
  Expected<std::optional<Position>> watch_stop(std::uint64_t access_event, Direction direction);
  std::optional<Candidate> next_syscall(Direction direction) const;
  std::optional<Candidate> next_signal(Direction direction) const;
  std::optional<Candidate> next_process_change(Direction direction) const;
  Expected<Stop> stay_at_edge(Direction direction);
  // The first event a forward search looks at (after the current instruction).
  std::uint64_t forward_from() const { return position_.on_instruction ? position_.event + 1 : position_.event; }
  bool syscall_caught(std::uint64_t number) const;

  replay::TraceIndex& index_;
  Position position_;
  Position begin_, end_;  // the first instruction; the last instruction, or a syscall or signal after it
  std::uint64_t last_instruction_event_ = 0;
  std::size_t pc_table_index_ = 0;
  std::set<std::uint64_t> breakpoints_;
  std::set<Watchpoint> watchpoints_;
  bool catch_syscalls_ = false;
  bool report_process_changes_ = false;
  bool watch_before_write_ = false;
  std::vector<std::uint64_t> caught_numbers_;  // sorted; empty with catch_syscalls_: all
  // The threads' runs: from each run's first event until the next run's, one
  // thread runs (one run for a single-threaded trace). Sorted by event.
  struct Run {
    std::uint64_t first_event = 0;
    std::uint32_t thread = 0;
  };
  std::vector<Run> runs_;
  // Another thread's registers at one position (the last snapshot_thread).
  struct ThreadSnapshot {
    Position position;
    std::uint32_t thread = 0;
    std::vector<std::optional<events::RegisterValue>> registers;
  };
  std::optional<ThreadSnapshot> snapshot_;
};

// Orders positions as TimeTravel does (see the Role comment).
bool position_before(const Position& a, const Position& b);

}  // namespace tracecorn::debug
