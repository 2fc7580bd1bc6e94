// Role: implementation of ThreadSchedule (see thread_schedule.h).
#include "recorder/replay/thread_schedule.h"

#include <optional>
#include <utility>

#include "recorder/linux/linux_process.h"
#include "recorder/replay/trace_reader.h"

namespace tracecorn::replay {

using events::EventKind;

namespace {

constexpr std::int64_t kToldUnfinished = -512;  // ERESTARTSYS: how a blocked syscall is told

std::optional<std::uint64_t> code_address(const events::Event& event) {
  if (const auto* block = std::get_if<events::BlockEvent>(&event.payload)) return block->address.value;
  if (const auto* instruction = std::get_if<events::InstructionEvent>(&event.payload)) return instruction->address.value;
  if (const auto* signal = std::get_if<events::SignalEvent>(&event.payload)) return signal->interrupted_pc.value;
  return std::nullopt;
}

}  // namespace

Status ThreadSchedule::collect(const std::string& path) {
  std::uint64_t syscalls = 0;
  // The last syscall while nothing ran after it (whether it blocked, exited
  // or yielded its thread); the thread just switched to, while it has done
  // nothing yet; the preemptions whose thread has not resumed yet, by thread.
  std::optional<std::uint64_t> last_syscall;
  std::int64_t last_result = 0;
  bool last_gave_up_cpu = false;
  std::optional<std::uint32_t> just_switched_to;
  std::map<std::uint32_t, std::size_t> awaiting_resume;
  bool created_any = false;
  bool saw_blocks = false;
  // Blocks since the scheduler's quantum last started (the first thread's
  // creation, then every switch).
  std::uint64_t blocks_in_quantum = 0;
  auto status = read_every_event(path, [&](const events::Event& event, std::uint64_t index) {
    if (const auto address = code_address(event)) {
      if (const auto found = awaiting_resume.find(event.thread.value); found != awaiting_resume.end()) {
        switches_[found->second].resume_pc = *address;
        awaiting_resume.erase(found);
      }
    }
    switch (event.kind) {
      case EventKind::kSyscall: {
        const auto& call = std::get<events::SyscallEvent>(event.payload);
        const std::uint64_t at = syscalls++;
        threads_.push_back(event.thread.value);
        if (just_switched_to && *just_switched_to == event.thread.value) resumed_.insert(at);
        just_switched_to.reset();
        last_syscall = at;
        last_result = call.result;
        last_gave_up_cpu = call.result == kToldUnfinished || call.name == "exit" || call.name == "sched_yield";
        return;
      }
      case EventKind::kBlock:
        saw_blocks = true;
        ++blocks_in_quantum;
        [[fallthrough]];
      case EventKind::kInstruction: case EventKind::kFault: case EventKind::kSignal:
        last_syscall.reset();
        just_switched_to.reset();
        return;
      case EventKind::kThread: break;
      default: return;
    }
    has_threads_ = true;
    const auto& change = std::get<events::ThreadEvent>(event.payload);
    known_.insert(event.thread.value);
    known_.insert(change.from.value);
    if (change.change == events::ThreadChange::kCreated && !created_any) blocks_in_quantum = 0, created_any = true;
    if (change.change != events::ThreadChange::kSwitched) return;
    PlannedSwitch planned{index, event.thread.value, change.from.value, syscalls};
    // (The nearest whole number of quanta: the block a quantum ran out at
    // may or may not be in the trace.)
    planned.quantum = (blocks_in_quantum + linux_layer::kSchedulerQuantumBlocks / 2) / linux_layer::kSchedulerQuantumBlocks;
    blocks_in_quantum = 0;
    const bool from_syscall = last_syscall && last_gave_up_cpu && thread_of(*last_syscall) == change.from.value;
    if (from_syscall && last_result == kToldUnfinished) blocked_.insert(*last_syscall);
    planned.preemption = !from_syscall;
    if (planned.preemption) awaiting_resume[change.from.value] = switches_.size();
    switches_.push_back(planned);
    last_syscall.reset();
    just_switched_to = event.thread.value;
  });
  if (!status) return status;
  count_blocks_ = saw_blocks;
  return count_blocks_ ? ok_status() : count_executions(path);
}

// Pass 2, for a trace without blocks: for each preemption, how many times
// the instruction its thread resumes at ran before it (the interrupted one is
// not recorded, and the re-run's code hook does not see it either).
Status ThreadSchedule::count_executions(const std::string& path) {
  for (const auto& planned : switches_)
    if (planned.preemption && planned.resume_pc) sites_.try_emplace(planned.resume_pc, std::make_unique<Site>());
  if (sites_.empty()) return ok_status();
  std::map<std::uint64_t, std::uint64_t> ran;
  std::size_t next_switch = 0;
  return read_every_event(path, [&](const events::Event& event, std::uint64_t index) {
    if (event.kind == EventKind::kInstruction) {
      const std::uint64_t at = std::get<events::InstructionEvent>(event.payload).address.value;
      if (sites_.count(at)) ++ran[at];
    } else if (event.kind == EventKind::kThread) {
      while (next_switch < switches_.size() && switches_[next_switch].event < index) ++next_switch;
      if (next_switch >= switches_.size() || switches_[next_switch].event != index) return;
      PlannedSwitch& planned = switches_[next_switch];
      if (planned.preemption && planned.resume_pc) planned.executions_before = ran[planned.resume_pc];
    }
  });
}

void ThreadSchedule::install(uc_engine* engine) {
  engine_ = engine;
  for (auto& [pc, site] : sites_)
    uc_hook_add(engine, &site->hook, UC_HOOK_CODE, reinterpret_cast<void*>(&ThreadSchedule::on_reached), site.get(),
                pc, pc);
}

void ThreadSchedule::remove() {
  if (!engine_) return;
  for (auto& [pc, site] : sites_)
    if (site->hook) uc_hook_del(engine_, std::exchange(site->hook, 0));
  engine_ = nullptr;
}

std::uint64_t ThreadSchedule::executions(std::uint64_t pc) const {
  const auto found = sites_.find(pc);
  return found == sites_.end() ? 0 : found->second->executions;
}

void ThreadSchedule::on_reached(uc_engine*, std::uint64_t, std::uint32_t, void* user) noexcept {
  ++static_cast<Site*>(user)->executions;
}

}  // namespace tracecorn::replay
