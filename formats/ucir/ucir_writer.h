// Role: the UCIR trace writer (`tracecorn record --format ucir`), an events::Sink
// that writes exactly the spec flavour of ucir_layout.h, optionally compressed
// as one zstd stream.
// Who calls it: the recorder's drain thread (Sink interface), one thread at a time.
//
// What goes where:
// - begin(): the header, then the first OP_KEYFRAME from TraceInfo's initial
//   state: per region an OP_MEM_MAP (prot, file offset and bytes from the file,
//   desc = region name, file = backing path; 0 and "" for anonymous memory) and
//   an OP_MEM_WRITE of its bytes with leading
//   and trailing zero bytes trimmed (as usercorn does); then every register
//   (OP_REG for registers of at most 8 bytes, OP_SPREG for wider ones).
// - Each block event opens one OP_FRAME: OP_JMP (arm: the address's bit 0 set
//   for a Thumb block, as a BX target says), then per instruction its
//   memory ops, its register ops, then OP_STEP (an instruction's events follow
//   its instruction event, so each OP_STEP is written when the next instruction,
//   block, or the end arrives). What the level does not record is absent
//   (blocks: OP_JMP only). Below the mem level, a block read from memory
//   mapped writable (BlockEvent::from_writable_memory: maybe a JIT's code,
//   whose stores the trace does not hold) is preceded in its frame by an
//   OP_MEM_WRITE of exactly its bytes, when they are not what was last written
//   there: UCIR readers decode code from the memory they rebuild, and
//   UcirReader takes such a write (a frame's first op, the OP_JMP's range) for
//   code, not an event. A syscall becomes an OP_SYSCALL inside the current
//   frame, before the OP_STEP of the syscall instruction, with the kernel's
//   effects as nested ops (mapping changes, then memory writes, then
//   registers) and, unless `strict`, our OP_CALLSTACK.
// - Unless `strict`, a signal delivery becomes our OP_SIGNAL and a thread
//   change our OP_THREAD in the current frame, with their effects as nested
//   ops. A frame holds one thread's events; its pid is that thread's id
//   (ucir_layout.h).
// - Every `keyframe_interval` instructions, at a block boundary, an OP_KEYFRAME
//   with the memory written since the previous keyframe and, at levels that
//   record registers (regs, full), every register's last value.
// - An exit event writes OP_EXIT in the current frame.
// - end() of an interrupted recording (TraceSummary::interrupted: SIGINT or
//   SIGTERM) writes the interruption note after the last frame: an OP_FRAME
//   whose only op is OP_NOP (ucir_layout.h), which every UCIR reader skips.
// - end() always writes the end note last: an OP_FRAME of no ops
//   (ucir_layout.h), by which UcirReader tells a whole file from one cut
//   exactly between two frames.
// - Events UCIR has no op for (faults, gaps, module loads) are dropped and
//   counted (dropped_events()); UcirReader::can_carry() names the kinds kept.
// Frames are buffered whole (op_count comes first), so a killed recording
// leaves a file of complete frames plus at most one partial frame.
// Errors: nothing throws from on_event; the first write error (disk full) is
// kept and returned by end(), naming the file.
#pragma once

#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "arch/arch_info.h"
#include "formats/common/byte_buffer.h"
#include "formats/common/zstd_compression.h"
#include "recorder/events/event.h"
#include "recorder/support/expected.h"

namespace tracecorn::formats {

struct UcirWriterOptions {
  bool compress_zstd = false;                  // wrap the whole file in one zstd stream
  ZstdCompression zstd;  // level and worker threads, when compress_zstd
  bool strict = false;                         // write only the spec's ops (no OP_CALLSTACK, OP_SIGNAL, OP_THREAD)
  std::uint64_t keyframe_interval = 1000000;   // instructions between keyframes; 0 = only the first
  std::string os = "linux";
};

class UcirWriter final : public events::Sink {
 public:
  // Opens `path` for writing ("-" for stdout). Fails (kIo) when it cannot be
  // created, (kUnsupported) when the arch has no UCIR name.
  static Expected<std::unique_ptr<UcirWriter>> open(const std::string& path, const arch::ArchInfo& arch,
                                                    UcirWriterOptions options = {});
  ~UcirWriter() override;
  UcirWriter(const UcirWriter&) = delete;
  UcirWriter& operator=(const UcirWriter&) = delete;

  void begin(const events::TraceInfo& info) override;
  void on_event(const events::Event& event) override;
  void on_instructions(const events::InstructionRun& run) override;
  void flush() override;  // what is written so far reaches the file (events::Sink::flush)
  // Flushes the last frame, ends the zstd stream, closes the file. Returns "" or
  // "PATH: write error: ...".
  std::string end(const events::TraceSummary& summary) override;
  bool failed() const override { return !error_.empty(); }

  std::uint64_t dropped_events() const { return dropped_; }
  std::uint64_t bytes_written() const { return bytes_written_; }

 private:
  class Output;
  UcirWriter(std::unique_ptr<Output> output, std::string path, const arch::ArchInfo& arch, UcirWriterOptions options);
  void handle(const events::Event& event);
  void finish_step();
  void flush_frame();
  std::uint32_t put_effects(std::vector<std::uint8_t>& nested, std::span<const events::MemoryWriteEffect> writes,
                            std::span<const events::RegisterValue> registers);
  void write_signal(const events::SignalEvent& signal);
  void write_thread(events::ThreadId thread, const events::ThreadEvent& change);
  void write_process(const events::ProcessEvent& change);
  void write_frame_header(std::uint8_t op, std::uint32_t op_count);
  void write_keyframe_if_due();
  template <typename Out>  // ByteBuffer or std::vector<std::uint8_t>
  void write_register(Out& out, const events::RegisterValue& value) const;
  void note_written(std::uint64_t address, std::span<const std::uint8_t> bytes);
  void forget_written(std::uint64_t address, std::uint64_t size);
  void give_written_code(const events::BlockEvent& block);
  void forget_given_code(std::uint64_t address, std::uint64_t size);
  void track_registers(std::span<const events::RegisterValue> values);
  void write_bytes(std::span<const std::uint8_t> bytes);

  std::unique_ptr<Output> output_;
  std::string path_;
  const arch::ArchInfo& arch_;
  UcirWriterOptions options_;
  std::string error_;  // the first write error; reported by end()
  bool track_registers_in_keyframes_ = false;
  // Below the mem level: the bytes last written ahead of each block read from
  // writable memory (give_written_code), by block address; an entry goes when
  // the reader's memory changes under it.
  bool gives_written_code_ = false;
  std::map<std::uint64_t, std::vector<std::uint8_t>> given_code_;

  // The frame being built.
  ByteBuffer frame_;  // ops only; the frame header is written in flush_frame
  std::vector<std::uint8_t> frame_header_;  // reused for every frame header
  std::uint32_t frame_ops_ = 0;
  bool frame_open_ = false;
  int pending_step_ = -1;  // the size of the instruction whose OP_STEP is due, or -1

  // State for periodic keyframes.
  std::uint64_t instructions_since_keyframe_ = 0;
  std::vector<events::RegisterValue> registers_;  // last known value of each register (arch table order)
  static constexpr std::uint64_t kPageBytes = 4096;
  struct DirtyPage {
    std::vector<std::uint8_t> bytes = std::vector<std::uint8_t>(kPageBytes);
    std::vector<bool> dirty = std::vector<bool>(kPageBytes);
  };
  std::unordered_map<std::uint64_t, DirtyPage> dirty_pages_;  // page number -> bytes written since the last keyframe

  std::uint64_t dropped_ = 0;
  std::uint64_t bytes_written_ = 0;
  std::uint64_t pid_ = 1;  // the keyframes' pid: TraceInfo::process_id, or ucir::kPid when it is 0
  std::uint64_t frame_pid_ = 1;  // the frames' pid: the running thread (pid_ until a switch)
};

}  // namespace tracecorn::formats
