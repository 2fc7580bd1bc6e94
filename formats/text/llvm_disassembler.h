// Role: the disassembly text of architectures Capstone 4 cannot decode
// (riscv64), from Debian's libLLVM-14 through its C API
// (llvm-c/Disassembler.h: LLVMCreateDisasmCPUFeatures, LLVMDisasmInstruction).
// The library is opened with dlopen when a text trace of such an architecture
// is written, not linked: linking libLLVM-14 costs every `tracecorn` process
// ~0.1 s and ~50 MB at start-up (measured: a C program linked with -lLLVM-14
// starts in 0.12 s / 50 MB RSS against 0.01 s / 1 MB unlinked), which the many
// short runs of the tests and of `tracecorn run` would all pay.
// Who calls it: the text sink (formats/text/text_writer.cpp) on the drain thread.
// Not thread safe: one instance per writer. Invariants: the library stays open
// while the instance lives; the disassembler never reads past the bytes given.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "arch/arch_info.h"
#include "recorder/support/expected.h"

namespace tracecorn::formats {

class LlvmDisassembler {
 public:
  // The Debian library's soname (package libllvm14, pulled in by llvm-14-dev).
  static constexpr const char* kLibrary = "libLLVM-14.so.1";

  // Opens kLibrary and a disassembler for `target`. Fails (kUnsupported) when the
  // library or one of its functions is missing, or LLVM has no such target,
  // saying which.
  static Expected<std::unique_ptr<LlvmDisassembler>> open(const arch::LlvmTarget& target);
  ~LlvmDisassembler();
  LlvmDisassembler(const LlvmDisassembler&) = delete;
  LlvmDisassembler& operator=(const LlvmDisassembler&) = delete;

  // "amoadd.d t0, t1, (sp)" for the instruction at the start of `bytes` (at
  // guest `address`), and its size in `size`; size 0 and "" when LLVM cannot
  // decode it.
  std::string disassemble(std::span<const std::uint8_t> bytes, std::uint64_t address, std::size_t& size) const;

 private:
  using Disassemble = std::size_t (*)(void*, std::uint8_t*, std::uint64_t, std::uint64_t, char*, std::size_t);
  using Dispose = void (*)(void*);
  LlvmDisassembler() = default;
  void* library_ = nullptr;
  void* context_ = nullptr;  // LLVMDisasmContextRef
  Disassemble disassemble_ = nullptr;
  Dispose dispose_ = nullptr;
};

}  // namespace tracecorn::formats
