// Role: unit tests of GuestMemory on a real Unicorn engine: mapping, splitting,
// protection, the top-down allocator, checked reads of strings.
#include <doctest/doctest.h>

#include <unicorn/unicorn.h>

#include "recorder/linux/guest_memory.h"

using namespace tracecorn::linux_layer;

namespace {

struct Engine {
  uc_engine* uc = nullptr;
  Engine() { REQUIRE(uc_open(UC_ARCH_X86, UC_MODE_64, &uc) == UC_ERR_OK); }
  ~Engine() { uc_close(uc); }
};

std::size_t unicorn_region_count(uc_engine* uc) {
  uc_mem_region* regions = nullptr;
  std::uint32_t count = 0;
  REQUIRE(uc_mem_regions(uc, &regions, &count) == UC_ERR_OK);
  uc_free(regions);
  return count;
}

const tracecorn::arch::AddressSpaceLayout kLayout{0x7ffffffff000, 8 << 20, 0x7ffff7fff000, 0x555555554000, 0x10000};

}  // namespace

TEST_CASE("GuestMemory: munmap and mprotect of a middle part split the mapping, in Unicorn too") {
  Engine engine;
  GuestMemory memory(engine.uc, kLayout);
  REQUIRE(memory.map(0x100000, 0x10000, kProtRead | kProtWrite, "a"));
  REQUIRE(memory.protect(0x104000, 0x2000, kProtRead));
  CHECK(memory.vmas().size() == 3);
  CHECK(memory.find(0x104000)->prot == kProtRead);
  CHECK(memory.find(0x106000)->prot == (kProtRead | kProtWrite));
  REQUIRE(memory.unmap(0x102000, 0x1000));
  CHECK(memory.vmas().size() == 4);
  CHECK_FALSE(memory.is_mapped(0x100000, 0x10000));
  CHECK(memory.is_mapped(0x100000, 0x2000));
  CHECK(unicorn_region_count(engine.uc) == memory.vmas().size());
  // Unmapping over a hole is fine (munmap semantics); protecting one is not.
  CHECK_FALSE(memory.protect(0x100000, 0x4000, kProtRead));
  REQUIRE(memory.unmap(0x0, 0x200000));
  CHECK(memory.vmas().empty());
  CHECK(unicorn_region_count(engine.uc) == 0);
}

TEST_CASE("GuestMemory: map replaces what was there and reads back zeroes") {
  Engine engine;
  GuestMemory memory(engine.uc, kLayout);
  REQUIRE(memory.map(0x200000, 0x3000, kProtRead | kProtWrite, "first"));
  const std::uint8_t data[4] = {1, 2, 3, 4};
  REQUIRE(memory.write(0x201000, data));
  REQUIRE(memory.map(0x201000, 0x1000, kProtRead, "second"));
  std::uint8_t back[4] = {9, 9, 9, 9};
  REQUIRE(memory.read(0x201000, back));
  CHECK(back[0] == 0);
  CHECK(memory.find(0x201000)->name == "second");
  CHECK(memory.vmas().size() == 3);
}

TEST_CASE("GuestMemory: find_free allocates top-down and skips mappings") {
  Engine engine;
  GuestMemory memory(engine.uc, kLayout);
  auto first = memory.find_free(0x5000);
  REQUIRE(first);
  CHECK(*first == kLayout.mmap_top - 0x5000);
  REQUIRE(memory.map(*first, 0x5000, kProtRead, ""));
  auto second = memory.find_free(0x1000);
  REQUIRE(second);
  CHECK(*second == *first - 0x1000);
  CHECK_FALSE(memory.find_free(1ull << 50));
}

TEST_CASE("GuestMemory: strings are read across pages and refused at unmapped memory") {
  Engine engine;
  GuestMemory memory(engine.uc, kLayout);
  REQUIRE(memory.map(0x300000, 0x2000, kProtRead | kProtWrite, ""));
  const std::string text = "crosses a page boundary";
  REQUIRE(memory.write(0x300ff0, std::span(reinterpret_cast<const std::uint8_t*>(text.c_str()), text.size() + 1)));
  CHECK(memory.read_string(0x300ff0) == text);
  // A string that runs into unmapped memory without a NUL is refused.
  std::vector<std::uint8_t> filler(0x10, 'x');
  REQUIRE(memory.write(0x301ff0, filler));
  CHECK_FALSE(memory.read_string(0x301ff0).has_value());
  CHECK_FALSE(memory.read_string(0x500000).has_value());
  CHECK_FALSE(memory.read_string(0x300ff0, 5).has_value());
}

TEST_CASE("GuestMemory: the --max-memory cap counts what a mapping replaces and what is released") {
  Engine engine;
  GuestMemory memory(engine.uc, kLayout);
  memory.set_limit(0x10000);
  CHECK(memory.fits(0x100000, 0x10000));
  CHECK_FALSE(memory.fits(0x100000, 0x11000));
  REQUIRE(memory.map(0x100000, 0x8000, kProtRead, "a"));
  CHECK(memory.mapped_bytes_in(0x0ff000, 0x3000) == 0x2000);
  CHECK(memory.mapped_bytes_in(0x104000, 0x100000) == 0x4000);
  CHECK(memory.fits(0x200000, 0x8000));
  CHECK_FALSE(memory.fits(0x200000, 0x9000));
  CHECK(memory.fits(0x104000, 0xc000));               // 0x4000 of it replaces mapped pages
  CHECK(memory.fits(0x200000, 0x9000, 0x1000));       // mremap: the old pages go
  CHECK_FALSE(memory.fits(0x200000, ~0ull & ~0xfffull));  // no wrap-around
  memory.set_limit(0);
  CHECK(memory.fits(0x200000, 1ull << 40));
}
