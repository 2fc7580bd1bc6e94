// Role: the BAP frames trace reader: opens a frames file (plain or one zstd
// stream; container versions 1, 2 and 3; our TOC layout and libtrace's),
// validates its header and meta frame, and decodes it one frame at a time into
// the common event model, for `tracecorn dump` and the round-trip tests.
// Who calls it: any one thread; one reader per thread (not thread safe).
//
// Untrusted input: every byte is untrusted. Nothing here aborts or throws on
// bad input: errors come back as an Error with the byte offset (in the
// decompressed stream for a zstd file) and what was expected. Frames are read
// sequentially (each a u64 size and a protobuf `frame`) up to T, without trusting
// the TOC or n; the TOC is only used by seek_frame(), and only when it is
// consistent (m > 0, an entry count matching one of the two layouts of
// bap_layout.h, entries increasing inside the frames, each pointing at a frame
// that parses). A file whose T is 0 (a recording that did not finish), or that
// ends inside a frame, is read up to its last complete frame and warning()
// says where it ends; a header n that differs from the frames found is a warning.
//
// What the reader makes of each frame (the inverse of FramesWriter):
//   std_frame     an InstructionEvent (index_in_block 0: frames have no
//                 blocks), MemoryRead events for the pre-list memory operands,
//                 MemoryWrite events for the post-list ones (reads before
//                 writes: the order of a rep string instruction's interleaved
//                 accesses is not carried), then one RegistersEvent with the
//                 post-list registers whose value differs from the reader's
//                 register file (started from the key frame), then
//                 tracecorn_unattributed accesses (pc_known false). Memory
//                 operands wider than 8 bytes (other writers) become 8-byte events.
//   syscall_frame a SyscallEvent (name from the arch's table; result, effects
//                 and call stack from our fields, empty when absent)
//   exception_frame  a FaultEvent (signal = exception_number, pc = from_addr),
//                 or a GapEvent when tracecorn_lost_events is set
//   modload_frame a ModuleLoadEvent (end = high_address + 1)
//   key_frame     no event: the first one before any instruction is TraceInfo's
//                 initial registers; every one updates the register file
//   taint_intro_frame  no event
// Register names not in the architecture's table (another tracer's EAX, CF...)
// are skipped. Exit events and blocks have no frame and are never produced.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "arch/arch_info.h"
#include "formats/bap/bap_meta.h"
#include "recorder/events/event.h"
#include "recorder/support/expected.h"

namespace tracecorn::formats {

class ByteSource;  // formats/common/byte_stream.h

struct FramesHeader {
  std::uint64_t version = 0;
  std::uint64_t architecture = 0;  // bap-frames' enum
  std::uint64_t machine = 0;       // BFD mach
  std::uint64_t frame_count = 0;   // n as the header says (0: not finished)
  std::uint64_t toc_offset = 0;    // T as the header says (0: not finished)
  bool zstd = false;
  bool has_meta = false;           // version >= 2
  std::uint64_t first_frame_offset = 0;
  // The TOC, when it could be read and checked (plain files and memory only).
  enum class TocLayout : std::uint8_t { kNone, kOurs, kLibtrace } toc_layout = TocLayout::kNone;
  std::uint64_t frames_per_toc_entry = 0;  // m
  std::vector<std::uint64_t> toc;
};

class FramesReader {
 public:
  using EventCallback = std::function<void(const events::Event&)>;

  // Opens `path` (plain or zstd, decompressed as it is read), validates the
  // header, the meta frame and the TOC, and reads the first key frame. Fails with
  // kNotFound/kIo (the file), kTruncated (shorter than the header or the meta
  // frame), kBadFormat (magic, version, sizes, a meta frame that does not parse),
  // kUnsupported (an architecture/machine pair tracecorn has no table for).
  static Expected<std::unique_ptr<FramesReader>> open(const std::string& path);
  // The same from bytes in memory; `source` names them in errors.
  static Expected<std::unique_ptr<FramesReader>> from_bytes(std::vector<std::uint8_t> bytes, std::string source);
  // Whether `head` (a file's first 8 or more bytes, decompressed) starts a frames trace.
  static bool recognizes(std::span<const std::uint8_t> head);
  // Whether frames carry events of `kind` (blocks and exits have no frame).
  static bool can_carry(events::EventKind kind);

  ~FramesReader();
  FramesReader(const FramesReader&) = delete;
  FramesReader& operator=(const FramesReader&) = delete;

  const FramesHeader& header() const { return header_; }
  const FramesMeta& meta() const { return meta_; }
  const arch::ArchInfo& arch() const { return *arch_; }
  // The header names an architecture by frame_architecture and frame_machine
  // only, with no byte order: mips and mipsel share 8 and 32 (BAP's own reader
  // notes the gap and reads them as big-endian mips). arch() is then the last
  // match of arch::all_archs(); whoever knows better (the replayer, from the
  // program) calls this with the architecture to read as. Returns false, and
  // changes nothing, when `candidate` has other ids than the header's.
  bool resolve_arch(const arch::ArchInfo& candidate);
  // Arch, program, argv and level from the meta frame (level "" in a trace
  // of another tracer's), the initial registers from the first key frame.
  const events::TraceInfo& info() const { return info_; }

  // Decodes the next frame and calls `on_event` for each of its events (valid
  // during the call only). Returns true when a frame was read, false at the end
  // (see warning()), or an Error naming the offset; after an error, false.
  Expected<bool> next(const EventCallback& on_event);

  // Moves to frame `index` (0 = the first after the meta frame): through the TOC
  // when it is consistent and the source can seek, else by reading forward.
  // The register file is forgotten (values are relearnt from the frames). Fails
  // with kInvalidArgument (beyond the last frame), kUnsupported (backwards in a
  // compressed stream), or an error from the frames skipped.
  Status seek_frame(std::uint64_t index);

  // Reads every remaining frame into `sink`: begin(info()), the events, end()
  // (formats/common/read_all.h, the same for every reader).
  Status read_all(events::Sink& sink);

  const std::string& warning() const { return warning_; }
  // Whether a frame read so far is the interruption note (bap_writer.h: the
  // recording was stopped by SIGINT or SIGTERM and finished). A file cut short
  // (warning()) is not marked, nor is read_all()'s summary.
  bool interrupted() const { return interrupted_; }
  // The signal of the death note read so far (bap_writer.h: the process was
  // killed by it), else 0.
  std::uint32_t killed_by_signal() const { return killed_by_signal_; }
  std::uint64_t frames_read() const { return frame_index_; }  // index of the next frame
  std::uint64_t events_read() const { return next_sequence_; }
  // Bytes of the file read so far (compressed bytes for a zstd file), for progress displays.
  std::uint64_t file_bytes_read() const;
  bool toc_used() const { return toc_used_; }  // the last seek_frame() went through the TOC

 private:
  struct Parsed;
  // Reads registers by `arch`'s table from now on.
  void use_arch(const arch::ArchInfo& arch);
  FramesReader(std::unique_ptr<ByteSource> stream, std::string source);
  static Expected<std::unique_ptr<FramesReader>> start(std::unique_ptr<ByteSource> stream, std::string source);
  Status parse_header();
  // parse_header()'s steps: the meta frame, then T (and the TOC there).
  Status read_meta_frame(std::optional<std::uint64_t> total);
  Status use_toc_offset(std::optional<std::uint64_t> total);
  // A kTruncated error at offset_, naming `what` and the stream's problem.
  Error truncated(const std::string& what) const;
  void check_toc();
  // Reads exactly `n` bytes into `out`; false when the stream ends first.
  bool read_exact(std::vector<std::uint8_t>& out, std::uint64_t n);
  // Moves a seekable source to `offset` (dropping carried bytes); false when it cannot.
  bool seek(std::uint64_t offset);
  // Reads the next frame into parsed_; true when one was read, false at the end.
  Expected<bool> read_frame();
  void note(std::string text);
  Error error_at(std::uint64_t offset, std::string message) const;
  // The frame in parsed_ as events, a step for each kind of frame (FrameEvents, bap_reader.cpp).
  Status produce(const EventCallback& on_event);
  class FrameEvents;
  int register_index(const std::string& name) const;

  std::unique_ptr<ByteSource> stream_;
  std::string source_;
  FramesHeader header_;
  FramesMeta meta_;
  const arch::ArchInfo* arch_ = nullptr;
  events::TraceInfo info_;
  std::unordered_map<std::string, std::uint16_t> register_by_name_;  // upper case -> arch index
  std::unique_ptr<Parsed> parsed_;
  bool have_parsed_ = false;  // parsed_ holds a frame not yet produced (the first, when not a key frame)
  std::vector<std::uint8_t> scratch_;
  std::vector<std::uint8_t> carry_;  // bytes read from the source beyond the last read_exact()
  std::size_t carry_pos_ = 0;
  std::uint64_t offset_ = 0;       // in the (decompressed) stream
  std::uint64_t end_offset_ = 0;   // where the frames end: T, or ~0 when unknown
  std::uint64_t frame_index_ = 0;  // frames consumed
  std::uint64_t next_sequence_ = 0;
  bool done_ = false;
  bool seen_instruction_ = false;
  bool toc_used_ = false;
  std::string warning_;
  bool interrupted_ = false;
  std::uint32_t killed_by_signal_ = 0;
  std::vector<events::RegisterValue> registers_;
  std::vector<bool> known_;
};

}  // namespace tracecorn::formats
