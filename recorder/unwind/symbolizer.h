// Role: turns guest code addresses into "module(symbol+0x1c)" from the
// .symtab and .dynsym of the modules the guest mapped, for the text format,
// `tracecorn run --strace -k` and the tests.
// Who calls it: the text sink on the drain thread (fed by the trace's module
// events), the CLI's strace printer on the emulation thread: one Symbolizer
// per thread, not thread safe.
// Invariants: symbol tables are untrusted bytes (bounds-checked; a bad table
// is skipped, never fatal). When several symbols start at one address
// (write / __write / __libc_write), the choice is stable: a function over
// other types, then global over weak over local binding, then the name with
// the fewest leading underscores, then the shorter, then the smaller name.
// A symbol with a size covers [value, value + size); one of size 0 covers up
// to the next symbol.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "recorder/elf/elf_file.h"
#include "recorder/support/expected.h"

namespace tracecorn::unwind {

struct Symbol {
  std::uint64_t address = 0;  // file address
  std::uint64_t size = 0;
  std::string name;
  std::uint8_t mode = 0;  // Arm: 1 for a Thumb function (bit 0 of its value); 0 elsewhere
};

// The function symbols of one file, sorted by address, one per address.
class SymbolTable {
 public:
  // Reads .symtab and .dynsym (both when present). Never fails: a malformed
  // table contributes what could be read before the problem.
  static SymbolTable from_elf(const elf::ElfFile& file);
  // The symbol covering `file_address`, or nullptr.
  const Symbol* find(std::uint64_t file_address) const;
  std::size_t size() const { return symbols_.size(); }

 private:
  std::vector<Symbol> symbols_;
};

struct SymbolizedAddress {
  std::string module;       // the module's path as the guest named it ("" when no module covers it)
  std::string symbol;       // "" when no symbol covers it
  std::uint64_t offset = 0;  // from the symbol, or from the module's load bias when there is no symbol
};

class Symbolizer {
 public:
  // `host_path` is read; `guest_path` is what is shown. Errors: unreadable or
  // not ELF (the range is then shown as the module with an offset).
  Status add_module(std::uint64_t start, std::uint64_t end, std::uint64_t load_bias, const std::string& host_path,
                    const std::string& guest_path);
  // Forgets modules wholly inside the range (partial unmaps keep them, and a
  // re-add at the same start with a smaller end keeps the larger range: see
  // Unwinder::remove_range).
  void remove_range(std::uint64_t start, std::uint64_t length);

  SymbolizedAddress locate(std::uint64_t address) const;
  // "write+0x17 (/usr/lib/x86_64-linux-gnu/libc.so.6)", "(/bin/true+0x1234)" when
  // no symbol covers it, "" when no module does.
  std::string describe(std::uint64_t address) const;

 private:
  struct Mapping {
    std::uint64_t start, end, bias;
    std::string guest_path;
    std::shared_ptr<const SymbolTable> symbols;
  };
  std::vector<Mapping> mappings_;  // sorted by start
  std::unordered_map<std::string, std::shared_ptr<const SymbolTable>> files_;
};

}  // namespace tracecorn::unwind
