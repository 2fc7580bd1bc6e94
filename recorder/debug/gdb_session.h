// Role: what the packets of gdb's remote serial protocol mean for a recorded
// trace (the gdb manual, "Remote Protocol"): a GdbSession answers each packet
// from the time-travel position (time_travel.h): registers through the
// architecture's target description (arch/arch_info.h, GdbTarget), memory,
// breakpoints and write watchpoints, forward and reverse stepping and
// continuing (bs, bc), syscall catching (QCatchSyscalls), threads (thread
// ids are the guest's tids: qfThreadInfo, Hg/Hc, T, `thread:` in stops, a
// step of the thread named), processes (multiprocess thread-ids, fork,
// vfork and exec stops, detaching one process), and `monitor`
// commands (qRcmd: when, seek, last-write, stack, why, help). The trace is read
// only: packets that would change the guest get an error. It knows nothing of
// sockets: the server (debug_server.h) feeds it what the parser splits.
// Who calls it: the debug server, tests and the fuzzer; one thread.
// Untrusted input: every packet. A malformed, oversized or out-of-order packet
// gets an error reply ("E01" and the like) or the empty reply (not supported);
// nothing a client sends can crash the session or make it read beyond its
// bounds (memory reads are capped to the packet size).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "arch/arch_info.h"
#include "arch/instruction_decoder.h"
#include "formats/address_namer.h"
#include "formats/text/llvm_disassembler.h"
#include "recorder/debug/debugged_image.h"
#include "recorder/debug/remote_protocol.h"
#include "recorder/debug/time_travel.h"

namespace tracecorn::debug {

class GdbSession {
 public:
  // A session over one trace: `travel` (and `namer`, which names the
  // addresses of monitor commands' output, or nullptr) must outlive it. Forks
  // are reported to a client that follows them, but their children cannot be
  // opened, nor the image an exec starts.
  explicit GdbSession(TimeTravel& travel, formats::AddressNamer* namer = nullptr);
  // A session over a recording's process tree, from `first`, the image whose
  // trace is at `trace`: for a client that follows processes (qSupported's
  // multiprocess+ and fork-events+, vfork-events+, exec-events+), a forward
  // resume stops at forks (`fork:`, `vfork:`, then `vforkdone` as the parent
  // resumes) and at execs (`exec:`, the process then in its next image's
  // trace, opened through `opener`), and gdb's follow-fork-mode and
  // detach-on-fork choose which processes it keeps: a child's trace is opened
  // when gdb first reads it (registers, memory, a resume: a child gdb
  // detaches is never read). Each process moves on its own: a resume
  // moves the process it names (gdb's schedule-multiple off), or the one that
  // stopped last.
  GdbSession(std::unique_ptr<DebuggedImage> first, std::string trace, ImageOpener opener);
  ~GdbSession();

  // What to send back for one item from the client: acknowledgements and
  // framed packets, ready to write; `close` when the client detached or
  // killed the session.
  struct Output {
    std::string bytes;
    bool close = false;
  };
  Output handle(const ClientItem& item);
  // The reply payload for one packet (no framing, no acknowledgement).
  std::string answer(std::string_view packet);
  bool closed() const { return closed_; }

 private:
  // What gdb calls a register of one architecture: its target description
  // and, per gdb register number, the register table's index and width.
  struct RegisterMap {
    const arch::ArchInfo* arch = nullptr;
    std::string target_xml;
    std::vector<int> table_index;         // -1: a register the trace does not know
    std::vector<std::uint16_t> gdb_bits;
  };
  // One process of the recording, as the session knows it.
  struct Process {
    std::uint64_t pid = 0;
    std::string trace;                     // its current image's trace ("" when not known)
    std::string program;                   // its current image's program, once an exec named it
    std::unique_ptr<DebuggedImage> image;  // null for the caller's TimeTravel, and until opened
    TimeTravel* travel = nullptr;          // null until opened
    formats::AddressNamer* namer = nullptr;
    RegisterMap registers;
    std::vector<std::uint8_t> auxv;        // its auxiliary vector, as gdb reads it
    Stop last_stop;
    std::set<std::uint64_t> inherited_breakpoints;  // a child's: its parent's at the fork (memory is copied)
    bool vfork_done_pending = false;       // a vfork was reported: the next resume reports `vforkdone`
    bool detached = false;                 // gdb detached it (D;pid): gone from the session
  };
  // A thread-id of the protocol: `pid` 0 for the current process (or, when
  // gdb uses no process ids, the one that has thread `tid`), `tid` 0 for any.
  struct ThreadRef {
    std::uint64_t pid = 0;
    std::uint32_t tid = 0;
  };

  // Makes `travel` the process's current image; `at_entry`: the image starts
  // at its entry (the first image, an exec's), with its auxiliary vector on the stack.
  void attach_travel(Process& process, TimeTravel& travel, formats::AddressNamer* namer, bool at_entry);
  bool open(Process& process);  // opens its trace when not yet open; false when it cannot be
  Process* find(std::uint64_t pid);
  // The process a thread-id names, its trace opened when `need_trace` (a
  // child gdb only selects or detaches is never read); null when none.
  Process* resolve(const ThreadRef& ref, bool need_trace);
  bool has_thread(const Process& process, std::uint32_t tid) const;
  TimeTravel& travel() const { return *general_->travel; }
  const arch::ArchInfo& arch() const { return *general_->registers.arch; }
  std::string thread_id(std::uint64_t pid, std::uint32_t tid) const;  // as the client writes them

  std::string stop_reply(const Process& process, const Stop& stop) const;
  std::string read_registers() const;
  std::string read_register(std::string_view number) const;
  std::string read_memory(std::string_view arguments) const;
  std::string change_point(std::string_view packet, bool insert);
  std::string resume(Direction direction, bool single_step, ThreadRef target);  // {0, 0}: the continue thread
  std::string resume_vcont(std::string_view actions);
  // Resumes `process` until a stop the client wants (forks and execs it does
  // not follow are passed); an exec moves the process into its next image.
  Expected<Stop> resume_process(Process& process, Direction direction, bool single_step, std::uint32_t thread);
  // The stop a fork or exec of `process` is to the client (its child known
  // from then on; an exec's next image opened), or nullopt to pass it.
  std::optional<Stop> follow_change(Process& process, const Stop& stop);
  std::string detach(std::string_view arguments);  // D, vKill
  std::string query(std::string_view packet);
  std::string supported(std::string_view features);  // qSupported
  std::string transfer(std::string_view request) const;  // qXfer:<object>:read:<annex>:<offset>,<length>
  std::string catch_syscalls(std::string_view arguments);
  std::string monitor(std::string_view hex_command);
  std::string monitor_why(const std::vector<std::string>& arguments);  // its output, not hex encoded
  std::string register_hex(std::size_t gdb_number) const;
  std::string set_thread(std::string_view arguments);  // H
  std::string thread_list() const;                     // qfThreadInfo
  static bool parse_thread(std::string_view text, ThreadRef& thread);

  ImageOpener opener_;  // empty: children and next images are not opened
  std::vector<std::unique_ptr<Process>> processes_;  // the first, then children as their forks are reported
  Process* current_ = nullptr;  // the process that stopped last
  Process* general_ = nullptr;  // Hg's process: whose registers, memory and points packets read and set
                                // (opened by the first packet that reads its trace)
  std::uint32_t general_thread_ = 0;   // Hg: whose registers g and p read (0: the process's current thread)
  ThreadRef continue_thread_;          // Hc: which thread s and bs step (0: the current one)
  bool no_ack_ = false;
  bool closed_ = false;
  bool multiprocess_ = false;  // the client writes thread-ids as pPID.TID
  bool fork_events_ = false, vfork_events_ = false, exec_events_ = false;  // what the client follows
  bool catch_syscalls_ = false;                // QCatchSyscalls, for every process
  std::vector<std::uint64_t> caught_numbers_;
  std::string last_reply_;  // framed, for a '-' from the client
  const arch::ArchInfo* why_arch_ = nullptr;               // the architecture why_decoder_ decodes
  std::unique_ptr<arch::InstructionDecoder> why_decoder_;  // opened by the first `monitor why`
  std::unique_ptr<formats::LlvmDisassembler> why_text_;    // riscv64's instruction text, opened with it
};

// The target description (XML) gdb reads with qXfer:features:read for `target`.
std::string target_description(const arch::GdbTarget& target);
// gdb's signal number (its own numbering, include/gdb/signals.def) for a host (Linux) signal.
int gdb_signal_number(std::uint32_t host_signal);

}  // namespace tracecorn::debug
