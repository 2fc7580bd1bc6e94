// Role: deterministic replay (recorder/replay/replayer.h) of aarch64 traces:
// every aarch64 sample (samples/cross.cmake, static) recorded in UCIR and BAP
// frames, read back and replayed without divergence; and the check can fail:
// a trace whose first write() result was changed by one bit on its way into
// the writer (so the file is otherwise what the writer makes) is reported, in
// either format, at that syscall's event, found by the trace's own index.
// The first case is a "long runs" one (its own ctest entry, replay_long_runs).
// (Binary trace v1.0 defines no aarch64 register set: recording it is refused,
// see formats/bintrace.) Who runs it: unit_tests, on the doctest thread.
#include <doctest/doctest.h>

#include <filesystem>

#include "tests/recorder/replay/replay_test_helpers.h"

using namespace tracecorn;
using replay::TraceFormat;

namespace {

const std::string kAarch64Samples = test::kReplaySamples + "-aarch64";

// Samples of tens of millions of instructions: replayed at the blocks level, in UCIR only.
bool is_long(const std::string& name) { return name == "heap" || name == "stdio_buffered" || name == "big_bss"; }

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

}  // namespace

TEST_CASE("Replay long runs: every aarch64 sample, recorded in UCIR and frames, replays without divergence") {
  const auto scratch = std::filesystem::path(test::replay_temp_path("aarch64-dir"));
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(kAarch64Samples + "/static"))
    names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  REQUIRE(names.size() >= 15);
  for (const auto& name : names) {
    CAPTURE(name);
    const std::string program = kAarch64Samples + "/static/" + name;
    std::filesystem::remove_all(scratch);
    std::filesystem::create_directories(scratch);
    std::vector<test::FileToWrite> files = {{TraceFormat::kUcir, test::replay_temp_path("aarch64.ucir"), true}};
    if (!is_long(name)) files.push_back({TraceFormat::kFrames, test::replay_temp_path("aarch64.frames")});
    const auto run = test::record_files(program, is_long(name) ? core::TraceLevel::kBlocks : core::TraceLevel::kFull,
                                        files, {}, scratch.string());
    CHECK(std::string(run.process->arch().name) == "aarch64");
    for (const auto& file : files) test::check_replay_matches(file.path, program);
    for (const auto& file : files) std::filesystem::remove(file.path);
  }
  std::filesystem::remove_all(scratch);
}

TEST_CASE("Replay: an aarch64 syscall result edited in UCIR or frames is reported at that syscall's event") {
  const std::string program = kAarch64Samples + "/static/hello";
  constexpr std::uint64_t kWrite = 64;  // the generic table's write (asm-generic/unistd.h)
  for (const auto format : {TraceFormat::kUcir, TraceFormat::kFrames}) {
    const std::string path = test::replay_temp_path(format == TraceFormat::kUcir ? "edited-a64.ucir" : "edited-a64.frames");
    CAPTURE(path);
    std::unique_ptr<events::Sink> writer;
    std::unique_ptr<EditFirstResult> editor;
    const auto run = test::record_sample(program, core::TraceLevel::kFull, [&](linux_layer::LinuxProcess& process) {
      writer = test::open_writer(format, path, process.arch(), false);
      editor = std::make_unique<EditFirstResult>(*writer, kWrite);
      return std::vector<events::Sink*>{editor.get()};
    });
    REQUIRE(run.finish_error.empty());
    REQUIRE(editor->edited());
    // The edited write, as the file says.
    test::check_diverges_at_write(path, program, test::first_syscall(path, kWrite).event);
    std::filesystem::remove(path);
  }
}
