// Role: the session layer's glue between the Linux layer and the recorder, for
// a recording (`tracecorn record`, the tests) and a replay's re-run: forwards
// what the emulated kernel reports (syscalls, their effects, modules, signals,
// threads) to a Recorder. Not in the core, which may not use the Linux layer,
// nor in the CLI, which nothing below it may use (docs/design.md).
// Threads: every call comes on the emulation thread, from inside Unicorn's
// syscall or block hooks or between runs, but interrupt_next_block (any
// thread); nothing here throws.
#pragma once

#include <optional>
#include <string>

#include "recorder/core/recorder.h"
#include "recorder/linux/linux_process.h"
#include "recorder/session/trace_naming.h"

namespace tracecorn::session {

class ProcessRecording final : public linux_layer::ProcessObserver {
 public:
  // `naming` gives the trace files that fork and exec events name (none: a
  // replay's re-run, or a recording of one image, where they name no file).
  explicit ProcessRecording(core::Recorder& recorder, std::optional<TraceNaming> naming = std::nullopt)
      : recorder_(recorder), naming_(std::move(naming)) {}

  void on_syscall_enter(std::uint64_t pc, std::uint64_t number) noexcept override;
  void on_memory_written(std::uint64_t address, std::span<const std::uint8_t> bytes) noexcept override;
  void on_mapping_changed(const events::MappingEffect& change) noexcept override;
  void on_registers_changed() noexcept override;
  void on_syscall(std::uint64_t pc, std::uint64_t number, arch::SyscallId id, const std::uint64_t (&args)[6],
                  std::int64_t result) noexcept override;
  void on_module_loaded(std::uint64_t start, std::uint64_t end, std::uint64_t load_bias,
                        std::string_view path) noexcept override;
  void on_signal_delivered(const events::SignalEvent& signal) noexcept override;
  void on_thread_event(events::ThreadId thread, const events::ThreadEvent& change) noexcept override;
  // A fork's event follows the fork's syscall (on_syscall writes it); an
  // exec's is the image's last.
  void on_process_forked(std::uint64_t child, std::string_view via) noexcept override;
  void on_process_exec(std::uint64_t pid, std::uint64_t next_image, std::string_view program) noexcept override;
  void on_process_stopping() noexcept override { recorder_.flush_to_files(); }
  void on_block_not_run(std::uint64_t address) noexcept override { recorder_.block_not_run(address); }
  // Through the recorder's block hook (Recorder::interrupt_next_block).
  bool take_block_interrupts(std::function<void(std::uint64_t address)> at_block) noexcept override;
  void interrupt_next_block() noexcept override { recorder_.interrupt_next_block(); }

  // The trap pc of the syscall being recorded (the last one entered).
  std::uint64_t syscall_pc() const { return syscall_pc_; }
  // A recording started inside a syscall (a forked child's, inside fork):
  // the syscall at `pc` is entered now, so its return is recorded.
  void resume_syscall(std::uint64_t pc) noexcept { on_syscall_enter(pc, 0); }

  // After the run: the fault (if the guest died of one) and the exit.
  void finish_run(const linux_layer::RunOutcome& outcome) noexcept;

 private:
  // The file name of process `pid`'s image `image` ("" when not recorded).
  std::string trace_name(std::uint64_t pid, std::uint64_t image) const;

  core::Recorder& recorder_;
  std::optional<TraceNaming> naming_;
  struct Fork {
    std::uint64_t child = 0;
    std::string_view via;  // a syscall's name: static storage
  };
  std::optional<Fork> pending_fork_;  // made in the syscall now recorded
  bool in_syscall_ = false;
  std::uint64_t syscall_pc_ = 0;
};

}  // namespace tracecorn::session
