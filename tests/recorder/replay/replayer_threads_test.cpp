// Role: replay of multi-threaded traces (recorder/replay/thread_schedule.h):
// the thread samples (threads: create/join, a condition variable ping-pong,
// eight threads on an atomic, pthread_kill, a thread blocked in read();
// futex_ops: every futex operation, with a thread spinning until another
// wakes; robust_mutex: a lock whose owner died) recorded in every format and
// replayed without divergence, on every architecture, the re-run switching
// threads where the recording did (after the same syscalls, at the same
// execution of the same instruction); and the check can fail: a trace whose
// first preemption was moved one event later diverges there.
// posix_timers (timers that signal the process, a thread, or start glibc's
// SIGEV_THREAD helper thread) replays too: its SI_TIMER signals come from the
// trace, though the re-run has no timer (timer_create is answered); and
// thread_timer_spin, whose timer signal reaches spinning threads, taken at
// a thread switch or at a block's start (UCIR blocks: millions of them).
// Who runs it: unit_tests, on the doctest thread; "Replay long runs: threads"
// is its own ctest entry (replay_tests.cmake).
#include <doctest/doctest.h>

#include <filesystem>
#include <optional>
#include <string_view>

#include "tests/recorder/replay/replay_test_helpers.h"
#include "tests/support/architectures.h"
#include "tests/support/error_text.h"

using namespace tracecorn;
using replay::TraceFormat;

namespace {

using test_support::GuestArchitecture;

// The other architectures whose thread_timer_spin replays too: a deliberate
// selection of tests/support/architectures.h's rows, for time (millions of
// blocks each).
constexpr auto kTimerSpinCrossArchitectures = test_support::guest_architectures({"aarch64", "mipsel"});

// `program` recorded at `level` into `formats`, each file replayed.
void check_replays(const std::string& program, core::TraceLevel level, const std::vector<TraceFormat>& formats) {
  CAPTURE(program);
  CAPTURE(core::trace_level_name(level));
  std::vector<test::FileToWrite> files;
  for (const auto format : formats) {
    const std::string extension =
        format == TraceFormat::kUcir ? ".ucir" : format == TraceFormat::kFrames ? ".frames" : ".bt";
    files.push_back({format, test::replay_temp_path("threads" + extension), format != TraceFormat::kFrames});
  }
  const auto run = test::record_files(program, level, files);
  REQUIRE(run.outcome.kind == linux_layer::RunOutcome::Kind::kExited);
  for (const auto& file : files) test::check_replay_matches(file.path, program);
  for (const auto& file : files) std::filesystem::remove(file.path);
}

// Forwards every event to `next`, but the first preemption (a switch right
// after a block) goes out one event later, after the new thread's first.
class DelayFirstPreemption final : public events::Sink {
 public:
  explicit DelayFirstPreemption(events::Sink& next) : next_(next) {}
  void begin(const events::TraceInfo& info) override { next_.begin(info); }
  void on_event(const events::Event& event) override {
    if (held_) {
      next_.on_event(event);
      next_.on_event(*held_);
      held_.reset();
      return;
    }
    if (!moved_at_ && event.kind == events::EventKind::kThread && last_was_block_ &&
        std::get<events::ThreadEvent>(event.payload).change == events::ThreadChange::kSwitched) {
      // A deep copy: the registers' span points into the recorder's buffer.
      held_ = event;
      auto& change = std::get<events::ThreadEvent>(held_->payload);
      held_registers_.assign(change.registers.begin(), change.registers.end());
      change.registers = held_registers_;
      moved_at_ = count_;
      ++count_;
      return;
    }
    last_was_block_ = event.kind == events::EventKind::kBlock;
    ++count_;
    next_.on_event(event);
  }
  std::string end(const events::TraceSummary& summary) override { return next_.end(summary); }
  bool moved() const { return moved_at_.has_value(); }

 private:
  events::Sink& next_;
  std::optional<events::Event> held_;
  std::vector<events::RegisterValue> held_registers_;
  std::optional<std::uint64_t> moved_at_;  // the switch's place among the events given
  std::uint64_t count_ = 0;
  bool last_was_block_ = false;
};

// The index in `trace` of its first preemption (a switch right after a block).
std::uint64_t first_preemption(const std::string& trace) {
  std::optional<std::uint64_t> found;
  bool last_was_block = false;
  const Status read = replay::read_every_event(trace, [&](const events::Event& event, std::uint64_t index) {
    if (!found && last_was_block && event.kind == events::EventKind::kThread &&
        std::get<events::ThreadEvent>(event.payload).change == events::ThreadChange::kSwitched)
      found = index;
    last_was_block = event.kind == events::EventKind::kBlock;
  });
  REQUIRE_MESSAGE(read.has_value(), tracecorn::test_support::error_text(read));
  REQUIRE(found.has_value());
  return *found;
}

}  // namespace

TEST_CASE("Replay long runs: threads: the thread samples replay without divergence, following the recorded schedule") {
  const std::string samples = test::kReplaySamples + "/static/";
  // x86-64: every format (binary trace v1.0 records registers at full).
  check_replays(samples + "futex_ops", core::TraceLevel::kFull,
                {TraceFormat::kUcir, TraceFormat::kFrames, TraceFormat::kBintrace});
  check_replays(samples + "robust_mutex", core::TraceLevel::kFull,
                {TraceFormat::kUcir, TraceFormat::kFrames, TraceFormat::kBintrace});
  check_replays(samples + "posix_timers", core::TraceLevel::kFull,
                {TraceFormat::kUcir, TraceFormat::kFrames, TraceFormat::kBintrace});
  check_replays(samples + "threads", core::TraceLevel::kBlocks, {TraceFormat::kUcir});
  check_replays(samples + "threads", core::TraceLevel::kInstructions, {TraceFormat::kUcir});
  check_replays(samples + "thread_timer_spin", core::TraceLevel::kBlocks, {TraceFormat::kUcir});
  for (const GuestArchitecture* architecture : kTimerSpinCrossArchitectures)
    check_replays(test::kReplaySamples + "-" + std::string(architecture->name) + "/static/thread_timer_spin",
                  core::TraceLevel::kBlocks, {TraceFormat::kUcir});
  // The other architectures (samples/cross.cmake's folders): the samples in UCIR
  // (and frames where they are defined; riscv64: no frame architecture id).
  for (const GuestArchitecture* architecture : test_support::kCrossArchitectures) {
    const std::string dir = test::kReplaySamples + "-" + std::string(architecture->name) + "/static/";
    std::vector<TraceFormat> formats = {TraceFormat::kUcir};
    if (architecture->has_bap_frames) formats.push_back(TraceFormat::kFrames);
    check_replays(dir + "robust_mutex", core::TraceLevel::kFull, formats);
    check_replays(dir + "futex_ops", core::TraceLevel::kBlocks, {TraceFormat::kUcir});
    check_replays(dir + "threads", core::TraceLevel::kBlocks, {TraceFormat::kUcir});
    check_replays(dir + "posix_timers", core::TraceLevel::kBlocks, {TraceFormat::kUcir});
  }
}

TEST_CASE("Replay: a thread switch moved one event later in the trace is reported there") {
  const std::string program = test::kReplaySamples + "/static/futex_ops";
  const std::string path = test::replay_temp_path("moved-switch.ucir");
  std::unique_ptr<events::Sink> writer;
  std::unique_ptr<DelayFirstPreemption> mover;
  const auto run = test::record_sample(program, core::TraceLevel::kBlocks, [&](linux_layer::LinuxProcess& process) {
    writer = test::open_writer(TraceFormat::kUcir, path, process.arch(), false);
    mover = std::make_unique<DelayFirstPreemption>(*writer);
    return std::vector<events::Sink*>{mover.get()};
  });
  REQUIRE(run.finish_error.empty());
  REQUIRE(mover->moved());  // futex_ops spins until a sleeping thread wakes: it is preempted
  // In the file: the new thread's first block, then the switch.
  const std::uint64_t moved_switch = first_preemption(path);
  replay::ReplayOptions options;
  options.program = program;
  auto report = replay::replay_trace(path, options);
  REQUIRE_MESSAGE(report.has_value(), tracecorn::test_support::error_text(report));
  REQUIRE(report->divergence.has_value());
  CAPTURE(report->divergence->to_string());
  // The re-run switches where the recording did (where the trace now has the
  // new thread's first block) or, finding no switch planned there, goes on
  // in the old thread: the divergence is at the switch's old or new place.
  CHECK(report->divergence->event + 1 >= moved_switch);
  CHECK(report->divergence->event <= moved_switch);
  std::filesystem::remove(path);
}
