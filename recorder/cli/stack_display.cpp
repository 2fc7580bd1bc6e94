// Role: implementation of the CLI's stack display (see stack_display.h).
#include "recorder/cli/stack_display.h"

#include <fmt/format.h>

namespace tracecorn::cli {

void SymbolNamer::module_loaded(const events::ModuleLoadEvent& module) {
  std::string host = std::string(module.path);
  if (!rootfs_.empty() && !host.empty() && host.front() == '/') host = rootfs_ + host;
  (void)symbolizer_.add_module(module.start.value, module.end.value, module.load_bias, host, std::string(module.path));
}

std::string strace_frame_line(const unwind::Symbolizer& symbolizer, std::uint64_t address) {
  const unwind::SymbolizedAddress where = symbolizer.locate(address);
  if (where.module.empty()) return fmt::format(" > ? [{:#x}]", address);
  if (where.symbol.empty()) return fmt::format(" > {}(+{:#x}) [{:#x}]", where.module, where.offset, address);
  return fmt::format(" > {}({}+{:#x}) [{:#x}]", where.module, where.symbol, where.offset, address);
}

void StraceStackPrinter::on_syscall_enter(std::uint64_t pc, std::uint64_t) noexcept {
  depth_ = stacks_.walk(pc, frames_).depth;
}

void StraceStackPrinter::on_mapping_changed(events::MappingChangeKind kind, std::uint64_t start, std::uint64_t length,
                                            std::uint32_t) noexcept {
  if (kind != events::MappingChangeKind::kUnmap) return;
  stacks_.unmapped(start, length);
  try {
    pending_unmaps_.emplace_back(start, length);
  } catch (...) {
  }
}

void StraceStackPrinter::on_syscall(std::uint64_t, std::uint64_t, arch::SyscallId, const std::uint64_t (&)[6],
                                    std::int64_t) noexcept {
  try {
    for (std::size_t i = 0; i < depth_; ++i)
      std::fprintf(out_, "%s\n", strace_frame_line(symbolizer_, frames_[i].pc).c_str());
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
