// Role: deterministic replay. Re-runs a trace's program in Unicorn through the
// Linux layer, with every syscall answered from the trace (its result, and its
// effects on memory and registers: SyscallSource in recorder/linux), records
// the re-run at the trace's level and compares it, step by step, with the
// trace; stops at the first divergence and reports it (event index, pc, what the
// trace says, what the emulator did).
//
// What runs for real inside the emulator: the syscalls that change the
// emulated machine itself (brk, mmap, munmap, mprotect, mremap, madvise,
// arch_prctl, and the 32-bit ABIs' mmap2, set_thread_area, set_tls, i386's old
// mmap), end or signal the process (exit, exit_group, kill, tgkill, tkill,
// rt_sigaction, rt_sigprocmask); their results must equal the trace's. A file
// mmap runs as an anonymous mapping whose contents come from the trace (the
// kernel's writes recorded with it; old mmap's argument block is changed for
// the call and put back); a pid argument of kill/tgkill/tkill that
// names the recorded process is given the replaying process's pid. Nothing
// else reaches the host: no file is opened, the clock and getrandom are the
// trace's, and the guest's output is not printed. The time stamp counter
// (rdtsc, rdtscp: ld.so reads it) is the other input: where the trace has
// registers, the re-run gets the values it recorded.
//
// Signals (signal_plan.h): each is delivered where the trace says: made
// pending at the syscall whose return delivered it (pause and rt_sigsuspend
// then run in the emulator), or delivered by a code hook at the interrupted
// instruction's recorded execution (a timer's); the answered syscall's effects
// leave the delivery's part to the kernel; a fault's comes by itself. Signal
// steps compare where they interrupted, the signal, si_code, the handler, and
// (where the level records registers) the handler's registers.
//
// Threads (thread_schedule.h): in a trace with thread events, clone with
// CLONE_THREAD, exit, futex, set_tid_address, set_robust_list and
// sched_yield run too (thread ids start from the recorded pid), and the
// re-run's scheduler switches where and to whom the trace's did (after the
// same syscall, at the same quantum's end); a call the trace told unfinished
// parks its thread; a futex wait's result comes from the trace.
//
// Starting state: the trace's initial memory and registers when it has them
// (UCIR's first keyframe, binary trace's initial memory); for BAP frames,
// which have neither, the program is loaded with the meta frame's arguments
// and environment, and every byte the program read before writing it (the
// AT_RANDOM bytes...) is set to the value the trace read.
//
// What is compared, per step (an instruction or block with its memory and
// register events, a syscall, a fault, the exit), on what the format carries
// (TraceReader::capabilities): addresses and sizes; bytes written and read
// (each instruction's, as byte maps, so 8-byte splits and orders of a format
// do not matter); register values (each side keeps a register file: the values
// of the registers either side says changed must be equal; the pc register is
// compared through the instruction addresses); syscall numbers, arguments,
// results (and pcs where the format carries them), and the registers the
// kernel changed (the re-run's kernel writes the trace's result into the return
// register after the trace's register effects: a trace whose result and
// registers disagree diverges at that syscall); exit codes and fault pcs.
// Module loads, where the format carries them (BAP frames, binary trace; not
// UCIR): the modules the trace expects before its first step against those
// the re-run's loader mapped (the program, its interpreter), in order (file
// name, range, load bias), checked once the steps matched to the end (the
// libraries ld.so maps later are mmaps answered from the trace, checked
// through those syscalls' results); a trace with no module load at all (converted from UCIR)
// is not checked for them. Gaps are not compared (a trace with lost events is refused).
// Who calls it: the CLI (`tracecorn replay`), tests; one replay per thread;
// it starts the recorder's drain thread for the duration of the run.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <unicorn/unicorn.h>

#include "arch/arch.h"
#include "recorder/core/recorder.h"
#include "recorder/support/expected.h"

namespace tracecorn::replay {

struct ReplayOptions {
  std::string program;            // the ELF to re-run; empty: the one the trace names
  std::vector<std::string> argv;  // empty: the trace's argv (else {program})
  std::string rootfs;             // as `tracecorn run --rootfs` (for the program's interpreter)
  bool progress = false;          // a progress line on stderr when it is a terminal (progress.h)
};

struct Divergence {
  std::uint64_t event = 0;  // the index in the trace of the first event that differs
  std::uint64_t pc = 0;     // the pc there (the trace's)
  std::string what;         // what differs ("register rax", "syscall result"...)
  std::string trace_says;
  std::string emulator_did;
  // "event N, pc 0x...: WHAT: the trace says ..., the emulator ..."
  std::string to_string() const;
};

struct ReplayReport {
  std::optional<Divergence> divergence;  // none: the re-run matched the trace
  std::uint64_t trace_events = 0;
  std::uint64_t steps_compared = 0;  // instructions, blocks, syscalls, faults and exits compared
  std::uint64_t syscalls_answered = 0;
  std::uint64_t syscalls_run = 0;
  std::string level;                      // the level the re-run was recorded at (inferred from the trace)
  std::vector<std::string> not_compared;  // what the trace's format or level does not let replay compare
  // replay_engine_trace only: steps of the trace before the re-run's first
  // (earlier runs kept by a flight recorder), and steps of the re-run before the
  // trace's first (what the flight recorder's ring had overwritten); neither is compared.
  std::uint64_t trace_steps_before_run = 0;
  std::uint64_t run_steps_before_trace = 0;
};

// Replays the trace at `trace_path`. Returns the report (with or without a
// divergence), or an Error when the replay cannot start: the trace is not
// valid (its reader's error, with the byte offset), has lost events
// (kUnsupported), names no program and none was given (kInvalidArgument), or
// the program cannot be loaded (the Linux layer's error).
Expected<ReplayReport> replay_trace(const std::string& trace_path, const ReplayOptions& options = {});

// Replay of a trace recorded through the library on a caller-owned engine (a
// fuzz harness's flight-recorder dump of a crashing input,
// samples/embed/fuzz_harness.cpp): no Linux layer, no syscalls; the caller
// builds its engine exactly as when recording (maps, code, the CPU state) and
// re-runs the guest from its own entry on it.
//
// Starting state: a flight-recorder dump starts mid-run and does not carry the
// state at its first event (its keyframe, if any, is the engine's at attach
// time, before every input), so the state comes from the caller: `run`
// re-runs the input from its start on an engine set up as the harness's, and
// the replayer records that run at the trace's level. The two are aligned at
// their ends, which are the same crash (the fault, the exit by its signal):
// the trace's last step against the run's last step, and backwards from
// there. The trace's steps before the run's first (earlier inputs still in
// the ring) and the run's steps before the trace's first (what the ring
// overwrote, and the memory and register events a dump may open with, whose
// instruction was overwritten) are counted in the report and not compared. Everything else is
// compared as replay_trace does (instructions, memory bytes, registers,
// faults, exits; gap markers are skipped), and the first divergence is
// reported with the trace's event index.
struct EngineReplay {
  uc_engine* engine = nullptr;          // the caller's, set up as when recording; must not have a recorder attached
  const arch::ArchInfo* arch = nullptr;  // the engine's architecture
  // Runs the guest once from the caller's entry (the crashing input) and tells
  // `recorder` about a crash as the recording code did (Recorder::fault and
  // Recorder::exited). Called once, on the calling thread.
  std::function<void(core::Recorder& recorder)> run;
  bool progress = false;  // a progress line on stderr when it is a terminal
};
// Returns the report (with or without a divergence), or an Error: the trace is
// not valid (its reader's error, with the byte offset), is of another
// architecture (kInvalidArgument), or the recorder cannot attach to the engine.
Expected<ReplayReport> replay_engine_trace(const std::string& trace_path, const EngineReplay& replay);

}  // namespace tracecorn::replay
