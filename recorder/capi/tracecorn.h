/*
 * Role: tracecorn's C API, for harnesses written in C (or any language with a C
 * FFI). It wraps the C++ recorder (recorder/core/recorder.h): attach a recorder
 * to a uc_engine the caller created and owns, choose a level, a ring policy and
 * an optional code range, and receive events in a text trace file and/or a C
 * callback; dump a flight recorder's last events on demand.
 *
 * Who calls it: the caller's emulation thread (the one that runs uc_emu_start),
 * for every function on a given recorder, except tracecorn_recorder_stats(),
 * which any thread may call. Several recorders on several engines in one process
 * are fine: there is no global state.
 *
 * Invariants:
 * - No C++ exception crosses this boundary: every function returns a
 *   tracecorn_status; an unexpected failure inside (out of memory...) is
 *   TRACECORN_ERROR_INTERNAL or TRACECORN_ERROR_OUT_OF_MEMORY, never an abort.
 * - Errors after creation are explained by tracecorn_last_error(recorder), which
 *   lives in the recorder handle; creation errors go to a buffer the caller
 *   passes, since there is no handle yet.
 * - The engine must outlive the recorder; tracecorn_recorder_finish() (or
 *   tracecorn_recorder_destroy()) removes every hook the recorder added.
 *
 * Linking: the library is C++ (static): link with a C++ driver, or add the C++
 * runtime; `pkg-config --libs tracecorn` and CMake's tracecorn::capi do this.
 *
 * Minimal use:
 *
 *   tracecorn_options options;
 *   tracecorn_options_init(&options);
 *   options.arch = "x86_64";
 *   options.level = TRACECORN_LEVEL_FULL;
 *   options.text_path = "-";                       // the text trace on stdout
 *   char error[256];
 *   tracecorn_recorder* recorder = NULL;
 *   if (tracecorn_recorder_create(engine, &options, &recorder, error, sizeof error) != TRACECORN_OK)
 *     fprintf(stderr, "%s\n", error);
 *   uc_emu_start(engine, begin, until, 0, 0);
 *   if (tracecorn_recorder_finish(recorder) != TRACECORN_OK)
 *     fprintf(stderr, "%s\n", tracecorn_last_error(recorder));
 *   tracecorn_recorder_destroy(recorder);
 */
#ifndef TRACECORN_CAPI_TRACECORN_H
#define TRACECORN_CAPI_TRACECORN_H

#include <stddef.h>
#include <stdint.h>

#include <unicorn/unicorn.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The version of this C API; bumped when a function or a struct changes. */
#define TRACECORN_CAPI_VERSION 2 /* 2: trace files in every format, the reader */

/* What every function returns. */
typedef enum tracecorn_status {
  TRACECORN_OK = 0,
  TRACECORN_ERROR_INVALID_ARGUMENT = 1, /* a NULL pointer, an unknown arch, a bad level, ring size or range */
  TRACECORN_ERROR_IO = 2,               /* a trace file could not be opened or written */
  TRACECORN_ERROR_EMULATOR = 3,         /* Unicorn refused a set-up call (adding a hook) */
  TRACECORN_ERROR_STATE = 4,            /* not valid now (dump on a lossless recorder, fault after finish) */
  TRACECORN_ERROR_OUT_OF_MEMORY = 5,
  TRACECORN_ERROR_INTERNAL = 6,         /* an unexpected failure inside tracecorn (a bug) */
  TRACECORN_ERROR_BAD_TRACE = 7         /* (reader) not a trace, or a damaged or cut one; the message says
                                           the file and the byte offset */
} tracecorn_status;

/* Recording levels, from cheapest to richest (the CLI's --level). */
typedef enum tracecorn_level {
  TRACECORN_LEVEL_BLOCKS = 0, /* "blocks": blocks entered */
  TRACECORN_LEVEL_INSNS = 1,  /* "insns":  every instruction */
  TRACECORN_LEVEL_MEM = 2,    /* "mem":    plus every memory access with its value */
  TRACECORN_LEVEL_REGS = 3,   /* "regs":   instructions plus register changes */
  TRACECORN_LEVEL_FULL = 4    /* "full":   everything; memory accesses carry their exact pc */
} tracecorn_level;

/* What happens when the ring between the hooks and the sinks is full. */
typedef enum tracecorn_policy {
  TRACECORN_POLICY_LOSSLESS = 0,       /* the emulation waits for the sinks: every event is delivered */
  TRACECORN_POLICY_FLIGHT_RECORDER = 1 /* keep only the most recent ring_bytes; nothing is delivered
                                          until tracecorn_recorder_dump*() */
} tracecorn_policy;

/* Event kinds; the values are tracecorn's (events::EventKind). */
typedef enum tracecorn_event_kind {
  TRACECORN_EVENT_BLOCK = 1,
  TRACECORN_EVENT_INSN = 2,
  TRACECORN_EVENT_MEM_READ = 3,
  TRACECORN_EVENT_MEM_WRITE = 4,
  TRACECORN_EVENT_REGISTERS = 5,
  TRACECORN_EVENT_SYSCALL = 6,
  TRACECORN_EVENT_FAULT = 7,
  TRACECORN_EVENT_MODULE_LOAD = 8,
  TRACECORN_EVENT_EXIT = 9,
  TRACECORN_EVENT_GAP = 10, /* events were lost here (the flight recorder overwrote them) */
  TRACECORN_EVENT_SIGNAL = 11, /* a signal was delivered to a guest handler */
  TRACECORN_EVENT_THREAD = 12, /* a guest thread was created, exited, or switched to */
  TRACECORN_EVENT_PROCESS = 13 /* the process forked or exec'd (a recording of a program, not a harness) */
} tracecorn_event_kind;

/*
 * One event, as the callback receives it. Which fields mean what:
 *
 *   kind         address            size            value                pc                   number
 *   BLOCK        block start        code bytes      -                    block start          instructions
 *   INSN         instruction        code bytes      -                    instruction          index in block
 *   MEM_READ/    address accessed   bytes (1..8)    the value (little    the instruction, or  -
 *   MEM_WRITE                                       endian, zero-extended)  0 when unknown
 *   REGISTERS    -                  registers       -                    the instruction      -
 *                                   changed
 *   SYSCALL      -                  -               result               trapping instruction syscall number
 *   FAULT        faulting address   -               -                    faulting instruction signal
 *   MODULE_LOAD  start              -               end                  -                    load bias
 *   EXIT         -                  -               status (or signal)   -                    1 if killed by a signal
 *   GAP          -                  -               events lost          -                    -
 *   SIGNAL       handler            -               si_code              interrupted pc       signal (host number)
 *   THREAD       -                  -               the other thread     -                    1 created, 2 exited,
 *                                                   (parent, previous)                        3 switched to
 *   PROCESS      -                  -               the child's pid      -                    1 forked, 2 exec'd
 *                                                   (exec: its own)
 *
 * SIGNAL: `size` is 1 when the signal is a CPU fault of the instruction at
 * `pc` (which did not complete), else 0.
 *
 * `text`: the fault's description, the syscall's name, the module's path, the
 * gap's reason, a fork's or exec's trace file name ("" when not recorded);
 * "" for the other kinds. Never NULL.
 * `-` fields are 0. The struct and `text` are valid only during the callback.
 */
typedef struct tracecorn_event {
  tracecorn_event_kind kind;
  uint32_t size;
  uint64_t sequence; /* 0, 1, 2...: dense, a GAP event stands for the numbers it lost */
  uint64_t address;
  uint64_t value;
  uint64_t pc;
  uint64_t number;
  const char* text;
  uint32_t thread; /* the guest thread the event belongs to (its tid; the process's pid before any
                      THREAD event; 0 on a harness's engine, which has no process); for THREAD,
                      the thread created, exited or switched to */
} tracecorn_event;

/*
 * Receives every event, in sequence order, one at a time. With the lossless
 * policy it runs on the recorder's drain thread (not the emulation thread), so
 * it must not touch the engine nor call back into the recorder, and it must
 * synchronise whatever it shares with the emulation thread; for
 * tracecorn_recorder_dump_events() it runs on the caller's thread. It must
 * return normally (no longjmp, no C++ exception).
 */
typedef void (*tracecorn_event_callback)(const tracecorn_event* event, void* user);

typedef struct tracecorn_options {
  const char* arch;        /* "x86_64" (tracecorn's architecture names); required */
  tracecorn_level level;   /* default TRACECORN_LEVEL_BLOCKS */
  tracecorn_policy policy; /* default TRACECORN_POLICY_LOSSLESS */
  uint64_t ring_bytes;     /* ring capacity, rounded up to a power of two, 4 KiB..4 GiB;
                              0 = the default (64 MiB) */
  uint64_t code_start;     /* record only code in [code_start, code_end): its blocks,
                              instructions, memory accesses and register changes; */
  uint64_t code_end;       /* both 0 = all code */
  /* Where events go (lossless policy only; a flight recorder delivers nothing
     until dumped, so these must stay NULL for it): */
  const char* text_path;             /* a text trace file, "-" for stdout; NULL for none */
  tracecorn_event_callback callback; /* NULL for none */
  void* callback_user;               /* passed to the callback */
  const char* program;               /* named in the trace header; NULL for none */
  /* Non-zero: at the regs and full levels on x86, compute what simple integer
     instructions write instead of reading it (RecorderOptions::derive_registers);
     a caller that writes registers itself between runs must then call
     tracecorn_recorder_registers_changed() before running again. Default 0. */
  int derive_registers;
  /* Since version 2. A trace file (lossless policy only): `trace_path` in
     `trace_format`, "ucir" (NULL: "ucir"), "frames" or "bintrace" (both need
     the regs or full level), "text" or "null"; `trace_zstd` non-zero
     compresses it with zstd (ucir, frames, bintrace). NULL path: none. */
  const char* trace_path;
  const char* trace_format;
  int trace_zstd;
} tracecorn_options;

/* Counters; see tracecorn::core::RecorderStats. */
typedef struct tracecorn_stats {
  uint64_t records;             /* records written to the ring */
  uint64_t ring_bytes_written;
  uint64_t producer_stalls;     /* lossless: times the emulation waited for the sinks */
  uint64_t records_overwritten; /* flight recorder: records dropped to make room */
  uint64_t records_lost;        /* records that could not be written (decode failure, oversize) */
  uint64_t blocks_decoded;
  uint64_t events;              /* events handed to the sinks (after finish) */
  uint64_t instructions;        /* instructions recorded (after finish) */
  uint64_t registers_derived;   /* instructions whose register writes were computed (derive_registers) */
} tracecorn_stats;

typedef struct tracecorn_recorder tracecorn_recorder;

/* Fills `options` with the defaults above (arch NULL: the caller must set it).
   Call it first, so that fields added later get their defaults. */
void tracecorn_options_init(tracecorn_options* options);

/*
 * Attaches a recorder to `engine` (created and owned by the caller, of the
 * architecture `options->arch` names) and, for the lossless policy, starts its
 * drain thread; opens `options->text_path` if set.
 * Returns TRACECORN_OK and sets *out, or an error and sets *out to NULL, with a
 * one-line message in `error` (NUL-terminated, truncated to error_size; `error`
 * may be NULL when error_size is 0):
 *   INVALID_ARGUMENT  engine, options or out NULL; arch NULL or unknown; the
 *                     engine is of another architecture; level or policy out of
 *                     range; ring_bytes out of range; code_end <= code_start;
 *                     a flight recorder with a text_path or callback
 *   IO                text_path cannot be opened for writing
 *   EMULATOR          Unicorn refused a hook
 */
tracecorn_status tracecorn_recorder_create(uc_engine* engine, const tracecorn_options* options,
                                           tracecorn_recorder** out, char* error, size_t error_size);

/*
 * Reports that the guest faulted: `pc` the faulting instruction (note that
 * Unicorn 2.0.1 reports the start of the translation block after a memory
 * fault, not the instruction), `address` the faulting memory address (0 if
 * none), `signal` the host signal a Linux process would get (SIGSEGV...),
 * `description` one line (may be NULL). Ends the block being recorded at `pc`.
 * Returns OK, INVALID_ARGUMENT (recorder NULL) or STATE (after finish).
 */
tracecorn_status tracecorn_recorder_fault(tracecorn_recorder* recorder, uint64_t pc, uint64_t address,
                                          uint32_t signal, const char* description);

/*
 * Reports that the guest ended: by a signal (`by_signal` non-zero, `signal`
 * set) or with exit status `code`. Note: the block being executed when this is
 * called is dropped from the trace (the recorder assumes the guest ended inside
 * it, as it does at a fault); a guest that simply returns need not call this.
 * Returns OK, INVALID_ARGUMENT (recorder NULL) or STATE (after finish).
 */
tracecorn_status tracecorn_recorder_exited(tracecorn_recorder* recorder, int by_signal, int32_t code,
                                           int32_t signal);

/*
 * Tells the recorder that the caller wrote guest registers itself (uc_reg_write,
 * a context restore) while attached: it reads them all again at the next block.
 * Needed with derive_registers, harmless otherwise.
 * Returns OK, INVALID_ARGUMENT (recorder NULL) or STATE (after finish).
 */
tracecorn_status tracecorn_recorder_registers_changed(tracecorn_recorder* recorder);

/*
 * Tells the recorder that the caller wrote guest memory itself (uc_mem_write)
 * over [address, address + size) while attached: code it decoded there is
 * decoded again at its next entry, as Unicorn translates it again. Needed only
 * for code (a harness patching instructions between runs); the guest's own
 * stores into code are seen without it.
 * Returns OK, INVALID_ARGUMENT (recorder NULL) or STATE (after finish).
 */
tracecorn_status tracecorn_recorder_code_written(tracecorn_recorder* recorder, uint64_t address, uint64_t size);

/*
 * Flight recorder: writes the retained events (a GAP first when older ones were
 * overwritten) as a text trace to `path` ("-" for stdout). May be called several
 * times, before or after finish. Returns OK; INVALID_ARGUMENT (NULL argument);
 * STATE (the recorder is lossless: its events already went to its sinks); IO
 * (the file cannot be opened or written; see tracecorn_last_error).
 */
tracecorn_status tracecorn_recorder_dump(tracecorn_recorder* recorder, const char* path);

/*
 * Flight recorder: as tracecorn_recorder_dump, as a trace file in `format`
 * ("ucir", "frames", "bintrace", "text"; NULL: "ucir"), zstd when `zstd` is
 * non-zero. INVALID_ARGUMENT also for an unknown format or one the level
 * cannot fill (frames and bintrace need regs or full).
 */
tracecorn_status tracecorn_recorder_dump_trace(tracecorn_recorder* recorder, const char* path, const char* format,
                                               int zstd);
/* Flight recorder: as tracecorn_recorder_dump, to `callback` on this thread. */
tracecorn_status tracecorn_recorder_dump_events(tracecorn_recorder* recorder, tracecorn_event_callback callback,
                                                void* user);

/*
 * Stops recording: removes the hooks, delivers the remaining events, ends the
 * sinks (closes the text file). Returns OK or IO (a sink's write error, see
 * tracecorn_last_error). Idempotent: a second call returns the first result.
 */
tracecorn_status tracecorn_recorder_finish(tracecorn_recorder* recorder);

/* Copies the recorder's counters into *out. Any thread. Returns OK or
   INVALID_ARGUMENT (a NULL argument). Does not touch tracecorn_last_error. */
tracecorn_status tracecorn_recorder_stats(const tracecorn_recorder* recorder, tracecorn_stats* out);

/* Finishes the recorder if needed (ignoring its result) and frees it. NULL is a no-op. */
void tracecorn_recorder_destroy(tracecorn_recorder* recorder);

/*
 * The message of the last failed call on `recorder` ("" when none failed), valid
 * until the next call on it. A NULL recorder gives a fixed message.
 */
const char* tracecorn_last_error(const tracecorn_recorder* recorder);

/* Parses a level name ("blocks", "insns", "mem", "regs", "full") into *out.
   Returns OK or INVALID_ARGUMENT (unknown name, NULL argument). */
tracecorn_status tracecorn_parse_level(const char* name, tracecorn_level* out);

/* "ok", "invalid argument", ... for a status; "unknown status" otherwise. Never NULL. */
const char* tracecorn_status_name(tracecorn_status status);

/* "block", "insn", "read", ... for an event kind; "unknown" otherwise. Never NULL. */
const char* tracecorn_event_kind_name(tracecorn_event_kind kind);


/*
 * Reading a trace file back (since version 2): every format tracecorn writes
 * (UCIR, BAP frames, binary trace; plain or zstd), chosen by the file's
 * content. One thread per reader.
 *
 *   tracecorn_reader* reader = NULL;
 *   char error[256];
 *   if (tracecorn_reader_open("crash.ucir", &reader, error, sizeof error) != TRACECORN_OK) ...
 *   tracecorn_event event;
 *   int more = 0;
 *   while (tracecorn_reader_next(reader, &event, &more) == TRACECORN_OK && more) ...
 *   if (!more && tracecorn_last_reader_error(reader)[0]) ...   (the error that ended it)
 *   tracecorn_reader_close(reader);
 */
typedef struct tracecorn_reader tracecorn_reader;

/* Opens `path`. Errors: INVALID_ARGUMENT (NULL argument), IO (cannot be
   read), BAD_TRACE (not a trace, or its header is damaged); the message in
   `error` names the file and the offset. */
tracecorn_status tracecorn_reader_open(const char* path, tracecorn_reader** out, char* error, size_t error_size);
/* The trace's architecture ("x86_64") and level ("full"; "" when the format
   does not say). Never NULL; valid until close. BAP frames cannot tell mips
   from mipsel (one architecture id, no byte order): such a trace reads as mipsel. */
const char* tracecorn_reader_arch(const tracecorn_reader* reader);
const char* tracecorn_reader_level(const tracecorn_reader* reader);
/*
 * Reads the next event into *event (its fields as for the callback: the table
 * above; `text` valid until the next call) and sets *has_event to 1, or to 0
 * at the end of the trace. Returns OK, or BAD_TRACE for a damaged file or one
 * that ends early (a killed recording: every complete record before it was
 * returned), IO for a read error; the message is tracecorn_last_reader_error.
 */
tracecorn_status tracecorn_reader_next(tracecorn_reader* reader, tracecorn_event* event, int* has_event);
/* The event last read: its place in the file (0, 1, 2...: what "event N" means to `tracecorn dump`'s readers). */
uint64_t tracecorn_reader_index(const tracecorn_reader* reader);
/* The event last read: the registers it carries (REGISTERS: those changed;
   SYSCALL: those the kernel changed; SIGNAL: the handler's; THREAD switch:
   the thread's), and register `i` of them: its name, its size in bytes
   (1..16) and its value's bytes (little endian) into `bytes` (16 bytes).
   Returns OK or INVALID_ARGUMENT (i out of range, NULL argument). */
size_t tracecorn_reader_register_count(const tracecorn_reader* reader);
tracecorn_status tracecorn_reader_register(const tracecorn_reader* reader, size_t i, const char** name,
                                           uint32_t* size, uint8_t bytes[16]);
/* SYSCALL: argument i (0..5); 0 otherwise. */
uint64_t tracecorn_reader_syscall_arg(const tracecorn_reader* reader, unsigned i);
/* SYSCALL: the call stack's return addresses, innermost first (depth 0 when not recorded). */
size_t tracecorn_reader_stack_depth(const tracecorn_reader* reader);
uint64_t tracecorn_reader_stack_frame(const tracecorn_reader* reader, size_t i);
/* BLOCK, INSN: the code bytes (NULL and 0 for other kinds); valid until the next call. */
const uint8_t* tracecorn_reader_code(const tracecorn_reader* reader, size_t* size);
/* SYSCALL, SIGNAL: the memory the kernel wrote (a signal frame), write i of
   them: its address, its bytes and their count (valid until the next call).
   Returns OK or INVALID_ARGUMENT. */
size_t tracecorn_reader_memory_write_count(const tracecorn_reader* reader);
tracecorn_status tracecorn_reader_memory_write(const tracecorn_reader* reader, size_t i, uint64_t* address,
                                               const uint8_t** bytes, size_t* size);
/* The message of the reader's last failed call ("" when none). A NULL reader gives a fixed message. */
const char* tracecorn_last_reader_error(const tracecorn_reader* reader);
/* Closes the file and frees the reader. NULL is a no-op. */
void tracecorn_reader_close(tracecorn_reader* reader);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TRACECORN_CAPI_TRACECORN_H */
