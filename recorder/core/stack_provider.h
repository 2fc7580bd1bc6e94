// Role: how the recorder asks for the call stack at each syscall event. The
// recorder core calls a StackProvider set in RecorderOptions; the provider
// that tracecorn uses (recorder/core/guest_stacks.h) walks the guest's stack
// with the unwinder (recorder/unwind), and an embedder may supply its own.
// Threads: every call comes on the emulation thread, from the Recorder's
// process-event methods (inside Unicorn's syscall hook): noexcept, and
// `capture` should not allocate on its common path.
// Invariants: the Recorder forwards every module_loaded() and every unmapping
// it is told about, in order, before the next capture.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

namespace tracecorn::core {

class StackProvider {
 public:
  virtual ~StackProvider() = default;
  // An ELF file was mapped at [start, end) with `load_bias`; `path` as the guest names it.
  virtual void module_loaded(std::uint64_t start, std::uint64_t end, std::uint64_t load_bias,
                             std::string_view path) noexcept = 0;
  // [start, start + length) was unmapped.
  virtual void unmapped(std::uint64_t start, std::uint64_t length) noexcept = 0;
  // The guest is at the syscall whose trap instruction is at `trap_pc`, before
  // the kernel side runs. Writes the call stack into `out`, innermost first
  // (frame 0: the address the syscall returns to, then return addresses; see
  // recorder/unwind/unwinder.h) and returns how many entries it wrote.
  virtual std::size_t capture(std::uint64_t trap_pc, std::span<std::uint64_t> out) noexcept = 0;
};

}  // namespace tracecorn::core
