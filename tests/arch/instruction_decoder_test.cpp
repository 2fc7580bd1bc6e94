// Role: unit tests of arch/instruction_decoder.h, the decoder the formats use
// instead of Capstone: text, size, instruction counts and register lists for a
// few hand-encoded instructions (their encodings from the Intel SDM, the Arm
// ARM and the RISC-V ISA manual), both of arm's instruction sets, riscv64 (which
// Capstone 4 cannot decode: sizes and counts come from its own decoder,
// register lists are refused), and "Malicious:" cases (empty and cut bytes).
// The formats' tests (text sink, BAP frames' operands, UCIR's counts) check it
// on whole programs. Runs on the test thread.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "arch/arch_info.h"
#include "arch/instruction_decoder.h"

namespace tracecorn::arch {
namespace {

using Bytes = std::vector<std::uint8_t>;

std::unique_ptr<InstructionDecoder> open_decoder(const ArchInfo& arch, bool register_detail) {
  auto decoder = InstructionDecoder::open(arch, register_detail);
  REQUIRE_MESSAGE(decoder, (decoder ? std::string() : decoder.error().to_string()));
  return std::move(*decoder);
}

std::uint16_t index_of(const ArchInfo& arch, std::string_view name) {
  const RegisterInfo* info = arch.find_register(name);
  REQUIRE_MESSAGE(info, name);
  return static_cast<std::uint16_t>(info - arch.registers.data());
}

bool has(const std::vector<std::uint16_t>& list, std::uint16_t index) {
  return std::find(list.begin(), list.end(), index) != list.end();
}

TEST_CASE("Arch: the instruction decoder gives x86-64's text, sizes, counts and registers") {
  const ArchInfo& arch = x86_64_arch();
  auto decoder = open_decoder(arch, true);
  const Bytes mov = {0x48, 0x89, 0xd8};  // mov rax, rbx
  const auto text = decoder->disassemble(mov, 0x1000, 0);
  REQUIRE(text);
  CHECK(text->mnemonic == "mov");
  CHECK(text->operands == "rax, rbx");
  CHECK(decoder->instruction_size(mov, 0x1000, 0) == 3);

  InstructionDecoder::Registers mov_registers;
  REQUIRE(decoder->registers(mov, 0x1000, 0, mov_registers));
  CHECK(mov_registers.read == std::vector<std::uint16_t>{index_of(arch, "rbx")});
  CHECK(mov_registers.written == std::vector<std::uint16_t>{index_of(arch, "rax")});
  CHECK(mov_registers.base.empty());

  const Bytes lea = {0x48, 0x8d, 0x04, 0x8b};  // lea rax, [rbx + rcx*4]
  InstructionDecoder::Registers lea_registers;
  REQUIRE(decoder->registers(lea, 0x1000, 0, lea_registers));
  CHECK(lea_registers.base == std::vector<std::uint16_t>{index_of(arch, "rbx")});
  CHECK(lea_registers.index == std::vector<std::uint16_t>{index_of(arch, "rcx")});
  CHECK(has(lea_registers.written, index_of(arch, "rax")));

  const Bytes block = {0x90, 0x48, 0x89, 0xd8, 0xc3};  // nop; mov rax, rbx; ret
  std::size_t undecoded = 99;
  CHECK(decoder->count_instructions(block, 0x1000, 0, undecoded) == 3);
  CHECK(undecoded == 0);
}

TEST_CASE("Arch: the instruction decoder decodes arm's two instruction sets by mode") {
  const ArchInfo& arch = arm_arch();
  REQUIRE(arch.alternate_isa);
  auto decoder = open_decoder(arch, false);
  const Bytes thumb_nop = {0x00, 0xbf};                    // nop (Thumb, T1)
  const Bytes arm_mov = {0x01, 0x00, 0xa0, 0xe1};          // mov r0, r1 (ARM, A1)
  CHECK(decoder->instruction_size(thumb_nop, 0x1000, 1) == 2);
  CHECK(decoder->instruction_size(thumb_nop, 0x1000, 0) == 0);  // half an ARM instruction
  CHECK(decoder->instruction_size(arm_mov, 0x1000, 0) == 4);
  const auto text = decoder->disassemble(arm_mov, 0x1000, 0);
  REQUIRE(text);
  CHECK(text->mnemonic == "mov");
  CHECK(text->operands == "r0, r1");
}

TEST_CASE("Arch: the instruction decoder sizes riscv64 with its own decoder and refuses register detail") {
  const ArchInfo& arch = riscv64_arch();
  REQUIRE(static_cast<bool>(arch.decode_without_capstone));
  auto decoder = open_decoder(arch, false);
  const Bytes code = {0x13, 0x05, 0x10, 0x00, 0x05, 0x05};  // addi a0, zero, 1; c.addi a0, 1
  CHECK(decoder->instruction_size(code, 0x1000, 0) == 4);
  CHECK_FALSE(decoder->disassemble(code, 0x1000, 0));
  std::size_t undecoded = 99;
  CHECK(decoder->count_instructions(code, 0x1000, 0, undecoded) == 2);
  CHECK(undecoded == 0);

  const auto with_detail = InstructionDecoder::open(arch, true);
  REQUIRE_FALSE(with_detail);
  CHECK(with_detail.error().code == ErrorCode::kUnsupported);
}

TEST_CASE("Malicious: the instruction decoder answers nothing for empty and cut bytes") {
  for (const ArchInfo* arch : {&x86_64_arch(), &arm_arch(), &mips_arch()}) {
    CAPTURE(arch->name);
    auto decoder = open_decoder(*arch, true);
    const Bytes cut = {0x48, 0x89};  // the start of a longer instruction (x86: mov), half of one (arm, mips)
    for (const Bytes& bytes : {Bytes{}, cut}) {
      CHECK(decoder->instruction_size(bytes, 0x1000, 0) == 0);
      CHECK_FALSE(decoder->disassemble(bytes, 0x1000, 0));
      InstructionDecoder::Registers registers;
      CHECK_FALSE(decoder->registers(bytes, 0x1000, 0, registers));
      CHECK(registers.read.empty());
      CHECK(registers.written.empty());
      std::size_t undecoded = 0;
      CHECK(decoder->count_instructions(bytes, 0x1000, 0, undecoded) == 0);
      CHECK(undecoded == bytes.size());
    }
  }
}

}  // namespace
}  // namespace tracecorn::arch
