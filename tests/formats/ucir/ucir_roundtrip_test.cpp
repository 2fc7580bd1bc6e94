// Role: UCIR round trips on real guest programs (every sample but heap, static,
// and hello dynamic, at blocks, insns, mem and regs): each is recorded once
// with both a probe sink and the UCIR writer attached to the same recording;
// the file is read back and the two event sequences are compared on every
// field UCIR carries (kinds, addresses, sizes, memory values, register values,
// syscall numbers, arguments, results and effects; read values at mem level,
// from the reader's memory image), plain and zstd.
#include <doctest/doctest.h>

#include <unistd.h>

#include <cstring>
#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "formats/ucir/ucir_reader.h"
#include "formats/ucir/ucir_writer.h"
#include "tests/formats/roundtrip_helpers.h"

using namespace tracecorn;

namespace {

const std::string kSamples = TRACECORN_SAMPLES_DIR;

using test::Copied;
using test::CopySink;
using test::same_registers;

// Compares the recorded and the read events; returns how many differ and describes the first.
std::size_t compare(const std::vector<Copied>& recorded, const std::vector<Copied>& read, core::TraceLevel level,
                    std::string& first) {
  std::size_t differing = 0;
  const bool has_steps = level != core::TraceLevel::kBlocks;
  const bool all_writes = level == core::TraceLevel::kMemory || level == core::TraceLevel::kFull;
  auto note = [&](std::size_t i, const char* what) {
    if (first.empty()) first = "event " + std::to_string(i) + ": " + what;
    ++differing;
  };
  if (recorded.size() != read.size()) note(std::min(recorded.size(), read.size()), "the counts differ");
  // The last block of a trace may be cut short (a fault): UCIR counts its
  // executed OP_STEPs, the recorder the block's decoded instructions.
  std::size_t last_block = 0;
  for (std::size_t i = 0; i < recorded.size(); ++i)
    if (recorded[i].kind == events::EventKind::kBlock) last_block = i;
  for (std::size_t i = 0; i < recorded.size() && i < read.size(); ++i) {
    const Copied& a = recorded[i];
    const Copied& b = read[i];
    if (a.kind != b.kind) {
      note(i, "kind");
      break;
    }
    switch (a.kind) {
      case events::EventKind::kBlock:
        if (a.address != b.address || a.size != b.size ||
            (a.count != b.count && !(has_steps && i == last_block && b.count < a.count)))
          note(i, "block");
        break;
      case events::EventKind::kInstruction:
        if (a.address != b.address || a.size != b.size) note(i, "instruction");
        if (!b.bytes.empty() && a.bytes != b.bytes) note(i, "instruction bytes");
        break;
      case events::EventKind::kMemoryWrite:
      case events::EventKind::kMemoryRead:
        if (a.address != b.address || a.size != b.size) note(i, "memory access");
        if (a.kind == events::EventKind::kMemoryWrite && a.value != b.value) note(i, "written value");
        // Read values come from the reader's memory image: exact when every write was recorded.
        if (a.kind == events::EventKind::kMemoryRead && all_writes && a.value != b.value) {
          if (first.empty()) first = "at " + std::to_string(a.address) + " size " + std::to_string(a.size) + " recorded " + std::to_string(a.value) + " read " + std::to_string(b.value) + ": ";
          note(i, "read value");
        }
        if (a.pc_known && b.pc_known && a.pc != b.pc) note(i, "memory pc");
        break;
      case events::EventKind::kRegisters:
        if (!same_registers(a.registers, b.registers) || a.pc != b.pc) note(i, "registers");
        break;
      case events::EventKind::kSyscall:
        if (a.value != b.value || a.result != b.result || !std::equal(std::begin(a.args), std::end(a.args), b.args))
          note(i, "syscall");
        if (has_steps && a.pc != b.pc) note(i, "syscall pc");
        if (a.writes != b.writes || a.mappings != b.mappings || !same_registers(a.registers, b.registers) ||
            a.stack != b.stack)
          note(i, "syscall effects");
        break;
      case events::EventKind::kExit:
        if (a.value != b.value) note(i, "exit code");
        break;
      default:
        break;
    }
  }
  return differing;
}

// Records `program` at `level` into `path` (UCIR) and into a CopySink; returns the sink.
std::unique_ptr<CopySink> record(const std::string& program, core::TraceLevel level, const std::string& path,
                                 bool zstd, const std::string& scratch_dir = "") {
  return test::record_sample(program, level, scratch_dir, &formats::UcirReader::can_carry,
                             [&](const arch::ArchInfo& arch) -> std::unique_ptr<events::Sink> {
                               formats::UcirWriterOptions options;
                               options.compress_zstd = zstd;
                               options.keyframe_interval = 20000;  // a few periodic keyframes in a small run
                               auto writer = formats::UcirWriter::open(path, arch, options);
                               REQUIRE(writer.has_value());
                               return std::move(*writer);
                             });
}

}  // namespace

TEST_CASE("UCIR: recording, writing and reading back gives the same events (every sample, plain and zstd)") {
  std::vector<std::string> samples = {"dynamic/hello"};
  for (const auto& entry : std::filesystem::directory_iterator(kSamples + "/static"))
    samples.push_back("static/" + entry.path().filename().string());
  std::sort(samples.begin(), samples.end());
  REQUIRE(samples.size() >= 15);
  for (const std::string& sample : samples) {
    // Every sample at every level; stdio_buffered (4.5 million instructions) at
    // the blocks level only, as the comparison holds both event sequences in memory.
    const bool large = sample.find("heap") != std::string::npos || sample.find("stdio_buffered") != std::string::npos;
    // heap (40 million instructions) is left out: copying millions of events
    // twice costs this test over a minute, and stdio_buffered covers long runs.
    if (sample.find("heap") != std::string::npos) continue;
    for (auto level : {core::TraceLevel::kBlocks, core::TraceLevel::kInstructions, core::TraceLevel::kMemory,
                       core::TraceLevel::kRegisters}) {
      if (large && level != core::TraceLevel::kBlocks) continue;
      for (const bool zstd : {false, true}) {
        CAPTURE(sample);
        CAPTURE(core::trace_level_name(level));
        CAPTURE(zstd);
        const std::string path = (std::filesystem::temp_directory_path() /
                                  ("tracecorn-ucir-rt-" + std::to_string(::getpid()) + ".ucir"))
                                     .string();
        const auto scratch = std::filesystem::temp_directory_path() / ("tracecorn-ucir-dir-" + std::to_string(::getpid()));
        std::filesystem::remove_all(scratch);
        std::filesystem::create_directories(scratch);
        auto recorded = record(kSamples + "/" + sample, level, path, zstd, scratch.string());
        std::filesystem::remove_all(scratch);
        REQUIRE(recorded->info_.has_initial_state);
        auto reader = formats::UcirReader::open(path);
        REQUIRE_MESSAGE(reader.has_value(), reader.error().to_string());
        CHECK((*reader)->header().zstd == zstd);
        // The first keyframe holds the initial state.
        const auto& info = (*reader)->info();
        CHECK(info.initial_registers.size() == recorded->info_.initial_registers.size());
        REQUIRE(info.initial_memory.size() == recorded->info_.initial_memory.size());
        for (std::size_t i = 0; i < info.initial_memory.size(); ++i) {
          CHECK(info.initial_memory[i].start == recorded->info_.initial_memory[i].start);
          CHECK(info.initial_memory[i].size == recorded->info_.initial_memory[i].size);
          CHECK(info.initial_memory[i].bytes == recorded->info_.initial_memory[i].bytes);
          CHECK(info.initial_memory[i].file == recorded->info_.initial_memory[i].file);
        }
        CopySink read(&formats::UcirReader::can_carry);
        const auto status = (*reader)->read_all(read);
        REQUIRE_MESSAGE(status.has_value(), status.error().to_string());
        CHECK((*reader)->warning().empty());
        std::string first;
        const std::size_t differing = compare(recorded->events_, read.events_, level, first);
        CHECK_MESSAGE(differing == 0, first);
        CHECK(read.events_.size() > 100);
        std::filesystem::remove(path);
      }
    }
  }
}
