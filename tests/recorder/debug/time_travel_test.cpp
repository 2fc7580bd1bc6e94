// Role: tests of the time-travel debugger's engine (recorder/debug/time_travel.h)
// and the trace index searches under it (next/previous instruction and write,
// instructions_before), against a brute-force scan of the same trace's events
// (TraceReader): on every architecture, the sample nested_calls recorded at
// the full level, indexed in small chunks so that every search crosses chunk
// boundaries and skips chunks.
// Checked per architecture: forward steps from the start and backward steps
// from the end visit exactly the instruction events in order; a breakpoint
// stops at each execution of its pc in both directions; a write watchpoint
// stops after the first write forwards and at the writing instruction of the
// last one backwards; catching syscalls stops at every syscall's entry and
// return in order; both ends say so and stay. Threads (the sample
// debug_threads): the thread shown at an instruction is the one its event
// names, the threads alive are those created and not exited, a thread steps
// through exactly its own instructions both ways (the others running in
// between), and another thread's pc and stack pointer are those it resumes with.
// Who runs it: unit_tests, on the doctest thread.
#include <doctest/doctest.h>

#include <algorithm>
#include <map>

#include "recorder/debug/time_travel.h"
#include "tests/recorder/replay/replay_test_helpers.h"
#include "tests/support/architectures.h"
#include "tests/support/test_case_per_row.h"
#include "tests/support/error_text.h"

using namespace tracecorn;
using debug::Direction;
using debug::Stop;

namespace {

// What the events say, event by event.
struct Scan {
  std::vector<replay::InstructionRecord> instructions;
  std::vector<bool> in_delay_slot;  // per instruction: it runs in the delay slot of the one before (mips)
  std::vector<replay::MemoryWriteRecord> writes;  // instruction and kernel writes, with their event
  std::vector<replay::MemoryAccessRecord> reads;  // instructions' reads
  std::vector<std::pair<std::uint64_t, std::uint64_t>> syscalls;  // event, number
};

// Reads the trace at `path` to its end, calling on_event(arch, event) for each event.
template <typename OnEvent>
void for_each_event(const std::string& path, OnEvent on_event) {
  auto reader = replay::TraceReader::open(path);
  REQUIRE_MESSAGE(reader.has_value(), tracecorn::test_support::error_text(reader));
  const auto& arch = (*reader)->arch();
  for (;;) {
    auto more = (*reader)->next([&](const events::Event& event) { on_event(arch, event); });
    REQUIRE_MESSAGE(more.has_value(), tracecorn::test_support::error_text(more));
    if (!*more) break;
  }
}

Scan scan(const std::string& path) {
  Scan out;
  std::uint64_t index = 0;
  bool opens_delay_slot = false;
  std::uint64_t branch_pc = 0;
  for_each_event(path, [&](const arch::ArchInfo& arch, const events::Event& event) {
    if (const auto* insn = std::get_if<events::InstructionEvent>(&event.payload)) {
      out.instructions.push_back({index, insn->address.value});
      out.in_delay_slot.push_back(opens_delay_slot && branch_pc + arch.branch_delay_slot == insn->address.value);
      opens_delay_slot = arch.has_delay_slot && arch.has_delay_slot(insn->bytes);
      branch_pc = insn->address.value;
    }
    if (const auto* memory = std::get_if<events::MemoryEvent>(&event.payload);
        memory && event.kind == events::EventKind::kMemoryWrite)
      out.writes.push_back({index, memory->address.value, std::vector<std::uint8_t>(memory->size)});
    if (const auto* memory = std::get_if<events::MemoryEvent>(&event.payload);
        memory && event.kind == events::EventKind::kMemoryRead)
      out.reads.push_back({index, memory->address.value, memory->size, false, {}});
    if (const auto* call = std::get_if<events::SyscallEvent>(&event.payload)) {
      out.syscalls.push_back({index, call->number});
      for (const auto& write : call->memory_writes)
        out.writes.push_back({index, write.address.value, {write.bytes.begin(), write.bytes.end()}});
    }
    ++index;
  });
  return out;
}

std::unique_ptr<replay::TraceIndex> small_chunk_index(const std::string& path) {
  auto reader = replay::TraceReader::open(path);
  REQUIRE(reader.has_value());
  replay::TraceIndexOptions options;
  options.checkpoint_interval = 2048;
  auto index = replay::TraceIndex::build(**reader, options);
  REQUIRE_MESSAGE(index.has_value(), tracecorn::test_support::error_text(index));
  return std::move(*index);
}

void check_steps(debug::TimeTravel& travel, const Scan& events) {
  const auto& all = events.instructions;
  const std::size_t walk = std::min<std::size_t>(all.size() - 1, 3000);
  for (std::size_t i = 1; i <= walk; ++i) {
    auto stop = travel.step(Direction::kForward);
    REQUIRE(stop.has_value());
    REQUIRE(travel.position().event == all[i].event);
    REQUIRE(travel.position().pc == all[i].pc);
  }
  // Backwards, a branch's delay slot is stepped over (as gdb steps over it forwards).
  for (std::size_t i = walk; i-- > 0;) {
    if (events.in_delay_slot[i]) continue;
    REQUIRE(travel.step(Direction::kBackward).has_value());
    REQUIRE(travel.position().event == all[i].event);
  }
  auto begin = travel.step(Direction::kBackward);
  REQUIRE(begin.has_value());
  CHECK(begin->kind == Stop::Kind::kBegin);
  CHECK(travel.position().event == all.front().event);
  // From the end, backwards.
  travel.breakpoints().clear();
  auto end = travel.resume(Direction::kForward);
  REQUIRE(end.has_value());
  CHECK(end->kind == Stop::Kind::kEnd);
  const debug::Position end_position = travel.position();
  // The end stays the end; one step back is the last instruction (the trace
  // may end inside exit_group, after it).
  auto still_end = travel.step(Direction::kForward);
  REQUIRE(still_end.has_value());
  CHECK(still_end->kind == Stop::Kind::kEnd);
  CHECK(travel.position().event == end_position.event);
  if (!travel.position().on_instruction) {
    CHECK(travel.position().event > all.back().event);
    REQUIRE(travel.step(Direction::kBackward).has_value());
  }
  CHECK(travel.position().event == all.back().event);
  for (std::size_t i = all.size() - 1; i-- > all.size() - 1 - std::min<std::size_t>(all.size() - 1, 3000);) {
    if (events.in_delay_slot[i]) continue;
    REQUIRE(travel.step(Direction::kBackward).has_value());
    REQUIRE(travel.position().event == all[i].event);
  }
}

void check_breakpoints(debug::TimeTravel& travel, const Scan& events) {
  // A pc run more than once, past the first chunk.
  std::map<std::uint64_t, std::vector<std::uint64_t>> runs;
  for (const auto& insn : events.instructions) runs[insn.pc].push_back(insn.event);
  const auto chosen = std::find_if(runs.begin(), runs.end(), [](const auto& entry) {
    return entry.second.size() >= 3 && entry.second.front() > 4096;
  });
  REQUIRE(chosen != runs.end());
  REQUIRE(travel.seek(0).has_value());
  travel.breakpoints() = {chosen->first};
  for (const std::uint64_t expected : chosen->second) {
    auto stop = travel.resume(Direction::kForward);
    REQUIRE(stop.has_value());
    REQUIRE(stop->kind == Stop::Kind::kBreakpoint);
    REQUIRE(travel.position().event == expected);
  }
  CHECK(travel.resume(Direction::kForward)->kind == Stop::Kind::kEnd);
  for (auto it = chosen->second.rbegin(); it != chosen->second.rend(); ++it) {
    auto stop = travel.resume(Direction::kBackward);
    REQUIRE(stop.has_value());
    REQUIRE(stop->kind == Stop::Kind::kBreakpoint);
    REQUIRE(travel.position().event == *it);
  }
  CHECK(travel.resume(Direction::kBackward)->kind == Stop::Kind::kBegin);
  travel.breakpoints().clear();
}

// The instruction event at or before / after `event`.
std::uint64_t instruction_at_or_before(const Scan& events, std::uint64_t event) {
  auto it = std::upper_bound(events.instructions.begin(), events.instructions.end(), event,
                             [](std::uint64_t e, const replay::InstructionRecord& insn) { return e < insn.event; });
  REQUIRE(it != events.instructions.begin());
  return std::prev(it)->event;
}
std::uint64_t instruction_after(const Scan& events, std::uint64_t event) {
  auto it = std::upper_bound(events.instructions.begin(), events.instructions.end(), event,
                             [](std::uint64_t e, const replay::InstructionRecord& insn) { return e < insn.event; });
  REQUIRE(it != events.instructions.end());
  return it->event;
}

void check_watchpoints(debug::TimeTravel& travel, const Scan& events) {
  // A word written by instructions several times, after the first chunk.
  std::map<std::uint64_t, std::vector<std::uint64_t>> writes;
  for (const auto& write : events.writes)
    if (write.bytes.size() >= 4) writes[write.address].push_back(write.event);
  const auto chosen = std::find_if(writes.begin(), writes.end(), [](const auto& entry) {
    return entry.second.size() >= 2 && entry.second.front() > 4096;
  });
  REQUIRE(chosen != writes.end());
  // Every write that touches the 4 bytes, in order.
  std::vector<std::uint64_t> touching;
  for (const auto& write : events.writes)
    if (write.address < chosen->first + 4 && write.address + write.bytes.size() > chosen->first)
      touching.push_back(write.event);
  REQUIRE(travel.seek(0).has_value());
  travel.watchpoints() = {{chosen->first, 4}};
  auto first = travel.resume(Direction::kForward);
  REQUIRE(first.has_value());
  CHECK(first->kind == Stop::Kind::kWatchpoint);
  CHECK(travel.position().event == instruction_after(events, touching.front()));
  travel.breakpoints().clear();
  travel.watchpoints().clear();
  REQUIRE(travel.resume(Direction::kForward).has_value());  // to the end
  travel.watchpoints() = {{chosen->first, 4}};
  auto last = travel.resume(Direction::kBackward);
  REQUIRE(last.has_value());
  CHECK(last->kind == Stop::Kind::kWatchpoint);
  CHECK(travel.position().event == instruction_at_or_before(events, touching.back()));
  // As gdb wants them on arm, aarch64, mips and riscv: before the writing
  // instruction forwards, after it backwards (gdb steps over it).
  travel.set_watch_before_write(true);
  REQUIRE(travel.resume(Direction::kBackward).has_value());
  CHECK(travel.position().event == instruction_after(events, touching[touching.size() - 2]));
  REQUIRE(travel.seek(0).has_value());
  REQUIRE(travel.resume(Direction::kForward)->kind == Stop::Kind::kWatchpoint);
  CHECK(travel.position().event == instruction_at_or_before(events, touching.front()));
  travel.set_watch_before_write(false);
  travel.watchpoints().clear();
}

// A read watchpoint, and an access watchpoint on bytes both read and written.
void check_read_watchpoints(debug::TimeTravel& travel, const Scan& events) {
  std::map<std::uint64_t, std::vector<std::uint64_t>> reads;
  for (const auto& read : events.reads)
    if (read.length >= 4) reads[read.address].push_back(read.event);
  const auto chosen = std::find_if(reads.begin(), reads.end(), [](const auto& entry) {
    return entry.second.size() >= 3 && entry.second.front() > 4096;
  });
  REQUIRE(chosen != reads.end());
  std::vector<std::uint64_t> touching, accessed;  // reads of the 4 bytes; reads and writes
  for (const auto& read : events.reads)
    if (read.address < chosen->first + 4 && read.address + read.length > chosen->first) touching.push_back(read.event);
  accessed = touching;
  for (const auto& write : events.writes)
    if (write.address < chosen->first + 4 && write.address + write.bytes.size() > chosen->first)
      accessed.push_back(write.event);
  std::sort(accessed.begin(), accessed.end());
  REQUIRE(travel.seek(0).has_value());
  travel.watchpoints() = {{chosen->first, 4, debug::WatchKind::kRead}};
  for (std::size_t i = 0; i < 3; ++i) {
    auto stop = travel.resume(Direction::kForward);
    REQUIRE(stop.has_value());
    REQUIRE(stop->kind == Stop::Kind::kWatchpoint);
    CHECK(stop->watch == debug::WatchKind::kRead);
    CHECK(travel.position().event == instruction_after(events, touching[i]));
  }
  travel.watchpoints() = {{chosen->first, 4, debug::WatchKind::kAccess}};
  REQUIRE(travel.seek(0).has_value());
  REQUIRE(travel.resume(Direction::kForward)->kind == Stop::Kind::kWatchpoint);
  CHECK(travel.position().event == instruction_after(events, accessed.front()));
  travel.watchpoints().clear();
  REQUIRE(travel.resume(Direction::kForward).has_value());  // the end
  travel.watchpoints() = {{chosen->first, 4, debug::WatchKind::kRead}};
  REQUIRE(travel.resume(Direction::kBackward)->kind == Stop::Kind::kWatchpoint);
  CHECK(travel.position().event == instruction_at_or_before(events, touching.back()));
  travel.watchpoints().clear();
}

void check_syscall_catching(debug::TimeTravel& travel, const Scan& events) {
  REQUIRE(travel.seek(0).has_value());
  travel.catch_syscalls(true, {});
  const std::uint64_t last_instruction = events.instructions.back().event;
  for (const auto& call : events.syscalls) {
    const std::uint64_t event = call.first, number = call.second;
    CAPTURE(event);
    auto entry = travel.resume(Direction::kForward);
    REQUIRE(entry.has_value());
    REQUIRE(entry->kind == Stop::Kind::kSyscallEntry);
    CHECK(entry->number == number);
    CHECK(travel.position().event == event);
    auto back = travel.resume(Direction::kForward);
    REQUIRE(back.has_value());
    if (event > last_instruction) {  // exit_group: the trace ends in it
      CHECK(back->kind == Stop::Kind::kEnd);
      CHECK(travel.position().event == event);
      break;
    }
    REQUIRE(back->kind == Stop::Kind::kSyscallReturn);
    CHECK(travel.position().event == event + 1);
  }
  // Backwards from the end (inside exit_group): the syscall before it, its return then its entry.
  REQUIRE(events.syscalls.size() >= 2);
  const auto [event, number] = events.syscalls[events.syscalls.size() - 2];
  travel.catch_syscalls(true, {number});
  auto back = travel.resume(Direction::kBackward);
  REQUIRE(back.has_value());
  CHECK(back->kind == Stop::Kind::kSyscallReturn);
  CHECK(travel.position().event == event + 1);
  back = travel.resume(Direction::kBackward);
  REQUIRE(back.has_value());
  CHECK(back->kind == Stop::Kind::kSyscallEntry);
  CHECK(travel.position().event == event);
  travel.catch_syscalls(false, {});
}

void check_time_travel(const test_support::GuestArchitecture& architecture) {
  const std::string samples = architecture.is_host ? test::kReplaySamples
                                                   : test::kReplaySamples + "-" + std::string(architecture.name);
  const std::string program = samples + "/static/nested_calls";
  const std::string trace = test::replay_temp_path("time-travel-" + std::string(architecture.name) + ".ucir");
  test::record_files(program, core::TraceLevel::kFull, {{replay::TraceFormat::kUcir, trace}});
  const Scan events = scan(trace);
  REQUIRE(events.instructions.size() > 5000);
  auto index = small_chunk_index(trace);
  const std::size_t middle = events.instructions.size() / 2;
  auto count = index->instructions_before(events.instructions[middle].event);
  REQUIRE(count.has_value());
  CHECK(*count == middle);
  auto travel = debug::TimeTravel::start(*index);
  REQUIRE_MESSAGE(travel.has_value(), tracecorn::test_support::error_text(travel));
  CHECK((*travel)->position().event == events.instructions.front().event);
  SUBCASE("steps") { check_steps(**travel, events); }
  SUBCASE("breakpoints") { check_breakpoints(**travel, events); }
  SUBCASE("watchpoints") { check_watchpoints(**travel, events); }
  SUBCASE("read watchpoints") { check_read_watchpoints(**travel, events); }
  SUBCASE("syscalls") { check_syscall_catching(**travel, events); }
  std::filesystem::remove(trace);
}

// What the events say of the threads: each instruction with the thread the
// reader gives it (event.thread), creations and exits.
struct ThreadScan {
  struct Instruction {
    std::uint64_t event, pc;
    std::uint32_t thread;
    bool in_delay_slot;  // runs in the delay slot of the thread's instruction before (mips)
  };
  std::vector<Instruction> instructions;
  std::uint32_t first_thread = 0;
  std::vector<std::pair<std::uint64_t, std::uint32_t>> created, exited;  // event, thread
  std::vector<const Instruction*> of(std::uint32_t thread) const {
    std::vector<const Instruction*> out;
    for (const auto& instruction : instructions)
      if (instruction.thread == thread) out.push_back(&instruction);
    return out;
  }
  std::vector<std::uint32_t> alive_at(std::uint64_t event) const {
    std::vector<std::uint32_t> alive{first_thread};
    for (const auto& [at, thread] : created)
      if (at < event) alive.push_back(thread);
    for (const auto& [at, thread] : exited)
      if (at < event) std::erase(alive, thread);
    std::sort(alive.begin(), alive.end());
    return alive;
  }
};

ThreadScan scan_threads(const std::string& path) {
  ThreadScan out;
  std::uint64_t index = 0;
  std::map<std::uint32_t, std::pair<std::uint64_t, bool>> last;  // per thread: its last pc, whether it opens a delay slot
  for_each_event(path, [&](const arch::ArchInfo& arch, const events::Event& event) {
    if (index == 0) out.first_thread = event.thread.value;
    if (const auto* insn = std::get_if<events::InstructionEvent>(&event.payload)) {
      auto& [pc, opens] = last[event.thread.value];
      out.instructions.push_back(
          {index, insn->address.value, event.thread.value, opens && pc + arch.branch_delay_slot == insn->address.value});
      pc = insn->address.value;
      opens = arch.has_delay_slot && arch.has_delay_slot(insn->bytes);
    }
    if (const auto* change = std::get_if<events::ThreadEvent>(&event.payload)) {
      if (change->change == events::ThreadChange::kCreated) out.created.push_back({index, event.thread.value});
      if (change->change == events::ThreadChange::kExited) out.exited.push_back({index, event.thread.value});
    }
    ++index;
  });
  return out;
}

// Steps one thread forwards through its instructions and back, the others running in between.
void check_thread_steps(debug::TimeTravel& travel, const std::vector<const ThreadScan::Instruction*>& mine) {
  const std::uint32_t thread = mine.front()->thread;
  REQUIRE(travel.seek(mine.front()->event).has_value());
  REQUIRE(travel.current_thread() == thread);
  const std::size_t walk = std::min<std::size_t>(mine.size() - 1, 1500);
  for (std::size_t i = 1; i <= walk; ++i) {
    REQUIRE(travel.step(Direction::kForward, thread).has_value());
    REQUIRE(travel.position().event == mine[i]->event);
    REQUIRE(travel.current_thread() == thread);
  }
  for (std::size_t i = walk; i-- > 0;) {
    if (mine[i]->in_delay_slot) continue;
    REQUIRE(travel.step(Direction::kBackward, thread).has_value());
    REQUIRE(travel.position().event == mine[i]->event);
  }
}

void check_threads(const test_support::GuestArchitecture& architecture) {
  const std::string samples = architecture.is_host ? test::kReplaySamples
                                                   : test::kReplaySamples + "-" + std::string(architecture.name);
  const std::string trace = test::replay_temp_path("time-travel-threads-" + std::string(architecture.name) + ".ucir");
  test::record_files(samples + "/static/debug_threads", core::TraceLevel::kFull, {{replay::TraceFormat::kUcir, trace}});
  const ThreadScan events = scan_threads(trace);
  REQUIRE(events.created.size() == 2);
  auto index = small_chunk_index(trace);
  auto travel = debug::TimeTravel::start(*index);
  REQUIRE_MESSAGE(travel.has_value(), tracecorn::test_support::error_text(travel));
  debug::TimeTravel& t = **travel;
  // The thread shown and the threads alive, at every 7th instruction.
  for (std::size_t i = 0; i < events.instructions.size(); i += 7) {
    const auto& instruction = events.instructions[i];
    CAPTURE(instruction.event);
    REQUIRE(t.seek(instruction.event).has_value());
    REQUIRE(t.position().event == instruction.event);
    CHECK(t.current_thread() == instruction.thread);
    auto alive = t.threads();
    std::sort(alive.begin(), alive.end());
    CHECK(alive == events.alive_at(instruction.event));
  }
  const std::uint32_t worker = events.created.back().second;  // the second worker
  SUBCASE("a thread steps through its own instructions, both ways") {
    check_thread_steps(t, events.of(worker));
    check_thread_steps(t, events.of(events.created.front().second));
  }
  SUBCASE("another thread: its registers as it resumes, a step of it, a step back of it") {
    // The first instruction of another thread after the worker has run once.
    const auto mine = events.of(worker);
    const auto other = std::find_if(events.instructions.begin(), events.instructions.end(), [&](const auto& i) {
      return i.event > mine.front()->event && i.thread != worker;
    });
    REQUIRE(other != events.instructions.end());
    const auto resumes = std::find_if(mine.begin(), mine.end(), [&](const auto* i) { return i->event > other->event; });
    const auto ran = std::find_if(mine.rbegin(), mine.rend(), [&](const auto* i) { return i->event < other->event; });
    REQUIRE(resumes != mine.end());
    REQUIRE(resumes + 1 != mine.end());
    REQUIRE(ran != mine.rend());
    const auto& arch = index->arch();
    REQUIRE(arch.register_index(arch.pc_reg));
    REQUIRE(arch.register_index(arch.sp_reg));
    const std::size_t pc_index = *arch.register_index(arch.pc_reg), sp_index = *arch.register_index(arch.sp_reg);
    REQUIRE(t.seek(other->event).has_value());
    REQUIRE(t.current_thread() == other->thread);
    auto pc = t.thread_register_value(pc_index, worker);
    auto sp = t.thread_register_value(sp_index, worker);
    REQUIRE(pc.has_value());
    REQUIRE(sp.has_value());
    REQUIRE(pc->has_value());
    REQUIRE(sp->has_value());
    CHECK((*pc)->as_u64() == (*resumes)->pc);
    // The stack pointer it resumes with is the one its next instruction sees.
    REQUIRE(t.seek((*resumes)->event).has_value());
    auto sp_there = t.register_value(sp_index);
    REQUIRE(sp_there.has_value());
    CHECK((*sp)->as_u64() == sp_there->as_u64());
    // A step of the worker runs the instruction it resumes at.
    REQUIRE(t.seek(other->event).has_value());
    REQUIRE(t.step(Direction::kForward, worker).has_value());
    CHECK(t.position().event == (*(resumes + 1))->event);
    CHECK(t.current_thread() == worker);
    // A step back of the worker undoes its last instruction before the position.
    REQUIRE(t.seek(other->event).has_value());
    REQUIRE(t.step(Direction::kBackward, worker).has_value());
    CHECK(t.position().event == (*ran)->event);
    // A thread not alive has no registers.
    REQUIRE(t.seek(events.instructions.front().event).has_value());
    CHECK_FALSE(t.thread_register_value(pc_index, worker).has_value());
  }
  std::filesystem::remove(trace);
}

std::string threads_case_name(const test_support::GuestArchitecture& architecture) {
  return "Time travel: " + std::string(architecture.name) +
         ": threads: the thread shown, the threads alive, one thread's steps and another's registers";
}

std::string case_name(const test_support::GuestArchitecture& architecture) {
  return "Time travel: " + std::string(architecture.name) +
         ": steps, breakpoints, watchpoints and syscall stops match the trace's events";
}

}  // namespace

TRACECORN_TEST_CASE_PER_ROW(test_support::kGuestArchitectures, case_name, check_time_travel);
TRACECORN_TEST_CASE_PER_ROW(test_support::kGuestArchitectures, threads_case_name, check_threads);

TEST_CASE("Time travel: a trace without instruction events is refused, naming the level it needs") {
  const std::string trace = test::replay_temp_path("time-travel-blocks.ucir");
  test::record_files(test::kReplaySamples + "/static/hello", core::TraceLevel::kBlocks,
                     {{replay::TraceFormat::kUcir, trace}});
  auto index = small_chunk_index(trace);
  auto travel = debug::TimeTravel::start(*index);
  REQUIRE_FALSE(travel.has_value());
  CHECK(travel.error().message.find("'full'") != std::string::npos);
  std::filesystem::remove(trace);
}
