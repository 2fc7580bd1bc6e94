// Role: tests of the data-flow query (recorder/debug/why.h) on the sample
// why_flow, whose data flow is known by construction: the 4 bytes it writes
// to sum.bin are the sum of fields copied from input.bin's offsets 4 to 11.
// Per architecture (recorded at the full level): the answer for those bytes,
// before the write that stores them, reaches read() of input.bin, and the
// offsets its leaves name are exactly 4 to 11; the value shown is the sum of
// the fields as the guest reads them; a depth of 2 stops short of the file (and says
// so); the return register after the write is the syscall's result.
// (riscv64's register lists come from tracecorn's own RV64GC decoder.) A
// trace without the values instructions read is refused, naming the level.
// Who runs it: unit_tests, on the doctest thread.
#include <doctest/doctest.h>

#include <filesystem>
#include <set>
#include <string_view>

#include "recorder/debug/why.h"
#include "tests/recorder/replay/replay_test_helpers.h"
#include "tests/support/architectures.h"
#include "tests/support/test_case_per_row.h"
#include "tests/support/error_text.h"

using namespace tracecorn;
using debug::WhyNode;

namespace {

std::unique_ptr<replay::TraceIndex> index_of(const std::string& path) {
  auto reader = replay::TraceReader::open(path);
  REQUIRE_MESSAGE(reader.has_value(), tracecorn::test_support::error_text(reader));
  auto index = replay::TraceIndex::build(**reader);
  REQUIRE_MESSAGE(index.has_value(), tracecorn::test_support::error_text(index));
  return std::move(*index);
}

// An empty directory for the sample's files (input.bin, sum.bin), not the
// test's working directory.
std::string scratch_directory(std::string_view name) {
  const std::filesystem::path dir = test::replay_temp_path("why-" + std::string(name) + "-dir");
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

// The file offsets the tree's read() leaves of `file` name, byte by byte; whether any node was cut.
void collect(const WhyNode& node, const std::string& file, std::set<std::uint64_t>& offsets, bool& cut) {
  cut = cut || node.cut;
  if (node.source == WhyNode::Source::kSyscall && node.file.ends_with(file) && node.file_offset)
    for (std::uint64_t i = 0; i < node.target.length; ++i) offsets.insert(*node.file_offset + i);
  for (const auto& input : node.inputs) collect(input, file, offsets, cut);
}

void check_why(const test_support::GuestArchitecture& architecture) {
  const std::string samples = architecture.is_host ? test::kReplaySamples
                                                   : test::kReplaySamples + "-" + std::string(architecture.name);
  const std::string trace = test::replay_temp_path("why-" + std::string(architecture.name) + ".ucir");
  const std::string scratch = scratch_directory(architecture.name);  // (the sample writes its files there)
  test::record_files(samples + "/static/why_flow", core::TraceLevel::kFull, {{replay::TraceFormat::kUcir, trace}}, {},
                     scratch);
  auto index = index_of(trace);
  const auto& arch = index->arch();
  auto decoder = arch::InstructionDecoder::open(arch, true);
  REQUIRE_MESSAGE(decoder.has_value(), tracecorn::test_support::error_text(decoder));
  CHECK(debug::why_unsupported(*index).empty());
  // The write of the 4-byte sum.
  const auto& calls = index->syscalls();
  const auto write = std::find_if(calls.begin(), calls.end(),
                                  [](const replay::SyscallRecord& c) { return c.name == "write" && c.args[2] == 4; });
  REQUIRE(write != calls.end());
  const debug::WhyTarget sum{false, 0, write->args[1], 4};
  auto tree = debug::explain(*index, **decoder, nullptr, sum, write->event);
  REQUIRE_MESSAGE(tree.has_value(), tracecorn::test_support::error_text(tree));
  if (arch.decode_without_capstone && arch.llvm_target) {
    // A disassembler the caller keeps (the debugger's monitor opens one once)
    // shows the same instruction text as the one explain() opens itself.
    auto text = formats::LlvmDisassembler::open(*arch.llvm_target);
    if (text) {
      debug::WhyOptions kept;
      kept.instruction_text = text->get();
      auto again = debug::explain(*index, **decoder, nullptr, sum, write->event, kept);
      REQUIRE(again.has_value());
      CHECK(!again->instruction.empty());
      CHECK(again->instruction == tree->instruction);
    }
  }
  // 3 + 5 + c + d, the fields read in the guest's byte order: 0x00010238 little endian, 0x2000110a big.
  const std::vector<std::uint8_t> little{0x38, 0x02, 0x01, 0x00}, big{0x20, 0x00, 0x11, 0x0a};
  CHECK(tree->value == (arch.little_endian ? little : big));
  CHECK(tree->source == WhyNode::Source::kInstruction);
  std::set<std::uint64_t> offsets;
  bool cut = false;
  collect(*tree, "input.bin", offsets, cut);
  CHECK(offsets == std::set<std::uint64_t>{4, 5, 6, 7, 8, 9, 10, 11});
  CHECK_FALSE(cut);
  // Two levels only: the file is not reached, and the tree says where it stopped.
  debug::WhyOptions shallow;
  shallow.depth = 2;
  auto short_tree = debug::explain(*index, **decoder, nullptr, sum, write->event, shallow);
  REQUIRE(short_tree.has_value());
  std::set<std::uint64_t> none;
  bool short_cut = false;
  collect(*short_tree, "input.bin", none, short_cut);
  CHECK(none.empty());
  CHECK(short_cut);
  CHECK(debug::why_text(*short_tree, arch).find("deeper than --depth") != std::string::npos);
  // The return register just after the write to stdout: the kernel's result (the line's length,
  // which no architecture's write number equals, so the register changed).
  const auto result_reg = arch.register_index(arch.syscall_abi.return_reg);
  REQUIRE(result_reg);
  const debug::WhyTarget result{true, *result_reg, 0, 0};
  const auto printed = std::find_if(calls.rbegin(), calls.rend(), [](const replay::SyscallRecord& c) {
    return c.name == "write" && c.args[0] == 1 && c.result > 4;  // "sum N\n"
  });
  REQUIRE(printed != calls.rend());
  auto after = debug::explain(*index, **decoder, nullptr, result, printed->event + 1);
  REQUIRE(after.has_value());
  CHECK(after->source == WhyNode::Source::kSyscall);
  CHECK(after->event == printed->event);
  std::filesystem::remove_all(scratch);
  std::filesystem::remove(trace);
}

std::string why_case_name(const test_support::GuestArchitecture& architecture) {
  return "Why: " + std::string(architecture.name) + ": the sum written by why_flow comes from input.bin's offsets 4-11";
}

}  // namespace

TRACECORN_TEST_CASE_PER_ROW(test_support::kGuestArchitectures, why_case_name, check_why);

TEST_CASE("Why: a trace without the values instructions read is refused, naming the level it needs") {
  const std::string trace = test::replay_temp_path("why-regs.ucir");
  test::record_files(test::kReplaySamples + "/static/why_flow", core::TraceLevel::kRegisters,
                     {{replay::TraceFormat::kUcir, trace}}, {}, scratch_directory("regs"));
  auto index = index_of(trace);
  CHECK(debug::why_unsupported(*index).find("'full'") != std::string::npos);
  auto decoder = arch::InstructionDecoder::open(index->arch(), true);
  REQUIRE(decoder.has_value());
  auto tree = debug::explain(*index, **decoder, nullptr, debug::WhyTarget{true, 0, 0, 0}, index->event_count());
  REQUIRE_FALSE(tree.has_value());
  CHECK(tree.error().message.find("'full'") != std::string::npos);
  std::filesystem::remove_all(test::replay_temp_path("why-regs-dir"));
  std::filesystem::remove(trace);
}
