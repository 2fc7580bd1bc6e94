// Role: implementation of InterruptTrapCpu (see interrupt_trap_cpu.h).
#include "arch/interrupt_trap_cpu.h"

namespace tracecorn::arch {

InterruptTrapCpu::~InterruptTrapCpu() {
  if (hook_) uc_hook_del(engine_, hook_);
}

Status InterruptTrapCpu::install_syscall_trap(SyscallCallback callback, void* user) {
  callback_ = callback;
  user_ = user;
  if (uc_hook_add(engine_, &hook_, UC_HOOK_INTR, reinterpret_cast<void*>(&on_interrupt), this, 1, 0) != UC_ERR_OK)
    return make_error(ErrorCode::kEmulator, "cannot hook the syscall exception");
  return ok_status();
}

void InterruptTrapCpu::resume_at(std::uint64_t target) { uc_reg_write(engine_, pc_reg_, &target); }

Status InterruptTrapCpu::set_thread_pointer(std::uint64_t value) {
  if (uc_reg_write(engine_, thread_pointer_reg_, &value) != UC_ERR_OK)
    return make_error(ErrorCode::kEmulator, "cannot write the thread pointer register");
  return ok_status();
}

std::uint64_t InterruptTrapCpu::thread_pointer() const {
  std::uint64_t value = 0;
  uc_reg_read(engine_, thread_pointer_reg_, &value);
  return value;
}

int InterruptTrapCpu::signal_for_interrupt(std::uint32_t interrupt_number) const {
  return is_syscall_interrupt(interrupt_number) ? 0 : fault_signal(interrupt_number);
}

std::uint64_t InterruptTrapCpu::pc() const {
  std::uint64_t value = 0;
  uc_reg_read(engine_, pc_reg_, &value);
  return value;
}

void InterruptTrapCpu::on_interrupt(uc_engine*, std::uint32_t number, void* user) noexcept {
  auto* self = static_cast<InterruptTrapCpu*>(user);
  if (self->is_syscall_interrupt(number)) self->callback_(self->user_);
}

}  // namespace tracecorn::arch
