// Role: binary trace round trips on real guest programs. Every sample (heap and
// stdio_buffered, millions of instructions, compared as they stream in their
// own test, a digest per 64 Ki lines on each side) is recorded at regs and full
// level with a probe sink and the binary trace writer on the same recording;
// the file is read back and both event sequences are compared on everything
// the format carries (instructions with their bytes, memory writes, register
// values, syscalls with their effects and call stacks, faults, exits, module
// loads). Then the replay check: the reader's state after the last event (the
// initial state plus every diff) must equal the emulator's registers and every
// mapped byte at the end of the recording (registers only at regs level, which
// does not record the instructions' memory writes). Last, the recovery of
// killed recordings (see the comment above its test case).
#include <doctest/doctest.h>

#include <unistd.h>

#include <cinttypes>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "formats/bintrace/bintrace_reader.h"
#include "formats/bintrace/bintrace_recover.h"
#include "formats/bintrace/bintrace_writer.h"
#include "tests/formats/roundtrip_helpers.h"
#include "tests/formats/sample_recording.h"
#include "tests/support/error_text.h"

using namespace tracecorn;

namespace {

const std::string kSamples = TRACECORN_SAMPLES_DIR;

std::string hex_bytes(std::span<const std::uint8_t> bytes) {
  std::string out;
  for (const auto b : bytes) out += fmt::format("{:02x}", b);
  return out;
}

std::string registers_line(std::vector<events::RegisterValue> values, std::uint16_t pc_index, bool drop_pc) {
  std::sort(values.begin(), values.end(), [](const auto& a, const auto& b) { return a.index < b.index; });
  std::string out;
  for (const auto& value : values) {
    if (drop_pc && value.index == pc_index) continue;
    out += fmt::format(" {}={}", value.index, hex_bytes(std::span(value.bytes).first(value.size)));
  }
  return out;
}

// One line per fact the format carries; an instruction's memory writes are
// joined where contiguous (the writer merges them), its registers sorted by index.
// Streaming (long runs): the lines are folded into one digest per
// test::ChunkDigests::kChunkEvents lines instead of being kept.
class LineSink final : public events::Sink {
 public:
  explicit LineSink(std::uint16_t pc_index, bool streaming = false) : pc_index_(pc_index), streaming_(streaming) {}
  void begin(const events::TraceInfo& info) override {
    for (const auto& value : info.initial_registers) state_[value.index] = value;
  }
  void on_event(const events::Event& event) override {
    if (!formats::BintraceReader::can_carry(event.kind)) return;
    if (event.kind != events::EventKind::kMemoryWrite) flush_writes();
    thread_ = event.thread.value;
    std::visit(
        [&](const auto& p) {
          using T = std::decay_t<decltype(p)>;
          if constexpr (std::is_same_v<T, events::InstructionEvent>) {
            add(fmt::format("insn {:#x} {} {}", p.address.value, p.size, hex_bytes(p.bytes)));
          } else if constexpr (std::is_same_v<T, events::MemoryEvent>) {
            std::vector<std::uint8_t> bytes;
            for (unsigned i = 0; i < p.size; ++i) bytes.push_back(static_cast<std::uint8_t>(p.value >> (8 * i)));
            if (!writes_.empty() && writes_.back().first + writes_.back().second.size() == p.address.value)
              writes_.back().second.insert(writes_.back().second.end(), bytes.begin(), bytes.end());
            else
              writes_.emplace_back(p.address.value, bytes);
          } else if constexpr (std::is_same_v<T, events::RegistersEvent>) {
            const std::string line = registers_line({p.changes.begin(), p.changes.end()}, pc_index_, true);
            if (!line.empty()) add(fmt::format("regs {:#x}{}", p.pc.value, line));
            track(p.changes);
          } else if constexpr (std::is_same_v<T, events::SyscallEvent>) {
            std::string line = fmt::format("syscall {:#x} {} {} {} =", p.pc.value, p.number, p.name, p.result);
            for (const auto arg : p.args) line += fmt::format(" {:#x}", arg);
            for (const auto& w : p.memory_writes) line += fmt::format(" w{:#x}:{}", w.address.value, hex_bytes(w.bytes));
            for (const auto& m : p.mapping_changes)
              line += fmt::format(" m{}:{:#x}+{:#x}/{}", static_cast<int>(m.kind), m.start.value, m.length,
                                  m.kind == events::MappingChangeKind::kUnmap ? 0u : m.prot & 7u);
            line += registers_line({p.register_changes.begin(), p.register_changes.end()}, pc_index_, false);
            for (const auto frame : p.call_stack) line += fmt::format(" s{:#x}", frame);
            add(line);
            track(p.register_changes);
          } else if constexpr (std::is_same_v<T, events::FaultEvent>) {
            add(fmt::format("fault {:#x} {:#x} {} {}", p.pc.value, p.address.value, p.signal,
                                        p.description.substr(0, 200)));
          } else if constexpr (std::is_same_v<T, events::ExitEvent>) {
            add(fmt::format("exit {} {} {}", p.by_signal, p.code, p.signal));
          } else if constexpr (std::is_same_v<T, events::ModuleLoadEvent>) {
            add(fmt::format("module {:#x} {:#x} {:#x} {}", p.start.value, p.end.value, p.load_bias, p.path));
          } else if constexpr (std::is_same_v<T, events::GapEvent>) {
            add(fmt::format("gap {} {}", p.lost_events, p.reason));
          } else if constexpr (std::is_same_v<T, events::SignalEvent>) {
            std::string line = fmt::format("signal {} {} {} {:#x} {:#x} {:#x} {:#x} {}", p.signal, p.code, p.sender_pid,
                                           p.fault_address.value, p.interrupted_pc.value, p.handler.value,
                                           p.frame.value, p.fault);
            for (const auto& w : p.frame_writes) line += fmt::format(" w{:#x}:{}", w.address.value, hex_bytes(w.bytes));
            add(line + changed_registers(p.register_changes));
          } else if constexpr (std::is_same_v<T, events::ThreadEvent>) {
            add(fmt::format("thread {} {} {}", static_cast<int>(p.change), p.from.value, p.exit_code) +
                changed_registers(p.registers));
          }
        },
        event.payload);
  }
  std::string end(const events::TraceSummary&) override {
    flush_writes();
    if (streaming_) digests.finish();
    return "";
  }
  std::vector<std::string> lines;
  test::ChunkDigests digests;  // streaming: the lines folded, each with its end

 private:
  void flush_writes() {
    for (const auto& [address, bytes] : writes_) add(fmt::format("mem {:#x} {}", address, hex_bytes(bytes)));
    writes_.clear();
  }
  // The registers that differ from the last values the events gave (the
  // format keeps a signal's or a switch's registers as a diff), pc aside
  // (the next instruction says it); the values are kept.
  std::string changed_registers(std::span<const events::RegisterValue> values) {
    std::vector<events::RegisterValue> changed;
    for (const auto& value : values) {
      const auto held = state_.find(value.index);
      if (held == state_.end() || std::memcmp(held->second.bytes.data(), value.bytes.data(), value.size) != 0)
        changed.push_back(value);
    }
    track(values);
    return registers_line(std::move(changed), pc_index_, true);
  }
  void track(std::span<const events::RegisterValue> values) {
    for (const auto& value : values) state_[value.index] = value;
  }
  void add(std::string line) {
    line += fmt::format(" t{}", thread_);
    if (!streaming_) {
      lines.push_back(std::move(line));
      return;
    }
    line += '\n';
    digests.fold(line);
  }
  std::uint16_t pc_index_;
  bool streaming_;
  std::uint32_t thread_ = 0;
  std::map<std::uint16_t, events::RegisterValue> state_;  // registers by index, as the events left them
  std::vector<std::pair<std::uint64_t, std::vector<std::uint8_t>>> writes_;
};

std::uint16_t pc_index(const arch::ArchInfo& arch) {
  for (std::size_t i = 0; i < arch.registers.size(); ++i)
    if (arch.registers[i].uc_id == arch.pc_reg) return static_cast<std::uint16_t>(i);
  return 0xffff;
}

}  // namespace

namespace {

// Records `sample` at `level` into a binary trace (plain or zstd) and a LineSink,
// reads it back and compares the lines (or, streaming, their chunk digests);
// then checks the replayed final state against the engine. Returns the
// recorded lines (none when streaming).
std::vector<std::string> round_trip(const std::string& sample, core::TraceLevel level, bool zstd, bool streaming) {
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("tracecorn-bintrace-rt-" + std::to_string(::getpid()) + ".bt")).string();
  const auto scratch = std::filesystem::temp_directory_path() / ("tracecorn-bintrace-dir-" + std::to_string(::getpid()));
  CAPTURE(sample);
  CAPTURE(core::trace_level_name(level));
  CAPTURE(zstd);
  std::filesystem::remove_all(scratch);
  std::filesystem::create_directories(scratch);
  std::unique_ptr<LineSink> recorded;
  std::unique_ptr<formats::BintraceWriter> writer;
  auto run = test::record_sample(
      kSamples + "/" + sample, level,
      [&](linux_layer::LinuxProcess& process) -> std::vector<events::Sink*> {
        formats::BintraceWriterOptions options;
        options.compress_zstd = zstd;
        auto opened = formats::BintraceWriter::open(path, process.arch(), options);
        REQUIRE_MESSAGE(opened.has_value(), tracecorn::test_support::error_text(opened));
        writer = std::move(*opened);
        recorded = std::make_unique<LineSink>(pc_index(process.arch()), streaming);
        return {recorded.get(), writer.get()};
      },
      scratch.string());
  std::filesystem::remove_all(scratch);
  REQUIRE_MESSAGE(run.finish_error.empty(), run.finish_error);
  const auto& arch = run.process->arch();

  auto reader = formats::BintraceReader::open(path);
  REQUIRE_MESSAGE(reader.has_value(), tracecorn::test_support::error_text(reader));
  CHECK((*reader)->compression() == (zstd ? 1 : 0));
  CHECK((*reader)->event_count() == writer->events_written());
  LineSink read(pc_index(arch), streaming);
  const auto status = (*reader)->read_all(read);
  REQUIRE_MESSAGE(status.has_value(), tracecorn::test_support::error_text(status));
  CHECK((*reader)->unrecognized_events() == 0);
  if (streaming) {
    test::check_same_digests(recorded->digests, read.digests);
    CHECK(read.digests.counted() > 1000000);
  } else {
    const auto& a = recorded->lines;
    const auto& b = read.lines;
    std::size_t first = 0;
    while (first < a.size() && first < b.size() && a[first] == b[first]) ++first;
    CHECK_MESSAGE(first == a.size(), "line ", first, ": recorded '", (first < a.size() ? a[first] : "(end)"),
                  "' read '", (first < b.size() ? b[first] : "(end)"), "'");
    CHECK(a.size() == b.size());
    CHECK(a.size() > 100);
  }

  // Replay: the state after the last event against the engine.
  uc_engine* engine = run.process->engine();
  const auto registers = (*reader)->registers();
  REQUIRE(registers.size() == arch.registers.size());
  std::size_t differing = 0;
  std::string first_register;
  for (std::size_t i = 0; i < arch.registers.size(); ++i) {
    std::uint8_t raw[64] = {};
    uc_reg_read(engine, arch.registers[i].uc_id, raw);
    const std::size_t size = std::min<std::size_t>(arch.registers[i].size, 16);
    if (std::memcmp(raw, registers[i].bytes.data(), size) != 0) {
      if (first_register.empty())
        first_register = std::string(arch.registers[i].name) + " engine " + hex_bytes(std::span(raw, size)) +
                         " replayed " + hex_bytes(std::span(registers[i].bytes).first(size));
      ++differing;
    }
  }
  CHECK_MESSAGE(differing == 0, first_register);
  if (level == core::TraceLevel::kFull) {
    uc_mem_region* regions = nullptr;
    std::uint32_t count = 0;
    REQUIRE(uc_mem_regions(engine, &regions, &count) == UC_ERR_OK);
    std::uint64_t compared = 0, wrong = 0, first_wrong = 0;
    std::vector<std::uint8_t> engine_bytes, replayed;
    for (std::uint32_t r = 0; r < count; ++r) {
      const std::uint64_t size = regions[r].end - regions[r].begin + 1;
      engine_bytes.resize(size);
      replayed.resize(size);
      REQUIRE(uc_mem_read(engine, regions[r].begin, engine_bytes.data(), size) == UC_ERR_OK);
      (*reader)->read_memory(regions[r].begin, replayed);
      for (std::uint64_t k = 0; k < size; ++k)
        if (engine_bytes[k] != replayed[k] && wrong++ == 0) first_wrong = regions[r].begin + k;
      compared += size;
    }
    uc_free(regions);
    CHECK_MESSAGE(wrong == 0, wrong, " bytes differ, the first at ", fmt::format("{:#x}", first_wrong));
    CHECK(compared > 0);
  }
  std::filesystem::remove(path);
  return recorded->lines;
}

// The lines of `lines` that start with `prefix`.
std::vector<std::string> lines_starting(const std::vector<std::string>& lines, const std::string& prefix) {
  std::vector<std::string> out;
  for (const auto& line : lines)
    if (line.rfind(prefix, 0) == 0) out.push_back(line);
  return out;
}

}  // namespace

TEST_CASE("Bintrace: every sample round trips at regs and full, and replaying the diffs gives the final state") {
  const auto samples = test::all_samples(kSamples);
  REQUIRE(samples.size() >= 15);
  for (const std::string& sample : samples) {
    // heap and stdio_buffered: "Bintrace long runs" below.
    if (sample.find("heap") != std::string::npos || sample.find("stdio_buffered") != std::string::npos) continue;
    for (const auto level : {core::TraceLevel::kRegisters, core::TraceLevel::kFull})
      for (const bool zstd : {false, true}) {
        if (zstd && level == core::TraceLevel::kRegisters) continue;  // compression is level-blind
        round_trip(sample, level, zstd, false);
      }
  }
}

// Binary trace v1.0 has no threads: a switch is an "other" event with its
// register diff, which must read back as written and replay to the final state.
// A long run (bintrace_roundtrip_long_runs).
TEST_CASE("Bintrace long runs: the samples that run threads round trip at regs, switches as register diffs") {
  const auto samples = test::thread_samples(kSamples);
  REQUIRE(samples.size() >= 4);
  for (const std::string& sample : samples) round_trip(sample, core::TraceLevel::kRegisters, false, false);
}

// Its own ctest (bintrace_roundtrip_long_runs, with a longer time limit): heap
// runs 40 million instructions (about 3 minutes of CPU here, mostly formatting
// the compared lines), so it is checked at one level, compressed.
TEST_CASE("Bintrace long runs: heap and stdio_buffered round-trip, compared as they stream, and replay to the final state") {
  round_trip("static/stdio_buffered", core::TraceLevel::kFull, false, true);
  round_trip("static/stdio_buffered", core::TraceLevel::kRegisters, true, true);
  round_trip("static/heap", core::TraceLevel::kRegisters, true, true);
}

// Recovery of a killed recording (formats/bintrace/bintrace_recover.h). A
// SIGKILL leaves on disk exactly what the writer had handed to its files at
// that moment, so copies of PATH.head.part and PATH.events.part taken during
// the recording at seeded random events are what kills at those events leave;
// so are cuts of the last copy's spool at seeded random lengths (a kill while
// a batch was being written). Each must recover to a file the reader accepts
// whole, whose events are a prefix of the finished recording's (the same run:
// the guest's AT_RANDOM bytes differ between runs). Small spool batches, so
// that the spool grows through the run; plain and zstd.
namespace {

// Forwards to the writer and copies its recovery files at chosen event indices.
class SnapshotSink final : public events::Sink {
 public:
  SnapshotSink(events::Sink& writer, std::string path, std::vector<std::uint64_t> at)
      : writer_(writer), path_(std::move(path)), at_(std::move(at)) {}
  void begin(const events::TraceInfo& info) override { writer_.begin(info); }
  void on_event(const events::Event& event) override {
    writer_.on_event(event);
    if (std::find(at_.begin(), at_.end(), seen_++) == at_.end()) return;
    if (!std::filesystem::exists(path_ + ".head.part")) return;  // before the first instruction
    const std::string copy = path_ + ".snapshot" + std::to_string(copies.size());
    std::filesystem::copy_file(path_ + ".head.part", copy + ".head.part");
    std::filesystem::copy_file(path_ + ".events.part", copy + ".events.part");
    copies.push_back(copy);
  }
  std::string end(const events::TraceSummary& summary) override { return writer_.end(summary); }
  std::vector<std::string> copies;

 private:
  events::Sink& writer_;
  std::string path_;
  std::vector<std::uint64_t> at_;
  std::uint64_t seen_ = 0;
};

}  // namespace

TEST_CASE("Bintrace recovery: a recording killed at seeded random points recovers to a prefix of the whole trace") {
  const char* seed_text = std::getenv("TRACECORN_RECOVER_SEED");
  const std::uint32_t seed = seed_text ? static_cast<std::uint32_t>(std::strtoul(seed_text, nullptr, 0))
                                       : std::random_device{}();
  MESSAGE("kill points drawn with seed " << seed << " (TRACECORN_RECOVER_SEED=" << seed << " repeats them)");
  std::mt19937 random(seed);
  const auto scratch = std::filesystem::temp_directory_path() / ("tracecorn-recover-dir-" + std::to_string(::getpid()));
  for (const bool zstd : {false, true}) {
    CAPTURE(zstd);
    const std::string path = (std::filesystem::temp_directory_path() /
                              ("tracecorn-recover-" + std::to_string(::getpid()) + ".bt")).string();
    std::filesystem::remove_all(scratch);
    std::filesystem::create_directories(scratch);
    // mmap_file maps a file later: its region must be added from the spool's "map" events.
    std::uniform_int_distribution<std::uint64_t> event_index(100, 60000);
    std::vector<std::uint64_t> at;
    for (int i = 0; i < 5; ++i) at.push_back(event_index(random));
    std::unique_ptr<formats::BintraceWriter> writer;
    std::unique_ptr<SnapshotSink> snapshots;
    auto run = test::record_sample(
        kSamples + "/static/mmap_file", core::TraceLevel::kRegisters,
        [&](linux_layer::LinuxProcess& process) -> std::vector<events::Sink*> {
          formats::BintraceWriterOptions options;
          options.compress_zstd = zstd;
          options.spool_batch_bytes = 2048;
          auto opened = formats::BintraceWriter::open(path, process.arch(), options);
          REQUIRE_MESSAGE(opened.has_value(), tracecorn::test_support::error_text(opened));
          writer = std::move(*opened);
          snapshots = std::make_unique<SnapshotSink>(*writer, path, at);
          return {snapshots.get()};
        },
        scratch.string());
    std::filesystem::remove_all(scratch);
    REQUIRE_MESSAGE(run.finish_error.empty(), run.finish_error);
    CHECK_FALSE(std::filesystem::exists(path + ".head.part"));  // a finished recording leaves only its file
    CHECK_FALSE(std::filesystem::exists(path + ".events.part"));
    const std::uint16_t pc = pc_index(run.process->arch());
    auto whole = formats::BintraceReader::open(path);
    REQUIRE_MESSAGE(whole.has_value(), tracecorn::test_support::error_text(whole));
    LineSink full(pc);
    REQUIRE((*whole)->read_all(full).has_value());
    REQUIRE(full.lines.size() > 1000);

    // The kills: each copy as it was, and the last one's spool cut at random lengths.
    std::vector<std::string> kills = snapshots->copies;
    REQUIRE_FALSE(kills.empty());
    const std::string last = kills.back();
    const auto spool_size = std::filesystem::file_size(last + ".events.part");
    std::uniform_int_distribution<std::uint64_t> cut_at(0, spool_size);
    for (int i = 0; i < 4; ++i) {
      const std::string copy = last + ".cut" + std::to_string(i);
      std::filesystem::copy_file(last + ".head.part", copy + ".head.part");
      std::filesystem::copy_file(last + ".events.part", copy + ".events.part");
      std::filesystem::resize_file(copy + ".events.part", cut_at(random));
      kills.push_back(copy);
    }
    std::size_t nonempty = 0;
    for (const std::string& kill : kills) {
      CAPTURE(kill);
      CAPTURE(std::filesystem::file_size(kill + ".events.part"));
      const std::string recovered = kill + ".recovered";
      auto recovery = formats::recover_bintrace(kill + ".head.part", kill + ".events.part", recovered);
      REQUIRE_MESSAGE(recovery.has_value(), tracecorn::test_support::error_text(recovery));
      CHECK(recovery->scan.complete_bytes <= recovery->scan.bytes);
      if (zstd && std::filesystem::file_size(kill + ".events.part") > 0)
        CHECK_FALSE(recovery->scan.cut.empty());  // the stream was never ended: the scan says so, even after a whole event
      else if (zstd)
        CHECK(recovery->scan.cut.empty());  // a spool cut to nothing holds no stream to end
      else
        CHECK(recovery->scan.cut.empty() == (recovery->scan.complete_bytes == recovery->scan.bytes));
      auto reader = formats::BintraceReader::open(recovered);
      REQUIRE_MESSAGE(reader.has_value(), tracecorn::test_support::error_text(reader));
      CHECK((*reader)->compression() == 0);
      CHECK((*reader)->event_count() == recovery->scan.events);
      LineSink read(pc);
      const auto status = (*reader)->read_all(read);
      REQUIRE_MESSAGE(status.has_value(), tracecorn::test_support::error_text(status));
      CHECK((*reader)->unrecognized_events() == 0);
      REQUIRE(read.lines.size() <= full.lines.size());
      std::size_t same = 0;
      while (same < read.lines.size() && read.lines[same] == full.lines[same]) ++same;
      CHECK_MESSAGE(same == read.lines.size(), "line ", same, ": recovered '",
                    (same < read.lines.size() ? read.lines[same] : "(end)"), "' whole '",
                    (same < full.lines.size() ? full.lines[same] : "(end)"), "'");
      if (!read.lines.empty()) ++nonempty;
      for (const char* suffix : {".head.part", ".events.part", ".recovered"}) std::filesystem::remove(kill + suffix);
    }
    CHECK(nonempty > 0);
    std::filesystem::remove(path);
  }
}

TEST_CASE("Bintrace: signal deliveries are \"signal\" other events read back with their numbers, handlers, frames and registers") {
  // Every line compared by round_trip, and the final state replayed from the diffs.
  const auto handlers = round_trip("static/signal_handlers", core::TraceLevel::kRegisters, false, false);
  CHECK(lines_starting(handlers, "signal 10 ").size() >= 10);  // SIGUSR1
  CHECK(lines_starting(handlers, "signal 12 ").size() >= 2);   // SIGUSR2
  const auto faults = round_trip("static/signal_faults", core::TraceLevel::kFull, false, false);
  const auto segv = lines_starting(faults, "signal 11 ");
  REQUIRE(segv.size() >= 2);
  CHECK(segv[0].find(" true w0x") != std::string::npos);  // a fault, with its frame written
  const auto timers = round_trip("static/signal_timers", core::TraceLevel::kRegisters, false, false);
  CHECK(lines_starting(timers, "signal 14 ").size() >= 3);  // SIGALRM
}

TEST_CASE("Bintrace: thread events and each event's thread round-trip (\"thread\" other events, the pid in the tool info)") {
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("tracecorn-bintrace-threads-" + std::to_string(::getpid()) + ".bt")).string();
  std::unique_ptr<LineSink> recorded;
  std::unique_ptr<formats::BintraceWriter> writer;
  std::unique_ptr<test::ThreadInjector> injector;
  auto run = test::record_sample(kSamples + "/static/hello", core::TraceLevel::kRegisters,
                                 [&](linux_layer::LinuxProcess& process) -> std::vector<events::Sink*> {
                                   auto opened = formats::BintraceWriter::open(path, process.arch(), {});
                                   REQUIRE(opened.has_value());
                                   writer = std::move(*opened);
                                   recorded = std::make_unique<LineSink>(pc_index(process.arch()));
                                   injector = std::make_unique<test::ThreadInjector>(
                                       process.arch(), std::vector<events::Sink*>{recorded.get(), writer.get()});
                                   return {injector.get()};
                                 });
  REQUIRE(run.finish_error.empty());
  auto reader = formats::BintraceReader::open(path);
  REQUIRE(reader.has_value());
  LineSink read(pc_index(run.process->arch()));
  REQUIRE((*reader)->read_all(read).has_value());
  CHECK((*reader)->unrecognized_events() == 0);
  CHECK(read.lines == recorded->lines);
  CHECK(lines_starting(read.lines, "thread ").size() == 4);
  const std::string other = " t" + std::to_string(injector->other_thread());
  CHECK(std::count_if(read.lines.begin(), read.lines.end(),
                      [&](const std::string& line) { return line.ends_with(other); }) > 4);
  std::filesystem::remove(path);
}
