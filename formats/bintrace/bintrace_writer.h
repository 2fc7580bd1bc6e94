// Role: the binary trace v1.0 writer (`tracecorn record --format bintrace`), an
// events::Sink producing REVEN's rvnbintrace layout (bintrace_layout.h).
// Who calls it: the recorder's drain thread (Sink interface), one thread at a time.
//
// What goes where:
// - The machine description is the architecture's (arch::BintraceMachine):
//   registers with ids 0..n-1 in its order, then the reference writer's
//   operations (rip += 1..15, eflags bits set/cleared, rsp +-2/4/8/16), then the
//   static CPUID registers; PHY_SIZE 8 (addresses are the guest's virtual ones).
// - Memory regions: every region mapped when recording started, every range the
//   guest maps later (mmap, brk growth, mremap) and any page written outside
//   those, merged and sorted; known at the end because events are spooled first
//   (to PATH.events.part beside the output, or a temporary file for "-"), then
//   the file is written whole. The initial memory section holds each region's
//   contents when recording started (zero where nothing was mapped then).
// - Each instruction event carries its diff: its memory writes (contiguous ones
//   merged), then the registers it changed, in declaration order, with rip set
//   to the next instruction's address; rip, rsp and eflags use the operations
//   when one fits. Diffs past 14 entries continue in continuation diffs.
// - A syscall becomes a group of "other" events: per mapping change "map A L
//   prot P" / "unmap A L" / "protect A L prot P" (a map's diff zeroes the bytes
//   the new mapping replaces), the call stack as "callstack 0x.. 0x.." events
//   (at most 255 characters each, innermost first), then "syscall NAME(a0, ..,
//   a5) = RESULT #NUMBER" whose diff holds the kernel's memory writes and
//   register changes. Faults ("fault signal S pc P address A: text"), exits
//   ("exit code C" / "exit signal S"), module loads ("module START END bias B
//   PATH") and gaps ("gap N: reason") are "other" events with empty diffs.
// - A signal delivery is an "other" event "signal S code C pc P handler H
//   frame F sender PID address A[ fault]" whose diff holds the frame's bytes
//   and the registers the handler starts with (the format has no signals); a
//   thread change (ours: the format has no threads) is "thread CHANGE TID
//   from FROM status STATUS" (CHANGE 1 created, 2 exited, 3 switched to)
//   whose diff, for a switch, holds the registers of the thread switched to.
//   A fork or an exec (ours) is "process CHANGE PID trace N:NAME detail
//   M:TEXT" (CHANGE 1 forked, 2 exec'd; N and M the byte lengths of the
//   trace's name and of the syscall's name or exec'd path) with an empty diff.
//   The tool info says the process's pid (", pid N"), the first thread's id.
// - When the first instruction after "other" events is not where the table's
//   pc says (x86's pc inside the syscall hook is 2 bytes short of where a
//   sigreturn resumes), an "other" event "pc ADDRESS" sets it (ours; no event
//   in the model).
// - At level regs (the guest's stores are not in the trace), a block read from
//   memory mapped writable (BlockEvent::from_writable_memory: maybe a JIT's
//   code) whose bytes are not what the reader's memory holds there is
//   preceded by an "other" event "code ADDRESS" whose diff writes them
//   (ours; no event in the model): readers decode instructions from memory.
// - end() of an interrupted recording (TraceSummary::interrupted: SIGINT or
//   SIGTERM) adds the interruption note, an "other" event "interrupted" with
//   an empty diff (bintrace_layout.h), after the exit event.
// - The initial registers are TraceInfo's, with rip set to the first recorded
//   instruction's address (the recorder captures them before the pc is set).
// - Needs the initial state (RecorderOptions::capture_initial_state) and a level
//   that records registers per instruction (regs or full; only full has the
//   instructions' memory writes). Block and memory read events are not carried.
// Errors: nothing throws from on_event; the first error is kept and returned by
// end(), naming the file and the bytes written; a failed recording leaves no
// output file. A regular file is written as PATH.part and renamed to PATH when
// complete; a device or a pipe (/dev/full, a FIFO) is written in place, never
// replaced, with its spool in a temporary file.
// Recovery: at the first instruction (when the initial state is complete) the
// writer also writes PATH.head.part, a whole binary trace with no events
// (compression 0) declaring the regions mapped at the start. A recording
// killed before end() leaves that head and the spool (PATH.events.part, its
// events up to the last batch handed to the file: spool_batch_bytes; with
// zstd's workers, up to the last job they finished); recover_bintrace()
// (bintrace_recover.h, `tracecorn recover`) rebuilds a valid file from them.
// end() removes both.
#pragma once

#include <array>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "arch/arch_info.h"
#include "formats/bintrace/bintrace_state.h"
#include "formats/common/byte_buffer.h"
#include "formats/common/zstd_compression.h"
#include "recorder/events/event.h"
#include "recorder/support/expected.h"

namespace tracecorn::formats {

struct BintraceWriterOptions {
  bool compress_zstd = false;  // our extension: the events section as one zstd frame (compression byte 1)
  ZstdCompression zstd;  // level and worker threads, when compress_zstd
  std::string tool_version;    // metadata strings
  std::string tool_info;
  std::uint64_t unix_time = 0;  // the metadata date; 0 = now
  // Encoded events handed to the spool file at a time (flushed through zstd
  // and stdio): what a killed recording can lose at most.
  std::size_t spool_batch_bytes = 1 << 20;
};

class BintraceWriter final : public events::Sink {
 public:
  // Prepares to write `path` ("-" for stdout) and opens the events spool. Fails
  // (kUnsupported) when the arch has no binary trace description, (kIo) when
  // the spool cannot be created, (kEmulator) when the CPUID probe fails.
  static Expected<std::unique_ptr<BintraceWriter>> open(const std::string& path, const arch::ArchInfo& arch,
                                                        BintraceWriterOptions options = {});
  ~BintraceWriter() override;
  BintraceWriter(const BintraceWriter&) = delete;
  BintraceWriter& operator=(const BintraceWriter&) = delete;

  void begin(const events::TraceInfo& info) override;
  void on_event(const events::Event& event) override;
  void on_instructions(const events::InstructionRun& run) override;
  void flush() override;  // what is written so far reaches the file (events::Sink::flush)
  // Writes the file (sections, then the spooled events) and removes the spool.
  // Returns "" or "PATH: ...".
  std::string end(const events::TraceSummary& summary) override;
  bool failed() const override { return !error_.empty(); }

  std::uint64_t events_written() const { return event_count_; }  // instruction and other events
  std::uint64_t instructions_written() const { return instructions_; }
  std::uint64_t bytes_written() const { return bytes_written_; }   // the whole file
  std::uint64_t events_section_bytes() const { return events_payload_bytes_; }  // as stored (compressed or not)

 private:
  struct Spool;
  struct MemoryEntry {
    std::uint64_t address;
    std::span<const std::uint8_t> bytes;
  };
  struct RegisterEntry {
    std::uint16_t id;
    std::span<const std::uint8_t> value;  // empty for an operation
  };
  BintraceWriter(std::string path, const arch::ArchInfo& arch, BintraceWriterOptions options);
  void handle(const events::Event& event);
  void instruction_started(std::uint64_t address, std::uint32_t size);
  void finish_instruction(std::uint64_t next_pc);
  void finish_pending_fallthrough();
  // Updates the arch table with `changes` (and the pc), then stages the entries
  // for every declared register whose value changed.
  void stage_registers(std::span<const events::RegisterValue> changes, const std::uint64_t* new_pc);
  void stage_value(std::size_t slot, std::span<const std::uint8_t> value);
  // For the pc, sp or flags slot: the operations that take `old_number` to
  // `new_number` (pc += step, sp += step, flag bits set and cleared), as
  // register entries. False when none fits (the caller writes the value).
  bool add_operation_entries(std::size_t slot, std::uint64_t old_number, std::uint64_t new_number);
  void write_diff(std::span<const MemoryEntry> memory, std::span<const RegisterEntry> registers);
  void write_signal(const events::SignalEvent& signal);
  void resume_at(std::uint64_t pc);
  void give_code(const events::BlockEvent& block);
  void write_thread(events::ThreadId thread, const events::ThreadEvent& change);
  void write_process(const events::ProcessEvent& change);
  void write_other(std::string_view description, std::span<const MemoryEntry> memory,
                   std::span<const RegisterEntry> registers);
  void add_memory(std::vector<MemoryEntry>& out, std::uint64_t address, std::span<const std::uint8_t> bytes);
  // The events built so far to the spool: a full batch, a flush (all of it
  // to the file, flush()), or the last (the end of the zstd stream).
  enum class SpoolStep { kBatch, kFlush, kEnd };
  void flush_events(SpoolStep step);
  // Metadata, header and machine description (declaring `regions`).
  std::vector<std::uint8_t> build_head(std::span<const bintrace::MemoryRegion> regions, std::uint8_t compression) const;
  std::vector<bintrace::MemoryRegion> declared_regions() const;
  // Copies the initial memory that falls in [base, base + chunk.size()) into `chunk`.
  void fill_initial_memory(std::uint64_t base, std::span<std::uint8_t> chunk) const;
  // Writes PATH.head.part whole (through PATH.head.part.tmp, renamed); a write
  // error becomes error_, naming the head and the bytes written.
  void write_recovery_head();
  void remove_recovery_head();

  std::string path_;
  const arch::ArchInfo& arch_;
  const arch::BintraceMachine& machine_;
  BintraceWriterOptions options_;
  std::string error_;
  std::unique_ptr<Spool> spool_;
  std::string head_path_;  // PATH.head.part while it exists
  bool begun_ = false;
  bool in_place_ = false;  // stdout or a non-regular file (a device, a pipe): no PATH.part, no rename

  bintrace::MachineDescription description_;  // registers, operations, statics (regions at the end)
  std::unique_ptr<bintrace::MachineState> state_;
  std::vector<std::vector<std::uint8_t>> initial_values_;  // per declared register
  std::vector<events::InitialRegion> initial_memory_;
  std::vector<bintrace::MemoryRegion> mapped_later_;
  std::string tool_info_;

  // The arch table's values and how declared registers follow from them.
  std::vector<std::array<std::uint8_t, 16>> table_;
  std::vector<std::vector<std::uint16_t>> slots_of_table_;  // table index -> declared registers copying it
  std::vector<std::uint8_t> derived_input_;  // per table index: 1 when a derived register reads it
  std::vector<std::uint16_t> derived_slots_;
  std::vector<std::uint32_t> table_touched_;  // generation stamps, to visit each changed index once
  std::uint32_t generation_ = 0;
  std::size_t pc_slot_ = 0, sp_slot_ = 0, flags_slot_ = 0;
  std::uint16_t pc_table_index_ = 0;
  std::uint16_t first_pc_op_ = 0, first_flag_set_op_ = 0, first_flag_clear_op_ = 0, first_sp_op_ = 0;
  std::uint64_t flag_mask_ = 0;  // the flag bits that have operations

  bool gives_code_ = false;  // level regs: give_code
  std::vector<std::uint8_t> code_scratch_;

  // The instruction being assembled.
  bool pending_ = false;
  std::uint64_t pending_address_ = 0;
  std::uint32_t pending_size_ = 0;
  struct PendingWrite {
    std::uint64_t address;
    std::size_t offset, length;  // into pending_bytes_
  };
  std::vector<PendingWrite> pending_writes_;
  std::vector<std::uint8_t> pending_bytes_;
  std::vector<events::RegisterValue> pending_registers_;

  // Scratch, reused per event. The staged values and the register entries
  // are the first staged_count_ and register_count_ elements of vectors that
  // only grow (a few per instruction: no capacity check of push_back's).
  struct Staged {
    std::size_t slot;
    std::array<std::uint8_t, 64> value;
  };
  std::vector<Staged> staged_;
  std::size_t staged_count_ = 0;
  std::vector<RegisterEntry> register_entries_;
  std::size_t register_count_ = 0;
  std::span<const RegisterEntry> staged_entries() const { return {register_entries_.data(), register_count_}; }
  void add_register_entry(RegisterEntry entry) {
    if (register_count_ == register_entries_.size()) [[unlikely]]
      register_entries_.resize(register_count_ * 2 + 8);
    register_entries_[register_count_++] = entry;
  }
  std::vector<MemoryEntry> memory_entries_;
  ByteBuffer events_;  // encoded events not yet spooled

  std::uint64_t event_count_ = 0;
  std::uint64_t instructions_ = 0;
  std::uint64_t bytes_written_ = 0;
  std::uint64_t events_payload_bytes_ = 0;
};

}  // namespace tracecorn::formats
