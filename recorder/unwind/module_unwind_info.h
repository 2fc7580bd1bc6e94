// Role: the unwind tables of one ELF file the guest maps (program,
// interpreter, libraries): its .eh_frame (with .eh_frame_hdr when present),
// .debug_frame and .sframe sections, and on Arm its .ARM.exidx/.ARM.extab
// (EHABI), parsed lazily; and its symbols (function starts for prologue analysis).
// Who calls it: the Unwinder (one per mapped file, shared between mappings of
// the same file), on its thread; the tests that compare with readelf/objdump.
// Invariants: the ElfFile owns the bytes every table points into, so the
// tables (and rows and expressions taken from them) stay valid as long as this
// object lives. A section that cannot be used is recorded in `problems()` and
// skipped; only an unreadable or non-ELF file is an error.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "recorder/elf/elf_file.h"
#include "recorder/support/expected.h"
#include "recorder/unwind/cfi.h"
#include "recorder/unwind/ehabi.h"
#include "recorder/unwind/sframe.h"
#include "recorder/unwind/symbolizer.h"

namespace tracecorn::unwind {

class ModuleUnwindInfo {
 public:
  // Reads the ELF file at `path` (a host path) and finds its unwind sections.
  // Errors: the file is missing, unreadable or not an ELF executable/library.
  static Expected<std::shared_ptr<const ModuleUnwindInfo>> load(const std::string& path);
  // The same over an already parsed file.
  static std::shared_ptr<const ModuleUnwindInfo> from_elf(elf::ElfFile file);

  const elf::ElfFile& elf() const { return elf_; }
  const CfiTable* eh_frame() const { return eh_frame_ ? &*eh_frame_ : nullptr; }
  const CfiTable* debug_frame() const { return debug_frame_ ? &*debug_frame_ : nullptr; }
  const SFrameTable* sframe() const { return sframe_ ? &*sframe_ : nullptr; }
  // .ARM.exidx with .ARM.extab (nullptr when the file has no .ARM.exidx).
  const EhabiTable* arm_exidx() const { return arm_exidx_ ? &*arm_exidx_ : nullptr; }
  // The file's function symbols (.symtab and .dynsym): where prologue analysis
  // finds a function's start.
  const SymbolTable& symbols() const { return symbols_; }
  // Sections present but unusable, one line each (for diagnostics).
  const std::vector<std::string>& problems() const { return problems_; }

 private:
  explicit ModuleUnwindInfo(elf::ElfFile file) : elf_(std::move(file)) {}
  elf::ElfFile elf_;
  std::optional<CfiTable> eh_frame_;
  std::optional<CfiTable> debug_frame_;
  std::optional<SFrameTable> sframe_;
  std::optional<EhabiTable> arm_exidx_;
  SymbolTable symbols_;
  std::vector<std::string> problems_;
};

}  // namespace tracecorn::unwind
