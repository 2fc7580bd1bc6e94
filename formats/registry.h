// Role: the format registry: one descriptor per trace format tracecorn writes
// or reads, so that nothing outside formats/ knows a format's magic, what it can
// carry, or how its reader and writer are built. The CLI (record, dump, stat,
// convert, replay), the trace tools and the trace index (recorder/replay/) and
// the tests all go through it:
//   - detection: which format a file's first bytes (decompressed when the file
//     is one zstd stream) belong to, never the file's name (detect_format());
//   - capabilities: what a format can carry (Capabilities), so that a consumer
//     never mistakes a missing value for a zero;
//   - the reader factory: FormatReader, one interface over every format's own
//     reader (open_trace());
//   - the one writer factory: open_writer() builds every format's writer from a
//     WriterRequest, with the options and the requirements each format has
//     (binary formats refuse a terminal, bintrace needs per-instruction
//     registers, only some formats compress), and the same metadata wherever it
//     is called from (the tool version in bintrace's metadata and in the BAP
//     meta frame).
// The formats themselves stay in their folders (formats/<name>/: layout,
// reader, writer, fuzzer); each folder's <name>_format.cpp holds its
// descriptor and its FormatReader adapter. The exports (drcov coverage, Chrome
// trace-event JSON) are formats too, written only.
// Who calls it: any thread; the registry is immutable (built on first use,
// thread-safe static initialisation). A FormatReader is used by one thread at a
// time (not thread safe).
// Untrusted input: every byte of a trace file; errors come back as Error values
// with the file, the byte offset and the reason; nothing here aborts or throws
// on bad input.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "arch/arch_info.h"
#include "formats/common/zstd_compression.h"
#include "formats/address_namer.h"
#include "recorder/events/event.h"
#include "recorder/support/expected.h"

namespace tracecorn::formats {

// The formats tracecorn reads back (and writes).
enum class TraceFormat : std::uint8_t { kUcir, kFrames, kBintrace };

// What a format can and cannot carry (per format; the level a trace was
// recorded at narrows it further: see replay::TraceIndex::kinds_seen()).
struct Capabilities {
  bool kinds[events::kEventKindCount] = {};                  // indexed by EventKind: whether events of that kind can appear
  bool initial_memory = false;          // the trace opens with every mapped byte (UCIR keyframe, bintrace)
  bool initial_registers = false;       // the trace opens with every register
  bool memory_read_values = false;      // read values are recorded (UCIR's are rebuilt from its memory image: false)
  bool exit_code = false;               // exit events carry the status
  bool syscall_effects = false;         // syscalls carry their memory, mapping and register effects
  bool syscall_pc = false;              // syscalls carry the trapping pc (UCIR: from the next OP_STEP)
  bool fault_events = false;
  std::vector<std::string> cannot_carry;  // one line each, for users ("blocks", "memory reads"...)
  bool carries(events::EventKind kind) const { return kinds[static_cast<std::size_t>(kind)]; }
};

// The kinds `carries` accepts as a Capabilities table ("X events" in
// cannot_carry for each other kind); the caller fills in the rest.
Capabilities capabilities_of_kinds(bool (*carries)(events::EventKind));

// One format's reader behind one interface: what replay::TraceReader wraps.
// Events come out in order in the common event model, exactly as the format's
// own reader produces them.
class FormatReader {
 public:
  using EventCallback = std::function<void(const events::Event&)>;
  virtual ~FormatReader() = default;

  virtual const arch::ArchInfo& arch() const = 0;
  // Whether the trace may be of `candidate` (see replay::TraceReader::resolve_arch).
  virtual bool resolve_arch(const arch::ArchInfo& candidate) { return candidate.name == arch().name; }
  virtual const events::TraceInfo& info() const = 0;
  // The guest's environment when the format records it, else empty.
  virtual std::vector<std::string> environment() const { return {}; }
  // One line about the file (version, flavour, compression), for dump and stat.
  virtual std::string describe() const = 0;
  // The next record's events; true when one was read, false at the end, or an
  // Error with the byte offset.
  virtual Expected<bool> next(const EventCallback& on_event) = 0;
  // "" or why the file ended before its natural end (or, for some formats,
  // something else worth saying: see ended_early()).
  virtual std::string warning() const = 0;
  // Whether the records read so far include the format's interruption note.
  virtual bool interrupted() const = 0;
  // The signal that killed the process where the format says so in a note
  // instead of an exit event (BAP frames' death note), once read; else 0.
  virtual std::uint32_t killed_by_signal() const { return 0; }
  // "" or why the file ended before its natural end.
  virtual std::string ended_early() const { return warning(); }
  // Bytes of the file read so far (compressed bytes for a zstd file).
  virtual std::uint64_t bytes_read() const = 0;
};

// What a writer is asked for. Every field but `path` and `arch` is optional;
// the ones a format has no use for are ignored.
struct WriterRequest {
  std::string path;  // "-" for standard output where the format allows it
  const arch::ArchInfo* arch = nullptr;
  bool compress_zstd = false;
  ZstdCompression zstd;      // its level and worker threads
  // Threads that encode, for the formats that can encode on several (BAP
  // frames): 2 and up; 0 and 1 encode on the writer's caller's thread. Any
  // count writes the same bytes.
  int encoder_threads = 0;
  bool ucir_strict = false;  // UCIR: only the spec's ops (no OP_CALLSTACK)
  // BAP frames' meta frame: the tracer's command line and environment and the
  // program's; when `program` is empty the writer takes the program and its
  // arguments from the trace it is given (a conversion).
  std::vector<std::string> tracer_args, tracer_envp;
  std::string program;
  std::vector<std::string> program_args, program_envp;
  // Text: names the addresses of syscall stacks (the CLI's symbolizer).
  std::unique_ptr<AddressNamer> address_namer;
  // Exports (drcov, chrome): whether the trace read has instruction events,
  // what names it when it has no program, and where end() puts how many
  // records it wrote (blocks, trace events).
  bool source_has_instructions = true;
  std::string source_name;
  std::uint64_t* records_written = nullptr;
};

struct FormatDescriptor {
  std::string_view name;                 // the --format word: "ucir", "frames", "bintrace", "text", "null", "drcov", "chrome", "tenet"
  std::optional<TraceFormat> readable = std::nullopt;  // set for the formats tracecorn reads back
  // Set for binary formats that can write to standard output, which refuse it
  // when it is a terminal ("UCIR is binary: give -o FILE").
  std::string_view binary_name = {};
  bool compressible = false;             // --compress zstd
  bool needs_registers = false;          // needs per-instruction registers (levels regs and full)
  // Whether the format's first bytes (decompressed) are `head`; null when not read back.
  bool (*detect)(std::span<const std::uint8_t> head) = nullptr;
  // What the format carries; null when not read back.
  const Capabilities& (*capabilities)() = nullptr;
  // Opens a file of this format; null when not read back.
  Expected<std::unique_ptr<FormatReader>> (*open_reader)(const std::string& path) = nullptr;
  // Builds the writer (the request's options are moved from).
  Expected<std::unique_ptr<events::Sink>> (*open_writer)(WriterRequest& request) = nullptr;
  // For a `path` that does not exist: why, when this format's writer leaves
  // something else behind (a killed binary trace recording's spool); else "".
  std::string (*explain_missing)(const std::string& path) = nullptr;
};

// Each format's descriptor, defined beside its reader and writer
// (formats/<name>/<name>_format.cpp); all_formats() lists them.
const FormatDescriptor& ucir_format();
const FormatDescriptor& frames_format();
const FormatDescriptor& bintrace_format();
const FormatDescriptor& text_format();
const FormatDescriptor& null_format();
const FormatDescriptor& drcov_format();
const FormatDescriptor& chrome_format();
const FormatDescriptor& tenet_format();

// Every format, in a fixed order (readable ones first, by TraceFormat).
std::span<const FormatDescriptor> all_formats();
// The descriptor of a readable format.
const FormatDescriptor& descriptor(TraceFormat format);
// The descriptor named `name`, or null.
const FormatDescriptor* find_format(std::string_view name);
// "ucir", "frames", "bintrace".
std::string_view format_name(TraceFormat format);
// The readable format whose first bytes (decompressed) are `head`, or null.
const FormatDescriptor* detect_format(std::span<const std::uint8_t> head);

// A reader chosen by the file's content.
struct OpenedTrace {
  TraceFormat format;
  std::unique_ptr<FormatReader> reader;
};
// Opens `path` and chooses the reader by content. Fails with kNotFound/kIo (the
// file; a missing binary trace whose recording left its spool says so),
// kBadFormat ("not a trace": the first bytes match no format, with what they
// were), or the format reader's own errors (offset and reason).
Expected<OpenedTrace> open_trace(const std::string& path);

// The one writer factory: the writer of the format named `format` for the
// request. Fails with kInvalidArgument (an unknown format, a binary format to a
// terminal, compression the format lacks), or the writer's own errors (kIo: the
// file cannot be created; kUnsupported: the architecture has no id in the format).
Expected<std::unique_ptr<events::Sink>> open_writer(std::string_view format, WriterRequest request);

}  // namespace tracecorn::formats
