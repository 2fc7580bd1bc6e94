// Role: parse the parts of an ELF file that loading and unwinding need (file
// header, program headers, section headers, PT_INTERP), from untrusted bytes.
// Both classes (32/64-bit) and both byte orders are read; nothing here knows an
// architecture beyond the e_machine number it reports.
// Invariants: every offset and size read from the file is bounds-checked before
// use; a parsed ElfFile only describes ranges that lie inside `bytes`; errors name
// the file and the byte offset of the bad field. Never aborts on bad input.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "recorder/support/expected.h"

namespace tracecorn::elf {

inline constexpr std::uint32_t kPtLoad = 1;
inline constexpr std::uint32_t kPtInterp = 3;
inline constexpr std::uint32_t kPtPhdr = 6;
inline constexpr std::uint32_t kPtGnuStack = 0x6474e551;
inline constexpr std::uint32_t kPfX = 1, kPfW = 2, kPfR = 4;
inline constexpr std::uint16_t kEtExec = 2, kEtDyn = 3;

struct ProgramHeader {
  std::uint32_t type;
  std::uint32_t flags;
  std::uint64_t offset;
  std::uint64_t vaddr;
  std::uint64_t filesz;
  std::uint64_t memsz;
  std::uint64_t align;
};

struct SectionHeader {
  std::string name;
  std::uint32_t type;
  std::uint64_t flags;
  std::uint64_t addr;
  std::uint64_t offset;
  std::uint64_t size;
  std::uint32_t link = 0;     // sh_link (a symbol table's string table)
  std::uint32_t info = 0;     // sh_info
  std::uint64_t entsize = 0;  // sh_entsize (a symbol table's entry size)
};

inline constexpr std::uint32_t kShtNobits = 8;

class ElfFile {
 public:
  // Parses `bytes` (the whole file). `source` names it in errors. The span must
  // outlive the ElfFile only for `file_bytes()`; everything else is copied.
  static Expected<ElfFile> parse(std::span<const std::uint8_t> bytes, std::string source);

  // Reads and parses a file from the host file system.
  static Expected<ElfFile> load(const std::string& path);

  bool is_64bit() const { return is_64bit_; }
  bool little_endian() const { return little_endian_; }
  std::uint16_t type() const { return type_; }
  std::uint16_t machine() const { return machine_; }
  std::uint64_t entry() const { return entry_; }
  std::uint64_t phdr_offset() const { return phoff_; }
  std::uint16_t phdr_entry_size() const { return phentsize_; }
  const std::vector<ProgramHeader>& program_headers() const { return program_headers_; }
  const std::vector<SectionHeader>& section_headers() const { return section_headers_; }
  // The PT_INTERP path, if the file has one.
  const std::optional<std::string>& interpreter() const { return interpreter_; }
  const std::string& source() const { return source_; }
  // The whole file (owned when created by load()).
  std::span<const std::uint8_t> file_bytes() const { return bytes_; }

  // The first section called `name`, or nullptr.
  const SectionHeader* find_section(std::string_view name) const;
  // The bytes of `section` inside the file: empty for SHT_NOBITS; nullopt when
  // the header points outside the file (never a span past the end).
  std::optional<std::span<const std::uint8_t>> section_bytes(const SectionHeader& section) const;

  // Lowest PT_LOAD vaddr rounded down to `page`, and highest end rounded up.
  std::uint64_t load_start(std::uint64_t page) const;
  std::uint64_t load_end(std::uint64_t page) const;

 private:
  ElfFile() = default;
  std::shared_ptr<std::vector<std::uint8_t>> owned_;
  std::span<const std::uint8_t> bytes_;
  std::string source_;
  bool is_64bit_ = true;
  bool little_endian_ = true;
  std::uint16_t type_ = 0;
  std::uint16_t machine_ = 0;
  std::uint64_t entry_ = 0;
  std::uint64_t phoff_ = 0;
  std::uint16_t phentsize_ = 0;
  std::vector<ProgramHeader> program_headers_;
  std::vector<SectionHeader> section_headers_;
  std::optional<std::string> interpreter_;
};

}  // namespace tracecorn::elf
