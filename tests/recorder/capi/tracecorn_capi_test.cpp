// Role: unit tests of the C API (recorder/capi/tracecorn.h): creation errors
// and their messages, a lossless run seen through the callback, code ranges,
// finish (twice, and with a failing sink), the flight recorder's dumps, NULL
// handles. The guest is samples/embed/sum_snippet.h: a loop of 60 instructions
// with 8 loads and 8 stores.
// Runs in unit_tests, one engine per test case, on the test thread (the
// callbacks of lossless recorders run on the drain thread and are read after
// finish, which joins it).
#include <doctest/doctest.h>

#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

#include "recorder/capi/tracecorn.h"
#include "samples/embed/sum_snippet.h"
#include "tests/recorder/capi/capi_from_c.h"

namespace {

// A Unicorn engine with the sum snippet mapped and its registers set.
class SnippetEngine {
 public:
  explicit SnippetEngine(uc_arch arch = UC_ARCH_X86, uc_mode mode = UC_MODE_64) {
    REQUIRE(uc_open(arch, mode, &engine_) == UC_ERR_OK);
    if (arch != UC_ARCH_X86) return;
    const std::uint64_t array = EMBED_ARRAY_ADDRESS, count = EMBED_ARRAY_COUNT, output = EMBED_OUTPUT_ADDRESS;
    REQUIRE(uc_mem_map(engine_, EMBED_CODE_ADDRESS, EMBED_PAGE_SIZE, UC_PROT_READ | UC_PROT_EXEC) == UC_ERR_OK);
    REQUIRE(uc_mem_map(engine_, EMBED_ARRAY_ADDRESS, EMBED_PAGE_SIZE, UC_PROT_READ | UC_PROT_WRITE) == UC_ERR_OK);
    REQUIRE(uc_mem_write(engine_, EMBED_CODE_ADDRESS, kEmbedSumCode, sizeof kEmbedSumCode) == UC_ERR_OK);
    REQUIRE(uc_mem_write(engine_, EMBED_ARRAY_ADDRESS, kEmbedArray, sizeof kEmbedArray) == UC_ERR_OK);
    uc_reg_write(engine_, UC_X86_REG_RDI, &array);
    uc_reg_write(engine_, UC_X86_REG_RSI, &count);
    uc_reg_write(engine_, UC_X86_REG_RDX, &output);
  }
  ~SnippetEngine() { uc_close(engine_); }
  SnippetEngine(const SnippetEngine&) = delete;
  SnippetEngine& operator=(const SnippetEngine&) = delete;

  uc_engine* get() const { return engine_; }
  uc_err run() const { return uc_emu_start(engine_, EMBED_CODE_ADDRESS, EMBED_CODE_END, 0, 0); }

 private:
  uc_engine* engine_ = nullptr;
};

// An event copied out of the callback (its text is only valid during the call).
struct StoredEvent {
  tracecorn_event event;
  std::string text;
};

void store_event(const tracecorn_event* event, void* user) {
  static_cast<std::vector<StoredEvent>*>(user)->push_back({*event, event->text});
}

tracecorn_options x86_options(tracecorn_level level = TRACECORN_LEVEL_INSNS) {
  tracecorn_options options;
  tracecorn_options_init(&options);
  options.arch = "x86_64";
  options.level = level;
  options.ring_bytes = 1 << 16;
  return options;
}

// Creates a recorder expecting `expected`; returns the creation message.
std::string create_error(uc_engine* engine, const tracecorn_options& options, tracecorn_status expected) {
  int sentinel = 0;
  auto* recorder = reinterpret_cast<tracecorn_recorder*>(&sentinel);  // must be reset to NULL
  char error[512] = "unchanged";
  const tracecorn_status status = tracecorn_recorder_create(engine, &options, &recorder, error, sizeof error);
  CHECK(status == expected);
  CHECK(recorder == nullptr);
  return error;
}

std::filesystem::path temp_path(const std::string& name) {
  return std::filesystem::temp_directory_path() /
         ("tracecorn_capi_test_" + std::to_string(::getpid()) + "_" + name);
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

std::size_t count_kind(const std::vector<StoredEvent>& events, tracecorn_event_kind kind) {
  std::size_t count = 0;
  for (const auto& stored : events) count += stored.event.kind == kind;
  return count;
}

// A flight recorder on `engine` whose ring the snippet's loop overflows (4 KiB, the minimum).
tracecorn_recorder* small_flight_recorder(const SnippetEngine& engine, tracecorn_level level) {
  tracecorn_options options = x86_options(level);
  options.policy = TRACECORN_POLICY_FLIGHT_RECORDER;
  options.ring_bytes = 4096;
  tracecorn_recorder* recorder = nullptr;
  char error[256] = "";
  REQUIRE_MESSAGE(tracecorn_recorder_create(engine.get(), &options, &recorder, error, sizeof error) == TRACECORN_OK,
                  std::string(error));
  return recorder;
}

}  // namespace

TEST_CASE("CAPI: options_init gives the documented defaults") {
  tracecorn_options options;
  std::memset(&options, 0xab, sizeof options);
  tracecorn_options_init(&options);
  CHECK(options.arch == nullptr);
  CHECK(options.level == TRACECORN_LEVEL_BLOCKS);
  CHECK(options.policy == TRACECORN_POLICY_LOSSLESS);
  CHECK(options.ring_bytes == 0);
  CHECK(options.code_start == 0);
  CHECK(options.code_end == 0);
  CHECK(options.text_path == nullptr);
  CHECK(!options.callback);
  CHECK(options.callback_user == nullptr);
  CHECK(options.program == nullptr);
  tracecorn_options_init(nullptr);  // no crash
}

TEST_CASE("CAPI: creation errors are return codes with a message in the caller's buffer") {
  SnippetEngine engine;
  tracecorn_options options = x86_options();

  SUBCASE("unknown architecture") {
    options.arch = "vax";
    const std::string error = create_error(engine.get(), options, TRACECORN_ERROR_INVALID_ARGUMENT);
    CHECK(error.find("unknown architecture \"vax\"") != std::string::npos);
    CHECK(error.find("x86_64") != std::string::npos);  // lists the known ones
  }
  SUBCASE("no architecture") {
    options.arch = nullptr;
    CHECK(create_error(engine.get(), options, TRACECORN_ERROR_INVALID_ARGUMENT).find("arch") != std::string::npos);
  }
  // Out-of-range enum values are set from C (in C++ they would be undefined behaviour).
  SUBCASE("bad level") {
    char error[128] = "";
    CHECK(capi_test_create_with_raw_enums(engine.get(), 42, TRACECORN_POLICY_LOSSLESS, error, sizeof error) ==
          TRACECORN_ERROR_INVALID_ARGUMENT);
    CHECK(std::string(error) == "unknown level 42");
    CHECK(capi_test_create_with_raw_enums(engine.get(), -1, TRACECORN_POLICY_LOSSLESS, error, sizeof error) ==
          TRACECORN_ERROR_INVALID_ARGUMENT);
    CHECK(std::string(error) == "unknown level -1");
    CHECK(capi_test_create_with_raw_enums(engine.get(), TRACECORN_LEVEL_FULL, TRACECORN_POLICY_LOSSLESS, error,
                                          sizeof error) == TRACECORN_OK);
  }
  SUBCASE("bad policy") {
    char error[128] = "";
    CHECK(capi_test_create_with_raw_enums(engine.get(), TRACECORN_LEVEL_BLOCKS, 7, error, sizeof error) ==
          TRACECORN_ERROR_INVALID_ARGUMENT);
    CHECK(std::string(error) == "unknown ring policy 7");
  }
  SUBCASE("ring too small") {
    options.ring_bytes = 100;
    CHECK(create_error(engine.get(), options, TRACECORN_ERROR_INVALID_ARGUMENT).find("minimum") != std::string::npos);
  }
  SUBCASE("empty code range") {
    options.code_start = 0x2000;
    options.code_end = 0x1000;
    CHECK(create_error(engine.get(), options, TRACECORN_ERROR_INVALID_ARGUMENT).find("range") != std::string::npos);
  }
  SUBCASE("a flight recorder with live sinks") {
    std::vector<StoredEvent> events;
    options.policy = TRACECORN_POLICY_FLIGHT_RECORDER;
    options.callback = store_event;
    options.callback_user = &events;
    CHECK(create_error(engine.get(), options, TRACECORN_ERROR_INVALID_ARGUMENT).find("dump") != std::string::npos);
  }
  SUBCASE("an engine of another architecture") {
    SnippetEngine arm(UC_ARCH_ARM, UC_MODE_ARM);
    CHECK(create_error(arm.get(), options, TRACECORN_ERROR_INVALID_ARGUMENT).find("not a x86_64 engine") !=
          std::string::npos);
    SnippetEngine x86_32(UC_ARCH_X86, UC_MODE_32);
    CHECK(create_error(x86_32.get(), options, TRACECORN_ERROR_INVALID_ARGUMENT).find("not a x86_64 engine") !=
          std::string::npos);
  }
  SUBCASE("a text file that cannot be opened") {
    options.text_path = "/nonexistent-directory/trace.txt";
    const std::string error = create_error(engine.get(), options, TRACECORN_ERROR_IO);
    CHECK(error.find("/nonexistent-directory/trace.txt") != std::string::npos);
  }
  SUBCASE("NULL arguments") {
    tracecorn_recorder* recorder = nullptr;
    char error[64];
    CHECK(tracecorn_recorder_create(nullptr, &options, &recorder, error, sizeof error) ==
          TRACECORN_ERROR_INVALID_ARGUMENT);
    CHECK(std::string(error) == "engine is NULL");
    CHECK(tracecorn_recorder_create(engine.get(), nullptr, &recorder, error, sizeof error) ==
          TRACECORN_ERROR_INVALID_ARGUMENT);
    CHECK(tracecorn_recorder_create(engine.get(), &options, nullptr, error, sizeof error) ==
          TRACECORN_ERROR_INVALID_ARGUMENT);
  }
  SUBCASE("the message is truncated to the buffer, and the buffer is optional") {
    options.arch = "vax";
    tracecorn_recorder* recorder = nullptr;
    char error[8] = "xxxxxxx";
    CHECK(tracecorn_recorder_create(engine.get(), &options, &recorder, error, sizeof error) ==
          TRACECORN_ERROR_INVALID_ARGUMENT);
    CHECK(std::string(error) == "unknown");
    CHECK(tracecorn_recorder_create(engine.get(), &options, &recorder, nullptr, 0) ==
          TRACECORN_ERROR_INVALID_ARGUMENT);
    CHECK(recorder == nullptr);
  }
  // The engine is untouched by failed creations: a recorder still attaches.
  tracecorn_options good = x86_options();
  tracecorn_recorder* recorder = nullptr;
  CHECK(tracecorn_recorder_create(engine.get(), &good, &recorder, nullptr, 0) == TRACECORN_OK);
  CHECK(engine.run() == UC_ERR_OK);
  CHECK(tracecorn_recorder_finish(recorder) == TRACECORN_OK);
  tracecorn_recorder_destroy(recorder);
}

TEST_CASE("CAPI: a lossless run delivers every event of the loop through the callback") {
  SnippetEngine engine;
  std::vector<StoredEvent> events;
  tracecorn_options options = x86_options(TRACECORN_LEVEL_FULL);
  options.callback = store_event;
  options.callback_user = &events;
  tracecorn_recorder* recorder = nullptr;
  char error[256] = "";
  REQUIRE_MESSAGE(tracecorn_recorder_create(engine.get(), &options, &recorder, error, sizeof error) == TRACECORN_OK,
                  error);
  REQUIRE(engine.run() == UC_ERR_OK);
  REQUIRE(tracecorn_recorder_finish(recorder) == TRACECORN_OK);
  CHECK(std::string(tracecorn_last_error(recorder)).empty());

  CHECK(count_kind(events, TRACECORN_EVENT_INSN) == 60);
  CHECK(count_kind(events, TRACECORN_EVENT_BLOCK) == 17);  // entry, then 8 x (body, loop head)
  CHECK(count_kind(events, TRACECORN_EVENT_REGISTERS) > 0);
  std::vector<std::uint64_t> reads, writes;
  std::uint64_t sum = 0;
  for (std::size_t i = 0; i < events.size(); ++i) {
    const tracecorn_event& event = events[i].event;
    CHECK(event.sequence == i);
    CHECK(events[i].text.empty());
    if (event.kind == TRACECORN_EVENT_MEM_READ) {
      CHECK(event.address == EMBED_ARRAY_ADDRESS + 8 * reads.size());
      CHECK(event.size == 8);
      CHECK(event.pc == EMBED_CODE_ADDRESS + 0x09);
      reads.push_back(event.value);
      sum += event.value;
    } else if (event.kind == TRACECORN_EVENT_MEM_WRITE) {
      CHECK(event.address == EMBED_OUTPUT_ADDRESS + 8 * writes.size());
      CHECK(event.pc == EMBED_CODE_ADDRESS + 0x10);
      CHECK(event.value == sum);  // the running sum
      writes.push_back(event.value);
    } else if (event.kind == TRACECORN_EVENT_INSN) {
      CHECK(event.pc == event.address);
      CHECK(event.address >= EMBED_CODE_ADDRESS);
      CHECK(event.address < EMBED_CODE_END);
      CHECK(event.size >= 2);
    } else if (event.kind == TRACECORN_EVENT_BLOCK) {
      CHECK(event.number >= 2);  // instructions in the block
    }
  }
  CHECK(reads == std::vector<std::uint64_t>(std::begin(kEmbedArray), std::end(kEmbedArray)));
  CHECK(writes.size() == 8);
  CHECK(sum == EMBED_EXPECTED_SUM);

  tracecorn_stats stats{};
  REQUIRE(tracecorn_recorder_stats(recorder, &stats) == TRACECORN_OK);
  CHECK(stats.events == events.size());
  CHECK(stats.instructions == 60);
  CHECK(stats.blocks_decoded == 3);
  CHECK(stats.records_lost == 0);
  CHECK(stats.records_overwritten == 0);
  tracecorn_recorder_destroy(recorder);
}

// The same run at regs level with and without derive_registers: the text traces
// (which print every changed register's value) must be the same, and the
// derived run must have computed some instructions' writes, a count stats give
// before finish too.
TEST_CASE("CAPI: derive_registers records the same register values as reading them") {
  std::string traces[2];
  std::uint64_t derived[2] = {};
  for (int derive = 0; derive < 2; ++derive) {
    SnippetEngine engine;
    const auto path = temp_path("derive" + std::to_string(derive) + ".txt");
    const std::string text_path = path.string();
    tracecorn_options options = x86_options(TRACECORN_LEVEL_REGS);
    options.text_path = text_path.c_str();
    options.derive_registers = derive;
    tracecorn_recorder* recorder = nullptr;
    char error[256] = "";
    REQUIRE_MESSAGE(tracecorn_recorder_create(engine.get(), &options, &recorder, error, sizeof error) == TRACECORN_OK,
                    error);
    REQUIRE(engine.run() == UC_ERR_OK);
    // The count is live: a harness reads it between runs, before finish (no syscall made it public).
    tracecorn_stats running{};
    REQUIRE(tracecorn_recorder_stats(recorder, &running) == TRACECORN_OK);
    CHECK((running.registers_derived > 0) == (derive == 1));
    REQUIRE(tracecorn_recorder_registers_changed(recorder) == TRACECORN_OK);
    REQUIRE(tracecorn_recorder_finish(recorder) == TRACECORN_OK);
    CHECK(tracecorn_recorder_registers_changed(recorder) == TRACECORN_ERROR_STATE);
    tracecorn_stats stats{};
    REQUIRE(tracecorn_recorder_stats(recorder, &stats) == TRACECORN_OK);
    CHECK(stats.registers_derived >= running.registers_derived);
    derived[derive] = stats.registers_derived;
    tracecorn_recorder_destroy(recorder);
    traces[derive] = read_file(path);
    std::filesystem::remove(path);
  }
  CHECK(traces[0].find("rax") != std::string::npos);
  CHECK(traces[0] == traces[1]);
  CHECK(derived[0] == 0);
  CHECK(derived[1] > 10);
  CHECK(tracecorn_recorder_registers_changed(nullptr) == TRACECORN_ERROR_INVALID_ARGUMENT);
}

// A harness that patches an instruction between runs (uc_mem_write over
// read-execute code, which no guest store reaches) tells the recorder: the
// second run's trace shows the new instruction, not the decode of the first
// (without the call, the recorder cannot know: Unicorn says nothing).
TEST_CASE("CAPI: code the harness rewrites between runs is recorded as rewritten once it says so") {
  SnippetEngine engine;
  const auto path = temp_path("patched.txt");
  const std::string text_path = path.string();
  tracecorn_options options = x86_options(TRACECORN_LEVEL_INSNS);
  options.text_path = text_path.c_str();
  tracecorn_recorder* recorder = nullptr;
  REQUIRE(tracecorn_recorder_create(engine.get(), &options, &recorder, nullptr, 0) == TRACECORN_OK);
  REQUIRE(engine.run() == UC_ERR_OK);
  const std::uint8_t sub[] = {0x4c, 0x29, 0xc0};  // at 0x0d: add rax, r8 -> sub rax, r8
  REQUIRE(uc_mem_write(engine.get(), EMBED_CODE_ADDRESS + 0x0d, sub, sizeof sub) == UC_ERR_OK);
  REQUIRE(tracecorn_recorder_code_written(recorder, EMBED_CODE_ADDRESS + 0x0d, sizeof sub) == TRACECORN_OK);
  REQUIRE(engine.run() == UC_ERR_OK);
  std::uint64_t rax = 0;
  uc_reg_read(engine.get(), UC_X86_REG_RAX, &rax);
  CHECK(rax == static_cast<std::uint64_t>(-static_cast<std::int64_t>(EMBED_EXPECTED_SUM)));  // Unicorn ran the sub
  REQUIRE(tracecorn_recorder_finish(recorder) == TRACECORN_OK);
  CHECK(tracecorn_recorder_code_written(recorder, 0, 1) == TRACECORN_ERROR_STATE);
  tracecorn_stats stats{};
  REQUIRE(tracecorn_recorder_stats(recorder, &stats) == TRACECORN_OK);
  CHECK(stats.blocks_decoded == 4);  // the loop body's block twice
  tracecorn_recorder_destroy(recorder);
  const std::string text = read_file(path);
  std::filesystem::remove(path);
  std::vector<std::string> at_0d;  // the instructions recorded at 0x1000d, in order
  for (std::size_t at = text.find(" insn 0x1000d "); at != std::string::npos; at = text.find(" insn 0x1000d ", at + 1))
    at_0d.push_back(text.substr(at + 14, text.find('\n', at) - at - 14));
  REQUIRE(at_0d.size() == 16);
  for (std::size_t i = 0; i < at_0d.size(); ++i) CHECK(at_0d[i].starts_with(i < 8 ? "add" : "sub"));
  CHECK(tracecorn_recorder_code_written(nullptr, 0, 1) == TRACECORN_ERROR_INVALID_ARGUMENT);
}

TEST_CASE("CAPI: a code range limits the recording to the code inside it") {
  SnippetEngine engine;
  std::vector<StoredEvent> events;
  tracecorn_options options = x86_options(TRACECORN_LEVEL_MEM);
  options.code_start = EMBED_CODE_ADDRESS + 0x09;  // the loop body only
  options.code_end = EMBED_CODE_ADDRESS + 0x19;
  options.callback = store_event;
  options.callback_user = &events;
  tracecorn_recorder* recorder = nullptr;
  REQUIRE(tracecorn_recorder_create(engine.get(), &options, &recorder, nullptr, 0) == TRACECORN_OK);
  REQUIRE(engine.run() == UC_ERR_OK);
  REQUIRE(tracecorn_recorder_finish(recorder) == TRACECORN_OK);
  CHECK(count_kind(events, TRACECORN_EVENT_BLOCK) == 8);
  CHECK(count_kind(events, TRACECORN_EVENT_INSN) == 40);
  CHECK(count_kind(events, TRACECORN_EVENT_MEM_READ) == 8);
  CHECK(count_kind(events, TRACECORN_EVENT_MEM_WRITE) == 8);
  for (const auto& stored : events)
    if (stored.event.kind == TRACECORN_EVENT_INSN) CHECK(stored.event.address >= options.code_start);
  tracecorn_recorder_destroy(recorder);
}

TEST_CASE("CAPI: finish twice is safe; calls after finish are refused, stats still work") {
  SnippetEngine engine;
  const auto path = temp_path("finish_twice.txt");
  tracecorn_options options = x86_options();
  const std::string path_text = path.string();
  options.text_path = path_text.c_str();
  options.program = "sum snippet";
  tracecorn_recorder* recorder = nullptr;
  REQUIRE(tracecorn_recorder_create(engine.get(), &options, &recorder, nullptr, 0) == TRACECORN_OK);
  REQUIRE(engine.run() == UC_ERR_OK);
  CHECK(tracecorn_recorder_finish(recorder) == TRACECORN_OK);
  CHECK(tracecorn_recorder_finish(recorder) == TRACECORN_OK);
  const std::string trace = read_file(path);
  CHECK(trace.rfind("# tracecorn text trace: arch x86_64, level insns, program sum snippet\n", 0) == 0);
  CHECK(trace.find("# end: ") != std::string::npos);

  CHECK(tracecorn_recorder_fault(recorder, 1, 2, SIGSEGV, "late") == TRACECORN_ERROR_STATE);
  CHECK(std::string(tracecorn_last_error(recorder)) == "fault reported after finish");
  CHECK(tracecorn_recorder_exited(recorder, 0, 0, 0) == TRACECORN_ERROR_STATE);
  CHECK(tracecorn_recorder_dump(recorder, "-") == TRACECORN_ERROR_STATE);  // lossless: nothing to dump
  CHECK(std::string(tracecorn_last_error(recorder)).find("flight-recorder") != std::string::npos);
  tracecorn_stats stats{};
  CHECK(tracecorn_recorder_stats(recorder, &stats) == TRACECORN_OK);
  CHECK(stats.instructions == 60);
  CHECK(tracecorn_recorder_finish(recorder) == TRACECORN_OK);  // earlier failures do not stick to finish
  tracecorn_recorder_destroy(recorder);
  std::filesystem::remove(path);
}

TEST_CASE("CAPI: finish reports a sink's write error, every time it is called") {
  SnippetEngine engine;
  tracecorn_options options = x86_options(TRACECORN_LEVEL_FULL);
  options.text_path = "/dev/full";
  tracecorn_recorder* recorder = nullptr;
  REQUIRE(tracecorn_recorder_create(engine.get(), &options, &recorder, nullptr, 0) == TRACECORN_OK);
  REQUIRE(engine.run() == UC_ERR_OK);
  CHECK(tracecorn_recorder_finish(recorder) == TRACECORN_ERROR_IO);
  const std::string first = tracecorn_last_error(recorder);
  CHECK(first.find("/dev/full") != std::string::npos);
  CHECK(tracecorn_recorder_finish(recorder) == TRACECORN_ERROR_IO);
  CHECK(std::string(tracecorn_last_error(recorder)) == first);
  tracecorn_recorder_destroy(recorder);
}

TEST_CASE("CAPI: destroy without finish finishes the recorder and ends its trace") {
  SnippetEngine engine;
  const auto path = temp_path("destroy.txt");
  const std::string path_text = path.string();
  tracecorn_options options = x86_options();
  options.text_path = path_text.c_str();
  tracecorn_recorder* recorder = nullptr;
  REQUIRE(tracecorn_recorder_create(engine.get(), &options, &recorder, nullptr, 0) == TRACECORN_OK);
  REQUIRE(engine.run() == UC_ERR_OK);
  tracecorn_recorder_destroy(recorder);
  CHECK(read_file(path).find("# end: ") != std::string::npos);
  // The hooks are gone: the engine runs on without the recorder.
  CHECK(engine.run() == UC_ERR_OK);
  std::filesystem::remove(path);
}

TEST_CASE("CAPI: the flight recorder dumps its last events, ending with the reported fault") {
  SnippetEngine engine;
  tracecorn_recorder* recorder = small_flight_recorder(engine, TRACECORN_LEVEL_MEM);
  for (int run = 0; run < 20; ++run) REQUIRE(engine.run() == UC_ERR_OK);
  const std::uint64_t fault_pc = EMBED_CODE_ADDRESS + 0x10;
  REQUIRE(tracecorn_recorder_fault(recorder, fault_pc, 0x1234, SIGSEGV, "a test fault") == TRACECORN_OK);
  REQUIRE(tracecorn_recorder_exited(recorder, 1, 0, SIGSEGV) == TRACECORN_OK);

  std::vector<StoredEvent> events;
  REQUIRE(tracecorn_recorder_dump_events(recorder, store_event, &events) == TRACECORN_OK);
  REQUIRE(events.size() > 10);
  CHECK(events.front().event.kind == TRACECORN_EVENT_GAP);
  CHECK(events.front().event.value > 0);
  CHECK(events.front().text.find("overwritten") != std::string::npos);
  const StoredEvent& fault = events[events.size() - 2];
  REQUIRE(fault.event.kind == TRACECORN_EVENT_FAULT);
  CHECK(fault.event.pc == fault_pc);
  CHECK(fault.event.address == 0x1234);
  CHECK(fault.event.number == SIGSEGV);
  CHECK(fault.text == "a test fault");
  const StoredEvent& exit = events.back();
  CHECK(exit.event.kind == TRACECORN_EVENT_EXIT);
  CHECK(exit.event.number == 1);
  CHECK(exit.event.value == SIGSEGV);
  for (std::size_t i = 1; i < events.size(); ++i) CHECK(events[i].event.sequence > events[i - 1].event.sequence);

  // The same events as text, before and after finish; stats count the overwrites.
  const auto path = temp_path("dump.txt");
  CHECK(tracecorn_recorder_dump(recorder, path.string().c_str()) == TRACECORN_OK);
  const std::string before = read_file(path);
  CHECK(before.find("fault pc 0x10010 address 0x1234 signal 11: a test fault\n") != std::string::npos);
  CHECK(tracecorn_recorder_finish(recorder) == TRACECORN_OK);
  CHECK(tracecorn_recorder_dump(recorder, path.string().c_str()) == TRACECORN_OK);
  CHECK(read_file(path) == before);
  tracecorn_stats stats{};
  CHECK(tracecorn_recorder_stats(recorder, &stats) == TRACECORN_OK);
  CHECK(stats.records_overwritten > 0);

  CHECK(tracecorn_recorder_dump(recorder, nullptr) == TRACECORN_ERROR_INVALID_ARGUMENT);
  CHECK(tracecorn_recorder_dump_events(recorder, nullptr, nullptr) == TRACECORN_ERROR_INVALID_ARGUMENT);
  CHECK(tracecorn_recorder_dump(recorder, "/nonexistent-directory/dump.txt") == TRACECORN_ERROR_IO);
  CHECK(std::string(tracecorn_last_error(recorder)).find("/nonexistent-directory/dump.txt") != std::string::npos);
  tracecorn_recorder_destroy(recorder);
  std::filesystem::remove(path);
}

// Every event of the trace at `path` through the C reader (text copied), or
// the reader's error as the last entry's text with kind 0.
std::vector<StoredEvent> read_with_c_reader(const std::string& path) {
  std::vector<StoredEvent> events;
  tracecorn_reader* reader = nullptr;
  char error[512] = "";
  if (tracecorn_reader_open(path.c_str(), &reader, error, sizeof error) != TRACECORN_OK)
    return {{tracecorn_event{}, error}};
  tracecorn_event event{};
  int more = 0;
  while (tracecorn_reader_next(reader, &event, &more) == TRACECORN_OK && more) events.push_back({event, event.text});
  if (tracecorn_last_reader_error(reader)[0]) events.push_back({tracecorn_event{}, tracecorn_last_reader_error(reader)});
  tracecorn_reader_close(reader);
  return events;
}

TEST_CASE("CAPI: the flight recorder dumps trace files in every format; the C reader reads them back") {
  SnippetEngine engine;
  tracecorn_recorder* recorder = small_flight_recorder(engine, TRACECORN_LEVEL_FULL);
  char error[256] = "";
  for (int run = 0; run < 20; ++run) REQUIRE(engine.run() == UC_ERR_OK);
  std::vector<StoredEvent> expected;
  REQUIRE(tracecorn_recorder_dump_events(recorder, store_event, &expected) == TRACECORN_OK);
  REQUIRE(expected.size() > 10);
  const std::size_t instructions = count_kind(expected, TRACECORN_EVENT_INSN);
  for (const char* format : {"ucir", "frames", "bintrace"}) {
    CAPTURE(format);
    for (int zstd = 0; zstd < 2; ++zstd) {
      const auto path = temp_path(std::string("dump.") + format);
      REQUIRE(tracecorn_recorder_dump_trace(recorder, path.string().c_str(), format, zstd) == TRACECORN_OK);
      const std::vector<StoredEvent> events = read_with_c_reader(path.string());
      REQUIRE(!events.empty());
      REQUIRE_MESSAGE(events.back().event.kind != 0, events.back().text);
      CHECK(count_kind(events, TRACECORN_EVENT_INSN) == instructions);
      CHECK(count_kind(events, TRACECORN_EVENT_MEM_WRITE) == count_kind(expected, TRACECORN_EVENT_MEM_WRITE));
      std::filesystem::remove(path);
    }
  }
  const auto path = temp_path("dump.bad");
  CHECK(tracecorn_recorder_dump_trace(recorder, path.string().c_str(), "mp4", 0) == TRACECORN_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(tracecorn_last_error(recorder)).find("unknown format 'mp4'") != std::string::npos);
  CHECK(tracecorn_recorder_dump_trace(recorder, "/nonexistent-directory/x.ucir", "ucir", 0) == TRACECORN_ERROR_IO);
  CHECK(tracecorn_recorder_dump_trace(recorder, nullptr, "ucir", 0) == TRACECORN_ERROR_INVALID_ARGUMENT);
  tracecorn_recorder_destroy(recorder);

  // A lossless recorder writes its trace file itself and has nothing to dump.
  SnippetEngine lossless;
  tracecorn_options file_options = x86_options(TRACECORN_LEVEL_BLOCKS);
  const std::string file = temp_path("lossless.ucir").string();
  file_options.trace_path = file.c_str();
  file_options.trace_zstd = 1;
  REQUIRE(tracecorn_recorder_create(lossless.get(), &file_options, &recorder, error, sizeof error) == TRACECORN_OK);
  REQUIRE(lossless.run() == UC_ERR_OK);
  CHECK(tracecorn_recorder_dump_trace(recorder, path.string().c_str(), "ucir", 0) == TRACECORN_ERROR_STATE);
  REQUIRE(tracecorn_recorder_finish(recorder) == TRACECORN_OK);
  tracecorn_recorder_destroy(recorder);
  const std::vector<StoredEvent> blocks = read_with_c_reader(file);
  REQUIRE(!blocks.empty());
  REQUIRE_MESSAGE(blocks.back().event.kind != 0, blocks.back().text);
  CHECK(count_kind(blocks, TRACECORN_EVENT_BLOCK) == 17);  // the loop's blocks (embed_example's text trace)
  file_options.trace_format = "bintrace";  // needs the regs or full level
  CHECK(create_error(lossless.get(), file_options, TRACECORN_ERROR_INVALID_ARGUMENT).find("regs or full") !=
        std::string::npos);
  std::filesystem::remove(file);
}

TEST_CASE("Malicious: the C reader refuses bad arguments and files with a status and the file's name") {
  tracecorn_reader* reader = nullptr;
  char error[512] = "";
  CHECK(tracecorn_reader_open(nullptr, &reader, error, sizeof error) == TRACECORN_ERROR_INVALID_ARGUMENT);
  CHECK(tracecorn_reader_open("/nonexistent-directory/t.ucir", &reader, error, sizeof error) == TRACECORN_ERROR_IO);
  CHECK(reader == nullptr);
  const auto path = temp_path("notes.txt");
  std::ofstream(path) << "no trace here\n";
  CHECK(tracecorn_reader_open(path.string().c_str(), &reader, error, sizeof error) == TRACECORN_ERROR_BAD_TRACE);
  CHECK(std::string(error).find("not a trace") != std::string::npos);
  CHECK(std::string(error).find(path.string()) != std::string::npos);
  std::filesystem::remove(path);
  tracecorn_event event{};
  int more = 1;
  CHECK(tracecorn_reader_next(nullptr, &event, &more) == TRACECORN_ERROR_INVALID_ARGUMENT);
  CHECK(more == 0);
  CHECK(tracecorn_reader_register_count(nullptr) == 0);
  CHECK(std::string(tracecorn_last_reader_error(nullptr)) != "");
  CHECK(std::string(tracecorn_status_name(TRACECORN_ERROR_BAD_TRACE)) == "bad trace");
  tracecorn_reader_close(nullptr);
}

TEST_CASE("Malicious: the C reader reads or refuses damaged traces (bytes flipped, cut), never crashes") {
  for (const char* format : {"ucir", "frames", "bintrace"}) {
    CAPTURE(format);
    const std::string path = temp_path(std::string("whole.") + format).string();
    {
      SnippetEngine engine;
      tracecorn_options options = x86_options(TRACECORN_LEVEL_FULL);
      options.trace_path = path.c_str();
      options.trace_format = format;
      tracecorn_recorder* recorder = nullptr;
      char error[256] = "";
      REQUIRE(tracecorn_recorder_create(engine.get(), &options, &recorder, error, sizeof error) == TRACECORN_OK);
      REQUIRE(engine.run() == UC_ERR_OK);
      REQUIRE(tracecorn_recorder_finish(recorder) == TRACECORN_OK);
      tracecorn_recorder_destroy(recorder);
    }
    std::ifstream in(path, std::ios::binary);
    const std::string whole((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    REQUIRE(whole.size() > 64);
    std::uint32_t seed = 23;
    auto next = [&seed] { return seed = seed * 1103515245u + 12345u; };
    int refused = 0;
    const std::string damaged = temp_path(std::string("damaged.") + format).string();
    for (int variant = 0; variant < 100; ++variant) {
      std::string bytes = variant % 3 == 0 ? whole.substr(0, 1 + next() % whole.size()) : whole;
      for (int flips = 1 + next() % 6; flips > 0; --flips) bytes[next() % bytes.size()] = static_cast<char>(next());
      std::ofstream(damaged, std::ios::binary) << bytes;
      const std::vector<StoredEvent> events = read_with_c_reader(damaged);  // never crashes
      if (!events.empty() && events.back().event.kind == 0) {
        ++refused;
        CHECK(events.back().text.find(damaged) != std::string::npos);  // the message names the file
      }
    }
    CHECK(refused > 0);
    std::filesystem::remove(damaged);
    std::filesystem::remove(path);
  }
}

TEST_CASE("CAPI: NULL handles are refused without crashing") {
  tracecorn_stats stats{};
  CHECK(tracecorn_recorder_fault(nullptr, 0, 0, 0, nullptr) == TRACECORN_ERROR_INVALID_ARGUMENT);
  CHECK(tracecorn_recorder_exited(nullptr, 0, 0, 0) == TRACECORN_ERROR_INVALID_ARGUMENT);
  CHECK(tracecorn_recorder_dump(nullptr, "-") == TRACECORN_ERROR_INVALID_ARGUMENT);
  CHECK(tracecorn_recorder_dump_events(nullptr, store_event, nullptr) == TRACECORN_ERROR_INVALID_ARGUMENT);
  CHECK(tracecorn_recorder_finish(nullptr) == TRACECORN_ERROR_INVALID_ARGUMENT);
  CHECK(tracecorn_recorder_stats(nullptr, &stats) == TRACECORN_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(tracecorn_last_error(nullptr)).find("NULL") != std::string::npos);
  tracecorn_recorder_destroy(nullptr);
}

TEST_CASE("CAPI: level names parse as the CLI spells them; statuses and kinds have names") {
  tracecorn_level level = TRACECORN_LEVEL_BLOCKS;
  CHECK(tracecorn_parse_level("full", &level) == TRACECORN_OK);
  CHECK(level == TRACECORN_LEVEL_FULL);
  CHECK(tracecorn_parse_level("insns", &level) == TRACECORN_OK);
  CHECK(level == TRACECORN_LEVEL_INSNS);
  CHECK(tracecorn_parse_level("everything", &level) == TRACECORN_ERROR_INVALID_ARGUMENT);
  CHECK(level == TRACECORN_LEVEL_INSNS);
  CHECK(tracecorn_parse_level(nullptr, &level) == TRACECORN_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(tracecorn_status_name(TRACECORN_ERROR_IO)) == "i/o error");
  CHECK(std::string(tracecorn_status_name(static_cast<tracecorn_status>(99))) == "unknown status");
  CHECK(std::string(tracecorn_event_kind_name(TRACECORN_EVENT_MEM_WRITE)) == "write");
  CHECK(std::string(tracecorn_event_kind_name(TRACECORN_EVENT_SIGNAL)) == "signal");
  CHECK(std::string(tracecorn_event_kind_name(TRACECORN_EVENT_THREAD)) == "thread");
  CHECK(std::string(tracecorn_event_kind_name(static_cast<tracecorn_event_kind>(0))) == "unknown");
}
