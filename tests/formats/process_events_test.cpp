// Role: tests that fork and exec events (events::ProcessEvent) read back
// whole from every format that carries them: UCIR's OP_PROCESS, BAP frames'
// exception frame with tracecorn_process_*, the binary trace's "process"
// other event; with names holding spaces, colons and digits, an empty trace
// (an image not recorded) and the event's thread. The recorder's own path
// (Recorder::process_event through the ring) and the CLI's naming are
// checked by the behaviour tests that record busybox sh pipelines. The trace
// index keeps them (the debugger's fork and exec stops), saved and loaded. A
// damaged OP_PROCESS is refused with its offset.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "formats/registry.h"
#include "recorder/replay/process_tree.h"
#include "recorder/replay/trace_index.h"
#include "recorder/replay/trace_reader.h"
#include "tests/formats/sample_recording.h"
#include "tests/formats/test_files.h"
#include "tests/support/error_text.h"

using namespace tracecorn;

namespace {

const std::string kHello = std::string(TRACECORN_SAMPLES_DIR) + "/static/hello";

struct ProcessCopy {
  events::ProcessChange change;
  std::uint64_t pid;
  std::string trace, detail;
  std::uint32_t thread;
  friend bool operator==(const ProcessCopy&, const ProcessCopy&) = default;
};

// The events a recording of kHello gets after its first syscall (as the
// recorder writes them: after the syscall's record), on the process's thread.
std::vector<ProcessCopy> injected(std::uint32_t pid, const std::string& first_trace = "t.ucir.4242") {
  return {{events::ProcessChange::kForked, 4242, first_trace, "clone", pid},
          {events::ProcessChange::kForked, 4243, "", "vfork", pid},  // not recorded (standard output)
          {events::ProcessChange::kForked, 4244, "my trace: 2 words.4244", "clone3", pid},
          {events::ProcessChange::kExecuted, pid, "t.ucir." + std::to_string(pid) + ".1", "/bin/sh script 1:2", pid}};
}

// Forwards every event to `out`, and the injected ones after the first syscall.
class ProcessInjector final : public events::Sink {
 public:
  explicit ProcessInjector(events::Sink& out, std::string first_trace = "t.ucir.4242")
      : out_(out), first_trace_(std::move(first_trace)) {}
  void begin(const events::TraceInfo& info) override {
    pid_ = static_cast<std::uint32_t>(info.process_id);
    out_.begin(info);
  }
  void on_event(const events::Event& event) override {
    events::Event copy = event;
    copy.sequence = events::EventSequence{sequence_++};
    out_.on_event(copy);
    if (event.kind != events::EventKind::kSyscall || done_) return;
    done_ = true;
    for (const ProcessCopy& change : injected(pid_, first_trace_)) {
      events::Event process;
      process.sequence = events::EventSequence{sequence_++};
      process.thread = events::ThreadId{change.thread};
      process.kind = events::EventKind::kProcess;
      process.payload = events::ProcessEvent{change.change, change.pid, change.trace, change.detail};
      out_.on_event(process);
    }
  }
  std::string end(const events::TraceSummary& summary) override {
    events::TraceSummary total = summary;
    total.events = sequence_;
    return out_.end(total);
  }
  std::uint32_t pid() const { return pid_; }

 private:
  events::Sink& out_;
  std::string first_trace_;
  std::uint32_t pid_ = 0;
  std::uint64_t sequence_ = 0;
  bool done_ = false;
};

// Records kHello into `format` at `path` with the injected events; returns the pid.
std::uint32_t record_with_process_events(std::string_view format, const std::string& path, core::TraceLevel level,
                                         bool ucir_strict = false, const std::string& first_trace = "t.ucir.4242") {
  std::unique_ptr<events::Sink> writer;
  std::unique_ptr<ProcessInjector> injector;
  auto run = test::record_sample(kHello, level, [&](linux_layer::LinuxProcess& process) -> std::vector<events::Sink*> {
    formats::WriterRequest request;
    request.path = path;
    request.arch = &process.arch();
    request.ucir_strict = ucir_strict;
    auto opened = formats::open_writer(format, std::move(request));
    REQUIRE_MESSAGE(opened.has_value(), tracecorn::test_support::error_text(opened));
    writer = std::move(*opened);
    injector = std::make_unique<ProcessInjector>(*writer, first_trace);
    return {injector.get()};
  });
  CHECK(run.finish_error.empty());
  return injector->pid();
}

// The process events of the `format` trace at `path`, with the kind of the event before each.
std::vector<ProcessCopy> read_process_events(std::string_view format, const std::string& path,
                                             std::vector<events::EventKind>& before) {
  const formats::FormatDescriptor* descriptor = formats::find_format(format);
  REQUIRE((descriptor && descriptor->open_reader));
  auto reader = descriptor->open_reader(path);
  REQUIRE(reader.has_value());
  std::vector<ProcessCopy> found;
  events::EventKind last = events::EventKind::kBlock;
  for (;;) {
    auto more = (*reader)->next([&](const events::Event& event) {
      if (const auto* change = std::get_if<events::ProcessEvent>(&event.payload)) {
        found.push_back({change->change, change->pid, std::string(change->trace), std::string(change->detail),
                         event.thread.value});
        before.push_back(last);
      }
      last = event.kind;
    });
    REQUIRE_MESSAGE(more.has_value(), tracecorn::test_support::error_text(more));
    if (!*more) break;
  }
  return found;
}

}  // namespace

TEST_CASE("Formats: fork and exec events read back whole from UCIR, BAP frames and the binary trace") {
  struct Case {
    const char* format;
    core::TraceLevel level;
  };
  for (const Case& c : {Case{"ucir", core::TraceLevel::kBlocks}, Case{"ucir", core::TraceLevel::kFull},
                        Case{"frames", core::TraceLevel::kFull}, Case{"bintrace", core::TraceLevel::kRegisters}}) {
    CAPTURE(c.format);
    CAPTURE(core::trace_level_name(c.level));
    const std::string path = test::temp_file("process", c.format);
    const std::uint32_t pid = record_with_process_events(c.format, path, c.level);
    REQUIRE(pid != 0);
    std::vector<events::EventKind> before;
    const auto found = read_process_events(c.format, path, before);
    CHECK(found == injected(pid));
    // Each follows the syscall it was written after, or the one before it.
    for (const auto kind : before) CHECK((kind == events::EventKind::kSyscall || kind == events::EventKind::kProcess));
    std::filesystem::remove(path);
  }
}

TEST_CASE("Formats: --ucir-strict leaves fork and exec events out (OP_PROCESS is ours)") {
  const std::string path = test::temp_file("process", "strict.ucir");
  record_with_process_events("ucir", path, core::TraceLevel::kBlocks, true);
  std::vector<events::EventKind> before;
  CHECK(read_process_events("ucir", path, before).empty());
  std::filesystem::remove(path);
}

TEST_CASE("Malicious: a damaged OP_PROCESS is refused with its offset, a cut one ends the trace before its frame") {
  const std::string path = test::temp_file("process", "damaged.ucir");
  record_with_process_events("ucir", path, core::TraceLevel::kBlocks);
  const test::Bytes whole = test::slurp(path);
  const std::string marker = "t.ucir.4242";
  const auto found = std::search(whole.begin(), whole.end(), marker.begin(), marker.end());
  REQUIRE(found != whole.end());
  // OP_PROCESS: op u8, change u8, pid u64, tlen u16, then the trace's name.
  const auto name_at = static_cast<std::size_t>(found - whole.begin());
  const std::size_t op_at = name_at - 2 - 8 - 1 - 1;
  REQUIRE(whole[op_at] == 0x83);
  auto read_error = [&](const test::Bytes& bytes) {
    std::ofstream(path, std::ios::binary | std::ios::trunc)
        .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    auto reader = formats::find_format("ucir")->open_reader(path);
    if (!reader) return reader.error().to_string();
    for (;;) {
      auto more = (*reader)->next([](const events::Event&) {});
      if (!more) return more.error().to_string();
      if (!*more) return "warning: " + (*reader)->warning();
    }
  };
  test::Bytes damaged = whole;
  damaged[op_at + 1] = 3;
  const std::string refused = read_error(damaged);
  CHECK_MESSAGE(refused.find("OP_PROCESS change 3 (expected 1 forked or 2 exec'd)") != std::string::npos, refused);
  CHECK_MESSAGE(refused.find(fmt::format("{:#x}", op_at)) != std::string::npos, refused);
  // A name longer than what is left of the file: a cut, read up to the frame before.
  const test::Bytes cut(whole.begin(), whole.begin() + static_cast<std::ptrdiff_t>(name_at + 4));
  const std::string ended = read_error(cut);
  CHECK_MESSAGE(ended.rfind("warning: ", 0) == 0, ended);
  CHECK(ended.size() > std::string("warning: ").size());
  std::filesystem::remove(path);
}

TEST_CASE("Malicious: a fork event naming a trace outside its directory is refused by the process-tree reader") {
  const std::string path = test::temp_file("process", "escape.ucir");
  record_with_process_events("ucir", path, core::TraceLevel::kBlocks, false, "../../etc/passwd");
  auto tree = replay::read_process_tree(path);
  REQUIRE_FALSE(tree.has_value());
  const std::string message = tree.error().to_string();
  CHECK_MESSAGE(message.find("names the trace \"../../etc/passwd\", which is not a file name beside this trace") !=
                    std::string::npos,
                message);
  CHECK(message.find(path) != std::string::npos);
  std::filesystem::remove(path);
}

TEST_CASE("Malicious: a BAP frames process change out of range is refused with the frame and its offset") {
  const std::string path = test::temp_file("process", "damaged.frames");
  record_with_process_events("frames", path, core::TraceLevel::kFull);
  test::Bytes bytes = test::slurp(path);
  // tracecorn_process_change = 1 (forked): field 1014, varint: key bytes b0 3f, then 01.
  const std::uint8_t change_field[] = {0xb0, 0x3f, 0x01};
  const auto found = std::search(bytes.begin(), bytes.end(), std::begin(change_field), std::end(change_field));
  REQUIRE(found != bytes.end());
  *(found + 2) = 3;
  std::ofstream(path, std::ios::binary | std::ios::trunc)
      .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  auto reader = formats::find_format("frames")->open_reader(path);
  REQUIRE(reader.has_value());
  std::string refused;
  for (;;) {
    auto more = (*reader)->next([](const events::Event&) {});
    if (!more) {
      refused = more.error().to_string();
      break;
    }
    REQUIRE(*more);  // the damaged frame comes before the end
  }
  CHECK_MESSAGE(refused.find("process change 3 (expected 1 forked or 2 exec'd)") != std::string::npos, refused);
  CHECK(refused.find("exception frame") != std::string::npos);
  CHECK(refused.find(path) != std::string::npos);
  std::filesystem::remove(path);
}

TEST_CASE("Replay: the trace index keeps the fork and exec events, and its saved copy too") {
  const std::string path = test::temp_file("process", "indexed.ucir");
  const std::uint32_t pid = record_with_process_events("ucir", path, core::TraceLevel::kFull);
  auto reader = replay::TraceReader::open(path);
  REQUIRE(reader.has_value());
  auto built = replay::TraceIndex::build(**reader);
  REQUIRE_MESSAGE(built.has_value(), tracecorn::test_support::error_text(built));
  auto as_copies = [&](const replay::TraceIndex& index) {
    std::vector<ProcessCopy> copies;
    for (const auto& change : index.process_changes())
      copies.push_back({change.change, change.pid, change.trace, change.detail, pid});
    return copies;
  };
  CHECK(as_copies(**built) == injected(pid));
  const auto& changes = (*built)->process_changes();
  REQUIRE(changes.size() == 4);
  for (std::size_t i = 1; i < changes.size(); ++i) CHECK(changes[i].event == changes[i - 1].event + 1);
  auto identity = replay::identify_trace(path);
  REQUIRE(identity.has_value());
  const std::string saved = path + ".tcindex";
  REQUIRE((*built)->save(saved, *identity).has_value());
  auto loaded = replay::TraceIndex::load(saved, *identity, (*built)->arch());
  REQUIRE_MESSAGE(loaded.has_value(), tracecorn::test_support::error_text(loaded));
  CHECK(as_copies(**loaded) == injected(pid));
  for (std::size_t i = 0; i < changes.size(); ++i) CHECK((*loaded)->process_changes()[i].event == changes[i].event);
  std::filesystem::remove(saved);
  std::filesystem::remove(path);
}
