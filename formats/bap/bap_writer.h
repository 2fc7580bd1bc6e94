// Role: the BAP frames trace writer (`tracecorn record --format frames`), an
// events::Sink that writes the container of bap_layout.h (version 3) with one
// protobuf `frame` (frames.proto) per instruction, syscall, module and fault.
// Who calls it: the recorder's drain thread (Sink interface), one thread at a
// time. With FramesWriterOptions::encoder_threads (2 and up) the writer starts
// its own threads at begin(): the caller's thread records each event into a
// chunk (the instructions decoded, their frames not encoded yet; the rarer
// frames encoded at once) with the register state the chunk starts from, the
// encoder threads
// encode chunks (formats/bap/instruction_frames.h), and the caller's thread
// writes them to the file in order (formats/common/ordered_jobs.h); at most
// two chunks per thread are in flight. The file's bytes are the same for
// every count of threads.
//
// What goes where:
// - begin(): the header (n = T = 0), the meta frame (FramesWriterOptions::meta;
//   without one, the program and arguments from TraceInfo and the host's
//   collect_host_meta()), then, when TraceInfo has the initial state, a
//   key_frame with every register's initial value (BAP ignores key frames; our
//   reader starts its register file from it).
// - std_frame per instruction event: address, thread id, the instruction's
//   bytes; operand_pre_list = every register the instruction reads (Capstone's
//   access list, plus its address registers, each as its full register:
//   al -> RAX) with its value before, then every memory read with the value
//   read; operand_post_list = every register it writes (Capstone's list plus
//   arch::ArchEngine::add_unlisted_writes) with its value after, then every memory
//   write with the value written. Register names are the arch table's, upper
//   case (RAX, RFLAGS, FS_BASE, XMM0); the program counter (RIP, read by
//   rip-relative operands and calls) has the instruction's address; bit_length is the register's or the
//   access's width; taint_info is no_taint. operand_usage: pre-list operands
//   are read (written false), post-list operands written (read false), because
//   BAP's frame plugin turns an operand flagged both into a read and a write of
//   the same value (plugin/frame_events.ml, of_operand_usage); index/base are
//   set on pre-list registers that form a memory operand's address. `mode` is
//   set where the architecture has two instruction sets (arm: "ARM" or
//   "Thumb", arch::AlternateInstructionSet::names), left out otherwise. Memory accesses the recorder could not tie to
//   an instruction (`mem` level, pc_known false) go to tracecorn_unattributed.
//   The frame is written when the instruction's events are complete (the next
//   instruction, block, syscall, fault, module, exit, gap, or the end). It is
//   encoded straight into the protobuf wire format (frames_wire.h: the bytes
//   the generated code would serialise, with no message built); the other
//   frames are built and serialised with the generated code.
// - syscall_frame per syscall, after the std_frame of its instruction (whose
//   post values are those before the kernel ran): address, thread id, number,
//   the six arguments; in our fields from 1000 the call stack, the result, and
//   the kernel's memory writes, mapping changes and register changes.
// - modload_frame per module loaded: path, first and last byte (inclusive), load bias (ours).
// - exception_frame per guest fault: exception_number = the signal, from_addr =
//   the pc, and (ours) the faulting address and description. A gap (events
//   lost) is an exception_frame with exception_number 0 and (ours)
//   tracecorn_lost_events and the reason.
// - Block events have no frame, nor exits with a status (the exit_group
//   syscall says it; dropped_events() counts them). A death by a signal is
//   the death note: an exception_frame with exception_number = the signal
//   and (ours) tracecorn_killed; our reader reports it
//   (FramesReader::killed_by_signal()) and produces no event.
// - The meta frame carries (ours) tracecorn_level, the TraceInfo's level.
// - end() of an interrupted recording (TraceSummary::interrupted: SIGINT or
//   SIGTERM) writes the interruption note as the last frame: an
//   exception_frame with exception_number = the signal of the exit event (0
//   when there was none) and (ours) tracecorn_interrupted and a description.
//   BAP's reader takes it as one more exception event; ours reports it
//   (FramesReader::interrupted()) and produces no event.
// - end(): the TOC (m = frames_per_toc_entry, ceil(n/m) entries, entry k =
//   offset of frame k*m), then n and T patched in the header.
//
// What each recording level gives (values are never guessed): register
// operands need the register's value, known from the initial state (recorder
// option capture_initial_state) and every change after it (levels regs and
// full); memory operands need the memory events (levels mem and full). So
// `full` gives complete frames; `regs` frames without memory operands; `mem`
// frames with memory operands only; `insns` frames with empty operand lists;
// `blocks` no std_frames. After a gap (lost events) a register is left out
// until its value is seen again. A recording restricted by code range or a
// start address misses the register changes made outside it, so its register
// values would be stale: the CLI refuses those options with this format.
//
// Output: needs a seekable file (n and T are patched at the end). Frames are
// staged and handed to the file (or its zstd stream) a MiB at a time (with
// encoder threads, a chunk at a time), and at flush() and end(); flush() waits
// for the chunks in flight and hands over every frame but the pending
// instruction's. Errors: nothing throws from on_event; the first write error
// is kept and returned by end(), naming the file. A killed recording leaves
// T = 0 and complete frames plus at most one partial frame (FramesReader reads
// it with a warning); the chunks still being encoded are lost with it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "arch/arch_info.h"
#include "formats/common/zstd_compression.h"
#include "formats/bap/bap_meta.h"
#include "recorder/events/event.h"
#include "recorder/support/expected.h"

namespace tracecorn::formats {

struct FramesWriterOptions {
  bool compress_zstd = false;  // one zstd stream (see bap_layout.h); BAP itself reads plain files only
  ZstdCompression zstd;  // level and worker threads, when compress_zstd
  std::uint64_t frames_per_toc_entry = 10000;  // m; must be > 0
  std::optional<FramesMeta> meta;              // what the meta frame says (else collected at begin())
  std::string tracer_version;                  // the collected meta frame's tracer version (without `meta`)
  // Threads that encode the frames (2 and up; 0 and 1: the caller's thread
  // encodes them). Every count writes the same bytes.
  unsigned encoder_threads = 0;
  // Bytes of recorded events that make one chunk for an encoder thread
  // (tests make it small to cut the trace in many places).
  std::size_t encoder_chunk_bytes = std::size_t{256} << 10;
};

class FramesWriter final : public events::Sink {
 public:
  // Opens `path` for writing. Fails with kIo (cannot create), kInvalidArgument
  // (not a seekable file, m = 0, zstd set-up), kUnsupported (the arch has no
  // bap-frames architecture id).
  static Expected<std::unique_ptr<FramesWriter>> open(const std::string& path, const arch::ArchInfo& arch,
                                                      FramesWriterOptions options = {});
  ~FramesWriter() override;
  FramesWriter(const FramesWriter&) = delete;
  FramesWriter& operator=(const FramesWriter&) = delete;

  void begin(const events::TraceInfo& info) override;
  void on_event(const events::Event& event) override;
  // A batch, and a block's instructions, without an Event or a virtual call each.
  void on_events(std::span<const events::Event> events) override;
  void on_instructions(const events::InstructionRun& run) override;
  void flush() override;  // what is written so far reaches the file (events::Sink::flush)
  // Writes the last frame and the TOC, patches n and T, closes the file.
  // Returns "" or "PATH: write error: ...".
  std::string end(const events::TraceSummary& summary) override;
  bool failed() const override;  // a write error is kept (end() returns it)

  std::uint64_t frames_written() const;  // n so far (the meta frame is not counted)
  std::uint64_t dropped_events() const;  // events with no frame (exits with a status; memory events with no instruction)
  std::uint64_t bytes_written() const;   // in the (decompressed) file

 private:
  struct State;
  explicit FramesWriter(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace tracecorn::formats
