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
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <string>
#include <vector>

#include <unicorn/unicorn.h>

#include "arch/arch.h"
#include "recorder/events/event.h"
#include "recorder/support/expected.h"

namespace tracecorn::linux_layer {

// The default --max-memory: half of the host's physical memory (at least 256 MiB),
// so that a guest cannot make tracecorn exhaust the host. Returns bytes.
std::uint64_t default_max_memory();

// Whether host process `pid` is `root` or descends from it (its parents, as
// /proc says now). Any thread.
bool host_process_descends_from(std::uint64_t pid, std::uint64_t root);

// Told of the process's forks and execs, for what lives outside the Linux
// layer (the CLI's signal watcher and recording). Called on the emulation
// thread, inside the syscall hook; must not throw.
class ProcessLifecycle {
 public:
  virtual ~ProcessLifecycle() = default;
  // In the child of a fork, right after it, before the child's fork returns
  // 0: only the emulation thread exists in it (the host forked); what ran on
  // other host threads must be started again, once the handles of the
  // parent's threads are let go (a new thread may take over the descriptor
  // of one of them). `pid` is the child's.
  virtual void after_fork_in_child(std::uint64_t pid) noexcept = 0;
  // Right before the host fork, and in the parent right after it: the
  // caller's other threads wait where they hold no lock the child would
  // inherit held (the recorder's drain between two batches, the CLI's signal
  // watcher ended: a sanitizer's allocator, unlike glibc's malloc, is not
  // made safe across fork).
  virtual void before_fork() noexcept = 0;
  virtual void after_fork_in_parent() noexcept = 0;
  // The image is about to be replaced by `program` (an execve that passed its
  // checks): the trace of this image must be finished now. Nothing of the
  // caller runs after this but the host execve (on its failure, the process
  // ends with SIGKILL's status, as Linux's past the point of no return).
  virtual void before_exec(const std::string& program) noexcept = 0;
};

// Containment: `rootfs` confines paths (see guest_fs.h); `read_only` refuses every
// syscall that could change the host file system with EROFS (like a read-only
// mount: writes to existing FIFOs and character devices still pass); network
// syscalls reach the host only with `allow_net`; `max_memory` caps the bytes the
// guest has mapped (images, stack, brk, mmap), as RLIMIT_AS does (0: no cap).
struct ProcessConfig {
  std::string program;                   // host path of the ELF to run (or inside `rootfs`)
  std::vector<std::string> argv;         // argv[0] included; defaults to {program}
  std::vector<std::string> envp;         // "NAME=value" strings, passed as given
  std::string rootfs;                    // empty: the host file system
  std::uint64_t max_instructions = 0;    // 0: no limit
  std::chrono::microseconds timeout{0};  // 0: no limit
  bool read_only = false;                // refuse writes to the host file system (EROFS)
  bool allow_net = false;                // pass network syscalls to the host
  std::uint64_t max_memory = default_max_memory();  // bytes the guest may map; 0: no cap
  std::FILE* syscall_log = nullptr;      // one line per syscall when set (not owned)
  std::FILE* diagnostics = stderr;       // tracecorn's own one-line messages (not owned)
  // Processes. fork/vfork/clone without CLONE_VM fork tracecorn itself (the
  // child is a host process: guest pids are host pids). execve runs
  // `relaunch_command` (tracecorn's own binary and options, up to its "--")
  // with the exec state's descriptor (inherited_state.h) and the new program
  // appended; empty: execve fails with ENOSYS.
  std::vector<std::string> relaunch_command;
  int inherited_state_fd = -1;           // an exec'd image: the state the previous image left (read and closed by create)
  std::uint64_t max_processes = 256;     // live processes a guest tree may have (fork then fails with EAGAIN); 0: no cap
  ProcessLifecycle* lifecycle = nullptr;  // not owned
  // Replay: the main thread's id (a recorded pid), so that the ids clone
  // gives (that id + 1, + 2...) are the trace's. nullopt: the host pid.
  std::optional<std::uint32_t> main_thread_id;
};

// How a run ended.
struct RunOutcome {
  enum class Kind {
    kExited,            // exit/exit_group: `exit_code`
    kSignaled,          // killed by `signal` (a fault, abort, kill of itself)
    kInstructionLimit,  // --max-insns reached
    kTimeout,           // --timeout reached
    kEmulatorError,     // Unicorn failed in a way no guest action explains
    kStopped,           // stopped on request (a recorder's --stop-at / --stop-after)
  };
  Kind kind = Kind::kExited;
  int exit_code = 0;
  int signal = 0;                   // host signal number
  std::uint64_t pc = 0;             // where the guest stopped
  std::uint64_t fault_address = 0;  // for memory faults
  bool is_fault = false;            // killed by a CPU fault (not by a signal it raised)
  std::string description;          // one line, for the user

  // The status a shell would see for a native run: code, or 128 + signal;
  // 124 for a limit reached or a requested stop, 125 for an emulator error.
  int host_exit_status() const;
};

// Told what the process does, for recording (the recorder's adapter in the CLI
// implements it). Called on the emulation thread, inside Unicorn's syscall hook
// for the syscall-related calls: implementations must not throw.
class ProcessObserver {
 public:
  virtual ~ProcessObserver() = default;
  // Before the kernel side of a syscall runs.
  virtual void on_syscall_enter(std::uint64_t pc, std::uint64_t number) noexcept = 0;
  // The kernel wrote guest memory (read() data, a struct stat, a file mapping's contents...).
  virtual void on_memory_written(std::uint64_t address, std::span<const std::uint8_t> bytes) noexcept = 0;
  // The kernel mapped, unmapped or re-protected guest memory (a new mapping with
  // its name and backing file; the views are valid during the call only).
  virtual void on_mapping_changed(const events::MappingEffect& change) noexcept = 0;
  // After the kernel side ran; `result` is what the guest gets back.
  virtual void on_syscall(std::uint64_t pc, std::uint64_t number, arch::SyscallId id,
                          const std::uint64_t (&args)[6], std::int64_t result) noexcept = 0;
  // The kernel wrote registers besides a syscall's result: a signal handler
  // was entered, a sigreturn restored a frame, a syscall will restart. A
  // recorder that keeps its own copy of the registers reads them again.
  // Called inside the syscall hook, or between runs (a fault's handler).
  virtual void on_registers_changed() noexcept {}
  // A signal was delivered to a guest handler: the frame is written (its
  // bytes also came through on_memory_written) and the registers are set
  // for the handler. Inside the syscall hook, a block hook, or between runs.
  // `signal.frame_writes`/`register_changes` may be empty: the observer
  // reads the registers itself.
  virtual void on_signal_delivered(const events::SignalEvent& signal) noexcept { (void)signal; }
  // The scheduler created, ended or switched to guest thread `thread` (the
  // guest's tid). On a switch the registers are already the new thread's.
  virtual void on_thread_event(events::ThreadId thread, const events::ThreadEvent& change) noexcept {
    (void)thread;
    (void)change;
  }
  // The process made child `child` (fork, vfork, clone without CLONE_VM or
  // clone3: `via` names the syscall). In the parent, inside that syscall's
  // hook, once the host fork returned (for vfork, once the child exec'd or
  // ended); on_syscall for it comes next.
  virtual void on_process_forked(std::uint64_t child, std::string_view via) noexcept {
    (void)child;
    (void)via;
  }
  // A successful execve or execveat replaces the image (after on_syscall for
  // it, the image's last report): process `pid` goes on in its image number
  // `next_image` (1 after its first exec); `program` is the path the exec
  // named, as the guest named it (a `#!` script's, not its interpreter's).
  virtual void on_process_exec(std::uint64_t pid, std::uint64_t next_image, std::string_view program) noexcept {
    (void)pid;
    (void)next_image;
    (void)program;
  }
  // The kernel's block hook ended the run at the start of the block at
  // `address`, none of whose instructions ran (a signal from another process
  // ends the process, or a stop was asked for), though a block hook added
  // before the kernel's (a recorder's) has seen that block entered.
  virtual void on_block_not_run(std::uint64_t address) noexcept { (void)address; }
  // The process is about to stop (SIGSTOP and the other stop signals): a
  // recorder hands what it holds to its files, as a stopped process may be
  // killed by SIGKILL, which leaves it no chance to do so later.
  virtual void on_process_stopping() noexcept {}
  // An ELF image was mapped: the program and its interpreter at start, then every
  // ELF file the guest maps from offset 0 (ld.so loading a library).
  virtual void on_module_loaded(std::uint64_t start, std::uint64_t end, std::uint64_t load_bias,
                                std::string_view path) noexcept = 0;
  // Block interrupts, for a signal from another process that reaches a guest
  // running without syscalls: an observer that has a block hook of its own
  // (a recorder) may take `at_block` (set_observer gives it; true when
  // taken) and call it at the start of the next block once
  // interrupt_next_block() was called (any thread), after its own record of
  // that block. Otherwise the kernel stops the run to put in a hook of its own.
  virtual bool take_block_interrupts(std::function<void(std::uint64_t address)> at_block) noexcept {
    (void)at_block;
    return false;
  }
  virtual void interrupt_next_block() noexcept {}
};

// Replay (recorder/replay/replayer.h): where syscalls are answered from when
// they must not reach the host (a recorded trace), instead of the emulated
// kernel's handlers. Called on the emulation thread inside the trap hook:
// implementations must not throw. A source that answers a syscall has applied
// its effects on guest memory and registers itself; the kernel then writes the
// result into the return register as usual, and the observer, if any, sees the
// syscall (enter and exit, not the source's effects).
//
// The scheduler's quantum: a thread runs about this many blocks (block hook
// calls; give or take 64, from a fixed sequence) before the next ready thread
// gets its turn; counted from the first thread's creation, and again from
// every switch.
inline constexpr std::uint64_t kSchedulerQuantumBlocks = 20000;
//
// A source that follows a recorded schedule (a multi-threaded trace) also
// makes the scheduler's choices: which thread runs after a syscall that
// blocked, exited or yielded, and at the end of a quantum; and what a blocked
// syscall returns when its thread goes on.
class SyscallSource {
 public:
  virtual ~SyscallSource() = default;
  struct Decision {
    bool run = false;         // true: the emulated kernel runs it, with `args`
    std::int64_t result = 0;  // when !run: what the guest gets back
    std::uint64_t args[6] = {};
    // When !run: the thread blocks here (the trace told the syscall
    // unfinished and switched threads); it makes the syscall again when it
    // next runs. `result` is then ignored.
    bool block = false;
  };
  // Before the syscall: answer it, or let it run (possibly with other arguments).
  virtual Decision on_syscall(std::uint64_t pc, std::uint64_t number, arch::SyscallId id,
                              const std::uint64_t (&args)[6]) noexcept = 0;
  // After a syscall that ran: what the guest is told it returned (a call that
  // blocked its thread: ERESTARTSYS, -512; a thread's exit: 0).
  virtual void after_run(std::uint64_t number, std::int64_t result) noexcept = 0;
  // Whether the scheduler asks next_thread and resumed_result (below)
  // instead of deciding by itself.
  virtual bool follows_schedule() const noexcept { return false; }
  // The thread to switch to here: after the syscall just made (`block` 0),
  // or at the block at `block`, where a quantum ran out. nullopt: the
  // schedule does not switch here (the current thread goes on, or, when it
  // cannot, the run ends).
  virtual std::optional<std::uint32_t> next_thread(std::uint64_t block) noexcept {
    (void)block;
    return std::nullopt;
  }
  // `thread`, blocked in syscall `number` for a result (a futex wait), is
  // switched back in: the result it gets there. nullopt: the kernel's own.
  virtual std::optional<std::int64_t> resumed_result(std::uint32_t thread, std::uint64_t number) noexcept {
    (void)thread;
    (void)number;
    return std::nullopt;
  }
};

class Kernel;
struct LinuxProcessHooks;
}  // namespace tracecorn::linux_layer
namespace tracecorn::engine {
class InstructionCounter;
}  // namespace tracecorn::engine
namespace tracecorn::linux_layer {

class LinuxProcess {
 public:
  // Reads and validates the program, creates the engine, loads the program and
  // its interpreter and builds the initial stack. Errors name the file and offset
  // (bad ELF), the path (missing file) or the Unicorn call that failed.
  static Expected<std::unique_ptr<LinuxProcess>> create(ProcessConfig config);
  // The architecture create() would run `program` as (its ELF header's machine,
  // class and byte order). Fails as create() does for a missing file, a bad ELF
  // or a machine tracecorn does not run (kUnsupported, naming those it runs).
  static Expected<const arch::ArchInfo*> program_arch(const std::string& program);
  ~LinuxProcess();
  LinuxProcess(const LinuxProcess&) = delete;
  LinuxProcess& operator=(const LinuxProcess&) = delete;

  // ---- Signal injection, for replay (signal_injection.cpp) ----
  // Makes host signal `signal` pending as sent with si_code `code` by
  // `sender_pid`: delivered at the next syscall's return, or by
  // deliver_injected_signals. Emulation thread (a syscall source, a hook).
  // `recorded_frame` (optional): the frame bytes the trace recorded at
  // `recorded_frame_address`, written instead of the rebuilt frame when that
  // lies at the same place with the same size (SignalOrigin::recorded_frame).
  void inject_signal(int signal, int code, std::uint64_t sender_pid,
                     std::shared_ptr<const std::vector<std::uint8_t>> recorded_frame = {},
                     std::uint64_t recorded_frame_address = 0) noexcept;
  // Forgets a pending `signal` (one the trace says a wait took).
  void take_pending_signal(int signal) noexcept;
  // From the caller's code hook at `pc` (that instruction has not run):
  // delivers the pending signals there; the guest goes on in the handler.
  // Returns whether a handler was entered.
  bool deliver_injected_signals(std::uint64_t pc) noexcept;
  // ---- end of signal injection ----

  // Replay of a trace whose initial state is not a fresh load (a forked
  // child's: its parent's heap, mappings and grown stack): maps every page of
  // `regions` not mapped yet, with the region's protection and name, and
  // moves the program break to the end of a "[heap]" region. Their contents
  // are the caller's to write. Fails naming the first region it cannot map.
  Status adopt_memory_layout(std::span<const events::InitialRegion> regions);
  // Makes run() start at `pc` instead of the program's entry (a replay of a
  // trace that began inside a syscall: a forked child's). Before run().
  void start_at(std::uint64_t pc) { entry_pc_ = resumable_pc(pc); }

  // Runs until the guest exits, dies, or a limit is reached. Call once.
  // Signals the guest handles (faults, timers) are delivered on the way.
  RunOutcome run();
  // Stops the run soon (uc_emu_stop, and any wait of the guest for a signal
  // returns): tracecorn's own SIGINT/SIGTERM. Callable from any thread.
  void request_stop();
  // From now on a signal from another process that ends the guest while it
  // runs without syscalls, and request_stop(), stop it at the start of its
  // next block, through a block hook, instead of wherever the engine is when
  // the signal comes (the instructions after the stop would run unhooked: a
  // recording's last register values would include their effects). For
  // recordings, before run().
  void stop_outside_kills_at_blocks();

  struct LoadedModule {
    std::uint64_t start, end, bias;
    std::string path;
  };
  // The program (first) and its interpreter, as loaded.
  const std::vector<LoadedModule>& initial_modules() const { return images_; }

  uc_engine* engine() const { return engine_; }
  const arch::ArchInfo& arch() const { return *arch_; }
  std::uint64_t syscall_count() const;
  // What is mapped now, by address: names, protections, backing files.
  std::vector<events::MappedRange> mapped_ranges() const;
  // The pid the guest sees (getpid(): the process it runs in).
  std::uint64_t guest_pid() const;
  // 0 for the image tracecorn was started with, n for the n-th exec'd image of this process.
  std::uint64_t image_serial() const;
  // The first guest process of the tree this process belongs to (its own pid for the first).
  std::uint64_t tree_root_pid() const;
  // A host signal sent to tracecorn (`sender_pid`, si_code `code`; SIGCHLD:
  // the child's si_status) goes to the guest: pending for the process,
  // delivered at its next syscall or wait. Any thread.
  void post_host_signal(int signal, int code, std::uint64_t sender_pid, std::uint64_t sender_uid,
                        int child_status) noexcept;
  // Attaches an observer (not owned; nullptr detaches). The images loaded so far
  // are reported to it at once.
  void set_observer(ProcessObserver* observer);
  // Answers syscalls from `source` instead of the handlers (not owned; nullptr:
  // the handlers again). For replay.
  void set_syscall_source(SyscallSource* source);

 private:
  LinuxProcess() = default;
  // How the run that uc_emu_start just ended (with `err`) ended.
  RunOutcome outcome_of(uc_err err, std::chrono::steady_clock::duration elapsed) const;
  // Where to run next when a signal's delivery continues the guest (a fault
  // or a timer's stop taken by a handler); nullopt when the run is over.
  std::optional<std::uint64_t> restart_after_signal(const RunOutcome& outcome, uc_err err);
  // `pc` as uc_emu_start must be given it to go on in the current
  // instruction set (arm Thumb: bit 0 set).
  std::uint64_t resumable_pc(std::uint64_t pc) const;
  // Adds the block hook the kernel asked for (timers, preemption) and, for the
  // CPU-time timers, the instruction counter; false when Unicorn refuses one.
  bool install_block_hooks();
  uc_engine* engine_ = nullptr;
  const arch::ArchInfo* arch_ = nullptr;
  ProcessConfig config_;
  std::unique_ptr<arch::GuestCpu> cpu_;
  std::unique_ptr<Kernel> kernel_;
  std::unique_ptr<LinuxProcessHooks> hooks_;
  // Counts instructions across runs when --max-insns is set (a run restarted
  // after a signal gets what is left).
  std::unique_ptr<engine::InstructionCounter> counter_;
  std::uint64_t entry_pc_ = 0;
  std::vector<LoadedModule> images_;
};

}  // namespace tracecorn::linux_layer
