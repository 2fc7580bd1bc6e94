// Role: the GuestCpu part shared by the architectures whose syscall instruction
// reaches Unicorn 2.0.1's UC_HOOK_INTR with the PC already past it (aarch64 and
// arm `svc`, riscv64 `ecall`): the trap hook, resuming, the thread pointer
// register, and telling the syscall interrupt from faults. Each architecture's
// file derives from it and adds its CPU set-up, trap length and fault signals.
// Who calls it: arch/ only (aarch64.cpp, arm.cpp, riscv64.cpp); the object is
// used on the emulation thread, inside Unicorn's hooks. Not thread safe.
// Invariant: the hook is removed in the destructor, before the engine closes.
#pragma once

#include <cstdint>

#include "arch/arch.h"

namespace tracecorn::arch {

class InterruptTrapCpu : public GuestCpu {
 public:
  ~InterruptTrapCpu() override;
  InterruptTrapCpu(const InterruptTrapCpu&) = delete;
  InterruptTrapCpu& operator=(const InterruptTrapCpu&) = delete;

  // Hooks UC_HOOK_INTR; calls `callback(user)` for the syscall interrupt only.
  // Fails (kEmulator) when Unicorn refuses the hook.
  Status install_syscall_trap(SyscallCallback callback, void* user) override;
  void resume_at(std::uint64_t target) override;
  // These syscall paths change no register besides the result.
  void apply_kernel_exit_effects() override {}
  // The thread pointer register given to the constructor; fails (kEmulator)
  // when Unicorn refuses the write.
  Status set_thread_pointer(std::uint64_t value) override;
  std::uint64_t thread_pointer() const override;
  // 0 for the syscall interrupt, else fault_signal().
  int signal_for_interrupt(std::uint32_t interrupt_number) const override;

 protected:
  InterruptTrapCpu(uc_engine* engine, int pc_reg, int thread_pointer_reg)
      : engine_(engine), pc_reg_(pc_reg), thread_pointer_reg_(thread_pointer_reg) {}
  // Whether Unicorn's interrupt number `number` is this architecture's syscall trap.
  virtual bool is_syscall_interrupt(std::uint32_t number) const = 0;
  // The host signal Linux sends for CPU exception `number` (never 0).
  virtual int fault_signal(std::uint32_t number) const = 0;
  std::uint64_t pc() const;

  uc_engine* engine_;

 private:
  static void on_interrupt(uc_engine* engine, std::uint32_t number, void* user) noexcept;

  int pc_reg_;
  int thread_pointer_reg_;
  uc_hook hook_ = 0;
  SyscallCallback callback_ = nullptr;
  void* user_ = nullptr;
};

}  // namespace tracecorn::arch
