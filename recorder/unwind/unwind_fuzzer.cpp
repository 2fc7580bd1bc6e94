// Role: libFuzzer harness for the unwinder's parsers of untrusted bytes: the
// SFrame reader, the DWARF CFI parser and CFA program interpreter (as
// .eh_frame and as .debug_frame), and the DW_OP evaluator. Any bytes must give
// values or Errors, never a crash, a hang or a sanitizer report. Built with
// clang only (recorder/unwind/CMakeLists.txt); CTest runs it briefly as
// unwind_fuzzer_smoke.
// Input: byte 0 selects the target (mod 4: 0 SFrame, 1 .eh_frame, 2
// .debug_frame, 3 DW_OP); the rest is the section or expression. The memory
// an expression may read is the input itself, mapped at 0x1000.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

#include "recorder/unwind/cfi.h"
#include "recorder/unwind/dwarf_expression.h"
#include "recorder/unwind/sframe.h"

namespace {

using namespace tracecorn::unwind;

class InputMemory final : public MemoryReader {
 public:
  explicit InputMemory(std::span<const std::uint8_t> bytes) : bytes_(bytes) {}
  bool read(std::uint64_t address, void* out, std::size_t size) noexcept override {
    if (address < 0x1000 || address - 0x1000 > bytes_.size() || size > bytes_.size() - (address - 0x1000)) return false;
    std::memcpy(out, bytes_.data() + (address - 0x1000), size);
    return true;
  }

 private:
  std::span<const std::uint8_t> bytes_;
};

RegisterSet some_registers() {
  RegisterSet registers;
  for (unsigned reg = 0; reg < 17; ++reg) registers.set(reg, 0x1000 + reg * 8);
  return registers;
}

void fuzz_sframe(std::span<const std::uint8_t> bytes) {
  auto table = SFrameTable::create(bytes, 0x10000, "fuzz");
  if (!table) return;
  const std::uint32_t count = table->fde_count() < 64 ? table->fde_count() : 64;
  for (std::uint32_t i = 0; i < count; ++i) {
    auto fde = table->fde(i);
    if (!fde) continue;
    (void)table->for_each_fre(*fde, [](const SFrameFre&) {});
    for (std::uint64_t pc : {fde->start, fde->start + fde->size / 2, fde->start + fde->size - 1}) {
      auto found = table->find_fde(pc);
      if (!found || !*found) continue;
      auto fre = table->find_fre(**found, pc);
      if (fre && *fre) (void)table->row_for(**fre, SFrameRegisters{});
    }
  }
}

void fuzz_cfi(std::span<const std::uint8_t> bytes, CfiKind kind) {
  CfiSection section;
  section.kind = kind;
  section.bytes = bytes;
  section.address = 0x10000;
  section.source = "fuzz";
  auto table = CfiTable::create(section);
  if (!table) return;
  InputMemory memory(bytes);
  const RegisterSet registers = some_registers();
  ExpressionContext context;
  context.registers = &registers;
  context.memory = &memory;
  int fdes = 0;
  (void)table->for_each([&](const CieRecord*, const FdeRecord* fde) {
    if (!fde || ++fdes > 64) return;
    (void)table->rows(*fde, [](const UnwindRow&) {});
    const std::uint64_t span = fde->pc_end - fde->pc_begin;
    if (span == 0) return;
    auto row = table->row_at(*fde, fde->pc_begin + span / 2);
    if (!row) return;
    if (row->cfa.is_expression) (void)evaluate_expression({row->cfa.expression, row->cfa.expression_size}, context, {});
    for (const auto& rule : row->rule_list())
      if (rule.kind == RuleKind::kExpression || rule.kind == RuleKind::kValExpression)
        (void)evaluate_expression({rule.expression, rule.expression_size}, context, 0x2000);
    auto found = table->find_fde(fde->pc_begin);
    (void)found;
  });
}

void fuzz_expression(std::span<const std::uint8_t> bytes) {
  InputMemory memory(bytes);
  const RegisterSet registers = some_registers();
  ExpressionContext context;
  context.registers = &registers;
  context.memory = &memory;
  (void)evaluate_expression(bytes, context, 0x1008);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::span<const std::uint8_t> rest(data + 1, size - 1);
  switch (data[0] % 4) {
    case 0: fuzz_sframe(rest); break;
    case 1: fuzz_cfi(rest, CfiKind::kEhFrame); break;
    case 2: fuzz_cfi(rest, CfiKind::kDebugFrame); break;
    default: fuzz_expression(rest); break;
  }
  return 0;
}
