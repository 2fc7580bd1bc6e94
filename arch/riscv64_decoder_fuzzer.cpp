// Role: libFuzzer harness for the RV64GC decoder of arch/riscv64.cpp
// (ArchInfo::decode_without_capstone), which reads untrusted guest memory: any
// bytes, decoded from every offset, must give an instruction that fits the
// bytes (2 or 4 of them) with at most kMaxWritten registers written and
// kMaxRead read, all of the table (never x0 read), or a
// refusal with size 0; never a crash or a sanitizer report. Built with clang
// only (arch/CMakeLists.txt); CTest runs it briefly as riscv64_decoder_fuzzer_smoke.
#include <cstddef>
#include <cstdint>
#include <span>

#include "arch/arch.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const tracecorn::arch::ArchInfo& arch = tracecorn::arch::riscv64_arch();
  const std::span<const std::uint8_t> bytes(data, size);
  for (std::size_t offset = 0; offset < size; ++offset) {
    tracecorn::arch::EncodedInstruction insn;
    const bool decoded = arch.decode_without_capstone(bytes.subspan(offset), insn);
    const bool fits = decoded ? (insn.size == 2 || insn.size == 4) && insn.size <= size - offset : insn.size == 0;
    if (!fits || insn.written_count > tracecorn::arch::EncodedInstruction::kMaxWritten) __builtin_trap();
    for (std::uint8_t i = 0; i < insn.written_count; ++i)
      if (insn.written[i] >= arch.registers.size()) __builtin_trap();
    if (insn.read_count > tracecorn::arch::EncodedInstruction::kMaxRead) __builtin_trap();
    for (std::uint8_t i = 0; i < insn.read_count; ++i)
      if (insn.read[i] == 0 || insn.read[i] >= arch.registers.size()) __builtin_trap();
    if (insn.base_register >= static_cast<int>(arch.registers.size())) __builtin_trap();
  }
  return 0;
}
