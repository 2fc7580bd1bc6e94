// Role: tests of TraceIndex (recorder/replay/trace_index.h), against references
// it does not share code with: the emulator's own final state (Unicorn's
// registers and memory after the run), the binary trace reader's machine state
// at every instruction (formats/bintrace, written for another issue), and
// brute-force scans of the events for the history queries.
#include <doctest/doctest.h>

#include <cstring>
#include <map>

#include "formats/bintrace/bintrace_reader.h"
#include "recorder/replay/trace_index.h"
#include "tests/formats/roundtrip_helpers.h"
#include "tests/recorder/replay/replay_test_helpers.h"
#include "tests/support/error_text.h"

using namespace tracecorn;
using replay::TraceFormat;
using replay::TraceIndex;
using replay::TraceReader;

namespace {

std::unique_ptr<TraceIndex> index_of(const std::string& path, std::uint64_t interval) {
  auto reader = TraceReader::open(path);
  REQUIRE_MESSAGE(reader.has_value(), tracecorn::test_support::error_text(reader));
  replay::TraceIndexOptions options;
  options.checkpoint_interval = interval;
  auto index = TraceIndex::build(**reader, options);
  REQUIRE_MESSAGE(index.has_value(), tracecorn::test_support::error_text(index));
  return std::move(*index);
}

std::size_t pc_index(const arch::ArchInfo& arch) {
  for (std::size_t i = 0; i < arch.registers.size(); ++i)
    if (arch.registers[i].uc_id == arch.pc_reg) return i;
  return arch.registers.size();
}

}  // namespace

TEST_CASE("Trace index: the state at any event matches the emulator and the binary trace reader") {
  const std::string program = test::kReplaySamples + "/static/floating";
  const std::string ucir = test::replay_temp_path("index.ucir"), bt = test::replay_temp_path("index.bt");
  auto run = test::record_files(program, core::TraceLevel::kFull,
                                {{TraceFormat::kUcir, ucir}, {TraceFormat::kBintrace, bt, true}});
  REQUIRE(run.process);
  const auto& arch = run.process->arch();
  const std::size_t pc = pc_index(arch);
  // Small chunks, so that seeks cross many checkpoints.
  auto index = index_of(ucir, 4096);
  REQUIRE(index->checkpoint_count() > 10);
  CHECK(index->saw(events::EventKind::kRegisters));

  SUBCASE("after the last event: Unicorn's registers and memory") {
    REQUIRE(index->seek(index->event_count()).has_value());
    for (std::size_t i = 0; i < arch.registers.size(); ++i) {
      if (i == pc) continue;
      CAPTURE(arch.registers[i].name);
      std::array<std::uint8_t, 64> engine{};
      REQUIRE(uc_reg_read(run.process->engine(), arch.registers[i].uc_id, engine.data()) == UC_ERR_OK);
      const auto value = index->register_value(i);
      REQUIRE(value.has_value());
      CHECK(std::memcmp(value->bytes.data(), engine.data(), value->size) == 0);
    }
    // The stack's top 64 KiB and the program's data, byte for byte.
    std::uint64_t sp = 0;
    uc_reg_read(run.process->engine(), arch.sp_reg, &sp);
    for (const auto& range : run.process->mapped_ranges()) {
      const std::uint64_t start = std::max(range.start.value, range.end.value - 65536);
      std::vector<std::uint8_t> engine(range.end.value - start), traced(engine.size());
      if (uc_mem_read(run.process->engine(), start, engine.data(), engine.size()) != UC_ERR_OK) continue;
      CAPTURE(range.name);
      CHECK(index->read_memory(start, traced) == traced.size());
      CHECK(engine == traced);
    }
  }

  SUBCASE("before every 997th instruction: the binary trace reader's state there") {
    // Event index of each instruction in the UCIR trace.
    std::vector<std::uint64_t> instruction_events;
    {
      auto reader = TraceReader::open(ucir);
      REQUIRE(reader.has_value());
      for (;;) {
        auto more = (*reader)->next([&](const events::Event& event) {
          if (event.kind == events::EventKind::kInstruction) instruction_events.push_back((*reader)->index() - 1);
        });
        REQUIRE(more.has_value());
        if (!*more) break;
      }
    }
    auto reference = formats::BintraceReader::open(bt);
    REQUIRE(reference.has_value());
    std::uint64_t instructions = 0, compared = 0;
    for (;;) {
      auto more = (*reference)->next([&](const events::Event& event) {
        if (event.kind != events::EventKind::kInstruction) return;
        const std::uint64_t k = instructions++;
        const auto& insn = std::get<events::InstructionEvent>(event.payload);
        const bool is_syscall = insn.bytes.size() == 2 && insn.bytes[0] == 0x0f && insn.bytes[1] == 0x05;
        if (k % 997 != 0 || is_syscall || k + 1 >= instruction_events.size()) return;
        // The bintrace state is after instruction k: the index's before instruction k + 1.
        REQUIRE(index->seek(instruction_events[k + 1]).has_value());
        CHECK(index->pc() == insn.address.value);
        const auto registers = (*reference)->registers();
        for (std::size_t i = 0; i < registers.size(); ++i) {
          if (i == pc) continue;
          const auto value = index->register_value(i);
          REQUIRE(value.has_value());
          if (std::memcmp(value->bytes.data(), registers[i].bytes.data(), value->size) != 0)
            FAIL_CHECK("instruction " << k << ": register " << arch.registers[i].name);
        }
        std::uint64_t sp = 0;
        for (std::size_t i = 0; i < registers.size(); ++i)
          if (arch.registers[i].uc_id == arch.sp_reg) std::memcpy(&sp, registers[i].bytes.data(), 8);
        std::vector<std::uint8_t> mine(512), theirs(512);
        CHECK(index->read_memory(sp - 256, mine) == mine.size());
        (*reference)->read_memory(sp - 256, theirs);
        CHECK(mine == theirs);
        ++compared;
      });
      REQUIRE(more.has_value());
      if (!*more) break;
    }
    CHECK(compared > 20);
  }

  SUBCASE("history queries equal brute-force scans of the events") {
    test::CopySink all([](events::EventKind) { return true; });
    auto reader = TraceReader::open(ucir);
    REQUIRE(reader.has_value());
    REQUIRE((*reader)->read_all(all).has_value());
    REQUIRE(all.events_.size() == index->event_count());
    // The most written stack slot, and a register.
    std::map<std::uint64_t, int> writes;
    for (const auto& e : all.events_)
      if (e.kind == events::EventKind::kMemoryWrite) ++writes[e.address];
    const auto hot = std::max_element(writes.begin(), writes.end(),
                                      [](const auto& a, const auto& b) { return a.second < b.second; });
    REQUIRE(hot->second > 2);
    const std::uint64_t address = hot->first;
    // Brute force: every write event (instruction or kernel) covering `address`.
    std::vector<std::uint64_t> expected;
    for (std::size_t i = 0; i < all.events_.size(); ++i) {
      const auto& e = all.events_[i];
      if (e.kind == events::EventKind::kMemoryWrite && address >= e.address && address < e.address + e.size)
        expected.push_back(i);
      if (e.kind == events::EventKind::kSyscall)
        for (const auto& [at, bytes] : e.writes)
          if (address >= at && address < at + bytes.size()) expected.push_back(i);
    }
    auto history = index->memory_history(address, 1);
    REQUIRE(history.has_value());
    std::vector<std::uint64_t> got;
    for (const auto& record : *history) got.push_back(record.event);
    got.erase(std::unique(got.begin(), got.end()), got.end());
    CHECK(got == expected);
    // last_write before a point in the middle of the writes, and before the first.
    const std::uint64_t middle = expected[expected.size() / 2];
    auto last = index->last_write(address, middle);
    REQUIRE(last.has_value());
    REQUIRE(last->has_value());
    CHECK((*last)->event == expected[expected.size() / 2 - 1]);
    auto none = index->last_write(address, expected.front());
    REQUIRE(none.has_value());
    CHECK(!none->has_value());
    // Register history: rax (table index 0 on x86-64 is checked by name).
    std::size_t rax = 0;
    while (arch.registers[rax].name != "rax") ++rax;
    std::vector<std::uint64_t> rax_expected;
    for (std::size_t i = 0; i < all.events_.size(); ++i)
      for (const auto& r : all.events_[i].registers)
        if (r.index == rax) rax_expected.push_back(i);
    auto rax_history = index->register_history(rax);
    REQUIRE(rax_history.has_value());
    std::vector<std::uint64_t> rax_got;
    for (const auto& record : *rax_history) rax_got.push_back(record.event);
    CHECK(rax_got == rax_expected);
    // Syscalls with their event indices and stacks.
    std::vector<std::uint64_t> syscall_events;
    for (std::size_t i = 0; i < all.events_.size(); ++i)
      if (all.events_[i].kind == events::EventKind::kSyscall) syscall_events.push_back(i);
    REQUIRE(syscall_events.size() == index->syscalls().size());
    for (std::size_t i = 0; i < syscall_events.size(); ++i) {
      CHECK(index->syscalls()[i].event == syscall_events[i]);
      CHECK(index->syscalls()[i].call_stack == all.events_[syscall_events[i]].stack);
    }
  }

  SUBCASE("seeking back and forth gives the same state as a first seek") {
    const std::uint64_t n = index->event_count() * 2 / 3;
    REQUIRE(index->seek(n).has_value());
    std::vector<std::optional<events::RegisterValue>> first;
    for (std::size_t i = 0; i < arch.registers.size(); ++i) first.push_back(index->register_value(i));
    REQUIRE(index->seek(7).has_value());
    REQUIRE(index->seek(index->event_count()).has_value());
    REQUIRE(index->seek(n).has_value());
    for (std::size_t i = 0; i < arch.registers.size(); ++i) {
      const auto value = index->register_value(i);
      REQUIRE(value.has_value() == first[i].has_value());
      if (value) CHECK(std::memcmp(value->bytes.data(), first[i]->bytes.data(), value->size) == 0);
    }
    CHECK(!index->seek(index->event_count() + 1).has_value());
  }
  std::filesystem::remove(ucir);
  std::filesystem::remove(bt);
}

TEST_CASE("Trace index: BAP frames have no initial memory: unknown bytes are not zeros") {
  const std::string program = test::kReplaySamples + "/static/hello";
  const std::string frames = test::replay_temp_path("index.frames");
  test::record_files(program, core::TraceLevel::kFull, {{TraceFormat::kFrames, frames}});
  auto index = index_of(frames, 1 << 16);
  REQUIRE(index->seek(0).has_value());
  std::vector<std::uint8_t> bytes(16);
  CHECK(index->read_memory(0x400000, bytes) == 0);  // the ELF header is never read by the program
  std::filesystem::remove(frames);
}
