// Role: the binary trace v1.0 reader: opens a file (with or without the
// metadata header, compression 0 or our zstd), validates every declaration,
// then streams its events, keeping the machine state (every declared register
// and the memory) up to date, and turns them into the common event model for
// `tracecorn dump` and the round-trip tests.
// Who calls it: any one thread; one reader per thread (not thread safe).
//
// Untrusted input: every byte is untrusted. Nothing here aborts or throws on
// bad input: errors come back as an Error with the byte offset (in the file;
// for a zstd events section, in its decompressed events) and the reason. Checked:
// magics and versions, every section size against the file and against what
// the section holds, counts, register ids (unique, declared, not 0xff for an
// operation, operations naming a declared register with a value of its size,
// known operators), regions (ascending, disjoint, inside PHY_SIZE), the initial
// memory size, that every register is initialized once, and in events: unknown
// register ids, both counts 0xf, a diff, string or memory entry past the end of
// the section, memory entries outside the declared regions, and the event count.
//
// What the reader makes of each event (the writer's conventions, bintrace_writer.h):
//   instruction   an InstructionEvent at the rip before its diff (size and bytes
//                 decoded from the memory state with Capstone), a MemoryEvent
//                 (write, pc known) per 8 bytes of each memory entry, and a
//                 RegistersEvent with the arch table registers whose value
//                 changed, rip left out (the next InstructionEvent says it)
//   "map/unmap/protect", "callstack"  collected for the syscall that follows
//   "syscall ..." a SyscallEvent (pc = the last instruction's), its diff's memory
//                 entries as memory_writes and the changed registers
//   "fault ...", "exit ...", "module ...", "gap ..."  Fault/Exit/ModuleLoad/Gap events
//   "interrupted" the interruption note: interrupted() is set, no model event
//   other descriptions (other tools' "page fault"...) produce no model event
//                 (counted by unrecognized_events()); their diffs still apply.
// Registers are matched to the architecture's table by name (arch::BintraceMachine);
// undeclared ones stay zero in registers().
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "arch/arch_info.h"
#include "arch/instruction_decoder.h"
#include "formats/bintrace/bintrace_state.h"
#include "recorder/events/event.h"
#include "recorder/support/expected.h"

namespace tracecorn::formats {

struct BintraceMetadata {
  bool present = false;  // false for a file that starts with the header section
  std::uint32_t version = 0;
  std::uint32_t type = 0;
  std::string format_version, tool_name, tool_version, tool_info;
  std::uint64_t unix_time = 0;
};

class BintraceReader {
 public:
  using EventCallback = std::function<void(const events::Event&)>;

  // Opens `path` and reads everything before the events (the initial memory
  // goes into the state, a page at a time). Fails with kNotFound/kIo (the
  // file), kBadFormat/kTruncated (with the offset), kUnsupported (another major
  // version, an unknown compression or architecture magic).
  static Expected<std::unique_ptr<BintraceReader>> open(const std::string& path);
  // The same from bytes in memory; `source` names them in errors.
  static Expected<std::unique_ptr<BintraceReader>> from_bytes(std::vector<std::uint8_t> bytes, std::string source);
  // Whether `first_bytes` (the file's first 16 bytes or more) start a binary
  // trace: the metadata magic, or a header section (size 1, compression 0 or 1).
  static bool recognizes(std::span<const std::uint8_t> first_bytes);
  // Whether the format carries events of `kind` (not blocks, not memory reads).
  static bool can_carry(events::EventKind kind);

  ~BintraceReader();
  BintraceReader(const BintraceReader&) = delete;
  BintraceReader& operator=(const BintraceReader&) = delete;

  const BintraceMetadata& metadata() const { return metadata_; }
  std::uint8_t compression() const { return compression_; }
  const bintrace::MachineDescription& machine() const { return machine_; }
  std::uint64_t event_count() const { return event_count_; }  // as the events section declares
  const arch::ArchInfo& arch() const { return *arch_; }
  // Arch, level (from our tool info, else ""), the initial registers (table
  // order) and the declared regions (without bytes: read them with
  // read_memory() before the first event).
  const events::TraceInfo& info() const { return info_; }

  // Reads the next event, applies its diff to the state and calls `on_event`
  // for its model events (valid during the call only). Returns true when an
  // event was read, false after the last one, or an Error (after which further
  // calls return false).
  Expected<bool> next(const EventCallback& on_event);
  // Reads every remaining event into `sink`: begin(info()), the events, end()
  // (formats/common/read_all.h, the same for every reader).
  Status read_all(events::Sink& sink);
  // Reads events without producing model events until `index` events have been
  // read (the state is then the state after event index - 1; 0 = the initial
  // state). Fails when the file has fewer events or is invalid, or when `index`
  // is behind (open the file again to go back).
  Status skip_to(std::uint64_t index);
  std::uint64_t events_read() const { return events_read_; }
  // Bytes of the file read so far, for progress displays.
  std::uint64_t file_bytes_read() const;
  std::uint64_t unrecognized_events() const { return unrecognized_; }
  // Whether an event read so far is the interruption note (the recording was
  // stopped by SIGINT or SIGTERM and finished: bintrace_writer.h).
  bool interrupted() const { return interrupted_; }

  // The state after the events read so far.
  const bintrace::MachineState& state() const { return *state_; }
  // Every register of the arch table (table order), from the state.
  std::vector<events::RegisterValue> registers() const;
  // Memory from the state (zero where nothing was ever written).
  void read_memory(std::uint64_t address, std::span<std::uint8_t> out) const { state_->memory().read(address, out); }

  class Input;   // where the file's bytes come from; internal
  class Events;  // the events section's bytes (plain or zstd); internal

 private:
  struct MemoryEntry {
    std::uint64_t address;
    std::size_t offset, length;  // into entry_bytes_
  };
  BintraceReader(std::unique_ptr<Input> input, std::string source);
  static Expected<std::unique_ptr<BintraceReader>> start(std::unique_ptr<Input> input, std::string source);
  Status parse_sections();
  Status parse_machine(std::span<const std::uint8_t> bytes, std::uint64_t offset);
  Status parse_initial_registers(std::span<const std::uint8_t> bytes, std::uint64_t offset);
  // Reads one event and applies it; fills the raw fields below when `keep` is set.
  Expected<bool> read_event(bool keep);
  Status read_diff(std::uint8_t first_byte, bool keep);
  Error error_at(std::uint64_t offset, std::string message) const;
  void map_registers();
  // Refreshes the table values of what changed since the last call; fills `changed` (table order).
  void refresh_table(std::vector<events::RegisterValue>* changed);
  bool produce_signal_or_thread(const EventCallback& on_event);
  bool produce_process(const EventCallback& on_event);
  void produce(const EventCallback& on_event);
  void emit(events::EventKind kind, const events::EventPayload& payload, const EventCallback& on_event);

  std::unique_ptr<Input> input_;
  std::unique_ptr<Events> events_;
  std::string source_;
  BintraceMetadata metadata_;
  std::uint8_t compression_ = 0;
  bintrace::MachineDescription machine_;
  std::unique_ptr<bintrace::MachineState> state_;
  const arch::ArchInfo* arch_ = nullptr;
  events::TraceInfo info_;
  std::uint64_t event_count_ = 0;
  std::uint64_t events_read_ = 0;
  std::uint64_t unrecognized_ = 0;
  bool interrupted_ = false;
  bool failed_ = false;

  // Declared register slot -> where it goes in the arch table.
  enum class Mapping : std::uint8_t { kNone, kTable, kDerived };
  std::vector<Mapping> mapping_;
  std::vector<std::uint16_t> mapping_index_;  // kTable: the table index
  std::vector<int> arch_slot_of_;             // arch::BintraceMachine register index -> declared slot (or -1)
  std::vector<std::array<std::uint8_t, 16>> table_;
  std::vector<bool> slot_dirty_;
  std::vector<std::size_t> dirty_slots_;
  std::size_t pc_table_index_ = 0;

  // The raw event just read (when kept).
  bool raw_instruction_ = false;
  std::string raw_description_;
  std::vector<MemoryEntry> raw_memory_;
  std::vector<std::uint8_t> entry_bytes_;

  // Model output.
  std::uint64_t next_sequence_ = 0;
  events::ThreadId thread_;  // the running thread: the pid in the tool info, then each switch's
  std::uint64_t last_pc_ = 0;  // the running thread's last instruction (a syscall's pc)
  // Each other thread's last instruction: a thread switched back in ends the
  // syscall it was blocked in, whose pc is that thread's, not the last one run.
  std::unordered_map<std::uint32_t, std::uint64_t> thread_last_pcs_;
  std::uint64_t instructions_read_ = 0;
  std::unique_ptr<arch::InstructionDecoder> decoder_;  // opened on first use
  std::vector<events::MappingEffect> pending_mappings_;
  std::vector<std::uint64_t> pending_stack_;
  std::vector<events::RegisterValue> changed_;
  std::vector<events::MemoryWriteEffect> writes_;
  std::string text_;
  events::Event event_;
};

}  // namespace tracecorn::formats
