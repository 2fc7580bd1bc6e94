// Role: unit tests of the loader and initial stack on real sample binaries, and
// of LinuxProcess::create on truncated and corrupted ELF files.
#include <doctest/doctest.h>

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <fstream>
#include <random>
#include <vector>

#include "recorder/elf/elf_file.h"
#include "recorder/linux/linux_process.h"

using namespace tracecorn::linux_layer;

namespace {

const std::string kSamples = TRACECORN_SAMPLES_DIR;

std::uint64_t read_u64(uc_engine* uc, std::uint64_t address) {
  std::uint64_t value = 0;
  REQUIRE(uc_mem_read(uc, address, &value, sizeof value) == UC_ERR_OK);
  return value;
}

std::string read_string(uc_engine* uc, std::uint64_t address) {
  std::string text;
  char c = 0;
  while (uc_mem_read(uc, address++, &c, 1) == UC_ERR_OK && c) text += c;
  return text;
}

std::vector<std::uint8_t> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::string write_temp(const std::vector<std::uint8_t>& bytes, std::size_t length) {
  char pattern[] = "/tmp/tracecorn-elf-XXXXXX";
  const int fd = mkstemp(pattern);
  REQUIRE(fd >= 0);
  REQUIRE(::write(fd, bytes.data(), length) == static_cast<ssize_t>(length));
  ::close(fd);
  return pattern;
}

}  // namespace

TEST_CASE("Loader: the initial stack holds argc, argv, envp and auxv as Linux lays them out") {
  for (const char* variant : {"static", "static-pie", "dynamic"}) {
    CAPTURE(variant);
    ProcessConfig config;
    config.program = kSamples + "/" + variant + "/hello";
    config.argv = {"hello", "first", "second"};
    config.envp = {"A=1", "B=two"};
    auto process = LinuxProcess::create(config);
    REQUIRE(process.has_value());
    uc_engine* uc = (*process)->engine();
    std::uint64_t sp = 0;
    uc_reg_read(uc, (*process)->arch().sp_reg, &sp);
    CHECK(sp % 16 == 0);
    CHECK(read_u64(uc, sp) == 3);
    CHECK(read_string(uc, read_u64(uc, sp + 8)) == "hello");
    CHECK(read_string(uc, read_u64(uc, sp + 16)) == "first");
    CHECK(read_string(uc, read_u64(uc, sp + 24)) == "second");
    CHECK(read_u64(uc, sp + 32) == 0);
    CHECK(read_string(uc, read_u64(uc, sp + 40)) == "A=1");
    CHECK(read_string(uc, read_u64(uc, sp + 48)) == "B=two");
    CHECK(read_u64(uc, sp + 56) == 0);

    auto elf = tracecorn::elf::ElfFile::load(config.program);
    REQUIRE(elf.has_value());
    std::map<std::uint64_t, std::uint64_t> auxv;
    for (std::uint64_t at = sp + 64;; at += 16) {
      const std::uint64_t tag = read_u64(uc, at);
      if (tag == 0) break;
      auxv[tag] = read_u64(uc, at + 8);
      REQUIRE(auxv.size() < 64);
    }
    CHECK(auxv[6] == 4096);   // AT_PAGESZ
    CHECK(auxv[17] == 100);   // AT_CLKTCK
    CHECK(auxv[5] == elf->program_headers().size());  // AT_PHNUM
    CHECK(auxv[4] == 56);     // AT_PHENT
    CHECK(auxv[11] == getuid());
    CHECK(read_string(uc, auxv[15]) == "x86_64");  // AT_PLATFORM
    CHECK(read_string(uc, auxv[31]) == config.program);  // AT_EXECFN
    // AT_PHDR points at the program headers as they are in the file.
    std::vector<std::uint8_t> phdrs(56 * elf->program_headers().size());
    REQUIRE(uc_mem_read(uc, auxv[3], phdrs.data(), phdrs.size()) == UC_ERR_OK);
    CHECK(std::memcmp(phdrs.data(), elf->file_bytes().data() + elf->phdr_offset(), phdrs.size()) == 0);
    // ET_EXEC at its addresses, PIE with an interpreter at 0x555555554000, static-pie top-down.
    const std::string name = variant;
    if (name == "static") CHECK(auxv[9] == elf->entry());  // AT_ENTRY
    if (name == "dynamic") CHECK(auxv[9] == elf->entry() + 0x555555554000);
    if (name == "static-pie") CHECK(auxv[9] == elf->entry() + 0x7ffff7fff000 - elf->load_end(4096));
    CHECK((auxv[7] != 0) == (std::string(variant) == "dynamic"));  // AT_BASE only with an interpreter
    std::uint8_t random[16];
    CHECK(uc_mem_read(uc, auxv[25], random, sizeof random) == UC_ERR_OK);  // AT_RANDOM
  }
}

TEST_CASE("Malicious: truncated ELF programs are refused with the file named, never run") {
  const auto bytes = read_file(kSamples + "/static/hello");
  REQUIRE(bytes.size() > 100000);
  // Every cut before the end of the last segment's file bytes must be refused
  // (after it, only section headers are lost, and the kernel would run the file too).
  auto elf = tracecorn::elf::ElfFile::parse(bytes, "hello");
  REQUIRE(elf.has_value());
  std::size_t segments_end = 0;
  for (const auto& ph : elf->program_headers())
    if (ph.type == tracecorn::elf::kPtLoad) segments_end = std::max<std::size_t>(segments_end, ph.offset + ph.filesz);
  std::vector<std::size_t> lengths;
  for (std::size_t length = 0; length < 1200; length += 13) lengths.push_back(length);
  for (std::size_t length = 4096; length < segments_end; length += segments_end / 17) lengths.push_back(length);
  lengths.push_back(segments_end - 1);
  for (const std::size_t length : lengths) {
    CAPTURE(length);
    const std::string path = write_temp(bytes, length);
    ProcessConfig config;
    config.program = path;
    auto process = LinuxProcess::create(config);
    CHECK_FALSE(process.has_value());
    if (!process.has_value()) CHECK(process.error().to_string().find(path) != std::string::npos);
    ::unlink(path.c_str());
  }
}

TEST_CASE("Malicious: bit-flipped ELF headers are refused or load, never crash") {
  const auto original = read_file(kSamples + "/static/hello");
  std::mt19937_64 random(99);
  int refused = 0;
  for (int round = 0; round < 150; ++round) {
    auto bytes = original;
    for (int i = 0; i < 4; ++i) bytes[random() % 512] ^= static_cast<std::uint8_t>(1u << (random() % 8));
    const std::string path = write_temp(bytes, bytes.size());
    ProcessConfig config;
    config.program = path;
    config.diagnostics = nullptr;
    auto process = LinuxProcess::create(config);
    if (!process.has_value()) ++refused;
    ::unlink(path.c_str());
  }
  CHECK(refused > 0);
}

TEST_CASE("LinuxProcess: an ELF for another architecture is refused with its machine named") {
  auto bytes = read_file(kSamples + "/static/hello");
  const std::uint16_t sparcv9 = 43;  // EM_SPARCV9: 64-bit little endian would never be supported
  std::memcpy(bytes.data() + 18, &sparcv9, sizeof sparcv9);
  const std::string path = write_temp(bytes, bytes.size());
  ProcessConfig config;
  config.program = path;
  auto process = LinuxProcess::create(config);
  REQUIRE_FALSE(process.has_value());
  CHECK(process.error().code == tracecorn::ErrorCode::kUnsupported);
  CHECK(process.error().to_string().find("ELF machine 43") != std::string::npos);
  CHECK(process.error().to_string().find("supported: x86_64, aarch64") != std::string::npos);
  ::unlink(path.c_str());
}

// A forked child's replay maps its parent's regions from the trace
// (LinuxProcess::adopt_memory_layout): a trace is input, and a region it
// names must not overflow, hang or map beyond an address space.
TEST_CASE("Malicious: a trace's regions past the address space are refused by adopt_memory_layout") {
  ProcessConfig config;
  config.program = kSamples + "/static/hello";
  auto process = LinuxProcess::create(config);
  REQUIRE(process.has_value());
  tracecorn::events::InitialRegion huge;
  huge.start = tracecorn::events::GuestAddress{0x10000000};
  huge.size = std::uint64_t{1} << 50;
  huge.prot = 3;
  auto refused = (*process)->adopt_memory_layout(std::span(&huge, 1));
  REQUIRE_FALSE(refused.has_value());
  CHECK(refused.error().to_string().find("0x10000000") != std::string::npos);
  tracecorn::events::InitialRegion wrapping;
  wrapping.start = tracecorn::events::GuestAddress{UINT64_MAX - 4095};
  wrapping.size = 8192;
  wrapping.prot = 3;
  CHECK_FALSE((*process)->adopt_memory_layout(std::span(&wrapping, 1)).has_value());
  // A sane one is mapped, and one already mapped is left as it is.
  tracecorn::events::InitialRegion heap;
  heap.start = tracecorn::events::GuestAddress{0x20000000};
  heap.size = 3 * 4096;
  heap.prot = 3;
  heap.name = "[heap]";
  REQUIRE((*process)->adopt_memory_layout(std::span(&heap, 1)).has_value());
  std::uint8_t byte = 7;
  CHECK(uc_mem_write((*process)->engine(), 0x20000000 + 2 * 4096, &byte, 1) == UC_ERR_OK);
  CHECK((*process)->adopt_memory_layout(std::span(&heap, 1)).has_value());
}
