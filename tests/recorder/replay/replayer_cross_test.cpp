// Role: deterministic replay (recorder/replay/replayer.h) of every other
// architecture tracecorn runs, driven by the tests' table of architectures
// (tests/support/architectures.h: each other architecture in each link
// variant of its samples, the formats that define it, its write() number).
// Per row: every static sample (samples/cross.cmake) recorded at the
// full level in each format of the row (the samples of tens of millions of
// instructions at the blocks level, in UCIR only), read back and replayed
// without divergence ("Replay long runs: <row> ...", one ctest entry per row,
// replay_tests.cmake); and the check can fail: a trace whose first write()
// result was changed by one bit on its way into the writer (so the file is
// otherwise what the writer makes) is reported, in each format, at that
// syscall's event, found by the trace's own index.
// Formats per row: UCIR names every architecture (riscv64 by tracecorn's own
// name, see formats/ucir/ucir_layout.h); BAP frames have no RISC-V id, binary
// trace v1.0 has register sets only for x86 (see formats/bap, formats/bintrace).
// Who runs it: unit_tests, on the doctest thread.
#include <doctest/doctest.h>

#include <filesystem>
#include <string_view>

#include "tests/formats/roundtrip_helpers.h"
#include "tests/recorder/replay/replay_test_helpers.h"
#include "tests/support/architectures.h"
#include "tests/support/test_case_per_row.h"

using namespace tracecorn;
using replay::TraceFormat;

namespace {

// One row: an other architecture (arch::ArchInfo::name, and the samples' folder
// suffix "guest-<arch>") and a link variant of its samples (samples/cross.cmake);
// its BAP frames support and write() number are the architecture's row's.
using ReplayArch = test_support::SampleBuild;

// Every other architecture in every variant of its samples but aarch64's
// static-pie: a deliberate selection, kept as it was chosen when replay got its
// table (i386's static-pie runs a self-relocating start); replay_tests.cmake
// leaves the same row out of its ctest entries.
constexpr bool is_replayed(const ReplayArch& row) {
  return test_support::is_cross_sample_build(row) &&
         !(row.architecture->name == "aarch64" && row.variant == "static-pie");
}

// One ctest entry each (replay_tests.cmake).
constexpr auto kReplayArches = test_support::sample_builds_where<&is_replayed>();

// The test cases' name for it ("arm static-marm").
std::string row_name(const ReplayArch& row) {
  return std::string(row.architecture->name) + " " + std::string(row.variant);
}

std::string samples_dir(const ReplayArch& row) {
  return test::kReplaySamples + "-" + std::string(row.architecture->name) + "/" + std::string(row.variant);
}

// Samples of tens of millions of instructions: replayed at the blocks level, in UCIR only.
bool is_long(const std::string& sample) {
  const std::string name = std::filesystem::path(sample).filename().string();
  return name == "heap" || name == "stdio_buffered" || name == "big_bss";
}

// UCIR defines them all.
std::vector<TraceFormat> formats_of(const ReplayArch& row) {
  if (row.architecture->has_bap_frames) return {TraceFormat::kUcir, TraceFormat::kFrames};
  return {TraceFormat::kUcir};
}

std::string stem(const ReplayArch& row, TraceFormat format) {
  std::string text = std::string(row.architecture->name) + "-" + std::string(row.variant);
  return text + (format == TraceFormat::kUcir ? ".ucir" : ".frames");
}

// Every static sample of `row`, recorded in its formats, replays without divergence.
void check_every_sample_replays(const ReplayArch& row) {
  const auto scratch = std::filesystem::path(test::replay_temp_path(std::string(row.architecture->name) + "-dir"));
  for (const std::string& sample : test::cross_samples(test::kReplaySamples, std::string(row.architecture->name),
                                                       std::string(row.variant))) {
    CAPTURE(sample);
    const std::string program = test::kReplaySamples + "/" + sample;
    std::filesystem::remove_all(scratch);
    std::filesystem::create_directories(scratch);
    std::vector<test::FileToWrite> files;
    for (const auto format : formats_of(row)) {
      if (is_long(sample) && format != TraceFormat::kUcir) continue;
      files.push_back({format, test::replay_temp_path(stem(row, format)), is_long(sample)});
    }
    const auto run = test::record_files(program, is_long(sample) ? core::TraceLevel::kBlocks : core::TraceLevel::kFull,
                                        files, {}, scratch.string());
    CHECK(std::string(run.process->arch().name) == row.architecture->name);
    for (const auto& file : files) test::check_replay_matches(file.path, program);
    for (const auto& file : files) std::filesystem::remove(file.path);
  }
  std::filesystem::remove_all(scratch);
}

// Forwards every event to `next`, the first syscall numbered `number` with a
// positive result having that result's lowest bit flipped.
class EditFirstResult final : public events::Sink {
 public:
  EditFirstResult(events::Sink& next, std::uint64_t number) : next_(next), number_(number) {}
  void begin(const events::TraceInfo& info) override { next_.begin(info); }
  void on_event(const events::Event& event) override {
    if (!edited_ && event.kind == events::EventKind::kSyscall) {
      const auto& syscall = std::get<events::SyscallEvent>(event.payload);
      if (syscall.number == number_ && syscall.result > 0) {
        edited_ = true;
        events::Event copy = event;
        std::get<events::SyscallEvent>(copy.payload).result ^= 1;
        next_.on_event(copy);
        return;
      }
    }
    next_.on_event(event);
  }
  std::string end(const events::TraceSummary& summary) override { return next_.end(summary); }
  bool edited() const { return edited_; }

 private:
  events::Sink& next_;
  std::uint64_t number_;
  bool edited_ = false;
};

// `row`'s hello, its first write() result edited in each format: the replay
// diverges at that event.
void check_edited_write_found(const ReplayArch& row) {
  const std::string program = samples_dir(row) + "/hello";
  for (const auto format : formats_of(row)) {
    const std::string path = test::replay_temp_path("edited-" + stem(row, format));
    CAPTURE(path);
    std::unique_ptr<events::Sink> writer;
    std::unique_ptr<EditFirstResult> editor;
    const auto run = test::record_sample(program, core::TraceLevel::kFull, [&](linux_layer::LinuxProcess& process) {
      writer = test::open_writer(format, path, process.arch(), false);
      editor = std::make_unique<EditFirstResult>(*writer, row.architecture->write_syscall);
      return std::vector<events::Sink*>{editor.get()};
    });
    REQUIRE(run.finish_error.empty());
    REQUIRE(editor->edited());
    // The edited write, as the file says.
    test::check_diverges_at_write(path, program, test::first_syscall(path, row.architecture->write_syscall).event);
    std::filesystem::remove(path);
  }
}

// "Replay long runs: arm static-marm: every sample in UCIR and frames replays without divergence".
std::string long_runs_case_name(const ReplayArch& row) {
  return "Replay long runs: " + row_name(row) + ": every sample in " +
         (row.architecture->has_bap_frames ? "UCIR and frames" : "UCIR") + " replays without divergence";
}

}  // namespace

// One case per row, so that each is its own ctest entry (replay_tests.cmake).
TRACECORN_TEST_CASE_PER_ROW(kReplayArches, long_runs_case_name, check_every_sample_replays);

TEST_CASE("Replay: a syscall result edited in UCIR or frames is reported at that write's event, every architecture") {
  for (const auto& entry : kReplayArches) {
    const std::string row = row_name(entry);
    CAPTURE(row);
    check_edited_write_found(entry);
  }
}
