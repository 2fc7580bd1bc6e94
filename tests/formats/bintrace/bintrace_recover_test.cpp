// Role: "Malicious:" cases for binary trace recovery (formats/bintrace/
// bintrace_recover.h): events spools that are damaged, cut at every byte, or
// random, scanned against a small hand-made machine description; and recovery
// heads that are missing or are not heads. Every case must end in a scan that
// keeps only whole events and names where and why it stopped, or an Error;
// never a crash. (Recovery of real killed recordings, compared with the whole
// trace: "Bintrace recovery" in bintrace_roundtrip_test.cpp.) Test thread only.
#include <doctest/doctest.h>

#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "formats/bintrace/bintrace_encode.h"
#include "formats/bintrace/bintrace_layout.h"
#include "formats/bintrace/bintrace_recover.h"
#include "tests/support/error_text.h"

using namespace tracecorn;
namespace bt = formats::bintrace;

namespace {

using Bytes = std::vector<std::uint8_t>;

// PHY_SIZE 8; registers rip (id 0, 8 bytes), al (1, 1 byte), a 2-byte id 0x1234
// (8 bytes); operation 3 (rip += 1).
bt::MachineDescription machine() {
  bt::MachineDescription m;
  m.physical_address_size = 8;
  m.registers = {{0, 8, "rip"}, {1, 1, "al"}, {0x1234, 8, "far"}};
  m.operations = {{3, 0, bt::kAdd, Bytes(8, 0)}};
  m.operations[0].value[0] = 1;
  m.index();
  return m;
}

void le(Bytes& out, std::uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<std::uint8_t>(value >> (8 * i)));
}

// Three events: rip set; a 4-byte write at 0x7000 and rip += 1; "map 10000 2000 prot 3" zeroing 2 bytes.
Bytes good_spool(std::vector<std::uint64_t>* ends = nullptr) {
  Bytes s;
  s.push_back(0x10);
  s.push_back(0);
  le(s, 0x401000, 8);
  if (ends) ends->push_back(s.size());
  s.push_back(0x11);
  le(s, 0x7000, 8);
  s.push_back(4);
  s.insert(s.end(), {1, 2, 3, 4});
  s.push_back(3);
  if (ends) ends->push_back(s.size());
  const std::string map = "map 10000 2000 prot 3";
  s.insert(s.end(), {0xff, 0xff, static_cast<std::uint8_t>(map.size())});
  s.insert(s.end(), map.begin(), map.end());
  s.push_back(0x01);
  le(s, 0x10000, 8);
  s.push_back(2);
  s.insert(s.end(), {0, 0});
  if (ends) ends->push_back(s.size());
  return s;
}

formats::SpoolScan scan(const Bytes& bytes) {
  auto source = formats::make_memory_source(bytes);
  auto result = formats::scan_spool(machine(), *source);
  REQUIRE_MESSAGE(result.has_value(), tracecorn::test_support::error_text(result));
  return *result;
}

}  // namespace

TEST_CASE("Bintrace recovery: a whole spool is kept whole, with the ranges its events map and write") {
  const auto result = scan(good_spool());
  CHECK(result.events == 3);
  CHECK(result.complete_bytes == good_spool().size());
  CHECK(result.cut.empty());
  const auto regions = bt::merge_regions(result.touched);
  REQUIRE(regions.size() == 2);
  CHECK(regions[0] == bt::MemoryRegion{0x7000, 0x1000});   // the written page
  CHECK(regions[1] == bt::MemoryRegion{0x10000, 0x2000});  // the mapped range
}

TEST_CASE("Malicious: a spool cut at every byte keeps exactly the whole events before the cut") {
  std::vector<std::uint64_t> ends;
  const Bytes whole = good_spool(&ends);
  for (std::size_t length = 0; length <= whole.size(); ++length) {
    CAPTURE(length);
    const auto result = scan(Bytes(whole.begin(), whole.begin() + static_cast<std::ptrdiff_t>(length)));
    std::uint64_t expected_events = 0, expected_end = 0;
    for (const auto end : ends)
      if (end <= length) ++expected_events, expected_end = end;
    CHECK(result.events == expected_events);
    CHECK(result.complete_bytes == expected_end);
    CHECK(result.bytes == length);
    CHECK(result.cut.empty() == (expected_end == length));
    if (!result.cut.empty()) CHECK(result.cut == "the spool ends inside an event");
    // The map's range counts only once its event is whole.
    bool mapped = false;
    for (const auto& range : result.touched) mapped |= range.start == 0x10000;
    CHECK(mapped == (expected_events == 3));
  }
}

TEST_CASE("Malicious: damaged spools stop at the damage, naming its offset, and keep the events before") {
  const Bytes good = good_spool();
  struct Case {
    const char* name;
    Bytes tail;
    std::string expected;
  };
  Bytes huge_entry = {0x01};
  le(huge_entry, 0x1000, 8);
  huge_entry.push_back(0xff);
  le(huge_entry, (1ull << 30) + 1, 8);
  Bytes wrapping = {0x01};
  le(wrapping, ~0ull - 2, 8);
  wrapping.push_back(8);
  wrapping.insert(wrapping.end(), 8, 0);
  const std::string big_map = "map 10000 20000000000 prot 3";
  Bytes map = {0xff, 0xff, static_cast<std::uint8_t>(big_map.size())};
  map.insert(map.end(), big_map.begin(), big_map.end());
  map.push_back(0);
  // 14 register entries and a continuation (0xf0), whose counts are both 0xf.
  Bytes continued = {0xf0};
  for (int i = 0; i < 14; ++i) continued.insert(continued.end(), 9, 0);  // rip = 0
  continued.push_back(0xff);
  const Case cases[] = {
      {"a diff with both counts 0xf", {0xff, 0xff, 0, 0xff}, "a diff with both counts 0xf"},
      {"a continuation diff with both counts 0xf", continued, "a diff with both counts 0xf"},
      {"an undeclared register id", {0x10, 7}, "register id 7 is not declared"},
      {"an undeclared 2-byte register id", {0x10, 0xff, 0x99, 0x99}, "register id 39321 is not declared"},
      {"an unknown event type", {0xff, 0x01}, "event type 1 (expected 0xff, other)"},
      {"a memory entry above 1 GiB", huge_entry, "a memory entry of 1073741825 bytes"},
      {"a memory entry that wraps", wrapping, "a memory entry that wraps the address space"},
      {"a map of 2^41 bytes", map, "the limit is 2^40 bytes"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.name);
    Bytes bytes = good;
    bytes.insert(bytes.end(), c.tail.begin(), c.tail.end());
    bytes.insert(bytes.end(), {0x10, 0, 1, 2, 3, 4, 5, 6, 7, 8});  // a good event after the damage: not kept
    const auto result = scan(bytes);
    CHECK(result.events == 3);
    CHECK(result.complete_bytes == good.size());
    CHECK(result.bytes == bytes.size());
    CHECK_MESSAGE(result.cut.find(c.expected) != std::string::npos, result.cut);
    CHECK_MESSAGE(result.cut.rfind("at offset ", 0) == 0, result.cut);
  }
  // The offset named is the damaged event's (or its diff's) own.
  Bytes bytes = good;
  bytes.insert(bytes.end(), {0x10, 7});
  CHECK(scan(bytes).cut == "at offset " + std::to_string(good.size() + 1) + ": register id 7 is not declared");
}

TEST_CASE("Malicious: random spools and random zstd streams are scanned without a crash") {
  std::mt19937 random(20261122);
  std::uniform_int_distribution<int> byte(0, 255);
  for (int round = 0; round < 300; ++round) {
    Bytes bytes(static_cast<std::size_t>(round * 3));
    for (auto& b : bytes) b = static_cast<std::uint8_t>(byte(random));
    if (round % 2) bytes.insert(bytes.begin(), std::begin(formats::kZstdMagic), std::end(formats::kZstdMagic));
    auto source = formats::make_memory_source(bytes);
    if (round % 2) source = formats::make_zstd_source(std::move(source));
    auto result = formats::scan_spool(machine(), *source);
    REQUIRE(result.has_value());
    CHECK(result->complete_bytes <= result->bytes);
  }
}

TEST_CASE("Malicious: recovery without a head, or from a head that holds events, is refused") {
  const std::string dir = (std::filesystem::temp_directory_path() / ("tracecorn-recover-bad-" + std::to_string(::getpid()))).string();
  std::filesystem::create_directories(dir);
  {
    std::ofstream(dir + "/t.events.part", std::ios::binary).write("\x10\x00", 2);
  }
  auto missing = formats::recover_bintrace(dir + "/t.head.part", dir + "/t.events.part", dir + "/t");
  REQUIRE_FALSE(missing.has_value());
  CHECK(missing.error().code == ErrorCode::kNotFound);
  CHECK(missing.error().message.find("nothing to recover") != std::string::npos);
  {
    std::ofstream(dir + "/t.head.part", std::ios::binary).write("not a trace", 11);
  }
  auto bad = formats::recover_bintrace(dir + "/t.head.part", dir + "/t.events.part", dir + "/t");
  CHECK_FALSE(bad.has_value());
  CHECK_FALSE(std::filesystem::exists(dir + "/t"));
  CHECK_FALSE(std::filesystem::exists(dir + "/t.part"));
  std::filesystem::remove_all(dir);
}
