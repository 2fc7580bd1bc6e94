// Role: implementation of the CLI's stack display (see stack_display.h).
#include "recorder/cli/stack_display.h"

#include <algorithm>
#include <climits>
#include <cstdio>

#include <fmt/format.h>


namespace tracecorn::cli {
std::string strace_frame_line(const unwind::Symbolizer& symbolizer, std::uint64_t address, bool is_return_address) {
  const bool before = is_return_address && address > 0;
  unwind::SymbolizedAddress where = symbolizer.locate(before ? address - 1 : address);
  if (before) ++where.offset;
  if (where.module.empty()) return fmt::format(" > ? [{:#x}]", address);
  if (where.symbol.empty()) return fmt::format(" > {}(+{:#x}) [{:#x}]", where.module, where.offset, address);
  return fmt::format(" > {}({}+{:#x}) [{:#x}]", where.module, where.symbol, where.offset, address);
}

std::string strace_stack_line(const unwind::Symbolizer& symbolizer, std::span<const unwind::StackFrame> frames,
                              std::size_t index) {
  const unwind::StackFrame& frame = frames[index];
  if (index + 1 < frames.size() && frames[index + 1].source == unwind::FrameSource::kSignalFrame)
    return fmt::format(" > <signal handler called> [{:#x}]", frame.pc);
  return strace_frame_line(symbolizer, frame.pc, index > 0 && frame.source != unwind::FrameSource::kSignalFrame);
}

void StraceStackPrinter::on_syscall_enter(std::uint64_t pc, std::uint64_t) noexcept {
  depth_ = stacks_.walk(pc, frames_).depth;
}

void StraceStackPrinter::on_mapping_changed(const events::MappingEffect& change) noexcept {
  if (change.kind != events::MappingChangeKind::kUnmap) return;
  const std::uint64_t start = change.start.value, length = change.length;
  stacks_.unmapped(start, length);
  try {
    pending_unmaps_.emplace_back(start, length);
  } catch (...) {
  }
}

void StraceStackPrinter::on_syscall(std::uint64_t, std::uint64_t, arch::SyscallId, const std::uint64_t (&)[6],
                                    std::int64_t) noexcept {
  try {
    const std::span<const unwind::StackFrame> stack(frames_.data(), depth_);
    for (std::size_t i = 0; i < depth_; ++i)
      std::fprintf(out_, "%s\n", strace_stack_line(symbolizer_, stack, i).c_str());
  } catch (...) {  // formatting failed (out of memory): the stack is left out
  }
  depth_ = 0;
  for (const auto& [start, length] : pending_unmaps_) symbolizer_.remove_range(start, length);
  pending_unmaps_.clear();
}

void StraceStackPrinter::on_module_loaded(std::uint64_t start, std::uint64_t end, std::uint64_t load_bias,
                                          std::string_view path) noexcept {
  stacks_.module_loaded(start, end, load_bias, path);
  try {
    (void)symbolizer_.add_module(start, end, load_bias, stacks_.host_path(path), std::string(path));
  } catch (...) {
  }
}

}  // namespace tracecorn::cli
