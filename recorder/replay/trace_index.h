// Role: the machine state at any event of a trace, and queries over its
// history. One pass over a trace (any format, through TraceReader) builds:
//   - a delta log: every state change (register values, memory bytes written by
//     instructions and by the kernel, mappings, the pc), in chunks of
//     `checkpoint_interval` events, each chunk compressed with zstd level 1 and
//     spilled to an anonymous temporary file (so a 100-million-event trace costs
//     disk, not memory);
//   - a checkpoint at the start of every chunk: the whole register file and the
//     memory as copy-on-write 4 KiB pages (a checkpoint shares every page that
//     did not change since the previous one);
//   - per chunk, the pages it writes and reads, the registers it writes and the pcs its
//     instructions ran (so history queries and breakpoint searches skip chunks
//     that cannot matter), and every syscall with its stack.
// seek(N) restores the checkpoint of N's chunk and applies at most one chunk of
// deltas; its cost does not depend on N nor on the trace's length.
// "The state at event N" is the state before event N runs: after events 0..N-1.
//
// Layout of one chunk's delta log (before compression), records in event order:
//   varint  event index minus the previous record's (the first: minus the chunk's first event)
//   u8      kind: 1 register, 2 memory bytes, 3 mapping (bytes forgotten: unmap or fresh map), 4 pc,
//           5 revealed memory, 6 instruction pc, 7 read
//   kind 1: u16 table index, u8 size, size bytes (little endian)
//   kind 2: varint address, varint length, length bytes
//   kind 3: varint address, varint length, u8 1 = mapped (known zero) / 0 = unmapped (unknown)
//   kind 4: varint pc (a block's, at blocks level, or a signal handler's entry)
//   kind 5: as kind 2, bytes first seen read (a format without initial memory)
//   kind 6: varint pc of an instruction event
//   kind 7: varint address, varint length: a read by an instruction (no bytes)
//
// What is known: each register and each memory byte is either known or
// unknown (never a silent zero): registers are known from the initial state
// (UCIR, bintrace, frames' key frame) or once written; memory from the initial
// state (UCIR, bintrace), from writes, and, for a format without initial memory
// (BAP frames), from the values instructions read.
// Who calls it: the CLI (`tracecorn state`... through stat/replay), tests,
// benches; one thread (not thread safe). Errors from the trace come back from
// build() with the reader's byte offset; an I/O error of the temporary file as kIo.
#pragma once

#include <array>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "formats/address_namer.h"
#include "recorder/replay/trace_reader.h"

namespace tracecorn::replay {

struct SyscallRecord {
  std::uint64_t event = 0;  // its index in the trace
  std::uint64_t pc = 0;
  std::uint64_t number = 0;
  std::string name;
  std::uint64_t args[6] = {};
  std::int64_t result = 0;
  std::vector<std::uint64_t> call_stack;  // innermost first; empty when not recorded
  std::uint64_t bytes_written = 0;        // by the kernel into guest memory
  // Its effects (what replay applies instead of running it).
  std::vector<std::pair<std::uint64_t, std::vector<std::uint8_t>>> memory_writes;
  std::vector<events::RegisterValue> register_changes;
};

struct MemoryWriteRecord {
  std::uint64_t event = 0;
  std::uint64_t address = 0;
  std::vector<std::uint8_t> bytes;
};

// One memory access: a write (with its bytes) or a read (level mem or full: its size only).
struct MemoryAccessRecord {
  std::uint64_t event = 0;
  std::uint64_t address = 0;
  std::uint64_t length = 0;
  bool write = false;
  std::vector<std::uint8_t> bytes;  // a write's bytes; empty for a read
};

struct InstructionRecord {
  std::uint64_t event = 0;  // the instruction event's index
  std::uint64_t pc = 0;
};

// A signal delivered to a handler, or a fault that ended the process.
struct SignalRecord {
  std::uint64_t event = 0;
  std::uint32_t signal = 0;   // host numbering, as the event holds it
  bool fault = false;         // a CPU fault (the instruction at `pc` did not complete)
  std::uint64_t pc = 0;       // where the interrupted code resumes, or the faulting instruction
  std::uint64_t address = 0;  // the faulting address (si_addr), 0 when none
};

// A change of the thread set, in event order: a thread created, exited, or
// switched to (the threads of one process: each process has a trace of its own).
struct ThreadChangeRecord {
  std::uint64_t event = 0;
  events::ThreadChange change = events::ThreadChange::kSwitched;
  std::uint32_t thread = 0;  // the thread created, exited, or switched to
  std::uint32_t from = 0;    // kSwitched: the thread that ran before; kCreated: the parent
};

// A fork or exec the trace recorded (events::ProcessEvent).
struct ProcessChangeRecord {
  std::uint64_t event = 0;
  events::ProcessChange change = events::ProcessChange::kForked;
  std::uint64_t pid = 0;  // kForked: the child's; kExecuted: the process's own
  std::string trace;      // the child's (or the next image's) trace, as the event names it
  std::string detail;     // kForked: the syscall ("fork", "vfork", "clone", "clone3"); kExecuted: the path
};

struct RegisterWriteRecord {
  std::uint64_t event = 0;
  events::RegisterValue value;
};

struct TraceIndexOptions {
  std::uint64_t checkpoint_interval = 1u << 16;  // events per chunk
};

// What a saved index is checked against (identify_trace): the trace file's
// size, modification time and a hash of its first and last 64 KiB.
struct TraceIdentity {
  std::uint64_t size = 0;
  std::int64_t mtime_ns = 0;
  std::uint64_t content_hash = 0;
};
Expected<TraceIdentity> identify_trace(const std::string& path);

class TraceIndex {
 public:
  // Reads `reader` to its end (from wherever it is: normally just opened).
  // Fails with the reader's error (offset and reason), or kIo for the temporary file.
  static Expected<std::unique_ptr<TraceIndex>> build(TraceReader& reader, const TraceIndexOptions& options = {});
  // Saves the index to `path` (written beside it, then renamed into place),
  // stamped with the trace's identity (trace_index_file.cpp has the layout).
  Status save(const std::string& path, const TraceIdentity& identity) const;
  // An index saved by save() for the trace `identity` describes, of `arch`.
  // Fails (kNotFound: no file; kBadFormat: another version, a stale or
  // damaged file, naming the reason) rather than trusting a doubtful file:
  // the caller builds the index from the trace instead.
  static Expected<std::unique_ptr<TraceIndex>> load(const std::string& path, const TraceIdentity& identity,
                                                    const arch::ArchInfo& arch);
  ~TraceIndex();
  TraceIndex(const TraceIndex&) = delete;
  TraceIndex& operator=(const TraceIndex&) = delete;

  std::uint64_t event_count() const { return event_count_; }
  std::uint64_t checkpoint_count() const { return checkpoints_.size(); }
  std::uint64_t delta_bytes() const { return delta_bytes_; }  // compressed, on disk
  // Whether events of `kind` appear in the trace (what the level recorded).
  bool saw(events::EventKind kind) const { return seen_[static_cast<std::size_t>(kind)]; }
  const std::vector<SyscallRecord>& syscalls() const { return syscalls_; }
  // The last syscall whose event comes before `event` (nullptr when none):
  // what a thread stopped in, or what made a fork or exec event after it.
  const SyscallRecord* syscall_before(std::uint64_t event) const;
  // Instructions in the trace (instruction events, or the blocks' counts at blocks level).
  std::uint64_t instructions() const { return instructions_ ? instructions_ : block_instructions_; }
  // For a format without initial memory (BAP frames): every byte read before
  // anything wrote it, with the value read (the initial memory the program
  // saw, as far as it looked). Empty for the other formats.
  Expected<std::vector<MemoryWriteRecord>> first_reads();

  // Makes the current state the state at event `event` (0..event_count()).
  // Fails with kInvalidArgument beyond the end, kIo/kBadFormat if the temporary
  // file cannot be read back.
  Status seek(std::uint64_t event);
  std::uint64_t position() const { return position_; }
  // The current state: register `index` of the arch table, when known.
  std::optional<events::RegisterValue> register_value(std::size_t index) const;
  // The pc of the last instruction before the current position (of the last
  // block entered, in a trace without instruction events); nullopt before any.
  std::optional<std::uint64_t> pc() const;
  // Copies memory into `out`; returns how many bytes from the start are known
  // (stops at the first unknown byte; out's rest is zeroed).
  std::size_t read_memory(std::uint64_t address, std::span<std::uint8_t> out) const;

  // The last write (by an instruction or the kernel) to the byte at `address`
  // before event `before`; nullopt if none was recorded.
  Expected<std::optional<MemoryWriteRecord>> last_write(std::uint64_t address, std::uint64_t before);
  // The first instruction event at or after `from` whose pc is in `pcs`
  // (sorted; empty: any instruction), or the last one before `before`; nullopt
  // when there is none. Chunks whose instructions ran none of `pcs` are not
  // read, so a search costs the chunks that may match, not the distance.
  Expected<std::optional<InstructionRecord>> next_instruction(std::uint64_t from, std::span<const std::uint64_t> pcs = {});
  Expected<std::optional<InstructionRecord>> previous_instruction(std::uint64_t before,
                                                                  std::span<const std::uint64_t> pcs = {});
  // The first write (instruction or kernel) touching [address, address +
  // length) at or after event `from`, or the last one before `before`.
  Expected<std::optional<MemoryWriteRecord>> next_write(std::uint64_t from, std::uint64_t address, std::uint64_t length);
  Expected<std::optional<MemoryWriteRecord>> previous_write(std::uint64_t before, std::uint64_t address,
                                                            std::uint64_t length);
  // How many instruction events come before event `event`.
  Expected<std::uint64_t> instructions_before(std::uint64_t event);
  // Whether instructions' memory accesses are in the trace (levels mem and
  // full): without them, memory an instruction wrote reads as it was before.
  bool memory_tracked() const {
    return saw(events::EventKind::kMemoryWrite) || saw(events::EventKind::kMemoryRead);
  }
  // The initial regions mapped readable and not writable ([start, end)): code
  // and constants, which read the same at any event whatever the level.
  const std::vector<std::pair<std::uint64_t, std::uint64_t>>& initial_read_only() const { return initial_read_only_; }
  // The first read or write (as `kinds` says) touching [address, address +
  // length) at or after `from`, or the last one before `before`. Reads are
  // those of instructions, at levels mem and full.
  enum Accesses : std::uint8_t { kWrites = 1, kReads = 2, kReadsAndWrites = 3 };
  Expected<std::optional<MemoryAccessRecord>> next_access(std::uint64_t from, std::uint64_t address,
                                                          std::uint64_t length, Accesses kinds);
  Expected<std::optional<MemoryAccessRecord>> previous_access(std::uint64_t before, std::uint64_t address,
                                                              std::uint64_t length, Accesses kinds);
  // Every memory access (instructions' reads and writes, kernel writes) in
  // events [from, to), in order: what one instruction touched, say.
  Expected<std::vector<MemoryAccessRecord>> accesses_in(std::uint64_t from, std::uint64_t to);
  // Feeds `namer` the trace's module loads and file mappings, in order (what
  // formats::name_initial_mappings and name_event_mappings would give it
  // reading the trace), so that it names code addresses as of the trace's end.
  void name_mappings(formats::AddressNamer& namer) const;
  struct MappingNote {  // one call to an AddressNamer, as build() recorded it
    enum Kind : std::uint8_t { kModule, kFile, kUnmap } kind;
    std::uint64_t start, end, load_bias;
    std::string path;
  };

  // Signals delivered to handlers and fatal faults, in event order.
  const std::vector<SignalRecord>& signals() const { return signals_; }
  // The trace's threads: the one that runs the first event, and every
  // creation, exit and switch after it.
  std::uint32_t first_thread() const { return first_thread_; }
  const std::vector<ThreadChangeRecord>& thread_changes() const { return thread_changes_; }
  // The forks and execs, in event order (none in a trace recorded before process events).
  const std::vector<ProcessChangeRecord>& process_changes() const { return process_changes_; }
  // The thread whose state the state at event `event` shows: the one that
  // ran event - 1 (the first thread at event 0). A syscall or signal event
  // belongs to the thread that runs it: thread_at(its event + 1).
  std::uint32_t thread_at(std::uint64_t event) const;
  // The threads alive at event `event` (created before it and not exited
  // before it), in order of creation, the first thread first.
  std::vector<std::uint32_t> threads_alive_at(std::uint64_t event) const;

  // Every write touching [address, address + length), in order (each record
  // holds the whole write).
  Expected<std::vector<MemoryWriteRecord>> memory_history(std::uint64_t address, std::uint64_t length);
  // Every recorded value of register `index`, in order.
  Expected<std::vector<RegisterWriteRecord>> register_history(std::size_t index);
  // The last recorded value of register `index` before event `before` (by an
  // instruction, a syscall, a signal delivery or a thread switch); nullopt
  // when none (the value is the initial state's, or unknown). Chunks that never
  // write the register are not read.
  Expected<std::optional<RegisterWriteRecord>> previous_register_write(std::size_t index, std::uint64_t before);

  const arch::ArchInfo& arch() const { return *arch_; }

  struct Page;
  struct State;

 private:
  struct Chunk {
    std::uint64_t first_event = 0;
    std::uint64_t file_offset = 0, compressed_size = 0, raw_size = 0;
    std::vector<std::uint64_t> pages_written;  // sorted, unique
    std::vector<std::uint64_t> pages_read;     // by instructions; sorted, unique
    std::vector<bool> registers_written;       // by table index
    std::vector<std::uint64_t> instruction_pcs;  // the pcs its instruction events ran, sorted, unique
    std::uint64_t instructions_before = 0;       // instruction events in the chunks before it
  };
  TraceIndex() = default;
  Status flush_chunk();
  Status read_tables(std::span<const std::uint8_t> meta);  // load()'s tables, checked
  std::size_t chunk_of(std::uint64_t event) const;
  bool chunk_may_run(std::size_t chunk, std::span<const std::uint64_t> pcs) const;
  bool chunk_may_touch(std::size_t chunk, std::uint64_t address, std::uint64_t length, Accesses kinds) const;
  Expected<std::optional<MemoryAccessRecord>> find_access(bool forward, std::uint64_t bound, std::uint64_t address,
                                                          std::uint64_t length, Accesses kinds);
  Expected<std::vector<std::uint8_t>> load_chunk(std::size_t chunk) const;
  // Decodes `bytes` (chunk `chunk`), calling on_record for every record with event < limit.
  template <typename OnRecord>
  Status decode(std::size_t chunk, std::span<const std::uint8_t> bytes, std::uint64_t limit, OnRecord on_record) const;

  const arch::ArchInfo* arch_ = nullptr;
  std::uint64_t interval_ = 1;
  std::uint64_t event_count_ = 0;
  std::uint64_t instructions_ = 0, block_instructions_ = 0;
  bool seen_[16] = {};
  std::vector<SyscallRecord> syscalls_;
  std::vector<SignalRecord> signals_;
  std::uint32_t first_thread_ = 0;
  std::vector<ThreadChangeRecord> thread_changes_;
  std::vector<ProcessChangeRecord> process_changes_;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> initial_read_only_;
  std::vector<MappingNote> mapping_notes_;
  std::vector<Chunk> chunks_;
  std::vector<std::unique_ptr<State>> checkpoints_;  // one per chunk: the state at its first event
  std::unique_ptr<State> state_;                     // the current state
  std::uint64_t position_ = 0;
  std::FILE* spill_ = nullptr;  // the delta log (owned; tmpfile(), gone when closed; or a saved index)
  std::uint64_t spill_base_ = 0;  // where the delta log starts in spill_
  std::uint64_t delta_bytes_ = 0;
  // Build-time: the chunk being written.
  std::vector<std::uint8_t> pending_;
  std::uint64_t pending_last_event_ = 0;
};

}  // namespace tracecorn::replay
