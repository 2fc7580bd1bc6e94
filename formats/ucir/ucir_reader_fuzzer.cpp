// Role: libFuzzer harness for the UCIR reader (untrusted input): any bytes must
// give a reader or an Error, then frames, a warning or an Error, and never a
// crash, a hang or a sanitizer report. Built with clang only (see
// formats/CMakeLists.txt); CTest runs it briefly as ucir_reader_fuzzer_smoke.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "formats/ucir/ucir_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::vector<std::uint8_t> bytes(data, data + size);
  auto reader = tracecorn::formats::UcirReader::from_bytes(std::move(bytes), "fuzz");
  if (!reader) return 0;
  std::uint64_t events = 0;
  for (int frames = 0; frames < 100000; ++frames) {
    auto more = (*reader)->next([&](const tracecorn::events::Event&) { ++events; });
    if (!more || !*more) break;
  }
  return events == ~0ull ? 1 : 0;
}
