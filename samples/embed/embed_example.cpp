// Role: how a host program embeds tracecorn's recorder through the C++ API
// (recorder/core/recorder.h). It creates its own Unicorn engine, maps a small
// x86-64 loop that sums an array (sum_snippet.h), attaches a Recorder at level
// `full` with the text sink on stdout, runs the snippet, finishes the recorder
// and prints the result and the recorder's counters.
// Who runs it: a person reading the samples, and the embed_examples test
// (check_embed_output.cmake), which checks the trace and compares it with
// embed_example_c's. Single-threaded, apart from the recorder's drain thread.
// Output: the text trace ("# tracecorn text trace ..." to "# end: ..."), then
// "sum = 31 (expected 31)" and one "stats: ..." line. Exit status 0 on success,
// 1 when a set-up step or the check of the sum fails (the message says which).
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>

#include <unicorn/unicorn.h>

#include "formats/text/text_writer.h"
#include "recorder/core/recorder.h"
#include "sum_snippet.h"

namespace {

using tracecorn::core::Recorder;

// Closes the engine when main returns (after the recorder, declared later, is gone).
struct EngineCloser {
  void operator()(uc_engine* engine) const { uc_close(engine); }
};
using EnginePtr = std::unique_ptr<uc_engine, EngineCloser>;

int fail(const std::string& what) {
  std::fprintf(stderr, "embed_example: %s\n", what.c_str());
  return 1;
}

// Maps the snippet and its data and points rdi, rsi and rdx at them.
bool load_snippet(uc_engine* engine) {
  const std::uint64_t array = EMBED_ARRAY_ADDRESS, count = EMBED_ARRAY_COUNT, output = EMBED_OUTPUT_ADDRESS;
  return uc_mem_map(engine, EMBED_CODE_ADDRESS, EMBED_PAGE_SIZE, UC_PROT_READ | UC_PROT_EXEC) == UC_ERR_OK &&
         uc_mem_map(engine, EMBED_ARRAY_ADDRESS, EMBED_PAGE_SIZE, UC_PROT_READ | UC_PROT_WRITE) == UC_ERR_OK &&
         uc_mem_write(engine, EMBED_CODE_ADDRESS, kEmbedSumCode, sizeof kEmbedSumCode) == UC_ERR_OK &&
         uc_mem_write(engine, EMBED_ARRAY_ADDRESS, kEmbedArray, sizeof kEmbedArray) == UC_ERR_OK &&
         uc_reg_write(engine, UC_X86_REG_RDI, &array) == UC_ERR_OK &&
         uc_reg_write(engine, UC_X86_REG_RSI, &count) == UC_ERR_OK &&
         uc_reg_write(engine, UC_X86_REG_RDX, &output) == UC_ERR_OK;
}

}  // namespace

int main() {
  uc_engine* raw_engine = nullptr;
  if (uc_open(UC_ARCH_X86, UC_MODE_64, &raw_engine) != UC_ERR_OK) return fail("cannot open a Unicorn engine");
  const EnginePtr engine(raw_engine);
  if (!load_snippet(engine.get())) return fail("cannot map the snippet");

  const tracecorn::arch::ArchInfo& arch = tracecorn::arch::x86_64_arch();
  auto text = tracecorn::formats::TextWriter::open("-", arch);
  if (!text) return fail(text.error().to_string());

  tracecorn::core::RecorderOptions options;
  options.level = tracecorn::core::TraceLevel::kFull;
  options.ring_bytes = 1 << 20;  // plenty for 60 instructions; the default is 64 MiB
  tracecorn::events::TraceInfo info;
  info.program = "sum_snippet";
  auto recorder = Recorder::attach(engine.get(), arch, options, {text->get()}, std::move(info));
  if (!recorder) return fail(recorder.error().to_string());

  // The recorder's hooks run inside this call; the drain thread prints meanwhile.
  const uc_err err = uc_emu_start(engine.get(), EMBED_CODE_ADDRESS, EMBED_CODE_END, 0, 0);
  // Stops recording and flushes the sink; only then is stdout ours again.
  const std::string finish_error = (*recorder)->finish();
  if (err != UC_ERR_OK) return fail(std::string("emulation failed: ") + uc_strerror(err));
  if (!finish_error.empty()) return fail(finish_error);

  std::uint64_t sum = 0;
  uc_reg_read(engine.get(), UC_X86_REG_RAX, &sum);
  std::printf("sum = %llu (expected %u)\n", static_cast<unsigned long long>(sum), EMBED_EXPECTED_SUM);
  const tracecorn::core::RecorderStats stats = (*recorder)->stats();
  std::printf("stats: %llu events, %llu instructions, %llu records, %llu ring bytes, %llu blocks decoded, %llu lost\n",
              static_cast<unsigned long long>(stats.events), static_cast<unsigned long long>(stats.instructions),
              static_cast<unsigned long long>(stats.records),
              static_cast<unsigned long long>(stats.ring_bytes_written),
              static_cast<unsigned long long>(stats.blocks_decoded),
              static_cast<unsigned long long>(stats.records_lost + stats.records_overwritten));
  return sum == EMBED_EXPECTED_SUM ? 0 : fail("wrong sum");
}
