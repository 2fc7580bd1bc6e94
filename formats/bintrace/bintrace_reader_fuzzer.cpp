// Role: libFuzzer harness for the binary trace reader (untrusted input): any
// bytes must give a reader or an Error, then events, the state, or an Error, and
// never a crash, a hang or a sanitizer report. Built with clang only (see
// formats/bintrace/CMakeLists.txt); CTest runs it briefly as bintrace_reader_fuzzer_smoke.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "formats/bintrace/bintrace_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::vector<std::uint8_t> bytes(data, data + size);
  auto reader = tracecorn::formats::BintraceReader::from_bytes(std::move(bytes), "fuzz");
  if (!reader) return 0;
  std::uint64_t events = 0;
  for (int i = 0; i < 100000; ++i) {
    auto more = (*reader)->next([&](const tracecorn::events::Event&) { ++events; });
    if (!more || !*more) break;
  }
  const auto registers = (*reader)->registers();
  return events + registers.size() == ~0ull ? 1 : 0;
}
