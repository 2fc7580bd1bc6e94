// Role: finds and opens the unwind sections of one ELF file (module_unwind_info.h).
#include "recorder/unwind/module_unwind_info.h"

namespace tracecorn::unwind {

Expected<std::shared_ptr<const ModuleUnwindInfo>> ModuleUnwindInfo::load(const std::string& path) {
  auto file = elf::ElfFile::load(path);
  if (!file) return file.error();
  return from_elf(std::move(*file));
}

std::shared_ptr<const ModuleUnwindInfo> ModuleUnwindInfo::from_elf(elf::ElfFile file) {
  std::shared_ptr<ModuleUnwindInfo> info(new ModuleUnwindInfo(std::move(file)));
  const elf::ElfFile& elf = info->elf_;
  const unsigned address_size = elf.is_64bit() ? 8 : 4;
  auto bytes_of = [&](const elf::SectionHeader* section) -> std::optional<std::span<const std::uint8_t>> {
    if (!section) return std::nullopt;
    auto bytes = elf.section_bytes(*section);
    if (!bytes) info->problems_.push_back(elf.source() + ": section " + section->name + " lies outside the file");
    return bytes;
  };
  auto open_cfi = [&](const char* name, CfiKind kind, std::span<const std::uint8_t> header,
                      std::uint64_t header_address) -> std::optional<CfiTable> {
    const elf::SectionHeader* section = elf.find_section(name);
    auto bytes = bytes_of(section);
    if (!bytes || bytes->empty()) return std::nullopt;
    CfiSection cfi;
    cfi.kind = kind;
    cfi.bytes = *bytes;
    cfi.address = section->addr;
    cfi.address_size = address_size;
    cfi.little_endian = elf.little_endian();
    cfi.source = elf.source() + "(" + name + ")";
    auto table = CfiTable::create(std::move(cfi), header, header_address);
    if (!table) {
      info->problems_.push_back(table.error().to_string());
      return std::nullopt;
    }
    return std::move(*table);
  };
  std::span<const std::uint8_t> header;
  std::uint64_t header_address = 0;
  if (const auto* section = elf.find_section(".eh_frame_hdr")) {
    if (auto bytes = bytes_of(section)) {
      header = *bytes;
      header_address = section->addr;
    }
  }
  info->eh_frame_ = open_cfi(".eh_frame", CfiKind::kEhFrame, header, header_address);
  info->debug_frame_ = open_cfi(".debug_frame", CfiKind::kDebugFrame, {}, 0);
  if (const auto* section = elf.find_section(".sframe")) {
    if (auto bytes = bytes_of(section); bytes && !bytes->empty()) {
      auto table = SFrameTable::create(*bytes, section->addr, elf.source() + "(.sframe)");
      if (table)
        info->sframe_ = std::move(*table);
      else
        info->problems_.push_back(table.error().to_string());
    }
  }
  if (const auto* section = elf.find_section(".ARM.exidx")) {
    auto bytes = bytes_of(section);
    std::span<const std::uint8_t> extab;
    std::uint64_t extab_address = 0;
    if (const auto* extab_section = elf.find_section(".ARM.extab")) {
      if (auto extab_bytes = bytes_of(extab_section)) {
        extab = *extab_bytes;
        extab_address = extab_section->addr;
      }
    }
    if (bytes && !bytes->empty()) {
      auto table = EhabiTable::create(*bytes, section->addr, extab, extab_address, elf.little_endian(), elf.source());
      if (table)
        info->arm_exidx_ = std::move(*table);
      else
        info->problems_.push_back(table.error().to_string());
    }
  }
  info->symbols_ = SymbolTable::from_elf(elf);
  return info;
}

}  // namespace tracecorn::unwind
