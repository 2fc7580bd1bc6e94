// Role: the ELF parser declared in elf_file.h. All reads go through ByteReader,
// which checks bounds and applies the file's byte order.
#include "recorder/elf/elf_file.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <memory>

namespace tracecorn::elf {
namespace {

constexpr std::uint64_t kMaxProgramHeaders = 4096;
constexpr std::uint64_t kMaxSections = 65535;
constexpr std::uint64_t kMaxInterpLength = 4096;

// Bounds-checked, byte-order-aware reads from untrusted bytes.
class ByteReader {
 public:
  ByteReader(std::span<const std::uint8_t> bytes, bool little_endian)
      : bytes_(bytes), little_endian_(little_endian) {}

  bool has(std::uint64_t offset, std::uint64_t size) const {
    return offset <= bytes_.size() && size <= bytes_.size() - offset;
  }
  std::uint64_t read(std::uint64_t offset, unsigned size) const {
    std::uint64_t value = 0;
    for (unsigned i = 0; i < size; ++i) {
      const std::uint64_t byte = bytes_[offset + i];
      value |= little_endian_ ? byte << (8 * i) : byte << (8 * (size - 1 - i));
    }
    return value;
  }

 private:
  std::span<const std::uint8_t> bytes_;
  bool little_endian_;
};

}  // namespace

Expected<ElfFile> ElfFile::parse(std::span<const std::uint8_t> bytes, std::string source) {
  auto fail = [&](ErrorCode code, std::string message, std::uint64_t offset) -> Error {
    return make_error(code, std::move(message), source, offset);
  };
  if (bytes.size() < 16 || std::memcmp(bytes.data(), "\x7f" "ELF", 4) != 0)
    return fail(ErrorCode::kBadFormat, "not an ELF file (bad magic)", 0);
  const std::uint8_t elf_class = bytes[4], data = bytes[5];
  if (elf_class != 1 && elf_class != 2) return fail(ErrorCode::kBadFormat, "bad ELF class", 4);
  if (data != 1 && data != 2) return fail(ErrorCode::kBadFormat, "bad ELF byte order", 5);

  ElfFile file;
  file.source_ = source;
  file.bytes_ = bytes;
  file.is_64bit_ = elf_class == 2;
  file.little_endian_ = data == 1;
  const ByteReader in(bytes, file.little_endian_);
  const bool is64 = file.is_64bit_;
  const unsigned word = is64 ? 8 : 4;
  const std::uint64_t header_size = is64 ? 64 : 52;
  if (!in.has(0, header_size)) return fail(ErrorCode::kTruncated, "ELF header is truncated", bytes.size());

  file.type_ = static_cast<std::uint16_t>(in.read(16, 2));
  file.machine_ = static_cast<std::uint16_t>(in.read(18, 2));
  file.entry_ = in.read(24, word);
  file.phoff_ = in.read(is64 ? 32 : 28, word);
  const std::uint64_t shoff = in.read(is64 ? 40 : 32, word);
  file.phentsize_ = static_cast<std::uint16_t>(in.read(is64 ? 54 : 42, 2));
  const std::uint64_t phnum = in.read(is64 ? 56 : 44, 2);
  const std::uint64_t shentsize = in.read(is64 ? 58 : 46, 2);
  const std::uint64_t shnum = in.read(is64 ? 60 : 48, 2);
  const std::uint64_t shstrndx = in.read(is64 ? 62 : 50, 2);

  if (file.type_ != kEtExec && file.type_ != kEtDyn)
    return fail(ErrorCode::kUnsupported, "ELF type " + std::to_string(file.type_) + " is not an executable", 16);

  // Program headers.
  const std::uint64_t expected_phentsize = is64 ? 56 : 32;
  if (phnum == 0) return fail(ErrorCode::kBadFormat, "no program headers", is64 ? 56 : 44);
  if (file.phentsize_ != expected_phentsize)
    return fail(ErrorCode::kBadFormat, "bad program header size " + std::to_string(file.phentsize_), is64 ? 54 : 42);
  if (phnum > kMaxProgramHeaders) return fail(ErrorCode::kBadFormat, "too many program headers", is64 ? 56 : 44);
  if (!in.has(file.phoff_, phnum * expected_phentsize))
    return fail(ErrorCode::kTruncated, "program headers lie outside the file", file.phoff_);
  for (std::uint64_t i = 0; i < phnum; ++i) {
    const std::uint64_t at = file.phoff_ + i * expected_phentsize;
    ProgramHeader ph{};
    ph.type = static_cast<std::uint32_t>(in.read(at, 4));
    if (is64) {
      ph.flags = static_cast<std::uint32_t>(in.read(at + 4, 4));
      ph.offset = in.read(at + 8, 8);
      ph.vaddr = in.read(at + 16, 8);
      ph.filesz = in.read(at + 32, 8);
      ph.memsz = in.read(at + 40, 8);
      ph.align = in.read(at + 48, 8);
    } else {
      ph.offset = in.read(at + 4, 4);
      ph.vaddr = in.read(at + 8, 4);
      ph.filesz = in.read(at + 16, 4);
      ph.memsz = in.read(at + 20, 4);
      ph.flags = static_cast<std::uint32_t>(in.read(at + 24, 4));
      ph.align = in.read(at + 28, 4);
    }
    if (ph.type == kPtLoad || ph.type == kPtInterp) {
      if (!in.has(ph.offset, ph.filesz))
        return fail(ErrorCode::kTruncated, "segment " + std::to_string(i) + " lies outside the file", at);
      if (ph.filesz > ph.memsz)
        return fail(ErrorCode::kBadFormat, "segment " + std::to_string(i) + " has filesz > memsz", at);
      const std::uint64_t limit = is64 ? (1ull << 47) : (1ull << 32);
      if (ph.vaddr >= limit || ph.memsz > limit - ph.vaddr)
        return fail(ErrorCode::kBadFormat, "segment " + std::to_string(i) + " lies outside user space", at);
    }
    if (ph.type == kPtInterp) {
      if (ph.filesz == 0 || ph.filesz > kMaxInterpLength)
        return fail(ErrorCode::kBadFormat, "bad PT_INTERP size", at);
      const char* text = reinterpret_cast<const char*>(bytes.data() + ph.offset);
      const std::size_t length = strnlen(text, ph.filesz);
      if (length == 0 || length == ph.filesz)
        return fail(ErrorCode::kBadFormat, "PT_INTERP is not a NUL-terminated path", ph.offset);
      file.interpreter_ = std::string(text, length);
    }
    file.program_headers_.push_back(ph);
  }
  bool has_load = false;
  for (const auto& ph : file.program_headers_) has_load |= ph.type == kPtLoad;
  if (!has_load) return fail(ErrorCode::kBadFormat, "no PT_LOAD segment", file.phoff_);

  // Section headers are optional for loading (stripped files may lack them); when
  // present but malformed they are ignored rather than rejected, as the kernel does.
  const std::uint64_t expected_shentsize = is64 ? 64 : 40;
  if (shoff != 0 && shnum != 0 && shnum <= kMaxSections && shentsize == expected_shentsize &&
      in.has(shoff, shnum * expected_shentsize) && shstrndx < shnum) {
    auto read_section = [&](std::uint64_t index) {
      const std::uint64_t at = shoff + index * expected_shentsize;
      SectionHeader sh{};
      sh.type = static_cast<std::uint32_t>(in.read(at + 4, 4));
      sh.flags = in.read(at + 8, word);
      sh.addr = in.read(at + (is64 ? 16 : 12), word);
      sh.offset = in.read(at + (is64 ? 24 : 16), word);
      sh.size = in.read(at + (is64 ? 32 : 20), word);
      sh.link = static_cast<std::uint32_t>(in.read(at + (is64 ? 40 : 24), 4));
      sh.info = static_cast<std::uint32_t>(in.read(at + (is64 ? 44 : 28), 4));
      sh.entsize = in.read(at + (is64 ? 56 : 36), word);
      return std::pair{sh, in.read(at, 4)};
    };
    const auto [strtab, unused] = read_section(shstrndx);
    (void)unused;
    const bool strtab_ok = in.has(strtab.offset, strtab.size);
    for (std::uint64_t i = 0; i < shnum; ++i) {
      auto [sh, name_offset] = read_section(i);
      if (strtab_ok && name_offset < strtab.size) {
        const char* name = reinterpret_cast<const char*>(bytes.data() + strtab.offset + name_offset);
        sh.name.assign(name, strnlen(name, strtab.size - name_offset));
      }
      file.section_headers_.push_back(std::move(sh));
    }
  }
  return file;
}

Expected<ElfFile> ElfFile::load(const std::string& path) {
  std::ifstream stream(path, std::ios::binary);
  if (!stream) {
    const int error = errno;
    return make_error(error == ENOENT ? ErrorCode::kNotFound : ErrorCode::kIo,
                      std::string("cannot open: ") + std::strerror(error), path);
  }
  auto owned = std::make_shared<std::vector<std::uint8_t>>(std::istreambuf_iterator<char>(stream),
                                                           std::istreambuf_iterator<char>());
  if (stream.bad()) return make_error(ErrorCode::kIo, "read error", path);
  auto parsed = parse(*owned, path);
  if (!parsed) return parsed.error();
  parsed->owned_ = std::move(owned);
  return parsed;
}

const SectionHeader* ElfFile::find_section(std::string_view name) const {
  for (const auto& section : section_headers_)
    if (section.name == name) return &section;
  return nullptr;
}

std::optional<std::span<const std::uint8_t>> ElfFile::section_bytes(const SectionHeader& section) const {
  if (section.type == kShtNobits) return std::span<const std::uint8_t>{};
  if (section.offset > bytes_.size() || section.size > bytes_.size() - section.offset) return std::nullopt;
  return bytes_.subspan(section.offset, section.size);
}

std::uint64_t ElfFile::load_start(std::uint64_t page) const {
  std::uint64_t lowest = UINT64_MAX;
  for (const auto& ph : program_headers_)
    if (ph.type == kPtLoad) lowest = std::min(lowest, ph.vaddr);
  return lowest & ~(page - 1);
}

std::uint64_t ElfFile::load_end(std::uint64_t page) const {
  std::uint64_t highest = 0;
  for (const auto& ph : program_headers_)
    if (ph.type == kPtLoad) highest = std::max(highest, ph.vaddr + ph.memsz);
  return (highest + page - 1) & ~(page - 1);
}

}  // namespace tracecorn::elf
