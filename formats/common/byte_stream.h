// Role: the byte plumbing the trace formats share: where a reader's bytes come
// from (a file, memory, one zstd stream: ByteSource) and where a writer's go (a
// file, optionally through one zstd stream: OutputFile). Moved out of the UCIR
// reader and writer so that every format reads and compresses the same way.
// Who calls it: format readers and writers, one thread per object (not thread safe).
// Invariants: a source never holds a whole trace in memory (it is pulled a chunk
// at a time); a source that ends early says why in `problem`; nothing here
// throws on bad input (a damaged zstd stream ends the source with a problem).
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "formats/common/zstd_compression.h"
#include "recorder/support/expected.h"

namespace tracecorn::formats {

// The zstd frame magic (28 b5 2f fd, RFC 8878 section 3.1.1), which starts a compressed file.
inline constexpr std::uint8_t kZstdMagic[4] = {0x28, 0xb5, 0x2f, 0xfd};

// Where the bytes come from: a reader pulls them a chunk at a time. `problem`
// says why a stream ended early (a read error, a damaged zstd stream).
class ByteSource {
 public:
  virtual ~ByteSource() = default;
  // Appends up to `want` more bytes to `out`; returns how many (0 at the end).
  virtual std::size_t read(std::vector<std::uint8_t>& out, std::size_t want) = 0;
  // Seekable sources (a plain file, memory): moves to `offset` and returns true;
  // false when the source cannot seek or `offset` is beyond its end.
  virtual bool seek(std::uint64_t) { return false; }
  // The total size when known (a plain file, memory), else nullopt.
  virtual std::optional<std::uint64_t> size() const { return std::nullopt; }
  // Bytes of the underlying file (or memory) read so far, for progress displays:
  // a decompressing source gives its input's count, not what it produced.
  virtual std::uint64_t consumed() const = 0;
  std::string problem;
};

// Opens `path` for reading. Fails with kNotFound or kIo naming the file.
Expected<std::unique_ptr<ByteSource>> open_file_source(const std::string& path);
std::unique_ptr<ByteSource> make_memory_source(std::vector<std::uint8_t> bytes);
// `prefix` (bytes already pulled from `inner`, to look at a header), then the rest of `inner`.
std::unique_ptr<ByteSource> make_prefix_source(std::vector<std::uint8_t> prefix, std::unique_ptr<ByteSource> inner);
// The decompression of `inner`, one or more concatenated zstd frames; a corrupt
// or truncated stream ends it with a problem.
std::unique_ptr<ByteSource> make_zstd_source(std::unique_ptr<ByteSource> inner);

// The first `bytes` bytes of the file at `path`, decompressed when the file is a
// zstd stream: what a command looks at to choose a format's reader. Fewer (or
// none) when the file is shorter, unreadable or a damaged stream.
std::vector<std::uint8_t> read_head(const std::string& path, std::size_t bytes);

// Where a writer's bytes go: a FILE (owned unless it is stdout), optionally
// through one zstd stream. Errors come back as text (errno's or zstd's) for the
// writer to report from Sink::end(); a write error says how many bytes reached
// the file ("No space left on device after 1048576 bytes were written").
class OutputFile {
 public:
  // Opens `path` ("-": stdout) for writing, compressing as `zstd` says when
  // `compress_zstd`. Fails with kIo (cannot create) or kInvalidArgument (zstd set-up).
  static Expected<std::unique_ptr<OutputFile>> open(const std::string& path, bool compress_zstd,
                                                    const ZstdCompression& zstd = {});
  ~OutputFile();
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  // Writes `bytes` (through zstd when compressing). Returns "" or an error message.
  std::string write(std::span<const std::uint8_t> bytes);
  // Writes `bytes` straight to the file, bypassing zstd: only between zstd
  // frames (before the first write(), or after finish_zstd()).
  std::string write_raw(std::span<const std::uint8_t> bytes);
  // Overwrites bytes already written at `file_offset` (in the file, not the
  // decompressed stream) and returns to the end. Fails on an unseekable file.
  std::string patch(std::uint64_t file_offset, std::span<const std::uint8_t> bytes);
  // Whether patch() can work (the file is seekable: not a pipe or a terminal).
  bool seekable() const;
  // Hands everything written so far to the file: zstd's buffered input is
  // compressed into a flushed block (the stream decompresses up to here), and
  // stdio's buffer is written. Nothing for a pipe or a terminal, whose reader
  // may be stopped (the write could block). Returns "" or an error message.
  std::string flush();
  // Ends the zstd stream (when compressing), flushes and closes the file.
  // Returns "" or an error message. Call once.
  std::string close();
  bool compressed() const { return zstd_ != nullptr; }

 private:
  struct ZstdContext;
  OutputFile(std::FILE* file, bool owns, ZstdContext* zstd) : file_(file), owns_(owns), zstd_(zstd) {}
  // Feeds `bytes` to zstd: kContinue takes them, kFlush also flushes a block
  // out, kEnd ends the stream.
  enum class ZstdStep { kContinue, kFlush, kEnd };
  std::string compress(std::span<const std::uint8_t> bytes, ZstdStep step);
  // Hands what write() staged to zstd (kContinue).
  std::string compress_staged();
  // fwrite with the count kept; "" or failure().
  std::string put(const std::uint8_t* bytes, std::size_t size);
  // strerror(error) and the bytes the file holds.
  std::string failure(int error) const;

  std::FILE* file_;
  bool owns_;
  ZstdContext* zstd_;  // owned; nullptr when not compressing
  std::vector<std::uint8_t> buffer_;
  // Small writes gathered before they reach zstd: a ZSTD_compressStream2 call
  // has a fixed cost, and a blocks-level UCIR trace writes two small pieces per
  // block (millions a second). Handed over when full, by flush() and close().
  static constexpr std::size_t kStagedBytes = 64 * 1024;
  std::vector<std::uint8_t> staged_;
  std::uint64_t bytes_accepted_ = 0;  // handed to fwrite and accepted
};

}  // namespace tracecorn::formats
