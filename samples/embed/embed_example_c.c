/*
 * Role: embed_example.cpp's twin in C, through the C API
 * (recorder/capi/tracecorn.h): the same engine, snippet (sum_snippet.h), level
 * `full` and text trace on stdout, plus an event callback that counts the
 * events by kind. Shows a C harness's whole life cycle: options, create, run,
 * finish, stats, destroy, and errors through return codes.
 * Who runs it: a person reading the samples, and the embed_examples test,
 * which checks that its trace is the same as embed_example's.
 * Threads: the callback runs on the recorder's drain thread; main reads the
 * counts only after tracecorn_recorder_finish(), which joins that thread.
 * Output: the text trace, "sum = 31 (expected 31)", a "callback: ..." line and
 * a "stats: ..." line. Exit status 0, or 1 with a message on stderr.
 * Usage: embed_example_c [TRACE [ucir|frames|bintrace [zstd]]]: also writes
 * the trace file TRACE in that format (read_trace_c.c reads it back).
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <unicorn/unicorn.h>

#include "recorder/capi/tracecorn.h"
#include "sum_snippet.h"

/* Events seen by the callback, by kind (index: tracecorn_event_kind). */
struct event_counts {
  unsigned long long by_kind[TRACECORN_EVENT_GAP + 1];
  unsigned long long total;
};

static void count_event(const tracecorn_event* event, void* user) {
  struct event_counts* counts = (struct event_counts*)user;
  if (event->kind >= TRACECORN_EVENT_BLOCK && event->kind <= TRACECORN_EVENT_GAP) ++counts->by_kind[event->kind];
  ++counts->total;
}

/* Maps the snippet and its data and points rdi, rsi and rdx at them. Returns 0 on success. */
static int load_snippet(uc_engine* engine) {
  const uint64_t array = EMBED_ARRAY_ADDRESS, count = EMBED_ARRAY_COUNT, output = EMBED_OUTPUT_ADDRESS;
  if (uc_mem_map(engine, EMBED_CODE_ADDRESS, EMBED_PAGE_SIZE, UC_PROT_READ | UC_PROT_EXEC) != UC_ERR_OK ||
      uc_mem_map(engine, EMBED_ARRAY_ADDRESS, EMBED_PAGE_SIZE, UC_PROT_READ | UC_PROT_WRITE) != UC_ERR_OK ||
      uc_mem_write(engine, EMBED_CODE_ADDRESS, kEmbedSumCode, sizeof kEmbedSumCode) != UC_ERR_OK ||
      uc_mem_write(engine, EMBED_ARRAY_ADDRESS, kEmbedArray, sizeof kEmbedArray) != UC_ERR_OK ||
      uc_reg_write(engine, UC_X86_REG_RDI, &array) != UC_ERR_OK ||
      uc_reg_write(engine, UC_X86_REG_RSI, &count) != UC_ERR_OK ||
      uc_reg_write(engine, UC_X86_REG_RDX, &output) != UC_ERR_OK)
    return -1;
  return 0;
}

/* Records the snippet on `engine` (also into `trace_path` in `trace_format`,
   zstd when `zstd`, when trace_path is not NULL); returns the exit status. */
static int record(uc_engine* engine, const char* trace_path, const char* trace_format, int zstd) {
  tracecorn_options options;
  tracecorn_recorder* recorder = NULL;
  tracecorn_stats stats;
  struct event_counts counts = {{0}, 0};
  char error[256];
  uint64_t sum = 0;
  uc_err err;

  tracecorn_options_init(&options);
  options.arch = "x86_64";
  options.level = TRACECORN_LEVEL_FULL;
  options.ring_bytes = 1u << 20;
  options.text_path = "-";
  options.callback = count_event;
  options.callback_user = &counts;
  options.program = "sum_snippet";
  options.trace_path = trace_path;     /* a trace file too (NULL: none) */
  options.trace_format = trace_format; /* "ucir", "frames", "bintrace" */
  options.trace_zstd = zstd;
  if (tracecorn_recorder_create(engine, &options, &recorder, error, sizeof error) != TRACECORN_OK) {
    fprintf(stderr, "embed_example_c: %s\n", error);
    return 1;
  }

  err = uc_emu_start(engine, EMBED_CODE_ADDRESS, EMBED_CODE_END, 0, 0);
  if (tracecorn_recorder_finish(recorder) != TRACECORN_OK) {
    fprintf(stderr, "embed_example_c: %s\n", tracecorn_last_error(recorder));
    tracecorn_recorder_destroy(recorder);
    return 1;
  }
  if (err != UC_ERR_OK) {
    fprintf(stderr, "embed_example_c: emulation failed: %s\n", uc_strerror(err));
    tracecorn_recorder_destroy(recorder);
    return 1;
  }

  uc_reg_read(engine, UC_X86_REG_RAX, &sum);
  printf("sum = %llu (expected %u)\n", (unsigned long long)sum, EMBED_EXPECTED_SUM);
  printf("callback: %llu events: %llu block, %llu insn, %llu read, %llu write, %llu regs\n", counts.total,
         counts.by_kind[TRACECORN_EVENT_BLOCK], counts.by_kind[TRACECORN_EVENT_INSN],
         counts.by_kind[TRACECORN_EVENT_MEM_READ], counts.by_kind[TRACECORN_EVENT_MEM_WRITE],
         counts.by_kind[TRACECORN_EVENT_REGISTERS]);
  tracecorn_recorder_stats(recorder, &stats);
  printf("stats: %llu events, %llu instructions, %llu records, %llu ring bytes, %llu blocks decoded, %llu lost\n",
         (unsigned long long)stats.events, (unsigned long long)stats.instructions, (unsigned long long)stats.records,
         (unsigned long long)stats.ring_bytes_written, (unsigned long long)stats.blocks_decoded,
         (unsigned long long)(stats.records_lost + stats.records_overwritten));
  tracecorn_recorder_destroy(recorder);
  return sum == EMBED_EXPECTED_SUM ? 0 : 1;
}

int main(int argc, char** argv) {
  uc_engine* engine = NULL;
  int status;
  const char* trace_path = argc > 1 ? argv[1] : NULL;
  const char* trace_format = argc > 2 ? argv[2] : "ucir";
  const int zstd = argc > 3 && strcmp(argv[3], "zstd") == 0;
  if (uc_open(UC_ARCH_X86, UC_MODE_64, &engine) != UC_ERR_OK) {
    fprintf(stderr, "embed_example_c: cannot open a Unicorn engine\n");
    return 1;
  }
  if (load_snippet(engine) != 0) {
    fprintf(stderr, "embed_example_c: cannot map the snippet\n");
    uc_close(engine);
    return 1;
  }
  status = record(engine, trace_path, trace_format, zstd);
  uc_close(engine); /* after the recorder is destroyed: it removes its hooks from the engine */
  return status;
}
