// Role: libFuzzer harness for the prologue analysers (arch/prologue.h:
// arch/mips_prologue.cpp, arch/riscv64_prologue.cpp, arch/arm_prologue.cpp), which read untrusted
// guest code: any bytes and any limit must give a refusal or a frame whose
// registers are DWARF numbers of the architecture's integer registers, each
// saved once, with offsets the scanned immediates can reach (never a crash, a
// hang or a sanitizer report). Built with clang only (arch/CMakeLists.txt);
// CTest runs it briefly as prologue_fuzzer_smoke.
// Input: byte 0 selects the analyser (mod 5: mips big endian, mips little
// endian, riscv64, arm Thumb, arm ARM), bytes 1-2 the limit (little endian);
// the rest is the code.
#include <cstddef>
#include <cstdint>
#include <span>

#include "arch/prologue.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace tracecorn::arch;
  if (size < 3) return 0;
  static constexpr PrologueAnalyzer kAnalyzers[] = {&analyze_mips_prologue_big, &analyze_mips_prologue_little,
                                                    &analyze_riscv64_prologue, &analyze_arm_prologue,
                                                    &analyze_arm_prologue};
  const unsigned which = data[0] % 5;  // 3: Thumb, 4: ARM (refused)
  const PrologueAnalyzer analyze = kAnalyzers[which];
  const std::size_t limit = static_cast<std::size_t>(data[1]) | static_cast<std::size_t>(data[2]) << 8;
  const std::span<const std::uint8_t> code(data + 3, size - 3);
  PrologueFrame frame;
  if (!analyze(code, limit, which == 3 ? 1 : 0, frame)) return 0;
  // mips: 50 instructions at most, each moving sp or s8 by a 16-bit
  // immediate at most (riscv64's and arm's sums wrap around by design:
  // constants loaded whole).
  constexpr std::int64_t kMipsReach = std::int64_t{64} * 65536 * 2;
  const bool mips = which < 2;
  auto out_of_reach = [&](std::int64_t offset) { return mips && (offset > kMipsReach || offset < -kMipsReach); };
  if (frame.cfa_register >= 32 || frame.return_address_register >= 32 || frame.saved_count > PrologueFrame::kMaxSaved)
    __builtin_trap();
  if (out_of_reach(frame.cfa_offset)) __builtin_trap();
  for (std::uint8_t i = 0; i < frame.saved_count; ++i) {
    if (frame.saved[i].reg == 0 || frame.saved[i].reg >= 32) __builtin_trap();
    if (out_of_reach(frame.saved[i].offset)) __builtin_trap();
    for (std::uint8_t j = 0; j < i; ++j)
      if (frame.saved[j].reg == frame.saved[i].reg) __builtin_trap();
  }
  return 0;
}
