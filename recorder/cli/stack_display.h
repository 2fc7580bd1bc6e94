// Role: showing call stacks to people, in the CLI: the printer behind
// `tracecorn run --strace -k`, which walks the stack at each syscall and
// prints it under the syscall's strace-like line, as strace -k does (the
// symbol namer the text format uses is session::SymbolNamer):
//   write(0x1, 0x7ffc..., 0x7) = 7
//    > /usr/lib/x86_64-linux-gnu/libc.so.6(write+0x17) [0x7ffff7e9e887]
//    > /tmp/a.out(main+0x1c) [0x555555555151]
// Threads: the printer runs on the emulation thread (inside Unicorn's
// syscall hook: nothing throws out).
#pragma once

#include <cstdio>
#include <memory>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "formats/text/text_writer.h"
#include "recorder/core/guest_stacks.h"
#include "recorder/linux/linux_process.h"
#include "recorder/session/symbol_namer.h"
#include "recorder/unwind/symbolizer.h"

namespace tracecorn::cli {

// The namer lives in the session layer (the Python package uses it too).
using session::host_path_mapper;
using session::SymbolNamer;

// One strace -k line for `address`: " > MODULE(SYMBOL+0xOFF) [0xADDRESS]".
// A return address (`is_return_address`: every frame but the first) is named
// by the byte before it, as gdb does: a call to a noreturn function may be the
// last instruction of its caller, whose return address is then the next
// function's first byte (aarch64's exit -> __run_exit_handlers).
std::string strace_frame_line(const unwind::Symbolizer& symbolizer, std::uint64_t address,
                              bool is_return_address = false);
// The strace -k line of frames[index] in a walked stack: a signal
// trampoline's frame (the one before a FrameSource::kSignalFrame frame) is
// gdb's " > <signal handler called> [0xADDRESS]"; the interrupted frame after
// it is named by its pc itself (not a return address), as gdb names it.
std::string strace_stack_line(const unwind::Symbolizer& symbolizer, std::span<const unwind::StackFrame> frames,
                              std::size_t index);

class StraceStackPrinter final : public linux_layer::ProcessObserver {
 public:
  // `stacks` walks the guest's stack; lines go to `out` (not owned).
  StraceStackPrinter(core::GuestStacks& stacks, std::FILE* out) : stacks_(stacks), out_(out), frames_(256) {}

  void on_syscall_enter(std::uint64_t pc, std::uint64_t number) noexcept override;
  void on_memory_written(std::uint64_t, std::span<const std::uint8_t>) noexcept override {}
  void on_mapping_changed(const events::MappingEffect& change) noexcept override;
  void on_syscall(std::uint64_t pc, std::uint64_t number, arch::SyscallId id, const std::uint64_t (&args)[6],
                  std::int64_t result) noexcept override;
  void on_module_loaded(std::uint64_t start, std::uint64_t end, std::uint64_t load_bias,
                        std::string_view path) noexcept override;

 private:
  core::GuestStacks& stacks_;
  std::FILE* out_;
  unwind::Symbolizer symbolizer_;
  std::vector<unwind::StackFrame> frames_;
  std::size_t depth_ = 0;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> pending_unmaps_;  // applied after the stack is printed
};

}  // namespace tracecorn::cli
