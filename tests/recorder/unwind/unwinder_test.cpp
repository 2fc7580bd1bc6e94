// Role: tests of the Unwinder (recorder/unwind/unwinder.h) on memory images:
// a signal frame through libc's own __restore_rt CFI (the "zRS" CIE, every
// register restored by DW_CFA_expression from the ucontext the kernel pushes),
// laid out with glibc's <sys/ucontext.h> offsets; the caller of a signal
// frame looked up at its exact pc; the stop reasons (undefined return
// address, pc outside every module, non-increasing stack pointer, unreadable
// stack, depth limit); and module bookkeeping (partial unmaps keep a module).
#include <doctest/doctest.h>

#include <sys/ucontext.h>

#include <cstddef>
#include <cstring>
#include <map>

#include "recorder/unwind/unwinder.h"

using namespace tracecorn::unwind;

namespace {

const std::string kLibc = "/lib/x86_64-linux-gnu/libc.so.6";
constexpr std::uint64_t kLibcBase = 0x7ffff7d80000;

class ImageMemory final : public MemoryReader {
 public:
  std::map<std::uint64_t, std::uint64_t> words;  // 8-byte aligned words
  bool read(std::uint64_t address, void* out, std::size_t size) noexcept override {
    if (size != 8 || address % 8) return false;
    auto found = words.find(address);
    if (found == words.end()) return false;
    std::memcpy(out, &found->second, 8);
    return true;
  }
};

UnwinderConfig x86_64_config() { return UnwinderConfig{}; }  // pc 16, sp 7, fp 6: the x86-64 psABI numbers

// The first FDE of a CIE with augmentation 'S' (glibc's __restore_rt starts one byte after it).
std::uint64_t signal_trampoline(const ModuleUnwindInfo& libc) {
  std::uint64_t found = 0;
  std::map<std::uint64_t, bool> signal_cies;
  (void)libc.eh_frame()->for_each([&](const CieRecord* cie, const FdeRecord* fde) {
    if (cie) signal_cies[cie->offset] = cie->signal_frame;
    if (fde && !found && signal_cies[fde->cie_offset]) found = fde->pc_begin + 1;
  });
  return found;
}

// A function start in libc (its row at the first byte: CFA = rsp+8, ra at
// CFA-8, as every x86-64 CIE starts) past `after`. With `gap_before`, one whose
// previous byte no FDE covers (alignment padding), so that a lookup at pc - 1
// there finds nothing.
std::uint64_t plain_function(const ModuleUnwindInfo& libc, std::uint64_t after, bool gap_before = false) {
  std::uint64_t found = 0;
  const CfiTable& table = *libc.eh_frame();
  (void)table.for_each([&](const CieRecord*, const FdeRecord* fde) {
    if (!fde || found || fde->pc_begin <= after || fde->pc_end - fde->pc_begin < 32) return;
    if (gap_before) {
      auto previous = table.find_fde(fde->pc_begin - 1);
      if (!previous || *previous) return;
    }
    found = fde->pc_begin;
  });
  return found;
}

// libc mapped at kLibcBase in a fresh unwinder, and a stack at kStack whose
// frame 0 is at the first byte of a libc function.
struct LibcStack {
  static constexpr std::uint64_t kStack = 0x7fffffff1000;
  std::shared_ptr<const ModuleUnwindInfo> libc;
  std::uint64_t function = 0;
  Unwinder unwinder{x86_64_config()};
  ImageMemory memory;
  RegisterSet registers;
  StackFrame frames[4];

  LibcStack() {
    auto loaded = ModuleUnwindInfo::load(kLibc);
    REQUIRE(loaded.has_value());
    libc = *loaded;
    function = plain_function(*libc, 0x30000);
    REQUIRE(function != 0);
    unwinder.add_module(kLibcBase, kLibcBase + 0x200000, kLibcBase, libc);
    registers.set(7, kStack);
    registers.set(16, kLibcBase + function);  // at the first byte: CFA = rsp + 8
  }
  UnwindResult walk(UnwindMethod method = UnwindMethod::kCfi) {
    return unwinder.unwind(registers, memory, method, FirstFrame::kExact, frames);
  }
};

}  // namespace

TEST_CASE("Unwinder: a signal frame through libc's __restore_rt, laid out as <sys/ucontext.h> says") {
  auto libc = ModuleUnwindInfo::load(kLibc);
  REQUIRE(libc.has_value());
  const std::uint64_t restorer = signal_trampoline(**libc);
  REQUIRE(restorer != 0);
  const std::uint64_t interrupted_function = plain_function(**libc, 0x30000, true);
  REQUIRE(interrupted_function != 0);
  Unwinder unwinder(x86_64_config());
  unwinder.add_module(kLibcBase, kLibcBase + 0x200000, kLibcBase, *libc);

  // The handler returned into __restore_rt: rsp points at the ucontext.
  const std::uint64_t ucontext = 0x7fffffff0000;
  const std::uint64_t interrupted_sp = 0x7fffffff2000;
  const std::uint64_t caller_of_interrupted = kLibcBase + interrupted_function + 0x40;
  ImageMemory memory;
  auto greg = [&](int index, std::uint64_t value) {
    memory.words[ucontext + offsetof(ucontext_t, uc_mcontext.gregs) + 8 * static_cast<std::uint64_t>(index)] = value;
  };
  for (int i = 0; i < NGREG; ++i) greg(i, 0x1000 + static_cast<std::uint64_t>(i));
  greg(REG_RIP, kLibcBase + interrupted_function);  // interrupted at a function's first byte
  greg(REG_RSP, interrupted_sp);
  greg(REG_RBX, 0xb0b0);
  memory.words[interrupted_sp] = caller_of_interrupted;  // that function's return address
  memory.words[interrupted_sp + 8] = 0;

  RegisterSet registers;
  registers.set(7, ucontext);
  registers.set(16, kLibcBase + restorer);  // a return address into the trampoline
  StackFrame frames[8];
  const auto result = unwinder.unwind(registers, memory, UnwindMethod::kCfi, FirstFrame::kAfterTrap, frames);
  INFO(unwinder.last_error());
  REQUIRE(result.depth >= 3);
  CHECK(frames[0].pc == kLibcBase + restorer);
  // The trampoline's FDE starts one byte early, so its lookup at pc - 1 finds it;
  // its CFI restores rip and rsp from the ucontext.
  CHECK(frames[1].pc == kLibcBase + interrupted_function);
  CHECK(frames[1].source == FrameSource::kSignalFrame);  // found through a signal frame
  // After a signal frame the pc is exact: looked up at pc - 1 it would fall in
  // padding no FDE covers, and the walk would stop; at pc it is CFA = rsp + 8.
  CHECK(frames[2].pc == caller_of_interrupted);
}

TEST_CASE("Unwinder: stop reasons and module bookkeeping") {
  LibcStack stack;
  auto& memory = stack.memory;
  auto& frames = stack.frames;
  const std::uint64_t sp = LibcStack::kStack, base = kLibcBase + stack.function;

  SUBCASE("pc outside every module") {
    memory.words[sp] = 0x1234;
    const auto result = stack.walk();
    CHECK(result.depth == 2);
    CHECK(frames[1].pc == 0x1234);
    CHECK(result.stop == StopReason::kOutsideModules);
  }
  SUBCASE("a zero return address ends the stack") {
    memory.words[sp] = 0;
    const auto result = stack.walk();
    CHECK(result.depth == 1);
    CHECK(result.stop == StopReason::kEndOfStack);
  }
  SUBCASE("unreadable stack") {
    const auto result = stack.walk();
    CHECK(result.depth == 1);
    CHECK(result.stop == StopReason::kUnreadableMemory);
  }
  SUBCASE("depth limit, and a stack pointer that does not increase") {
    // Return into the same function again and again (base + 1 is looked up at
    // pc - 1 = the first byte: CFA = rsp + 8): sp grows by 8 a frame.
    for (int i = 0; i < 8; ++i) memory.words[sp + 8 * static_cast<std::uint64_t>(i)] = base + 1;
    const auto result = stack.walk();
    CHECK(result.depth == 4);
    CHECK(result.stop == StopReason::kDepthLimit);
    // The frame-pointer method with rbp pointing below sp: the caller's sp would not be above.
    stack.registers.set(6, sp - 0x100);
    memory.words[sp - 0x100] = sp - 0x200;
    memory.words[sp - 0xf8] = base + 1;
    const auto fp = stack.walk(UnwindMethod::kFramePointer);
    CHECK(fp.depth == 1);
    CHECK(fp.stop == StopReason::kStackNotIncreasing);
  }
  SUBCASE("a partial unmap keeps the module; a whole one removes it") {
    memory.words[sp] = base + 0x10;
    memory.words[sp + 8] = 0;
    stack.unwinder.remove_range(kLibcBase + 0x1000, 0x1000);  // ld.so mapping a segment with MAP_FIXED
    CHECK(stack.walk().depth >= 2);
    stack.unwinder.remove_range(kLibcBase, 0x200000);
    const auto gone = stack.walk();
    CHECK(gone.depth == 1);
    CHECK(gone.stop == StopReason::kOutsideModules);
  }
}

TEST_CASE("Unwinder: the per-pc row cache serves repeated stacks") {
  LibcStack stack;
  stack.memory.words[LibcStack::kStack] = 0;
  for (int i = 0; i < 100; ++i) (void)stack.walk();
  CHECK(stack.unwinder.stats().cache_misses == 1);
  CHECK(stack.unwinder.stats().cache_hits == 99);
}
