// Role: tests of the trace tools (recorder/replay/trace_tools.h): stat against
// the recorder's own events; conversions against the traces the recorder wrote
// directly in the target format, and replayed; the drcov file through a parser
// written here from drcov's published layout (DynamoRIO's drcov documentation:
// a text header, module table, "BB Table: N bbs", N 8-byte bb_entry_t records);
// the Chrome JSON through Debian's Python json module; damaged traces through
// every tool give errors with byte offsets.
#include <doctest/doctest.h>

#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>

#include "recorder/replay/trace_tools.h"
#include "tests/formats/roundtrip_helpers.h"
#include "tests/recorder/replay/replay_test_helpers.h"
#include "tests/support/error_text.h"

using namespace tracecorn;
using replay::TraceFormat;
using replay::TraceReader;

namespace {

struct Recorded {
  std::string ucir, frames, bintrace;
  std::unique_ptr<test::CopySink> probe;
};

Recorded record_hello() {
  Recorded r;
  r.ucir = test::replay_temp_path("tools.ucir");
  r.frames = test::replay_temp_path("tools.frames");
  r.bintrace = test::replay_temp_path("tools.bt");
  r.probe = std::make_unique<test::CopySink>([](events::EventKind) { return true; });
  test::record_files(test::kReplaySamples + "/static/hello", core::TraceLevel::kFull,
                     {{TraceFormat::kUcir, r.ucir}, {TraceFormat::kFrames, r.frames}, {TraceFormat::kBintrace, r.bintrace}},
                     {r.probe.get()});
  return r;
}

std::vector<test::Copied> read_all(const std::string& path) {
  auto reader = TraceReader::open(path);
  REQUIRE_MESSAGE(reader.has_value(), tracecorn::test_support::error_text(reader));
  test::CopySink sink([](events::EventKind) { return true; });
  const auto status = (*reader)->read_all(sink);
  REQUIRE_MESSAGE(status.has_value(), tracecorn::test_support::error_text(status));
  return sink.events_;
}

// The events of `kinds`, projected on what every format keeps.
std::vector<std::string> projection(const std::vector<test::Copied>& events, std::set<events::EventKind> kinds) {
  std::vector<std::string> out;
  for (const auto& e : events) {
    if (!kinds.count(e.kind)) continue;
    std::string text = std::to_string(static_cast<int>(e.kind)) + ":" + std::to_string(e.address);
    if (e.kind == events::EventKind::kMemoryWrite) text += "=" + std::to_string(e.value) + "/" + std::to_string(e.size);
    if (e.kind == events::EventKind::kSyscall) {
      text += "#" + std::to_string(e.value) + "=" + std::to_string(e.result);
      for (const auto& [at, bytes] : e.writes) text += " w" + std::to_string(at) + "+" + std::to_string(bytes.size());
    }
    out.push_back(text);
  }
  return out;
}

std::string run_python(const std::string& script, const std::string& argument) {
  const std::string command = "/usr/bin/python3 -c '" + script + "' " + argument + " 2>&1";
  std::string out;
  FILE* pipe = popen(command.c_str(), "r");
  REQUIRE(pipe);
  char buffer[512];
  while (std::fgets(buffer, sizeof buffer, pipe)) out += buffer;
  CHECK(pclose(pipe) == 0);
  return out;
}

}  // namespace

TEST_CASE("Trace tools: stat counts what the recorder produced") {
  auto r = record_hello();
  for (const auto& path : {r.ucir, r.frames, r.bintrace}) {
    CAPTURE(path);
    auto reader = TraceReader::open(path);
    REQUIRE(reader.has_value());
    auto stats = replay::compute_stats(**reader);
    REQUIRE(stats.has_value());
    std::uint64_t expected[events::kEventKindCount] = {};
    std::map<std::string, std::uint64_t> syscalls;
    for (const auto& e : r.probe->events_) {
      if (!(*reader)->capabilities().carries(e.kind)) continue;
      ++expected[static_cast<int>(e.kind)];
    }
    for (std::size_t k = 1; k < events::kEventKindCount; ++k) CHECK(stats->count[k] == expected[k]);
    CHECK(stats->instructions == expected[static_cast<int>(events::EventKind::kInstruction)]);
    std::uint64_t syscall_total = 0;
    for (const auto& [name, calls] : stats->syscalls) syscall_total += calls;
    CHECK(syscall_total == expected[static_cast<int>(events::EventKind::kSyscall)]);
    CHECK(stats->syscalls.at("write") == 2);  // hello writes to stdout and stderr
    CHECK(!stats->block_hits.empty());
    CHECK(stats->file_bytes > 0);
  }
}

TEST_CASE("Trace tools: conversions give the events the target format would have recorded, and replay") {
  auto r = record_hello();
  const std::string program = test::kReplaySamples + "/static/hello";
  using K = events::EventKind;
  SUBCASE("UCIR to binary trace: the same events as the binary trace recorded directly") {
    const std::string out = test::replay_temp_path("conv.bt");
    auto lost = replay::convert_trace(r.ucir, out, TraceFormat::kBintrace, true);
    REQUIRE_MESSAGE(lost.has_value(), tracecorn::test_support::error_text(lost));
    CHECK(std::find(lost->begin(), lost->end(), "bintrace cannot carry block events") != lost->end());
    const std::set<K> kinds = {K::kInstruction, K::kMemoryWrite, K::kSyscall, K::kExit};
    CHECK(projection(read_all(out), kinds) == projection(read_all(r.bintrace), kinds));
    test::check_replay_matches(out, program);
    std::filesystem::remove(out);
  }
  SUBCASE("binary trace to UCIR (blocks made up): the same instructions, writes and syscalls as UCIR recorded") {
    const std::string out = test::replay_temp_path("conv.ucir");
    auto lost = replay::convert_trace(r.bintrace, out, TraceFormat::kUcir, false);
    REQUIRE_MESSAGE(lost.has_value(), tracecorn::test_support::error_text(lost));
    const std::set<K> kinds = {K::kInstruction, K::kMemoryWrite, K::kSyscall, K::kExit};
    CHECK(projection(read_all(out), kinds) == projection(read_all(r.ucir), kinds));
    test::check_replay_matches(out, program);
    std::filesystem::remove(out);
  }
  SUBCASE("UCIR to BAP frames and back to UCIR: the frames the recorder wrote, and the UCIR events again") {
    const std::string frames = test::replay_temp_path("conv.frames"), back = test::replay_temp_path("conv2.ucir");
    REQUIRE(replay::convert_trace(r.ucir, frames, TraceFormat::kFrames, false).has_value());
    const std::set<K> kinds = {K::kInstruction, K::kMemoryWrite, K::kMemoryRead, K::kSyscall};
    CHECK(projection(read_all(frames), kinds) == projection(read_all(r.frames), kinds));
    test::check_replay_matches(frames, program);
    REQUIRE(replay::convert_trace(frames, back, TraceFormat::kUcir, true).has_value());
    const std::set<K> back_kinds = {K::kInstruction, K::kMemoryWrite, K::kSyscall};
    CHECK(projection(read_all(back), back_kinds) == projection(read_all(r.ucir), back_kinds));
    std::filesystem::remove(frames);
    std::filesystem::remove(back);
  }
  SUBCASE("a binary trace needs registers: a blocks-level UCIR is refused with the reason") {
    const std::string blocks = test::replay_temp_path("blocks.ucir");
    test::record_files(program, core::TraceLevel::kBlocks, {{TraceFormat::kUcir, blocks}});
    auto refused = replay::convert_trace(blocks, test::replay_temp_path("no.bt"), TraceFormat::kBintrace, false);
    REQUIRE(!refused.has_value());
    CHECK(refused.error().message.find("registers") != std::string::npos);
    std::filesystem::remove(blocks);
  }
}

TEST_CASE("Trace tools: the drcov export parses as drcov and covers exactly the executed blocks") {
  auto r = record_hello();
  std::set<std::uint64_t> executed;
  for (const auto& e : r.probe->events_)
    if (e.kind == events::EventKind::kInstruction) executed.insert(e.address);
  for (const auto& path : {r.ucir, r.frames, r.bintrace}) {
    CAPTURE(path);
    const std::string out = test::replay_temp_path("cov.drcov");
    auto written = replay::export_drcov(path, out);
    REQUIRE_MESSAGE(written.has_value(), tracecorn::test_support::error_text(written));
    // The parser: from drcov's documented layout, nothing shared with the writer.
    std::ifstream in(out, std::ios::binary);
    std::string line;
    std::getline(in, line);
    CHECK(line == "DRCOV VERSION: 2");
    std::getline(in, line);
    CHECK(line.rfind("DRCOV FLAVOR: ", 0) == 0);
    std::getline(in, line);
    unsigned version = 0, modules = 0;
    REQUIRE(std::sscanf(line.c_str(), "Module Table: version %u, count %u", &version, &modules) == 2);
    CHECK(version == 2);
    REQUIRE(modules >= 1);
    std::getline(in, line);
    CHECK(line.rfind("Columns: id, base, end", 0) == 0);
    std::vector<std::pair<std::uint64_t, std::uint64_t>> bases;
    for (unsigned i = 0; i < modules; ++i) {
      std::getline(in, line);
      unsigned id = 0;
      unsigned long long base = 0, end = 0;
      REQUIRE(std::sscanf(line.c_str(), " %u, %llx, %llx,", &id, &base, &end) == 3);
      CHECK(id == i);
      CHECK(line.find("hello") != std::string::npos);
      bases.push_back({base, end});
    }
    std::getline(in, line);
    unsigned long long count = 0;
    REQUIRE(std::sscanf(line.c_str(), "BB Table: %llu bbs", &count) == 1);
    CHECK(count == *written);
    std::set<std::uint64_t> covered;
    for (unsigned long long i = 0; i < count; ++i) {
      unsigned char record[8];
      REQUIRE(in.read(reinterpret_cast<char*>(record), 8));
      const std::uint32_t start = record[0] | record[1] << 8 | record[2] << 16 | static_cast<std::uint32_t>(record[3]) << 24;
      const std::uint16_t size = static_cast<std::uint16_t>(record[4] | record[5] << 8);
      const std::uint16_t module = static_cast<std::uint16_t>(record[6] | record[7] << 8);
      REQUIRE(module < bases.size());
      CHECK(size > 0);
      const std::uint64_t address = bases[module].first + start;
      CHECK(executed.count(address) == 1);  // every block starts at an executed instruction
      covered.insert(address);
    }
    CHECK(in.peek() == EOF);
    // Every executed instruction of the program lies in a covered block (blocks are at most 64 KiB).
    for (const std::uint64_t address : executed) {
      if (address < bases[0].first || address >= bases[0].second) continue;
      auto it = covered.upper_bound(address);
      REQUIRE(it != covered.begin());
    }
    std::filesystem::remove(out);
  }
}

TEST_CASE("Trace tools: the Chrome trace-event JSON is valid and holds every syscall with its stack") {
  auto r = record_hello();
  std::vector<std::string> names;
  for (const auto& e : r.probe->events_)
    if (e.kind == events::EventKind::kSyscall) names.push_back(std::to_string(e.value));
  for (const auto& path : {r.ucir, r.frames, r.bintrace}) {
    CAPTURE(path);
    const std::string out = test::replay_temp_path("trace.json");
    REQUIRE(replay::export_chrome(path, out).has_value());
    // Debian's json module parses it; print the syscall numbers in order and check the fields.
    const std::string printed = run_python(
        "import json, sys\n"
        "d = json.load(open(sys.argv[1]))\n"
        "calls = [e for e in d[\"traceEvents\"] if e.get(\"cat\") == \"syscall\"]\n"
        "assert all(e[\"ph\"] == \"X\" and isinstance(e[\"args\"][\"stack\"], list) and len(e[\"args\"][\"args\"]) == 6 for e in calls)\n"
        "assert [e[\"ts\"] for e in calls] == sorted(e[\"ts\"] for e in calls)\n"
        "print(\" \".join(str(e[\"args\"][\"number\"]) for e in calls))\n",
        out);
    std::string expected;
    for (const auto& n : names) expected += (expected.empty() ? "" : " ") + n;
    CHECK(printed == expected + "\n");
    std::filesystem::remove(out);
  }
}

TEST_CASE("Malicious: damaged traces through every tool give errors with byte offsets") {
  auto r = record_hello();
  for (const auto& path : {r.ucir, r.frames, r.bintrace}) {
    CAPTURE(path);
    std::ifstream in(path, std::ios::binary);
    std::vector<char> bytes{std::istreambuf_iterator<char>(in), {}};
    // Garbage over the events (near the end of the file).
    for (std::size_t i = bytes.size() - bytes.size() / 100; i < bytes.size() - bytes.size() / 100 + 64; ++i) bytes[i] = static_cast<char>(0xff);
    const std::string damaged = test::replay_temp_path("damaged");
    std::ofstream(damaged, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    auto reader = TraceReader::open(damaged);
    REQUIRE(reader.has_value());
    auto stats = replay::compute_stats(**reader);
    const auto drcov = replay::export_drcov(damaged, test::replay_temp_path("d.drcov"));
    const auto chrome = replay::export_chrome(damaged, test::replay_temp_path("d.json"));
    const auto converted = replay::convert_trace(damaged, test::replay_temp_path("d.ucir"), TraceFormat::kUcir, false);
    replay::ReplayOptions options;
    options.program = test::kReplaySamples + "/static/hello";
    const auto replayed = replay::replay_trace(damaged, options);
    // Each either fails with an offset, or (a reader that stops at the damage
    // with a warning) reads fewer events; none crashes.
    for (const Error* error : {stats ? nullptr : &stats.error(), drcov ? nullptr : &drcov.error(),
                               chrome ? nullptr : &chrome.error(), converted ? nullptr : &converted.error(),
                               replayed ? nullptr : &replayed.error()})
      if (error) CHECK_MESSAGE(error->offset.has_value(), error->to_string());
    // And the damage is noticed: an error, a warning, or a divergence.
    const bool noticed = !stats || !drcov || !chrome || !converted || !replayed || !(*reader)->warning().empty() ||
                         replayed->divergence.has_value();
    CHECK(noticed);
    if (!stats) MESSAGE(stats.error().to_string());
    std::filesystem::remove(damaged);
  }
}

namespace {

// The files beside `path` whose names start with its name: the output itself
// and any temporary file a tool wrote beside it.
std::set<std::string> files_named_like(const std::string& path) {
  const std::filesystem::path target(path);
  const std::string name = target.filename().string();
  std::set<std::string> found;
  for (const auto& entry : std::filesystem::directory_iterator(target.parent_path()))
    if (entry.path().filename().string().rfind(name, 0) == 0) found.insert(entry.path().string());
  return found;
}

std::string slurp_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

// Runs `tool` ("ucir", "frames", "bintrace", "drcov" or "chrome") from `in` to `out`.
Status run_tool(const std::string& tool, const std::string& in, const std::string& out) {
  Status status = ok_status();
  auto keep = [&](const auto& result) {
    if (!result) status = result.error();
  };
  if (tool == "drcov") keep(replay::export_drcov(in, out));
  else if (tool == "chrome") keep(replay::export_chrome(in, out));
  else if (tool == "ucir") keep(replay::convert_trace(in, out, TraceFormat::kUcir, false));
  else if (tool == "frames") keep(replay::convert_trace(in, out, TraceFormat::kFrames, true));
  else keep(replay::convert_trace(in, out, TraceFormat::kBintrace, false));
  return status;
}

// Keeps what read_all() gives a sink at its end.
struct SummarySink final : events::Sink {
  void begin(const events::TraceInfo&) override {}
  void on_event(const events::Event&) override {}
  std::string end(const events::TraceSummary& given) override {
    summary = given;
    ended = true;
    return "";
  }
  events::TraceSummary summary;
  bool ended = false;
};

}  // namespace

TEST_CASE("Trace tools: a conversion or export that fails leaves no output, no temporary file, and an older file as it was") {
  auto r = record_hello();
  const std::vector<std::string> tools = {"ucir", "frames", "bintrace", "drcov", "chrome"};
  for (const auto& path : {r.ucir, r.frames, r.bintrace}) {
    CAPTURE(path);
    // Cut in its middle: every reader reads the first half, then fails.
    const std::string whole = slurp_text(path);
    const std::string damaged = test::replay_temp_path("half");
    std::ofstream(damaged, std::ios::binary).write(whole.data(), static_cast<std::streamsize>(whole.size() / 2));
    for (const auto& tool : tools) {
      CAPTURE(tool);
      const std::string out = test::replay_temp_path("failed-" + tool);
      std::filesystem::remove(out);
      const Status status = run_tool(tool, damaged, out);
      REQUIRE_FALSE(status.has_value());
      CHECK_MESSAGE(status.error().to_string().find(damaged) != std::string::npos, status.error().to_string());
      CHECK(files_named_like(out).empty());
      // A file already at `out` stays as it was.
      std::ofstream(out, std::ios::binary) << "an older file";
      CHECK_FALSE(run_tool(tool, damaged, out).has_value());
      CHECK(slurp_text(out) == "an older file");
      CHECK(files_named_like(out) == std::set<std::string>{out});
      std::filesystem::remove(out);
    }
    std::filesystem::remove(damaged);
  }
  // One that succeeds leaves exactly its output, in place of the older file.
  for (const auto& tool : tools) {
    CAPTURE(tool);
    const std::string out = test::replay_temp_path("done-" + tool);
    std::ofstream(out, std::ios::binary) << "an older file";
    const Status status = run_tool(tool, r.ucir, out);
    REQUIRE_MESSAGE(status.has_value(), tracecorn::test_support::error_text(status));
    CHECK(files_named_like(out) == std::set<std::string>{out});
    CHECK(slurp_text(out) != "an older file");
    if (tool != "drcov" && tool != "chrome") CHECK(TraceReader::open(out).has_value());
    std::filesystem::remove(out);
  }
}

TEST_CASE("Trace tools: a trace that ends early is not called interrupted; only an interrupted recording is") {
  auto r = record_hello();
  for (const auto& path : {r.ucir, r.frames}) {
    CAPTURE(path);
    const std::string whole = slurp_text(path);
    const std::string damaged = test::replay_temp_path("ends-early");
    std::ofstream(damaged, std::ios::binary).write(whole.data(), static_cast<std::streamsize>(whole.size() / 2));
    auto reader = TraceReader::open(damaged);
    REQUIRE_MESSAGE(reader.has_value(), tracecorn::test_support::error_text(reader));
    SummarySink sink;
    const Status status = (*reader)->read_all(sink);
    REQUIRE_MESSAGE(status.has_value(), tracecorn::test_support::error_text(status));  // read up to the cut, with a warning
    CHECK(sink.ended);
    CHECK_FALSE((*reader)->ended_early().empty());
    CHECK_FALSE(sink.summary.interrupted);
    CHECK_FALSE((*reader)->check_complete().has_value());
    std::filesystem::remove(damaged);
  }
  // A whole recording reads as not interrupted, and so does its conversion.
  const std::string out = test::replay_temp_path("not-interrupted.ucir");
  REQUIRE(replay::convert_trace(r.frames, out, TraceFormat::kUcir, false).has_value());
  for (const auto& path : {r.ucir, out}) {
    auto reader = TraceReader::open(path);
    REQUIRE(reader.has_value());
    SummarySink sink;
    REQUIRE((*reader)->read_all(sink).has_value());
    CHECK_FALSE(sink.summary.interrupted);
    CHECK_FALSE((*reader)->interrupted());
  }
  std::filesystem::remove(out);
}

TEST_CASE("Trace tools: drcov of a trace with no block writes an empty BB table") {
  // A UCIR trace of one file-backed region and no event at all.
  const auto& arch = arch::x86_64_arch();
  events::TraceInfo info;
  info.arch_name = arch.name;
  info.level = "blocks";
  info.has_initial_state = true;
  events::InitialRegion region;
  region.start = events::GuestAddress{0x400000};
  region.size = 0x1000;
  region.prot = 5;
  region.bytes.assign(0x1000, 0);
  region.name = "code";
  region.file = "/bin/empty";
  info.initial_memory.push_back(region);
  const std::string trace = test::replay_temp_path("no-blocks.ucir");
  {
    auto writer = test::open_writer(TraceFormat::kUcir, trace, arch, false);
    writer->begin(info);
    REQUIRE(writer->end({}).empty());
  }
  const std::string out = test::replay_temp_path("no-blocks.drcov");
  auto written = replay::export_drcov(trace, out);
  REQUIRE_MESSAGE(written.has_value(), tracecorn::test_support::error_text(written));
  CHECK(*written == 0);
  const std::string text = slurp_text(out);
  CHECK(text.find("Module Table: version 2, count 1\n") != std::string::npos);
  CHECK(text.size() >= 16);
  CHECK(text.substr(text.size() - 16) == "BB Table: 0 bbs\n");
  std::filesystem::remove(trace);
  std::filesystem::remove(out);
}
