/*
 * Role: reading a trace back through the C API only (tracecorn_reader_*,
 * recorder/capi/tracecorn.h): any format tracecorn writes, plain or zstd.
 * Prints the trace's architecture and level, its events counted by kind, each
 * syscall with its arguments, result and stack depth, how many register
 * values and kernel writes the events carry, and the first block's code
 * bytes. What another language's FFI (Rust, Go, Zig) binds to.
 * Who runs it: a person reading the samples, and the c_trace_files test,
 * which compares its counts with `tracecorn stat` on traces the C API wrote
 * (embed_example_c) and the CLI recorded.
 * Usage: read_trace_c TRACE [--quiet]   (--quiet: no syscall lines)
 * Output: "arch ARCH level LEVEL", the "syscall: NAME(A, B, C) = R stack D"
 * lines, "events N", one "KIND N" line per kind seen, "registers N", "kernel writes N", "code ...".
 * Exit status 0, or 1 with the reader's message (file, offset) on stderr.
 */
#include <stdio.h>
#include <string.h>

#include "recorder/capi/tracecorn.h"

#define KIND_COUNT 16

struct totals {
  unsigned long long events, by_kind[KIND_COUNT], registers, kernel_writes;
  size_t first_code_size;
  unsigned char first_code[16];
};

static void print_syscall(const tracecorn_reader* reader, const tracecorn_event* event) {
  printf("syscall: %s(0x%llx, 0x%llx, 0x%llx) = %lld stack %zu\n", event->text,
         (unsigned long long)tracecorn_reader_syscall_arg(reader, 0),
         (unsigned long long)tracecorn_reader_syscall_arg(reader, 1),
         (unsigned long long)tracecorn_reader_syscall_arg(reader, 2), (long long)event->value,
         tracecorn_reader_stack_depth(reader));
}

/* Adds the event's details to `totals`; checks that each register reads back. */
static int count_details(const tracecorn_reader* reader, const tracecorn_event* event, struct totals* totals) {
  size_t i;
  for (i = 0; i < tracecorn_reader_register_count(reader); ++i) {
    const char* name = NULL;
    uint32_t size = 0;
    uint8_t bytes[16];
    if (tracecorn_reader_register(reader, i, &name, &size, bytes) != TRACECORN_OK || !name[0] || size == 0) return 1;
    ++totals->registers;
  }
  totals->kernel_writes += tracecorn_reader_memory_write_count(reader);
  if (event->kind == TRACECORN_EVENT_BLOCK && totals->first_code_size == 0) {
    size_t size = 0;
    const uint8_t* code = tracecorn_reader_code(reader, &size);
    totals->first_code_size = size < sizeof totals->first_code ? size : sizeof totals->first_code;
    if (code) memcpy(totals->first_code, code, totals->first_code_size);
  }
  return 0;
}

static void print_totals(const struct totals* totals) {
  int kind;
  size_t i;
  printf("events %llu\n", totals->events);
  for (kind = 1; kind < KIND_COUNT; ++kind)
    if (totals->by_kind[kind])
      printf("%s %llu\n", tracecorn_event_kind_name((tracecorn_event_kind)kind), totals->by_kind[kind]);
  printf("registers %llu\nkernel writes %llu\ncode", totals->registers, totals->kernel_writes);
  for (i = 0; i < totals->first_code_size; ++i) printf(" %02x", totals->first_code[i]);
  printf("\n");
}

int main(int argc, char** argv) {
  tracecorn_reader* reader = NULL;
  char error[512];
  struct totals totals;
  tracecorn_event event;
  int more = 0;
  const int quiet = argc > 2 && strcmp(argv[2], "--quiet") == 0;
  if (argc < 2) {
    fprintf(stderr, "usage: read_trace_c TRACE [--quiet]\n");
    return 1;
  }
  if (tracecorn_reader_open(argv[1], &reader, error, sizeof error) != TRACECORN_OK) {
    fprintf(stderr, "read_trace_c: %s\n", error);
    return 1;
  }
  memset(&totals, 0, sizeof totals);
  printf("arch %s level %s\n", tracecorn_reader_arch(reader), tracecorn_reader_level(reader));
  while (tracecorn_reader_next(reader, &event, &more) == TRACECORN_OK && more) {
    ++totals.events;
    if (event.kind > 0 && event.kind < KIND_COUNT) ++totals.by_kind[event.kind];
    if (event.kind == TRACECORN_EVENT_SYSCALL && !quiet) print_syscall(reader, &event);
    if (count_details(reader, &event, &totals) != 0) {
      fprintf(stderr, "read_trace_c: event %llu: a register does not read back\n",
              (unsigned long long)tracecorn_reader_index(reader));
      tracecorn_reader_close(reader);
      return 1;
    }
  }
  if (tracecorn_last_reader_error(reader)[0]) {
    fprintf(stderr, "read_trace_c: %s\n", tracecorn_last_reader_error(reader));
    tracecorn_reader_close(reader);
    return 1;
  }
  print_totals(&totals);
  tracecorn_reader_close(reader);
  return 0;
}
