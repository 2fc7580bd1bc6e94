// Role: implementation of TimeTravel (time_travel.h): the position, steps and
// resumes over the trace index's searches.
#include "recorder/debug/time_travel.h"

#include <algorithm>

namespace tracecorn::debug {
namespace {

replay::TraceIndex::Accesses accesses_of(WatchKind kind) {
  switch (kind) {
    case WatchKind::kWrite: return replay::TraceIndex::kWrites;
    case WatchKind::kRead: return replay::TraceIndex::kReads;
    case WatchKind::kAccess: return replay::TraceIndex::kReadsAndWrites;
  }
  return replay::TraceIndex::kWrites;
}

}  // namespace

bool position_before(const Position& a, const Position& b) {
  if (a.event != b.event) return a.event < b.event;
  return !a.on_instruction && b.on_instruction;
}

TimeTravel::TimeTravel(replay::TraceIndex& index)
    : index_(index), pc_table_index_(index.arch().register_index(index.arch().pc_reg).value_or(0)) {
  runs_.push_back({0, index.first_thread()});
  for (const auto& change : index.thread_changes())
    if (change.change == events::ThreadChange::kSwitched) runs_.push_back({change.event + 1, change.thread});
}

Expected<std::unique_ptr<TimeTravel>> TimeTravel::start(replay::TraceIndex& index) {
  if (!index.saw(events::EventKind::kInstruction))
    return make_error(ErrorCode::kInvalidArgument,
                      "the trace has no instruction events: a debugger needs a trace recorded at level "
                      "'regs' or 'full' (tracecorn record --level full)");
  std::unique_ptr<TimeTravel> travel(new TimeTravel(index));
  auto first = index.next_instruction(0);
  if (!first) return first.error();
  if (!*first) return make_error(ErrorCode::kInvalidArgument, "the trace has no instruction events");
  auto last = index.previous_instruction(index.event_count());
  if (!last) return last.error();
  travel->begin_ = Position{(*first)->event, true, (*first)->pc};
  travel->end_ = Position{(**last).event, true, (**last).pc};
  travel->last_instruction_event_ = (**last).event;
  // A trace that ends inside a syscall (exit_group) or at a fatal signal ends there, after its last instruction.
  const auto& calls = index.syscalls();
  if (!calls.empty() && calls.back().event > travel->end_.event)
    travel->end_ = Position{calls.back().event, false, calls.back().pc + index.arch().syscall_abi.trap_length};
  const auto& signals = index.signals();
  if (!signals.empty() && signals.back().event > travel->end_.event)
    travel->end_ = Position{signals.back().event, false, signals.back().pc};
  if (auto status = travel->go_to(travel->begin_); !status) return status.error();
  return travel;
}

Status TimeTravel::go_to(const Position& position) {
  if (auto status = index_.seek(position.event); !status) return status;
  position_ = position;
  return ok_status();
}

Status TimeTravel::go_to_instruction(const replay::InstructionRecord& instruction) {
  return go_to(Position{instruction.event, true, instruction.pc});
}

void TimeTravel::catch_syscalls(bool enabled, std::vector<std::uint64_t> numbers) {
  catch_syscalls_ = enabled;
  std::sort(numbers.begin(), numbers.end());
  caught_numbers_ = std::move(numbers);
}

bool TimeTravel::syscall_caught(std::uint64_t number) const {
  return catch_syscalls_ &&
         (caught_numbers_.empty() || std::binary_search(caught_numbers_.begin(), caught_numbers_.end(), number));
}

events::RegisterValue TimeTravel::pc_value(std::uint64_t pc) const {
  events::RegisterValue value;
  value.index = static_cast<std::uint16_t>(pc_table_index_);
  value.size = index_.arch().registers[pc_table_index_].size;
  for (std::size_t b = 0; b < value.size && b < 8; ++b) value.bytes[b] = static_cast<std::uint8_t>(pc >> (8 * b));
  return value;
}

std::optional<events::RegisterValue> TimeTravel::register_value(std::size_t table_index) const {
  if (table_index == pc_table_index_) return pc_value(position_.pc);
  return index_.register_value(table_index);
}

std::size_t TimeTravel::read_memory(std::uint64_t address, std::span<std::uint8_t> out) const {
  if (!index_.memory_tracked()) {
    // Without the instructions' writes (level regs), only read-only memory reads true at any event.
    const auto& code = index_.initial_read_only();
    const auto region = std::find_if(code.begin(), code.end(),
                                     [&](const auto& range) { return address >= range.first && address < range.second; });
    if (region == code.end()) return 0;
    out = out.first(static_cast<std::size_t>(std::min<std::uint64_t>(out.size(), region->second - address)));
  }
  return index_.read_memory(address, out);
}

Expected<Stop> TimeTravel::stay_at_edge(Direction direction) {
  const Position& edge = direction == Direction::kForward ? end_ : begin_;
  if (auto status = go_to(edge); !status) return status.error();
  return Stop{direction == Direction::kForward ? Stop::Kind::kEnd : Stop::Kind::kBegin};
}

std::size_t TimeTravel::run_of(std::uint64_t event) const {
  const auto after = std::upper_bound(runs_.begin(), runs_.end(), event,
                                      [](std::uint64_t e, const Run& run) { return e < run.first_event; });
  return static_cast<std::size_t>(after - runs_.begin()) - 1;  // runs_[0] starts at event 0
}

Expected<std::optional<replay::InstructionRecord>> TimeTravel::next_instruction_of(std::uint32_t thread,
                                                                                   std::uint64_t from) {
  for (std::size_t run = run_of(from); run < runs_.size();) {
    if (runs_[run].thread != thread) {
      if (++run < runs_.size()) from = std::max(from, runs_[run].first_event);
      continue;
    }
    auto found = index_.next_instruction(from);
    if (!found || !*found) return found;
    const std::uint64_t end = run + 1 < runs_.size() ? runs_[run + 1].first_event : UINT64_MAX;
    if ((*found)->event < end) return found;
    from = (*found)->event;  // none of the thread's before it: go on from its run
    run = run_of(from);
  }
  return std::optional<replay::InstructionRecord>{};
}

Expected<std::optional<replay::InstructionRecord>> TimeTravel::previous_instruction_of(std::uint32_t thread,
                                                                                       std::uint64_t before) {
  if (before == 0) return std::optional<replay::InstructionRecord>{};
  for (std::size_t run = run_of(before - 1);;) {
    if (runs_[run].thread == thread) {
      auto found = index_.previous_instruction(before);
      if (!found || !*found) return found;
      if ((*found)->event >= runs_[run].first_event) return found;
      before = (*found)->event + 1;  // none of the thread's after it: go on from its run
      run = run_of((*found)->event);
      continue;
    }
    if (run == 0) return std::optional<replay::InstructionRecord>{};
    before = std::min(before, runs_[run].first_event);
    --run;
  }
}

Expected<std::optional<replay::InstructionRecord>> TimeTravel::previous_step(std::uint32_t thread) {
  auto previous = previous_instruction_of(thread, position_.event);
  const auto& arch = index_.arch();
  if (!previous || !*previous || !arch.has_delay_slot) return previous;
  // A branch's delay slot is no place to stop: gdb steps over it forwards
  // (its single_step_through_delay), so a step back goes to the branch.
  auto branch = previous_instruction_of(thread, (*previous)->event);
  if (!branch || !*branch || (*branch)->pc + arch.branch_delay_slot != (*previous)->pc) return previous;
  std::uint8_t bytes[8] = {};
  const std::size_t size = std::min<std::size_t>(arch.branch_delay_slot, sizeof bytes);
  if (index_.read_memory((*branch)->pc, std::span(bytes, size)) != size || !arch.has_delay_slot(std::span(bytes, size)))
    return previous;
  return branch;
}

Expected<std::optional<std::uint64_t>> TimeTravel::thread_access(const Watchpoint& watch, std::uint32_t thread,
                                                                  std::uint64_t from, std::uint64_t before) {
  while (from < before) {
    auto access = index_.next_access(from, watch.address, watch.length, accesses_of(watch.kind));
    if (!access) return access.error();
    if (!*access || (*access)->event >= before) break;
    if (index_.thread_at((*access)->event) == thread)
      return std::optional<std::uint64_t>{std::max(watch.address, (*access)->address)};
    from = (*access)->event + 1;
  }
  return std::optional<std::uint64_t>{};
}

Expected<Stop> TimeTravel::step(Direction direction, std::uint32_t thread) {
  std::uint64_t from = forward_from();
  if (direction == Direction::kForward && thread != current_thread()) {
    // The thread has not run its next instruction yet: run it, stop at the one after.
    auto resumes_at = next_instruction_of(thread, position_.event);
    if (!resumes_at) return resumes_at.error();
    if (!*resumes_at) return stay_at_edge(direction);
    from = (*resumes_at)->event + 1;
  }
  auto next = direction == Direction::kForward ? next_instruction_of(thread, from) : previous_step(thread);
  if (!next) return next.error();
  if (!*next) return stay_at_edge(direction);
  Stop stop{Stop::Kind::kStep};
  if (direction == Direction::kForward && !watch_before_write_) {
    // A watched byte the thread accessed in the instruction stepped over.
    for (const auto& watch : watchpoints_) {
      auto address = thread_access(watch, thread, forward_from(), (*next)->event);
      if (!address) return address.error();
      if (*address) {
        stop = Stop{Stop::Kind::kWatchpoint, **address};
        stop.watch = watch.kind;
        break;
      }
    }
  }
  if (auto status = go_to_instruction(**next); !status) return status.error();
  return stop;
}

std::uint32_t TimeTravel::current_thread() const { return runs_[run_of(position_.event)].thread; }

bool TimeTravel::thread_alive(std::uint32_t thread) const {
  const auto alive = threads();
  return std::find(alive.begin(), alive.end(), thread) != alive.end();
}

Expected<std::optional<events::RegisterValue>> TimeTravel::thread_register_value(std::size_t table_index,
                                                                                 std::uint32_t thread) {
  if (thread == current_thread()) return register_value(table_index);
  if (!thread_alive(thread))
    return make_error(ErrorCode::kInvalidArgument, "thread " + std::to_string(thread) + " is not alive at event " +
                                                       std::to_string(position_.event));
  const bool fresh = snapshot_ && snapshot_->thread == thread && snapshot_->position.event == position_.event &&
                     snapshot_->position.on_instruction == position_.on_instruction;
  if (!fresh) {
    if (auto status = snapshot_thread(thread); !status) return status.error();
  }
  if (table_index >= snapshot_->registers.size()) return std::optional<events::RegisterValue>{};
  return snapshot_->registers[table_index];
}

Status TimeTravel::snapshot_thread(std::uint32_t thread) {
  const auto& changes = index_.thread_changes();
  const std::size_t count = index_.arch().registers.size();
  ThreadSnapshot snapshot{position_, thread, std::vector<std::optional<events::RegisterValue>>(count)};
  auto first_after = std::lower_bound(changes.begin(), changes.end(), position_.event,
                                      [](const replay::ThreadChangeRecord& c, std::uint64_t e) { return c.event < e; });
  auto switched_in = std::find_if(first_after, changes.end(), [&](const replay::ThreadChangeRecord& c) {
    return c.change == events::ThreadChange::kSwitched && c.thread == thread;
  });
  std::optional<std::uint64_t> stopped_pc;  // where it resumes
  std::uint64_t state_at = 0;
  if (switched_in != changes.end()) {
    state_at = switched_in->event + 1;  // the registers it resumes with, pc included
  } else {
    auto switched_out = std::find_if(std::make_reverse_iterator(first_after), changes.rend(),
                                     [&](const replay::ThreadChangeRecord& c) {
                                       return c.change == events::ThreadChange::kSwitched && c.from == thread;
                                     });
    if (switched_out == changes.rend()) {  // never ran: nothing is known
      snapshot_ = std::move(snapshot);
      return ok_status();
    }
    state_at = switched_out->event;
    // Its pc is known when it stopped in a syscall (after the trap instruction).
    const replay::SyscallRecord* call = index_.syscall_before(state_at);
    auto last = previous_instruction_of(thread, state_at);
    if (!last) return last.error();
    if (call && index_.thread_at(call->event) == thread && (!*last || (*last)->event < call->event))
      stopped_pc = call->pc + index_.arch().syscall_abi.trap_length;
  }
  // Its pc is that of the next instruction it runs (a thread switched out in
  // a blocking syscall is switched in at the trap, to restart it, but runs on
  // after it: Linux shows it after the trap).
  auto resumes_at = next_instruction_of(thread, position_.event);
  if (!resumes_at) return resumes_at.error();
  if (*resumes_at) stopped_pc = (*resumes_at)->pc;
  if (auto status = index_.seek(state_at); !status) return status;
  for (std::size_t i = 0; i < count; ++i) snapshot.registers[i] = index_.register_value(i);
  if (stopped_pc) snapshot.registers[pc_table_index_] = pc_value(*stopped_pc);
  else if (switched_in == changes.end()) snapshot.registers[pc_table_index_].reset();
  if (auto status = index_.seek(position_.event); !status) return status;
  snapshot_ = std::move(snapshot);
  return ok_status();
}

Expected<std::optional<TimeTravel::Candidate>> TimeTravel::next_breakpoint(Direction direction) {
  if (breakpoints_.empty()) return std::optional<Candidate>{};
  const std::vector<std::uint64_t> pcs(breakpoints_.begin(), breakpoints_.end());
  auto found = direction == Direction::kForward ? index_.next_instruction(forward_from(), pcs)
                                                : index_.previous_instruction(position_.event, pcs);
  if (!found) return found.error();
  if (!*found) return std::optional<Candidate>{};
  return std::optional<Candidate>{Candidate{{(*found)->event, true, (*found)->pc}, {Stop::Kind::kBreakpoint}}};
}

// Where an access at event `access_event` stops, in `direction`: before or
// after the instruction that made it (see set_watch_before_write); nullopt
// when that instruction is not there (a kernel write before the first one).
Expected<std::optional<Position>> TimeTravel::watch_stop(std::uint64_t access_event, Direction direction) {
  // The accessing instruction is the last one before the access; its end is the next one after it.
  const bool at_writer = (direction == Direction::kForward) == watch_before_write_;
  auto instruction = at_writer ? index_.previous_instruction(access_event) : index_.next_instruction(access_event + 1);
  if (!instruction) return instruction.error();
  if (!*instruction) return std::optional<Position>{};
  return std::optional<Position>{Position{(*instruction)->event, true, (*instruction)->pc}};
}

Expected<std::optional<TimeTravel::Candidate>> TimeTravel::next_watchpoint(Direction direction) {
  std::optional<Candidate> best;
  for (const auto& watch : watchpoints_) {
    // Backwards, the stop may fall after the current position (the write's instruction end): look further back.
    for (std::uint64_t before = position_.event;;) {
      const auto kinds = accesses_of(watch.kind);
      auto write = direction == Direction::kForward
                       ? index_.next_access(forward_from(), watch.address, watch.length, kinds)
                       : index_.previous_access(before, watch.address, watch.length, kinds);
      if (!write) return write.error();
      if (!*write) break;
      auto stop = watch_stop((*write)->event, direction);
      if (!stop) return stop.error();
      if (!*stop) break;
      if (direction == Direction::kBackward && position_before(position_, **stop)) {
        before = (*write)->event;
        continue;
      }
      Candidate candidate{**stop, {Stop::Kind::kWatchpoint, std::max(watch.address, (*write)->address)}};
      candidate.stop.watch = watch.kind;
      const bool better = !best || (direction == Direction::kForward ? position_before(candidate.position, best->position)
                                                                     : position_before(best->position, candidate.position));
      if (better) best = candidate;
      break;
    }
  }
  return best;
}

std::optional<TimeTravel::Candidate> TimeTravel::next_syscall(Direction direction) const {
  if (!catch_syscalls_) return std::nullopt;
  const auto& syscalls = index_.syscalls();
  const std::uint64_t trap = index_.arch().syscall_abi.trap_length;
  std::optional<Candidate> best;
  auto consider = [&](const Candidate& candidate) {
    const bool beyond = direction == Direction::kForward ? position_before(position_, candidate.position)
                                                         : position_before(candidate.position, position_);
    if (!beyond) return false;
    const bool better = !best || (direction == Direction::kForward ? position_before(candidate.position, best->position)
                                                                   : position_before(best->position, candidate.position));
    if (better) best = candidate;
    return true;
  };
  // Syscalls are in event order: walk from the side the search starts at and stop at the first one found.
  auto visit = [&](const replay::SyscallRecord& call) {
    if (!syscall_caught(call.number)) return false;
    const Candidate entry{{call.event, false, call.pc + trap}, {Stop::Kind::kSyscallEntry, 0, call.number}};
    const Candidate exit{{call.event + 1, false, call.pc + trap}, {Stop::Kind::kSyscallReturn, 0, call.number}};
    // A syscall after the last instruction (exit_group) never returns.
    const bool returns = call.event < last_instruction_event_;
    bool found = false;
    if (direction == Direction::kForward) {
      found = consider(entry);
      if (returns) found = consider(exit) || found;
    } else {
      if (returns) found = consider(exit);
      found = consider(entry) || found;
    }
    return found;
  };
  if (direction == Direction::kForward) {
    auto it = std::lower_bound(syscalls.begin(), syscalls.end(), position_.event,
                               [](const replay::SyscallRecord& call, std::uint64_t event) { return call.event + 1 < event; });
    for (; it != syscalls.end(); ++it)
      if (visit(*it)) break;
  } else {
    auto it = std::lower_bound(syscalls.begin(), syscalls.end(), position_.event,
                               [](const replay::SyscallRecord& call, std::uint64_t event) { return call.event < event; });
    while (it != syscalls.begin())
      if (visit(*--it)) break;
  }
  return best;
}

std::optional<TimeTravel::Candidate> TimeTravel::next_signal(Direction direction) const {
  const auto& signals = index_.signals();
  auto candidate_of = [](const replay::SignalRecord& signal) {
    return Candidate{{signal.event, false, signal.pc}, {Stop::Kind::kSignal, signal.address, 0, signal.signal}};
  };
  if (direction == Direction::kForward) {
    for (const auto& signal : signals)
      if (position_before(position_, candidate_of(signal).position)) return candidate_of(signal);
  } else {
    for (auto it = signals.rbegin(); it != signals.rend(); ++it)
      if (position_before(candidate_of(*it).position, position_)) return candidate_of(*it);
  }
  return std::nullopt;
}

std::optional<TimeTravel::Candidate> TimeTravel::next_process_change(Direction direction) const {
  if (!report_process_changes_ || direction != Direction::kForward) return std::nullopt;
  const auto& changes = index_.process_changes();
  for (std::size_t i = 0; i < changes.size(); ++i) {
    // Shown as the syscall's return is: the pc after its trap instruction.
    const replay::SyscallRecord* call = index_.syscall_before(changes[i].event);
    const std::uint64_t pc = call ? call->pc + index_.arch().syscall_abi.trap_length : position_.pc;
    const Position at{changes[i].event, false, pc};
    if (!position_before(position_, at)) continue;
    const auto kind =
        changes[i].change == events::ProcessChange::kForked ? Stop::Kind::kForked : Stop::Kind::kExecuted;
    return Candidate{at, {kind, 0, i}};
  }
  return std::nullopt;
}

Expected<Stop> TimeTravel::resume(Direction direction) {
  std::optional<Candidate> best;
  auto keep = [&](const std::optional<Candidate>& candidate) {
    if (!candidate) return;
    const bool better = !best || (direction == Direction::kForward ? position_before(candidate->position, best->position)
                                                                   : position_before(best->position, candidate->position));
    if (better) best = candidate;
  };
  auto breakpoint = next_breakpoint(direction);
  if (!breakpoint) return breakpoint.error();
  keep(*breakpoint);
  keep(next_process_change(direction));  // before the fork's syscall return at the same position, as Linux reports it
  auto watchpoint = next_watchpoint(direction);
  if (!watchpoint) return watchpoint.error();
  keep(*watchpoint);
  keep(next_syscall(direction));
  keep(next_signal(direction));
  if (best) {
    if (auto status = go_to(best->position); !status) return status.error();
    return best->stop;
  }
  // Nothing on the way: the trace's end (or start).
  return stay_at_edge(direction);
}

Expected<Stop> TimeTravel::seek(std::uint64_t event) {
  if (event > index_.event_count())
    return make_error(ErrorCode::kInvalidArgument, "event " + std::to_string(event) + " is beyond the trace's " +
                                                       std::to_string(index_.event_count()) + " events");
  auto next = index_.next_instruction(event);
  if (!next) return next.error();
  if (!*next) return stay_at_edge(Direction::kForward);
  if (auto status = go_to_instruction(**next); !status) return status.error();
  return Stop{Stop::Kind::kStep};
}

}  // namespace tracecorn::debug
