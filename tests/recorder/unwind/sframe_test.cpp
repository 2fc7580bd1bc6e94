// Role: tests of the SFrame reader (recorder/unwind/sframe.h): every FDE and
// FRE of the v1 sections Debian's gas emits (-Wa,--gsframe) against
// `objdump --sframe`, PLT (PCMASK) lookups against the rows objdump prints,
// v2 sections built byte by byte here from the layout in
// binutils' SFrame format spec (AMD64 and AArch64 ABIs, both byte orders,
// FRE types ADDR1/2/4, offset sizes 1/2/4, PCINC and PCMASK FDEs, sorted and
// unsorted FDEs, FDE_FUNC_START_PCREL), and malformed sections.
#include <doctest/doctest.h>

#include <cstdlib>
#include <list>
#include <random>
#include <sstream>

#include "recorder/unwind/module_unwind_info.h"
#include "recorder/unwind/sframe.h"
#include "tests/recorder/unwind/unwind_test_support.h"

using namespace tracecorn::unwind;
using tracecorn::ErrorCode;

namespace {

const std::string kUnwindSamples = TRACECORN_UNWIND_SAMPLES_DIR;

struct ObjdumpFunction {
  std::uint64_t pc = 0, size = 0;
  bool pcmask = false;
  std::vector<std::vector<std::string>> rows;  // STARTPC, CFA, FP, RA
};

std::vector<ObjdumpFunction> objdump_sframe(const std::string& path) {
  std::vector<ObjdumpFunction> functions;
  std::istringstream in(test::run_tool("objdump --sframe '" + path + "' 2>/dev/null"));
  std::string line;
  while (std::getline(in, line)) {
    const auto words = test::split_words(line);
    if (words.size() >= 8 && words[0] == "func" && words[1] == "idx") {
      ObjdumpFunction function;
      function.pc = std::stoull(words[5], nullptr, 16);
      function.size = std::stoull(words[8]);
      functions.push_back(function);
    } else if (!functions.empty() && !words.empty() && words[0].rfind("STARTPC", 0) == 0) {
      functions.back().pcmask = words[0].find("[m]") != std::string::npos;
    } else if (!functions.empty() && words.size() == 4 && words[0].size() == 16) {
      functions.back().rows.push_back(words);
    }
  }
  return functions;
}

std::string offset_cell(const std::optional<std::int32_t>& offset, bool fixed) {
  if (!offset || fixed) return "u";  // objdump prints a fixed RA offset as "u" on AMD64
  return "c" + std::string(*offset < 0 ? "-" : "+") + std::to_string(*offset < 0 ? -*offset : *offset);
}

}  // namespace

TEST_CASE("SFrame: every FDE and FRE of gas's v1 sections equals objdump --sframe") {
  for (const char* variant : {"sframe-static", "sframe-dynamic"}) {
    const std::string path = kUnwindSamples + "/" + variant + "/nested_calls";
    INFO(path);
    auto module = ModuleUnwindInfo::load(path);
    REQUIRE(module.has_value());
    const SFrameTable* table = (*module)->sframe();
    REQUIRE(table != nullptr);
    CHECK(table->version() == 1);
    CHECK(table->abi() == kSFrameAbiAmd64Little);
    const auto expected = objdump_sframe(path);
    REQUIRE(expected.size() == table->fde_count());
    std::size_t rows = 0, pcmask = 0;
    for (std::uint32_t i = 0; i < table->fde_count(); ++i) {
      auto fde = table->fde(i);
      REQUIRE(fde.has_value());
      const ObjdumpFunction& want = expected[i];
      CHECK(fde->start == want.pc);
      CHECK(fde->size == want.size);
      CHECK(fde->pcmask == want.pcmask);
      std::vector<SFrameFre> fres;
      REQUIRE(table->for_each_fre(*fde, [&](const SFrameFre& fre) { fres.push_back(fre); }).has_value());
      REQUIRE(fres.size() == want.rows.size());
      for (std::size_t r = 0; r < fres.size(); ++r) {
        const auto& cells = want.rows[r];
        const std::uint64_t start = std::stoull(cells[0], nullptr, 16);
        CHECK(start == (fde->pcmask ? 0 : fde->start) + fres[r].start_offset);
        const std::string cfa = std::string(fres[r].cfa_base_is_sp ? "sp" : "fp") +
                                (fres[r].cfa_offset < 0 ? "-" : "+") + std::to_string(std::abs(fres[r].cfa_offset));
        CHECK(cfa == cells[1]);
        CHECK(offset_cell(fres[r].fp_offset, false) == cells[2]);
        CHECK(offset_cell(fres[r].ra_offset, table->fixed_ra_offset() != 0) == cells[3]);
        ++rows;
      }
      // Lookups: every byte of the function finds the FRE objdump lists last
      // at or before it (PLT stubs: within their 16-byte block).
      if (fde->pcmask) ++pcmask;
      for (std::uint64_t pc = fde->start; pc < fde->start + fde->size; ++pc) {
        auto found = table->find_fde(pc);
        REQUIRE(found.has_value());
        REQUIRE(found->has_value());
        CHECK((*found)->index == i);
        auto fre = table->find_fre(**found, pc);
        REQUIRE(fre.has_value());
        const std::uint64_t within = fde->pcmask ? (pc - fde->start) % 16 : pc - fde->start;
        std::optional<std::size_t> expected_row;
        for (std::size_t r = 0; r < fres.size(); ++r)
          if (fres[r].start_offset <= within) expected_row = r;
        REQUIRE(fre->has_value() == expected_row.has_value());
        if (expected_row) CHECK((*fre)->cfa_offset == fres[*expected_row].cfa_offset);
      }
    }
    MESSAGE(std::string(variant) << ": " << table->fde_count() << " FDEs, " << rows << " FREs equal objdump's");
    CHECK(rows > table->fde_count());
    if (std::string(variant) == "sframe-dynamic") CHECK(pcmask == 1);  // the PLT
  }
}

namespace {

// Builds SFrame sections from the spec's layout (sframe-v2.txt, 2.1-2.4).
struct FreSpec {
  std::uint32_t start;
  bool base_sp;
  std::vector<std::int32_t> offsets;
  unsigned offset_size;  // 1, 2, 4
  bool mangled = false;
};
struct FdeSpec {
  std::int64_t start;  // as stored (relative)
  std::uint32_t size;
  unsigned fre_type;  // 0 ADDR1, 1 ADDR2, 2 ADDR4
  bool pcmask = false;
  std::uint8_t rep_size = 0;
  std::vector<FreSpec> fres;
};

class SectionBuilder {
 public:
  SectionBuilder(std::uint8_t version, std::uint8_t flags, std::uint8_t abi, std::int8_t fixed_fp, std::int8_t fixed_ra)
      : version_(version), flags_(flags), abi_(abi), fixed_fp_(fixed_fp), fixed_ra_(fixed_ra),
        big_endian_(abi == kSFrameAbiAarch64Big) {}

  std::vector<std::uint8_t> build(const std::vector<FdeSpec>& fdes) const {
    std::vector<std::uint8_t> fre_bytes;
    std::vector<std::uint8_t> fde_bytes;
    std::uint32_t num_fres = 0;
    for (const auto& fde : fdes) {
      const auto fre_offset = static_cast<std::uint32_t>(fre_bytes.size());
      for (const auto& fre : fde.fres) {
        put(fre_bytes, fre.start, fde.fre_type == 0 ? 1 : fde.fre_type == 1 ? 2 : 4);
        const unsigned size_code = fre.offset_size == 1 ? 0 : fre.offset_size == 2 ? 1 : 2;
        fre_bytes.push_back(static_cast<std::uint8_t>((fre.base_sp ? 1 : 0) | (fre.offsets.size() << 1) |
                                                      (size_code << 5) | (fre.mangled ? 0x80 : 0)));
        for (auto offset : fre.offsets) put(fre_bytes, static_cast<std::uint32_t>(offset), fre.offset_size);
        ++num_fres;
      }
      put(fde_bytes, static_cast<std::uint32_t>(fde.start), 4);
      put(fde_bytes, fde.size, 4);
      put(fde_bytes, fre_offset, 4);
      put(fde_bytes, static_cast<std::uint32_t>(fde.fres.size()), 4);
      fde_bytes.push_back(static_cast<std::uint8_t>(fde.fre_type | (fde.pcmask ? 0x10 : 0)));
      if (version_ == 2) {
        fde_bytes.push_back(fde.rep_size);
        put(fde_bytes, 0, 2);
      }
    }
    std::vector<std::uint8_t> out;
    put(out, 0xdee2, 2);
    out.push_back(version_);
    out.push_back(flags_);
    out.push_back(abi_);
    out.push_back(static_cast<std::uint8_t>(fixed_fp_));
    out.push_back(static_cast<std::uint8_t>(fixed_ra_));
    out.push_back(0);  // no auxiliary header
    put(out, static_cast<std::uint32_t>(fdes.size()), 4);
    put(out, num_fres, 4);
    put(out, static_cast<std::uint32_t>(fre_bytes.size()), 4);
    put(out, 0, 4);                                             // FDEs right after the header
    put(out, static_cast<std::uint32_t>(fde_bytes.size()), 4);  // FREs after the FDEs
    out.insert(out.end(), fde_bytes.begin(), fde_bytes.end());
    out.insert(out.end(), fre_bytes.begin(), fre_bytes.end());
    return out;
  }

 private:
  void put(std::vector<std::uint8_t>& out, std::uint32_t value, unsigned size) const {
    for (unsigned i = 0; i < size; ++i) {
      const unsigned shift = big_endian_ ? 8 * (size - 1 - i) : 8 * i;
      out.push_back(static_cast<std::uint8_t>(value >> shift));
    }
  }
  std::uint8_t version_, flags_, abi_;
  std::int8_t fixed_fp_, fixed_ra_;
  bool big_endian_;
};

}  // namespace

TEST_CASE("SFrame: v2 AMD64 sections built from the spec: FRE types, offset sizes, PCINC and PCMASK") {
  // Three functions, each with another FRE type and offset size; a PLT-like
  // PCMASK FDE with a 16-byte block. Function starts are relative to the
  // section (FDE_FUNC_START_PCREL clear), the section lives at 0x10000.
  const std::vector<FdeSpec> fdes = {
      {0x1000, 0x40, 0, false, 0, {{0, true, {8}, 1}, {1, true, {16, -16}, 1}, {0x30, false, {16, -16}, 1}}},
      {0x2000, 0x400, 1, false, 0, {{0, true, {8}, 2}, {0x300, true, {1000, -16}, 2}}},
      {0x30000, 0x20000, 2, false, 0, {{0, true, {8}, 4}, {0x10000, true, {100000, -24}, 4}}},
      {0x50000, 0x80, 0, true, 16, {{0, true, {8}, 1}, {11, true, {16}, 1}}},
  };
  const SectionBuilder builder(2, kSFrameFlagFdeSorted, kSFrameAbiAmd64Little, 0, -8);
  const auto bytes = builder.build(fdes);
  auto table = SFrameTable::create(bytes, 0x10000, "built");
  REQUIRE(table.has_value());
  CHECK(table->version() == 2);
  REQUIRE(table->fde_count() == 4);
  const SFrameRegisters regs;  // x86-64: sp 7, fp 6, return column 16
  for (std::size_t i = 0; i < fdes.size(); ++i) {
    auto fde = table->fde(static_cast<std::uint32_t>(i));
    REQUIRE(fde.has_value());
    CHECK(fde->start == 0x10000 + static_cast<std::uint64_t>(fdes[i].start));
    CHECK(fde->fre_type == fdes[i].fre_type);
    for (const auto& spec : fdes[i].fres) {
      // The pc at the FRE's start (and, for PCMASK, in the third block).
      const std::uint64_t pc = fde->start + spec.start + (fdes[i].pcmask ? 32 : 0);
      auto found = table->find_fde(pc);
      REQUIRE(found.has_value());
      REQUIRE(found->has_value());
      CHECK((*found)->index == i);
      auto fre = table->find_fre(**found, pc);
      REQUIRE(fre.has_value());
      REQUIRE(fre->has_value());
      CHECK((*fre)->start_offset == spec.start);
      CHECK((*fre)->offset_size == spec.offset_size);
      CHECK((*fre)->cfa_base_is_sp == spec.base_sp);
      CHECK((*fre)->cfa_offset == spec.offsets[0]);
      CHECK((*fre)->ra_offset == -8);  // fixed on AMD64
      if (spec.offsets.size() > 1) CHECK((*fre)->fp_offset == spec.offsets[1]);
      else CHECK_FALSE((*fre)->fp_offset.has_value());
      auto row = table->row_for(**fre, regs);
      REQUIRE(row.has_value());
      CHECK(row->cfa.reg == (spec.base_sp ? 7 : 6));
      CHECK(row->cfa.offset == spec.offsets[0]);
      CHECK(row->rule_for(16).kind == RuleKind::kOffset);
      CHECK(row->rule_for(16).offset == -8);
    }
  }
  // Outside every function, and between functions.
  for (std::uint64_t pc : {0x10000ull, 0x10000ull + 0x1040, 0x10000ull + 0x70000}) {
    auto none = table->find_fde(pc);
    REQUIRE(none.has_value());
    CHECK_FALSE(none->has_value());
  }
}

TEST_CASE("SFrame: v2 AArch64 (both byte orders) tracks RA per FRE; unsorted FDEs and PC-relative starts") {
  for (std::uint8_t abi : {kSFrameAbiAarch64Little, kSFrameAbiAarch64Big}) {
    INFO("abi " << int(abi));
    // AArch64: offsets are CFA, RA, FP (1 or 3 of them); RA may be mangled.
    // FDEs out of order, FDE_SORTED clear: lookups must scan.
    const std::vector<FdeSpec> fdes = {
        {0x900, 0x20, 0, false, 0, {{0, true, {0}, 1}, {4, true, {32, -8, -16}, 1, true}}},
        {0x100, 0x40, 1, false, 0, {{0, true, {0}, 2}, {8, false, {16, -8, -16}, 2}}},
    };
    const SectionBuilder builder(2, 0, abi, 0, 0);
    const std::vector<std::uint8_t> section = builder.build(fdes);  // the table views it: it must outlive the table
    auto table = SFrameTable::create(section, 0x4000, "built");
    REQUIRE(table.has_value());
    SFrameRegisters regs;
    regs.sp = 31;
    regs.fp = 29;
    regs.return_column = 30;
    auto found = table->find_fde(0x4000 + 0x900 + 6);
    REQUIRE(found.has_value());
    REQUIRE(found->has_value());
    CHECK((*found)->index == 0);
    auto fre = table->find_fre(**found, 0x4000 + 0x900 + 6);
    REQUIRE(fre.has_value());
    REQUIRE(fre->has_value());
    CHECK((*fre)->ra_offset == -8);
    CHECK((*fre)->fp_offset == -16);
    CHECK((*fre)->ra_mangled);
    auto row = table->row_for(**fre, regs);
    REQUIRE(row.has_value());
    CHECK(row->return_address_signed);
    CHECK(row->rule_for(30).offset == -8);
    CHECK(row->rule_for(29).offset == -16);
    // The first FRE of each function has only the CFA offset: the RA is still
    // in the link register (x30, the return column): no rule for it.
    auto first = table->find_fre(**found, 0x4000 + 0x900);
    REQUIRE(first.has_value());
    REQUIRE(first->has_value());
    CHECK_FALSE((*first)->ra_offset.has_value());
    auto in_lr = table->row_for(**first, regs);
    REQUIRE(in_lr.has_value());
    CHECK(in_lr->rule_for(30).kind == RuleKind::kUnspecified);
    CHECK(in_lr->cfa.reg == 31);
    auto second = table->find_fde(0x4000 + 0x100 + 9);
    REQUIRE(second.has_value());
    REQUIRE(second->has_value());
    auto fp_based = table->find_fre(**second, 0x4000 + 0x100 + 9);
    REQUIRE(fp_based.has_value());
    REQUIRE(fp_based->has_value());
    CHECK_FALSE((*fp_based)->cfa_base_is_sp);
  }
  // FDE_FUNC_START_PCREL: the start is relative to the FDE's own start field.
  const std::vector<FdeSpec> fdes = {{-0x28, 0x10, 0, false, 0, {{0, true, {8}, 1}}}};
  const SectionBuilder builder(2, kSFrameFlagFdeSorted | kSFrameFlagFuncStartPcrel, kSFrameAbiAmd64Little, 0, -8);
  const std::vector<std::uint8_t> section = builder.build(fdes);  // the table views it: it must outlive the table
  auto table = SFrameTable::create(section, 0x20000, "built");
  REQUIRE(table.has_value());
  auto fde = table->fde(0);
  REQUIRE(fde.has_value());
  CHECK(fde->start == 0x20000 + 28 - 0x28);  // the FDE array starts right after the 28-byte header
}

TEST_CASE("SFrame: v1 FDEs are 17 bytes and PCMASK repeats every 16 bytes on AMD64") {
  const std::vector<FdeSpec> fdes = {
      {0x100, 0x30, 0, true, 0, {{0, true, {8}, 1}, {6, true, {16}, 1}, {11, true, {24}, 1}}},
      {0x200, 0x10, 0, false, 0, {{0, true, {8}, 1}}},
  };
  const SectionBuilder builder(1, kSFrameFlagFdeSorted, kSFrameAbiAmd64Little, 0, -8);
  const auto bytes = builder.build(fdes);
  CHECK(bytes.size() == 28 + 2 * 17 + 4 * 3);
  auto table = SFrameTable::create(bytes, 0, "built");
  REQUIRE(table.has_value());
  auto fde = table->fde(0);
  REQUIRE(fde.has_value());
  CHECK(fde->repetition_size == 16);
  for (std::uint64_t pc = 0x100; pc < 0x130; ++pc) {
    auto fre = table->find_fre(*fde, pc);
    REQUIRE(fre.has_value());
    REQUIRE(fre->has_value());
    const std::uint64_t within = (pc - 0x100) % 16;
    CHECK((*fre)->cfa_offset == (within >= 11 ? 24 : within >= 6 ? 16 : 8));
  }
  auto second = table->fde(1);
  REQUIRE(second.has_value());
  CHECK(second->start == 0x200);
}

TEST_CASE("Malicious: truncated and inconsistent SFrame sections give errors, never crashes") {
  const std::vector<FdeSpec> fdes = {
      {0x100, 0x40, 1, false, 0, {{0, true, {8}, 2}, {4, true, {16, -16}, 4}}},
      {0x200, 0x40, 2, true, 16, {{0, true, {8}, 1}}},
  };
  const auto bytes = SectionBuilder(2, kSFrameFlagFdeSorted, kSFrameAbiAmd64Little, 0, -8).build(fdes);
  REQUIRE(SFrameTable::create(bytes, 0, "built").has_value());
  auto exercise = [](const std::vector<std::uint8_t>& input) {
    auto table = SFrameTable::create(input, 0, "mutated");
    if (!table) return false;
    for (std::uint64_t pc = 0; pc < 0x300; pc += 3) {
      auto fde = table->find_fde(pc);
      if (!fde || !*fde) continue;
      auto fre = table->find_fre(**fde, pc);
      if (fre && *fre) (void)table->row_for(**fre, SFrameRegisters{});
    }
    return true;
  };
  std::size_t refused = 0;
  for (std::size_t length = 0; length < bytes.size(); ++length)
    refused += !exercise({bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(length)});
  CHECK(refused > 0);
  // Named corruptions.
  // Each corrupted copy outlives the test: a table views its bytes.
  std::list<std::vector<std::uint8_t>> copies;
  auto corrupt = [&](std::size_t at, std::uint8_t value) {
    auto& copy = copies.emplace_back(bytes);
    copy[at] = value;
    return SFrameTable::create(copy, 0, "mutated");
  };
  auto bad_magic = corrupt(0, 0x00);
  REQUIRE_FALSE(bad_magic.has_value());
  CHECK(bad_magic.error().offset.value() == 0);
  CHECK_FALSE(corrupt(2, 3).has_value());     // version 3
  CHECK_FALSE(corrupt(4, 9).has_value());     // unknown ABI
  CHECK_FALSE(corrupt(11, 0x7f).has_value());  // num_fdes far past the end
  CHECK_FALSE(corrupt(19, 0x7f).has_value());  // fre_len past the end
  {
    // An AMD64 FRE with no RA: the header's fixed RA offset cleared.
    auto no_ra = corrupt(6, 0);
    REQUIRE(no_ra.has_value());
    auto fde = no_ra->fde(0);
    REQUIRE(fde.has_value());
    auto fre = no_ra->find_fre(*fde, fde->start);
    REQUIRE(fre.has_value());
    REQUIRE(fre->has_value());
    CHECK_FALSE(no_ra->row_for(**fre, SFrameRegisters{}).has_value());
  }
  auto table = corrupt(28 + 16, 3);            // FRE type 3
  REQUIRE(table.has_value());
  CHECK_FALSE(table->fde(0).has_value());
  auto zero_rep = corrupt(28 + 20 + 17, 0);  // PCMASK with repetition 0
  REQUIRE(zero_rep.has_value());
  CHECK_FALSE(zero_rep->fde(1).has_value());
  auto far_fre = corrupt(28 + 11, 0x7f);  // first FRE offset past the sub-section
  REQUIRE(far_fre.has_value());
  CHECK_FALSE(far_fre->fde(0).has_value());
  // Random flips.
  std::mt19937 random(11);
  for (int round = 0; round < 2000; ++round) {
    auto copy = bytes;
    for (int flips = 0; flips < 3; ++flips) copy[random() % copy.size()] ^= static_cast<std::uint8_t>(1u << (random() % 8));
    exercise(copy);
  }
}
