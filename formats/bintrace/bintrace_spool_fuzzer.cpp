// Role: libFuzzer harness for the events spool scanner of binary trace
// recovery (bintrace_recover.h; untrusted input: a killed recording's spool):
// any bytes (plain, or a zstd stream when they start with its magic) must give
// a scan whose kept bytes lie inside the input, and never a crash, a hang or a
// sanitizer report. The machine description is fixed here (a PHY_SIZE taken
// from the first byte, registers of 1, 8 and 16 bytes, a 2-byte id, an
// operation). Built with clang only (formats/bintrace/CMakeLists.txt); CTest
// runs it briefly as bintrace_spool_fuzzer_smoke.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "formats/bintrace/bintrace_layout.h"
#include "formats/bintrace/bintrace_recover.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  namespace bt = tracecorn::formats::bintrace;
  // Built once per process (index() fills a 64 Ki-entry table): read-only
  // afterwards, one per PHY_SIZE.
  static const std::vector<bt::MachineDescription> machines = [] {
    std::vector<bt::MachineDescription> out(8);
    for (std::size_t i = 0; i < out.size(); ++i) {
      out[i].physical_address_size = static_cast<std::uint8_t>(i + 1);
      out[i].registers = {{0, 8, "rip"}, {1, 1, "al"}, {2, 16, "xmm0"}, {0x1234, 8, "far"}};
      out[i].operations = {{3, 0, bt::kAdd, std::vector<std::uint8_t>(8, 1)}};
      out[i].index();
    }
    return out;
  }();
  const bt::MachineDescription& machine = machines[data[0] % 8];
  std::vector<std::uint8_t> bytes(data + 1, data + size);
  const bool zstd = bytes.size() >= 4 && bytes[0] == 0x28 && bytes[1] == 0xb5 && bytes[2] == 0x2f && bytes[3] == 0xfd;
  auto source = tracecorn::formats::make_memory_source(std::move(bytes));
  if (zstd) source = tracecorn::formats::make_zstd_source(std::move(source));
  auto scan = tracecorn::formats::scan_spool(machine, *source);
  if (!scan) return 0;
  if (scan->complete_bytes > scan->bytes) __builtin_trap();  // kept bytes must exist
  return 0;
}
