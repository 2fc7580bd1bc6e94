// Role: tests of the DWARF CFI parser (recorder/unwind/cfi.h) against GNU
// readelf: for Debian's libc.so.6, ld.so and the sample binaries, every row of
// every FDE (CFA, return address and every register column readelf prints)
// must equal `readelf --debug-dump=frames-interp`; the FDE lookup through
// .eh_frame_hdr must agree with the index built by scanning; and malformed
// sections must give errors, never crashes.
#include <doctest/doctest.h>

#include <cstring>
#include <random>
#include <set>

#include "arch/arch.h"
#include "recorder/unwind/cfi.h"
#include "recorder/unwind/module_unwind_info.h"
#include "tests/recorder/unwind/unwind_test_support.h"

using namespace tracecorn::unwind;
using tracecorn::ErrorCode;

namespace {

const std::string kSamples = TRACECORN_SAMPLES_DIR;
const std::string kUnwindSamples = TRACECORN_UNWIND_SAMPLES_DIR;

std::string hex(std::uint64_t value) {
  char text[24];
  std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(value));
  return text;
}

std::string register_name(unsigned dwarf) {
  for (const auto& reg : tracecorn::arch::x86_64_arch().registers)
    if (reg.dwarf == static_cast<int>(dwarf)) return std::string(reg.name);
  return "r" + std::to_string(dwarf);
}

std::string signed_offset(std::int64_t value) {
  return (value < 0 ? "-" : "+") + std::to_string(value < 0 ? -value : value);
}

// The cell readelf prints for a CFA rule.
std::string cfa_cell(const UnwindRow& row) {
  if (row.cfa.is_expression) return "exp";
  return register_name(row.cfa.reg) + signed_offset(row.cfa.offset);
}

// The cell readelf prints for a register rule ("u" also stands for a column
// with no rule yet: readelf starts every column undefined).
std::string rule_cell(const RegisterRule& rule) {
  switch (rule.kind) {
    case RuleKind::kUnspecified: case RuleKind::kUndefined: return "u";
    case RuleKind::kSameValue: return "s";
    case RuleKind::kOffset: return "c" + signed_offset(rule.offset);
    case RuleKind::kValOffset: return "v" + signed_offset(rule.offset);
    case RuleKind::kRegister:  // "r9 (r9)"
      return "r" + std::to_string(rule.reg) + " (" + register_name(static_cast<unsigned>(rule.reg)) + ")";
    case RuleKind::kExpression: return "exp";
    case RuleKind::kValExpression: return "vexp";
  }
  return "?";
}

struct Comparison {
  std::size_t fdes = 0;
  std::size_t rows = 0;
  std::size_t mismatches = 0;
};

// Compares one section's FDEs with readelf's view of them.
Comparison compare_with_readelf(const CfiTable& table, const std::vector<test::ReadelfEntry>& expected) {
  Comparison result;
  std::map<std::uint64_t, const test::ReadelfEntry*> by_offset;
  for (const auto& entry : expected) by_offset[entry.offset] = &entry;
  auto compare_row = [&](const test::ReadelfEntry& shown, const std::vector<std::string>& cells, const UnwindRow& row,
                         std::uint64_t loc) {
    ++result.rows;
    for (std::size_t c = 0; c < shown.columns.size(); ++c) {
      const std::string& column = shown.columns[c];
      std::string ours;
      if (column == "CFA") {
        ours = cfa_cell(row);
      } else if (column == "ra") {
        ours = rule_cell(row.rule_for(row.return_column));
      } else {
        unsigned dwarf = 999;
        for (unsigned d = 0; d < kMaxRegisters; ++d)
          if (register_name(d) == column) dwarf = d;
        ours = dwarf == 999 ? "?" : rule_cell(row.rule_for(dwarf));
      }
      if (ours != cells[c]) {
        if (++result.mismatches <= 10)
          MESSAGE("FDE at " << hex(shown.offset) << " loc " << hex(loc) << " column " << column << ": readelf "
                            << cells[c] << ", ours " << ours);
      }
    }
  };
  auto status = table.for_each([&](const CieRecord*, const FdeRecord* fde) {
    if (!fde) return;
    ++result.fdes;
    auto found = by_offset.find(fde->offset);
    if (found == by_offset.end() || found->second->is_cie) {
      ++result.mismatches;
      MESSAGE("FDE at " << hex(fde->offset) << " is not in readelf's output");
      return;
    }
    const test::ReadelfEntry& shown = *found->second;
    if (shown.pc_begin != fde->pc_begin || shown.pc_end != fde->pc_end) {
      ++result.mismatches;
      MESSAGE("FDE at " << hex(fde->offset) << " range differs");
      return;
    }
    const test::ReadelfEntry* rows_from = &shown;
    if (shown.rows.empty()) {
      // No instructions: readelf prints no table; the row is the CIE's.
      auto cie = by_offset.find(fde->cie_offset);
      if (cie == by_offset.end() || cie->second->rows.empty()) return;
      rows_from = cie->second;
      auto row = table.row_at(*fde, fde->pc_begin);
      if (!row) {
        ++result.mismatches;
        MESSAGE(row.error().to_string());
        return;
      }
      compare_row(*rows_from, rows_from->rows.back().second, *row, fde->pc_begin);
      return;
    }
    // readelf prints a row before every advance; the last one at a LOC holds.
    std::map<std::uint64_t, const std::vector<std::string>*> last_at;
    for (const auto& [loc, cells] : shown.rows) last_at[loc] = &cells;
    for (const auto& [loc, cells] : last_at) {
      if (loc >= fde->pc_end) continue;
      auto row = table.row_at(*fde, loc);
      if (!row) {
        ++result.mismatches;
        MESSAGE(row.error().to_string());
        continue;
      }
      compare_row(shown, *cells, *row, loc);
    }
    // And our own row boundaries are all places where readelf prints a row.
    std::size_t extra = 0;
    auto rows_status = table.rows(*fde, [&](const UnwindRow& row) {
      if (!last_at.count(row.start)) ++extra;
    });
    if (!rows_status || extra) {
      ++result.mismatches;
      MESSAGE("FDE at " << hex(fde->offset) << ": rows not shown by readelf");
    }
  });
  if (!status) {
    ++result.mismatches;
    MESSAGE(status.error().to_string());
  }
  return result;
}

void check_file_against_readelf(const std::string& path, bool expect_debug_frame = false) {
  INFO(path);
  auto module = ModuleUnwindInfo::load(path);
  REQUIRE(module.has_value());
  CHECK((*module)->problems().empty());
  const auto readelf = test::parse_readelf_frames(test::run_tool("readelf --debug-dump=frames-interp '" + path + "' 2>/dev/null"));
  REQUIRE(readelf.count(".eh_frame"));
  REQUIRE((*module)->eh_frame() != nullptr);
  const Comparison eh = compare_with_readelf(*(*module)->eh_frame(), readelf.at(".eh_frame"));
  MESSAGE(path << " .eh_frame: " << eh.fdes << " FDEs, " << eh.rows << " rows compared");
  CHECK(eh.fdes > 0);
  CHECK(eh.rows >= eh.fdes);
  CHECK(eh.mismatches == 0);
  if (expect_debug_frame) {
    REQUIRE(readelf.count(".debug_frame"));
    REQUIRE((*module)->debug_frame() != nullptr);
    const Comparison debug = compare_with_readelf(*(*module)->debug_frame(), readelf.at(".debug_frame"));
    MESSAGE(path << " .debug_frame: " << debug.fdes << " FDEs, " << debug.rows << " rows compared");
    CHECK(debug.fdes > 0);
    CHECK(debug.mismatches == 0);
  }
}

std::string libc_path() { return "/lib/x86_64-linux-gnu/libc.so.6"; }

}  // namespace

TEST_CASE("CFI: every row of Debian's libc.so.6 equals readelf --debug-dump=frames-interp") {
  check_file_against_readelf(libc_path());
}

TEST_CASE("CFI: every row of ld.so, libstdc++ (\"zPLR\" CIEs) and the sample binaries equals readelf") {
  check_file_against_readelf("/lib64/ld-linux-x86-64.so.2");
  check_file_against_readelf("/usr/lib/x86_64-linux-gnu/libstdc++.so.6");
  for (const char* variant : {"static", "static-pie", "dynamic"}) check_file_against_readelf(kSamples + "/" + variant + "/hello");
  check_file_against_readelf(kUnwindSamples + "/debug_frame/nested_calls", true);
  // The DW_CFA instructions glibc does not use (samples/unwind/cfi_ops.s).
  check_file_against_readelf(kUnwindSamples + "/cfi_ops.so");
}

TEST_CASE("CFI: FDE lookup through .eh_frame_hdr agrees with the scanned index at every FDE boundary") {
  auto module = ModuleUnwindInfo::load(libc_path());
  REQUIRE(module.has_value());
  const CfiTable* with_header = (*module)->eh_frame();
  REQUIRE(with_header != nullptr);
  CHECK(with_header->uses_header_index());
  auto scanned = CfiTable::create(with_header->section());
  REQUIRE(scanned.has_value());
  CHECK_FALSE(scanned->uses_header_index());
  std::size_t probes = 0, mismatches = 0;
  auto status = with_header->for_each([&](const CieRecord*, const FdeRecord* fde) {
    if (!fde || fde->pc_end == fde->pc_begin) return;
    for (std::uint64_t pc : {fde->pc_begin, fde->pc_end - 1, fde->pc_begin + (fde->pc_end - fde->pc_begin) / 2}) {
      ++probes;
      auto a = with_header->find_fde(pc);
      auto b = scanned->find_fde(pc);
      if (!a || !b || !*a || !*b || (*a)->offset != (*b)->offset || (*a)->offset != fde->offset) ++mismatches;
    }
  });
  REQUIRE(status.has_value());
  CHECK(probes > 3000);
  CHECK(mismatches == 0);
  // Addresses outside every FDE find nothing.
  auto none = with_header->find_fde(0);
  REQUIRE(none.has_value());
  CHECK_FALSE(none->has_value());
}

TEST_CASE("CFI: a static binary has no .eh_frame_hdr and its FDEs are found through the scanned index") {
  auto module = ModuleUnwindInfo::load(kSamples + "/static/hello");
  REQUIRE(module.has_value());
  CHECK((*module)->elf().find_section(".eh_frame_hdr") == nullptr);
  const CfiTable* table = (*module)->eh_frame();
  REQUIRE(table != nullptr);
  CHECK_FALSE(table->uses_header_index());
  std::size_t found = 0, fdes = 0;
  auto status = table->for_each([&](const CieRecord*, const FdeRecord* fde) {
    if (!fde || fde->pc_end == fde->pc_begin) return;
    ++fdes;
    auto hit = table->find_fde(fde->pc_begin);
    if (hit && *hit && (*hit)->pc_begin <= fde->pc_begin && fde->pc_begin < (*hit)->pc_end) ++found;
  });
  REQUIRE(status.has_value());
  CHECK(fdes > 500);
  CHECK(found == fdes);
}

namespace {

// A tiny .eh_frame built from parts: one CIE ("zR", pcrel|sdata4) and one FDE.
std::vector<std::uint8_t> tiny_eh_frame(const std::vector<std::uint8_t>& fde_instructions) {
  std::vector<std::uint8_t> out;
  auto u32 = [&](std::uint32_t v) {
    for (int i = 0; i < 4; ++i) out.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
  };
  // CIE: length, id 0, version 1, "zR", caf 1, daf -8, ra 16, aug len 1, enc 0x1b,
  // def_cfa rsp+8, offset ra at cfa-8, two nops (the FDE starts at 24).
  const std::vector<std::uint8_t> cie_body = {0, 0, 0, 0, 1, 'z', 'R', 0, 1, 0x78, 16, 1, 0x1b, 0x0c, 7, 8, 0x90, 1, 0, 0};
  u32(static_cast<std::uint32_t>(cie_body.size()));
  out.insert(out.end(), cie_body.begin(), cie_body.end());
  const std::size_t fde_start = out.size();
  std::vector<std::uint8_t> fde_body;
  auto body32 = [&](std::uint32_t v) {
    for (int i = 0; i < 4; ++i) fde_body.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
  };
  body32(static_cast<std::uint32_t>(fde_start + 4));  // CIE pointer: back to offset 0
  body32(0x1000);                                      // pc_begin, pcrel
  body32(0x100);                                       // range
  fde_body.push_back(0);                               // aug length
  fde_body.insert(fde_body.end(), fde_instructions.begin(), fde_instructions.end());
  u32(static_cast<std::uint32_t>(fde_body.size()));
  out.insert(out.end(), fde_body.begin(), fde_body.end());
  u32(0);  // terminator
  return out;
}

tracecorn::Expected<UnwindRow> row_of_tiny(const std::vector<std::uint8_t>& bytes, std::uint64_t pc_offset) {
  CfiSection section;
  section.bytes = bytes;
  section.source = "tiny";
  auto table = CfiTable::create(section);
  if (!table) return table.error();
  auto fde = table->fde_at(24);
  if (!fde) return fde.error();
  return table->row_at(*fde, fde->pc_begin + pc_offset);
}

}  // namespace

TEST_CASE("Malicious: truncated CFI entries at every length give errors, never crashes") {
  const auto bytes = tiny_eh_frame({0x41, 0x0e, 16, 0x0a, 0x41, 0x0e, 32, 0x0b});
  REQUIRE(row_of_tiny(bytes, 3).has_value());
  for (std::size_t length = 0; length < bytes.size(); ++length) {
    std::vector<std::uint8_t> cut(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(length));
    auto row = row_of_tiny(cut, 3);
    (void)row;  // either an error or a row from what is left; must not crash
  }
}

TEST_CASE("Malicious: an entry length past the end of the section") {
  auto bytes = tiny_eh_frame({});
  bytes[24] = 0xf0;  // FDE length
  bytes[25] = 0xff;
  auto row = row_of_tiny(bytes, 0);
  REQUIRE_FALSE(row.has_value());
  CHECK(row.error().code == ErrorCode::kTruncated);
  CHECK(row.error().offset.value() == 24);
}

TEST_CASE("Malicious: a CIE pointer leading to an FDE (a loop) or outside the section") {
  auto bytes = tiny_eh_frame({});
  // Point the FDE's CIE pointer at itself (distance 0 would mean a CIE; 4 is the FDE's own length field).
  bytes[28] = 4;
  bytes[29] = bytes[30] = bytes[31] = 0;
  auto row = row_of_tiny(bytes, 0);
  REQUIRE_FALSE(row.has_value());
  CHECK(row.error().message.find("not a CIE") != std::string::npos);
  bytes[28] = 0xff;
  bytes[29] = 0xff;
  auto outside = row_of_tiny(bytes, 0);
  REQUIRE_FALSE(outside.has_value());
}

TEST_CASE("Malicious: a huge advance, unbalanced restore_state and runaway remember_state") {
  // advance_loc4 0xffffffff with code alignment 1 from 0x1000+: fine (past the
  // FDE); an advance overflowing 64 bits is an error.
  auto huge = tiny_eh_frame({0x04, 0xff, 0xff, 0xff, 0xff, 0x1d, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff});
  auto row = row_of_tiny(huge, 0);
  CHECK(row.has_value());  // the row at pc_begin is decided before the advances
  {
    CfiSection section;
    section.bytes = huge;
    auto table = CfiTable::create(section);
    REQUIRE(table.has_value());
    auto fde = table->fde_at(24);
    REQUIRE(fde.has_value());
    auto all = table->rows(*fde, [](const UnwindRow&) {});
    REQUIRE_FALSE(all.has_value());
    CHECK(all.error().message.find("overflows") != std::string::npos);
  }
  auto unbalanced = row_of_tiny(tiny_eh_frame({0x0b}), 0);
  REQUIRE_FALSE(unbalanced.has_value());
  CHECK(unbalanced.error().message.find("restore_state") != std::string::npos);
  auto runaway = row_of_tiny(tiny_eh_frame(std::vector<std::uint8_t>(100, 0x0a)), 0);
  REQUIRE_FALSE(runaway.has_value());
  CHECK(runaway.error().code == ErrorCode::kLimit);
  auto unknown = row_of_tiny(tiny_eh_frame({0x3f}), 0);
  REQUIRE_FALSE(unknown.has_value());
}

TEST_CASE("Malicious: random bit flips in libc's .eh_frame give rows or errors, never crashes") {
  auto module = ModuleUnwindInfo::load(libc_path());
  REQUIRE(module.has_value());
  const CfiTable& original = *(*module)->eh_frame();
  std::vector<std::uint8_t> bytes(original.section().bytes.begin(), original.section().bytes.begin() + 8192);
  std::mt19937 random(7);
  std::size_t errors = 0, rows = 0;
  for (int round = 0; round < 200; ++round) {
    auto copy = bytes;
    for (int flips = 0; flips < 4; ++flips) copy[random() % copy.size()] ^= static_cast<std::uint8_t>(1u << (random() % 8));
    CfiSection section = original.section();
    section.bytes = copy;
    auto table = CfiTable::create(section);
    REQUIRE(table.has_value());
    auto status = table->for_each([&](const CieRecord*, const FdeRecord* fde) {
      if (!fde || fde->pc_end == fde->pc_begin) return;
      auto row = table->row_at(*fde, fde->pc_begin + (fde->pc_end - fde->pc_begin) / 2);
      row ? ++rows : ++errors;
    });
    if (!status) ++errors;
  }
  CHECK(rows > 0);
  CHECK(errors > 0);
}
