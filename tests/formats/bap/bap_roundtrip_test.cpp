// Role: BAP frames round trips on real guest programs: each sample (every
// static one but heap and stdio_buffered, plus hello dynamic) is recorded once
// at the full level with both a probe sink and the frames writer attached to the
// same recording; the file is read back and the two event sequences are
// compared on every field frames carry (instructions with their bytes, memory
// accesses with values and pc_known, register changes, syscalls with results,
// effects and call stacks, faults, modules, gaps; not blocks and exits, which
// have no frame). hello also goes through the lower levels and zstd, and one
// trace is decoded by an independent decoder (frames_decode.py: Debian's
// python3-protobuf on a .proto generated from its own field table).
// Long runs (heap: 40 million instructions; stdio_buffered: 4.5 million) are
// compared as they stream (their own ctest, bap_roundtrip_long_runs): each side
// folds its events, projected on the fields compare() checks and normalized the
// same way, into one digest per 64 Ki events.
#include <doctest/doctest.h>

#include <unistd.h>

#include <csignal>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "formats/bap/bap_reader.h"
#include "formats/bap/bap_writer.h"
#include "tests/formats/roundtrip_helpers.h"
#include "tests/support/architectures.h"
#include "tests/support/test_case_per_row.h"
#include "tests/support/error_text.h"

using namespace tracecorn;

namespace {

const std::string kSamples = TRACECORN_SAMPLES_DIR;
using test::Copied;
using test::CopySink;

// Within each run of memory events, attributed reads, then attributed writes,
// then unattributed accesses (frames carry reads and writes in two lists; the
// interleaving of a rep string instruction's accesses is not carried).
std::vector<Copied> normalized(std::vector<Copied> events) {
  auto is_memory = [](const Copied& e) {
    return e.kind == events::EventKind::kMemoryRead || e.kind == events::EventKind::kMemoryWrite;
  };
  for (auto run = events.begin(); run != events.end();) {
    if (!is_memory(*run)) {
      ++run;
      continue;
    }
    auto end = std::find_if_not(run, events.end(), is_memory);
    std::stable_sort(run, end, [](const Copied& a, const Copied& b) {
      auto rank = [](const Copied& e) { return !e.pc_known ? 2 : e.kind == events::EventKind::kMemoryRead ? 0 : 1; };
      return rank(a) < rank(b);
    });
    run = end;
  }
  return events;
}

// Compares the recorded and the read events; returns how many differ and describes the first.
std::size_t compare(const std::vector<Copied>& recorded_events, const std::vector<Copied>& read_events,
                    std::string& first) {
  const auto recorded = normalized(recorded_events);
  const auto& read = read_events;
  std::size_t differing = 0;
  auto note = [&](std::size_t i, const char* what) {
    if (first.empty()) first = "event " + std::to_string(i) + ": " + what;
    ++differing;
  };
  if (recorded.size() != read.size()) note(std::min(recorded.size(), read.size()), "the counts differ");
  for (std::size_t i = 0; i < recorded.size() && i < read.size(); ++i) {
    const Copied& a = recorded[i];
    const Copied& b = read[i];
    if (a.kind != b.kind) {
      note(i, "kind");
      break;
    }
    if (a.thread != b.thread) note(i, "thread");
    switch (a.kind) {
      case events::EventKind::kInstruction:
        if (a.address != b.address || a.size != b.size || a.bytes != b.bytes || a.mode != b.mode) note(i, "instruction");
        break;
      case events::EventKind::kMemoryRead:
      case events::EventKind::kMemoryWrite:
        if (a.address != b.address || a.size != b.size || a.value != b.value) note(i, "memory access");
        if (a.pc_known != b.pc_known || (a.pc_known && a.pc != b.pc)) note(i, "memory pc");
        break;
      case events::EventKind::kRegisters:
        if (!test::same_registers(a.registers, b.registers) || a.pc != b.pc) note(i, "registers");
        break;
      case events::EventKind::kSyscall:
        if (a.value != b.value || a.result != b.result || !std::equal(std::begin(a.args), std::end(a.args), b.args) ||
            a.pc != b.pc)
          note(i, "syscall");
        if (a.writes != b.writes || a.mappings != b.mappings || !test::same_registers(a.registers, b.registers) ||
            a.stack != b.stack)
          note(i, "syscall effects");
        break;
      case events::EventKind::kFault:
      case events::EventKind::kModuleLoad:
      case events::EventKind::kGap:
        if (a.address != b.address || a.size != b.size || a.value != b.value || a.pc != b.pc || a.text != b.text)
          note(i, "fault, module or gap");
        break;
      case events::EventKind::kSignal:
      case events::EventKind::kThread:
        if (!test::same_signal_or_thread(a, b)) note(i, a.kind == events::EventKind::kSignal ? "signal" : "thread");
        break;
      default:
        break;
    }
  }
  return differing;
}

// The fields of `e` that compare() checks, as bytes (for the streamed long runs).
std::string canonical(const Copied& e) {
  std::string out;
  auto put = [&](const auto& value) { out.append(reinterpret_cast<const char*>(&value), sizeof value); };
  auto put_registers = [&](const std::vector<events::RegisterValue>& registers) {
    for (const auto& r : registers) {
      put(r.index), put(r.size);
      out.append(reinterpret_cast<const char*>(r.bytes.data()), r.size);
    }
    put(registers.size());
  };
  put(e.kind), put(e.thread);
  switch (e.kind) {
    case events::EventKind::kInstruction:
      put(e.address), put(e.size);
      out.append(e.bytes.begin(), e.bytes.end());
      break;
    case events::EventKind::kMemoryRead:
    case events::EventKind::kMemoryWrite:
      put(e.address), put(e.size), put(e.value), put(e.pc_known);
      if (e.pc_known) put(e.pc);
      break;
    case events::EventKind::kRegisters: put(e.pc), put_registers(e.registers); break;
    case events::EventKind::kSyscall:
      put(e.value), put(e.result), put(e.args), put(e.pc);
      for (const auto& [address, bytes] : e.writes) put(address), put(bytes.size()), out.append(bytes.begin(), bytes.end());
      for (const auto& [kind, start, length, prot] : e.mappings) put(kind), put(start), put(length), put(prot);
      put_registers(e.registers);
      for (const auto pc : e.stack) put(pc);
      break;
    case events::EventKind::kFault:
    case events::EventKind::kModuleLoad:
    case events::EventKind::kGap:
      put(e.address), put(e.size), put(e.value), put(e.pc);
      out += e.text;
      break;
    case events::EventKind::kSignal:
    case events::EventKind::kThread:
      put(e.value), put(e.result), put(e.count), put(e.args[0]), put(e.pc), put(e.address), put(e.size), put(e.pc_known);
      for (const auto& [address, bytes] : e.writes) put(address), put(bytes.size()), out.append(bytes.begin(), bytes.end());
      put_registers(e.registers);
      break;
    default:
      break;
  }
  return out;
}

// Folds the events frames carry into chunk digests as they come, each run of
// memory events normalized first when `normalize` (the recorded side, as
// compare() does with normalized()).
class DigestSink final : public events::Sink {
 public:
  explicit DigestSink(bool normalize) : normalize_(normalize) {}
  void begin(const events::TraceInfo& info) override { info_ = info; }
  void on_event(const events::Event& event) override {
    if (!formats::FramesReader::can_carry(event.kind)) return;
    Copied copy = test::copy_event(event);
    if (normalize_ && (copy.kind == events::EventKind::kMemoryRead || copy.kind == events::EventKind::kMemoryWrite)) {
      memory_run_.push_back(std::move(copy));
      return;
    }
    flush_memory_run();
    digests_.fold(canonical(copy));
  }
  std::string end(const events::TraceSummary&) override {
    flush_memory_run();
    digests_.finish();
    return "";
  }
  events::TraceInfo info_;
  test::ChunkDigests digests_;

 private:
  void flush_memory_run() {
    for (const Copied& e : normalized(std::move(memory_run_))) digests_.fold(canonical(e));
    memory_run_.clear();
  }
  bool normalize_;
  std::vector<Copied> memory_run_;
};

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("tracecorn-bap-rt-" + std::to_string(::getpid()) + "-" + name))
      .string();
}

std::unique_ptr<CopySink> record(const std::string& program, core::TraceLevel level, const std::string& path,
                                 bool zstd, const std::string& scratch_dir) {
  return test::record_sample(program, level, scratch_dir, &formats::FramesReader::can_carry,
                             [&](const arch::ArchInfo& arch) -> std::unique_ptr<events::Sink> {
                               formats::FramesWriterOptions options;
                               options.compress_zstd = zstd;
                               options.frames_per_toc_entry = 1000;  // several TOC entries in a small run
                               auto writer = formats::FramesWriter::open(path, arch, options);
                               REQUIRE(writer.has_value());
                               return std::move(*writer);
                             });
}

// Records, reads back and compares; returns the recorded events.
std::unique_ptr<CopySink> round_trip(const std::string& sample, core::TraceLevel level, bool zstd,
                                     const std::string& path) {
  CAPTURE(sample);
  CAPTURE(core::trace_level_name(level));
  CAPTURE(zstd);
  const auto scratch = std::filesystem::temp_directory_path() / ("tracecorn-bap-dir-" + std::to_string(::getpid()));
  std::filesystem::remove_all(scratch);
  std::filesystem::create_directories(scratch);
  auto recorded = record(kSamples + "/" + sample, level, path, zstd, scratch.string());
  std::filesystem::remove_all(scratch);
  auto reader = formats::FramesReader::open(path);
  REQUIRE_MESSAGE(reader.has_value(), tracecorn::test_support::error_text(reader));
  CHECK((*reader)->header().zstd == zstd);
  CHECK((*reader)->header().version == 3);
  // Our TOC is read and checked on plain files (a zstd stream cannot seek).
  CHECK(((*reader)->header().toc_layout == formats::FramesHeader::TocLayout::kOurs) == !zstd);
  const auto& info = (*reader)->info();
  REQUIRE(info.initial_registers.size() == recorded->info_.initial_registers.size());
  CHECK(test::same_registers(info.initial_registers, recorded->info_.initial_registers));
  CHECK(info.program == kSamples + "/" + sample);
  CopySink read(&formats::FramesReader::can_carry);
  const auto status = (*reader)->read_all(read);
  REQUIRE_MESSAGE(status.has_value(), tracecorn::test_support::error_text(status));
  CHECK_MESSAGE((*reader)->warning().empty(), (*reader)->warning());
  std::string first;
  const std::size_t differing = compare(recorded->events_, read.events_, first);
  CHECK_MESSAGE(differing == 0, first);
  CHECK(read.events_.size() > 100);
  return recorded;
}

// Reads `path` back and compares its events with `recorded`'s; returns what was read.
CopySink read_back_and_compare(const std::string& path, const CopySink& recorded) {
  CopySink read(&formats::FramesReader::can_carry);
  auto reader = formats::FramesReader::open(path);
  REQUIRE(reader.has_value());
  REQUIRE((*reader)->read_all(read).has_value());
  std::string first;
  CHECK_MESSAGE(compare(recorded.events_, read.events_, first) == 0, first);
  return read;
}

std::vector<std::string> split(const std::string& line, char separator) {
  std::vector<std::string> parts;
  std::stringstream stream(line);
  for (std::string part; std::getline(stream, part, separator);) parts.push_back(part);
  return parts;
}

// The output lines of `command` (a shell command line); fails the test when it fails.
std::vector<std::string> command_lines(const std::string& command) {
  std::FILE* pipe = ::popen(command.c_str(), "r");
  REQUIRE(pipe);
  std::vector<std::string> lines;
  char buffer[1 << 16];
  std::string pending;
  while (std::fgets(buffer, sizeof buffer, pipe)) {
    pending += buffer;
    if (!pending.empty() && pending.back() == '\n') {
      pending.pop_back();
      lines.push_back(pending);
      pending.clear();
    }
  }
  REQUIRE_MESSAGE(::pclose(pipe) == 0, command);
  return lines;
}

// The frames of `path` as the independent decoder prints them (it also checks n, T and the TOC).
std::vector<std::string> decoded_frames(const std::string& path) {
  return command_lines(std::string("/usr/bin/python3 ") + TRACECORN_BAP_DECODER + " " + path);
}

std::uint64_t little_endian(const std::string& hex_bytes) {
  std::uint64_t value = 0;
  for (std::size_t i = 0; i + 1 < hex_bytes.size() && i < 16; i += 2)
    value |= std::stoull(hex_bytes.substr(i, 2), nullptr, 16) << (4 * i);
  return value;
}

}  // namespace

TEST_CASE("BAP frames: recording, writing and reading back gives the same events (every sample, full level)") {
  const std::vector<std::string> samples = test::all_samples(kSamples);
  REQUIRE(samples.size() >= 16);
  const std::string path = temp_path("all.frames");
  for (const std::string& sample : samples) {
    // heap (40 million instructions) and stdio_buffered (4.5 million) are left
    // out: the comparison copies every event of both sides, and the other
    // samples cover the same instructions, syscalls and faults.
    if (sample.find("heap") != std::string::npos || sample.find("stdio_buffered") != std::string::npos) continue;
    round_trip(sample, core::TraceLevel::kFull, false, path);
  }
  std::filesystem::remove(path);
}

// thread_id in every frame: each event comes back on the thread it ran on.
// A long run (bap_roundtrip_long_runs): about two minutes at the full level.
TEST_CASE("BAP frames long runs: the samples that run threads round-trip at the full level, each event on its thread") {
  const auto samples = test::thread_samples(kSamples);
  REQUIRE(samples.size() >= 4);
  const std::string path = temp_path("threads.frames");
  for (const std::string& sample : samples) {
    const auto recorded = round_trip(sample, core::TraceLevel::kFull, false, path);
    std::set<std::uint32_t> threads;
    for (const auto& event : recorded->events_) threads.insert(event.thread);
    CHECK(threads.size() >= 2);
  }
  std::filesystem::remove(path);
}

TEST_CASE("BAP frames: round trips at the lower levels and through zstd") {
  const std::string path = temp_path("levels.frames");
  for (auto level : {core::TraceLevel::kBlocks, core::TraceLevel::kInstructions, core::TraceLevel::kMemory,
                     core::TraceLevel::kRegisters}) {
    if (level == core::TraceLevel::kBlocks) {
      // Blocks have no frame: only syscalls and modules come back.
      auto recorded = record(kSamples + "/static/hello", level, path, false, "");
      read_back_and_compare(path, *recorded);
      continue;
    }
    round_trip("static/hello", level, false, path);
  }
  round_trip("static/file_io", core::TraceLevel::kFull, true, path);
  round_trip("static/segfault", core::TraceLevel::kFull, true, path);
  std::filesystem::remove(path);
}

namespace {

using test_support::GuestArchitecture;

// Whether `sample` is heap or stdio_buffered, the long runs ("BAP frames long runs" below).
bool is_long_run(const std::string& sample) {
  return sample.find("heap") != std::string::npos || sample.find("stdio_buffered") != std::string::npos;
}

// The samples cross-built for `row` (samples/cross.cmake), in each variant but
// static-pie (static's code at another address), round-trip at the full level
// (the long runs left out), its static hello at mem through zstd. With two
// instruction sets (arm: static is Thumb-2, static-marm ARM), a few samples of
// the static build only, for bounded time (glibc's Thumb-2 code runs in both).
void check_cross_round_trips(const GuestArchitecture* row) {
  const std::string arch(row->name);
  const std::string path = temp_path(arch + ".frames");
  const bool two_instruction_sets = row->has_variant("static-marm");
  for (const std::string_view variant : row->sample_variants) {
    if (variant == "static-pie") continue;
    for (const std::string& sample : test::cross_samples(kSamples, arch, std::string(variant))) {
      if (is_long_run(sample)) continue;
      const bool few = sample.find("/hello") != std::string::npos || sample.find("/file_io") != std::string::npos ||
                       sample.find("/floating") != std::string::npos;
      if (!two_instruction_sets || variant != "static" || few) round_trip(sample, core::TraceLevel::kFull, false, path);
    }
  }
  round_trip("../guest-" + arch + "/static/hello", core::TraceLevel::kMemory, true, path);
  std::filesystem::remove(path);
}

constexpr bool is_cross_with_bap_frames(const GuestArchitecture& row) { return !row.is_host && row.has_bap_frames; }
constexpr auto kBapCrossArchitectures = test_support::guest_architectures_where<&is_cross_with_bap_frames>();

// "BAP frames: aarch64 samples round-trip at the full level": the
// unit_tests.bap_cross shard's filter (tests/CMakeLists.txt) selects these.
std::string cross_round_trips_case_name(const GuestArchitecture* row) {
  return "BAP frames: " + std::string(row->name) + " samples round-trip at the full level";
}

}  // namespace

TRACECORN_TEST_CASE_PER_ROW(kBapCrossArchitectures, cross_round_trips_case_name, check_cross_round_trips);

TEST_CASE("BAP frames: an independent decoder (python3-protobuf) reads the same frames") {
  const std::string path = temp_path("decoder.frames");
  auto recorded = record(kSamples + "/static/hello", core::TraceLevel::kFull, path, false, "");
  const auto lines = decoded_frames(path);
  REQUIRE(lines.size() > 100);
  CHECK(split(lines[0], '\t') == std::vector<std::string>{"header", "3", "9", "64", split(lines[0], '\t')[4],
                                                         split(lines[0], '\t')[5]});
  CHECK(lines[1].rfind("meta\ttracecorn\t", 0) == 0);
  // Walk the decoded frames beside the recorded events: instructions, their
  // memory operands, syscalls and modules, in order.
  std::size_t next = 0;
  const auto& events = recorded->events_;
  std::size_t instructions = 0, syscalls = 0, accesses = 0;
  for (const std::string& line : lines) {
    const auto fields = split(line, '\t');
    if (fields[0] == "std") {
      while (next < events.size() && events[next].kind != events::EventKind::kInstruction) ++next;
      REQUIRE(next < events.size());
      const Copied& insn = events[next++];
      CHECK(std::stoull(fields[1], nullptr, 16) == insn.address);
      std::string raw;
      for (const std::uint8_t byte : insn.bytes) {
        char hex[3];
        std::snprintf(hex, sizeof hex, "%02x", byte);
        raw += hex;
      }
      CHECK(fields[3] == raw);
      // The recorded accesses of this instruction, against the decoded memory operands.
      std::vector<std::string> decoded_memory;
      for (const std::size_t list : {std::size_t{4}, std::size_t{5}})
        for (const auto& op : split(fields[list].substr(fields[list].find('=') + 1), ','))
          if (!op.empty() && op[0] == '@') decoded_memory.push_back(op);
      std::vector<std::string> recorded_memory;
      for (; next < events.size() && events[next].kind != events::EventKind::kInstruction &&
             events[next].kind != events::EventKind::kSyscall;
           ++next) {
        const Copied& e = events[next];
        if (e.kind != events::EventKind::kMemoryRead && e.kind != events::EventKind::kMemoryWrite) continue;
        char text[96];
        std::snprintf(text, sizeof text, "@%llx/%llu/%s/%llx", static_cast<unsigned long long>(e.address),
                      static_cast<unsigned long long>(e.size * 8), e.kind == events::EventKind::kMemoryRead ? "rn" : "wn",
                      static_cast<unsigned long long>(e.value));
        recorded_memory.push_back(text);
      }
      std::vector<std::string> decoded_text;
      for (const auto& op : decoded_memory) {
        const auto parts = split(op, '/');
        REQUIRE(parts.size() == 4);
        char text[96];
        std::snprintf(text, sizeof text, "%s/%s/%s/%llx", parts[0].c_str(), parts[1].c_str(), parts[2].c_str(),
                      static_cast<unsigned long long>(little_endian(parts[3])));
        decoded_text.push_back(text);
      }
      std::sort(recorded_memory.begin(), recorded_memory.end());
      std::sort(decoded_text.begin(), decoded_text.end());
      CHECK(recorded_memory == decoded_text);
      accesses += decoded_text.size();
      ++instructions;
    } else if (fields[0] == "syscall") {
      while (next < events.size() && events[next].kind != events::EventKind::kSyscall) ++next;
      REQUIRE(next < events.size());
      const Copied& call = events[next++];
      CHECK(std::stoull(fields[1], nullptr, 16) == call.pc);
      CHECK(std::stoull(fields[3]) == call.value);
      const auto args = split(fields[4], ',');
      REQUIRE(args.size() == 6);
      for (std::size_t i = 0; i < 6; ++i) CHECK(static_cast<std::uint64_t>(std::stoll(args[i])) == call.args[i]);
      CHECK(fields[5] == "result=" + std::to_string(call.result));
      ++syscalls;
    }
  }
  CHECK(instructions > 1000);
  CHECK(syscalls >= 4);
  CHECK(accesses > 1000);
  std::filesystem::remove(path);
}

// Its own ctest (bap_roundtrip_long_runs): heap at the mem level through zstd
// (its full-level trace would be ~6 GB plain), stdio_buffered at full, plain
// and zstd.
TEST_CASE("BAP frames long runs: heap and stdio_buffered round-trip, compared as they stream") {
  struct Run {
    const char* sample;
    core::TraceLevel level;
    bool zstd;
  };
  for (const Run run : {Run{"static/heap", core::TraceLevel::kMemory, true},
                        Run{"static/stdio_buffered", core::TraceLevel::kFull, false},
                        Run{"static/stdio_buffered", core::TraceLevel::kFull, true}}) {
    CAPTURE(run.sample);
    CAPTURE(core::trace_level_name(run.level));
    CAPTURE(run.zstd);
    const std::string path = temp_path("long.frames");
    const auto scratch = std::filesystem::temp_directory_path() / ("tracecorn-bap-dir-" + std::to_string(::getpid()));
    std::filesystem::remove_all(scratch);
    std::filesystem::create_directories(scratch);
    DigestSink recorded(true);
    std::unique_ptr<formats::FramesWriter> writer;
    const auto recording = test::record_sample(
        kSamples + "/" + run.sample, run.level,
        [&](linux_layer::LinuxProcess& process) -> std::vector<events::Sink*> {
          formats::FramesWriterOptions options;
          options.compress_zstd = run.zstd;
          auto opened = formats::FramesWriter::open(path, process.arch(), options);
          REQUIRE_MESSAGE(opened.has_value(), tracecorn::test_support::error_text(opened));
          writer = std::move(*opened);
          return {&recorded, writer.get()};
        },
        scratch.string());
    std::filesystem::remove_all(scratch);
    REQUIRE_MESSAGE(recording.finish_error.empty(), recording.finish_error);
    auto reader = formats::FramesReader::open(path);
    REQUIRE_MESSAGE(reader.has_value(), tracecorn::test_support::error_text(reader));
    CHECK(((*reader)->header().toc_layout == formats::FramesHeader::TocLayout::kOurs) == !run.zstd);
    DigestSink read(false);
    const auto status = (*reader)->read_all(read);
    REQUIRE_MESSAGE(status.has_value(), tracecorn::test_support::error_text(status));
    CHECK_MESSAGE((*reader)->warning().empty(), (*reader)->warning());
    CHECK(test::same_registers(read.info_.initial_registers, recorded.info_.initial_registers));
    test::check_same_digests(recorded.digests_, read.digests_);
    CHECK(read.digests_.counted() > 1000000);
    std::filesystem::remove(path);
  }
}

// Each std_frame's `mode`, decoded by python3-protobuf, against the instruction
// set the binary's own ELF mapping symbols ($a: ARM, $t: Thumb, $d: data; ARM
// ELF ABI 4.5.4, listed by readelf) give its address.
TEST_CASE("BAP frames: arm std_frame mode says ARM or Thumb as the ELF mapping symbols do") {
  const std::string binary = kSamples + "-arm/static-marm/hello";
  std::map<std::uint64_t, char> mapping;  // address -> 'a' / 't' / 'd'
  for (const auto& line : command_lines("readelf -sW " + binary)) {
    std::istringstream fields(line);
    std::string number, value, size, type, bind, visibility, index, name;
    if (!(fields >> number >> value >> size >> type >> bind >> visibility >> index >> name)) continue;
    if (name.size() < 2 || name[0] != '$' || (name.size() > 2 && name[2] != '.') || index == "UND") continue;
    if (name[1] == 'a' || name[1] == 't' || name[1] == 'd') mapping[std::stoull(value, nullptr, 16)] = name[1];
  }
  REQUIRE(mapping.size() > 100);
  const std::string path = temp_path("arm-mode.frames");
  record(binary, core::TraceLevel::kFull, path, false, "");
  const auto lines = decoded_frames(path);
  REQUIRE(split(lines.at(0), '\t').at(2) == "35");
  REQUIRE(split(lines.at(0), '\t').at(3) == "0");
  std::size_t arm = 0, thumb = 0, wrong = 0;
  for (const std::string& line : lines) {
    const auto fields = split(line, '\t');
    if (fields[0] != "std") continue;
    REQUIRE(fields.size() == 8);
    const std::uint64_t address = std::stoull(fields[1], nullptr, 16);
    const auto after = mapping.upper_bound(address);
    REQUIRE(after != mapping.begin());
    const char kind = std::prev(after)->second;
    const std::string expected = kind == 't' ? "mode=Thumb" : kind == 'a' ? "mode=ARM" : "mode=(data)";
    if (fields[7] != expected && ++wrong <= 3) MESSAGE(fields[1] << ": " << fields[7] << ", symbols say " << expected);
    (fields[7] == "mode=Thumb" ? thumb : arm) += 1;
  }
  CHECK(wrong == 0);
  CHECK(arm > 10);      // the sample's own code, built -marm
  CHECK(thumb > 1000);  // glibc's Thumb-2
  std::filesystem::remove(path);
}

TEST_CASE("BAP frames: signal deliveries are exception frames read back with their numbers, handlers and frames") {
  const std::string path = temp_path("signals.frames");
  for (const std::string sample : {"static/signal_handlers", "static/signal_faults", "static/signal_timers"}) {
    const auto recorded = round_trip(sample, core::TraceLevel::kFull, false, path);  // every event compared
    const auto signals = test::of_kind(recorded->events_, events::EventKind::kSignal);
    REQUIRE(signals.size() >= 3);
    for (const auto& signal : signals) {
      CHECK(signal.registers.size() == test::arch_register_count(recorded->info_));
      if (signal.pc_known)  // a fault's signal
        CHECK((signal.value == SIGSEGV || signal.value == SIGBUS || signal.value == SIGILL || signal.value == SIGFPE ||
               signal.value == SIGTRAP));
      if (sample.ends_with("signal_timers")) CHECK(signal.value == SIGALRM);
    }
  }
  // An exception frame per delivery, numbered with the signal, from the
  // interrupted pc to the handler (what BAP's own reader sees of them).
  const auto recorded = record(kSamples + "/static/signal_faults", core::TraceLevel::kInstructions, path, false, "");
  const auto first = test::of_kind(recorded->events_, events::EventKind::kSignal).front();
  char expected[96];
  std::snprintf(expected, sizeof expected, "exception\t%llu\t%d\t%llx\t", static_cast<unsigned long long>(first.value),
                static_cast<int>(::getpid()), static_cast<unsigned long long>(first.pc));
  std::size_t exception_frames = 0;
  for (const std::string& line : decoded_frames(path))
    if (line.rfind(expected, 0) == 0) ++exception_frames;
  CHECK(exception_frames >= 1);
  std::filesystem::remove(path);
}

TEST_CASE("BAP frames: thread events and every frame's thread_id round-trip") {
  const std::string path = temp_path("threads.frames");
  const auto recorded = test::record_with_threads(kSamples + "/static/hello", core::TraceLevel::kFull,
                                                  &formats::FramesReader::can_carry,
                                                  [&](const arch::ArchInfo& arch) -> std::unique_ptr<events::Sink> {
                                                    auto writer = formats::FramesWriter::open(path, arch, {});
                                                    REQUIRE(writer.has_value());
                                                    return std::move(*writer);
                                                  });
  const auto read = read_back_and_compare(path, *recorded);
  CHECK(test::of_kind(read.events_, events::EventKind::kThread).size() == 4);
  std::filesystem::remove(path);
}
