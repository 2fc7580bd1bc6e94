// Role: UCIR round trips on real guest programs (every sample, static, and
// hello dynamic, at blocks, insns, mem and regs, zstd at regs; the other
// architectures' samples at blocks and full): each is recorded once with
// both a probe sink and the UCIR writer attached to the same recording; the
// file is read back and the two event sequences are compared on every field
// UCIR carries (kinds, addresses, sizes, memory values, register values,
// syscall numbers, arguments, results and effects, mappings with their files;
// read values at mem level, from the reader's memory image), plain and zstd.
// Long runs (heap: 40 million instructions, stdio_buffered) are compared as
// they stream: each side folds its events, projected on the same fields, into
// one digest per 64 Ki events, so memory stays small and a difference is
// located to its chunk of events.
#include <doctest/doctest.h>

#include <unistd.h>

#include <csignal>

#include <cstring>
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "formats/ucir/ucir_reader.h"
#include "formats/ucir/ucir_writer.h"
#include "tests/formats/roundtrip_helpers.h"
#include "tests/formats/sample_recording.h"
#include "tests/support/architectures.h"
#include "tests/support/test_case_per_row.h"
#include "tests/support/error_text.h"

using namespace tracecorn;

namespace {

const std::string kSamples = TRACECORN_SAMPLES_DIR;

using test::Copied;
using test::same_registers;

std::string canonical(const Copied& event, core::TraceLevel level);

// Keeps the events UCIR carries (test::CopySink's copies), or, streaming, folds
// them at `level` into one digest per kChunkEvents events instead of keeping them.
class CopySink final : public events::Sink {
 public:
  explicit CopySink(bool streaming = false, core::TraceLevel level = core::TraceLevel::kBlocks)
      : streaming_(streaming), level_(level) {}
  void begin(const events::TraceInfo& info) override { info_ = info; }
  void on_event(const events::Event& event) override {
    if (!formats::UcirReader::can_carry(event.kind)) return;
    if (streaming_) {
      digests_.fold(canonical(test::copy_event(event), level_));
      return;
    }
    events_.push_back(test::copy_event(event));
  }
  std::string end(const events::TraceSummary&) override {
    if (streaming_) digests_.finish();
    return "";
  }
  events::TraceInfo info_;
  std::vector<Copied> events_;
  test::ChunkDigests digests_;  // streaming: one digest per ChunkDigests::kChunkEvents events

 private:
  bool streaming_;
  core::TraceLevel level_;
};

// The fields of `event` that a UCIR round trip keeps at `level`, as bytes (the
// rules of compare() below, for runs that end without a fault).
std::string canonical(const Copied& event, core::TraceLevel level) {
  const bool has_steps = level != core::TraceLevel::kBlocks;
  const bool all_writes = level == core::TraceLevel::kMemory || level == core::TraceLevel::kFull;
  std::string out;
  auto put = [&](const auto& value) { out.append(reinterpret_cast<const char*>(&value), sizeof value); };
  auto put_registers = [&](const std::vector<events::RegisterValue>& registers) {
    for (const auto& r : registers) {
      put(r.index);
      out.append(reinterpret_cast<const char*>(r.bytes.data()), r.size);
    }
  };
  put(event.kind);
  switch (event.kind) {
    case events::EventKind::kBlock: put(event.address), put(event.size), put(event.count), put(event.mode); break;
    case events::EventKind::kInstruction:
      put(event.address), put(event.size), put(event.mode);
      out.append(event.bytes.begin(), event.bytes.end());
      break;
    case events::EventKind::kMemoryRead:
    case events::EventKind::kMemoryWrite:
      put(event.address), put(event.size), put(event.mode);
      if (event.kind == events::EventKind::kMemoryWrite || all_writes) put(event.value);
      put(event.pc_known);
      if (event.pc_known) put(event.pc);
      break;
    case events::EventKind::kRegisters: put(event.pc), put_registers(event.registers); break;
    case events::EventKind::kSyscall:
      put(event.value), put(event.result), put(event.args);
      if (has_steps) put(event.pc);
      for (const auto& [address, bytes] : event.writes) put(address), out.append(bytes.begin(), bytes.end());
      for (const auto& [kind, start, length, prot] : event.mappings) put(kind), put(start), put(length), put(prot);
      for (const auto& [name, file, offset, size] : event.mapping_files)
        out += name + '\0' + file + '\0', put(offset), put(size);
      put_registers(event.registers);
      for (const auto pc : event.stack) put(pc);
      break;
    case events::EventKind::kExit: put(event.value); break;
    case events::EventKind::kSignal:
    case events::EventKind::kThread:
      put(event.value), put(event.result), put(event.count), put(event.args[0]), put(event.pc), put(event.address);
      put(event.size), put(event.pc_known);
      for (const auto& [address, bytes] : event.writes) put(address), out.append(bytes.begin(), bytes.end());
      put_registers(event.registers);
      break;
    default: break;
  }
  put(event.thread);
  return out;
}

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
  // So may a block a fault's signal cut short.
  std::size_t last_block = 0;
  for (std::size_t i = 0; i < recorded.size(); ++i)
    if (recorded[i].kind == events::EventKind::kBlock) last_block = i;
  const std::vector<bool> cut = test::blocks_cut_by_faults(recorded);
  for (std::size_t i = 0; i < recorded.size() && i < read.size(); ++i) {
    const Copied& a = recorded[i];
    const Copied& b = read[i];
    if (a.kind != b.kind) {
      note(i, "kind");
      break;
    }
    if (a.thread != b.thread) note(i, "thread");
    switch (a.kind) {
      case events::EventKind::kBlock:
        if (a.address != b.address || a.size != b.size || a.mode != b.mode ||
            (a.count != b.count && !(has_steps && (i == last_block || cut[i]) && b.count < a.count)))
          note(i, "block");
        break;
      case events::EventKind::kSignal:
      case events::EventKind::kThread:
        if (!test::same_signal_or_thread(a, b)) note(i, a.kind == events::EventKind::kSignal ? "signal" : "thread");
        break;
      case events::EventKind::kInstruction:
        if (a.address != b.address || a.size != b.size || a.mode != b.mode) note(i, "instruction");
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
        if (a.writes != b.writes || a.mappings != b.mappings || a.mapping_files != b.mapping_files ||
            !same_registers(a.registers, b.registers) ||
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
                                 bool zstd, const std::string& scratch_dir = "", bool streaming = false) {
  auto probe = std::make_unique<CopySink>(streaming, level);
  std::unique_ptr<formats::UcirWriter> writer;
  const auto run = test::record_sample(
      program, level,
      [&](linux_layer::LinuxProcess& process) -> std::vector<events::Sink*> {
        formats::UcirWriterOptions options;
        options.compress_zstd = zstd;
        options.keyframe_interval = 20000;  // a few periodic keyframes in a small run
        auto opened = formats::UcirWriter::open(path, process.arch(), options);
        REQUIRE(opened.has_value());
        writer = std::move(*opened);
        return {probe.get(), writer.get()};
      },
      scratch_dir);
  CHECK(run.finish_error.empty());
  return probe;
}

}  // namespace

namespace {

std::string temp_path(const std::string& stem) {
  return (std::filesystem::temp_directory_path() / (stem + "-" + std::to_string(::getpid()))).string();
}

// Records `sample` at `level` (plain or zstd), reads it back, and checks the
// initial state and the events. Returns the recorded probe (for more checks).
std::unique_ptr<CopySink> round_trip(const std::string& sample, core::TraceLevel level, bool zstd, bool streaming) {
  const auto started = std::chrono::steady_clock::now();
  CAPTURE(sample);
  CAPTURE(core::trace_level_name(level));
  CAPTURE(zstd);
  const std::string path = temp_path("tracecorn-ucir-rt") + ".ucir";
  const auto scratch = std::filesystem::path(temp_path("tracecorn-ucir-dir"));
  std::filesystem::remove_all(scratch);
  std::filesystem::create_directories(scratch);
  auto recorded = record(kSamples + "/" + sample, level, path, zstd, scratch.string(), streaming);
  std::filesystem::remove_all(scratch);
  REQUIRE(recorded->info_.has_initial_state);
  auto reader = formats::UcirReader::open(path);
  REQUIRE_MESSAGE(reader.has_value(), tracecorn::test_support::error_text(reader));
  CHECK((*reader)->header().zstd == zstd);
  // The first keyframe holds the initial state, with each region's name and file.
  const auto& info = (*reader)->info();
  CHECK(info.process_id == static_cast<std::uint64_t>(::getpid()));
  CHECK(info.initial_registers.size() == recorded->info_.initial_registers.size());
  REQUIRE(info.initial_memory.size() == recorded->info_.initial_memory.size());
  for (std::size_t i = 0; i < info.initial_memory.size(); ++i) {
    const auto& read = info.initial_memory[i];
    const auto& written = recorded->info_.initial_memory[i];
    CHECK(read.start == written.start);
    CHECK(read.size == written.size);
    CHECK(read.bytes == written.bytes);
    CHECK(read.name == written.name);
    CHECK(read.file == written.file);
    CHECK(read.file_offset == written.file_offset);
    CHECK(read.file_size == written.file_size);
  }
  CopySink read(streaming, level);
  const auto status = (*reader)->read_all(read);
  REQUIRE_MESSAGE(status.has_value(), tracecorn::test_support::error_text(status));
  CHECK((*reader)->warning().empty());
  if (streaming) {
    test::check_same_digests(recorded->digests_, read.digests_);
    CHECK(read.digests_.counted() > 500000);
  } else {
    std::string first;
    const std::size_t differing = compare(recorded->events_, read.events_, level, first);
    CHECK_MESSAGE(differing == 0, first);
    CHECK(read.events_.size() > 100);
  }
  std::filesystem::remove(path);
  if (std::getenv("TRACECORN_TEST_TIMES"))
    MESSAGE(sample << " " << std::string(core::trace_level_name(level)) << std::string(zstd ? " zstd " : " ")
                   << std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count() << " s");
  return recorded;
}

bool is_long_run(const std::string& sample) {
  return sample.find("heap") != std::string::npos || sample.find("stdio_buffered") != std::string::npos;
}

std::vector<std::string> round_trip_samples() { return test::all_samples(kSamples); }

constexpr core::TraceLevel kRoundTripLevels[] = {core::TraceLevel::kBlocks, core::TraceLevel::kInstructions,
                                                 core::TraceLevel::kMemory, core::TraceLevel::kRegisters};

}  // namespace

TEST_CASE("UCIR: recording, writing and reading back gives the same events (every sample, plain and zstd)") {
  const auto samples = round_trip_samples();
  REQUIRE(samples.size() >= 15);
  for (const std::string& sample : samples) {
    if (is_long_run(sample)) continue;  // "UCIR long runs" below
    // zstd is a stage after the encoder (the same frames, compressed): every
    // sample goes through it once, at the regs level.
    for (auto level : kRoundTripLevels) round_trip(sample, level, false, false);
    round_trip(sample, core::TraceLevel::kRegisters, true, false);
  }
}

// A thread's id rides in the pid field of the frames it runs in: every event
// comes back on its thread, the switches, creations and exits included.
// A long run (its own ctest, ucir_roundtrip_long_runs): about two minutes,
// which the UCIR shard's limit cannot also hold on a loaded 2-core machine.
TEST_CASE("UCIR long runs: the samples that run threads round-trip at the blocks and regs levels, each event on its thread") {
  const auto samples = test::thread_samples(kSamples);
  REQUIRE(samples.size() >= 4);
  for (const std::string& sample : samples)
    for (auto level : {core::TraceLevel::kBlocks, core::TraceLevel::kRegisters}) {
      const auto recorded = round_trip(sample, level, false, false);
      std::set<std::uint32_t> threads;
      for (const auto& event : recorded->events_) threads.insert(event.thread);
      CHECK(threads.size() >= 2);
    }
}

// The levels of the cross-architecture round trips: blocks (no steps) and
// full (steps with every memory access, its value and every register change),
// which together carry every op the other levels write; the host's samples
// go through each level on its own.
constexpr core::TraceLevel kCrossLevels[] = {core::TraceLevel::kBlocks, core::TraceLevel::kFull};

namespace {

using test_support::GuestArchitecture;

// `row`'s hello at the blocks level: the header names UCIR's arch string and
// the data byte order, and the reader gives back the architecture (usercorn's
// one name "mips" for both byte orders: the byte order field says which).
void check_cross_header(const GuestArchitecture& row) {
  const std::string arch(row.name);
  const std::string path = temp_path("tracecorn-ucir-" + arch) + ".ucir";
  record(kSamples + "-" + arch + "/static/hello", core::TraceLevel::kBlocks, path, false, "", false);
  auto reader = formats::UcirReader::open(path);
  REQUIRE(reader.has_value());
  CHECK((*reader)->header().arch == row.ucir_arch);
  CHECK((*reader)->header().data_order == (row.big_endian ? 1 : 0));
  CHECK((*reader)->info().arch_name == arch);
  std::filesystem::remove(path);
}

// arm's ARM build (static-marm) runs glibc's Thumb-2 code too: a Thumb
// block's OP_JMP address has bit 0 set, and reads back as mode 1.
void check_arm_and_thumb_blocks(const GuestArchitecture& row) {
  const std::string arch(row.name);
  const std::string path = temp_path("tracecorn-ucir-modes-" + arch) + ".ucir";
  record(kSamples + "-" + arch + "/static-marm/hello", core::TraceLevel::kBlocks, path, false, "", false);
  auto reader = formats::UcirReader::open(path);
  REQUIRE(reader.has_value());
  CopySink read;
  REQUIRE((*reader)->read_all(read).has_value());
  std::size_t thumb = 0, arm = 0;
  for (const auto& event : read.events_)
    if (event.kind == events::EventKind::kBlock) (event.mode ? thumb : arm) += 1;
  CHECK(thumb > 100);
  CHECK(arm > 5);
  std::filesystem::remove(path);
}

// The samples cross-built for `row` (samples/cross.cmake), in each variant but
// static-pie (static's code at another address), round-trip at the blocks and
// full levels. With two instruction sets (arm: static is Thumb-2, static-marm
// ARM), the static build goes through the full level only, for bounded time
// (glibc's Thumb-2 code runs in both builds).
void check_cross_round_trips(const GuestArchitecture* row) {
  const std::string arch(row->name);
  const bool two_instruction_sets = row->has_variant("static-marm");
  for (const std::string_view variant : row->sample_variants) {
    if (variant == "static-pie") continue;
    const bool every_level = variant != "static" || !two_instruction_sets;
    for (const std::string& sample : test::cross_samples(kSamples, arch, std::string(variant))) {
      if (is_long_run(sample)) continue;
      for (auto level : kCrossLevels)
        if (every_level || level == core::TraceLevel::kFull) round_trip(sample, level, false, false);
    }
  }
  check_cross_header(*row);
  if (two_instruction_sets) check_arm_and_thumb_blocks(*row);
}

// "UCIR: aarch64 samples round-trip at the blocks and full levels (arch string arm64)": the
// unit_tests.ucir_cross shard's filter (tests/CMakeLists.txt) selects these.
std::string cross_round_trips_case_name(const GuestArchitecture* row) {
  return "UCIR: " + std::string(row->name) + " samples round-trip at the blocks and full levels (arch string " +
         std::string(row->ucir_arch) + ")";
}

}  // namespace

TRACECORN_TEST_CASE_PER_ROW(test_support::kCrossArchitectures, cross_round_trips_case_name, check_cross_round_trips);

// Its own ctest (ucir_roundtrip_long_runs): heap runs 40 million instructions.
TEST_CASE("UCIR long runs: heap and stdio_buffered round-trip at every level, compared as they stream") {
  for (const std::string sample : {"static/heap", "static/stdio_buffered"})
    for (auto level : kRoundTripLevels)
      for (const bool zstd : {false, true}) {
        // zstd costs heap's largest traces ~10 s more each: checked at one level there.
        if (zstd && sample == "static/heap" && level != core::TraceLevel::kInstructions) continue;
        round_trip(sample, level, zstd, true);
      }
}

TEST_CASE("UCIR: mappings carry their file, offset and size (mmap_file's file mappings, the program's segments)") {
  const auto recorded = round_trip("static/mmap_file", core::TraceLevel::kBlocks, false, false);
  // The initial regions of the program: bytes from the file are the file's own
  // (the loader leaves the bytes before a segment's start in its first page zero).
  std::size_t file_regions = 0;
  for (const auto& region : recorded->info_.initial_memory) {
    if (region.file.empty()) continue;
    ++file_regions;
    CAPTURE(region.start.value);
    REQUIRE(region.file_size <= region.size);
    std::FILE* file = std::fopen(region.file.c_str(), "rb");
    REQUIRE(file);
    std::vector<std::uint8_t> expected(region.file_size);
    REQUIRE(std::fseek(file, static_cast<long>(region.file_offset), SEEK_SET) == 0);
    CHECK(std::fread(expected.data(), 1, expected.size(), file) == expected.size());
    std::fclose(file);
    std::size_t matching = 0, differing = 0;
    for (std::size_t i = 0; i < expected.size(); ++i) {
      if (region.bytes[i] == expected[i]) ++matching;
      else if (region.bytes[i] != 0) ++differing;
    }
    CHECK(differing == 0);
    CHECK(matching * 2 > expected.size());
  }
  CHECK(file_regions >= 3);  // text, rodata, data at least
  // The sample maps its 3-page-and-100-byte file whole, then one page at offset 2 pages.
  struct FileMap {
    std::uint64_t length;
    std::string name, file;
    std::uint64_t offset, size;
  };
  std::vector<FileMap> file_maps;
  for (const auto& event : recorded->events_)
    for (std::size_t i = 0; i < event.mapping_files.size(); ++i) {
      const auto& [name, file, offset, size] = event.mapping_files[i];
      if (!file.empty()) file_maps.push_back({std::get<2>(event.mappings[i]), name, file, offset, size});
    }
  REQUIRE(file_maps.size() == 2);
  CHECK(file_maps[0].file.ends_with("/mapped.bin"));
  CHECK(file_maps[0].name == file_maps[0].file);
  CHECK(file_maps[0].offset == 0);
  CHECK(file_maps[0].size == 3 * 4096 + 100);
  CHECK(file_maps[0].length == 4 * 4096);
  CHECK(file_maps[1].offset == 2 * 4096);
  CHECK(file_maps[1].size == 4096);
}

namespace {

// The signal events of a recording of `sample` at `level`, read back from UCIR:
// there, equal to the recorded ones (compared whole by round_trip), and each
// followed by the handler's first block.
std::vector<Copied> signals_read_back(const std::string& sample, core::TraceLevel level) {
  const auto recorded = round_trip(sample, level, false, false);
  const auto signals = test::of_kind(recorded->events_, events::EventKind::kSignal);
  for (std::size_t i = 0; i + 1 < recorded->events_.size(); ++i) {
    const Copied& event = recorded->events_[i];
    if (event.kind != events::EventKind::kSignal) continue;
    CHECK(event.registers.size() == test::arch_register_count(recorded->info_));
    for (std::size_t j = i + 1; j < recorded->events_.size(); ++j)
      if (recorded->events_[j].kind == events::EventKind::kBlock) {
        CHECK(recorded->events_[j].address == event.address);  // the handler runs next
        break;
      }
  }
  return signals;
}

}  // namespace

TEST_CASE("UCIR: the signal samples' deliveries are OP_SIGNALs read back with their numbers, handlers and frames") {
  // signal_handlers: SIGUSR1 and SIGUSR2 by raise (SI_TKILL) and kill (SI_USER), from this process.
  const auto handlers = signals_read_back("static/signal_handlers", core::TraceLevel::kInstructions);
  REQUIRE(handlers.size() >= 20);
  std::size_t usr1 = 0, usr2 = 0;
  for (const auto& signal : handlers) {
    usr1 += signal.value == SIGUSR1, usr2 += signal.value == SIGUSR2;
    CHECK_FALSE(signal.pc_known);  // none is a fault
    if (signal.value == SIGUSR1 || signal.value == SIGUSR2) {
      CHECK((signal.result == 0 || signal.result == -6));
      CHECK(signal.count == static_cast<std::uint64_t>(::getpid()));  // (the guest's pid is tracecorn's)
    }
  }
  CHECK(usr1 >= 10);
  CHECK(usr2 >= 2);
  // signal_faults: SIGSEGV with si_addr, a fault of the interrupted instruction, its frame written.
  const auto faults = signals_read_back("static/signal_faults", core::TraceLevel::kRegisters);
  REQUIRE(faults.size() >= 3);
  CHECK(faults[0].value == SIGSEGV);
  CHECK(faults[0].pc_known);
  CHECK(faults[0].args[0] != 0);
  REQUIRE(faults[0].writes.size() == 1);
  CHECK(faults[0].writes[0].first == faults[0].size);  // the frame's bytes at the frame's address
  // signal_timers: SIGALRM, sent by the kernel (SI_KERNEL), some between two blocks of a loop.
  const auto timers = signals_read_back("static/signal_timers", core::TraceLevel::kBlocks);
  REQUIRE(timers.size() >= 3);
  for (const auto& signal : timers) CHECK(signal.value == SIGALRM);
  CHECK(std::any_of(timers.begin(), timers.end(), [](const Copied& signal) { return !signal.writes.empty(); }));
}

TEST_CASE("UCIR: --ucir-strict leaves the signals out (no OP_SIGNAL)") {
  const std::string path = temp_path("tracecorn-ucir-strict-signals") + ".ucir";
  std::unique_ptr<formats::UcirWriter> writer;
  std::uint64_t dropped = 0;
  test::record_sample(kSamples + "/static/signal_handlers", core::TraceLevel::kBlocks,
                      [&](linux_layer::LinuxProcess& process) -> std::vector<events::Sink*> {
                        formats::UcirWriterOptions options;
                        options.strict = true;
                        auto opened = formats::UcirWriter::open(path, process.arch(), options);
                        REQUIRE(opened.has_value());
                        writer = std::move(*opened);
                        return {writer.get()};
                      });
  dropped = writer->dropped_events();
  CHECK(dropped >= 20);
  auto reader = formats::UcirReader::open(path);
  REQUIRE(reader.has_value());
  CopySink read;
  REQUIRE((*reader)->read_all(read).has_value());
  CHECK(test::of_kind(read.events_, events::EventKind::kSignal).empty());
  std::filesystem::remove(path);
}

TEST_CASE("UCIR: thread events and each event's thread round-trip (OP_THREAD, the frames' pid)") {
  const std::string path = temp_path("tracecorn-ucir-threads") + ".ucir";
  for (auto level : {core::TraceLevel::kBlocks, core::TraceLevel::kRegisters}) {
    CAPTURE(core::trace_level_name(level));
    const auto recorded = test::record_with_threads(
        kSamples + "/static/hello", level, &formats::UcirReader::can_carry,
        [&](const arch::ArchInfo& arch) -> std::unique_ptr<events::Sink> {
          auto opened = formats::UcirWriter::open(path, arch, {});
          REQUIRE(opened.has_value());
          return std::move(*opened);
        });
    auto reader = formats::UcirReader::open(path);
    REQUIRE(reader.has_value());
    CopySink read;
    REQUIRE((*reader)->read_all(read).has_value());
    std::string first;
    CHECK_MESSAGE(compare(recorded->events_, read.events_, level, first) == 0, first);
    CHECK(test::of_kind(read.events_, events::EventKind::kThread).size() == 4);
  }
  std::filesystem::remove(path);
}
