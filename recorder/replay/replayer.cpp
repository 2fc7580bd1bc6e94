// Role: implementation of replay_trace (see replayer.h): the syscall source
// that answers from the trace (emulation thread), the comparing sink (the
// recorder's drain thread), and the set-up of the re-run.
#include "recorder/replay/replayer.h"

#include <sys/mman.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>

#include <fmt/format.h>

#include "recorder/session/process_recording.h"
#include "recorder/core/recorder.h"
#include "recorder/linux/linux_process.h"
#include "recorder/replay/process_tree.h"
#include "recorder/replay/signal_plan.h"
#include "recorder/replay/thread_schedule.h"
#include "recorder/replay/trace_index.h"
#include "recorder/replay/trace_reader.h"
#include "recorder/replay/trace_tools.h"

namespace tracecorn::replay {

std::string Divergence::to_string() const {
  return fmt::format("event {}, pc {:#x}: {}: the trace says {}, the emulator {}", event, pc, what, trace_says,
                     emulator_did);
}

namespace {

using events::EventKind;
using arch::SyscallId;

std::string syscall_text(const arch::ArchInfo& arch, std::uint64_t number, const std::uint64_t* args) {
  const SyscallId id = arch.syscall_id(number);
  std::string text = id == SyscallId::unknown ? fmt::format("syscall_{}", number) : std::string(arch::syscall_name(id));
  return text + fmt::format("({:#x}, {:#x}, {:#x}, {:#x}, {:#x}, {:#x})", args[0], args[1], args[2], args[3], args[4],
                            args[5]);
}

// One step of execution, as either side describes it.
struct Step {
  std::uint64_t event = 0;  // index of its first event in its stream
  EventKind kind = EventKind::kInstruction;
  std::uint64_t pc = 0, size = 0;
  std::uint8_t mode = 0;  // instruction set of an instruction or block (arm: 1 = Thumb)
  std::uint64_t number = 0, args[6] = {};
  std::int64_t result = 0;
  std::int64_t code = 0;  // exit code, fault signal
  std::map<std::uint64_t, std::uint8_t> written, read;
  std::vector<events::RegisterValue> registers;
};

// Groups events into steps: an instruction, block, syscall, fault or exit
// starts one; memory and register events join the current one.
class StepBuilder {
 public:
  void feed(const events::Event& event, std::uint64_t index, std::deque<Step>& out) {
    switch (event.kind) {
      case EventKind::kModuleLoad: case EventKind::kGap: return;
      // A fork or an exec: the syscall before it is compared (the re-run answers
      // it from the trace, without a process event of its own).
      case EventKind::kProcess: return;
      case EventKind::kMemoryRead: case EventKind::kMemoryWrite: {
        const auto& m = std::get<events::MemoryEvent>(event.payload);
        Step& step = current(index);
        auto& bytes = event.kind == EventKind::kMemoryWrite ? step.written : step.read;
        for (std::size_t i = 0; i < m.size && i < 8; ++i) {
          const std::uint8_t value = static_cast<std::uint8_t>(m.value >> (8 * i));
          if (event.kind == EventKind::kMemoryWrite) bytes[m.address.value + i] = value;
          else bytes.emplace(m.address.value + i, value);  // the first read of a byte is before the writes
        }
        return;
      }
      case EventKind::kRegisters: {
        const auto& r = std::get<events::RegistersEvent>(event.payload);
        Step& step = current(index);
        step.registers.insert(step.registers.end(), r.changes.begin(), r.changes.end());
        return;
      }
      default: break;
    }
    flush(out);
    Step step;
    step.event = index;
    step.kind = event.kind;
    std::visit(
        [&](const auto& p) {
          using T = std::decay_t<decltype(p)>;
          if constexpr (std::is_same_v<T, events::BlockEvent>) {
            step.pc = p.address.value, step.size = p.size, step.mode = p.mode;
          } else if constexpr (std::is_same_v<T, events::InstructionEvent>) {
            step.pc = p.address.value, step.size = p.size, step.mode = p.mode;
          } else if constexpr (std::is_same_v<T, events::SyscallEvent>) {
            step.pc = p.pc.value, step.number = p.number, step.result = p.result;
            std::copy(std::begin(p.args), std::end(p.args), step.args);
            // The registers the kernel changed (the result among them): compared
            // like an instruction's, so a result that disagrees with them shows.
            step.registers.assign(p.register_changes.begin(), p.register_changes.end());
          } else if constexpr (std::is_same_v<T, events::FaultEvent>) {
            step.pc = p.pc.value, step.code = p.signal;
          } else if constexpr (std::is_same_v<T, events::SignalEvent>) {
            // Where it interrupted, the signal and its handler; the handler's
            // registers compared like an instruction's.
            step.pc = p.interrupted_pc.value, step.number = p.signal, step.size = p.handler.value;
            step.code = p.code;
            step.registers.assign(p.register_changes.begin(), p.register_changes.end());
          } else if constexpr (std::is_same_v<T, events::ExitEvent>) {
            step.code = p.code;
          } else if constexpr (std::is_same_v<T, events::ThreadEvent>) {
            // The change, the thread and the one before (or the parent), the
            // exit status; a switch's registers compared like an instruction's.
            step.number = static_cast<std::uint64_t>(p.change), step.size = event.thread.value;
            step.args[0] = p.from.value, step.code = p.exit_code;
            step.registers.assign(p.registers.begin(), p.registers.end());
          }
        },
        event.payload);
    current_ = std::move(step);
  }
  void flush(std::deque<Step>& out) {
    if (current_) out.push_back(std::move(*current_));
    current_.reset();
  }

 private:
  Step& current(std::uint64_t index) {
    if (!current_) {  // memory or registers before any step: a step of their own
      current_ = Step{};
      current_->event = index;
      current_->kind = EventKind::kRegisters;
    }
    return *current_;
  }
  std::optional<Step> current_;
};

// A register file: values and whether each is known.
struct RegisterFile {
  std::vector<events::RegisterValue> values;
  std::vector<bool> known;
  explicit RegisterFile(const events::TraceInfo& info, std::size_t count) : values(count), known(count, false) {
    for (const auto& value : info.initial_registers)
      if (value.index < count) values[value.index] = value, known[value.index] = true;
  }
  void apply(const std::vector<events::RegisterValue>& changes) {
    for (const auto& value : changes)
      if (value.index < values.size()) values[value.index] = value, known[value.index] = true;
  }
};

std::string hex_bytes(const events::RegisterValue& value) {
  std::string text = "0x";
  for (std::size_t i = value.size; i-- > 0;) text += fmt::format("{:02x}", value.bytes[i]);
  return text;
}

// ", Thumb" for an architecture with two instruction sets, "" otherwise.
std::string mode_text(const arch::ArchInfo& arch, std::uint8_t mode) {
  if (!arch.alternate_isa) return "";
  return ", " + std::string(arch.alternate_isa->names[mode == 1 ? 1 : 0]);
}

std::string step_text(const arch::ArchInfo& arch, const Step& step) {
  switch (step.kind) {
    case EventKind::kInstruction:
      return fmt::format("an instruction at {:#x} ({} bytes{})", step.pc, step.size, mode_text(arch, step.mode));
    case EventKind::kBlock:
      return fmt::format("a block at {:#x} ({} bytes{})", step.pc, step.size, mode_text(arch, step.mode));
    case EventKind::kSyscall:
      return fmt::format("{} = {} at pc {:#x}", syscall_text(arch, step.number, step.args), step.result, step.pc);
    case EventKind::kFault: return fmt::format("a fault (signal {}) at {:#x}", step.code, step.pc);
    case EventKind::kSignal:
      return fmt::format("signal {} (si_code {}) to its handler at {:#x}, interrupting {:#x}", step.number, step.code,
                         step.size, step.pc);
    case EventKind::kExit: return fmt::format("the exit (code {})", step.code);
    case EventKind::kThread:
      switch (static_cast<events::ThreadChange>(step.number)) {
        case events::ThreadChange::kCreated: return fmt::format("thread {} created by {}", step.size, step.args[0]);
        case events::ThreadChange::kExited: return fmt::format("thread {} exiting (status {})", step.size, step.code);
        default: return fmt::format("a switch to thread {} from {}", step.size, step.args[0]);
      }
    default: return "memory or register changes outside an instruction";
  }
}

std::string byte_map_text(const std::map<std::uint64_t, std::uint8_t>& bytes) {
  std::string text;
  std::uint64_t next = ~0ull;
  std::size_t shown = 0;
  for (const auto& [address, value] : bytes) {
    if (address != next) text += fmt::format("{}{:#x}:", text.empty() ? "" : " ", address);
    text += fmt::format(" {:02x}", value);
    next = address + 1;
    if (++shown == 32) return text + " ...";
  }
  return text.empty() ? "nothing" : text;
}

// The sink the re-run's recorder feeds (drain thread): compares each step with
// the trace's, read from its own reader as needed; stops the engine at the
// first divergence.
class Comparator final : public events::Sink {
 public:
  Comparator(TraceReader& trace, const arch::ArchInfo& arch, uc_engine* engine, bool compare_syscall_pc)
      : trace_(trace),
        arch_(arch),
        engine_(engine),
        caps_(trace.capabilities()),
        compare_syscall_pc_(compare_syscall_pc),
        trace_registers_(trace.info(), arch.registers.size()),
        replay_registers_(trace.info(), arch.registers.size()) {
    for (std::size_t i = 0; i < arch.registers.size(); ++i)
      if (arch.registers[i].uc_id == arch.pc_reg) pc_index_ = i;
  }
  void begin(const events::TraceInfo&) override {}
  // Memory and register events are compared only when the trace has some (a
  // trace converted from a format without them, or recorded at a lower level).
  // Blocks only when the trace has no instructions (a converted trace's blocks
  // may be made up: runs of fall-through instructions, not Unicorn's blocks).
  void compare_only(bool blocks, bool reads, bool writes, bool registers) {
    compare_blocks_ = blocks, compare_reads_ = reads, compare_writes_ = writes, compare_registers_ = registers;
  }
  // Library traces (replay_engine_trace): the run's steps are kept whole and
  // compared at end(), both sides aligned at their last steps.
  void align_ends() { align_ends_ = true; }
  // The trace's syscall events before event `index` are not compared: a trace
  // that opens inside a syscall (a forked child's), which the re-run does not
  // make (its effects are applied before it starts).
  void skip_trace_syscalls_before(std::uint64_t index) { skip_syscalls_before_ = index; }
  // The syscall source stopped the re-run at a syscall past the trace's last
  // (before finish(): end() reads it on the drain thread).
  void rerun_stopped_past_last_syscall() { rerun_stopped_past_last_syscall_ = true; }
  // The re-run stopped at a successful execve (its image ends there): the
  // trace may end there too, or with an exit that carries no status (UCIR's).
  void rerun_ended_by_exec() { rerun_ended_by_exec_ = true; }
  void on_event(const events::Event& event) override {
    if (divergence_ || !error_.empty() || killed_outside_syscall_ || recording_interrupted_) return;
    if (!wanted(event.kind)) return;
    note_module(event, replay_events_, replay_started_, replay_modules_);
    replay_builder_.feed(event, replay_events_++, replay_steps_);
    if (!align_ends_) compare_ready(false);
  }
  std::string end(const events::TraceSummary&) override {
    if (divergence_ || !error_.empty()) return "";
    if (killed_outside_syscall_ || recording_interrupted_) {
      compare_modules();
      return "";
    }
    replay_builder_.flush(replay_steps_);
    if (align_ends_) {
      pull_trace(true);
      if (!error_.empty()) return "";
      // A dump that starts inside an instruction (the ring dropped its start) opens with
      // its memory and register events alone: not a step the run can match.
      while (!trace_steps_.empty() && trace_steps_.front().kind == EventKind::kRegisters)
        trace_steps_.pop_front(), ++trace_steps_skipped_;
      while (trace_steps_.size() > replay_steps_.size()) trace_steps_.pop_front(), ++trace_steps_skipped_;
      while (replay_steps_.size() > trace_steps_.size()) replay_steps_.pop_front(), ++replay_steps_skipped_;
    }
    compare_ready(true);
    if (divergence_ || !error_.empty() || killed_outside_syscall_ || recording_interrupted_) return "";
    // The trace must have nothing left.
    pull_trace(true);
    if (rerun_stopped_past_last_syscall_ && trace_steps_.size() == 1 &&
        ends_by_signal_from_outside(trace_steps_.front(), Step{})) {
      // The re-run went on to a syscall the trace has not (the source
      // stopped it there before its step reached here): the same death.
      trace_steps_.clear();
      note_stopped_where_trace_ends();
      compare_modules();
      return "";
    }
    if (rerun_ended_by_exec_ && trace_steps_.size() == 1 && trace_steps_.front().kind == EventKind::kExit)
      trace_steps_.clear();  // (UCIR ends every trace with OP_EXIT; no process ended there)
    // The re-run ended on the last step of an interrupted recording (stopped
    // at the trace's instruction count before it went further): it was
    // stopped there, as when the comparison sees it go on.
    if (trace_steps_.empty() && trace_.interrupted()) recording_interrupted_ = true;
    if (!trace_steps_.empty()) {
      const Step& step = trace_steps_.front();
      diverge(step, "the run ended early", step_text(arch_, step), "had ended");
    }
    if (!divergence_) compare_modules();
    return "";
  }

  std::optional<Divergence> divergence_;
  // The trace's process was killed by a signal from another process between
  // two blocks (it ran without syscalls): the re-run was stopped there too.
  bool killed_outside_syscall_ = false;
  // The recording was interrupted (its note): the re-run was stopped where it ends.
  bool recording_interrupted_ = false;
  std::atomic<bool> rerun_stopped_past_last_syscall_ = false;
  std::atomic<bool> rerun_ended_by_exec_ = false;
  std::string error_;  // the trace could not be read
  std::uint64_t steps_compared_ = 0;
  std::uint64_t trace_steps_skipped_ = 0, replay_steps_skipped_ = 0;  // align_ends(): not compared

 private:
  bool wanted(EventKind kind) const {
    if (!caps_.carries(kind)) return false;
    switch (kind) {
      case EventKind::kBlock: return compare_blocks_;
      case EventKind::kMemoryRead: return compare_reads_;
      case EventKind::kMemoryWrite: return compare_writes_;
      case EventKind::kRegisters: return compare_registers_;
      default: return true;
    }
  }
  // Reads trace events until `steps` steps are complete (or the trace ends,
  // when `to_end`).
  void pull_trace(bool to_end, std::size_t steps = 1) {
    while ((trace_steps_.size() < steps || to_end) && !trace_done_) {
      auto more = trace_.next([&](const events::Event& event) {
        if (!wanted(event.kind)) return;
        if (event.kind == EventKind::kSyscall && trace_.index() - 1 < skip_syscalls_before_) return;
        note_module(event, trace_.index() - 1, trace_started_, trace_modules_);
        trace_builder_.feed(event, trace_.index() - 1, trace_steps_);
      });
      if (!more) {
        error_ = more.error().to_string();
        trace_done_ = true;
      } else if (!*more) {
        trace_done_ = true;
        trace_builder_.flush(trace_steps_);
      }
    }
  }
  void compare_ready(bool at_end) {
    // A step is complete once the next one started (or at the end).
    while (!replay_steps_.empty() && !divergence_ && error_.empty()) {
      (void)at_end;
      pull_trace(false);
      if (!error_.empty()) return;
      const Step& mine = replay_steps_.front();
      if (trace_steps_.empty() && trace_done_ && ends_where_rerun_stops()) {
        note_stopped_where_trace_ends();  // (as ends_by_signal_from_outside() below)
        replay_steps_.clear();
        if (!align_ends_) uc_emu_stop(engine_);
        return;
      }
      if (trace_steps_.empty()) {
        Step end_marker;
        end_marker.event = trace_.index();
        diverge(end_marker, "the trace ends here", "nothing more", "went on: " + step_text(arch_, mine));
        return;
      }
      if (ends_by_signal_from_outside(trace_steps_.front(), mine)) {
        trace_steps_.pop_front();
        note_stopped_where_trace_ends();
        replay_steps_.clear();
        if (!align_ends_) uc_emu_stop(engine_);  // from the drain thread, as diverge()
        return;
      }
      compare(trace_steps_.front(), mine);
      ++steps_compared_;
      last_trace_kind_ = trace_steps_.front().kind;
      trace_steps_.pop_front();
      replay_steps_.pop_front();
    }
  }
  // The trace, read to its end, ends where the re-run must stop: a format
  // without exit events (BAP frames) whose death note says a signal killed
  // the process after code, or a recording interrupted by SIGINT or SIGTERM.
  bool ends_where_rerun_stops() const {
    const bool after_code = last_trace_kind_ == EventKind::kBlock || last_trace_kind_ == EventKind::kInstruction;
    return (trace_.killed_by_signal() != 0 && after_code) || trace_.interrupted();
  }
  // The re-run stops where the trace ends (its last step compared): its
  // process was killed there from outside, or the recording was interrupted
  // there (the interruption note, the trace's last record: read to the end).
  void note_stopped_where_trace_ends() {
    pull_trace(true);
    (trace_.interrupted() ? recording_interrupted_ : killed_outside_syscall_) = true;
  }
  // The trace ends (its exit) right after code, where the re-run goes on: its
  // process died there of a signal another process sent while it ran without
  // syscalls (a syscall's return or a fault comes before any other death),
  // which nothing in the re-run brings.
  bool ends_by_signal_from_outside(const Step& trace, const Step& mine) const {
    return trace.kind == EventKind::kExit && mine.kind != EventKind::kExit &&
           (last_trace_kind_ == EventKind::kBlock || last_trace_kind_ == EventKind::kInstruction);
  }
  // A successful execve/execveat: the image ends there (its trace does too).
  bool ends_image(const Step& step) const {
    return step.kind == EventKind::kSyscall &&
           replaces_image(arch::syscall_name(arch_.syscall_id(step.number)), step.result);
  }
  void diverge(const Step& at, std::string what, std::string trace_says, std::string emulator_did) {
    if (divergence_) return;
    divergence_ = Divergence{at.event, at.pc, std::move(what), std::move(trace_says), std::move(emulator_did)};
    if (!align_ends_) uc_emu_stop(engine_);  // from the drain thread: Unicorn allows it
  }
  void compare(const Step& trace, const Step& mine) {
    if (trace.kind != mine.kind)
      return diverge(trace, "what happens next", step_text(arch_, trace), "did " + step_text(arch_, mine));
    switch (trace.kind) {
      case EventKind::kInstruction: case EventKind::kBlock:
        if (trace.pc != mine.pc || trace.size != mine.size || trace.mode != mine.mode)
          return diverge(trace, "the code executed", step_text(arch_, trace), "executed " + step_text(arch_, mine));
        break;
      case EventKind::kSyscall:
        if (trace.number != mine.number || !std::equal(std::begin(trace.args), std::end(trace.args), mine.args))
          return diverge(trace, "the syscall", step_text(arch_, trace), "made " + step_text(arch_, mine));
        if (trace.result != mine.result)
          return diverge(trace, "the syscall's result", std::to_string(trace.result), "got " + std::to_string(mine.result));
        if (compare_syscall_pc_ && trace.pc != mine.pc)
          return diverge(trace, "the syscall's pc", fmt::format("{:#x}", trace.pc), fmt::format("made it at {:#x}", mine.pc));
        break;
      case EventKind::kFault:
        if (trace.pc != mine.pc || trace.code != mine.code)
          return diverge(trace, "the fault", step_text(arch_, trace), "had " + step_text(arch_, mine));
        break;
      case EventKind::kSignal:
        if (trace.pc != mine.pc || trace.number != mine.number || trace.size != mine.size || trace.code != mine.code)
          return diverge(trace, "the signal", step_text(arch_, trace), "took " + step_text(arch_, mine));
        // The handler's registers where the level records registers (without a
        // code hook, Unicorn 2.0.1's flags at a fault are not always the same).
        if (!compare_registers_) return;
        break;
      case EventKind::kThread:
        if (trace.number != mine.number || trace.size != mine.size || trace.args[0] != mine.args[0] || trace.code != mine.code)
          return diverge(trace, "the threads", step_text(arch_, trace), "had " + step_text(arch_, mine));
        break;
      case EventKind::kExit:
        if (caps_.exit_code && trace.code != mine.code)
          return diverge(trace, "the exit code", std::to_string(trace.code), "exited with " + std::to_string(mine.code));
        break;
      default: break;
    }
    if (trace.written != mine.written)
      return diverge(trace, "the memory written", byte_map_text(trace.written), "wrote " + byte_map_text(mine.written));
    if (caps_.carries(EventKind::kMemoryRead)) {
      // Addresses always; values only where the format records them (UCIR rebuilds them).
      bool same = trace.read.size() == mine.read.size();
      for (auto a = trace.read.begin(), b = mine.read.begin(); same && a != trace.read.end(); ++a, ++b)
        same = a->first == b->first && (!caps_.memory_read_values || a->second == b->second);
      if (!same) return diverge(trace, "the memory read", byte_map_text(trace.read), "read " + byte_map_text(mine.read));
    }
    trace_registers_.apply(trace.registers);
    replay_registers_.apply(mine.registers);
    if (ends_image(trace)) return;  // the registers the old image was left with: no kernel writes them
    auto check = [&](const std::vector<events::RegisterValue>& changes) {
      for (const auto& value : changes) {
        const std::size_t i = value.index;
        if (i >= arch_.registers.size() || i == pc_index_ || !trace_registers_.known[i] || !replay_registers_.known[i])
          continue;
        const auto& a = trace_registers_.values[i];
        const auto& b = replay_registers_.values[i];
        if (a.size != b.size || std::memcmp(a.bytes.data(), b.bytes.data(), a.size) != 0) {
          diverge(trace, "register " + std::string(arch_.registers[i].name) + " after " + step_text(arch_, trace),
                  hex_bytes(a), "computed " + hex_bytes(b));
          return;
        }
      }
    };
    check(trace.registers);
    if (!divergence_ && !signal_follows_syscall(trace)) check(mine.registers);
  }
  // The trace's syscall step `trace` (the front one) is followed by a signal
  // delivered before any code ran: the re-run delivers it as the syscall
  // returns, its handler's registers in the syscall's step, where the
  // recording may have taken it a moment later (the sender's signal came
  // after the syscall's record), its registers in the signal's step alone.
  // The signal's step holds them all: they are compared there.
  bool signal_follows_syscall(const Step& trace) {
    if (trace.kind != EventKind::kSyscall) return false;
    pull_trace(false, 2);
    return trace_steps_.size() >= 2 && trace_steps_[1].kind == EventKind::kSignal;
  }

  // A module load, as compared: the file's name (not its directory: a replay
  // may name the program by another path), its range and load bias.
  struct Module {
    std::uint64_t event = 0, start = 0, end = 0, bias = 0;
    std::string name;
    bool operator==(const Module& other) const {
      return start == other.start && end == other.end && bias == other.bias && name == other.name;
    }
    std::string text() const { return fmt::format("{} at {:#x}-{:#x} (bias {:#x})", name, start, end, bias); }
  };
  static Module module_of(const events::Event& event, std::uint64_t index) {
    const auto& m = std::get<events::ModuleLoadEvent>(event.payload);
    const std::size_t slash = m.path.rfind('/');
    return Module{index, m.start.value, m.end.value, m.load_bias,
                  std::string(slash == std::string_view::npos ? m.path : m.path.substr(slash + 1))};
  }
  // Keeps the modules mapped before the first step: the ones the loader maps
  // (the program, its interpreter). Later ones (libraries ld.so maps) are
  // mmaps answered from the trace, checked through those syscalls.
  static void note_module(const events::Event& event, std::uint64_t index, bool& started, std::vector<Module>& out) {
    if (event.kind == EventKind::kModuleLoad) {
      if (!started) out.push_back(module_of(event, index));
    } else if (event.kind != EventKind::kGap) {
      started = true;
    }
  }
  // The modules the trace expects against those the re-run's loader mapped, in order.
  void compare_modules() {
    // None at all: converted from a format without them (UCIR), or the caller reported none.
    if (trace_modules_.empty()) return;
    if (align_ends_) {  // a flight recorder keeps only the last ones: compare the ends
      while (trace_modules_.size() > replay_modules_.size()) trace_modules_.erase(trace_modules_.begin());
      while (replay_modules_.size() > trace_modules_.size()) replay_modules_.erase(replay_modules_.begin());
    }
    for (std::size_t i = 0; i < trace_modules_.size() || i < replay_modules_.size(); ++i) {
      Step at;
      at.kind = EventKind::kModuleLoad;
      if (i < trace_modules_.size()) at.event = trace_modules_[i].event, at.pc = trace_modules_[i].start;
      else at.event = trace_.index();
      if (i >= replay_modules_.size())
        return diverge(at, "a module load", trace_modules_[i].text(), "did not load it");
      if (i >= trace_modules_.size())
        return diverge(at, "a module load", "no more modules", "loaded " + replay_modules_[i].text());
      if (!(trace_modules_[i] == replay_modules_[i]))
        return diverge(at, "a module load", trace_modules_[i].text(), "loaded " + replay_modules_[i].text());
    }
  }

  TraceReader& trace_;
  const arch::ArchInfo& arch_;
  uc_engine* engine_;
  const Capabilities& caps_;
  bool compare_syscall_pc_;
  std::size_t pc_index_ = ~std::size_t{0};
  StepBuilder trace_builder_, replay_builder_;
  std::deque<Step> trace_steps_, replay_steps_;
  bool trace_done_ = false;
  std::uint64_t replay_events_ = 0;
  bool compare_blocks_ = true, compare_reads_ = true, compare_writes_ = true, compare_registers_ = true;
  bool align_ends_ = false;
  std::uint64_t skip_syscalls_before_ = 0;
  EventKind last_trace_kind_ = EventKind::kExit;  // the last trace step compared (none yet: kExit)
  std::vector<Module> trace_modules_, replay_modules_;
  bool trace_started_ = false, replay_started_ = false;
  RegisterFile trace_registers_, replay_registers_;
};

// Whether a syscall must run inside the emulator (it changes the emulated
// machine or ends or signals the process, or returns from a signal handler)
// rather than be answered.
bool must_run(SyscallId id) {
  switch (id) {
    case SyscallId::brk: case SyscallId::mmap: case SyscallId::mmap2: case SyscallId::munmap: case SyscallId::mprotect:
    case SyscallId::mremap: case SyscallId::madvise: case SyscallId::arch_prctl: case SyscallId::exit:
    case SyscallId::exit_group: case SyscallId::kill: case SyscallId::tgkill: case SyscallId::tkill:
    case SyscallId::rt_sigaction: case SyscallId::rt_sigprocmask:
    case SyscallId::rt_sigreturn: case SyscallId::sigreturn: case SyscallId::sigaltstack:
    case SyscallId::set_thread_area: case SyscallId::set_tls: case SyscallId::old_mmap:
      return true;
    default:
      return false;
  }
}

// In a trace with threads, what must also run: what creates, ends and
// schedules threads and what their blocking and waking depends on (futexes,
// which only guest memory decides). A clone without the thread flags (a
// fork) is answered: its child has its own trace.
bool runs_with_threads(SyscallId id, const std::uint64_t (&args)[6], uc_engine* engine, const arch::ArchInfo& arch) {
  constexpr std::uint64_t kCloneThread = 0x10000;
  switch (id) {
    case SyscallId::futex: case SyscallId::futex_time64: case SyscallId::set_tid_address:
    case SyscallId::set_robust_list: case SyscallId::sched_yield:
      return true;
    case SyscallId::clone: return (args[0] & kCloneThread) != 0;
    case SyscallId::clone3: {  // struct clone_args starts with its u64 flags
      std::uint8_t bytes[8] = {};
      if (uc_mem_read(engine, args[0], bytes, sizeof bytes) != UC_ERR_OK) return false;
      return (arch::FrameReader(std::span<const std::uint8_t>(bytes), arch.little_endian).get(0, 8) & kCloneThread) != 0;
    }
    default:
      return false;
  }
}

// Answers the re-run's syscalls from the trace (emulation thread); in a
// trace with threads, also makes the re-run's scheduler follow the trace's
// schedule (thread_schedule.h).
class TraceSyscalls final : public linux_layer::SyscallSource {
 public:
  TraceSyscalls(const std::vector<SyscallRecord>& syscalls, const arch::ArchInfo& arch, uc_engine* engine,
                std::uint64_t trace_pid, std::uint64_t own_pid, const SignalPlan& signals,
                const ThreadSchedule& schedule, linux_layer::LinuxProcess& process)
      : syscalls_(syscalls), arch_(arch), engine_(engine), trace_pid_(trace_pid), own_pid_(own_pid),
        signals_(signals), schedule_(schedule), process_(process) {}

  bool follows_schedule() const noexcept override { return schedule_.has_threads(); }
  std::optional<std::uint32_t> next_thread(std::uint64_t block) noexcept override {
    const auto& switches = schedule_.switches();
    if (block) ++quanta_ended_;
    if (divergence_ || next_switch_ >= switches.size()) return std::nullopt;
    const PlannedSwitch& next = switches[next_switch_];
    if (next.syscalls_before != next_ || next.preemption != (block != 0)) return std::nullopt;
    // A quantum that ran out elsewhere than where the trace's did switches
    // nothing (the recording found no other thread ready there).
    if (block && (next.resume_pc != block || (schedule_.counts_quanta() ? next.quantum != quanta_ended_
                                                                        : next.executions_before != schedule_.executions(block))))
      return std::nullopt;
    // A signal from outside that the recording delivered as this switch
    // made: pending now, the switch delivers it to the thread it runs.
    for (const PlannedSignal& signal : signals_.at_switch(next_switch_))
      process_.inject_signal(signal.signal, signal.code, signal.sender_pid, signal.frame_bytes, signal.frame);
    ++next_switch_;
    quanta_ended_ = 0;  // the scheduler starts the next thread's quantum
    return next.to;
  }
  std::optional<std::int64_t> resumed_result(std::uint32_t thread, std::uint64_t number) noexcept override {
    if (divergence_ || next_ >= syscalls_.size() || !schedule_.resumed(next_) || schedule_.thread_of(next_) != thread ||
        syscalls_[next_].number != number)
      return std::nullopt;
    const std::span<const PlannedSignal> delivered = signals_.after_syscall(next_);
    const SyscallRecord& record = syscalls_[next_++];
    for (const PlannedSignal& signal : delivered)
      process_.inject_signal(signal.signal, signal.code, signal.sender_pid, signal.frame_bytes, signal.frame);
    ++answered_;
    apply_effects(record, delivered);
    return record.result;
  }

  Decision on_syscall(std::uint64_t pc, std::uint64_t number, SyscallId id,
                      const std::uint64_t (&args)[6]) noexcept override {
    Decision decision;
    decision.result = -ENOSYS;
    if (divergence_) return decision;
    if (next_ >= syscalls_.size()) {
      ran_out_ = true;
      diverge(syscalls_.empty() ? 0 : syscalls_.back().event + 1, pc, "a syscall", "no more syscalls",
              "made " + syscall_text(arch_, number, args));
      return decision;
    }
    const std::span<const PlannedSignal> delivered = signals_.after_syscall(next_);
    const SyscallRecord& record = syscalls_[next_++];
    if (record.number != number || !std::equal(std::begin(args), std::end(args), record.args)) {
      diverge(record.event, record.pc, "the syscall", syscall_text(arch_, record.number, record.args),
              "made " + syscall_text(arch_, number, args));
      return decision;
    }
    pending_ = &record;
    // The signals the trace delivered as this syscall returned: pending now,
    // so that the kernel delivers them there (a wait ends at once).
    for (const PlannedSignal& signal : delivered)
      process_.inject_signal(signal.signal, signal.code, signal.sender_pid, signal.frame_bytes, signal.frame);
    const bool waits_for_them = !delivered.empty() && (id == SyscallId::pause || id == SyscallId::rt_sigsuspend);
    if (id == SyscallId::rt_sigtimedwait && record.result > 0)  // it took that signal: no handler runs
      process_.take_pending_signal(arch::signal_to_host(arch_, static_cast<int>(record.result)));
    const bool threads = schedule_.has_threads();
    if ((must_run(id) && !signals_another_process(id, args)) || waits_for_them ||
        (threads && runs_with_threads(id, args, engine_, arch_))) {
      ++run_;
      decision.run = true;
      std::copy(std::begin(args), std::end(args), decision.args);
      if ((id == SyscallId::mmap || id == SyscallId::mmap2) && !(arch::mmap_flags_to_host(arch_, args[3]) & MAP_ANONYMOUS)) {
        // A file mapping: an anonymous one here, filled with the trace's bytes after.
        decision.args[3] |= guest_map_anonymous();
        decision.args[4] = static_cast<std::uint64_t>(-1);
        decision.args[5] = 0;
      }
      if (id == SyscallId::old_mmap) make_old_mmap_anonymous(args[0]);
      // kill's pid and tgkill's tgid name the process (thread ids are the trace's: tkill's stay).
      if ((id == SyscallId::kill || id == SyscallId::tgkill) && decision.args[0] == trace_pid_)
        decision.args[0] = own_pid_;
      return decision;
    }
    ++answered_;
    if (threads && schedule_.blocked(next_ - 1)) {  // the thread waited here (it runs the call again later)
      decision.block = true;
      return decision;
    }
    apply_effects(record, delivered);
    decision.result = record.result;
    if ((id == SyscallId::execve || id == SyscallId::execveat) && record.result == 0) {
      // The image ends here: the next one has its own trace (BASE.PID.N).
      image_replaced_ = true;
      uc_emu_stop(engine_);
    }
    return decision;
  }

  // A kill, tgkill or tkill whose target is another process (a child the
  // recording forked, which the re-run does not have): answered from the
  // trace like any other syscall. A signal to itself, its group or every
  // process (which includes itself) runs.
  bool signals_another_process(SyscallId id, const std::uint64_t (&args)[6]) const {
    if (id != SyscallId::kill && id != SyscallId::tgkill && id != SyscallId::tkill) return false;
    // kill's pid, tgkill's tgid, tkill's tid: 0 and negative name groups.
    const auto target = static_cast<std::int64_t>(arch_.elf_64bit ? args[0] : static_cast<std::int32_t>(args[0]));
    if (id == SyscallId::tkill && schedule_.knows_thread(static_cast<std::uint64_t>(target))) return false;
    return target > 0 && static_cast<std::uint64_t>(target) != trace_pid_;
  }

  // A trace that opens inside a syscall (a forked child's opens with its
  // fork returning 0): that syscall is the trace's first record, done before
  // the re-run starts. Takes it off the list and returns it (nullptr when
  // there is none or it was taken); apply_opening_effects then applies it.
  const SyscallRecord* take_opening_syscall() {
    if (syscalls_.empty() || next_ != 0) return nullptr;
    ++answered_;
    return &syscalls_[next_++];
  }
  void apply_opening_effects(const SyscallRecord& record) { apply_effects(record, {}); }

  void after_run(std::uint64_t, std::int64_t result) noexcept override {
    if (!saved_block_.empty()) {  // the guest's own old_mmap block back, as it gave it
      (void)uc_mem_write(engine_, saved_block_address_, saved_block_.data(), saved_block_.size());
      saved_block_.clear();
    }
    if (!pending_ || divergence_) return;
    if (result != pending_->result) {
      diverge(pending_->event, pending_->pc, "the result of " + syscall_text(arch_, pending_->number, pending_->args),
              std::to_string(pending_->result), "got " + std::to_string(result));
      return;
    }
    // A file mapping's contents (and the same bytes as the kernel's own writes otherwise).
    for (const auto& [address, bytes] : pending_->memory_writes)
      (void)uc_mem_write(engine_, address, bytes.data(), bytes.size());
  }

  std::optional<Divergence> divergence_;
  // The re-run made a syscall past the trace's last: a divergence, unless
  // the trace's process was killed from outside before it got there.
  bool ran_out_ = false;
  bool image_replaced_ = false;  // a successful execve ended the re-run
  std::uint64_t answered_ = 0, run_ = 0;

 private:
  // The guest's value of MAP_ANONYMOUS (mips: 0x800; arch::ArchInfo::mmap_flags).
  std::uint64_t guest_map_anonymous() const {
    for (const auto& flag : arch_.mmap_flags)
      if (flag.host == MAP_ANONYMOUS) return flag.guest;
    return MAP_ANONYMOUS;
  }

  // i386's old mmap takes its six arguments in a block of words in guest
  // memory: a file mapping there becomes an anonymous one for the run (flags
  // word | MAP_ANONYMOUS, fd -1, offset 0; filled with the trace's bytes
  // after, as mmap2's), the block's own bytes put back by after_run. A block
  // that cannot be read is left alone (the call fails as it did in the trace).
  void make_old_mmap_anonymous(std::uint64_t block) {
    const std::size_t word = arch_.elf_64bit ? 8 : 4;
    std::array<std::uint8_t, 48> bytes{};
    if (uc_mem_read(engine_, block, bytes.data(), 6 * word) != UC_ERR_OK) return;
    auto load = [&](std::size_t i) {
      std::uint64_t value = 0;
      for (std::size_t b = 0; b < word; ++b)
        value |= static_cast<std::uint64_t>(bytes[i * word + b]) << (8 * (arch_.little_endian ? b : word - 1 - b));
      return value;
    };
    auto store = [&](std::size_t i, std::uint64_t value) {
      for (std::size_t b = 0; b < word; ++b)
        bytes[i * word + b] = static_cast<std::uint8_t>(value >> (8 * (arch_.little_endian ? b : word - 1 - b)));
    };
    if (arch::mmap_flags_to_host(arch_, load(3)) & MAP_ANONYMOUS) return;
    saved_block_.assign(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(6 * word));
    saved_block_address_ = block;
    store(3, load(3) | guest_map_anonymous());
    store(4, word == 8 ? ~0ull : 0xffffffffull);
    store(5, 0);
    (void)uc_mem_write(engine_, block, bytes.data(), 6 * word);
  }

  // The syscall's effects, but for a signal's delivery at its return (the
  // kernel delivers it again: its frame and the handler's registers).
  void apply_effects(const SyscallRecord& record, std::span<const PlannedSignal> delivered) {
    for (const auto& [address, bytes] : record.memory_writes) {
      const std::uint64_t written_at = address;  // (clang 14 cannot capture a structured binding)
      if (std::any_of(delivered.begin(), delivered.end(), [&](const auto& s) { return s.frame == written_at; })) continue;
      // (The first delivery also maps and writes the [sigreturn] page: the
      // kernel does that again, so a write where nothing is mapped yet waits for it.)
      if (uc_mem_write(engine_, address, bytes.data(), bytes.size()) != UC_ERR_OK && delivered.empty()) {
        diverge(record.event, record.pc, "the syscall's memory effect",
                fmt::format("{} bytes written at {:#x}", bytes.size(), address), "has no memory there");
        return;
      }
    }
    if (!delivered.empty()) return;  // the registers are the handler's: the kernel sets them
    for (const auto& value : record.register_changes) {
      if (value.index >= arch_.registers.size()) continue;
      std::array<std::uint8_t, 64> bytes{};
      std::memcpy(bytes.data(), value.bytes.data(), value.size);
      (void)uc_reg_write(engine_, arch_.registers[value.index].uc_id, bytes.data());
    }
  }
  void diverge(std::uint64_t event, std::uint64_t pc, std::string what, std::string trace_says, std::string did) {
    divergence_ = Divergence{event, pc, std::move(what), std::move(trace_says), std::move(did)};
    uc_emu_stop(engine_);
  }

  const std::vector<SyscallRecord>& syscalls_;
  const arch::ArchInfo& arch_;
  uc_engine* engine_;
  std::uint64_t trace_pid_, own_pid_;
  const SignalPlan& signals_;
  const ThreadSchedule& schedule_;
  linux_layer::LinuxProcess& process_;
  std::size_t next_ = 0;
  std::size_t next_switch_ = 0;
  std::uint64_t quanta_ended_ = 0;  // since the last switch
  const SyscallRecord* pending_ = nullptr;
  std::vector<std::uint8_t> saved_block_;  // make_old_mmap_anonymous's original block
  std::uint64_t saved_block_address_ = 0;
};

// The host's clocks an instruction reads are inputs that are no syscall
// (ld.so reads x86's time stamp counter, Go's runtime riscv64's time CSR;
// ArchInfo::reads_host_clock says which): where the trace recorded what such
// an instruction returned, the re-run gets the same values. Small hooks per
// site: a code hook on the instruction arms; a code hook on the next
// instruction (the instruction has run), and a block hook for a next
// instruction that starts a block, write the trace's values, before the
// recorder's own hooks there (they are added after these).
class TimeStampCounter {
 public:
  struct Site {
    std::uint64_t pc = 0, next = 0;
    std::deque<std::vector<events::RegisterValue>> values;  // per execution, in order
    bool armed = false;
    TimeStampCounter* owner = nullptr;
    uc_hook arm_hook = 0, apply_hook = 0, apply_block_hook = 0;
  };
  // Reads `path` for the instructions that read a host clock and the registers they set.
  Status collect(const std::string& path, const arch::ArchInfo& arch, bool progress) {
    auto reader = TraceReader::open(path);
    if (!reader) return reader.error();
    if (progress) (*reader)->show_progress("replay: clock values");
    Site* last = nullptr;
    for (;;) {
      auto more = (*reader)->next([&](const events::Event& event) {
        if (event.kind == EventKind::kInstruction) {
          const auto& i = std::get<events::InstructionEvent>(event.payload);
          last = nullptr;
          if (!arch.reads_host_clock || !arch.reads_host_clock(i.bytes)) return;
          auto& site = sites_[i.address.value];
          if (!site) site = std::make_unique<Site>();
          site->pc = i.address.value, site->next = i.address.value + i.size, site->owner = this;
          site->values.emplace_back();
          last = site.get();
        } else if (event.kind == EventKind::kRegisters && last) {
          const auto& r = std::get<events::RegistersEvent>(event.payload);
          last->values.back().insert(last->values.back().end(), r.changes.begin(), r.changes.end());
        }
      });
      if (!more) return more.error();
      if (!*more) return ok_status();
    }
  }
  // Adds the hooks (before the recorder's). Returns the sites hooked.
  std::size_t install(uc_engine* engine, const arch::ArchInfo& arch) {
    engine_ = engine, arch_ = &arch;
    for (auto& [pc, site] : sites_) {
      uc_hook_add(engine, &site->arm_hook, UC_HOOK_CODE, reinterpret_cast<void*>(&TimeStampCounter::on_arm),
                  site.get(), site->pc, site->pc);
      uc_hook_add(engine, &site->apply_hook, UC_HOOK_CODE, reinterpret_cast<void*>(&TimeStampCounter::on_apply),
                  site.get(), site->next, site->next);
      // Where the next instruction starts a block (riscv64's rdtime ends one:
      // the CPU layer runs it), the recorder reads the registers in its block
      // hook, before any code hook: this block hook, added first, comes before it.
      uc_hook_add(engine, &site->apply_block_hook, UC_HOOK_BLOCK,
                  reinterpret_cast<void*>(&TimeStampCounter::on_apply_block), site.get(), site->next, site->next);
    }
    return sites_.size();
  }
  void remove() {
    for (auto& [pc, site] : sites_) {
      if (site->arm_hook) uc_hook_del(engine_, site->arm_hook);
      if (site->apply_hook) uc_hook_del(engine_, site->apply_hook);
      if (site->apply_block_hook) uc_hook_del(engine_, site->apply_block_hook);
    }
  }

 private:
  static void on_arm(uc_engine*, std::uint64_t, std::uint32_t, void* user) noexcept {
    static_cast<Site*>(user)->armed = true;
  }
  // (Unicorn 2.0.1 calls a block hook bounded to one address for every block
  // holding it: only the block that starts there applies.)
  static void on_apply_block(uc_engine* engine, std::uint64_t address, std::uint32_t size, void* user) noexcept {
    if (address == static_cast<Site*>(user)->next) on_apply(engine, address, size, user);
  }
  static void on_apply(uc_engine* engine, std::uint64_t, std::uint32_t, void* user) noexcept {
    auto* site = static_cast<Site*>(user);
    if (!site->armed) return;  // reached by another path
    site->armed = false;
    if (site->values.empty()) return;
    for (const auto& value : site->values.front()) {
      if (value.index >= site->owner->arch_->registers.size()) continue;
      const int id = site->owner->arch_->registers[value.index].uc_id;
      if (id == site->owner->arch_->pc_reg) continue;
      std::array<std::uint8_t, 64> bytes{};
      std::memcpy(bytes.data(), value.bytes.data(), value.size);
      (void)uc_reg_write(engine, id, bytes.data());
    }
    site->values.pop_front();
  }
  std::map<std::uint64_t, std::unique_ptr<Site>> sites_;
  uc_engine* engine_ = nullptr;
  const arch::ArchInfo* arch_ = nullptr;
};

// The level whose events the trace holds.
core::TraceLevel infer_level(const TraceIndex& index) {
  const bool memory = index.saw(EventKind::kMemoryRead) || index.saw(EventKind::kMemoryWrite);
  if (index.saw(EventKind::kRegisters)) return memory ? core::TraceLevel::kFull : core::TraceLevel::kRegisters;
  if (memory) return core::TraceLevel::kMemory;
  if (index.saw(EventKind::kInstruction)) return core::TraceLevel::kInstructions;
  return core::TraceLevel::kBlocks;
}

// Writes `bytes` at `address` page by page, skipping pages the engine has not mapped.
void write_mapped(uc_engine* engine, std::uint64_t address, std::span<const std::uint8_t> bytes) {
  std::size_t done = 0;
  while (done < bytes.size()) {
    const std::uint64_t at = address + done;
    const std::size_t n = std::min<std::uint64_t>(bytes.size() - done, 4096 - at % 4096);
    (void)uc_mem_write(engine, at, bytes.data() + done, n);
    done += n;
  }
}

// The recorded pid (kill and tgkill name it): what getpid returned, else
// set_tid_address (the main thread's first call: its tid, the pid), else
// gettid, else `fallback` (the trace's header).
std::uint64_t recorded_pid(const std::vector<SyscallRecord>& syscalls, const arch::ArchInfo& arch,
                           std::uint64_t fallback) {
  for (const SyscallId wanted : {SyscallId::getpid, SyscallId::set_tid_address, SyscallId::gettid})
    for (const auto& record : syscalls)
      if (arch.syscall_id(record.number) == wanted && record.result > 0) return static_cast<std::uint64_t>(record.result);
  return fallback;
}

}  // namespace

// The trace's first block or instruction: its event index and address
// (nullopt when the trace runs no code).
struct FirstCode {
  std::uint64_t event = 0;
  std::uint64_t address = 0;
};
Expected<std::optional<FirstCode>> first_code(const std::string& path) {
  auto reader = TraceReader::open(path);
  if (!reader) return reader.error();
  std::optional<FirstCode> found;
  while (!found) {
    // One call may give several events (a UCIR frame's block and its
    // instructions): the first of them counts, at its own index.
    auto more = (*reader)->next([&](const events::Event& event) {
      if (found) return;
      const std::uint64_t index = (*reader)->index() - 1;
      if (const auto* block = std::get_if<events::BlockEvent>(&event.payload))
        found = FirstCode{index, block->address.value};
      if (const auto* instruction = std::get_if<events::InstructionEvent>(&event.payload))
        found = FirstCode{index, instruction->address.value};
    });
    if (!more) return more.error();
    if (!*more) break;
  }
  return found;
}

// Pass 1 over a trace: its reader (at its end), the index of its syscalls
// and effects, and the program it names, read as that program's architecture.
struct IndexedTrace {
  std::unique_ptr<TraceReader> reader;
  std::unique_ptr<TraceIndex> index;
  std::string program;
  const arch::ArchInfo* program_arch = nullptr;
};

Expected<IndexedTrace> index_trace(const std::string& trace_path, const ReplayOptions& options) {
  IndexedTrace trace;
  auto first = TraceReader::open(trace_path);
  if (!first) return first.error();
  trace.reader = std::move(*first);
  const events::TraceInfo& info = trace.reader->info();
  trace.program = options.program.empty() ? info.program : options.program;
  // UCIR names no program, but its first keyframe names each mapping's file: the lowest is the program's.
  for (const auto& region : info.initial_memory)
    if (trace.program.empty() && !region.file.empty()) trace.program = region.file;
  if (trace.program.empty())
    return make_error(ErrorCode::kInvalidArgument, "the trace does not name its program: give it (-- PROGRAM)",
                      trace_path);
  // Read the trace as the program's architecture where its format cannot tell
  // (BAP frames' mips and mipsel), before any event (memory values' byte order).
  auto program_arch = linux_layer::LinuxProcess::program_arch(trace.program);
  if (!program_arch) return program_arch.error();
  trace.program_arch = *program_arch;
  if (!trace.reader->resolve_arch(*trace.program_arch))
    return make_error(ErrorCode::kInvalidArgument,
                      fmt::format("the trace is of {}, the program of {}", trace.reader->arch().name,
                                  trace.program_arch->name),
                      trace_path);
  if (options.progress) trace.reader->show_progress("replay: indexing");
  auto index = TraceIndex::build(*trace.reader);
  if (!index) return index.error();
  trace.index = std::move(*index);
  if (auto complete = trace.reader->check_complete(); !complete) return complete.error();
  if (trace.index->saw(EventKind::kGap))
    return make_error(ErrorCode::kUnsupported, "the trace lost events (gap markers): it cannot be replayed", trace_path);
  return trace;
}

// The report's start: the trace's size and level, and what a replay of it
// cannot compare; refuses a trace whose re-run could not follow it.
Expected<ReplayReport> start_report(const std::string& trace_path, const IndexedTrace& trace, core::TraceLevel level) {
  const TraceIndex& idx = *trace.index;
  const Capabilities& caps = trace.reader->capabilities();
  ReplayReport report;
  report.trace_events = idx.event_count();
  report.level = std::string(core::trace_level_name(level));
  // Register values with neither the memory they came from nor what loads
  // read (BAP frames at the regs level): the re-run's memory differs from the
  // first load (the auxiliary vector's random bytes, the stack canary's
  // source), and so would the registers loaded from it.
  if (level == core::TraceLevel::kRegisters && trace.reader->info().initial_memory.empty())
    return make_error(ErrorCode::kUnsupported,
                      "the trace has register values but neither the initial memory nor what its reads got (the "
                      "random bytes a program loads would differ in a re-run): record it at --level full, or in UCIR",
                      trace_path);
  for (const auto& line : caps.cannot_carry) report.not_compared.push_back(line);
  if (level == core::TraceLevel::kBlocks)
    report.not_compared.push_back("syscall pcs (a blocks-level trace gives the block's address)");
  if (idx.saw(EventKind::kInstruction) && caps.carries(EventKind::kBlock))
    report.not_compared.push_back("blocks (the instructions are compared instead)");
  return report;
}

// The re-run's process: the trace's program, arguments and environment, its
// thread ids from the recorded pid, bounded to twice the trace's length.
Expected<std::unique_ptr<linux_layer::LinuxProcess>> rerun_process(const IndexedTrace& trace,
                                                                   const ReplayOptions& options,
                                                                   std::uint64_t trace_pid) {
  const events::TraceInfo& info = trace.reader->info();
  linux_layer::ProcessConfig config;
  config.program = trace.program;
  config.argv = !options.argv.empty() ? options.argv : !info.argv.empty() ? info.argv : std::vector{config.program};
  config.envp = trace.reader->environment();
  config.rootfs = options.rootfs;
  config.diagnostics = nullptr;
  // A re-run that goes on past the trace's length stops there. Not for a
  // trace of blocks alone, whose block sizes are compared: Unicorn's count
  // of instructions instruments each one, which ends a very long block
  // sooner (the translator's buffer fills: a mips block of 343 instructions
  // became 237); there the comparison stops a re-run that goes past the
  // trace's end.
  if (trace.index->saw(EventKind::kInstruction)) config.max_instructions = 2 * trace.index->instructions() + 1'000'000;
  // The re-run's thread ids start from it, as the recording's did (clone's results, tkill's targets).
  if (trace_pid) config.main_thread_id = static_cast<std::uint32_t>(trace_pid);
  return linux_layer::LinuxProcess::create(config);
}

// Puts the trace's starting state in the re-run: its memory (the first
// keyframe's, or what its first reads got) and its registers; a trace that
// opens inside a syscall (a forked child's) starts from its parent's memory
// layout at the fork, not from a fresh load's.
Status restore_starting_state(linux_layer::LinuxProcess& process, const IndexedTrace& trace, bool opens_in_syscall) {
  const events::TraceInfo& info = trace.reader->info();
  uc_engine* engine = process.engine();
  const arch::ArchInfo& arch = process.arch();
  if (opens_in_syscall)
    if (auto adopted = process.adopt_memory_layout(info.initial_memory); !adopted) return adopted.error();
  for (const auto& region : info.initial_memory)
    if (region.bytes.size() == region.size) write_mapped(engine, region.start.value, region.bytes);
  if (info.initial_memory.empty()) {
    auto reads = trace.index->first_reads();
    if (!reads) return reads.error();
    if (opens_in_syscall) {
      // Pages a fresh load lacks (a forked child's heap): mapped read-write for them.
      std::vector<events::InitialRegion> read_pages;
      for (const auto& read : *reads) {
        events::InitialRegion region;
        region.start = events::GuestAddress{read.address};
        region.size = read.bytes.size();
        region.prot = PROT_READ | PROT_WRITE;
        read_pages.push_back(std::move(region));
      }
      if (auto adopted = process.adopt_memory_layout(read_pages); !adopted) return adopted.error();
    }
    for (const auto& read : *reads) write_mapped(engine, read.address, read.bytes);
  }
  for (const auto& value : info.initial_registers) {
    if (value.index >= arch.registers.size() || arch.registers[value.index].uc_id == arch.pc_reg) continue;
    std::array<std::uint8_t, 64> now{}, wanted{};
    std::memcpy(wanted.data(), value.bytes.data(), value.size);
    if (uc_reg_read(engine, arch.registers[value.index].uc_id, now.data()) == UC_ERR_OK &&
        std::memcmp(now.data(), wanted.data(), value.size) != 0)
      (void)uc_reg_write(engine, arch.registers[value.index].uc_id, wanted.data());
  }
  return ok_status();
}

// The report's end, from what the comparator and the syscall source saw and
// how the re-run ended: the first divergence, what was left uncompared.
void conclude_report(ReplayReport& report, const Comparator& comparator, const TraceSyscalls& source,
                     const linux_layer::RunOutcome& outcome, const TraceIndex& idx) {
  report.steps_compared = comparator.steps_compared_;
  if (comparator.killed_outside_syscall_)
    report.not_compared.push_back(
        "what the re-run did after the trace's last step (its process was killed there by a signal from another "
        "process while it ran without syscalls: the re-run was stopped there)");
  if (comparator.recording_interrupted_)
    report.not_compared.push_back(
        "what the re-run did after the trace's last step (the recording was interrupted there by SIGINT or "
        "SIGTERM: the re-run was stopped there)");
  const bool stopped_at_trace_end = comparator.killed_outside_syscall_ || comparator.recording_interrupted_;
  report.syscalls_answered = source.answered_;
  report.syscalls_run = source.run_;
  // The earliest of the two (the source sees syscalls before the comparator's events catch up).
  report.divergence = comparator.divergence_;
  // (A syscall past the trace's last is no divergence where the trace's
  // process was killed from outside before it: the comparator saw that.)
  const bool source_went_past_kill = source.ran_out_ && stopped_at_trace_end;
  if (source.divergence_ && !source_went_past_kill &&
      (!report.divergence || source.divergence_->event <= report.divergence->event))
    report.divergence = source.divergence_;
  if (source.image_replaced_)
    report.not_compared.push_back("the image its execve started (its own trace, named BASE.PID.N)");
  if (!report.divergence && outcome.kind == linux_layer::RunOutcome::Kind::kInstructionLimit &&
      !stopped_at_trace_end &&  // (the drain that saw it may have lagged the loop's run)
      !source.image_replaced_)  // (stopped at the execve: a stop reads as the limit)
    report.divergence = Divergence{idx.event_count(), outcome.pc, "the run's length", "it ends",
                                   "ran twice as many instructions without ending"};
}

Expected<ReplayReport> replay_trace(const std::string& trace_path, const ReplayOptions& options) {
  // Pass 1: the syscalls and their effects, what the trace holds, the first reads.
  auto indexed = index_trace(trace_path, options);
  if (!indexed) return indexed.error();
  const IndexedTrace& trace = *indexed;
  const TraceIndex& idx = *trace.index;
  const events::TraceInfo& info = trace.reader->info();
  const core::TraceLevel level = infer_level(idx);
  auto started = start_report(trace_path, trace, level);
  if (!started) return started.error();
  ReplayReport report = std::move(*started);
  const std::uint64_t trace_pid = recorded_pid(idx.syscalls(), *trace.program_arch, info.process_id);
  auto process = rerun_process(trace, options, trace_pid);
  if (!process) return process.error();
  uc_engine* engine = (*process)->engine();
  const arch::ArchInfo& arch = (*process)->arch();  // program_arch's, the trace's since resolve_arch

  // A trace that opens inside a syscall (a forked child's: its fork returns
  // 0) starts from its parent's memory at the fork, not from a fresh load.
  auto code = first_code(trace_path);
  if (!code) return code.error();
  // (A program runs code before its first syscall: a trace whose syscall
  // comes first, or that has one and no code at all, opened inside it.)
  const bool opens_in_syscall =
      !idx.syscalls().empty() && (!*code || idx.syscalls().front().event < (*code)->event);
  if (opens_in_syscall && !*code) {
    // A child killed before it ran an instruction of its own: its trace is
    // its fork's return alone, and a re-run has nothing to execute.
    report.not_compared.push_back("the run (the trace ends inside the syscall it opens with: no code ran)");
    return report;
  }
  // Its registers and memory at that point are its parent's, which a fresh
  // load does not have (the thread pointer, the heap that holds its thread's
  // data): without them (BAP frames below the mem level) the re-run goes astray.
  // (A trace that says its level records reads, and has none, read nothing:
  // a child killed before its first load.)
  const bool reads_recorded = idx.saw(EventKind::kMemoryRead) ||
                              (!info.level.empty() && core::level_has_memory(core::parse_trace_level(info.level)
                                                                                 .value_or(core::TraceLevel::kBlocks)));
  if (opens_in_syscall && (info.initial_registers.empty() || (info.initial_memory.empty() && !reads_recorded)))
    return make_error(ErrorCode::kUnsupported,
                      "the trace opens inside a syscall (a forked child's) and holds neither its memory there nor "
                      "the values its reads got: record it in UCIR, or at --level mem or full",
                      trace_path);
  if (auto restored = restore_starting_state(**process, trace, opens_in_syscall); !restored) return restored.error();

  // Where the trace's signals were delivered (a pass over the trace when it
  // has any, or when its last syscall is not an exit: a death by a signal's
  // default action inside that syscall, which a format may not name).
  SignalPlan signals;
  const auto ends_image = [](const SyscallRecord& last) {
    return last.name == "exit" || last.name == "exit_group" ||
           replaces_image(last.name, last.result);
  };
  const bool ends_in_syscall = !idx.syscalls().empty() && !ends_image(idx.syscalls().back());
  if (idx.saw(EventKind::kSignal) || ends_in_syscall)
    if (auto status = signals.collect(trace_path, trace_pid); !status) return status.error();
  // The schedule of a trace with threads (a pass over the trace).
  ThreadSchedule schedule;
  if (idx.saw(EventKind::kThread))
    if (auto status = schedule.collect(trace_path); !status) return status.error();
  TraceSyscalls source(idx.syscalls(), arch, engine, trace_pid, (*process)->guest_pid(), signals, schedule,
                       **process);

  // The time stamp counter's values (a pass over the trace; hooks before the recorder's).
  TimeStampCounter tsc;
  if (idx.saw(EventKind::kRegisters)) {
    if (auto status = tsc.collect(trace_path, arch, options.progress); !status) return status.error();
  } else {
    report.not_compared.push_back("clock values (rdtsc, rdtime: the trace has no registers: a program that reads them may diverge)");
  }
  tsc.install(engine, arch);

  // Pass 2: the trace again, step by step against the re-run.
  auto second = TraceReader::open(trace_path);
  if (!second) return second.error();
  (void)(*second)->resolve_arch(arch);  // as the first (it held)
  if (options.progress) (*second)->show_progress("replay: comparing");
  Comparator comparator(**second, arch, engine,
                        trace.reader->capabilities().syscall_pc && level != core::TraceLevel::kBlocks);
  comparator.compare_only(!idx.saw(EventKind::kInstruction), idx.saw(EventKind::kMemoryRead), idx.saw(EventKind::kMemoryWrite),
                          idx.saw(EventKind::kRegisters));
  // A trace that opens inside a syscall: that syscall's effects are the
  // starting state, and the re-run starts where it returned to, the trace's
  // first code.
  if (const SyscallRecord* opening = opens_in_syscall ? source.take_opening_syscall() : nullptr) {
    source.apply_opening_effects(*opening);
    (*process)->start_at((*code)->address);
    comparator.skip_trace_syscalls_before((*code)->event);
  }
  core::RecorderOptions recorder_options;
  recorder_options.level = level;
  recorder_options.ring_bytes = 16u << 20;
  recorder_options.capture_initial_state = false;
  events::TraceInfo replay_info;
  replay_info.program = trace.program;
  auto recorder = core::Recorder::attach(engine, arch, recorder_options, {&comparator}, replay_info);
  if (!recorder) return recorder.error();
  session::ProcessRecording glue(**recorder);
  signals.install(engine, **process);  // after the recorder's hooks
  schedule.install(engine);
  (*process)->set_observer(&glue);  // its module loads first, as the recording's
  (*process)->set_syscall_source(&source);
  const linux_layer::RunOutcome outcome = (*process)->run();
  signals.remove();
  schedule.remove();
  (*process)->set_observer(nullptr);
  (*process)->set_syscall_source(nullptr);
  if (!source.divergence_) glue.finish_run(outcome);
  if (source.ran_out_) comparator.rerun_stopped_past_last_syscall();
  if (source.image_replaced_) comparator.rerun_ended_by_exec();
  (void)(*recorder)->finish();
  tsc.remove();
  if (!comparator.error_.empty()) return make_error(ErrorCode::kBadFormat, comparator.error_);

  conclude_report(report, comparator, source, outcome, idx);
  return report;
}

Expected<ReplayReport> replay_engine_trace(const std::string& trace_path, const EngineReplay& replay) {
  if (!replay.engine || !replay.arch || !replay.run)
    return make_error(ErrorCode::kInvalidArgument, "replay_engine_trace needs an engine, its arch and a run function");
  // Pass 1: the kinds the trace holds (its level) and its length.
  auto first = TraceReader::open(trace_path);
  if (!first) return first.error();
  if (replay.progress) (*first)->show_progress("replay: reading");
  if (!(*first)->resolve_arch(*replay.arch))
    return make_error(ErrorCode::kInvalidArgument,
                      fmt::format("the trace is of {}, the engine of {}", (*first)->arch().name, replay.arch->name),
                      trace_path);
  bool seen[events::kEventKindCount] = {};
  for (;;) {
    auto more = (*first)->next([&](const events::Event& event) {
      if (static_cast<std::size_t>(event.kind) < events::kEventKindCount) seen[static_cast<std::size_t>(event.kind)] = true;
    });
    if (!more) return more.error();
    if (!*more) break;
  }
  if (auto complete = (*first)->check_complete(); !complete) return complete.error();
  const auto saw = [&](EventKind kind) { return seen[static_cast<std::size_t>(kind)]; };
  const Capabilities& caps = (*first)->capabilities();
  ReplayReport report;
  report.trace_events = (*first)->index();
  const core::TraceLevel level = core::parse_trace_level(level_from_kinds(seen)).value_or(core::TraceLevel::kBlocks);
  report.level = std::string(core::trace_level_name(level));
  for (const auto& line : caps.cannot_carry) report.not_compared.push_back(line);
  if (saw(EventKind::kInstruction) && caps.carries(EventKind::kBlock))
    report.not_compared.push_back("blocks (the instructions are compared instead)");

  // Pass 2: the run, recorded at that level, then both compared from their ends.
  auto second = TraceReader::open(trace_path);
  if (!second) return second.error();
  (void)(*second)->resolve_arch(*replay.arch);  // as the first (it held)
  if (replay.progress) (*second)->show_progress("replay: comparing");
  Comparator comparator(**second, *replay.arch, replay.engine, caps.syscall_pc && level != core::TraceLevel::kBlocks);
  comparator.compare_only(!saw(EventKind::kInstruction), saw(EventKind::kMemoryRead), saw(EventKind::kMemoryWrite),
                          saw(EventKind::kRegisters));
  comparator.align_ends();
  core::RecorderOptions recorder_options;
  recorder_options.level = level;
  recorder_options.ring_bytes = 16u << 20;
  recorder_options.capture_initial_state = false;
  auto recorder = core::Recorder::attach(replay.engine, *replay.arch, recorder_options, {&comparator}, {});
  if (!recorder) return recorder.error();
  replay.run(**recorder);
  (void)(*recorder)->finish();
  if (!comparator.error_.empty()) return make_error(ErrorCode::kBadFormat, comparator.error_);
  report.steps_compared = comparator.steps_compared_;
  report.trace_steps_before_run = comparator.trace_steps_skipped_;
  report.run_steps_before_trace = comparator.replay_steps_skipped_;
  report.divergence = comparator.divergence_;
  return report;
}

}  // namespace tracecorn::replay
