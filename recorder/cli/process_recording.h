// Role: glue between the Linux layer and the recorder, for `tracecorn record`:
// forwards what the emulated kernel reports (syscalls, their effects, modules)
// to a Recorder. Lives in the CLI because the recorder core may not use the
// Linux layer (docs/design.md).
// Threads: every call comes on the emulation thread, from inside Unicorn's
// syscall hook; nothing here throws.
#pragma once

#include "recorder/core/recorder.h"
#include "recorder/linux/linux_process.h"

namespace tracecorn::cli {

class ProcessRecording final : public linux_layer::ProcessObserver {
 public:
  explicit ProcessRecording(core::Recorder& recorder) : recorder_(recorder) {}

  void on_syscall_enter(std::uint64_t pc, std::uint64_t number) noexcept override;
  void on_memory_written(std::uint64_t address, std::span<const std::uint8_t> bytes) noexcept override;
  void on_mapping_changed(const events::MappingEffect& change) noexcept override;
  void on_registers_changed() noexcept override;
  void on_syscall(std::uint64_t pc, std::uint64_t number, arch::SyscallId id, const std::uint64_t (&args)[6],
                  std::int64_t result) noexcept override;
  void on_module_loaded(std::uint64_t start, std::uint64_t end, std::uint64_t load_bias,
                        std::string_view path) noexcept override;

  // After the run: the fault (if the guest died of one) and the exit.
  void finish_run(const linux_layer::RunOutcome& outcome) noexcept;

 private:
  core::Recorder& recorder_;
  bool in_syscall_ = false;
};

}  // namespace tracecorn::cli
