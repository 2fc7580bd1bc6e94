// Role: the container layout of BAP frames traces (github.com/BinaryAnalysisPlatform/bap-frames,
// libtrace's trace.container.hpp; docs/formats/bap-frames.md), shared by FramesWriter and FramesReader
// so that they change together. The frames themselves are protobuf messages
// (frames.proto).
// Invariants: every number is a little-endian u64; offsets count bytes from the
// start of the (decompressed) file.
//
//   +0x00  magic                7456879624156307493
//   +0x08  version              3 (we write); 1 and 2 are read too
//   +0x10  frame_architecture   bap-frames' own enum (x86-64: i386 = 9)
//   +0x18  frame_machine        BFD mach number (x86-64: 64), 0 unspecified
//   +0x20  n                    frames after the meta frame (0 until finished)
//   +0x28  T                    offset of the TOC index (0 until finished)
//   +0x30  size of meta_frame   (version >= 2 only)
//          meta_frame           protobuf `meta_frame`
//          size of frame 0, frame 0   (u64, then protobuf `frame`)
//          ...
//          size of frame n-1, frame n-1
//   T      m                    frames per TOC entry
//   T+8    entry 0 ... entry ceil(n/m)-1
//
// The TOC convention we write (the notes: real writers and readers disagree):
// ceil(n/m) entries, entry k is the offset of the size field of frame k*m, so
// entry 0 points at the first frame after the meta frame. The other layout met
// in the wild, floor((n-1)/m) entries with entry k pointing at frame (k+1)*m
// (libtrace's writer), is read too. BAP's own OCaml reader ignores the TOC.
//
// n and T are written as 0 with the header and patched when the trace is
// finished: a file whose T is 0 is a recording that did not finish (killed),
// read up to its last complete frame.
//
// With `--compress zstd` the file is one zstd stream of two or more frames
// (RFC 8878 allows concatenation): the first holds the 48 header bytes alone as
// one raw (uncompressed) block, so that n and T can be patched in place; the
// rest is one compressed frame.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tracecorn::formats::bap {

inline constexpr std::uint64_t kMagic = 7456879624156307493ull;
// Bump when the layout we write changes (bap-frames' own numbering: 2 added the
// meta frame, 3 added std_frame.mode).
inline constexpr std::uint64_t kVersion = 3;
inline constexpr std::uint64_t kLowestVersion = 1;
inline constexpr std::uint64_t kFirstVersionWithMeta = 2;

inline constexpr std::size_t kMagicOffset = 0x00;
inline constexpr std::size_t kVersionOffset = 0x08;
inline constexpr std::size_t kArchitectureOffset = 0x10;
inline constexpr std::size_t kMachineOffset = 0x18;
inline constexpr std::size_t kFrameCountOffset = 0x20;
inline constexpr std::size_t kTocOffsetOffset = 0x28;
inline constexpr std::size_t kHeaderBytes = 0x30;

// libtrace's default (trace.container.hpp: default_frames_per_toc_entry).
inline constexpr std::uint64_t kDefaultFramesPerTocEntry = 10000;

// Frames larger than this are refused by the reader (ours are a few hundred
// bytes; a syscall frame carrying a large read() is at most a few MiB).
inline constexpr std::uint64_t kMaxFrameBytes = 256ull << 20;

// The raw zstd frame holding the header (RFC 8878 3.1.1): magic, frame header
// descriptor 0x20 (single segment, 1-byte content size, no checksum), content
// size 48, block header (last block, raw, size 48: 1 | 48 << 3), the 48 bytes.
inline constexpr std::uint8_t kZstdHeaderFramePrefix[] = {0x28, 0xb5, 0x2f, 0xfd, 0x20, 0x30, 0x81, 0x01, 0x00};
static_assert(((1u | (kHeaderBytes << 3)) & 0xff) == 0x81 && ((1u | (kHeaderBytes << 3)) >> 8) == 0x01);

// Names of our extension: the meta frame's tracer name.
inline constexpr const char* kTracerName = "tracecorn";

}  // namespace tracecorn::formats::bap
