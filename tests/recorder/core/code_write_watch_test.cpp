// Role: unit tests of CodeWriteWatch (recorder/core/code_write_watch.h) on a
// real Unicorn engine: a guest's stores reach the callback only on watched
// pages; neighbouring pages share one hook; unwatching a range removes the
// hooks wholly inside it; clear() removes them all; scattered code pages take
// at most kMaxRanges hooks, every one of them still watched.
// Runs in unit_tests, one engine per case, on the test thread.
#include <doctest/doctest.h>

#include <cstdint>
#include <vector>

#include <unicorn/unicorn.h>

#include "recorder/core/code_write_watch.h"

namespace {

using tracecorn::core::CodeWriteWatch;

constexpr std::uint64_t kData = 0x10000;  // 64 read-write-execute pages: 0x10000..0x4ffff
constexpr std::uint64_t kCode = 0x80000;

// An engine whose code stores one byte at each of rdi, rsi and rdx.
class StoringEngine {
 public:
  StoringEngine() {
    REQUIRE(uc_open(UC_ARCH_X86, UC_MODE_64, &engine_) == UC_ERR_OK);
    REQUIRE(uc_mem_map(engine_, kData, 0x40000, UC_PROT_ALL) == UC_ERR_OK);
    REQUIRE(uc_mem_map(engine_, kCode, 0x1000, UC_PROT_READ | UC_PROT_EXEC) == UC_ERR_OK);
    const std::uint8_t code[] = {0x88, 0x07, 0x88, 0x06, 0x88, 0x02};  // mov [rdi], al; mov [rsi], al; mov [rdx], al
    REQUIRE(uc_mem_write(engine_, kCode, code, sizeof code) == UC_ERR_OK);
  }
  ~StoringEngine() {
    watch.clear();  // hooks before the engine
    uc_close(engine_);
  }
  StoringEngine(const StoringEngine&) = delete;
  StoringEngine& operator=(const StoringEngine&) = delete;

  // Runs the three stores; returns the addresses the callback saw.
  std::vector<std::uint64_t> store_at(std::uint64_t a, std::uint64_t b, std::uint64_t c) {
    seen.clear();
    uc_reg_write(engine_, UC_X86_REG_RDI, &a);
    uc_reg_write(engine_, UC_X86_REG_RSI, &b);
    uc_reg_write(engine_, UC_X86_REG_RDX, &c);
    REQUIRE(uc_emu_start(engine_, kCode, kCode + 6, 0, 0) == UC_ERR_OK);
    return seen;
  }
  void attach() { watch.attach(engine_, &on_write, this); }

  CodeWriteWatch watch;
  std::vector<std::uint64_t> seen;

 private:
  static void on_write(uc_engine*, uc_mem_type, std::uint64_t address, int, std::int64_t, void* user) {
    static_cast<StoringEngine*>(user)->seen.push_back(address);
  }
  uc_engine* engine_ = nullptr;
};

using Addresses = std::vector<std::uint64_t>;

}  // namespace

TEST_CASE("CodeWriteWatch: stores reach the callback only on watched pages; neighbours share one hook") {
  StoringEngine engine;
  CHECK_FALSE(engine.watch.watch(kData, 4));  // not attached: nothing watched
  engine.attach();
  CHECK(engine.store_at(kData, kData + 0x1000, kData + 0x2000).empty());

  REQUIRE(engine.watch.watch(kData + 0x10, 8));  // page 0
  CHECK(engine.watch.ranges() == 1);
  CHECK(engine.store_at(kData + 0xfff, kData + 0x1000, kData) == Addresses{kData + 0xfff, kData});

  REQUIRE(engine.watch.watch(kData + 0x2ffe, 4));  // pages 2 and 3 (the block crosses a page)
  CHECK(engine.watch.ranges() == 2);
  CHECK(engine.store_at(kData + 0x1800, kData + 0x2000, kData + 0x3fff) == Addresses{kData + 0x2000, kData + 0x3fff});

  REQUIRE(engine.watch.watch(kData + 0x2100, 16));  // inside a watched range: no new hook
  CHECK(engine.watch.ranges() == 2);
  REQUIRE(engine.watch.watch(kData + 0x1800, 16));  // page 1 joins its neighbours into one range
  CHECK(engine.watch.ranges() == 1);
  CHECK(engine.store_at(kData + 0x1800, kData + 0x800, kData + 0x3000) ==
        Addresses{kData + 0x1800, kData + 0x800, kData + 0x3000});  // each store seen once

  engine.watch.unwatch(kData + 0x1000, kData + 0x2000);  // a range not wholly inside stays watched
  CHECK(engine.watch.ranges() == 1);
  CHECK(engine.store_at(kData + 0x1800, kData, kData).size() == 3);
  engine.watch.unwatch(kData, kData + 0x4000);
  CHECK(engine.watch.ranges() == 0);
  CHECK(engine.store_at(kData + 0x1800, kData, kData + 0x3000).empty());

  REQUIRE(engine.watch.watch(kData, 1));
  REQUIRE(engine.watch.watch(kData + 0x3000, 1));
  CHECK(engine.watch.ranges() == 2);
  engine.watch.clear();
  CHECK(engine.watch.ranges() == 0);
  CHECK(engine.store_at(kData, kData + 0x3000, kData).empty());
}

TEST_CASE("CodeWriteWatch: scattered code pages take at most kMaxRanges hooks, and every one is still watched") {
  StoringEngine engine;
  engine.attach();
  std::vector<std::uint64_t> code_pages;
  for (std::uint64_t page = 0; page < 40; page += 2) code_pages.push_back(kData + page * 0x1000);  // 20, apart
  for (const std::uint64_t page : code_pages) {
    REQUIRE(engine.watch.watch(page + 0x100, 16));
    CHECK(engine.watch.ranges() <= CodeWriteWatch::kMaxRanges);
  }
  CHECK(engine.watch.ranges() == CodeWriteWatch::kMaxRanges);
  for (const std::uint64_t page : code_pages) {
    CAPTURE(page);
    CHECK(engine.store_at(page + 0x100, page + 0xfff, page) == Addresses{page + 0x100, page + 0xfff, page});
  }
  CHECK(engine.store_at(kData + 0x30000, kData + 0x3f000, kData + 0x3ffff).empty());  // past the last code page
}
