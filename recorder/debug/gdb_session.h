// Role: what the packets of gdb's remote serial protocol mean for a recorded
// trace (the gdb manual, "Remote Protocol"): a GdbSession answers each packet
// from the time-travel position (time_travel.h): registers through the
// architecture's target description (arch/arch_info.h, GdbTarget), memory,
// breakpoints and write watchpoints, forward and reverse stepping and
// continuing (bs, bc), syscall catching (QCatchSyscalls), threads (thread
// ids are the guest's tids: qfThreadInfo, Hg/Hc, T, `thread:` in stops, a
// step of the thread named), and `monitor`
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
#include <string>
#include <string_view>
#include <vector>

#include "arch/arch_info.h"
#include "arch/instruction_decoder.h"
#include "formats/address_namer.h"
#include "formats/text/llvm_disassembler.h"
#include "recorder/debug/remote_protocol.h"
#include "recorder/debug/time_travel.h"

namespace tracecorn::debug {

class GdbSession {
 public:
  // `travel` (and `namer`, which names the addresses of monitor commands'
  // output, or nullptr) must outlive the session.
  explicit GdbSession(TimeTravel& travel, formats::AddressNamer* namer = nullptr);

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
  std::string stop_reply(const Stop& stop) const;
  std::string read_registers() const;
  std::string read_register(std::string_view number) const;
  std::string read_memory(std::string_view arguments) const;
  std::string change_point(std::string_view packet, bool insert);
  std::string resume(Direction direction, bool single_step, std::uint32_t thread = 0);  // 0: the continue thread
  std::string resume_vcont(std::string_view actions);
  std::string query(std::string_view packet);
  std::string transfer(std::string_view request) const;  // qXfer:<object>:read:<annex>:<offset>,<length>
  std::string catch_syscalls(std::string_view arguments);
  std::string monitor(std::string_view hex_command);
  std::string monitor_why(const std::vector<std::string>& arguments);  // its output, not hex encoded
  std::string register_hex(std::size_t gdb_number) const;
  std::string set_thread(std::string_view arguments);  // H
  std::string thread_list() const;                     // qfThreadInfo
  // A thread-id of the protocol: "-1" (all) and "0" (any) give 0; a tid otherwise.
  static bool parse_thread(std::string_view text, std::uint32_t& thread);

  TimeTravel& travel_;
  formats::AddressNamer* namer_;
  const arch::ArchInfo& arch_;
  std::string target_xml_;
  std::vector<std::uint8_t> auxv_;                 // the process's auxiliary vector, as gdb reads it
  std::vector<int> table_index_;                   // per gdb register number: the table index, -1 none
  std::vector<std::uint16_t> gdb_bits_;            // per gdb register number
  Stop last_stop_;
  std::uint32_t general_thread_ = 0;   // Hg: whose registers g and p read (0: the current thread's)
  std::uint32_t continue_thread_ = 0;  // Hc: which thread s and bs step (0: the current one)
  bool no_ack_ = false;
  bool closed_ = false;
  std::string last_reply_;  // framed, for a '-' from the client
  std::unique_ptr<arch::InstructionDecoder> why_decoder_;  // opened by the first `monitor why`
  std::unique_ptr<formats::LlvmDisassembler> why_text_;    // riscv64's instruction text, opened with it
};

// The target description (XML) gdb reads with qXfer:features:read for `target`.
std::string target_description(const arch::GdbTarget& target);
// The auxiliary vector on the stack at `sp` (after argc, argv and envp) in
// `index`'s current state (the session reads it at the first instruction), as
// bytes in the guest's layout; empty when memory there is unknown.
std::vector<std::uint8_t> initial_auxv(const replay::TraceIndex& index, std::uint64_t sp, bool wide, bool little_endian);
// gdb's signal number (its own numbering, include/gdb/signals.def) for a host (Linux) signal.
int gdb_signal_number(std::uint32_t host_signal);

}  // namespace tracecorn::debug
