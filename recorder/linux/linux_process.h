// Role: the public face of the Linux layer: create an emulated Linux process
// from an ELF program (loader, initial stack, CPU set-up, syscall layer) and run
// it to completion in Unicorn.
// Who calls it: the CLI (`tracecorn run`), the recorder and tests, all on one
// thread: a LinuxProcess and its engine are not thread safe.
// Ownership: a LinuxProcess owns its uc_engine; the recorder may add hooks to
// `engine()` and must remove them before the process is destroyed.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <unicorn/unicorn.h>

#include "arch/arch.h"
#include "recorder/support/expected.h"

namespace tracecorn::linux_layer {

struct ProcessConfig {
  std::string program;                   // host path of the ELF to run (or inside `rootfs`)
  std::vector<std::string> argv;         // argv[0] included; defaults to {program}
  std::vector<std::string> envp;         // "NAME=value" strings, passed as given
  std::string rootfs;                    // empty: the host file system
  std::uint64_t max_instructions = 0;    // 0: no limit
  std::chrono::microseconds timeout{0};  // 0: no limit
  std::FILE* syscall_log = nullptr;      // one line per syscall when set (not owned)
  std::FILE* diagnostics = stderr;       // tracecorn's own one-line messages (not owned)
};

// How a run ended.
struct RunOutcome {
  enum class Kind {
    kExited,            // exit/exit_group: `exit_code`
    kSignaled,          // killed by `signal` (a fault, abort, kill of itself)
    kInstructionLimit,  // --max-insns reached
    kTimeout,           // --timeout reached
    kEmulatorError,     // Unicorn failed in a way no guest action explains
  };
  Kind kind = Kind::kExited;
  int exit_code = 0;
  int signal = 0;                   // host signal number
  std::uint64_t pc = 0;             // where the guest stopped
  std::uint64_t fault_address = 0;  // for memory faults
  std::string description;          // one line, for the user

  // The status a shell would see for a native run: code, or 128 + signal;
  // 124 for a limit reached, 125 for an emulator error.
  int host_exit_status() const;
};

// Notified of every syscall after the kernel side has run (the recorder uses it).
class SyscallObserver {
 public:
  virtual ~SyscallObserver() = default;
  virtual void on_syscall(std::uint64_t number, arch::SyscallId id, const std::uint64_t (&args)[6],
                          std::int64_t result) noexcept = 0;
};

class Kernel;
struct LinuxProcessHooks;

class LinuxProcess {
 public:
  // Reads and validates the program, creates the engine, loads the program and
  // its interpreter and builds the initial stack. Errors name the file and offset
  // (bad ELF), the path (missing file) or the Unicorn call that failed.
  static Expected<std::unique_ptr<LinuxProcess>> create(ProcessConfig config);
  ~LinuxProcess();
  LinuxProcess(const LinuxProcess&) = delete;
  LinuxProcess& operator=(const LinuxProcess&) = delete;

  // Runs until the guest exits, dies, or a limit is reached. Call once.
  RunOutcome run();

  uc_engine* engine() const { return engine_; }
  const arch::ArchInfo& arch() const { return *arch_; }
  std::uint64_t syscall_count() const;
  void set_syscall_observer(SyscallObserver* observer);

 private:
  LinuxProcess() = default;
  uc_engine* engine_ = nullptr;
  const arch::ArchInfo* arch_ = nullptr;
  ProcessConfig config_;
  std::unique_ptr<arch::GuestCpu> cpu_;
  std::unique_ptr<Kernel> kernel_;
  std::unique_ptr<LinuxProcessHooks> hooks_;
  std::uint64_t entry_pc_ = 0;
};

}  // namespace tracecorn::linux_layer
