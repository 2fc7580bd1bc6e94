/*
 * Role: the C consumer of tests/install: embeds the recorder through the
 * installed C header (recorder/capi/tracecorn.h) and pkg-config only (built by
 * run_install_test.cmake as `cc consumer.c $(pkg-config --cflags --libs
 * tracecorn)`). Emulates a load, an add and a store at level `mem` and checks,
 * through the event callback, that the recorder reports them with their values;
 * writes the same events into a UCIR+zstd file (options.trace_path) and reads
 * it back with the C reader (the formats' libraries and their dependencies
 * come through pkg-config too).
 * Prints "consumer_c: ok, N events, N read back" and exits 0, or exits 1 saying why.
 */
#include <stdint.h>
#include <stdio.h>

#include <unicorn/unicorn.h>

#include "recorder/capi/tracecorn.h"

#define CODE_ADDRESS 0x1000u
#define DATA_ADDRESS 0x2000u

/* mov rax, [rdi]; add rax, 5; mov [rdi + 8], rax */
static const uint8_t kSnippet[] = {0x48, 0x8b, 0x07, 0x48, 0x83, 0xc0, 0x05, 0x48, 0x89, 0x47, 0x08};

struct counts {
  int events, instructions, good_reads, good_writes;
};

/* Runs on the recorder's drain thread; main reads the counts after finish. */
static void on_event(const tracecorn_event* event, void* user) {
  struct counts* counts = (struct counts*)user;
  ++counts->events;
  if (event->kind == TRACECORN_EVENT_INSN) ++counts->instructions;
  if (event->kind == TRACECORN_EVENT_MEM_READ && event->address == DATA_ADDRESS && event->value == 37)
    ++counts->good_reads;
  if (event->kind == TRACECORN_EVENT_MEM_WRITE && event->address == DATA_ADDRESS + 8 && event->value == 42)
    ++counts->good_writes;
}

/* The events of the trace at `path`, through the C reader; -1 when it cannot be
   read or lacks the store of 42. */
static int read_back(const char* path) {
  tracecorn_reader* reader = NULL;
  tracecorn_event event;
  char error[256];
  int more = 0, events = 0, good_writes = 0;
  if (tracecorn_reader_open(path, &reader, error, sizeof error) != TRACECORN_OK) {
    fprintf(stderr, "consumer_c: %s\n", error);
    return -1;
  }
  while (tracecorn_reader_next(reader, &event, &more) == TRACECORN_OK && more) {
    ++events;
    if (event.kind == TRACECORN_EVENT_MEM_WRITE && event.address == DATA_ADDRESS + 8 && event.value == 42)
      ++good_writes;
  }
  if (tracecorn_last_reader_error(reader)[0]) fprintf(stderr, "consumer_c: %s\n", tracecorn_last_reader_error(reader));
  if (tracecorn_last_reader_error(reader)[0] || good_writes != 1) events = -1;
  tracecorn_reader_close(reader);
  return events;
}

int main(void) {
  uc_engine* engine = NULL;
  tracecorn_options options;
  tracecorn_recorder* recorder = NULL;
  struct counts counts = {0, 0, 0, 0};
  char error[256];
  const uint64_t value = 37, pointer = DATA_ADDRESS;
  uc_err err;
  tracecorn_status finished;
  int read;

  if (uc_open(UC_ARCH_X86, UC_MODE_64, &engine) != UC_ERR_OK) return 1;
  uc_mem_map(engine, CODE_ADDRESS, 0x1000, UC_PROT_READ | UC_PROT_EXEC);
  uc_mem_map(engine, DATA_ADDRESS, 0x1000, UC_PROT_READ | UC_PROT_WRITE);
  uc_mem_write(engine, CODE_ADDRESS, kSnippet, sizeof kSnippet);
  uc_mem_write(engine, DATA_ADDRESS, &value, sizeof value);
  uc_reg_write(engine, UC_X86_REG_RDI, &pointer);

  tracecorn_options_init(&options);
  options.arch = "x86_64";
  options.level = TRACECORN_LEVEL_MEM;
  options.ring_bytes = 1u << 16;
  options.callback = on_event;
  options.callback_user = &counts;
  options.trace_path = "consumer.ucir";
  options.trace_format = "ucir";
  options.trace_zstd = 1;
  if (tracecorn_recorder_create(engine, &options, &recorder, error, sizeof error) != TRACECORN_OK) {
    fprintf(stderr, "consumer_c: %s\n", error);
    return 1;
  }
  err = uc_emu_start(engine, CODE_ADDRESS, CODE_ADDRESS + sizeof kSnippet, 0, 0);
  finished = tracecorn_recorder_finish(recorder);
  if (err != UC_ERR_OK || finished != TRACECORN_OK || counts.instructions != 3 || counts.good_reads != 1 ||
      counts.good_writes != 1) {
    fprintf(stderr, "consumer_c: FAILED: %s; %s; %d instructions, %d reads of 37, %d writes of 42\n",
            uc_strerror(err), tracecorn_last_error(recorder), counts.instructions, counts.good_reads,
            counts.good_writes);
    return 1;
  }
  tracecorn_recorder_destroy(recorder);
  uc_close(engine);
  read = read_back("consumer.ucir");
  if (read < 0) return 1;
  printf("consumer_c: ok, %d events, %d read back\n", counts.events, read);
  return 0;
}
