// Role: decodes guest instructions for code that must not see Capstone (the
// formats: the text sink's disassembly, BAP frames' operand lists, the readers'
// instruction sizes and counts). This header names neither Capstone nor
// Unicorn; instruction_decoder.cpp wraps Capstone's handles (one per
// instruction-set mode) and the engine's hooks (arch/arch_engine.h) behind it.
// Threads: not thread safe, one decoder per thread; keep one for a trace's
// lifetime: disassemble() and instruction_size() allocate nothing (one cs_insn
// is allocated at open), registers() only grows the lists it appends to, and
// count_instructions() allocates one cs_insn per call (per block), as
// arch::count_instructions does.
// Invariants: every call reads at most `code.size()` bytes (untrusted guest
// memory or file bytes) and never fails loudly: what does not decode is
// reported as 0, nullopt or false.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "arch/arch_info.h"
#include "recorder/support/expected.h"

namespace tracecorn::arch {

class InstructionDecoder {
 public:
  // Opens a decoder for every instruction-set mode of `arch` (`mode` arguments
  // below: 0, or 1 for ArchInfo::alternate_isa; other values decode as 0).
  // With `register_detail`, registers() answers. An architecture Capstone
  // cannot decode (ArchInfo::decode_without_capstone) counts, sizes and
  // lists registers with its own decoder, and disassemble() answers nullopt.
  // Fails (kUnsupported) when Capstone refuses to open.
  static Expected<std::unique_ptr<InstructionDecoder>> open(const ArchInfo& arch, bool register_detail);
  ~InstructionDecoder();
  InstructionDecoder(const InstructionDecoder&) = delete;
  InstructionDecoder& operator=(const InstructionDecoder&) = delete;

  // One instruction's text, as Capstone spells it; valid until the next call.
  struct Text {
    std::string_view mnemonic;  // "mov"
    std::string_view operands;  // "rax, qword ptr [rbp - 8]"
  };
  // The instruction at the start of `code` (at guest `address`), or nullopt
  // when the bytes are not one (or Capstone cannot decode the architecture).
  std::optional<Text> disassemble(std::span<const std::uint8_t> code, std::uint64_t address, std::uint8_t mode);

  // The size in bytes of the instruction at the start of `code`; 0 when the
  // bytes are not an instruction.
  std::size_t instruction_size(std::span<const std::uint8_t> code, std::uint64_t address, std::uint8_t mode);

  // The instructions in `code` at `address`, from the start, as
  // arch::count_instructions counts them (a fixed-width ISA steps over what
  // does not decode); `undecoded` is set to the bytes left over. Never fails.
  std::uint32_t count_instructions(std::span<const std::uint8_t> code, std::uint64_t address, std::uint8_t mode,
                                   std::size_t& undecoded);

  // The registers an instruction uses, as indices into ArchInfo::registers.
  struct Registers {
    std::vector<std::uint16_t> read, written;  // arch::instruction_registers' lists
    std::vector<std::uint16_t> base, index;    // forming explicit memory operands' addresses
    bool reads_listed = false;  // whether `read` is known (Capstone 4 lists no reads for mips)
  };
  // Appends the registers of the instruction at the start of `code` to `out`
  // (opened with register_detail). Returns false, appending nothing, when the
  // bytes are not an instruction.
  bool registers(std::span<const std::uint8_t> code, std::uint64_t address, std::uint8_t mode, Registers& out);

 private:
  struct Impl;
  explicit InstructionDecoder(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace tracecorn::arch
