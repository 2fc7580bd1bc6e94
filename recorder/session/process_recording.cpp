// Role: implementation of ProcessRecording (see process_recording.h).
#include "recorder/session/process_recording.h"

namespace tracecorn::session {

void ProcessRecording::on_syscall_enter(std::uint64_t pc, std::uint64_t) noexcept {
  in_syscall_ = true;
  syscall_pc_ = pc;
  recorder_.syscall_enter(pc);
}

void ProcessRecording::on_memory_written(std::uint64_t address, std::span<const std::uint8_t> bytes) noexcept {
  if (in_syscall_) recorder_.syscall_memory_written(address, bytes);
}

void ProcessRecording::on_mapping_changed(const events::MappingEffect& change) noexcept {
  if (in_syscall_) recorder_.syscall_mapping_changed(change);
}

void ProcessRecording::on_syscall(std::uint64_t pc, std::uint64_t number, arch::SyscallId, const std::uint64_t (&args)[6],
                                  std::int64_t result) noexcept {
  in_syscall_ = false;
  recorder_.syscall_exit(pc, number, args, result);
  if (!pending_fork_) return;
  const Fork fork = *pending_fork_;
  pending_fork_.reset();
  const std::string trace = trace_name(fork.child, 0);
  recorder_.process_event(events::ProcessEvent{events::ProcessChange::kForked, fork.child, trace, fork.via});
}

void ProcessRecording::on_process_forked(std::uint64_t child, std::string_view via) noexcept {
  pending_fork_ = Fork{child, via};
}

void ProcessRecording::on_process_exec(std::uint64_t pid, std::uint64_t next_image, std::string_view program) noexcept {
  const std::string trace = trace_name(pid, next_image);
  recorder_.process_event(events::ProcessEvent{events::ProcessChange::kExecuted, pid, trace, program});
}

std::string ProcessRecording::trace_name(std::uint64_t pid, std::uint64_t image) const {
  if (!naming_) return "";
  return std::string(file_name_of(naming_->path_of(pid, image)));
}

void ProcessRecording::on_registers_changed() noexcept { recorder_.registers_changed(); }

void ProcessRecording::on_module_loaded(std::uint64_t start, std::uint64_t end, std::uint64_t load_bias,
                                        std::string_view path) noexcept {
  recorder_.module_loaded(start, end, load_bias, path);
}

void ProcessRecording::on_signal_delivered(const events::SignalEvent& signal) noexcept {
  recorder_.signal_delivered(signal);
}

void ProcessRecording::on_thread_event(events::ThreadId thread, const events::ThreadEvent& change) noexcept {
  recorder_.thread_event(thread, change);
}

void ProcessRecording::finish_run(const linux_layer::RunOutcome& outcome) noexcept {
  using Kind = linux_layer::RunOutcome::Kind;
  if (outcome.is_fault)
    recorder_.fault(outcome.pc, outcome.fault_address, static_cast<std::uint32_t>(outcome.signal), outcome.description);
  if (outcome.kind == Kind::kExited || outcome.kind == Kind::kSignaled)
    recorder_.exited(outcome.kind == Kind::kSignaled, outcome.exit_code, outcome.signal);
}

bool ProcessRecording::take_block_interrupts(std::function<void(std::uint64_t address)> at_block) noexcept {
  try {
    recorder_.set_block_interrupt_handler(std::move(at_block));
    return true;
  } catch (...) {  // (a move: it does not throw in practice; the kernel then stops the run instead)
    return false;
  }
}

}  // namespace tracecorn::session
