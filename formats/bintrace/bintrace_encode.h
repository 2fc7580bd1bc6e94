// Role: the byte encoding of a binary trace's sections before the events
// (bintrace_layout.h: metadata, header, machine description, initial memory,
// initial registers, the events section's size and count) and the region
// merging rule, shared by BintraceWriter (a finished recording, and the
// recovery head it keeps beside its spool) and recover_bintrace() (a killed
// recording rebuilt from that head and its spool), so that both write the
// same bytes, and put_string (the little-endian helpers are
// formats/common/little_endian.h's).
// Who calls it: the writer on the drain thread, the recovery on the CLI's
// thread; pure functions, no state.
// Invariants: sizes are computed, never trusted from elsewhere; every section
// size excludes its own u64; strings are cut to their field.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "formats/bintrace/bintrace_layout.h"
#include "formats/bintrace/bintrace_state.h"
#include "formats/common/little_endian.h"

namespace tracecorn::formats::bintrace {

// The little-endian put helpers (formats/common/little_endian.h), as this
// namespace's own.
using formats::put_bytes;
using formats::put_le;
using formats::put_u16;
using formats::put_u32;
using formats::put_u64;
using formats::put_u8;

// A spec string: u8 length, then the characters (cut at 255).
template <typename Out>
void put_string(Out& out, std::string_view text) {
  const std::size_t length = std::min(text.size(), kMaxDescription);
  put_u8(out, static_cast<std::uint8_t>(length));
  if (length) std::memcpy(append_to(out, length), text.data(), length);
}

// What the metadata header says besides the constants ("1.0.0", "tracecorn").
struct HeadStrings {
  std::string tool_version;
  std::string tool_info;
  std::uint64_t unix_time = 0;  // written as is
};

// Metadata, header (compression byte `compression`) and the machine description
// of `description` declaring `regions` (its own regions field is not used).
std::vector<std::uint8_t> encode_head(const HeadStrings& strings, std::uint8_t compression,
                                      const MachineDescription& description, std::span<const MemoryRegion> regions);
// The initial registers section: every declared register, in declaration
// order, with `values[i]` (of the declared size) for registers[i].
std::vector<std::uint8_t> encode_initial_registers(const MachineDescription& description,
                                                   std::span<const std::vector<std::uint8_t>> values);
// The initial memory section: its size, then each region's bytes as `fill`
// gives them (called with a zeroed chunk of at most 1 MiB and its address),
// handed to `put` a chunk at a time. Exceptions from the callbacks pass through.
void encode_initial_memory(std::span<const MemoryRegion> regions,
                           const std::function<void(std::uint64_t address, std::span<std::uint8_t> chunk)>& fill,
                           const std::function<void(std::span<const std::uint8_t>)>& put);
// The events section's size field and event count, for `payload_bytes` bytes of events.
std::vector<std::uint8_t> encode_events_header(std::uint64_t payload_bytes, std::uint64_t count);

// `ranges` sorted, with empty ones dropped and overlapping or touching ones
// merged: the regions a trace declares (ascending and disjoint).
std::vector<MemoryRegion> merge_regions(std::vector<MemoryRegion> ranges);

}  // namespace tracecorn::formats::bintrace
