// Role: deterministic replay. Re-runs a trace's program in Unicorn through the
// Linux layer, with every syscall answered from the trace (its result, and its
// effects on memory and registers: SyscallSource in recorder/linux), records
// the re-run at the trace's level and compares it, step by step, with the
// trace; stops at the first divergence and reports it (event index, pc, what the
// trace says, what the emulator did).
//
// What runs for real inside the emulator: the syscalls that change the
// emulated machine itself (brk, mmap, munmap, mprotect, mremap, madvise,
// arch_prctl, and the 32-bit ABIs' mmap2, set_thread_area, set_tls), end or signal the process (exit, exit_group, kill, tgkill, tkill,
// rt_sigaction, rt_sigprocmask); their results must equal the trace's. A file
// mmap runs as an anonymous mapping whose contents come from the trace (the
// kernel's writes recorded with it); a pid argument of kill/tgkill/tkill that
// names the recorded process is given the replaying process's pid. Nothing
// else reaches the host: no file is opened, the clock and getrandom are the
// trace's, and the guest's output is not printed. The time stamp counter
// (rdtsc, rdtscp: ld.so reads it) is the other input: where the trace has
// registers, the re-run gets the values it recorded.
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
// Module loads and gaps are not compared (a trace with lost events is refused).
// Who calls it: the CLI (`tracecorn replay`), tests; one replay per thread;
// it starts the recorder's drain thread for the duration of the run.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "recorder/support/expected.h"

namespace tracecorn::replay {

struct ReplayOptions {
  std::string program;            // the ELF to re-run; empty: the one the trace names
  std::vector<std::string> argv;  // empty: the trace's argv (else {program})
  std::string rootfs;             // as `tracecorn run --rootfs` (for the program's interpreter)
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
};

// Replays the trace at `trace_path`. Returns the report (with or without a
// divergence), or an Error when the replay cannot start: the trace is not
// valid (its reader's error, with the byte offset), has lost events
// (kUnsupported), names no program and none was given (kInvalidArgument), or
// the program cannot be loaded (the Linux layer's error).
Expected<ReplayReport> replay_trace(const std::string& trace_path, const ReplayOptions& options = {});

}  // namespace tracecorn::replay
