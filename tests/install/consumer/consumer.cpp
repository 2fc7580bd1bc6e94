// Role: the C++ consumer of tests/install: embeds the recorder through the
// installed headers and the CMake package only. Emulates three x86-64
// instructions (a load, an add, a store) in its own Unicorn engine at level
// `mem`, and checks that the recorder reports them with the loaded and stored
// values. Prints "consumer_cpp: ok, N events" and exits 0, or says what is
// missing and exits 1. Single thread (plus the recorder's drain thread).
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>

#include <unicorn/unicorn.h>

#include "formats/text/text_writer.h"
#include "recorder/core/recorder.h"

namespace {

constexpr std::uint64_t kCode = 0x1000;
constexpr std::uint64_t kData = 0x2000;
// mov rax, [rdi]; add rax, 5; mov [rdi + 8], rax
constexpr std::uint8_t kSnippet[] = {0x48, 0x8b, 0x07, 0x48, 0x83, 0xc0, 0x05, 0x48, 0x89, 0x47, 0x08};

// Counts what the recorder delivers (on its drain thread; read after finish()).
class CountingSink final : public tracecorn::events::Sink {
 public:
  void begin(const tracecorn::events::TraceInfo&) override {}
  void on_event(const tracecorn::events::Event& event) override {
    ++events;
    using tracecorn::events::EventKind;
    if (event.kind == EventKind::kInstruction) ++instructions;
    if (event.kind == EventKind::kMemoryRead || event.kind == EventKind::kMemoryWrite) {
      const auto& memory = std::get<tracecorn::events::MemoryEvent>(event.payload);
      if (event.kind == EventKind::kMemoryRead && memory.address.value == kData && memory.value == 37) ++good_reads;
      if (event.kind == EventKind::kMemoryWrite && memory.address.value == kData + 8 && memory.value == 42)
        ++good_writes;
    }
  }
  std::string end(const tracecorn::events::TraceSummary&) override { return ""; }
  int events = 0, instructions = 0, good_reads = 0, good_writes = 0;
};

}  // namespace

int main() {
  uc_engine* engine = nullptr;
  if (uc_open(UC_ARCH_X86, UC_MODE_64, &engine) != UC_ERR_OK) return 1;
  const std::uint64_t value = 37, pointer = kData;
  uc_mem_map(engine, kCode, 0x1000, UC_PROT_READ | UC_PROT_EXEC);
  uc_mem_map(engine, kData, 0x1000, UC_PROT_READ | UC_PROT_WRITE);
  uc_mem_write(engine, kCode, kSnippet, sizeof kSnippet);
  uc_mem_write(engine, kData, &value, sizeof value);
  uc_reg_write(engine, UC_X86_REG_RDI, &pointer);

  CountingSink sink;
  auto text = tracecorn::formats::TextWriter::open("consumer_cpp_trace.txt", tracecorn::arch::x86_64_arch());
  if (!text) {
    std::fprintf(stderr, "consumer_cpp: %s\n", text.error().to_string().c_str());
    return 1;
  }
  tracecorn::core::RecorderOptions options;
  options.level = tracecorn::core::TraceLevel::kMemory;
  options.ring_bytes = 1 << 16;
  auto recorder =
      tracecorn::core::Recorder::attach(engine, tracecorn::arch::x86_64_arch(), options, {&sink, text->get()}, {});
  if (!recorder) {
    std::fprintf(stderr, "consumer_cpp: %s\n", recorder.error().to_string().c_str());
    return 1;
  }
  const uc_err err = uc_emu_start(engine, kCode, kCode + sizeof kSnippet, 0, 0);
  const std::string finish_error = (*recorder)->finish();
  uc_close(engine);
  if (err != UC_ERR_OK || !finish_error.empty() || sink.instructions != 3 || sink.good_reads != 1 ||
      sink.good_writes != 1) {
    std::fprintf(stderr, "consumer_cpp: FAILED: %s; %s; %d instructions, %d reads of 37, %d writes of 42\n",
                 uc_strerror(err), finish_error.c_str(), sink.instructions, sink.good_reads, sink.good_writes);
    return 1;
  }
  std::printf("consumer_cpp: ok, %d events\n", sink.events);
  return 0;
}
