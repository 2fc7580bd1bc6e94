// Role: the UCIR trace reader: opens a UCIR file (plain, one zstd stream, or
// usercorn's own snappy-framed flavour),
// validates its header and decodes it one frame at a time into the common event
// model (events::Event), for `tracecorn dump` and the round-trip tests.
// Who calls it: any one thread; one reader per thread (not thread safe).
//
// Untrusted input: every byte of the file is untrusted. Nothing here aborts or
// throws on bad input: errors come back as an Error with the byte offset (in
// the decompressed stream for a zstd file) and what was expected. A frame is
// parsed and validated whole before any of its events is produced.
//
// What the reader makes of each op:
//   OP_JMP          a BlockEvent (address, size; instruction_count = the frame's
//                   OP_STEPs after it; code bytes from the memory image, below)
//   OP_STEP         an InstructionEvent at the pc (the last OP_JMP's address plus
//                   the sizes stepped since), then the ops that preceded it in
//                   its frame: the instruction's memory, register and syscall events
//   OP_MEM_READ     a MemoryEvent; UCIR does not carry read values, so the value
//                   comes from the memory image (exact when every write was
//                   recorded: levels mem and full)
//   OP_MEM_WRITE    a MemoryEvent (value from the first 8 bytes)
//   OP_REG/SPREG    consecutive ones form one RegistersEvent
//   OP_SYSCALL      a SyscallEvent; nested OP_MEM_WRITE, OP_MEM_MAP/UNMAP/PROT,
//                   OP_REG/SPREG and our OP_CALLSTACK fill its effects. Its pc is
//                   the pc of the OP_STEP that follows it (without OP_STEPs, at
//                   blocks level, the block's address).
//   OP_SIGNAL       a SignalEvent, its nested OP_MEM_WRITE and OP_REG/SPREG the
//                   frame's bytes and the handler's registers (ours, 0x81)
//   OP_THREAD       a ThreadEvent whose thread is the op's tid (ours, 0x82)
//   OP_PROCESS      a ProcessEvent (ours, 0x83)
//   every event     its thread is its frame's pid (ucir_layout.h)
//   OP_EXIT         an ExitEvent; UCIR has no status, so the code is the first
//                   argument of the last exit/exit_group syscall (else 0).
//   first OP_KEYFRAME  TraceInfo's initial state (info()); later keyframes
//                   produce no events.
// The memory image: the reader replays every OP_MEM_WRITE (keyframes, frames,
// syscall effects) into pages it creates on first write, and keeps the mapped
// ranges (OP_MEM_MAP, OP_MEM_UNMAP), whose unwritten bytes are zero; code bytes
// and read values come from it, and are left empty (0) outside every mapping.
// Ops left before the end of a frame with no OP_STEP after them are produced at
// the frame's end, memory events marked pc_known = false.
// Invalid: an unknown op, an op not allowed where it is (a frame inside a frame
// or inside OP_SYSCALL, OP_JMP/STEP/EXIT inside OP_SYSCALL), a register number
// the architecture does not have, an unknown header. A file that ends inside a
// frame (a killed recording, or an op_count that overruns the file) is read up
// to its last complete frame and warning() says where it ends.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "arch/arch_info.h"
#include "arch/instruction_decoder.h"
#include "recorder/events/event.h"
#include "recorder/support/expected.h"

namespace tracecorn::formats {

class ByteSource;  // formats/common/byte_stream.h

struct UcirHeader {
  std::uint32_t version = 0;
  bool usercorn_flavour = false;  // usercorn's own files: version 1 written big endian, a snappy framed
                                  // stream after the header, u64 sizes in MAP/UNMAP/PROT, u32 syscall numbers
  bool zstd = false;              // the file was one zstd stream
  std::string arch;
  std::string os;
  std::uint8_t code_order = 0;
  std::uint8_t data_order = 0;
};

class UcirReader {
 public:
  using EventCallback = std::function<void(const events::Event&)>;

  // Opens `path` (plain, or decompressing a zstd file as it is read: the file
  // is never held whole in memory; frames are), validates the header and the
  // first keyframe. Fails with kNotFound/kIo (the file), kBadFormat
  // (bad magic or header field), kTruncated (shorter than the header),
  // kUnsupported (an unknown architecture). Reads both flavours: the spec's
  // (version 0, little endian) and usercorn's own (version 1 big endian,
  // snappy framed; its ops' other numbers are taken as little endian, as the
  // spec says, the notes naming only the version as big endian).
  static Expected<std::unique_ptr<UcirReader>> open(const std::string& path);
  // The same from bytes in memory; `source` names them in errors.
  static Expected<std::unique_ptr<UcirReader>> from_bytes(std::vector<std::uint8_t> bytes, std::string source);

  // Whether UCIR can carry events of `kind` (faults, module loads and gaps have no op).
  static bool can_carry(events::EventKind kind);

  ~UcirReader();
  UcirReader(const UcirReader&) = delete;
  UcirReader& operator=(const UcirReader&) = delete;

  const UcirHeader& header() const { return header_; }
  const arch::ArchInfo& arch() const { return *arch_; }
  // Arch, level "" (UCIR does not say), and the initial state from the first keyframe.
  const events::TraceInfo& info() const { return info_; }

  // Decodes the next frame and calls `on_event` for each of its events (valid
  // during the call only). Returns true when a frame was read, false at the end
  // of the trace (see warning() for a truncated file), or an Error naming the
  // offset. After an error, further calls return false.
  Expected<bool> next(const EventCallback& on_event);

  // Reads every remaining frame into `sink`: begin(info()), the events, end()
  // (formats/common/read_all.h, the same for every reader). Returns an error
  // from the file or the sink's end() error (as kIo).
  Status read_all(events::Sink& sink);

  // "" or why the trace ended before its natural end (where, and what was missing).
  const std::string& warning() const { return warning_; }
  // Whether the frames read so far end with the interruption note
  // (ucir_layout.h: the recording was stopped by SIGINT or SIGTERM and
  // finished). A file cut short (warning()) is not marked, nor is read_all()'s
  // summary.
  bool interrupted() const { return interrupted_; }
  std::uint64_t events_read() const { return next_sequence_; }
  // Bytes of the file read so far (compressed bytes for a zstd file), for progress displays.
  std::uint64_t file_bytes_read() const;
  std::uint64_t keyframes_read() const { return keyframes_; }

 private:
  struct Op;
 public:
  using ByteSource = formats::ByteSource;  // where bytes come from (a file, memory, a zstd or snappy stream)

 private:
  static constexpr std::size_t kReadChunk = 1 << 20;  // bytes pulled from the stream at a time
  UcirReader(std::unique_ptr<ByteSource> stream, std::string source);
  // A block's instruction count when the file has no OP_STEPs (blocks level):
  // decoded from the block's bytes in the memory image (0 if they do not decode).
  // Cached per block address (and checked against the block's bytes).
  std::uint32_t count_instructions(std::uint64_t address, std::uint8_t mode, std::span<const std::uint8_t> code);
  std::uint32_t decode_instruction_count(std::uint64_t address, std::uint8_t mode, std::span<const std::uint8_t> code);
  struct CountedBlock {
    std::vector<std::uint8_t> code;
    std::uint32_t count = 0;
    bool counted = false;
  };
  std::unordered_map<std::uint64_t, CountedBlock> instruction_counts_;
  std::unique_ptr<arch::InstructionDecoder> decoder_;  // opened on first use
  std::uint8_t mode_ = 0;          // the current block's instruction set (arm: 1 = Thumb)
  static Expected<std::unique_ptr<UcirReader>> start(std::unique_ptr<ByteSource> stream, std::string source);
  // Drops the consumed bytes and appends at least `want` more when the stream has
  // them; returns false when nothing could be added (the end, or a damaged stream).
  bool refill(std::size_t want);
  Status parse_header();
  Error error_at(std::uint64_t offset, std::string message) const;
  // next()'s steps: more bytes for a frame cut short by the buffer (or the
  // trace's end), then the whole frame taken.
  bool read_more_or_end(std::uint8_t op, std::uint64_t at, const std::string& what);
  void note_missing_end();
  void take_frame(std::uint8_t op, const EventCallback& on_event);
  void apply_keyframe(const std::vector<Op>& ops);
  // A frame's ops as events, one op kind a step (ucir_reader.cpp).
  void produce(const std::vector<Op>& ops, const EventCallback& on_event);
  // One event to `on_event`; a template, so that each payload is built in the event.
  template <typename Payload>
  void emit(events::EventKind kind, Payload&& payload, const EventCallback& on_event);
  // `code_given`: the frame opened with the block's code (is_code_of_block).
  void produce_block(const std::vector<Op>& ops, std::size_t at, const EventCallback& on_event, bool code_given);
  bool is_code_of_block(const Op& write, const Op& jump) const;
  void produce_step(const Op& op, const EventCallback& on_event);
  void produce_pending(bool attributed, const EventCallback& on_event);
  void produce_memory(const Op& op, bool attributed, const EventCallback& on_event);
  std::size_t produce_registers(std::size_t first, const EventCallback& on_event);
  struct Effects;
  void collect_syscall_effects(const Op& op, Effects& effects);
  std::uint64_t syscall_number(const Op& op) const;
  void produce_syscall(const Op& op, const EventCallback& on_event);
  void collect_writes_and_registers(const Op& op, Effects& effects);
  void produce_signal(const Op& op, const EventCallback& on_event);
  void produce_thread(const Op& op, const EventCallback& on_event);

  std::unique_ptr<ByteSource> stream_;
  bool stream_done_ = false;
  std::vector<std::uint8_t> bytes_;  // a window on the (decompressed) stream: [base_, base_ + size)
  std::uint64_t base_ = 0;           // the stream offset of bytes_[0]
  std::string source_;
  UcirHeader header_;
  const arch::ArchInfo* arch_ = nullptr;
  std::vector<std::int32_t> register_by_uc_id_;  // arch table index per Unicorn register id, -1 for none
  std::vector<Op> frame_ops_;  // the frame being decoded
  struct Scratch;
  std::unique_ptr<Scratch> scratch_;  // produce()'s buffers, reused
  events::TraceInfo info_;
  std::size_t position_ = 0;  // in bytes_
  bool seen_keyframe_ = false;
  bool done_ = false;
  std::string warning_;
  bool interrupted_ = false;
  bool ended_ = false;  // the last frame read ends the file (the end note, or an older file's last frame)
  std::uint64_t pc_ = 0;
  std::uint32_t index_in_block_ = 0;  // the next OP_STEP's index in its block (0 at each frame and OP_JMP)
  std::uint64_t frame_pid_ = 0;  // the current frame's pid: its events' thread (ucir_layout.h)
  // Each other thread's pc and instruction set where its last frame left
  // them: a thread switched back in goes on from there (its syscall's pc).
  struct ThreadPlace {
    std::uint64_t pc = 0;
    std::uint8_t mode = 0;
    std::uint64_t last_step_pc = 0;
  };
  std::unordered_map<std::uint64_t, ThreadPlace> thread_places_;
  std::uint64_t last_step_pc_ = 0;  // the address of the frame thread's last OP_STEP (0: none yet)
  // Set when a thread that stepped before comes back, until its first
  // OP_STEP or OP_JMP: a syscall it was blocked in ends there, and its pc is
  // that thread's last step (the syscall instruction), not pc_.
  std::optional<std::uint64_t> switched_in_step_pc_;
  void switch_frame_thread(std::uint64_t pid);
  std::uint64_t next_sequence_ = 0;
  std::int32_t exit_code_ = 0;
  std::uint64_t keyframes_ = 0;
  // The memory image (page number -> bytes and which bytes are known).
  struct Page;
  std::unordered_map<std::uint64_t, std::unique_ptr<Page>> pages_;
  mutable std::uint64_t last_page_number_ = 0;  // page()'s: the last page found
  mutable Page* last_page_ = nullptr;
  const Page* page(std::uint64_t number) const;
  Page& page_to_write(std::uint64_t number);
  std::map<std::uint64_t, std::uint64_t> mapped_;  // mapped ranges, start -> end (exclusive), disjoint
  void image_unmap(std::uint64_t address, std::uint64_t size);
  void image_write(std::uint64_t address, std::span<const std::uint8_t> bytes);
  void image_map(std::uint64_t address, std::uint64_t size);
  // Fills `out` with [address, address+size) when every byte is known; else clears it.
  void image_read(std::uint64_t address, std::uint64_t size, std::vector<std::uint8_t>& out) const;
};

}  // namespace tracecorn::formats
