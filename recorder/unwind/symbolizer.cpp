// Role: the symbol tables and the symbolizer declared in symbolizer.h.
#include "recorder/unwind/symbolizer.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <tuple>

#include "recorder/support/hex.h"
#include "recorder/unwind/byte_reader.h"

namespace tracecorn::unwind {
namespace {

constexpr std::uint8_t kSttFunc = 2, kSttGnuIfunc = 10;
constexpr std::uint8_t kStbLocal = 0, kStbGlobal = 1, kStbWeak = 2;
constexpr std::uint32_t kShtSymtab = 2, kShtDynsym = 11;
constexpr std::uint16_t kEmArm = 40;

struct Candidate {
  Symbol symbol;
  std::uint8_t type;
  std::uint8_t binding;
};

// Lower is preferred (see symbolizer.h for the order).
auto preference(const Candidate& c) {
  const bool is_function = c.type == kSttFunc || c.type == kSttGnuIfunc;
  const int binding_rank = c.binding == kStbGlobal ? 0 : c.binding == kStbWeak ? 1 : c.binding == kStbLocal ? 2 : 3;
  const std::size_t underscores = c.symbol.name.find_first_not_of('_');
  return std::make_tuple(is_function ? 0 : 1, binding_rank, underscores, c.symbol.name.size(),
                         std::string_view(c.symbol.name));
}

void read_symbols(const elf::ElfFile& file, const elf::SectionHeader& table, std::vector<Candidate>& out) {
  const auto& sections = file.section_headers();
  if (table.link >= sections.size()) return;
  auto symbols = file.section_bytes(table);
  auto strings = file.section_bytes(sections[table.link]);
  if (!symbols || !strings) return;
  const unsigned entry_size = file.is_64bit() ? 24 : 16;
  detail::ByteReader in(*symbols, file.little_endian());
  const std::size_t count = symbols->size() / entry_size;
  for (std::size_t i = 1; i < count; ++i) {  // entry 0 is the null symbol
    in.seek(i * entry_size);
    std::uint32_t name = 0;
    std::uint8_t info = 0, other = 0;
    std::uint16_t section = 0;
    std::uint64_t value = 0, size = 0;
    in.u32(name);
    if (file.is_64bit()) {
      in.u8(info);
      in.u8(other);
      in.u16(section);
      in.u64(value);
      in.u64(size);
    } else {
      std::uint32_t value32 = 0, size32 = 0;
      in.u32(value32);
      in.u32(size32);
      in.u8(info);
      in.u8(other);
      in.u16(section);
      value = value32;
      size = size32;
    }
    const std::uint8_t type = info & 0xf, binding = info >> 4;
    if (section == 0 || value == 0 || name >= strings->size()) continue;  // undefined or unnamed
    if (type != kSttFunc && type != kSttGnuIfunc && type != 0) continue;  // functions (and untyped asm labels)
    const char* text = reinterpret_cast<const char*>(strings->data() + name);
    const std::size_t length = strnlen(text, strings->size() - name);
    if (length == 0 || length == strings->size() - name) continue;
    // Untyped local labels (.L..., $x) are not function names.
    if (type == 0 && (binding == kStbLocal || text[0] == '.' || text[0] == '$')) continue;
    // Arm ELF (AAELF 5.5.3): bit 0 of a function symbol's value marks Thumb code;
    // the function starts at the even address.
    const std::uint8_t mode = file.machine() == kEmArm && type == kSttFunc && (value & 1) ? 1 : 0;
    if (mode) value &= ~std::uint64_t{1};
    out.push_back({Symbol{value, size, std::string(text, length), mode}, type, binding});
  }
}

}  // namespace

SymbolTable SymbolTable::from_elf(const elf::ElfFile& file) {
  std::vector<Candidate> candidates;
  for (const auto& section : file.section_headers())
    if (section.type == kShtSymtab || section.type == kShtDynsym) read_symbols(file, section, candidates);
  std::sort(candidates.begin(), candidates.end(), [](const Candidate& a, const Candidate& b) {
    if (a.symbol.address != b.symbol.address) return a.symbol.address < b.symbol.address;
    return preference(a) < preference(b);
  });
  SymbolTable table;
  for (auto& candidate : candidates) {
    if (!table.symbols_.empty() && table.symbols_.back().address == candidate.symbol.address) {
      // Same address: the first (preferred) name stays; keep the largest size known.
      table.symbols_.back().size = std::max(table.symbols_.back().size, candidate.symbol.size);
      continue;
    }
    table.symbols_.push_back(std::move(candidate.symbol));
  }
  return table;
}

const Symbol* SymbolTable::find(std::uint64_t file_address) const {
  auto it = std::upper_bound(symbols_.begin(), symbols_.end(), file_address,
                             [](std::uint64_t value, const Symbol& s) { return value < s.address; });
  if (it == symbols_.begin()) return nullptr;
  --it;
  if (it->size != 0 && file_address - it->address >= it->size) return nullptr;
  return &*it;
}

Status Symbolizer::add_module(std::uint64_t start, std::uint64_t end, std::uint64_t load_bias,
                              const std::string& host_path, const std::string& guest_path) {
  if (end <= start) return ok_status();
  for (const Mapping& existing : mappings_)
    if (existing.start == start && existing.bias == load_bias && existing.end >= end && existing.guest_path == guest_path)
      return ok_status();
  std::erase_if(mappings_, [&](const Mapping& m) { return m.start < end && start < m.end; });
  Status status = ok_status();
  std::shared_ptr<const SymbolTable> symbols;
  if (auto found = files_.find(host_path); found != files_.end()) {
    symbols = found->second;
  } else {
    auto file = elf::ElfFile::load(host_path);
    if (file) {
      symbols = std::make_shared<const SymbolTable>(SymbolTable::from_elf(*file));
      files_.emplace(host_path, symbols);
    } else {
      status = file.error();
    }
  }
  Mapping mapping{start, end, load_bias, guest_path, std::move(symbols)};
  auto at = std::lower_bound(mappings_.begin(), mappings_.end(), start,
                             [](const Mapping& m, std::uint64_t value) { return m.start < value; });
  mappings_.insert(at, std::move(mapping));
  return status;
}

void Symbolizer::remove_range(std::uint64_t start, std::uint64_t length) {
  const std::uint64_t end = length > ~std::uint64_t{0} - start ? ~std::uint64_t{0} : start + length;
  std::erase_if(mappings_, [&](const Mapping& m) { return start <= m.start && m.end <= end; });
}

SymbolizedAddress Symbolizer::locate(std::uint64_t address) const {
  SymbolizedAddress result;
  auto it = std::upper_bound(mappings_.begin(), mappings_.end(), address,
                             [](std::uint64_t value, const Mapping& m) { return value < m.start; });
  if (it == mappings_.begin()) return result;
  --it;
  if (address >= it->end) return result;
  result.module = it->guest_path;
  const std::uint64_t file_address = address - it->bias;
  const Symbol* symbol = it->symbols ? it->symbols->find(file_address) : nullptr;
  if (symbol) {
    result.symbol = symbol->name;
    result.offset = file_address - symbol->address;
  } else {
    result.offset = file_address;
  }
  return result;
}

std::string Symbolizer::describe(std::uint64_t address) const {
  const SymbolizedAddress where = locate(address);
  if (where.module.empty()) return "";
  if (where.symbol.empty()) return "(" + where.module + "+" + hex(where.offset) + ")";
  return where.symbol + "+" + hex(where.offset) + " (" + where.module + ")";
}

}  // namespace tracecorn::unwind
