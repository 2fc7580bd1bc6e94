// Role: tests of the symbolizer (recorder/unwind/symbolizer.h) against GNU
// readelf: for every defined code symbol `readelf --syms/--dyn-syms` lists in
// Debian's libc.so.6 (.dynsym) and in a static sample (.symtab), the
// symbolizer names an address inside it with the one of readelf's names for
// that address that the documented alias order picks (function, global >
// weak > local, fewest leading underscores, shorter, smaller), with the right
// offset and module; and malformed symbol tables are skipped, never fatal.
#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <tuple>

#include "recorder/unwind/symbolizer.h"
#include "tests/recorder/unwind/unwind_test_support.h"

using namespace tracecorn::unwind;

namespace {

struct ElfSymbol {
  std::string name;
  std::string type;     // FUNC, IFUNC, NOTYPE
  std::string binding;  // GLOBAL, WEAK, LOCAL
  std::uint64_t size;
};

// Code symbols by address, from `readelf -Ws` (.symtab) or `readelf -Ws --dyn-syms`:
// the candidates the documented rule chooses from.
std::map<std::uint64_t, std::vector<ElfSymbol>> readelf_functions(const std::string& path, bool dynamic) {
  std::map<std::uint64_t, std::vector<ElfSymbol>> by_address;
  std::istringstream in(test::run_tool("readelf -W " + std::string(dynamic ? "--dyn-syms" : "--syms") + " '" + path +
                                       "' 2>/dev/null"));
  std::string line;
  while (std::getline(in, line)) {
    const auto words = test::split_words(line);
    // Num: Value Size Type Bind Vis Ndx Name
    if (words.size() < 8 || words[0].back() != ':' || words[6] == "UND" || words[6] == "Ndx") continue;
    const std::string& type = words[3];
    const std::string& binding = words[4];
    const std::string name = words[7].substr(0, words[7].find('@'));  // versions: write@@GLIBC_2.2.5
    const std::uint64_t value = std::stoull(words[1], nullptr, 16);
    if (value == 0 || name.empty()) continue;
    if (type != "FUNC" && type != "IFUNC" && type != "NOTYPE") continue;
    if (type == "NOTYPE" && (binding == "LOCAL" || name[0] == '.' || name[0] == '$')) continue;
    const std::uint64_t size = words[2].rfind("0x", 0) == 0 ? std::stoull(words[2], nullptr, 16) : std::stoull(words[2]);
    by_address[value].push_back({name, type, binding, size});
  }
  return by_address;
}

// The documented preference, applied to readelf's view of the symbols.
std::string preferred(const std::vector<ElfSymbol>& symbols) {
  auto key = [](const ElfSymbol& s) {
    const int function = s.type == "FUNC" || s.type == "IFUNC" ? 0 : 1;
    const int binding = s.binding == "GLOBAL" ? 0 : s.binding == "WEAK" ? 1 : s.binding == "LOCAL" ? 2 : 3;
    return std::make_tuple(function, binding, s.name.find_first_not_of('_'), s.name.size(), s.name);
  };
  return std::min_element(symbols.begin(), symbols.end(), [&](const ElfSymbol& a, const ElfSymbol& b) {
           return key(a) < key(b);
         })->name;
}

void check_against_readelf(const std::string& path, bool dynamic, std::uint64_t bias) {
  INFO(path);
  Symbolizer symbolizer;
  REQUIRE(symbolizer.add_module(bias + 0x1000, bias + 0x10000000, bias, path, path).has_value());
  const auto expected = readelf_functions(path, dynamic);
  REQUIRE(expected.size() > 100);
  std::size_t checked = 0, aliases = 0;
  for (const auto& entry : expected) {
    const std::uint64_t address = entry.first;
    const std::vector<ElfSymbol>& symbols = entry.second;
    if (address < 0x1000) continue;
    std::uint64_t size = 0;
    for (const auto& s : symbols) size = std::max(size, s.size);
    const std::uint64_t offset = size > 0x1c ? 0x1c : 0;
    const auto where = symbolizer.locate(bias + address + offset);
    CHECK(where.module == path);
    CHECK_MESSAGE(where.symbol == preferred(symbols), "at " << address);
    CHECK(where.offset == offset);
    aliases += symbols.size() > 1;
    ++checked;
  }
  MESSAGE(path << ": " << checked << " function addresses named as readelf lists them, " << aliases << " with aliases");
  CHECK(aliases > 0);
}

}  // namespace

TEST_CASE("Symbolizer: every function of libc.so.6's .dynsym is named as readelf lists it, aliases chosen stably") {
  check_against_readelf("/lib/x86_64-linux-gnu/libc.so.6", true, 0x7ffff7dc0000);
  // write / __write (and __libc_write, local, not in .dynsym): one stable choice.
  Symbolizer symbolizer;
  REQUIRE(symbolizer.add_module(0x7ffff7dc0000, 0x7ffff8000000, 0x7ffff7dc0000, "/lib/x86_64-linux-gnu/libc.so.6",
                                "/lib/x86_64-linux-gnu/libc.so.6")
              .has_value());
  const auto libc = readelf_functions("/lib/x86_64-linux-gnu/libc.so.6", true);
  std::uint64_t write_address = 0;
  for (const auto& [address, symbols] : libc)
    for (const auto& s : symbols)
      if (s.name == "__write") write_address = address;
  REQUIRE(write_address != 0);
  CHECK(symbolizer.describe(0x7ffff7dc0000 + write_address + 0x17) == "write+0x17 (/lib/x86_64-linux-gnu/libc.so.6)");
  CHECK(symbolizer.describe(0x1000).empty());
}

TEST_CASE("Symbolizer: every function of a static sample's .symtab is named as readelf lists it") {
  check_against_readelf(std::string(TRACECORN_SAMPLES_DIR) + "/static/hello", false, 0);
}

TEST_CASE("Malicious: corrupted symbol tables are skipped, never fatal") {
  auto bytes = test::read_bytes(std::string(TRACECORN_SAMPLES_DIR) + "/static/hello");
  auto parsed = tracecorn::elf::ElfFile::parse(bytes, "hello");
  REQUIRE(parsed.has_value());
  const auto* symtab = parsed->find_section(".symtab");
  REQUIRE(symtab != nullptr);
  std::mt19937 random(5);
  for (int round = 0; round < 50; ++round) {
    auto copy = bytes;
    // Flip bytes inside the symbol table (names, values, sizes) and its header's link.
    for (int flips = 0; flips < 64; ++flips)
      copy[symtab->offset + random() % symtab->size] ^= static_cast<std::uint8_t>(random());
    auto file = tracecorn::elf::ElfFile::parse(copy, "mutated");
    REQUIRE(file.has_value());
    const SymbolTable table = SymbolTable::from_elf(*file);
    for (std::uint64_t address = 0x401000; address < 0x402000; address += 0x40) (void)table.find(address);
  }
  Symbolizer symbolizer;
  CHECK_FALSE(symbolizer.add_module(0x1000, 0x2000, 0, "/nonexistent/file", "/nonexistent/file").has_value());
  CHECK(symbolizer.describe(0x1800) == "(/nonexistent/file+0x1800)");
}
