// Role: unit tests of arch/instruction_decoder.h, the decoder the formats use
// instead of Capstone: text, size, instruction counts and register lists for a
// few hand-encoded instructions (their encodings from the Intel SDM, the Arm
// ARM and the RISC-V ISA manual), both of arm's instruction sets, riscv64 (which
// Capstone 4 cannot decode: sizes, counts and register lists come from its own
// decoder, checked against encodings from binutils' riscv64 assembler), and
// "Malicious:" cases (empty and cut bytes).
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

TEST_CASE("Arch: the instruction decoder sizes riscv64 with its own decoder") {
  const ArchInfo& arch = riscv64_arch();
  REQUIRE(static_cast<bool>(arch.decode_without_capstone));
  auto decoder = open_decoder(arch, false);
  const Bytes code = {0x13, 0x05, 0x10, 0x00, 0x05, 0x05};  // addi a0, zero, 1; c.addi a0, 1
  CHECK(decoder->instruction_size(code, 0x1000, 0) == 4);
  CHECK_FALSE(decoder->disassemble(code, 0x1000, 0));
  std::size_t undecoded = 99;
  CHECK(decoder->count_instructions(code, 0x1000, 0, undecoded) == 2);
  CHECK(undecoded == 0);
}

// One riscv64 instruction's registers, by name: what it reads, writes and addresses memory from.
struct Riscv64Case {
  const char* text;  // as riscv64-linux-gnu-objdump -M no-aliases prints it
  Bytes bytes;
  std::vector<std::string_view> read, written, base;
};

TEST_CASE("Arch: the instruction decoder lists riscv64's registers read, written and addressing memory") {
  const ArchInfo& arch = riscv64_arch();
  auto decoder = open_decoder(arch, true);
  const Riscv64Case cases[] = {
      {"add a0,a1,a2", {0x33, 0x85, 0xc5, 0x00}, {"a1", "a2"}, {"a0"}, {}},
      {"sd a1,8(sp)", {0x23, 0x34, 0xb1, 0x00}, {"sp", "a1"}, {}, {"sp"}},
      {"ld a0,16(s0)", {0x03, 0x35, 0x04, 0x01}, {"s0"}, {"a0"}, {"s0"}},
      {"fsd fa0,8(a2)", {0x27, 0x34, 0xa6, 0x00}, {"a2", "fa0"}, {}, {"a2"}},
      {"beq a0,a1,.", {0x63, 0x00, 0xb5, 0x00}, {"a0", "a1"}, {}, {}},
      {"fmadd.d fa0,fa1,fa2,fa3", {0x43, 0xf5, 0xc5, 0x6a}, {"fa1", "fa2", "fa3"}, {"fa0", "fcsr"}, {}},
      {"csrrw a0,fcsr,a1", {0x73, 0x95, 0x35, 0x00}, {"a1", "fcsr"}, {"a0", "fcsr"}, {}},
      {"amoadd.w a0,a1,(a2)", {0x2f, 0x25, 0xb6, 0x00}, {"a2", "a1"}, {"a0"}, {"a2"}},
      {"fcvt.d.l fa0,a1", {0x53, 0xf5, 0x25, 0xd2}, {"a1"}, {"fa0", "fcsr"}, {}},
      {"c.sdsp a1,8(sp)", {0x2e, 0xe4}, {"sp", "a1"}, {}, {"sp"}},
      {"c.ld a0,16(s0)", {0x08, 0x68}, {"s0"}, {"a0"}, {"s0"}},
      {"c.add a0,a1", {0x2e, 0x95}, {"a0", "a1"}, {"a0"}, {}},
      {"c.sw a1,4(a0)", {0x4c, 0xc1}, {"a0", "a1"}, {}, {"a0"}},
      {"c.mv a0,a1", {0x2e, 0x85}, {"a1"}, {"a0"}, {}},
      {"c.fsdsp fa0,8(sp)", {0x2a, 0xa4}, {"sp", "fa0"}, {}, {"sp"}},
      {"c.lui a0,0x12", {0x49, 0x65}, {}, {"a0"}, {}},
      {"c.addi4spn a0,sp,16", {0x08, 0x08}, {"sp"}, {"a0"}, {}},
      {"c.jr a5", {0x82, 0x87}, {"a5"}, {}, {}},
  };
  const auto indices = [&](const std::vector<std::string_view>& names) {
    std::vector<std::uint16_t> out;
    for (const auto name : names) out.push_back(index_of(arch, name));
    return out;
  };
  for (const auto& c : cases) {
    CAPTURE(c.text);
    InstructionDecoder::Registers registers;
    REQUIRE(decoder->registers(c.bytes, 0x1000, 0, registers));
    CHECK(registers.reads_listed);
    CHECK(registers.read == indices(c.read));
    CHECK(registers.written == indices(c.written));
    CHECK(registers.base == indices(c.base));
    CHECK(decoder->instruction_size(c.bytes, 0x1000, 0) == c.bytes.size());
  }
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
