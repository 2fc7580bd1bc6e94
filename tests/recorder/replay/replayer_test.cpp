// Role: tests of deterministic replay (recorder/replay/replayer.h): every
// guest sample recorded in every format replays without divergence (the
// samples that read the clock and random numbers among them: the re-run gets
// the trace's answers, not the host's new ones), every UCIR level replays, and
// the check can fail: a trace whose syscall result was edited by one byte is
// reported at that syscall's event, a program other than the recorded one
// diverges, a module load edited in a binary trace is reported at its event,
// and ld.so's rdtsc gets the recorded values; the signal samples replay with
// each signal where the trace delivered it, and a timer's signal moved by one
// instruction is reported there. The other architectures (arm
// Thumb-2 and ARM code among them): replayer_cross_test.cpp.
#include <doctest/doctest.h>

#include <algorithm>
#include <csignal>
#include <fstream>
#include <optional>

#include <fmt/format.h>

#include "recorder/replay/trace_index.h"
#include "tests/recorder/replay/replay_test_helpers.h"
#include "tests/support/error_text.h"

using namespace tracecorn;
using replay::TraceFormat;

namespace {

// Samples too long to record and compare per instruction in a unit test (tens
// of millions of instructions): replayed at the blocks level in UCIR only.
bool is_long(const std::string& sample) {
  return sample == "static/heap" || sample == "static/stdio_buffered" || sample == "static/big_bss";
}

// Passes to `inner` the trace's start and its first syscall event only: the
// trace of a process that ended inside the syscall it opens with (a forked
// child killed at its fork's return, before an instruction of its own).
class FirstSyscallOnly final : public events::Sink {
 public:
  explicit FirstSyscallOnly(events::Sink& inner) : inner_(inner) {}
  void begin(const events::TraceInfo& info) override { inner_.begin(info); }
  void on_event(const events::Event& event) override {
    if (event.kind != events::EventKind::kSyscall || passed_) return;
    passed_ = true;
    inner_.on_event(event);
  }
  void on_instructions(const events::InstructionRun&) override {}
  std::string end(const events::TraceSummary& summary) override { return inner_.end(summary); }

 private:
  events::Sink& inner_;
  bool passed_ = false;
};

// Passes to `inner` the events up to the first `write` syscall and the block
// event after it, then an exit: the trace of a process killed from outside at
// the start of the block after a syscall (the recorder's block hook saw the
// block, none of its instructions ran), as a kill from another process
// landing between a syscall's return and the next instruction leaves it.
class KilledAtBlockAfterWrite final : public events::Sink {
 public:
  explicit KilledAtBlockAfterWrite(events::Sink& inner) : inner_(inner) {}
  void begin(const events::TraceInfo& info) override { inner_.begin(info); }
  void on_event(const events::Event& event) override {
    if (cut_) return;
    inner_.on_event(event);
    if (event.kind == events::EventKind::kSyscall && std::get<events::SyscallEvent>(event.payload).name == "write")
      wrote_ = true;
    if (!wrote_ || event.kind != events::EventKind::kBlock) return;
    cut_ = true;
    events::Event exit = event;
    exit.kind = events::EventKind::kExit;
    exit.payload = events::ExitEvent{true, 0, SIGTERM};
    inner_.on_event(exit);
  }
  void on_instructions(const events::InstructionRun& run) override {
    if (!cut_) inner_.on_instructions(run);
  }
  std::string end(const events::TraceSummary& summary) override { return inner_.end(summary); }

  bool cut_ = false;

 private:
  events::Sink& inner_;
  bool wrote_ = false;
};

}  // namespace

// The kill between a syscall's return and the next block's first instruction
// (seen once in CI on job_control's paused child): at the blocks level the
// trace's last block is compared and the re-run stopped there; with
// instruction events the block says nothing ran, and the re-run dies as the
// syscall returns (it used to go on to its next syscall: "no more syscalls").
TEST_CASE("Replay: a process killed from outside at the start of the block after a syscall matches at every level") {
  const std::string program = test::kReplaySamples + "/static/hello";
  for (const auto level : {core::TraceLevel::kBlocks, core::TraceLevel::kInstructions, core::TraceLevel::kRegisters}) {
    CAPTURE(core::trace_level_name(level));
    const std::string path = test::replay_temp_path("killed-at-block.ucir");
    std::unique_ptr<events::Sink> writer;
    std::unique_ptr<KilledAtBlockAfterWrite> cut;
    const auto run = test::record_sample(program, level, [&](linux_layer::LinuxProcess& process) {
      writer = test::open_writer(TraceFormat::kUcir, path, process.arch(), false);
      cut = std::make_unique<KilledAtBlockAfterWrite>(*writer);
      return std::vector<events::Sink*>{cut.get()};
    });
    REQUIRE_MESSAGE(run.finish_error.empty(), run.finish_error);
    REQUIRE(cut->cut_);
    replay::ReplayOptions options;
    options.program = program;
    auto report = replay::replay_trace(path, options);
    REQUIRE_MESSAGE(report.has_value(), tracecorn::test_support::error_text(report));
    CHECK_MESSAGE(!report->divergence.has_value(), report->divergence->to_string());
    CHECK(report->steps_compared > 10);
    std::filesystem::remove(path);
  }
}

TEST_CASE("Replay: a trace that ends inside the syscall it opens with (a child killed at its fork's return) matches, with nothing to re-run") {
  const std::string program = test::kReplaySamples + "/static/hello";
  const std::string path = test::replay_temp_path("syscall-only.ucir");
  std::unique_ptr<events::Sink> writer;
  std::unique_ptr<FirstSyscallOnly> first_only;
  const auto run = test::record_sample(program, core::TraceLevel::kBlocks, [&](linux_layer::LinuxProcess& process) {
    writer = test::open_writer(TraceFormat::kUcir, path, process.arch(), false);
    first_only = std::make_unique<FirstSyscallOnly>(*writer);
    return std::vector<events::Sink*>{first_only.get()};
  });
  REQUIRE_MESSAGE(run.finish_error.empty(), run.finish_error);
  replay::ReplayOptions options;
  options.program = program;
  auto report = replay::replay_trace(path, options);
  REQUIRE_MESSAGE(report.has_value(), tracecorn::test_support::error_text(report));
  CHECK_MESSAGE(!report->divergence.has_value(), report->divergence->to_string());
  CHECK(report->steps_compared == 0);
  CHECK(report->trace_events == 1);
  CHECK(std::any_of(report->not_compared.begin(), report->not_compared.end(),
                    [](const std::string& line) { return line.find("no code ran") != std::string::npos; }));
  std::filesystem::remove(path);
}

TEST_CASE("Replay long runs: every sample, recorded in every format, replays without divergence") {
  const auto scratch = std::filesystem::path(test::replay_temp_path("dir"));
  for (const auto& sample : test::all_samples(test::kReplaySamples)) {
    CAPTURE(sample);
    const std::string program = test::kReplaySamples + "/" + sample;
    std::filesystem::remove_all(scratch);
    std::filesystem::create_directories(scratch);
    std::vector<test::FileToWrite> files = {{TraceFormat::kUcir, test::replay_temp_path("all.ucir"), true}};
    if (!is_long(sample)) {
      files.push_back({TraceFormat::kFrames, test::replay_temp_path("all.frames")});
      files.push_back({TraceFormat::kBintrace, test::replay_temp_path("all.bt"), true});
    }
    test::record_files(program, is_long(sample) ? core::TraceLevel::kBlocks : core::TraceLevel::kFull, files, {},
                       scratch.string());
    for (const auto& file : files) test::check_replay_matches(file.path, program);
    for (const auto& file : files) std::filesystem::remove(file.path);
  }
  std::filesystem::remove_all(scratch);
}

TEST_CASE("Replay: a UCIR trace replays at every level") {
  const std::string program = test::kReplaySamples + "/static/getrandom";
  for (const auto level : {core::TraceLevel::kBlocks, core::TraceLevel::kInstructions, core::TraceLevel::kMemory,
                           core::TraceLevel::kRegisters}) {
    CAPTURE(core::trace_level_name(level));
    const std::string path = test::replay_temp_path("level.ucir");
    test::record_files(program, level, {{TraceFormat::kUcir, path}});
    replay::ReplayOptions options;
    options.program = program;
    auto report = replay::replay_trace(path, options);
    REQUIRE(report.has_value());
    CHECK_MESSAGE(!report->divergence, report->divergence->to_string());
    CHECK(report->level == core::trace_level_name(level));  // inferred from the events
    CHECK(report->syscalls_answered > 0);
    std::filesystem::remove(path);
  }
}

TEST_CASE("Replay: a syscall result edited by one byte is reported at that syscall's event") {
  const std::string program = test::kReplaySamples + "/static/hello";
  const std::string path = test::replay_temp_path("edited.ucir");
  for (const auto level : {core::TraceLevel::kBlocks, core::TraceLevel::kFull}) {
    CAPTURE(core::trace_level_name(level));
    test::record_files(program, level, {{TraceFormat::kUcir, path}});
    // The first write(): its event index and result, from the trace.
    const replay::SyscallRecord first_write = test::first_syscall(path, 1);
    const replay::SyscallRecord* write = &first_write;
    REQUIRE(write->result > 0);
    // Its OP_SYSCALL in the file (formats/ucir/ucir_layout.h): 0x0c, num u16, ret u64, argc u8 = 6.
    std::ifstream in(path, std::ios::binary);
    std::vector<char> bytes{std::istreambuf_iterator<char>(in), {}};
    std::vector<char> pattern = {0x0c, 0x01, 0x00};
    for (int i = 0; i < 8; ++i) pattern.push_back(static_cast<char>(static_cast<std::uint64_t>(write->result) >> (8 * i)));
    pattern.push_back(6);
    auto at = std::search(bytes.begin(), bytes.end(), pattern.begin(), pattern.end());
    REQUIRE(at != bytes.end());
    const std::size_t result_offset = static_cast<std::size_t>(at - bytes.begin()) + 3;
    bytes[result_offset] = static_cast<char>(bytes[result_offset] ^ 1);
    std::ofstream(path, std::ios::binary | std::ios::trunc).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    test::check_diverges_at_write(path, program, write->event);
  }
  std::filesystem::remove(path);
}

TEST_CASE("Replay: module loads are compared: a module's range edited by one byte is reported at its event") {
  const std::string program = test::kReplaySamples + "/static/hello";
  const std::string path = test::replay_temp_path("module.bt");
  test::record_files(program, core::TraceLevel::kRegisters, {{TraceFormat::kBintrace, path}});
  // The binary trace's module event is an "other" event: "module 0xSTART 0xEND bias 0xB PATH".
  std::ifstream in(path, std::ios::binary);
  std::vector<char> bytes{std::istreambuf_iterator<char>(in), {}};
  const std::string marker = "module 0x";
  auto at = std::search(bytes.begin(), bytes.end(), marker.begin(), marker.end());
  REQUIRE(at != bytes.end());
  const auto end_field = std::find(at + static_cast<std::ptrdiff_t>(marker.size()), bytes.end(), ' ') + 3;  // past " 0x"
  const auto last_digit = std::find(end_field, bytes.end(), ' ') - 1;
  REQUIRE(*last_digit == '0');
  *last_digit = '1';
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  // The module event's index, as the reader gives it.
  auto reader = replay::TraceReader::open(path);
  REQUIRE(reader.has_value());
  std::optional<std::uint64_t> module_event;
  std::uint64_t module_end = 0;
  while (!module_event) {
    auto more = (*reader)->next([&](const events::Event& event) {
      if (event.kind != events::EventKind::kModuleLoad || module_event) return;
      module_event = (*reader)->index() - 1;
      module_end = std::get<events::ModuleLoadEvent>(event.payload).end.value;
    });
    REQUIRE(more.has_value());
    REQUIRE(*more);
  }
  CHECK((module_end & 0xfff) == 1);  // the edit is the one the reader sees
  replay::ReplayOptions options;
  options.program = program;
  auto report = replay::replay_trace(path, options);
  REQUIRE(report.has_value());
  REQUIRE(report->divergence.has_value());
  CHECK(report->divergence->event == *module_event);
  CHECK(report->divergence->what == "a module load");
  CHECK(report->divergence->trace_says.find(fmt::format("-{:#x}", module_end)) != std::string::npos);
  CHECK(report->divergence->emulator_did.find(fmt::format("-{:#x}", module_end - 1)) != std::string::npos);
  MESSAGE(report->divergence->to_string());
  std::filesystem::remove(path);
}

TEST_CASE("Replay: another program diverges at its first different step") {
  const std::string path = test::replay_temp_path("other.frames");
  test::record_files(test::kReplaySamples + "/static/hello", core::TraceLevel::kFull, {{TraceFormat::kFrames, path}});
  replay::ReplayOptions options;
  options.program = test::kReplaySamples + "/static/exit_code";
  auto report = replay::replay_trace(path, options);
  REQUIRE(report.has_value());
  REQUIRE(report->divergence.has_value());
  CHECK(!report->divergence->trace_says.empty());
  CHECK(!report->divergence->emulator_did.empty());
  std::filesystem::remove(path);
}

TEST_CASE("Replay: rdtsc is an input too: the re-run gets the values the trace recorded") {
  // ld.so reads the time stamp counter; its value differs on every run.
  const std::string program = test::kReplaySamples + "/dynamic/hello";
  const std::string path = test::replay_temp_path("rdtsc.bt");
  test::record_files(program, core::TraceLevel::kFull, {{TraceFormat::kBintrace, path}});
  std::uint64_t rdtsc = 0;
  {
    auto reader = replay::TraceReader::open(path);
    REQUIRE(reader.has_value());
    for (;;) {
      auto more = (*reader)->next([&](const events::Event& event) {
        if (event.kind != events::EventKind::kInstruction) return;
        const auto& i = std::get<events::InstructionEvent>(event.payload);
        if (i.bytes.size() == 2 && i.bytes[0] == 0x0f && i.bytes[1] == 0x31) ++rdtsc;
      });
      REQUIRE(more.has_value());
      if (!*more) break;
    }
  }
  REQUIRE(rdtsc > 0);  // else this case proves nothing
  test::check_replay_matches(path, program);
  std::filesystem::remove(path);
}

// The signal samples replay at the levels below full too (every signal where
// the trace delivered it: at a syscall's return, between two blocks for the
// timers, at the faulting instruction); "Replay long runs" above replays them
// at full level in every format.
TEST_CASE("Replay: the signal samples replay without divergence at the blocks and regs levels") {
  for (const std::string sample : {"static/signal_handlers", "static/signal_timers", "static/signal_faults"}) {
    const std::string program = test::kReplaySamples + "/" + sample;
    for (const auto level : {core::TraceLevel::kBlocks, core::TraceLevel::kRegisters}) {
      CAPTURE(sample);
      CAPTURE(core::trace_level_name(level));
      const std::string path = test::replay_temp_path("signals.ucir");
      test::record_files(program, level, {{TraceFormat::kUcir, path}});
      test::check_replay_matches(path, program);
      std::filesystem::remove(path);
    }
  }
}

namespace {

// Copies a trace's events into `out`, but the first signal delivered between
// two blocks (a timer's) is written one instruction later than it came.
class SignalMover final : public events::Sink {
 public:
  explicit SignalMover(events::Sink& out) : out_(out) {}
  void begin(const events::TraceInfo& info) override { out_.begin(info); }
  void on_event(const events::Event& event) override {
    const auto* signal = std::get_if<events::SignalEvent>(&event.payload);
    if (signal && !moved_ && !signal->fault && !signal->frame_writes.empty()) {
      held_ = event;  // deep copies of what the spans point at
      held_signal_ = *signal;
      for (const auto& write : signal->frame_writes) held_bytes_.emplace_back(write.bytes.begin(), write.bytes.end());
      for (std::size_t i = 0; i < held_bytes_.size(); ++i)
        held_writes_.push_back({signal->frame_writes[i].address, held_bytes_[i]});
      held_registers_.assign(signal->register_changes.begin(), signal->register_changes.end());
      held_signal_.frame_writes = held_writes_;
      held_signal_.register_changes = held_registers_;
      held_->payload = held_signal_;
      moved_ = true;
      moved_event_ = event.sequence.value;
      return;
    }
    out_.on_event(event);
    if (held_ && event.kind == events::EventKind::kInstruction) {
      out_.on_event(*held_);
      held_.reset();
    }
  }
  std::string end(const events::TraceSummary& summary) override { return out_.end(summary); }
  std::uint64_t moved_event_ = 0;
  bool moved_ = false;

 private:
  events::Sink& out_;
  std::optional<events::Event> held_;
  events::SignalEvent held_signal_;
  std::vector<std::vector<std::uint8_t>> held_bytes_;
  std::vector<events::MemoryWriteEffect> held_writes_;
  std::vector<events::RegisterValue> held_registers_;
};

}  // namespace

TEST_CASE("Replay: a timer's signal moved by one instruction in the trace is reported there") {
  const std::string program = test::kReplaySamples + "/static/signal_timers";
  const std::string path = test::replay_temp_path("timer.ucir"), moved = test::replay_temp_path("moved.ucir");
  test::record_files(program, core::TraceLevel::kInstructions, {{TraceFormat::kUcir, path}});
  test::check_replay_matches(path, program);  // as recorded: no divergence
  auto reader = replay::TraceReader::open(path);
  REQUIRE(reader.has_value());
  auto writer = test::open_writer(TraceFormat::kUcir, moved, (*reader)->arch(), false);
  SignalMover mover(*writer);
  REQUIRE((*reader)->read_all(mover).has_value());
  REQUIRE(mover.moved_);
  replay::ReplayOptions options;
  options.program = program;
  auto report = replay::replay_trace(moved, options);
  REQUIRE(report.has_value());
  REQUIRE(report->divergence.has_value());
  MESSAGE(report->divergence->to_string());
  // Where the trace now has the interrupted block's first instruction, the
  // re-run took the signal (the event numbers are the moved trace's).
  CHECK(report->divergence->event >= mover.moved_event_);
  CHECK(report->divergence->event <= mover.moved_event_ + 2);
  CHECK(report->divergence->what == "what happens next");
  std::filesystem::remove(path);
  std::filesystem::remove(moved);
}
