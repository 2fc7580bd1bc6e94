// Role: unit tests of OutputFile (formats/common/byte_stream.h) through zstd:
// small writes gathered before they reach zstd still come out whole and in
// order, and a flush() hands over everything written so far, so that a
// recording killed after a flush leaves a file that decompresses to it.
// Test thread only.
#include <doctest/doctest.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "formats/common/byte_stream.h"

#include "tests/formats/test_files.h"
using namespace tracecorn;

namespace {

using test::Bytes;

// What the zstd stream in `file` decompresses to, as far as it goes.
Bytes decompressed(const Bytes& file) {
  auto source = formats::make_zstd_source(formats::make_memory_source(file));
  Bytes out;
  while (source->read(out, 1 << 16) > 0) {
  }
  return out;
}

// Piece `n` of the test's writes: mostly 13 bytes (a UCIR frame header), every
// 97th one 100 KiB (more than is gathered), each byte telling where it is.
Bytes piece(std::size_t n) {
  Bytes bytes(n % 97 == 96 ? 100 * 1024 : 13);
  for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<std::uint8_t>(n * 31 + i);
  return bytes;
}

}  // namespace

TEST_CASE("OutputFile: small and large zstd writes come out in order; flush() hands over all written so far") {
  const std::string path = test::temp_file("output", "staged.zst");
  auto opened = formats::OutputFile::open(path, true, formats::ZstdCompression{3, 0});
  REQUIRE(opened.has_value());
  formats::OutputFile& file = **opened;
  Bytes written;
  for (std::size_t n = 0; n < 20000; ++n) {
    const Bytes bytes = piece(n);
    REQUIRE(file.write(bytes).empty());
    written.insert(written.end(), bytes.begin(), bytes.end());
    if (n == 5000 || n == 5001) {  // a flush, and one right after a single small write
      REQUIRE(file.flush().empty());
      const Bytes so_far = decompressed(test::slurp(path));
      REQUIRE(so_far.size() == written.size());
      CHECK(so_far == written);
    }
  }
  REQUIRE(file.close().empty());
  const Bytes whole = decompressed(test::slurp(path));
  REQUIRE(whole.size() == written.size());
  CHECK(whole == written);
  std::filesystem::remove(path);
}
