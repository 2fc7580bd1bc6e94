// Role: the trace tools behind `tracecorn stat`, `convert` and `export`, over
// any format through TraceReader: statistics, conversion into another format's
// writer, and the exports (drcov coverage for Lighthouse and other disassembler
// plugins, formats/drcov/drcov_writer.h; Chrome trace-event JSON with the
// syscalls and their stacks, for Perfetto's UI, formats/chrome/chrome_writer.h),
// which are write-only formats of the registry.
// Who calls it: the CLI and tests, one thread. Errors: the reader's (with the
// byte offset), or kIo for the output. Outputs never pass for what they are
// not: a conversion or export writes beside its output and renames it into
// place only when the whole trace was read (formats/common/pending_output.h),
// so one that fails leaves no output (and an older file at that name as it
// was). Writers come from the format registry's one factory (formats/registry.h).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "formats/common/zstd_compression.h"
#include "formats/text/text_writer.h"
#include "recorder/replay/trace_reader.h"

namespace tracecorn::replay {

struct TraceStats {
  std::uint64_t events = 0;
  std::uint64_t instructions = 0;  // instruction events, else the blocks' counts
  std::uint64_t count[events::kEventKindCount] = {};  // by EventKind
  std::uint64_t bytes[events::kEventKindCount] = {};  // model bytes by EventKind (addresses, values, code, effects; not the file's encoding)
  std::map<std::uint64_t, std::uint64_t> block_hits;  // block start -> times entered
  std::map<std::uint64_t, std::string> block_names;   // block start -> its name, when compute_stats had a namer
  std::map<std::string, std::uint64_t> syscalls;      // name -> calls
  std::map<std::uint32_t, std::uint64_t> signals;     // host signal number -> deliveries to a handler
  std::map<std::uint32_t, std::uint64_t> thread_events;  // thread id -> its events (events::Event::thread)
  std::uint64_t file_bytes = 0;
};

// Which events `tracecorn dump` prints (--kind, --range, --events); every
// condition given must hold. Kinds are event_kind_name()'s words (block, insn,
// read, write, regs, syscall, fault, module, exit, gap, signal, thread, process; "mem"
// is read and write). An event is in an address range [start, end) by: its address (block,
// insn), the accessed address or its pc (read, write), its pc (regs, syscall),
// its pc or address (fault), an overlap of its [start, end) (module); exits
// and gaps have no address and are never in one; a signal is in one by where
// it interrupted or its handler. The event window is on the event numbers dump
// prints after '#' (events::Event::sequence), inclusive. A thread keeps only
// the events of that guest thread (events::Event::thread: the process's pid
// for a single-threaded guest's events, 0 for a harness's).
struct EventFilter {
  bool kinds[events::kEventKindCount] = {false, true, true, true, true, true, true, true, true, true, true, true, true, true};  // by EventKind
  std::optional<std::pair<std::uint64_t, std::uint64_t>> range;   // [start, end)
  std::uint64_t first = 0, last = ~std::uint64_t{0};              // the sequence window, inclusive
  std::optional<std::uint32_t> thread;                            // only this thread's events
  bool matches(const events::Event& event) const;
};

// Builds a filter from the options' text: `kinds` "syscall,block" (empty: all),
// `range` "A-B" (hex with 0x, or decimal; empty: none), `window` "N-M", "N-"
// or "N" (empty: all), `thread` a thread id (empty: all). Fails with
// kInvalidArgument naming the bad word.
Expected<EventFilter> parse_event_filter(const std::string& kinds, const std::string& range, const std::string& window,
                                         const std::string& thread = "");

// Reads `reader` to its end and counts. With `namer` (told what the trace maps,
// formats/text/text_writer.h), each block is named at its first entry
// ("memcpy+0x1c (/usr/lib/x86_64-linux-gnu/libc.so.6)") when it has a name.
Expected<TraceStats> compute_stats(TraceReader& reader, formats::AddressNamer* namer = nullptr);

// The level a trace's events correspond to ("blocks"... "full"), from the kinds seen.
std::string level_from_kinds(const bool (&seen)[events::kEventKindCount]);

// Converts the trace at `in` into `out` in `format` (zstd when `compress`:
// at `zstd`'s level and with its worker threads, where a level of 0 and
// ZstdCompression::kDefaultWorkers stand for the defaults of the trace's level
// of detail, formats::with_zstd_defaults), encoding on `encoder_threads`
// where the format can (formats::WriterRequest::encoder_threads).
// Returns sentences saying what the target cannot carry of what the trace
// has, or an error (reading, the writer refusing, e.g. bintrace needs
// registers). With `progress`, shows a progress line on a terminal (see
// progress.h); so do the exporters.
Expected<std::vector<std::string>> convert_trace(const std::string& in, const std::string& out, TraceFormat format,
                                                 bool compress, bool progress = false,
                                                 const formats::ZstdCompression& zstd = {},
                                                 int encoder_threads = 0);

// Writes the coverage of the trace at `in` as drcov to `out`. Returns the number of blocks written.
Expected<std::uint64_t> export_drcov(const std::string& in, const std::string& out, bool progress = false);
// Writes the syscalls (with stacks), faults and exit of the trace at `in` as
// Chrome trace-event JSON to `out` (ts = instructions executed before, in µs).
// Returns the number of trace events written.
Expected<std::uint64_t> export_chrome(const std::string& in, const std::string& out, bool progress = false);
// Writes the instructions of the full-level trace at `in`, with their register
// changes and memory accesses, as Tenet's text trace to `out`
// (formats/tenet/tenet_writer.h). Returns the number of lines written.
Expected<std::uint64_t> export_tenet(const std::string& in, const std::string& out, bool progress = false);

}  // namespace tracecorn::replay
