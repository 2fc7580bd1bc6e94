// Role: unit tests of the ELF parser, on real Debian binaries and on malformed
// copies of them (truncated at every length of the headers, bit-flipped).
// Invariant: the parser returns a value or an Error for every input; never crashes.
#include <doctest/doctest.h>

#include <cstring>
#include <fstream>
#include <random>
#include <vector>

#include "recorder/elf/elf_file.h"

using tracecorn::ErrorCode;
using tracecorn::elf::ElfFile;

namespace {

std::vector<std::uint8_t> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

const std::string kStaticSample = std::string(TRACECORN_SAMPLES_DIR) + "/static/hello";
const std::string kDynamicSample = std::string(TRACECORN_SAMPLES_DIR) + "/dynamic/hello";

}  // namespace

TEST_CASE("ElfFile: parses a static and a dynamic x86-64 executable") {
  auto static_elf = ElfFile::load(kStaticSample);
  REQUIRE(static_elf.has_value());
  CHECK(static_elf->is_64bit());
  CHECK(static_elf->little_endian());
  CHECK(static_elf->machine() == 62);
  CHECK(static_elf->type() == tracecorn::elf::kEtExec);
  CHECK_FALSE(static_elf->interpreter().has_value());
  CHECK(static_elf->load_start(4096) == 0x400000);

  auto dynamic_elf = ElfFile::load(kDynamicSample);
  REQUIRE(dynamic_elf.has_value());
  CHECK(dynamic_elf->type() == tracecorn::elf::kEtDyn);
  REQUIRE(dynamic_elf->interpreter().has_value());
  CHECK(*dynamic_elf->interpreter() == "/lib64/ld-linux-x86-64.so.2");
  bool has_text = false;
  for (const auto& section : dynamic_elf->section_headers()) has_text |= section.name == ".text";
  CHECK(has_text);
}

TEST_CASE("ElfFile: a missing file and a non-ELF file are named in the error") {
  auto missing = ElfFile::load("/nonexistent/tracecorn-file");
  REQUIRE_FALSE(missing.has_value());
  CHECK(missing.error().code == ErrorCode::kNotFound);
  CHECK(missing.error().to_string().find("/nonexistent/tracecorn-file") != std::string::npos);

  const std::vector<std::uint8_t> text = {'#', '!', '/', 'b', 'i', 'n', '/', 's', 'h', '\n', 0, 0, 0, 0, 0, 0};
  auto script = ElfFile::parse(text, "script.sh");
  REQUIRE_FALSE(script.has_value());
  CHECK(script.error().code == ErrorCode::kBadFormat);
  CHECK(script.error().to_string() == "script.sh: at offset 0x0: not an ELF file (bad magic)");
}

TEST_CASE("Malicious: every truncation of the headers is an error, never a crash") {
  const auto bytes = read_file(kDynamicSample);
  REQUIRE(bytes.size() > 4096);
  // The program headers and PT_INTERP lie in the first pages; every cut there must fail cleanly.
  for (std::size_t length = 0; length < 1024; ++length) {
    auto parsed = ElfFile::parse(std::span(bytes.data(), length), "cut");
    CHECK_FALSE(parsed.has_value());
  }
}

TEST_CASE("Malicious: a segment beyond the end of the file is reported with its offset") {
  auto bytes = read_file(kStaticSample);
  auto parsed = ElfFile::parse(bytes, "x");
  REQUIRE(parsed.has_value());
  // Make the first program header's file size huge.
  const std::uint64_t phoff = parsed->phdr_offset();
  const std::uint64_t huge = 1ull << 40;
  std::memcpy(bytes.data() + phoff + 32, &huge, sizeof huge);
  std::memcpy(bytes.data() + phoff + 40, &huge, sizeof huge);
  std::uint32_t load = tracecorn::elf::kPtLoad;
  std::memcpy(bytes.data() + phoff, &load, sizeof load);
  auto broken = ElfFile::parse(bytes, "x");
  REQUIRE_FALSE(broken.has_value());
  CHECK(broken.error().code == ErrorCode::kTruncated);
  REQUIRE(broken.error().offset.has_value());
  CHECK(*broken.error().offset == phoff);
}

TEST_CASE("Malicious: PT_INTERP without a terminating NUL is refused") {
  auto bytes = read_file(kDynamicSample);
  auto parsed = ElfFile::parse(bytes, "x");
  REQUIRE(parsed.has_value());
  for (const auto& ph : parsed->program_headers())
    if (ph.type == tracecorn::elf::kPtInterp) std::memset(bytes.data() + ph.offset, 'A', ph.filesz);
  auto broken = ElfFile::parse(bytes, "x");
  REQUIRE_FALSE(broken.has_value());
  CHECK(broken.error().message.find("PT_INTERP") != std::string::npos);
}

TEST_CASE("Malicious: random bit flips in the first 4 KiB never crash the parser") {
  const auto original = read_file(kDynamicSample);
  std::mt19937_64 random(12345);
  int parsed_ok = 0, refused = 0;
  for (int round = 0; round < 3000; ++round) {
    auto bytes = original;
    const int flips = 1 + static_cast<int>(random() % 8);
    for (int i = 0; i < flips; ++i) {
      const std::size_t at = random() % 4096;
      bytes[at] ^= static_cast<std::uint8_t>(1u << (random() % 8));
    }
    auto result = ElfFile::parse(bytes, "flipped");
    if (result.has_value()) {
      ++parsed_ok;
      // Whatever was accepted must describe ranges inside the file.
      for (const auto& ph : result->program_headers())
        if (ph.type == tracecorn::elf::kPtLoad) CHECK(ph.offset + ph.filesz <= bytes.size());
    } else {
      ++refused;
      CHECK_FALSE(result.error().message.empty());
    }
  }
  CHECK(parsed_ok > 0);
  CHECK(refused > 0);
}
