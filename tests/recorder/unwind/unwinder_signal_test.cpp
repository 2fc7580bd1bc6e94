// Role: tests of the Unwinder's walk through signal frames
// (recorder/unwind/unwinder.h), on every architecture, over memory images
// laid out with the architecture's own facts (arch::SignalAbi::trampolines,
// the config recorder/core/guest_stacks.h derives from them): a handler's
// frame returns to each signal trampoline (placed inside a module and in
// no module, as tracecorn's trampoline page is), the interrupted frame's pc,
// stack and frame pointers come from the signal frame, the interrupted pc is
// looked up exactly (it sits at a module's first byte, where pc - 1 would
// leave the module), and that frame is marked FrameSource::kSignalFrame.
// Also: a near miss of the trampoline's code is an ordinary return address,
// and an unreadable signal frame stops the walk (kUnreadableMemory).
// Who runs it: unit_tests, on the doctest thread.
#include <doctest/doctest.h>

#include <map>
#include <vector>

#include "arch/arch_info.h"
#include "recorder/core/guest_stacks.h"
#include "recorder/unwind/unwinder.h"

using namespace tracecorn;
using unwind::FrameSource;
using unwind::StopReason;

namespace {

class ByteMemory final : public unwind::MemoryReader {
 public:
  ByteMemory(unsigned word, bool little_endian) : word_(word), little_endian_(little_endian) {}
  bool read(std::uint64_t address, void* out, std::size_t size) noexcept override {
    auto* bytes = static_cast<std::uint8_t*>(out);
    for (std::size_t i = 0; i < size; ++i) {
      const auto found = bytes_.find(address + i);
      if (found == bytes_.end()) return false;
      bytes[i] = found->second;
    }
    return true;
  }
  void put(std::uint64_t address, std::span<const std::uint8_t> bytes) {
    for (std::size_t i = 0; i < bytes.size(); ++i) bytes_[address + i] = bytes[i];
  }
  void put_word(std::uint64_t address, std::uint64_t value) {
    for (unsigned i = 0; i < word_; ++i)
      bytes_[address + i] = static_cast<std::uint8_t>(value >> (8 * (little_endian_ ? i : word_ - 1 - i)));
  }
  void forget(std::uint64_t address) { bytes_.erase(address); }

 private:
  unsigned word_;
  bool little_endian_;
  std::map<std::uint64_t, std::uint8_t> bytes_;
};

// The layout of one walk: handler (frame pointer H) -> trampoline -> the
// interrupted code (frame pointer F) -> its caller -> the end.
constexpr std::uint64_t kModuleStart = 0x10000, kModuleEnd = 0x20000;
constexpr std::uint64_t kHandlerPc = 0x10800, kInterruptedPc = kModuleStart, kCallerPc = 0x12000;
constexpr std::uint64_t kHandlerFp = 0x80000, kInterruptedFp = 0x90000, kCallerFp = 0x90100;

struct SignalWalk {
  const arch::ArchInfo& arch;
  const arch::SignalTrampoline& trampoline;
  std::uint64_t trampoline_pc;
  unsigned word;
  ByteMemory memory;
  unwind::UnwinderConfig config;

  SignalWalk(const arch::ArchInfo& a, const arch::SignalTrampoline& t, std::uint64_t at)
      : arch(a), trampoline(t), trampoline_pc(at), word(a.elf_64bit ? 8 : 4), memory(word, a.little_endian) {
    auto made = core::unwinder_config_for(arch);
    REQUIRE(made.has_value());
    config = *made;
    memory.put(trampoline_pc, trampoline.code);
    // The handler's frame record: its caller's fp (anything) and the trampoline.
    memory.put_word(kHandlerFp, 0x5555);
    memory.put_word(kHandlerFp + word, trampoline_pc);
    // The signal frame, at the sp the trampoline runs on: every saved register.
    std::uint64_t filler = 0x3000;
    for (const arch::SavedRegisterSlot& slot : trampoline.saved) {
      std::uint64_t value = filler += 0x10;
      if (slot.uc_id == arch.pc_reg) value = kInterruptedPc;
      if (slot.uc_id == arch.sp_reg) value = kInterruptedFp - 0x40;
      if (slot.uc_id == arch.fp_reg) value = kInterruptedFp;
      memory.put_word(signal_frame() + static_cast<std::uint64_t>(slot.offset), value);
    }
    // The interrupted code's frame record, then its caller's, the last.
    memory.put_word(kInterruptedFp, kCallerFp);
    memory.put_word(kInterruptedFp + word, kCallerPc);
    memory.put_word(kCallerFp, 0);
    memory.put_word(kCallerFp + word, 0);
  }
  std::uint64_t signal_frame() const { return kHandlerFp + 2 * word; }  // the handler's CFA

  unwind::UnwindResult walk(std::span<unwind::StackFrame> frames) {
    unwind::Unwinder unwinder(config);
    unwinder.add_module(kModuleStart, kModuleEnd, 0, std::shared_ptr<const unwind::ModuleUnwindInfo>{});
    unwind::RegisterSet registers;
    registers.set(config.pc_register, kHandlerPc);
    registers.set(config.sp_register, kHandlerFp - 0x20);
    registers.set(config.fp_register, kHandlerFp);
    return unwinder.unwind(registers, memory, unwind::UnwindMethod::kAuto, unwind::FirstFrame::kAfterTrap, frames);
  }
};

}  // namespace

TEST_CASE("Unwinder: through every architecture's signal trampolines, in a module and in none") {
  std::size_t walks = 0;
  for (const arch::ArchInfo* arch : arch::all_archs()) {
    REQUIRE_MESSAGE(!arch->signal_abi.trampolines.empty(), arch->name);
    for (const arch::SignalTrampoline& trampoline : arch->signal_abi.trampolines) {
      for (const std::uint64_t at : {std::uint64_t{0x30000}, std::uint64_t{0x18000}}) {
        CAPTURE(arch->name);
        CAPTURE(trampoline.rt);
        CAPTURE(at);
        SignalWalk walk(*arch, trampoline, at);
        unwind::StackFrame frames[8];
        const auto result = walk.walk(frames);
        REQUIRE(result.depth == 4);
        CHECK(result.stop == StopReason::kEndOfStack);
        CHECK(frames[0].pc == kHandlerPc);
        CHECK(frames[1].pc == at);  // gdb's <signal handler called>
        CHECK(frames[1].source == FrameSource::kFramePointer);
        CHECK(frames[2].pc == kInterruptedPc);  // exact: pc - 1 is outside the module
        CHECK(frames[2].source == FrameSource::kSignalFrame);
        CHECK(frames[3].pc == kCallerPc);  // through the frame pointer the signal frame restored
        CHECK(frames[3].source == FrameSource::kFramePointer);
        ++walks;
      }
    }
  }
  CHECK(walks >= 2 * 14);
}

TEST_CASE("Unwinder: a near miss of a trampoline's code is an ordinary return address") {
  for (const arch::ArchInfo* arch : arch::all_archs()) {
    CAPTURE(arch->name);
    const arch::SignalTrampoline& trampoline = arch->signal_abi.trampolines.front();
    SignalWalk walk(*arch, trampoline, 0x18000);
    std::vector<std::uint8_t> changed(trampoline.code.begin(), trampoline.code.end());
    changed.back() ^= 0x40;
    walk.memory.put(0x18000, changed);
    unwind::StackFrame frames[8];
    const auto result = walk.walk(frames);
    REQUIRE(result.depth >= 2);
    CHECK(frames[1].pc == 0x18000);
    for (std::size_t i = 2; i < result.depth; ++i) CHECK(frames[i].source != FrameSource::kSignalFrame);
  }
}

TEST_CASE("Malicious: an unreadable signal frame stops the walk at the trampoline") {
  for (const arch::ArchInfo* arch : arch::all_archs()) {
    CAPTURE(arch->name);
    const arch::SignalTrampoline& trampoline = arch->signal_abi.trampolines.back();
    SignalWalk walk(*arch, trampoline, 0x30000);
    for (const arch::SavedRegisterSlot& slot : trampoline.saved)
      if (slot.uc_id == arch->pc_reg) walk.memory.forget(walk.signal_frame() + static_cast<std::uint64_t>(slot.offset));
    unwind::StackFrame frames[8];
    const auto result = walk.walk(frames);
    CHECK(result.depth == 2);
    CHECK(result.stop == StopReason::kUnreadableMemory);
  }
}
