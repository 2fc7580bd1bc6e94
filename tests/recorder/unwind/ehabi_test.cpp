// Role: tests of the EHABI reader (recorder/unwind/ehabi.h): every entry of
// the .ARM.exidx of the cross-built arm samples (static Thumb-2 and -marm;
// glibc's unwind tables are EHABI only) against `arm-linux-gnueabihf-readelf
// -u`: the function addresses, EXIDX_CANTUNWIND, the compact model index or
// the personality routine, each instruction's bytes and text, and the row
// (CFA and saved registers) derived from readelf's decoded text independently
// of the reader; lookups at both ends of each entry; and malformed tables
// built byte by byte from the layout in IHI 0038 (Malicious cases).
// Who runs it: unit_tests, on the doctest thread.
// Invariants: readelf is the reference; without the arm binutils the cases
// fail saying what to install.
#include <doctest/doctest.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <sstream>

#include "recorder/unwind/ehabi.h"
#include "recorder/unwind/module_unwind_info.h"
#include "tests/recorder/unwind/unwind_test_support.h"
#include "tests/support/error_text.h"

using namespace tracecorn::unwind;
using tracecorn::ErrorCode;

namespace {

const std::string kReadelf = "arm-linux-gnueabihf-readelf";

struct ReadelfOp {
  std::vector<std::uint8_t> bytes;
  std::string text;
};

struct ReadelfEntry {
  std::uint64_t function = 0;
  bool cant_unwind = false;
  std::optional<unsigned> compact_index;
  std::optional<std::uint64_t> personality;
  std::vector<ReadelfOp> ops;
};

std::string collapse_spaces(const std::string& text) {
  std::string out;
  for (const auto& word : test::split_words(text)) out += (out.empty() ? "" : " ") + word;
  return out;
}

// `readelf -u`'s entries:
//   0x10574 <call_fini>: 0x80b108a9          (or "@0x65474", or "0x1 [cantunwind]")
//     Compact model index: 0                  (or "Personality routine: 0x4e521 <...>")
//     0xb1 0x08 pop {r3}
std::vector<ReadelfEntry> readelf_unwind(const std::string& path) {
  std::vector<ReadelfEntry> entries;
  std::istringstream in(test::run_tool(kReadelf + " -u '" + path + "'"));
  std::string line;
  while (std::getline(in, line)) {
    const auto words = test::split_words(line);
    if (words.empty()) continue;
    if (line.rfind("0x", 0) == 0 && words.size() >= 3) {
      ReadelfEntry entry;
      entry.function = std::stoull(words[0], nullptr, 16);
      entry.cant_unwind = words.back() == "[cantunwind]";
      entries.push_back(entry);
    } else if (entries.empty()) {
      continue;
    } else if (words.size() == 4 && words[0] == "Compact" && words[1] == "model") {
      entries.back().compact_index = static_cast<unsigned>(std::stoul(words[3]));
    } else if (words.size() >= 3 && words[0] == "Personality" && words[1] == "routine:") {
      entries.back().personality = std::stoull(words[2], nullptr, 16);
    } else if (line.rfind("  0x", 0) == 0) {
      ReadelfOp op;
      std::size_t k = 0;
      for (; k < words.size() && words[k].size() == 4 && words[k].rfind("0x", 0) == 0; ++k)
        op.bytes.push_back(static_cast<std::uint8_t>(std::stoul(words[k], nullptr, 16)));
      for (; k < words.size(); ++k) op.text += (op.text.empty() ? "" : " ") + words[k];
      entries.back().ops.push_back(op);
    }
  }
  return entries;
}

// The row readelf's decoded instructions describe, derived from its text
// alone: CFA offset from the base register, and each core register's slot.
struct TextRow {
  unsigned base = 13;
  std::int64_t vsp = 0;
  std::map<unsigned, std::int64_t> slots;  // register -> offset from the base
  bool refuse = false;
};
TextRow row_from_readelf(const std::vector<ReadelfOp>& ops) {
  TextRow row;
  for (const auto& op : ops) {
    const auto words = test::split_words(op.text);
    if (op.text == "finish") break;
    if (words.size() == 5 && words[0] == "vsp" && words[2] == "vsp") {
      row.vsp += (words[3] == "+" ? 1 : -1) * std::stoll(words[4]);
    } else if (words.size() == 3 && words[0] == "vsp" && words[2][0] == 'r') {
      row.base = static_cast<unsigned>(std::stoul(words[2].substr(1)));
      row.vsp = 0;
    } else if (!words.empty() && words[0] == "pop" && op.text.find("{r") != std::string::npos) {
      for (std::size_t k = 1; k < words.size(); ++k) {
        std::string reg = words[k];
        reg.erase(std::remove_if(reg.begin(), reg.end(), [](char c) { return c == '{' || c == '}' || c == ','; }),
                  reg.end());
        row.slots[static_cast<unsigned>(std::stoul(reg.substr(1)))] = row.vsp;
        row.vsp += 4;
      }
    } else if (!words.empty() && words[0] == "pop" && op.text.find("{D") != std::string::npos) {
      // "pop {D8}" or "pop {D8-D15}"; FSTMFDX forms (0xb3, 0xb8-0xbf) store one more word.
      const auto dash = op.text.find('-');
      const unsigned first = static_cast<unsigned>(std::stoul(op.text.substr(op.text.find('D') + 1)));
      const unsigned last =
          dash == std::string::npos ? first : static_cast<unsigned>(std::stoul(op.text.substr(dash + 2)));
      const std::uint8_t lead = op.bytes.at(0);
      row.vsp += 8 * (last - first + 1) + ((lead == 0xb3 || (lead >= 0xb8 && lead <= 0xbf)) ? 4 : 0);
    } else if (!words.empty() && words[0] == "pop" && op.text.find("{wR") != std::string::npos) {
      const auto dash = op.text.find('-');
      const unsigned first = static_cast<unsigned>(std::stoul(op.text.substr(op.text.find("wR") + 2)));
      const unsigned last =
          dash == std::string::npos ? first : static_cast<unsigned>(std::stoul(op.text.substr(dash + 3)));
      row.vsp += 8 * (last - first + 1);
    } else if (!words.empty() && words[0] == "pop" && op.text.find("{wCGR") != std::string::npos) {
      row.vsp += 4 * static_cast<std::int64_t>(words.size() - 1);
    } else if (op.text == "Refuse to unwind") {
      row.refuse = true;
      break;
    } else {
      FAIL("readelf printed an instruction this test does not model: " << op.text);
    }
  }
  return row;
}

struct Counts {
  std::size_t cant_unwind = 0, compact = 0, generic = 0, instructions = 0, rows = 0;
};

Counts check_against_readelf(const std::string& path) {
  INFO(path);
  REQUIRE_MESSAGE(!test::run_tool("command -v " + kReadelf).empty(),
                  kReadelf << " is missing (apt-get install binutils-arm-linux-gnueabihf)");
  auto info = ModuleUnwindInfo::load(path);
  REQUIRE(info.has_value());
  const EhabiTable* table = (*info)->arm_exidx();
  REQUIRE(table != nullptr);
  CHECK((*info)->problems().empty());
  const auto expected = readelf_unwind(path);
  REQUIRE(expected.size() > 5);
  REQUIRE(table->entry_count() == expected.size());
  Counts counts;
  auto& [cant_unwind, compact, generic, instructions, rows] = counts;
  for (std::uint32_t i = 0; i < table->entry_count(); ++i) {
    CAPTURE(i);
    const ReadelfEntry& want = expected[i];
    CAPTURE(want.function);
    auto entry = table->entry(i);
    REQUIRE(entry.has_value());
    CHECK(entry->function == want.function);
    if (i + 1 < expected.size()) CHECK(entry->end == expected[i + 1].function);
    // Lookups at the first and the last byte of the entry's range.
    for (std::uint64_t pc : {entry->function, (i + 1 < expected.size() ? expected[i + 1].function : entry->function + 2) - 1}) {
      auto found = table->find_entry(pc);
      REQUIRE(found.has_value());
      REQUIRE(found->has_value());
      CHECK((*found)->index == i);
    }
    CHECK((entry->kind == EhabiEntryKind::kCantUnwind) == want.cant_unwind);
    auto code = table->code(*entry);
    REQUIRE_MESSAGE(code.has_value(), tracecorn::test_support::error_text(code));
    auto row = table->row_for(*entry, *code);
    REQUIRE_MESSAGE(row.has_value(), tracecorn::test_support::error_text(row));
    if (want.cant_unwind) {
      ++cant_unwind;
      CHECK(code->cant_unwind);
      REQUIRE(row->rule_count == 1);
      CHECK(row->rules[0].kind == RuleKind::kUndefined);
      continue;
    }
    CHECK(code->compact == want.compact_index.has_value());
    CHECK(code->compact != want.personality.has_value());
    if (want.compact_index) {
      ++compact;
      CHECK(code->personality_index == *want.compact_index);
    } else if (want.personality) {
      ++generic;
      CHECK(code->personality == *want.personality);
      // readelf decodes the data of GCC's personality routines only.
      if (want.ops.empty()) continue;
    }
    // Instructions: ours stop at the first "finish"; readelf prints every byte.
    std::vector<EhabiInstruction> ours;
    REQUIRE(table->for_each_instruction(*code, [&](const EhabiInstruction& op) { ours.push_back(op); }));
    REQUIRE(ours.size() <= want.ops.size());
    for (std::size_t k = 0; k < ours.size(); ++k) {
      CAPTURE(k);
      CHECK(ours[k].text == collapse_spaces(want.ops[k].text));
      REQUIRE(ours[k].length == want.ops[k].bytes.size());
      for (std::size_t b = 0; b < ours[k].length; ++b) CHECK(code->ops[ours[k].offset + b] == want.ops[k].bytes[b]);
      ++instructions;
    }
    // A shorter list only when ours ended at a finish.
    if (ours.size() < want.ops.size()) CHECK(ours.back().text == "finish");
    // The row against readelf's text.
    const TextRow text = row_from_readelf(want.ops);
    ++rows;
    if (text.refuse) {
      REQUIRE(row->rule_count == 1);
      CHECK(row->rules[0].kind == RuleKind::kUndefined);
      continue;
    }
    CHECK(row->cfa.reg == text.base);
    CHECK(row->cfa.offset == text.vsp);
    CHECK(row->rule_count == text.slots.size());
    for (const auto& saved : text.slots) {  // (no structured bindings: clang 14 cannot capture them)
      const unsigned reg = saved.first;
      const std::int64_t slot = saved.second;
      CAPTURE(reg);
      const RegisterRule rule = row->rule_for(reg);
      CHECK(rule.kind == RuleKind::kOffset);
      CHECK(rule.offset == slot - text.vsp);
    }
    CHECK(row->return_column == (text.slots.count(15) ? 15 : 14));
  }
  MESSAGE(path << ": " << expected.size() << " entries equal readelf -u (" << cant_unwind << " cantunwind, " << compact
               << " compact, " << generic << " generic), " << instructions << " instructions, " << rows << " rows");
  return counts;
}

}  // namespace

TEST_CASE("EHABI: every .ARM.exidx entry of the static Thumb-2 arm sample equals readelf -u") {
  const Counts counts = check_against_readelf(std::string(TRACECORN_SAMPLES_DIR) + "-arm/static/nested_calls");
  CHECK(counts.compact > 50);
  CHECK(counts.generic > 0);
  CHECK(counts.cant_unwind > 10);
}

TEST_CASE("EHABI: every .ARM.exidx entry of the static -marm arm sample equals readelf -u") {
  const Counts counts = check_against_readelf(std::string(TRACECORN_SAMPLES_DIR) + "-arm/static-marm/nested_calls");
  CHECK(counts.compact > 50);
}

TEST_CASE("EHABI: every instruction form gas emits (ehabi_ops.s, linked -nostdlib) equals readelf -u") {
  const auto directory = std::filesystem::temp_directory_path() / ("tracecorn-ehabi-" + std::to_string(::getpid()));
  std::filesystem::create_directories(directory);
  const std::string program = (directory / "ops").string();
  const std::string output = test::run_tool("arm-linux-gnueabihf-gcc -nostdlib -static -Wl,-e,_start -o '" + program +
                                            "' '" + TRACECORN_UNWIND_TEST_DIR + "/ehabi_ops.s' 2>&1");
  INFO(output);
  REQUIRE(std::filesystem::exists(program));
  const Counts counts = check_against_readelf(program);
  std::filesystem::remove_all(directory);
  CHECK(counts.cant_unwind == 2);
  CHECK(counts.compact == 6);
  CHECK(counts.generic == 1);
  CHECK(counts.instructions >= 25);
}

namespace {

// Tables built word by word (IHI 0038 section 6): .ARM.exidx at kExidx,
// .ARM.extab at kExtab.
constexpr std::uint64_t kExidx = 0x20000, kExtab = 0x30000;

struct Words {
  std::vector<std::uint8_t> bytes;
  bool little_endian = true;
  void add(std::uint32_t word) {
    for (int i = 0; i < 4; ++i)
      bytes.push_back(static_cast<std::uint8_t>(word >> (8 * (little_endian ? i : 3 - i))));
  }
};

std::uint32_t prel31(std::uint64_t target, std::uint64_t place) {
  return static_cast<std::uint32_t>(target - place) & 0x7fffffff;
}

// An index of one function at 0x10000 whose second word is `word`.
Words one_entry(std::uint32_t word) {
  Words exidx;
  exidx.add(prel31(0x10000, kExidx));
  exidx.add(word);
  return exidx;
}

// The table views the bytes: both Words must outlive it (temporaries are refused).
EhabiTable table_of(Words&&, const Words&) = delete;
EhabiTable table_of(const Words&, Words&&) = delete;
EhabiTable table_of(const Words& exidx, const Words& extab) {
  auto table = EhabiTable::create(exidx.bytes, kExidx, extab.bytes, kExtab, exidx.little_endian, "test");
  REQUIRE(table.has_value());
  return std::move(*table);
}

// The error of the first failing step (entry, code, instructions, row) of entry 0.
tracecorn::Error first_error(const EhabiTable& table) {
  auto entry = table.entry(0);
  if (!entry) return entry.error();
  auto code = table.code(*entry);
  if (!code) return code.error();
  if (auto status = table.for_each_instruction(*code, [](const EhabiInstruction&) {}); !status) return status.error();
  auto row = table.row_for(*entry, *code);
  if (!row) return row.error();
  FAIL("no error");
  return {};
}

}  // namespace

TEST_CASE("EHABI: a big-endian index and table entry give the same row as little-endian ones") {
  for (const bool little : {true, false}) {
    CAPTURE(little);
    Words exidx, extab;
    exidx.little_endian = extab.little_endian = little;
    exidx.add(prel31(0x10000, kExidx));
    exidx.add(prel31(kExtab, kExidx + 4));
    extab.add(0x81019702);  // pr1, one more word; ops 0x97 (vsp = r7), 0x02 (vsp = vsp + 12)
    extab.add(0xa9b0b0b0);  // pop {r4, r5, r14}; finish
    const EhabiTable table = table_of(exidx, extab);
    auto entry = table.entry(0);
    REQUIRE(entry.has_value());
    CHECK(entry->function == 0x10000);
    CHECK(entry->kind == EhabiEntryKind::kExtab);
    auto code = table.code(*entry);
    REQUIRE(code.has_value());
    CHECK(code->personality_index == 1);
    std::vector<std::string> texts;
    REQUIRE(table.for_each_instruction(*code, [&](const EhabiInstruction& op) { texts.push_back(op.text); }));
    CHECK(texts == std::vector<std::string>{"vsp = r7", "vsp = vsp + 12", "pop {r4, r5, r14}", "finish"});
    auto row = table.row_for(*entry, *code);
    REQUIRE(row.has_value());
    CHECK(row->cfa.reg == 7);
    CHECK(row->cfa.offset == 24);
    CHECK(row->rule_for(4).offset == -12);
    CHECK(row->rule_for(14).offset == -4);
  }
}

TEST_CASE("Malicious: an .ARM.exidx whose size is not a multiple of 8 is refused with the offset of the cut entry") {
  std::vector<std::uint8_t> bytes(20, 0);
  auto table = EhabiTable::create(bytes, kExidx, {}, 0, true, "test");
  REQUIRE_FALSE(table.has_value());
  CHECK(table.error().code == ErrorCode::kTruncated);
  CHECK(table.error().offset == 16);
}

TEST_CASE("Malicious: a function word with bit 31 set is an error, in entry() and in find_entry()") {
  Words exidx;
  exidx.add(0x80000000);
  exidx.add(kExidxCantUnwind);
  const Words none;
  const EhabiTable table = table_of(exidx, none);
  CHECK_FALSE(table.entry(0).has_value());
  auto found = table.find_entry(0x10000);
  REQUIRE_FALSE(found.has_value());
  CHECK(found.error().offset == 0);
}

TEST_CASE("Malicious: an inline entry naming pr1 (whose extra words cannot fit the index) is an error") {
  const Words exidx = one_entry(0x81b0b0b0), none;
  const EhabiTable table = table_of(exidx, none);
  const auto error = first_error(table);
  CHECK(error.code == ErrorCode::kBadFormat);
  CHECK(error.offset == 4);
}

TEST_CASE("Malicious: an extab reference outside .ARM.extab, or to its last bytes, is an error naming the entry") {
  Words extab;
  extab.add(0x80b0b0b0);
  for (const std::uint64_t target : {kExtab - 4, kExtab + 4, kExtab + 0x1000}) {
    CAPTURE(target);
    const Words exidx = one_entry(prel31(target, kExidx + 4));
    const EhabiTable table = table_of(exidx, extab);
    const auto error = first_error(table);
    CHECK(error.offset == 4);
    CHECK(error.message.find("outside .ARM.extab") != std::string::npos);
  }
  // The reference lands on the last two bytes: the word is cut.
  Words short_extab;
  short_extab.add(0x80b0b0b0);
  short_extab.bytes.resize(6);
  const Words exidx = one_entry(prel31(kExtab + 4, kExidx + 4));
  const EhabiTable table = table_of(exidx, short_extab);
  CHECK(first_error(table).code == ErrorCode::kTruncated);
}

TEST_CASE("Malicious: personality index 3, and bits 28-30 of a compact word, are refused") {
  for (const std::uint32_t word : {0x83b0b0b0u, 0x90b0b0b0u}) {
    CAPTURE(word);
    Words extab;
    extab.add(word);
    const Words exidx = one_entry(prel31(kExtab, kExidx + 4));
    const EhabiTable table = table_of(exidx, extab);
    CHECK(first_error(table).offset == 0);
  }
}

TEST_CASE("Malicious: more words announced than the section holds (pr1, pr2, generic) is a truncation error") {
  Words pr1;
  pr1.add(0x81ff00b0);  // 255 more words
  pr1.add(0xb0b0b0b0);
  Words generic;
  generic.add(prel31(0x10000, kExtab));
  generic.add(0x40b0b0b0);  // 64 more words
  for (const Words* extab : {&pr1, &generic}) {
    const Words exidx = one_entry(prel31(kExtab, kExidx + 4));
    const EhabiTable table = table_of(exidx, *extab);
    const auto error = first_error(table);
    CHECK(error.code == ErrorCode::kTruncated);
    CHECK(error.source == "test(.ARM.extab)");
  }
}

TEST_CASE("Malicious: a two-byte instruction cut by the end, and a runaway uleb128, are errors, not reads past the ops") {
  // pr0 inline entries: ops 0x00 0x00 (vsp += 4, twice), then 0xb1, 0xb2 or 0x80,
  // each the first byte of a longer instruction.
  for (const std::uint32_t word : {0x800000b1u, 0x800000b2u, 0x80000080u}) {
    CAPTURE(word);
    const Words exidx = one_entry(word), none;
    const EhabiTable table = table_of(exidx, none);
    auto entry = table.entry(0);
    REQUIRE(entry.has_value());
    auto code = table.code(*entry);
    REQUIRE(code.has_value());
    CHECK_FALSE(table.for_each_instruction(*code, [](const EhabiInstruction&) {}));
    auto row = table.row_for(*entry, *code);
    REQUIRE_FALSE(row.has_value());
    CHECK(row.error().code == ErrorCode::kTruncated);
  }
  // 0xb2 followed by 6 continuation bytes in a pr1 entry.
  Words extab;
  extab.add(0x810100b2);
  extab.add(0xffffffff);
  const Words exidx = one_entry(prel31(kExtab, kExidx + 4));
  const EhabiTable table = table_of(exidx, extab);
  CHECK(first_error(table).code == ErrorCode::kTruncated);
}

TEST_CASE("Malicious: spare and reserved instructions, and vsp moves a register-plus-offset CFA cannot express") {
  const std::pair<std::uint32_t, ErrorCode> cases[] = {
      {0x80b4b0b0, ErrorCode::kBadFormat},    // spare 0xb4
      {0x809db0b0, ErrorCode::kBadFormat},    // reserved 0x9d
      {0x80b100b0, ErrorCode::kBadFormat},    // 0xb1 0x00 spare
      {0x80d8b0b0, ErrorCode::kBadFormat},    // spare 0xd8
      {0x80a897b0, ErrorCode::kUnsupported},  // pop {r4, r14}; vsp = r7
      {0x808f0297, ErrorCode::kUnsupported},  // pop {r5, r12-r15} (0x8f 0x02), then vsp = r7
  };
  for (const auto& one : cases) {
    const std::uint32_t word = one.first;
    const ErrorCode code = one.second;
    CAPTURE(word);
    const Words exidx = one_entry(word), none;
    const EhabiTable table = table_of(exidx, none);
    const auto error = first_error(table);
    CHECK(error.code == code);
    CHECK(error.offset == 4);
  }
  // A pop of r13 followed by a vsp move.
  Words extab;
  extab.add(0x81018200);  // pr1, one more word; ops 0x82 0x00: pop {r13}
  extab.add(0x00b0b0b0);  // vsp = vsp + 4
  const Words exidx = one_entry(prel31(kExtab, kExidx + 4));
  const EhabiTable after_sp = table_of(exidx, extab);
  CHECK(first_error(after_sp).code == ErrorCode::kUnsupported);
}

TEST_CASE("Malicious: an unsorted index never gives an entry whose range misses the pc, and an empty one gives none") {
  Words exidx;
  for (const std::uint64_t function : {0x30000, 0x10000, 0x20000}) {
    exidx.add(prel31(function, kExidx + exidx.bytes.size()));
    exidx.add(kExidxCantUnwind);
  }
  const Words none;
  const EhabiTable table = table_of(exidx, none);
  for (std::uint64_t pc = 0xf000; pc < 0x42000; pc += 0x800) {
    auto found = table.find_entry(pc);
    REQUIRE(found.has_value());
    if (*found) CHECK(((*found)->function <= pc && pc < (*found)->end));
  }
  const EhabiTable empty = table_of(none, none);
  auto nothing = empty.find_entry(0x10000);
  REQUIRE(nothing.has_value());
  CHECK_FALSE(nothing->has_value());
}
