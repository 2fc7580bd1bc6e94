// Role: the on-disk layout of binary trace v1.0 (REVEN's rvnbintrace;
// github.com/tetrane/rvnbintrace trace-format.md, settled details in
// docs/formats/bintrace.md): magics, versions, field sizes and limits shared
// by BintraceWriter and BintraceReader so that they change together.
// Invariants: every integer is little endian; a PHY_SIZE field holds the low
// PHY_SIZE bytes of its value; each section's u64 size excludes itself.
//
// File (what our writer produces; the reader also takes files that start
// directly with the header section):
//
//   metadata (3640 bytes)
//   +0     magic            u64 = 0x72766e62696e7273 ("srnibnvr" as bytes)
//   +8     metadata version u32 = 1
//   +12    type             u32 = 1 (trace; 2 = cache)
//   +16    format version   u64 length, 512 bytes NUL padded  ("1.0.0")
//   +536   tool name        u64 length, 512 bytes             ("tracecorn")
//   +1056  tool version     u64 length, 512 bytes
//   +1576  tool info        u64 length, 2048 bytes            (level, program)
//   +3632  date             u64 Unix time
//   header               u64 size = 1, u8 compression (0 none; 1 zstd: ours)
//   machine description  u64 size, u32 magic ('x641'), u8 PHY_SIZE (8),
//                        u32 n, n x (start, size: PHY_SIZE each),
//                        u32 n, n x (u16 id, u16 size, u8 len, name),
//                        u32 n, n x (u8 op id, u16 register id, u8 operator, value[register size]),
//                        u32 n, n x (u8 len, name, u8 size, value)
//   initial memory       u64 size (= the sum of the region sizes), each region's bytes in order
//   initial registers    u64 size, u32 n, n x (u16 id, value[register size])
//   events               u64 size, u64 event count, events
//                        (compression 1: the events after the count are one zstd frame)
//
// Event:
//   instruction  diff                          (its first byte is below 0xff)
//   other        ff ff, u8 len, description, diff
// Diff: u8 counts (R registers in the high nibble, M memory entries in the low
//   one), M x (address PHY_SIZE, size: u8, or ff + PHY_SIZE bytes, bytes),
//   R x (id: u8, or ff + u16; the value unless the id is an operation).
//   A count of 0xf means 14 entries and that a continuation diff follows at
//   once (not counted as an event); both counts 0xf is invalid.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace tracecorn::formats::bintrace {

inline constexpr std::uint64_t kMetadataMagic = 0x72766e62696e7273ull;
// Bump kMetadataVersion only if the reference changes the wrapper; kFormatVersion's
// minor when our writer's output changes in a compatible way (the reference
// reader rejects another major).
inline constexpr std::uint32_t kMetadataVersion = 1;
inline constexpr std::uint32_t kMetadataTypeTrace = 1;
inline constexpr std::uint32_t kMetadataTypeCache = 2;
inline constexpr std::string_view kFormatVersion = "1.0.0";
inline constexpr std::string_view kFormatMajor = "1.";
inline constexpr std::size_t kMetadataStringBytes[4] = {512, 512, 512, 2048};
inline constexpr std::size_t kMetadataBytes = 8 + 4 + 4 + 4 * 8 + 512 * 3 + 2048 + 8;
static_assert(kMetadataBytes == 3640);

inline constexpr std::uint8_t kCompressionNone = 0;
inline constexpr std::uint8_t kCompressionZstd = 1;  // our extension (`--compress zstd`); the reference takes only 0

inline constexpr std::uint8_t kPhysicalAddressSize = 8;  // what we write: a user-space address whole

inline constexpr std::uint8_t kNotInstruction = 0xff;  // an event's first byte when it is not an instruction
inline constexpr std::uint8_t kOtherEvent = 0xff;      // the event type of an "other" event
inline constexpr std::uint8_t kContinuation = 0xf;     // a diff count meaning "14, and a continuation follows"
inline constexpr std::uint8_t kMaxEntriesPerDiff = 14;
inline constexpr std::uint8_t kLongId = 0xff;    // a register id on 2 bytes follows
inline constexpr std::uint8_t kLongSize = 0xff;  // a memory size on PHY_SIZE bytes follows
inline constexpr std::size_t kMaxDescription = 255;

// The interruption note (ours): the description of an "other" event with an
// empty diff, the last event of a recording stopped by SIGINT or SIGTERM.
// Other readers take it as one more described event (as "page fault").
inline constexpr std::string_view kInterruptedNote = "interrupted";

enum Operator : std::uint8_t { kSet = 0, kAdd = 1, kAnd = 2, kOr = 3 };

// Our limits (not the spec's): register values up to 64 bytes (zmm); a memory
// entry of at most 1 GiB (our writer splits at 16 MiB).
inline constexpr std::size_t kMaxRegisterBytes = 64;
inline constexpr std::uint64_t kMaxMemoryEntryBytes = 1ull << 30;
inline constexpr std::uint64_t kWriterMemoryEntryBytes = 16ull << 20;

// The zstd frame magic (28 b5 2f fd).
inline constexpr std::uint8_t kZstdMagic[4] = {0x28, 0xb5, 0x2f, 0xfd};

}  // namespace tracecorn::formats::bintrace
