// Role: recovery of a binary trace whose recording was killed (SIGKILL, a
// crash, a power cut) before BintraceWriter::end() assembled the file. What is
// left beside PATH: PATH.head.part (a whole binary trace with no events: the
// metadata, the machine description declaring the regions mapped at the start,
// the initial memory and registers; written at the first instruction) and the
// events spool PATH.events.part (events as they go in the events section,
// plain or as one unterminated zstd stream). recover_bintrace() writes a valid
// binary trace v1.0 (compression 0, which the reference reader accepts) with
// every complete event of the spool, and says where the spool was cut.
// Who calls it: `tracecorn recover` (recorder/cli/main.cpp) and tests, on
// their own thread; no state beyond the call.
//
// What the recovered file holds:
//   metadata    the head's, tool info + ", recovered from a killed recording"
//   machine     the head's registers, operations and statics; regions = the
//               head's, plus every range a "map A L prot P" event of the kept
//               events maps, plus every 4 KiB page a kept memory entry writes,
//               merged (bintrace_encode.h: the writer's own rule)
//   memory      the head's initial memory, zero in the added regions
//   registers   the head's
//   events      the spool's bytes up to the end of its last complete event,
//               and their count (continuation diffs are part of their event)
//
// Untrusted input: both files. The head goes through BintraceReader (every
// check there). The spool is scanned with bounds checks against the head's
// declarations: an event cut by the end of the spool, or bytes that are not an
// event (unknown register id, both counts 0xf, an event type other than 0xff,
// a memory entry above 1 GiB or wrapping the address space, a map of more than
// 2^40 bytes) stop the scan there: the events before are kept and
// Recovery::cut names the offset (in the decompressed spool) and the reason.
// Nothing here aborts or throws on bad input.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "formats/bintrace/bintrace_state.h"
#include "formats/common/byte_stream.h"
#include "recorder/support/expected.h"

namespace tracecorn::formats {

// What a scan of an events spool found.
struct SpoolScan {
  std::uint64_t events = 0;          // complete events (continuations not counted)
  std::uint64_t complete_bytes = 0;  // where the last complete event ends (decompressed offset)
  std::uint64_t bytes = 0;           // decompressed bytes seen
  // "" when the spool ends exactly after an event; else why the scan stopped
  // at complete_bytes ("the spool ends inside an event", or the damage found).
  std::string cut;
  // Ranges the kept events map or write (not merged; see merge_regions()).
  std::vector<bintrace::MemoryRegion> touched;
};

// Scans `spool` (decompressed already) as events declared by `machine` (which
// must be indexed: MachineDescription::index()). Never fails on the spool's
// content (see SpoolScan::cut); fails only when `machine`'s PHY_SIZE is not
// 1 to 8 (kInvalidArgument).
Expected<SpoolScan> scan_spool(const bintrace::MachineDescription& machine, ByteSource& spool);

// Opens `path` as an events spool: plain, or decompressed when it starts with
// the zstd magic (an unterminated stream ends with a problem, not an error).
Expected<std::unique_ptr<ByteSource>> open_spool(const std::string& path);

struct Recovery {
  SpoolScan scan;
  std::uint64_t file_bytes = 0;  // of the recovered file
  std::size_t regions = 0;       // declared in it
};

// Writes `output` (through `output`.part, renamed when complete) from
// `head_path` and `spool_path`. Fails with the head's errors (kNotFound when
// the recording was killed before its first instruction: nothing to recover),
// kBadFormat when the head holds events, kIo naming the file on a read or
// write error (no output is left then).
Expected<Recovery> recover_bintrace(const std::string& head_path, const std::string& spool_path,
                                    const std::string& output);

}  // namespace tracecorn::formats
