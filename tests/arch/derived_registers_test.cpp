// Role: tests of the derived register writes (arch/derived_registers.h):
// every instruction form the producer computes instead of reading (mov, movabs,
// add, sub, cmp, and, or, xor, test, inc, dec, neg, not, lea; register,
// high-byte register and immediate operands; 8/16/32/64-bit; lea with base,
// index, scale, displacement, rip-relative and 16/32-bit address sizes) is
// encoded by hand, decoded by the recorder's own BlockDecoder (so the recipe
// must also agree with Capstone's written list), and run in Unicorn from random
// and edge register values and flags; the destination register and the flags
// the recipe computes must equal what Unicorn reports. The reference is
// Unicorn (QEMU), which the recorded traces must agree with.
// Who runs it: unit_tests (doctest), single threaded; about a second.
#include <doctest/doctest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <capstone/capstone.h>
#include <unicorn/unicorn.h>

#include "arch/arch.h"
#include "recorder/core/block_cache.h"
#include "arch/derived_registers.h"

namespace tracecorn {
namespace {

using Bytes = std::vector<std::uint8_t>;

Bytes sized(int width, std::uint8_t byte_opcode, std::uint8_t wide_opcode) {
  Bytes b;
  if (width == 2) b.push_back(0x66);
  if (width == 8) b.push_back(0x48);
  b.push_back(width == 1 ? byte_opcode : wide_opcode);
  return b;
}
Bytes concat(Bytes a, const Bytes& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}
Bytes with_immediate(Bytes b, std::uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) b.push_back(static_cast<std::uint8_t>(value >> (8 * i)));
  return b;
}

// The forms, each as its encoding. 8-bit register numbers 4..7 are ah, ch, dh, bh.
std::vector<Bytes> instruction_forms(bool with_64bit) {
  std::vector<Bytes> forms;
  const std::vector<int> widths = with_64bit ? std::vector<int>{1, 2, 4, 8} : std::vector<int>{1, 2, 4};
  // add, or, and, sub, xor, cmp r/m, r; test r/m, r; mov r/m, r; mov r, r/m.
  for (const std::uint8_t base : {0x00, 0x08, 0x20, 0x28, 0x30, 0x38, 0x84, 0x88, 0x8a}) {
    for (const int width : widths) {
      for (const auto& [dst, src] : {std::pair{0, 1}, std::pair{2, 2}, std::pair{3, 6}, std::pair{4, 5}, std::pair{0, 7}}) {
        if (width != 1 && (dst >= 4 || src >= 4) && !(dst == 3 && src == 6)) continue;  // ah.. only as 8-bit
        if (width == 1 && dst == 3 && src == 6) continue;                               // dh/esi mix: skip
        Bytes b = sized(width, base, static_cast<std::uint8_t>(base + 1));
        b.push_back(static_cast<std::uint8_t>(0xc0 | (src << 3) | dst));
        forms.push_back(b);
      }
    }
  }
  // Group 1 with an immediate: add /0, or /1, and /4, sub /5, xor /6, cmp /7.
  for (const int digit : {0, 1, 4, 5, 6, 7}) {
    for (const int width : widths) {
      for (const int reg : {3, 4}) {
        if (reg == 4 && width != 1) continue;  // rsp: left alone
        const auto modrm = static_cast<std::uint8_t>(0xc0 | (digit << 3) | reg);
        for (const std::uint64_t value : {0x00ull, 0x01ull, 0x7full, 0x80ull, 0xffull}) {
          Bytes b = sized(width, 0x80, 0x83);  // 0x83: a sign-extended 8-bit immediate
          b.push_back(modrm);
          forms.push_back(with_immediate(b, value, 1));
        }
        if (width != 1) {
          Bytes b = sized(width, 0x80, 0x81);
          b.push_back(modrm);
          forms.push_back(with_immediate(b, 0x80000001u, width == 2 ? 2 : 4));
          forms.push_back(with_immediate(b, 0x7fff8000u, width == 2 ? 2 : 4));
        }
      }
    }
  }
  // test r/m, imm; inc, dec (FE/FF /0 /1); not, neg (F6/F7 /2 /3); mov r/m, imm (C6/C7 /0).
  for (const int width : widths) {
    Bytes test = sized(width, 0xf6, 0xf7);
    test.push_back(0xc3);  // /0, rbx
    forms.push_back(with_immediate(test, 0x80000081u, width == 1 ? 1 : width == 2 ? 2 : 4));
    Bytes move = sized(width, 0xc6, 0xc7);
    move.push_back(0xc6);  // /0, rsi (dh as 8-bit)
    forms.push_back(with_immediate(move, 0x80000081u, width == 1 ? 1 : width == 2 ? 2 : 4));
    for (const auto& [opcodes, digit] : {std::pair{std::pair{0xfe, 0xff}, 0}, std::pair{std::pair{0xfe, 0xff}, 1},
                                        std::pair{std::pair{0xf6, 0xf7}, 2}, std::pair{std::pair{0xf6, 0xf7}, 3}}) {
      for (const int reg : {1, 7}) {
        if (reg == 7 && width != 1) continue;
        Bytes b = sized(width, static_cast<std::uint8_t>(opcodes.first), static_cast<std::uint8_t>(opcodes.second));
        b.push_back(static_cast<std::uint8_t>(0xc0 | (digit << 3) | reg));
        forms.push_back(b);
      }
    }
  }
  // mov r, imm (B0+r, B8+r): al, ah, ebx; movabs rdx, imm64.
  forms.push_back({0xb0, 0x85});
  forms.push_back({0xb4, 0x7f});
  forms.push_back(with_immediate({0xbb}, 0xfedcba98u, 4));
  forms.push_back(with_immediate({0x66, 0xbb}, 0x8001u, 2));
  if (with_64bit) forms.push_back(with_immediate({0x48, 0xba}, 0x8123456789abcdefull, 8));
  // lea: [rax+rdx*2]; [rbx+rsi*4+0x10]; [rcx*8+0x100] (no base); [rdi-0x80];
  // the same with 32- and 16-bit operands; with a 32-bit address (0x67).
  for (const int width : {2, 4, 8}) {
    if (width == 8 && !with_64bit) continue;
    forms.push_back(concat(sized(width, 0x8d, 0x8d), Bytes{0x04, 0x50}));
    forms.push_back(concat(sized(width, 0x8d, 0x8d), Bytes{0x44, 0xb3, 0x10}));
    forms.push_back(with_immediate(concat(sized(width, 0x8d, 0x8d), Bytes{0x04, 0xcd}), 0x100, 4));
    forms.push_back(concat(sized(width, 0x8d, 0x8d), Bytes{0x47, 0x80}));
  }
  if (with_64bit) {
    forms.push_back({0x67, 0x8d, 0x04, 0x50});                               // lea eax, [eax+edx*2]
    forms.push_back(with_immediate({0x48, 0x8d, 0x05}, 0x1234, 4));          // lea rax, [rip+0x1234]
    forms.push_back(with_immediate({0x48, 0x8d, 0x0d}, 0xfffff000u, 4));     // lea rcx, [rip-0x1000]
    forms.push_back({0x4c, 0x8d, 0x04, 0x50});                               // lea r8, [rax+rdx*2]
    forms.push_back({0x4d, 0x01, 0xc8});                                     // add r8, r9
    forms.push_back({0x44, 0x88, 0xc6});                                     // mov sil, r8b
  } else {
    forms.push_back({0x67, 0x66, 0x8d, 0x00});  // lea ax, [bx+si] (16-bit address)
  }
  return forms;
}

void check_against_unicorn(const arch::ArchInfo& arch, bool is_64bit) {
  uc_engine* engine = nullptr;
  REQUIRE(uc_open(UC_ARCH_X86, is_64bit ? UC_MODE_64 : UC_MODE_32, &engine) == UC_ERR_OK);
  constexpr std::uint64_t kCode = 0x10000;
  REQUIRE(uc_mem_map(engine, kCode, 0x1000, UC_PROT_ALL) == UC_ERR_OK);
  auto decoder = core::BlockDecoder::create(arch);
  REQUIRE(decoder);
  const int gprs[8] = {UC_X86_REG_RAX, UC_X86_REG_RCX, UC_X86_REG_RDX, UC_X86_REG_RBX,
                       UC_X86_REG_RSP, UC_X86_REG_RBP, UC_X86_REG_RSI, UC_X86_REG_RDI};
  const int gprs32[8] = {UC_X86_REG_EAX, UC_X86_REG_ECX, UC_X86_REG_EDX, UC_X86_REG_EBX,
                         UC_X86_REG_ESP, UC_X86_REG_EBP, UC_X86_REG_ESI, UC_X86_REG_EDI};
  std::mt19937_64 random(20261122);
  const std::uint64_t edges[] = {0, 1, 0x7f, 0x80, 0xff, 0x7fff, 0x8000, 0xffff, 0x7fffffff, 0x80000000, 0xffffffff,
                                 0x7fffffffffffffff, 0x8000000000000000, 0xffffffffffffffff, 0x0f0f, 0x8080};
  const int flags_found = arch.engine->register_index_for_capstone(X86_REG_EFLAGS);
  REQUIRE(flags_found >= 0);
  const auto flags_index = static_cast<std::uint16_t>(flags_found);
  std::size_t forms = 0, trials = 0, mismatches = 0;
  for (const Bytes& code : instruction_forms(is_64bit)) {
    const core::DecodedBlock block = (*decoder)->decode(kCode, code, true);
    REQUIRE(block.instructions.size() >= 1);
    const core::DecodedInstruction& insn = block.instructions[0];
    CAPTURE(code.size());
    CAPTURE(static_cast<int>(code.back()));
    CHECK(insn.size == code.size());
    const arch::DerivedWrites& recipe = insn.derived;
    CHECK_MESSAGE(recipe.operation != arch::DerivedOperation::kNone,
                  "no recipe for the form at index " << forms << " of " << code.size() << " bytes");
    if (recipe.operation == arch::DerivedOperation::kNone) continue;
    ++forms;
    REQUIRE(uc_mem_write(engine, kCode, code.data(), code.size()) == UC_ERR_OK);
    auto read = [&](std::uint16_t index) {
      std::uint64_t value = 0;
      uc_reg_read(engine, arch.registers[index].uc_id, &value);
      return value;
    };
    for (int trial = 0; trial < 48; ++trial) {
      for (int r = 0; r < 8; ++r) {
        if (r == 4) continue;  // rsp
        std::uint64_t value = random();
        if (random() % 2) value = edges[random() % std::size(edges)];
        if (random() % 4 == 0) value = (value & ~0xff00ull) | ((random() % 2 ? 0x80ull : 0xffull) << 8);  // ah..
        uc_reg_write(engine, is_64bit ? gprs[r] : gprs32[r], &value);
      }
      if (is_64bit) {
        for (const int r : {UC_X86_REG_R8, UC_X86_REG_R9}) {
          std::uint64_t value = random();
          uc_reg_write(engine, r, &value);
        }
      }
      std::uint64_t flags_before = 0x202 | (random() & 0x8d5);
      uc_reg_write(engine, UC_X86_REG_EFLAGS, &flags_before);
      const std::uint64_t a = read(recipe.a.index), b = read(recipe.b.index), destination = read(recipe.destination);
      const std::uint64_t old_flags = read(flags_index);
      REQUIRE(uc_emu_start(engine, kCode, kCode + code.size(), 0, 1) == UC_ERR_OK);
      const arch::DerivedValues derived = arch::derive_values(recipe, a, b, destination, old_flags);
      ++trials;
      const std::uint64_t unicorn_destination = read(recipe.destination);
      const std::uint64_t unicorn_flags = read(flags_index);
      const bool destination_wrong = recipe.stores_result && derived.destination != unicorn_destination;
      const bool flags_wrong = recipe.sets_flags && derived.flags != unicorn_flags;
      if ((destination_wrong || flags_wrong) && ++mismatches <= 8)
        FAIL_CHECK("form " << forms << " (" << code.size() << " bytes, last " << std::hex << int{code.back()}
                           << "): a " << a << " b " << b << " destination " << destination << " flags " << old_flags
                           << ": Unicorn " << unicorn_destination << "/" << unicorn_flags << ", derived "
                           << derived.destination << "/" << derived.flags << std::dec);
    }
  }
  MESSAGE(arch.name << ": " << forms << " forms, " << trials << " runs, " << mismatches << " mismatches");
  CHECK(mismatches == 0);
  CHECK(forms > 200);
  uc_close(engine);
}

}  // namespace

TEST_CASE("Derived registers: every derived form gives Unicorn's destination and flags, x86-64") {
  check_against_unicorn(arch::x86_64_arch(), true);
}

TEST_CASE("Derived registers: every derived form gives Unicorn's destination and flags, i386") {
  check_against_unicorn(arch::i386_arch(), false);
}

TEST_CASE("Derived registers: memory operands, prefixes, other instructions and other architectures get no recipe") {
  auto decoder = core::BlockDecoder::create(arch::x86_64_arch());
  REQUIRE(decoder);
  // add [rax], rcx; cmp qword [rdi], 1; adc rax, rcx; shl rax, 1; imul rax, rcx; mov rax, [rbx];
  // mov eax, ds; lea rax, [fs:rax] is still lea (segment ignored) but xchg rax, rcx is not;
  // push rax; lock add [rax], ecx; movzx eax, bl; mov rax, cr0-like (mov r, sreg)
  const Bytes codes[] = {{0x48, 0x01, 0x08}, {0x48, 0x83, 0x3f, 0x01}, {0x48, 0x11, 0xc8}, {0x48, 0xd1, 0xe0},
                         {0x48, 0x0f, 0xaf, 0xc1}, {0x48, 0x8b, 0x03}, {0x8c, 0xd8}, {0x48, 0x91},
                         {0x50}, {0xf0, 0x01, 0x08}, {0x0f, 0xb6, 0xc3}, {0x8e, 0xd8}};
  for (const Bytes& code : codes) {
    CAPTURE(code.size());
    CAPTURE(static_cast<int>(code[code.size() - 1]));
    const core::DecodedBlock block = (*decoder)->decode(0x1000, code, true);
    REQUIRE(!block.instructions.empty());
    CHECK(block.instructions[0].derived.operation == arch::DerivedOperation::kNone);
  }
  // The same bytes as another architecture's: no recipe either.
  auto arm = core::BlockDecoder::create(arch::aarch64_arch());
  REQUIRE(arm);
  const Bytes add = {0x20, 0x00, 0x02, 0x8b};  // add x0, x1, x2
  const core::DecodedBlock block = (*arm)->decode(0x1000, add, true);
  REQUIRE(!block.instructions.empty());
  CHECK(block.instructions[0].derived.operation == arch::DerivedOperation::kNone);
}

}  // namespace tracecorn
