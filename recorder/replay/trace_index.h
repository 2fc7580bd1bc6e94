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
//   - per chunk, the pages and registers it writes (so history queries skip
//     chunks that cannot matter), and every syscall with its stack.
// seek(N) restores the checkpoint of N's chunk and applies at most one chunk of
// deltas; its cost does not depend on N nor on the trace's length.
// "The state at event N" is the state before event N runs: after events 0..N-1.
//
// Layout of one chunk's delta log (before compression), records in event order:
//   varint  event index minus the previous record's (the first: minus the chunk's first event)
//   u8      kind: 1 register, 2 memory bytes, 3 mapping (bytes forgotten: unmap or fresh map), 4 pc
//   kind 1: u16 table index, u8 size, size bytes (little endian)
//   kind 2: varint address, varint length, length bytes
//   kind 3: varint address, varint length, u8 1 = mapped (known zero) / 0 = unmapped (unknown)
//   kind 4: varint pc
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

struct RegisterWriteRecord {
  std::uint64_t event = 0;
  events::RegisterValue value;
};

struct TraceIndexOptions {
  std::uint64_t checkpoint_interval = 1u << 16;  // events per chunk
};

class TraceIndex {
 public:
  // Reads `reader` to its end (from wherever it is: normally just opened).
  // Fails with the reader's error (offset and reason), or kIo for the temporary file.
  static Expected<std::unique_ptr<TraceIndex>> build(TraceReader& reader, const TraceIndexOptions& options = {});
  ~TraceIndex();
  TraceIndex(const TraceIndex&) = delete;
  TraceIndex& operator=(const TraceIndex&) = delete;

  std::uint64_t event_count() const { return event_count_; }
  std::uint64_t checkpoint_count() const { return checkpoints_.size(); }
  std::uint64_t delta_bytes() const { return delta_bytes_; }  // compressed, on disk
  // Whether events of `kind` appear in the trace (what the level recorded).
  bool saw(events::EventKind kind) const { return seen_[static_cast<std::size_t>(kind)]; }
  const std::vector<SyscallRecord>& syscalls() const { return syscalls_; }
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
  // Every write touching [address, address + length), in order (each record
  // holds the whole write).
  Expected<std::vector<MemoryWriteRecord>> memory_history(std::uint64_t address, std::uint64_t length);
  // Every recorded value of register `index`, in order.
  Expected<std::vector<RegisterWriteRecord>> register_history(std::size_t index);

  const arch::ArchInfo& arch() const { return *arch_; }

  struct Page;
  struct State;

 private:
  struct Chunk {
    std::uint64_t first_event = 0;
    std::uint64_t file_offset = 0, compressed_size = 0, raw_size = 0;
    std::vector<std::uint64_t> pages_written;  // sorted, unique
    std::vector<bool> registers_written;       // by table index
  };
  TraceIndex() = default;
  Status flush_chunk();
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
  std::vector<Chunk> chunks_;
  std::vector<std::unique_ptr<State>> checkpoints_;  // one per chunk: the state at its first event
  std::unique_ptr<State> state_;                     // the current state
  std::uint64_t position_ = 0;
  std::FILE* spill_ = nullptr;  // the delta log (owned; tmpfile(), gone when closed)
  std::uint64_t delta_bytes_ = 0;
  // Build-time: the chunk being written.
  std::vector<std::uint8_t> pending_;
  std::uint64_t pending_last_event_ = 0;
};

}  // namespace tracecorn::replay
