// Role: tests of the Tenet export (formats/tenet/tenet_writer.h) with a
// reader written here from Tenet's documented trace format (tracers/README.md
// of github.com/gaasedelen/tenet: one line per instruction, `name=0x...`
// register deltas, `mr=`/`mw=ADDR:HEX` memory) that shares no code with the
// writer. It rebuilds Tenet's register file line by line and compares it with
// the trace index's state before each instruction (recorder/replay/
// trace_index.h), and every memory byte of a line with the index's memory;
// on x86-64, i386 and aarch64. Other architectures and lower levels are
// refused with a message naming what is missing.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "recorder/replay/trace_index.h"
#include "recorder/replay/trace_tools.h"
#include "tests/recorder/replay/replay_test_helpers.h"
#include "tests/support/error_text.h"

using namespace tracecorn;

namespace {

// One line of a Tenet trace, as Tenet reads it.
struct TenetLine {
  std::map<std::string, std::uint64_t> registers;  // lower-case names
  struct Access {
    bool write = false;
    std::uint64_t address = 0;
    std::vector<std::uint8_t> bytes;
  };
  std::vector<Access> accesses;
};

std::vector<std::uint8_t> parse_hex_bytes(const std::string& hex) {
  if (hex.size() % 2) FAIL("an odd number of hex digits: " << hex);
  std::vector<std::uint8_t> bytes;
  for (std::size_t i = 0; i < hex.size(); i += 2) bytes.push_back(static_cast<std::uint8_t>(std::stoul(hex.substr(i, 2), nullptr, 16)));
  return bytes;
}

// "name=0x..,mr=0xADDR:HEX,..." per the format: comma-separated entries.
TenetLine parse_line(const std::string& text) {
  TenetLine line;
  std::stringstream entries(text);
  for (std::string entry; std::getline(entries, entry, ',');) {
    const std::size_t equals = entry.find('=');
    if (equals == std::string::npos) FAIL("an entry without '=': " << entry);
    const std::string key = entry.substr(0, equals), value = entry.substr(equals + 1);
    if (key == "mr" || key == "mw" || key == "mrw") {
      const std::size_t colon = value.find(':');
      if (colon == std::string::npos) FAIL("a memory entry without ':': " << entry);
      line.accesses.push_back({key != "mr", std::stoull(value.substr(0, colon), nullptr, 16),
                               parse_hex_bytes(value.substr(colon + 1))});
    } else {
      if (value.rfind("0x", 0) != 0) FAIL("a register value not in hex: " << entry);
      line.registers[key] = std::stoull(value, nullptr, 16);
    }
  }
  return line;
}

struct Instruction {
  std::uint64_t event = 0;  // its number in the trace
  std::uint64_t pc = 0;
};

// The trace's instruction events, in order.
std::vector<Instruction> instruction_events(const std::string& path) {
  auto reader = replay::TraceReader::open(path);
  REQUIRE(reader.has_value());
  std::vector<Instruction> found;
  std::uint64_t index = 0;
  for (;;) {
    auto more = (*reader)->next([&](const events::Event& event) {
      if (const auto* instruction = std::get_if<events::InstructionEvent>(&event.payload))
        found.push_back({index, instruction->address.value});
      ++index;
    });
    if (!more) FAIL(more.error().to_string());
    if (!*more) break;
  }
  return found;
}

std::uint64_t register_number(const events::RegisterValue& value) {
  std::uint64_t number = 0;
  for (std::size_t i = 0; i < value.size && i < 8; ++i) number |= std::uint64_t{value.bytes[i]} << (8 * i);
  return number;
}

// Exports the full-level recording of `program` and checks every line against the index.
void check_export(const std::string& program, const std::string& stem) {
  CAPTURE(program);
  const std::string trace = test::replay_temp_path(stem + ".ucir"), log = test::replay_temp_path(stem + ".log");
  auto run = test::record_files(program, core::TraceLevel::kFull, {{replay::TraceFormat::kUcir, trace}});
  REQUIRE(run.process);
  const arch::ArchInfo& arch = run.process->arch();
  auto lines_written = replay::export_tenet(trace, log);
  REQUIRE_MESSAGE(lines_written.has_value(), tracecorn::test_support::error_text(lines_written));
  auto reader = replay::TraceReader::open(trace);
  REQUIRE(reader.has_value());
  replay::TraceIndexOptions small_chunks;  // a seek per line: each applies at most one chunk
  small_chunks.checkpoint_interval = 256;
  auto index = replay::TraceIndex::build(**reader, small_chunks);
  REQUIRE(index.has_value());
  const std::vector<Instruction> instructions = instruction_events(trace);
  // A line per instruction, as it is about to run (the last one's changes have none).
  REQUIRE(*lines_written == instructions.size());

  std::map<std::string, std::uint64_t> file;  // Tenet's register file, rebuilt
  std::ifstream in(log);
  std::string text, first_mismatch;
  std::size_t mismatches = 0, registers_compared = 0, bytes_compared = 0;
  // (One doctest check per line would dominate the run: mismatches are counted, the first one kept.)
  auto expect = [&](bool same, std::size_t k, const std::string& what) {
    if (same) return;
    if (mismatches++ == 0) first_mismatch = "line " + std::to_string(k + 1) + ": " + what;
  };
  const auto& tenet_registers = arch.format_ids.tenet_registers;
  for (std::size_t k = 0; std::getline(in, text); ++k) {
    const TenetLine line = parse_line(text);
    if (k == 0) CHECK(line.registers.size() == tenet_registers.size());  // every one
    for (const auto& [name, value] : line.registers) file[name] = value;
    expect((*index)->seek(instructions[k].event).has_value(), k, "no seek");
    for (std::size_t r = 0; r + 1 < tenet_registers.size(); ++r) {  // the pc, last: below
      const std::string name(tenet_registers[r].tenet_name);
      const auto table = static_cast<std::size_t>(arch.find_register(tenet_registers[r].table_name) - arch.registers.data());
      const auto known = (*index)->register_value(table);
      expect(known && file.count(name) && file[name] == register_number(*known), k, name + " differs: " + text);
      ++registers_compared;
    }
    const auto pc = line.registers.find(std::string(tenet_registers.back().tenet_name));
    expect(pc != line.registers.end() && pc->second == instructions[k].pc, k, "the pc differs: " + text);
    // Written bytes are the memory before this instruction runs; read bytes,
    // the memory before the instruction that read them ran.
    for (const TenetLine::Access& access : line.accesses) {
      if (!access.write) expect(k > 0 && (*index)->seek(instructions[k - 1].event).has_value(), k, "no seek");
      std::vector<std::uint8_t> memory(access.bytes.size());
      const bool known = (*index)->read_memory(access.address, memory) == memory.size();
      expect(known && memory == access.bytes, k, "memory differs: " + text);
      bytes_compared += memory.size();
      if (!access.write) expect((*index)->seek(instructions[k].event).has_value(), k, "no seek");
    }
  }
  CHECK_MESSAGE(mismatches == 0, first_mismatch);
  CHECK(registers_compared == (tenet_registers.size() - 1) * instructions.size());
  CHECK(bytes_compared > 1000);
  std::filesystem::remove(trace);
  std::filesystem::remove(log);
}

}  // namespace

TEST_CASE("Tenet: the export's register file and memory equal the trace index's at every instruction") {
  check_export(test::kReplaySamples + "/static/nested_calls", "tenet-x86_64");
  for (const char* arch : {"i386", "aarch64"}) {
    const std::string program = test::kReplaySamples + "-" + arch + "/static/nested_calls";
    if (std::filesystem::exists(program)) check_export(program, std::string("tenet-") + arch);
  }
}

TEST_CASE("Tenet: a trace below the full level and an architecture Tenet does not read are refused") {
  const std::string regs = test::replay_temp_path("tenet-regs.ucir"), out = test::replay_temp_path("tenet-out.log");
  test::record_files(test::kReplaySamples + "/static/hello", core::TraceLevel::kRegisters,
                     {{replay::TraceFormat::kUcir, regs}});
  auto refused = replay::export_tenet(regs, out);
  REQUIRE_FALSE(refused.has_value());
  CHECK(refused.error().to_string().find("record at --level full); this trace has no memory accesses") !=
        std::string::npos);
  CHECK_FALSE(std::filesystem::exists(out));  // a failed export leaves no file behind
  const std::string riscv = test::kReplaySamples + "-riscv64/static/hello";
  if (std::filesystem::exists(riscv)) {
    const std::string full = test::replay_temp_path("tenet-riscv64.ucir");
    test::record_files(riscv, core::TraceLevel::kFull, {{replay::TraceFormat::kUcir, full}});
    auto unsupported = replay::export_tenet(full, out);
    REQUIRE_FALSE(unsupported.has_value());
    CHECK(unsupported.error().to_string().find("Tenet reads traces of x86-64, i386 and aarch64 only, not riscv64") !=
          std::string::npos);
    std::filesystem::remove(full);
  }
  std::filesystem::remove(regs);
}
