// Role: unit tests of the RV64GC decoder in arch/riscv64.cpp
// (ArchInfo::decode_without_capstone) against a decoder nobody here wrote:
// riscv64-linux-gnu-objdump -d -M no-aliases over every instruction of three
// cross-built riscv64 samples (the programs and the glibc linked into them).
// For each instruction objdump names, ours must give the same size; the
// register it writes must be objdump's first operand (its rd) exactly when the
// mnemonic writes one (stores, branches, fences, ecall write none; c.jalr ra);
// loads read once, stores write once, AMOs read and write, lr reads, sc varies;
// fcsr is written by the FP operations that can raise flags and by the CSR
// accesses of fflags/frm/fcsr; the base register and offset of the memory
// operand are objdump's "offset(base)". Plus "Malicious:" cases: cut and reserved encodings.
// Runs on the test thread; needs binutils-riscv64-linux-gnu (scripts/setup.sh).
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "arch/arch.h"
#include "tests/recorder/unwind/unwind_test_support.h"

namespace tracecorn::arch {
namespace {

const std::string kSamples = std::string(TRACECORN_SAMPLES_DIR) + "-riscv64/static";

using unwind::test::run_tool;

std::string hex(std::uint64_t value) {
  std::ostringstream out;
  out << std::hex << value;
  return out.str();
}

bool starts_with(const std::string& text, const char* prefix) { return text.rfind(prefix, 0) == 0; }

struct ObjdumpInstruction {
  std::uint64_t address = 0;
  std::vector<std::uint8_t> bytes;  // little endian, from objdump's hex word
  std::string mnemonic;
  std::vector<std::string> operands;
};

// Every instruction line of `objdump -d -M no-aliases`: "   addr:\tHEX   \tmnemonic\toperands".
std::vector<ObjdumpInstruction> objdump_instructions(const std::string& program) {
  std::vector<ObjdumpInstruction> out;
  std::istringstream lines(run_tool("riscv64-linux-gnu-objdump -d -M no-aliases '" + program + "'"));
  std::string line;
  while (std::getline(lines, line)) {
    std::vector<std::string> fields;
    std::string field;
    std::istringstream parts(line);
    while (std::getline(parts, field, '\t')) fields.push_back(field);
    if (fields.size() < 3 || fields[0].empty() || fields[0].back() != ':') continue;
    ObjdumpInstruction insn;
    insn.address = std::stoull(fields[0], nullptr, 16);
    std::string hex = fields[1];
    hex.erase(hex.find_last_not_of(' ') + 1);
    if (hex.empty() || hex.size() % 2 || hex.find(' ') != std::string::npos) continue;
    const std::uint64_t value = std::stoull(hex, nullptr, 16);
    for (std::size_t i = 0; i < hex.size() / 2; ++i) insn.bytes.push_back(static_cast<std::uint8_t>(value >> (8 * i)));
    insn.mnemonic = fields[2];
    if (fields.size() > 3) {
      std::string text = fields[3].substr(0, fields[3].find('#'));  // "# 7b0e0 <_nl_global_locale+0x..>"
      text.erase(text.find_last_not_of(' ') + 1);
      std::istringstream operands(text);
      std::string operand;
      while (std::getline(operands, operand, ',')) insn.operands.push_back(operand);
    }
    out.push_back(std::move(insn));
  }
  return out;
}

// What objdump's text says the instruction writes and accesses.
struct Expected {
  std::set<std::uint16_t> written;
  int reads = 0, writes = 0;
  bool fixed = true;
  int base = -1;        // objdump's "offset(base)" operand: the base register's index
  std::int32_t offset = 0;
};

bool is_one_of(const std::string& mnemonic, std::initializer_list<const char*> names) {
  for (const char* name : names)
    if (mnemonic == name) return true;
  return false;
}

Expected expected_effects(const ArchInfo& arch, const ObjdumpInstruction& insn) {
  Expected expected;
  const std::string& m = insn.mnemonic;
  const bool compressed = starts_with(m, "c.");
  const std::string name = compressed ? m.substr(2) : m;
  const bool load = is_one_of(name, {"lb", "lh", "lw", "ld", "lbu", "lhu", "lwu", "flw", "fld", "lwsp", "ldsp", "fldsp"});
  const bool store = is_one_of(name, {"sb", "sh", "sw", "sd", "fsw", "fsd", "swsp", "sdsp", "fsdsp"});
  const bool no_rd = store || is_one_of(name, {"j", "jr", "beqz", "bnez", "ebreak", "ecall", "nop", "fence", "fence.i",
                                                "fence.tso", "beq", "bne", "blt", "bge", "bltu", "bgeu"});
  if (load) expected.reads = 1;
  if (store) expected.writes = 1;
  if (starts_with(m, "lr.")) expected.reads = 1;
  if (starts_with(m, "sc.")) {
    expected.reads = expected.writes = 1;
    expected.fixed = false;
  } else if (starts_with(m, "amo")) {
    expected.reads = expected.writes = 1;
  }
  auto add = [&](const std::string& register_name) {
    if (register_name == "zero") return;
    const RegisterInfo* info = arch.find_register(register_name);
    REQUIRE_MESSAGE(info, "objdump's register " << register_name);
    expected.written.insert(static_cast<std::uint16_t>(info - arch.registers.data()));
  };
  // The memory operand "offset(base)" (objdump prints the offset in decimal).
  static const std::regex memory_operand(R"(^(-?[0-9]+)?\(([a-z0-9]+)\)$)");
  std::smatch match;
  if ((expected.reads || expected.writes) && !insn.operands.empty() &&
      std::regex_match(insn.operands.back(), match, memory_operand)) {
    const RegisterInfo* base = arch.find_register(match[2].str());
    REQUIRE_MESSAGE(base, "objdump's base register " << match[2]);
    expected.base = static_cast<int>(base - arch.registers.data());
    expected.offset = match[1].matched ? std::stoi(match[1].str()) : 0;
  }
  if (m == "c.jalr") {
    add("ra");
  } else if (!no_rd && !insn.operands.empty()) {
    add(insn.operands[0]);
  }
  // fcsr: the FP operations that may raise exception flags, and CSR accesses to fflags/frm/fcsr.
  const bool fp = m[0] == 'f' && !load && !store && !starts_with(m, "fence") && !starts_with(m, "fmv.") &&
                  !starts_with(m, "fsgnj") && !starts_with(m, "fclass");
  const bool fp_csr = starts_with(m, "csrr") && insn.operands.size() > 1 &&
                      is_one_of(insn.operands[1], {"fflags", "frm", "fcsr"});
  if (fp || fp_csr) add("fcsr");
  return expected;
}

}  // namespace

TEST_CASE("Arch riscv64: the decoder agrees with objdump on every instruction of the samples and their glibc") {
  const ArchInfo& arch = riscv64_arch();
  REQUIRE(static_cast<bool>(arch.decode_without_capstone));
  REQUIRE_MESSAGE(!run_tool("command -v riscv64-linux-gnu-objdump").empty(),
                  "riscv64-linux-gnu-objdump is missing (apt-get install binutils-riscv64-linux-gnu)");
  std::size_t checked = 0, compressed = 0, unimp = 0, differing = 0;
  std::map<std::string, std::size_t> mnemonics;
  for (const std::string sample : {"hello", "floating", "heap"}) {
    CAPTURE(sample);
    const auto instructions = objdump_instructions(kSamples + "/" + sample);
    CHECK(instructions.size() > 10000);
    for (const auto& insn : instructions) {
      EncodedInstruction decoded;
      const bool ok = arch.decode_without_capstone(insn.bytes, decoded);
      if (insn.mnemonic == "c.unimp" || insn.mnemonic == "unimp") {  // 0x0000: defined illegal
        CHECK(!ok);
        ++unimp;
        continue;
      }
      const Expected expected = expected_effects(arch, insn);
      const std::set<std::uint16_t> written(decoded.written.begin(), decoded.written.begin() + decoded.written_count);
      const bool same = ok && decoded.size == insn.bytes.size() && written == expected.written &&
                        decoded.memory_reads == expected.reads && decoded.memory_writes == expected.writes &&
                        decoded.memory_count_fixed == expected.fixed && decoded.base_register == expected.base &&
                        decoded.memory_offset == expected.offset;
      if (!same && ++differing <= 5)
        MESSAGE(hex(insn.address) << " " << insn.mnemonic << " (" << insn.bytes.size()
                         << " bytes): decoded " << ok << " size " << int(decoded.size) << " writes "
                         << int(decoded.written_count) << " (expected " << expected.written.size() << ") reads "
                         << int(decoded.memory_reads) << " writes " << int(decoded.memory_writes) << " operand "
                         << decoded.memory_offset << "(" << decoded.base_register << ") expected " << expected.offset
                         << "(" << expected.base << ")");
      ++checked;
      compressed += insn.bytes.size() == 2;
      ++mnemonics[insn.mnemonic];
    }
  }
  MESSAGE(checked << " instructions (" << compressed << " compressed, " << mnemonics.size() << " mnemonics), "
                  << unimp << " c.unimp");
  CHECK(differing == 0);
  CHECK(compressed * 3 > checked);   // RVC is most of Debian's code
  CHECK(mnemonics.size() > 100);    // a broad part of RV64GC, FP and atomics included
}

TEST_CASE("Arch riscv64: the decoder's base register is rs1 (sp for the sp-relative compressed forms)") {
  const ArchInfo& arch = riscv64_arch();
  EncodedInstruction decoded;
  // ld a1,8(sp) = 0x00813583; c.ldsp a1,8(sp) = 0x65a2; c.sd a0,0(a1) = 0xe188; amoadd.d t0,t1,(a0) = 0x006532af.
  const std::uint8_t ld[] = {0x83, 0x35, 0x81, 0x00}, ldsp[] = {0xa2, 0x65}, csd[] = {0x88, 0xe1},
                     amo[] = {0xaf, 0x32, 0x65, 0x00};
  REQUIRE(arch.decode_without_capstone(std::span<const std::uint8_t>(ld), decoded));
  CHECK(decoded.base_register == 2);
  CHECK(decoded.memory_offset == 8);
  REQUIRE(arch.decode_without_capstone(std::span<const std::uint8_t>(ldsp), decoded));
  CHECK(decoded.base_register == 2);
  REQUIRE(arch.decode_without_capstone(std::span<const std::uint8_t>(csd), decoded));
  CHECK(decoded.base_register == 11);
  REQUIRE(arch.decode_without_capstone(std::span<const std::uint8_t>(amo), decoded));
  CHECK(decoded.base_register == 10);
  CHECK(decoded.size == 4);
}

TEST_CASE("Malicious: the riscv64 decoder refuses cut, empty, reserved and longer-than-32-bit encodings") {
  const ArchInfo& arch = riscv64_arch();
  EncodedInstruction decoded;
  const std::uint8_t empty[1] = {0x13};
  CHECK(!arch.decode_without_capstone(std::span<const std::uint8_t>(empty, 0), decoded));
  CHECK(!arch.decode_without_capstone(std::span<const std::uint8_t>(empty, 1), decoded));
  const std::uint8_t cut[] = {0x13, 0x00, 0x00};  // a 32-bit addi with its last byte missing
  CHECK(!arch.decode_without_capstone(std::span<const std::uint8_t>(cut), decoded));
  CHECK(decoded.size == 0);
  const std::uint8_t zero[] = {0x00, 0x00, 0x00, 0x00};  // defined illegal
  CHECK(!arch.decode_without_capstone(std::span<const std::uint8_t>(zero), decoded));
  const std::uint8_t wide[] = {0x1f, 0x00, 0x00, 0x00, 0x00, 0x00};  // 48-bit encoding space
  CHECK(!arch.decode_without_capstone(std::span<const std::uint8_t>(wide), decoded));
  const std::uint8_t reserved_c[] = {0x00, 0x80};  // quadrant 0 funct3 100: reserved
  CHECK(!arch.decode_without_capstone(std::span<const std::uint8_t>(reserved_c), decoded));
  const std::uint8_t ones[] = {0xff, 0xff, 0xff, 0xff};
  CHECK(!arch.decode_without_capstone(std::span<const std::uint8_t>(ones), decoded));
  // Every 16-bit pattern and every major opcode with random fields: never more
  // than 3 written registers, a size of 0, 2 or 4 that fits the bytes given.
  std::uint32_t state = 12345;
  std::size_t bad = 0;
  for (std::uint32_t i = 0; i < 200000; ++i) {
    state = state * 1103515245u + 12345u;
    const std::uint32_t word = i < 65536 ? i : state;
    const std::uint8_t bytes[] = {static_cast<std::uint8_t>(word), static_cast<std::uint8_t>(word >> 8),
                                  static_cast<std::uint8_t>(word >> 16), static_cast<std::uint8_t>(word >> 24)};
    const std::size_t length = i < 65536 ? 2 : 4;
    const bool ok = arch.decode_without_capstone(std::span<const std::uint8_t>(bytes, length), decoded);
    bad += !(ok ? decoded.size <= length && decoded.size >= 2 : decoded.size == 0);
    bad += decoded.written_count > EncodedInstruction::kMaxWritten;
    for (std::uint8_t w = 0; w < decoded.written_count; ++w) bad += decoded.written[w] >= arch.registers.size();
  }
  CHECK(bad == 0);
}

}  // namespace tracecorn::arch
