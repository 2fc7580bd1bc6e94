// Role: libFuzzer target for everything that reads an untrusted ELF file before
// the guest runs: the ELF parser (headers, program and section headers,
// PT_INTERP), the loader's mapping of PT_LOAD segments into guest memory
// (map_image on a real Unicorn engine, at the bias load_program would choose),
// and the unwinder's reading of the same file (symbol tables, unwind sections).
// Built only with clang (-fsanitize=fuzzer,address,undefined); a short run is
// a ctest (elf_loader_fuzzer_smoke), seeded with two tiny static programs.
// Invariants checked: nothing crashes, leaks or reads out of bounds; a parsed
// file's section bytes lie inside the input; a mapped image is inside the
// address range it reports and every byte of it is mapped.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>

#include <unicorn/unicorn.h>

#include "arch/arch.h"
#include "recorder/elf/elf_file.h"
#include "recorder/linux/guest_memory.h"
#include "recorder/linux/loader.h"
#include "recorder/unwind/module_unwind_info.h"
#include "recorder/unwind/symbolizer.h"

namespace {

using namespace tracecorn;

// One engine for the whole run (uc_open costs milliseconds); every input's
// mappings are removed before the next.
uc_engine* shared_engine() {
  static uc_engine* engine = [] {
    uc_engine* created = nullptr;
    if (uc_open(UC_ARCH_X86, UC_MODE_64, &created) != UC_ERR_OK) std::abort();
    return created;
  }();
  return engine;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::span<const std::uint8_t> bytes(data, size);
  auto file = elf::ElfFile::parse(bytes, "fuzz-input");
  if (!file) return 0;
  for (const auto& section : file->section_headers()) {
    if (auto contents = file->section_bytes(section)) {
      if (!contents->empty() && (contents->data() < data || contents->data() + contents->size() > data + size))
        std::abort();  // a section outside the file: the parser's bounds checks failed
    }
  }
  (void)unwind::SymbolTable::from_elf(*file);
  (void)unwind::ModuleUnwindInfo::from_elf(*file);

  const arch::ArchInfo* arch = arch::find_arch_for_elf(file->machine(), file->is_64bit(), file->little_endian());
  if (!arch || arch->name != std::string_view("x86_64")) return 0;
  linux_layer::GuestMemory memory(shared_engine(), arch->layout);
  // Images spanning more than 16 MiB are parsed and checked but not mapped: a
  // 4 KiB input with a huge p_memsz would spend the run zero-filling memory.
  constexpr std::uint64_t kMaxMappedSpan = 16u << 20;
  const std::uint64_t span = file->load_end(linux_layer::kPageSize) - file->load_start(linux_layer::kPageSize);
  if (span > kMaxMappedSpan || file->load_end(linux_layer::kPageSize) < file->load_start(linux_layer::kPageSize))
    return 0;
  std::uint64_t bias = 0;
  if (file->type() == elf::kEtDyn) bias = arch->layout.et_dyn_base - file->load_start(linux_layer::kPageSize);
  if (auto image = linux_layer::map_image(memory, *file, bias)) {
    if (image->end <= image->start) std::abort();
    for (const auto& [start, vma] : memory.vmas())
      if (vma.start < image->start || vma.end > image->end) std::abort();
  }
  while (!memory.vmas().empty()) {
    const auto& vma = memory.vmas().begin()->second;
    if (!memory.unmap(vma.start, vma.end - vma.start)) std::abort();
  }
  return 0;
}
