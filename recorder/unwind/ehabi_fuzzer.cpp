// Role: libFuzzer harness for the EHABI reader (ehabi.h): any .ARM.exidx and
// .ARM.extab bytes must give entries, op bytes, decoded instructions and rows,
// or Errors: never a crash, a hang or a sanitizer report. Built with clang
// only (recorder/unwind/CMakeLists.txt); CTest runs it briefly as
// ehabi_fuzzer_smoke.
// Input: byte 0 (mod 64) is the number of 8-byte index entries taken from the
// rest as .ARM.exidx at 0x10000; the whole rest is also .ARM.extab, at
// 0x10000 too, so prel31 references land in it. Byte 1's low bit picks the
// byte order.
#include <cstddef>
#include <cstdint>
#include <span>

#include "recorder/unwind/ehabi.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace tracecorn::unwind;
  if (size < 2) return 0;
  const std::span<const std::uint8_t> rest(data + 1, size - 1);
  const std::size_t entries = data[0] % 64;
  const std::size_t exidx_size = entries * 8 <= rest.size() ? entries * 8 : rest.size();
  const bool little_endian = (data[1] & 1) == 0;
  auto table = EhabiTable::create(rest.first(exidx_size), 0x10000, rest, 0x10000, little_endian, "fuzz");
  if (!table) return 0;
  for (std::uint32_t i = 0; i < table->entry_count(); ++i) {
    auto entry = table->entry(i);
    if (!entry) continue;
    for (std::uint64_t pc : {entry->function, entry->function + 1, entry->function - 1}) {
      auto found = table->find_entry(pc);
      (void)found;
    }
    auto code = table->code(*entry);
    if (!code) continue;
    (void)table->for_each_instruction(*code, [](const EhabiInstruction&) {});
    (void)table->row_for(*entry, *code);
  }
  return 0;
}
