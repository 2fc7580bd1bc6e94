// Role: implementation of auxiliary_vector.h: the auxiliary vector read at
// the entry's stack pointer or found at the top of the stack, and the file
// mapped at its AT_PHDR.
#include "recorder/debug/auxiliary_vector.h"

#include <algorithm>

#include "formats/address_namer.h"

namespace tracecorn::debug {
namespace {

constexpr std::uint64_t kAtNull = 0, kAtPhdr = 3, kAtPagesz = 6, kAtEntry = 9;
constexpr std::size_t kMostEntries = 512;
constexpr std::uint64_t kMostStackScanned = 8u << 20;  // bytes above sp looked through for a forked child's vector

// Words of the guest's size and byte order.
struct Words {
  std::size_t size;
  bool little_endian;
  std::uint64_t at(std::span<const std::uint8_t> bytes, std::size_t offset) const {
    std::uint64_t value = 0;
    for (std::size_t i = 0; i < size; ++i)
      value |= std::uint64_t{bytes[offset + (little_endian ? i : size - 1 - i)]} << (8 * i);
    return value;
  }
};

// The length in bytes of the vector at `offset` of `bytes` (its AT_NULL pair
// included) when it looks like one the kernel wrote; 0 otherwise.
std::size_t vector_length(std::span<const std::uint8_t> bytes, std::size_t offset, const Words& words) {
  bool phdr = false, entry = false, page = false;
  for (std::size_t n = 0; n < kMostEntries && offset + 2 * words.size * (n + 1) <= bytes.size(); ++n) {
    const std::size_t at = offset + 2 * words.size * n;
    const std::uint64_t type = words.at(bytes, at), value = words.at(bytes, at + words.size);
    if (type == kAtNull) return phdr && entry && page ? 2 * words.size * (n + 1) : 0;
    if (type > 64) return 0;  // no such type (include/uapi/linux/auxvec.h and the arch's own stay below)
    phdr |= type == kAtPhdr;
    entry |= type == kAtEntry;
    page |= type == kAtPagesz && value >= 4096 && (value & (value - 1)) == 0;
  }
  return 0;
}

// The bytes from `start` up to the first unknown byte, at most `most`.
std::vector<std::uint8_t> known_bytes(const replay::TraceIndex& index, std::uint64_t start, std::uint64_t most) {
  std::vector<std::uint8_t> bytes;
  constexpr std::size_t kPiece = 4096;
  while (bytes.size() < most) {
    const std::size_t old = bytes.size();
    bytes.resize(old + kPiece);
    const std::size_t got = index.read_memory(start + old, std::span(bytes).subspan(old));
    bytes.resize(old + got);
    if (got < kPiece) break;
  }
  return bytes;
}

// The vector after argc, argv[] and envp[] at `sp` (an image's entry).
std::vector<std::uint8_t> vector_at_entry(std::span<const std::uint8_t> stack, const Words& words) {
  if (stack.size() < words.size) return {};
  const std::uint64_t argc = words.at(stack, 0);
  if (argc > 1u << 20) return {};
  std::size_t at = words.size * (argc + 2);  // argc, argv[], NULL
  while (at + words.size <= stack.size() && words.at(stack, at) != 0) at += words.size;  // envp[]
  at += words.size;
  if (at > stack.size()) return {};
  const std::size_t length = vector_length(stack, at, words);
  if (length == 0) return {};
  return {stack.begin() + static_cast<std::ptrdiff_t>(at), stack.begin() + static_cast<std::ptrdiff_t>(at + length)};
}

// The highest vector in `stack`: the kernel's, at the top of the stack
// (below the strings it points at). The highest place where one seems to
// start may be inside it (after an entry whose value is 0): its start is
// found by going back over the entries before.
std::vector<std::uint8_t> vector_above(std::span<const std::uint8_t> stack, const Words& words) {
  const std::size_t pair = 2 * words.size;
  for (std::size_t at = stack.size() / words.size * words.size; at >= 2 * words.size; at -= words.size) {
    std::size_t start = at - words.size;
    if (words.at(stack, start - words.size) != 0) continue;  // envp's NULL (or a zero value) before it
    const std::size_t length = vector_length(stack, start, words);
    if (length == 0) continue;
    const std::size_t end = start + length;
    while (start >= pair && words.at(stack, start - pair) >= 1 && words.at(stack, start - pair) <= 64) start -= pair;
    return {stack.begin() + static_cast<std::ptrdiff_t>(start), stack.begin() + static_cast<std::ptrdiff_t>(end)};
  }
  return {};
}

// The files a trace maps, as its index replays them to a namer.
class MappedFiles final : public formats::AddressNamer {
 public:
  void module_loaded(const events::ModuleLoadEvent& module) override {
    files_.push_back({module.start.value, module.end.value, std::string(module.path)});
  }
  void unmapped(std::uint64_t, std::uint64_t) override {}
  void file_mapped(std::uint64_t start, std::uint64_t end, std::string_view path) override {
    files_.push_back({start, end, std::string(path)});
  }
  std::string name(std::uint64_t) override { return {}; }
  // The first file mapped over `address`; "" when none.
  std::string file_at(std::uint64_t address) const {
    for (const auto& file : files_)
      if (address >= file.start && address < file.end && !file.path.empty()) return file.path;
    return {};
  }

 private:
  struct File {
    std::uint64_t start, end;
    std::string path;
  };
  std::vector<File> files_;
};

}  // namespace

std::vector<std::uint8_t> auxiliary_vector(const replay::TraceIndex& index, std::uint64_t sp) {
  const Words words{index.arch().elf_64bit ? 8u : 4u, index.arch().little_endian};
  const std::vector<std::uint8_t> stack = known_bytes(index, sp, kMostStackScanned);
  if (auto at_entry = vector_at_entry(stack, words); !at_entry.empty()) return at_entry;
  return vector_above(stack, words);
}

std::string mapped_program(const replay::TraceIndex& index, std::span<const std::uint8_t> auxv) {
  const Words words{index.arch().elf_64bit ? 8u : 4u, index.arch().little_endian};
  for (std::size_t at = 0; at + 2 * words.size <= auxv.size(); at += 2 * words.size) {
    if (words.at(auxv, at) != kAtPhdr) continue;
    MappedFiles files;
    index.name_mappings(files);
    return files.file_at(words.at(auxv, at + words.size));
  }
  return {};
}

}  // namespace tracecorn::debug
