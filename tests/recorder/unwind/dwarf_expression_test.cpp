// Role: tests of the DW_OP evaluator (recorder/unwind/dwarf_expression.h):
// the CFA expression of the PLT in Debian's libc.so.6 (taken from the file)
// against the formula binutils documents for it (bfd/elf64-x86-64.c:
// "CFA = rsp + 8 + ((rip & 15) >= 11 ? 8 : 0)"), the stack operations against
// plain C++ arithmetic, and malicious expressions (stack overflow, endless
// loops, unreadable memory, truncated operands) that must fail cleanly.
#include <doctest/doctest.h>

#include <cstring>
#include <map>
#include <vector>

#include "recorder/unwind/dwarf_expression.h"
#include "recorder/unwind/module_unwind_info.h"

using namespace tracecorn::unwind;
using tracecorn::ErrorCode;

namespace {

class MapMemory final : public MemoryReader {
 public:
  std::map<std::uint64_t, std::uint8_t> bytes;
  bool read(std::uint64_t address, void* out, std::size_t size) noexcept override {
    auto* p = static_cast<std::uint8_t*>(out);
    for (std::size_t i = 0; i < size; ++i) {
      auto found = bytes.find(address + i);
      if (found == bytes.end()) return false;
      p[i] = found->second;
    }
    return true;
  }
  void put64(std::uint64_t address, std::uint64_t value) {
    for (int i = 0; i < 8; ++i) bytes[address + static_cast<std::uint64_t>(i)] = static_cast<std::uint8_t>(value >> (8 * i));
  }
};

tracecorn::Expected<std::uint64_t> eval(const std::vector<std::uint8_t>& ops, const RegisterSet& registers,
                                        MemoryReader* memory = nullptr, std::optional<std::uint64_t> initial = {}) {
  ExpressionContext context;
  context.registers = &registers;
  context.memory = memory;
  return evaluate_expression(ops, context, initial);
}

}  // namespace

TEST_CASE("DW_OP: libc's PLT CFA expression gives binutils' formula at every PLT byte") {
  auto module = ModuleUnwindInfo::load("/lib/x86_64-linux-gnu/libc.so.6");
  REQUIRE(module.has_value());
  const auto* plt = (*module)->elf().find_section(".plt");
  REQUIRE(plt != nullptr);
  const CfiTable& table = *(*module)->eh_frame();
  std::size_t checked = 0;
  for (std::uint64_t pc = plt->addr + 16; pc < plt->addr + plt->size; ++pc) {
    auto fde = table.find_fde(pc);
    REQUIRE(fde.has_value());
    REQUIRE(fde->has_value());
    auto row = table.row_at(**fde, pc);
    REQUIRE(row.has_value());
    REQUIRE(row->cfa.is_expression);
    RegisterSet registers;
    const std::uint64_t rsp = 0x7ffffffde000 + (pc & 0xff) * 8;
    registers.set(7, rsp);
    registers.set(16, pc);
    auto cfa = eval({row->cfa.expression, row->cfa.expression + row->cfa.expression_size}, registers);
    REQUIRE(cfa.has_value());
    CHECK(*cfa == rsp + 8 + ((pc & 15) >= 11 ? 8 : 0));
    ++checked;
  }
  CHECK(checked >= 16);
}

TEST_CASE("DW_OP: arithmetic, stack and memory operations") {
  RegisterSet registers;
  registers.set(6, 1000);
  registers.set(7, 0x7fff0000);
  MapMemory memory;
  memory.put64(0x7fff0010, 0x1122334455667788ull);
  // breg7 +16; deref  -> the word at rsp+16
  auto loaded = eval({0x77, 16, 0x06}, registers, &memory);
  REQUIRE(loaded.has_value());
  CHECK(*loaded == 0x1122334455667788ull);
  // breg7 +16; deref_size 2
  auto narrow = eval({0x77, 16, 0x94, 2}, registers, &memory);
  REQUIRE(narrow.has_value());
  CHECK(*narrow == 0x7788);
  // lit5 lit3 minus -> 2; lit7 mul -> 14; const1s -4 div -> -3 (signed, truncating)
  auto math = eval({0x35, 0x33, 0x1c, 0x37, 0x1e, 0x09, 0xfc, 0x1b}, registers);
  REQUIRE(math.has_value());
  CHECK(static_cast<std::int64_t>(*math) == (5 - 3) * 7 / -4);
  // initial value (the CFA) plus_uconst 300
  auto plus = eval({0x23, 0xac, 0x02}, registers, nullptr, 0x1000);
  REQUIRE(plus.has_value());
  CHECK(*plus == 0x1000 + 300);
  // rot/swap/over/pick: lit1 lit2 lit3 rot -> 3 1 2; swap -> 3 2 1; over -> 3 2 1 2; pick 3 -> ... 3
  auto shuffle = eval({0x31, 0x32, 0x33, 0x17, 0x16, 0x14, 0x15, 3}, registers);
  REQUIRE(shuffle.has_value());
  CHECK(*shuffle == 3);
  // bra taken and not taken: lit0 bra +1 (not taken) lit1 ... ; lit1 bra +1 skips lit5
  auto branch = eval({0x30, 0x28, 1, 0, 0x31, 0x28, 1, 0, 0x35, 0x37}, registers);
  REQUIRE(branch.has_value());
  CHECK(*branch == 7);
  // comparisons are signed: const1s -1 lit0 lt -> 1
  auto compare = eval({0x09, 0xff, 0x30, 0x2d}, registers);
  REQUIRE(compare.has_value());
  CHECK(*compare == 1);
  // shra keeps the sign, shr does not
  auto shra = eval({0x09, 0xf0, 0x32, 0x26}, registers);
  REQUIRE(shra.has_value());
  CHECK(static_cast<std::int64_t>(*shra) == (-16 >> 2));
  // bregx 6 -8
  auto bregx = eval({0x92, 6, 0x78}, registers);
  REQUIRE(bregx.has_value());
  CHECK(*bregx == 1000 - 8);
}

TEST_CASE("Malicious: DW_OP stack overflow, endless loops, bad memory and truncation fail cleanly") {
  RegisterSet registers;
  registers.set(7, 0x1000);
  MapMemory memory;
  auto overflow = eval(std::vector<std::uint8_t>(65, 0x30), registers);
  REQUIRE_FALSE(overflow.has_value());
  CHECK(overflow.error().code == ErrorCode::kLimit);
  // skip -3: jumps back to itself forever
  auto loop = eval({0x2f, 0xfd, 0xff}, registers);
  REQUIRE_FALSE(loop.has_value());
  CHECK(loop.error().code == ErrorCode::kLimit);
  auto unreadable = eval({0x77, 0, 0x06}, registers, &memory);
  REQUIRE_FALSE(unreadable.has_value());
  CHECK(unreadable.error().code == ErrorCode::kIo);
  auto no_memory = eval({0x77, 0, 0x06}, registers, nullptr);
  REQUIRE_FALSE(no_memory.has_value());
  auto unknown_register = eval({0x73, 0}, registers);
  REQUIRE_FALSE(unknown_register.has_value());
  auto underflow = eval({0x22}, registers);
  REQUIRE_FALSE(underflow.has_value());
  auto divide = eval({0x31, 0x30, 0x1b}, registers);
  REQUIRE_FALSE(divide.has_value());
  auto outside = eval({0x2f, 0x10, 0x00}, registers);
  REQUIRE_FALSE(outside.has_value());
  auto empty = eval({}, registers);
  REQUIRE_FALSE(empty.has_value());
  auto unsupported = eval({0x91, 0}, registers);  // DW_OP_fbreg
  REQUIRE_FALSE(unsupported.has_value());
  CHECK(unsupported.error().message.find("0x91") != std::string::npos);
  // Every truncation of an expression with multi-byte operands.
  const std::vector<std::uint8_t> full = {0x0e, 1, 2, 3, 4, 5, 6, 7, 8, 0x92, 0x87, 0x01, 0x80, 0x7f, 0x94};
  for (std::size_t length = 1; length < full.size(); ++length) {
    auto cut = eval({full.begin(), full.begin() + static_cast<std::ptrdiff_t>(length)}, registers, &memory);
    if (!cut) CHECK(cut.error().offset.has_value());
  }
}
