// Role: showing call stacks to people, in the CLI: the symbol namer the text
// format uses (formats::AddressNamer over the unwinder's Symbolizer), and the
// printer behind `tracecorn run --strace -k`, which walks the stack at each
// syscall and prints it under the syscall's strace-like line, as strace -k does:
//   write(0x1, 0x7ffc..., 0x7) = 7
//    > /usr/lib/x86_64-linux-gnu/libc.so.6(write+0x17) [0x7ffff7e9e887]
//    > /tmp/a.out(main+0x1c) [0x555555555151]
// Threads: the namer runs on the sink's thread (the drain thread), the printer
// on the emulation thread (inside Unicorn's syscall hook: nothing throws out).
// Invariants: guest paths are looked up inside the rootfs when one is given,
// resolved as the Linux layer resolves them (symlinks stay inside the tree);
// an unreadable module is shown as its path with an offset, never an error.
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
#include "recorder/unwind/symbolizer.h"

namespace tracecorn::cli {

// The host file behind a guest path: the path itself without a rootfs; with
// one, the file the guest would open there (through a GuestFs of its own, so
// each thread that maps paths gets its own mapper). "" when it cannot be opened.
core::HostPathMapper host_path_mapper(const std::string& rootfs);

class SymbolNamer final : public formats::AddressNamer {
 public:
  explicit SymbolNamer(const std::string& rootfs) : host_path_(host_path_mapper(rootfs)) {}
  void module_loaded(const events::ModuleLoadEvent& module) override;
  void unmapped(std::uint64_t start, std::uint64_t length) override;
  // Reads the file's program headers for its load bias (start minus the page
  // of its lowest PT_LOAD); a file that is not a readable ELF is left unnamed.
  void file_mapped(std::uint64_t start, std::uint64_t end, std::string_view path) override;
  std::string name(std::uint64_t address) override { return symbolizer_.describe(address); }
  // Whether `address` starts a signal trampoline (arch::SignalAbi::trampolines
  // of the file's architecture) in the executable segments of a module named
  // so far: glibc's restorers. tracecorn's own trampoline page is no file and
  // is not in a trace, so it is not recognised here.
  bool is_signal_trampoline(std::uint64_t address) override;

 private:
  // Records the trampolines of the file at `host` mapped with `load_bias` at `start`.
  void find_trampolines(std::uint64_t start, std::uint64_t end, std::uint64_t load_bias, const std::string& host);

  core::HostPathMapper host_path_;
  unwind::Symbolizer symbolizer_;
  // Per module start: its end and its trampolines' addresses. Kept as the
  // symbolizer keeps modules: a partial unmap (ld.so mapping a segment over
  // its reservation) keeps the module, a re-add at the same start keeps the larger end.
  std::map<std::uint64_t, std::pair<std::uint64_t, std::vector<std::uint64_t>>> trampolines_;
};

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
