// Role: a libFuzzer harness that fuzzes a guest function (a small, buggy,
// length-prefixed record parser written in x86-64 machine code: parser_guest.h,
// which also sets the engine up) in a Unicorn engine, with tracecorn's flight
// recorder always on. When the guest faults, the harness reports the fault to the recorder the way tracecorn's
// Linux layer does (the exact faulting instruction, the address, SIGSEGV),
// dumps the flight recorder's last events as a text trace (or, in builds of
// this tree, a UCIR trace when the path ends in .ucir, which
// fuzz_trace_replay replays against the same engine set-up), and only then
// aborts, so that libFuzzer saves the crashing input beside a trace of the
// instructions that led to the crash.
//
// Who runs it: libFuzzer (clang -fsanitize=fuzzer), or, in builds without
// libFuzzer, fuzz_replay_main.cpp, which feeds it files (a crash reproducer);
// the tests fuzz_harness_finds_crash and fuzz_harness_replays_crash
// (check_fuzz_crash.cmake) check the dumped trace.
// Threads: libFuzzer's one fuzzing thread. The flight recorder has no drain
// thread: records stay in its ring until dump().
// Global state: libFuzzer's entry points take no context, so the harness is one
// function-local static created on the first input; the guest edge counters
// must be a global in the section libFuzzer reads (see guest_edge_counters).
//
// Environment:
//   TRACECORN_CRASH_TRACE   where the trace goes on a crash (default ./crash-trace.txt;
//                           *.ucir: UCIR, when built with TRACECORN_HARNESS_UCIR)
//   TRACECORN_FUZZ_LEVEL    the recording level (default insns; blocks, mem, regs, full)
//   TRACECORN_FUZZ_RING     the flight recorder's size in bytes (default 16384)
//
// Per input: the engine, its mappings, the translated code and the recorder are
// reused; the guest writes the input, resets four registers and runs. The
// flight recorder thus also holds the end of earlier inputs' runs, before the
// crashing one (each run starts with a block at kParserAddress).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <string>

#include "formats/text/text_writer.h"
#include "parser_guest.h"
#include "recorder/core/recorder.h"
#ifdef TRACECORN_HARNESS_UCIR
#include "formats/ucir/ucir_writer.h"
#endif

namespace {

using namespace tracecorn;
using namespace tracecorn::samples;

#ifdef TRACECORN_EXPECTED_FAULT_PC
static_assert(kFaultingStore == TRACECORN_EXPECTED_FAULT_PC, "the tests expect the fault at this address");
#endif

// Guest edge coverage for libFuzzer: it reads every byte of this section as a
// coverage counter, clears them before each input, and keeps inputs that make
// new ones non-zero. Without it libFuzzer would see only the host's coverage,
// which is the same for every input. One counter per hashed (previous block,
// block) pair, AFL style.
constexpr std::size_t kEdgeCounterCount = 1 << 12;
[[gnu::section("__libfuzzer_extra_counters"), gnu::used]] std::uint8_t guest_edge_counters[kEdgeCounterCount];

struct HarnessConfig {
  std::string crash_trace_path = "crash-trace.txt";
  core::TraceLevel level = core::TraceLevel::kInstructions;
  std::size_t ring_bytes = 16 << 10;
};

class ParserHarness {
 public:
  static Expected<std::unique_ptr<ParserHarness>> create(const HarnessConfig& config) {
    std::unique_ptr<ParserHarness> harness(new ParserHarness(config));
    if (auto status = harness->init(); !status) return status.error();
    return harness;
  }

  ~ParserHarness() {
    recorder_.reset();  // removes its hooks: before the engine goes (with guest_)
  }
  ParserHarness(const ParserHarness&) = delete;
  ParserHarness& operator=(const ParserHarness&) = delete;

  // Runs the parser on `input` (untrusted: any bytes). Returns normally when the
  // guest returns; dumps the trace and aborts the process when it faults.
  void run(const std::uint8_t* input, std::size_t size) {
    previous_edge_ = 0;
    if (!guest_->run(input, size)) crash(guest_->crash());
  }

 private:
  explicit ParserHarness(const HarnessConfig& config) : config_(config) {}

  Status init() {
    auto guest = ParserGuest::create();
    if (!guest) return guest.error();
    guest_ = std::move(*guest);
    if (!guest_->add_hook(UC_HOOK_BLOCK, reinterpret_cast<void*>(&on_block), this))
      return make_error(ErrorCode::kEmulator, "cannot add the harness's coverage hook");

    core::RecorderOptions options;
    options.level = config_.level;
    options.policy = core::RingPolicy::kFlightRecorder;
    options.ring_bytes = config_.ring_bytes;
    events::TraceInfo info;
    info.program = "fuzz_harness: parse_record";
    auto recorder = core::Recorder::attach(guest_->engine(), guest_->arch(), options, {}, std::move(info));
    if (!recorder) return recorder.error();
    recorder_ = std::move(*recorder);
    return ok_status();
  }

  static void on_block(uc_engine*, std::uint64_t address, std::uint32_t, void* user) noexcept {
    auto* self = static_cast<ParserHarness*>(user);
    const std::uint64_t current = ((address >> 4) ^ (address << 8)) & (kEdgeCounterCount - 1);
    std::uint8_t& counter = guest_edge_counters[current ^ self->previous_edge_];
    if (counter != 0xff) ++counter;
    self->previous_edge_ = current >> 1;
  }

  // The sink the crash trace is written with: UCIR for a *.ucir path (when
  // built with it), else the text format.
  Expected<std::unique_ptr<events::Sink>> open_crash_sink() const {
    const std::string& path = config_.crash_trace_path;
#ifdef TRACECORN_HARNESS_UCIR
    if (path.size() > 5 && path.compare(path.size() - 5, 5, ".ucir") == 0) {
      auto writer = formats::UcirWriter::open(path, guest_->arch(), formats::UcirWriterOptions{});
      if (!writer) return writer.error();
      return std::unique_ptr<events::Sink>(std::move(*writer));
    }
#endif
    auto writer = formats::TextWriter::open(path, guest_->arch());
    if (!writer) return writer.error();
    return std::unique_ptr<events::Sink>(std::move(*writer));
  }

  // The guest crashed: tell the recorder as tracecorn does (fault at the exact
  // instruction, then the end of the process by a signal), dump, and abort.
  [[noreturn]] void crash(const GuestCrash& crash) {
    report_crash(*recorder_, crash);
    std::string dump_error;
    try {
      auto sink = open_crash_sink();
      dump_error = sink ? recorder_->dump(**sink) : sink.error().to_string();
    } catch (const std::exception& error) {  // TextWriter throws when a write fails (fmt::print)
      dump_error = config_.crash_trace_path + ": " + error.what();
    }  // the writer has closed the file: before abort()
    std::fprintf(stderr, "fuzz_harness: guest %s\n", crash.description.c_str());
    if (dump_error.empty())
      std::fprintf(stderr, "fuzz_harness: flight-recorder trace written to %s\n", config_.crash_trace_path.c_str());
    else
      std::fprintf(stderr, "fuzz_harness: cannot write the flight-recorder trace: %s\n", dump_error.c_str());
    std::abort();  // libFuzzer catches SIGABRT and saves the input
  }

  HarnessConfig config_;
  std::unique_ptr<ParserGuest> guest_;
  std::unique_ptr<core::Recorder> recorder_;
  std::uint64_t previous_edge_ = 0;
};

// Reads the environment; exits with a message on a bad value (a usage error, at start-up).
HarnessConfig config_from_environment() {
  HarnessConfig config;
  if (const char* path = std::getenv("TRACECORN_CRASH_TRACE"); path && *path) config.crash_trace_path = path;
  if (const char* name = std::getenv("TRACECORN_FUZZ_LEVEL"); name && *name) {
    const auto level = core::parse_trace_level(name);
    if (!level) {
      std::fprintf(stderr, "fuzz_harness: TRACECORN_FUZZ_LEVEL: unknown level \"%s\"\n", name);
      std::exit(2);
    }
    config.level = *level;
  }
  if (const char* bytes = std::getenv("TRACECORN_FUZZ_RING"); bytes && *bytes) {
    char* end = nullptr;
    config.ring_bytes = std::strtoull(bytes, &end, 0);
    if (*end != '\0') {
      std::fprintf(stderr, "fuzz_harness: TRACECORN_FUZZ_RING: not a number: \"%s\"\n", bytes);
      std::exit(2);
    }
  }
  return config;
}

ParserHarness& harness() {
  static const std::unique_ptr<ParserHarness> instance = [] {
    auto created = ParserHarness::create(config_from_environment());
    if (!created) {
      std::fprintf(stderr, "fuzz_harness: %s\n", created.error().to_string().c_str());
      std::exit(2);
    }
    return std::move(*created);
  }();
  return *instance;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  harness();  // set-up errors show before the first input
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  harness().run(data, size);
  return 0;
}
