// Role: implementation of SignalPlan (see signal_plan.h).
#include "recorder/replay/signal_plan.h"

#include "recorder/replay/process_tree.h"

#include <algorithm>
#include <csignal>
#include <optional>
#include <string_view>

#include "recorder/linux/linux_process.h"
#include "recorder/replay/trace_reader.h"

namespace tracecorn::replay {

using events::EventKind;

namespace {

constexpr int kSiUser = 0, kSiKernel = 0x80;  // si_code (asm-generic/siginfo.h)

}  // namespace

Status SignalPlan::collect(const std::string& path, std::uint64_t own_pid) {
  // Pass 1: the signals, each after the syscall it followed (nothing that ran in between), if any.
  std::uint64_t syscalls = 0, switches = 0;
  std::optional<std::uint64_t> last_syscall;
  bool last_was_exit = false, saw_exit = false;
  // In a trace with instruction events, a block event says only that a block
  // was entered: a process killed from outside at the start of the block
  // after a syscall (the recorder's block hook saw it, none of its
  // instructions ran) ends with syscall, block, exit; it died as that syscall
  // returned, as far as the re-run can tell (nothing ran in between).
  bool instructions_seen = false;
  std::optional<std::uint64_t> syscall_before_unrun_block;
  // A thread was just switched in (nothing ran since): a signal now is one
  // the re-run's kernel delivers by itself as it switches (a tgkill the
  // re-run made), or one from outside the re-run (another process's kill,
  // an itimer's SIGALRM), planned at that switch.
  bool just_switched = false;
  // The last syscall's memory writes: a format may give a frame written as a
  // syscall returned to that syscall (UCIR) rather than to the signal.
  std::vector<std::pair<std::uint64_t, std::vector<std::uint8_t>>> last_syscall_writes;
  auto status = read_every_event(path, [&](const events::Event& event, std::uint64_t index) {
    switch (event.kind) {
      case EventKind::kThread:
        if (std::get<events::ThreadEvent>(event.payload).change == events::ThreadChange::kSwitched) {
          last_syscall.reset();
          syscall_before_unrun_block.reset();
          just_switched = true;
          ++switches;
        }
        return;
      case EventKind::kSyscall: {
        just_switched = false;
        const auto& call = std::get<events::SyscallEvent>(event.payload);
        // (A successful execve ends the image as an exit ends the process.)
        last_was_exit = call.name == "exit" || call.name == "exit_group" || replaces_image(call.name, call.result);
        last_syscall = syscalls++;
        syscall_before_unrun_block.reset();
        last_syscall_writes.clear();
        for (const auto& write : call.memory_writes)
          last_syscall_writes.emplace_back(write.address.value,
                                           std::vector<std::uint8_t>(write.bytes.begin(), write.bytes.end()));
        return;
      }
      case EventKind::kExit: {
        saw_exit = true;
        if (!last_syscall && instructions_seen) last_syscall = syscall_before_unrun_block;
        // Killed by a signal's default action as a syscall returned (a last
        // alarm during pause): the same signal, raised there; SIGKILL where
        // the format does not say which (UCIR's exit has no status).
        const auto& exit = std::get<events::ExitEvent>(event.payload);
        if (last_syscall && (exit.by_signal || !last_was_exit)) {
          const int signal = exit.by_signal ? exit.signal : SIGKILL;
          by_syscall_[*last_syscall].push_back(
              PlannedSignal{index, signal, signal == SIGALRM ? kSiKernel : kSiUser, 0, 0, 0});
        }
        last_syscall.reset();
        return;
      }
      case EventKind::kBlock: case EventKind::kInstruction: case EventKind::kFault:
        instructions_seen = instructions_seen || event.kind == EventKind::kInstruction;
        syscall_before_unrun_block = event.kind == EventKind::kBlock ? last_syscall : std::nullopt;
        last_syscall.reset();
        just_switched = false;
        return;
      case EventKind::kSignal:
        syscall_before_unrun_block.reset();
        break;
      default: return;
    }
    const auto& s = std::get<events::SignalEvent>(event.payload);
    PlannedSignal planned{index, static_cast<int>(s.signal), s.code, s.sender_pid, s.interrupted_pc.value,
                          s.frame.value};
    planned.fault = s.fault;
    if (s.fault) return;  // the re-run faults there by itself
    for (const auto& write : s.frame_writes)
      if (write.address.value == s.frame.value)
        planned.frame_bytes = std::make_shared<const std::vector<std::uint8_t>>(write.bytes.begin(), write.bytes.end());
    if (just_switched) {
      const bool from_outside = own_pid != 0 && (s.sender_pid != own_pid || s.code == kSiKernel);
      if (from_outside) by_switch_[switches - 1].push_back(planned);
      return;
    }
    if (!planned.frame_bytes && last_syscall)
      for (const auto& [address, bytes] : last_syscall_writes)
        if (address == s.frame.value) planned.frame_bytes = std::make_shared<const std::vector<std::uint8_t>>(bytes);
    if (last_syscall) {
      planned.after_syscall = *last_syscall;
      by_syscall_[*last_syscall].push_back(planned);
      return;
    }
    auto& site = sites_[planned.interrupted_pc];
    if (!site) site = std::make_unique<Site>();
    site->pc = planned.interrupted_pc;
    site->signals.push_back(planned);
  });
  if (!status) return status;
  // A format without exit events (BAP frames) that ends after a syscall that
  // was not an exit: the process died as it returned.
  if (last_syscall && !last_was_exit && !saw_exit)
    by_syscall_[*last_syscall].push_back(PlannedSignal{~std::uint64_t{0}, SIGKILL, kSiUser, 0, 0, 0});
  return sites_.empty() ? ok_status() : count_executions(path);
}

// Pass 2: for each signal between instructions, how many times its
// interrupted instruction ran before it (instruction events there; blocks
// holding it in a trace without instruction events).
Status SignalPlan::count_executions(const std::string& path) {
  bool instructions = false;
  std::map<std::uint64_t, std::uint64_t> ran;  // pc -> executions so far
  std::map<std::uint64_t, std::pair<std::uint64_t, std::uint64_t>> pending;  // signal event -> (pc, executions)
  auto status = read_every_event(path, [&](const events::Event& event, std::uint64_t index) {
    if (event.kind == EventKind::kInstruction) {
      instructions = true;
      const auto at = std::get<events::InstructionEvent>(event.payload).address.value;
      if (sites_.count(at)) ++ran[at];
    } else if (event.kind == EventKind::kBlock && !instructions) {
      const auto& block = std::get<events::BlockEvent>(event.payload);
      for (auto it = sites_.lower_bound(block.address.value);
           it != sites_.end() && it->first < block.address.value + block.size; ++it)
        ++ran[it->first];
    } else if (event.kind == EventKind::kSignal) {
      const auto pc = std::get<events::SignalEvent>(event.payload).interrupted_pc.value;
      pending[index] = {pc, ran[pc]};
    }
  });
  if (!status) return status;
  for (auto& [pc, site] : sites_) {
    for (auto& planned : site->signals)
      if (const auto found = pending.find(planned.event); found != pending.end())
        planned.executions_before = found->second.second;
    std::stable_sort(site->signals.begin(), site->signals.end(),
                     [](const auto& a, const auto& b) { return a.executions_before < b.executions_before; });
  }
  return ok_status();
}

std::span<const PlannedSignal> SignalPlan::after_syscall(std::uint64_t index) const {
  const auto found = by_syscall_.find(index);
  if (found == by_syscall_.end()) return {};
  return found->second;
}

std::span<const PlannedSignal> SignalPlan::at_switch(std::uint64_t index) const {
  const auto found = by_switch_.find(index);
  if (found == by_switch_.end()) return {};
  return found->second;
}

void SignalPlan::install(uc_engine* engine, linux_layer::LinuxProcess& process) {
  engine_ = engine;
  for (auto& [pc, site] : sites_) {
    site->process = &process;
    uc_hook_add(engine, &site->hook, UC_HOOK_CODE, reinterpret_cast<void*>(&SignalPlan::on_code), site.get(), pc, pc);
  }
}

void SignalPlan::remove() {
  for (auto& [pc, site] : sites_)
    if (site->hook) uc_hook_del(engine_, site->hook);
}

// Before the instruction at the site's pc runs: at the execution the trace
// names, its signals are raised and delivered (the guest goes on in the
// handler, and runs this instruction once the handler returns: that arrival
// counts as the execution).
void SignalPlan::on_code(uc_engine*, std::uint64_t, std::uint32_t, void* user) noexcept {
  auto* site = static_cast<Site*>(user);
  if (site->next >= site->signals.size() || site->signals[site->next].executions_before != site->arrivals) {
    ++site->arrivals;
    return;
  }
  while (site->next < site->signals.size() && site->signals[site->next].executions_before == site->arrivals) {
    const PlannedSignal& planned = site->signals[site->next++];
    site->process->inject_signal(planned.signal, planned.code, planned.sender_pid, planned.frame_bytes, planned.frame);
  }
  if (!site->process->deliver_injected_signals(site->pc)) ++site->arrivals;
}

}  // namespace tracecorn::replay
