// Role: libFuzzer harness for the BAP frames reader (untrusted input): any bytes
// must give a reader or an Error, then frames, a warning or an Error (and seeks
// through the TOC that succeed or fail cleanly), never a crash, a hang or a
// sanitizer report. Built with clang only (formats/bap/CMakeLists.txt); CTest
// runs it briefly as bap_reader_fuzzer_smoke.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "formats/bap/bap_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::vector<std::uint8_t> bytes(data, data + size);
  auto reader = tracecorn::formats::FramesReader::from_bytes(std::move(bytes), "fuzz");
  if (!reader) return 0;
  std::uint64_t events = 0;
  auto count = [&](const tracecorn::events::Event&) { ++events; };
  for (int frames = 0; frames < 100000; ++frames) {
    auto more = (*reader)->next(count);
    if (!more || !*more) break;
  }
  // Seeking: through the TOC when it is consistent, else by reading again.
  const std::uint64_t n = (*reader)->header().frame_count;
  for (const std::uint64_t target : {std::uint64_t{0}, n / 2, n ? n - 1 : 0})
    if ((*reader)->seek_frame(target)) (void)(*reader)->next(count);
  return events == ~0ull ? 1 : 0;
}
