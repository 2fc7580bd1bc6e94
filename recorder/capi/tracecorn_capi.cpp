// Role: implementation of the C API (see tracecorn.h): a handle that owns the
// C++ Recorder and its sinks (the text writer, an adapter that turns events into
// tracecorn_event for a C callback), and keeps the last error message.
// Who calls it: C harnesses, on their emulation thread; the callback adapter
// runs on the recorder's drain thread (lossless) or the caller's (dumps).
// Invariants: every extern "C" function is noexcept and catches everything, so
// no C++ exception reaches a C frame; members are declared so that the Recorder
// is destroyed (finished) before the sinks it writes to.
#include "recorder/capi/tracecorn.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "arch/arch.h"
#include "formats/text/text_writer.h"
#include "recorder/capi/c_events.h"
#include "recorder/core/recorder.h"
#include "recorder/session/engine_recording.h"

using namespace tracecorn;
using tracecorn::capi::copy_message;
using tracecorn::capi::guarded;

namespace {

// The C kinds are tracecorn's own values: a new EventKind must be added to tracecorn.h.
static_assert(static_cast<int>(events::EventKind::kBlock) == TRACECORN_EVENT_BLOCK);
static_assert(static_cast<int>(events::EventKind::kInstruction) == TRACECORN_EVENT_INSN);
static_assert(static_cast<int>(events::EventKind::kMemoryRead) == TRACECORN_EVENT_MEM_READ);
static_assert(static_cast<int>(events::EventKind::kMemoryWrite) == TRACECORN_EVENT_MEM_WRITE);
static_assert(static_cast<int>(events::EventKind::kRegisters) == TRACECORN_EVENT_REGISTERS);
static_assert(static_cast<int>(events::EventKind::kSyscall) == TRACECORN_EVENT_SYSCALL);
static_assert(static_cast<int>(events::EventKind::kFault) == TRACECORN_EVENT_FAULT);
static_assert(static_cast<int>(events::EventKind::kModuleLoad) == TRACECORN_EVENT_MODULE_LOAD);
static_assert(static_cast<int>(events::EventKind::kExit) == TRACECORN_EVENT_EXIT);
static_assert(static_cast<int>(events::EventKind::kGap) == TRACECORN_EVENT_GAP);
static_assert(static_cast<int>(events::EventKind::kSignal) == TRACECORN_EVENT_SIGNAL);
static_assert(static_cast<int>(events::EventKind::kThread) == TRACECORN_EVENT_THREAD);
static_assert(static_cast<int>(events::EventKind::kProcess) == TRACECORN_EVENT_PROCESS);
static_assert(static_cast<int>(core::TraceLevel::kBlocks) == TRACECORN_LEVEL_BLOCKS);
static_assert(static_cast<int>(core::TraceLevel::kInstructions) == TRACECORN_LEVEL_INSNS);
static_assert(static_cast<int>(core::TraceLevel::kMemory) == TRACECORN_LEVEL_MEM);
static_assert(static_cast<int>(core::TraceLevel::kRegisters) == TRACECORN_LEVEL_REGS);
static_assert(static_cast<int>(core::TraceLevel::kFull) == TRACECORN_LEVEL_FULL);

constexpr std::uint64_t kDefaultRingBytes = std::uint64_t{64} << 20;

// A Sink that hands each event to a C callback as a tracecorn_event.
class CallbackSink final : public events::Sink {
 public:
  CallbackSink(tracecorn_event_callback callback, void* user) : callback_(callback), user_(user) {}

  void begin(const events::TraceInfo&) override {}
  std::string end(const events::TraceSummary&) override { return ""; }

  void on_event(const events::Event& event) override {
    std::string_view text;
    tracecorn_event out = capi::c_event_of(event, text);
    text_.assign(text.data(), text.size());  // the views are not NUL-terminated
    out.text = text_.c_str();
    callback_(&out, user_);
  }

 private:
  tracecorn_event_callback callback_;
  void* user_;
  std::string text_;  // the current event's text, NUL-terminated
};

// Forwards to a sink, turning its exceptions into the error that end() returns
// (and dropping the events after the first one). A sink on the drain thread
// must not throw: the exception would end the process. formats::TextWriter
// does throw: fmt::print raises std::system_error when a write fails (disk
// full), before TextWriter::end() can report it.
class ExceptionFenceSink final : public events::Sink {
 public:
  ExceptionFenceSink(events::Sink& inner, std::string name) : inner_(inner), name_(std::move(name)) {}

  void begin(const events::TraceInfo& info) override {
    guard([&] { inner_.begin(info); });
  }
  void on_event(const events::Event& event) override {
    if (!failed_) guard([&] { inner_.on_event(event); });
  }
  std::string end(const events::TraceSummary& summary) override {
    std::string result;
    if (!failed_) guard([&] { result = inner_.end(summary); });
    return failed_ ? error_ : result;
  }

 private:
  template <typename Body>
  void guard(Body&& body) noexcept {
    try {
      body();
    } catch (const std::exception& exception) {
      remember(exception.what());
    } catch (...) {
      remember("unknown error");
    }
  }
  void remember(const char* what) noexcept {
    if (failed_) return;
    failed_ = true;
    try {
      error_ = name_ + ": " + what;
    } catch (...) {
      error_.clear();
    }
  }

  events::Sink& inner_;
  std::string name_;
  bool failed_ = false;
  std::string error_;
};

tracecorn_status status_for(ErrorCode code) {
  switch (code) {
    case ErrorCode::kIo:
    case ErrorCode::kNotFound: return TRACECORN_ERROR_IO;
    case ErrorCode::kEmulator: return TRACECORN_ERROR_EMULATOR;
    case ErrorCode::kLimit: return TRACECORN_ERROR_OUT_OF_MEMORY;  // the ring buffer could not be allocated
    case ErrorCode::kBadFormat:
    case ErrorCode::kTruncated:
    case ErrorCode::kUnsupported:
    case ErrorCode::kInvalidArgument: return TRACECORN_ERROR_INVALID_ARGUMENT;
  }
  return TRACECORN_ERROR_INTERNAL;
}

}  // namespace

// The handle. Member order matters: `recorder` is declared last so that it is
// destroyed (which finishes it and ends the sinks) before the sinks.
struct tracecorn_recorder : capi::LastError {
  const arch::ArchInfo* arch = nullptr;
  core::RingPolicy policy = core::RingPolicy::kLossless;
  std::unique_ptr<formats::TextWriter> text;
  std::unique_ptr<ExceptionFenceSink> text_fence;  // what the recorder sees of `text`
  std::unique_ptr<CallbackSink> callback;
  std::unique_ptr<events::Sink> trace;  // options.trace_path's writer
  core::TraceLevel level = core::TraceLevel::kBlocks;
  bool finished = false;
  tracecorn_status finish_status = TRACECORN_OK;  // what the first finish returned, and its message
  std::string finish_error;
  std::unique_ptr<core::Recorder> recorder;

};

namespace {

// The int a C caller stored in an enum field. C lets it store any int there; in
// C++ a value outside the enumerators' range is not reliable (the compiler may
// assume the range), so the bytes are read as the int they are.
template <typename Enum>
int raw_enum(const Enum& value) {
  static_assert(sizeof(Enum) == sizeof(int), "C enums are int-sized");
  int raw = 0;
  std::memcpy(&raw, &value, sizeof raw);
  return raw;
}

tracecorn_status create(uc_engine* engine, const tracecorn_options& options, tracecorn_recorder** out,
                        std::string& error) {
  auto invalid = [&](std::string message) {
    error = std::move(message);
    return TRACECORN_ERROR_INVALID_ARGUMENT;
  };
  if (!options.arch) return invalid("options.arch is NULL (e.g. \"x86_64\")");
  const arch::ArchInfo* arch = arch::find_arch(options.arch);
  if (!arch)
    return invalid("unknown architecture \"" + std::string(options.arch) + "\" (known: " + arch::arch_names() + ")");
  if (std::string mismatch = arch::engine_mismatch(engine, *arch); !mismatch.empty()) return invalid(mismatch);
  const int level = raw_enum(options.level), policy = raw_enum(options.policy);
  if (level < TRACECORN_LEVEL_BLOCKS || level > TRACECORN_LEVEL_FULL)
    return invalid("unknown level " + std::to_string(level));
  if (policy != TRACECORN_POLICY_LOSSLESS && policy != TRACECORN_POLICY_FLIGHT_RECORDER)
    return invalid("unknown ring policy " + std::to_string(policy));
  if ((options.code_start || options.code_end) && options.code_end <= options.code_start)
    return invalid("empty code range (code_end must be above code_start)");
  const bool flight = policy == TRACECORN_POLICY_FLIGHT_RECORDER;
  if (flight && (options.text_path || options.callback || options.trace_path))
    return invalid("a flight recorder delivers events only when dumped: leave text_path, trace_path and callback "
                   "NULL and call tracecorn_recorder_dump()");

  core::RecorderOptions recorder_options;
  recorder_options.level = static_cast<core::TraceLevel>(level);
  recorder_options.policy = flight ? core::RingPolicy::kFlightRecorder : core::RingPolicy::kLossless;
  const std::uint64_t ring_bytes = options.ring_bytes ? options.ring_bytes : kDefaultRingBytes;
  if (ring_bytes > SIZE_MAX) return invalid("ring_bytes too large");
  recorder_options.ring_bytes = static_cast<std::size_t>(ring_bytes);
  if (options.code_start || options.code_end)
    recorder_options.code_range = core::AddressRange{options.code_start, options.code_end};
  recorder_options.derive_registers = options.derive_registers != 0;

  auto handle = std::make_unique<tracecorn_recorder>();
  handle->arch = arch;
  handle->policy = recorder_options.policy;
  handle->level = recorder_options.level;
  std::vector<events::Sink*> sinks;
  if (options.trace_path) {
    auto writer = session::open_trace_writer(*arch, options.trace_format ? options.trace_format : "ucir",
                                             options.trace_path, options.trace_zstd != 0, formats::ZstdCompression{0, 0},
                                             handle->level, options.program ? options.program : "");
    if (!writer) {
      error = writer.error().to_string();
      return status_for(writer.error().code);
    }
    handle->trace = std::move(*writer);
    sinks.push_back(handle->trace.get());
  }
  if (options.text_path) {
    auto writer = formats::TextWriter::open(options.text_path, *arch);
    if (!writer) {
      error = writer.error().to_string();
      return status_for(writer.error().code);
    }
    handle->text = std::move(*writer);
    handle->text_fence = std::make_unique<ExceptionFenceSink>(*handle->text, options.text_path);
    sinks.push_back(handle->text_fence.get());
  }
  if (options.callback) {
    handle->callback = std::make_unique<CallbackSink>(options.callback, options.callback_user);
    sinks.push_back(handle->callback.get());
  }
  events::TraceInfo info;
  if (options.program) info.program = options.program;
  auto recorder = core::Recorder::attach(engine, *arch, recorder_options, std::move(sinks), std::move(info));
  if (!recorder) {
    error = recorder.error().to_string();
    return status_for(recorder.error().code);
  }
  handle->recorder = std::move(*recorder);
  *out = handle.release();
  return TRACECORN_OK;
}

tracecorn_status dump_to(tracecorn_recorder* recorder, events::Sink& sink) {
  const std::string error = recorder->recorder->dump(sink);
  if (!error.empty()) return recorder->fail(TRACECORN_ERROR_IO, error);
  return TRACECORN_OK;
}

tracecorn_status check_flight_recorder(tracecorn_recorder* recorder) {
  if (recorder->policy != core::RingPolicy::kFlightRecorder)
    return recorder->fail(TRACECORN_ERROR_STATE, "dump needs the flight-recorder policy: "
                                                 "a lossless recorder delivers every event to its sinks");
  return TRACECORN_OK;
}

}  // namespace

extern "C" {

void tracecorn_options_init(tracecorn_options* options) {
  if (!options) return;
  *options = tracecorn_options{};
  options->level = TRACECORN_LEVEL_BLOCKS;
  options->policy = TRACECORN_POLICY_LOSSLESS;
}

tracecorn_status tracecorn_recorder_create(uc_engine* engine, const tracecorn_options* options,
                                           tracecorn_recorder** out, char* error, size_t error_size) {
  if (out) *out = nullptr;
  if (!engine || !options || !out) {
    copy_message(!engine ? "engine is NULL" : !options ? "options is NULL" : "out is NULL", error, error_size);
    return TRACECORN_ERROR_INVALID_ARGUMENT;
  }
  try {
    std::string message;
    const tracecorn_status status = create(engine, *options, out, message);
    copy_message(message, error, error_size);
    return status;
  } catch (const std::bad_alloc&) {
    copy_message("out of memory", error, error_size);
    return TRACECORN_ERROR_OUT_OF_MEMORY;
  } catch (const std::exception& exception) {
    if (error && error_size) std::snprintf(error, error_size, "internal error: %s", exception.what());
    return TRACECORN_ERROR_INTERNAL;
  } catch (...) {
    copy_message("internal error", error, error_size);
    return TRACECORN_ERROR_INTERNAL;
  }
}

tracecorn_status tracecorn_recorder_fault(tracecorn_recorder* recorder, uint64_t pc, uint64_t address,
                                          uint32_t signal, const char* description) {
  if (!recorder) return TRACECORN_ERROR_INVALID_ARGUMENT;
  return guarded(recorder, [&] {
    if (recorder->finished) return recorder->fail(TRACECORN_ERROR_STATE, "fault reported after finish");
    recorder->recorder->fault(pc, address, signal, description ? description : "");
    return TRACECORN_OK;
  });
}

tracecorn_status tracecorn_recorder_exited(tracecorn_recorder* recorder, int by_signal, int32_t code,
                                           int32_t signal) {
  if (!recorder) return TRACECORN_ERROR_INVALID_ARGUMENT;
  return guarded(recorder, [&] {
    if (recorder->finished) return recorder->fail(TRACECORN_ERROR_STATE, "exit reported after finish");
    recorder->recorder->exited(by_signal != 0, code, signal);
    return TRACECORN_OK;
  });
}

tracecorn_status tracecorn_recorder_registers_changed(tracecorn_recorder* recorder) {
  if (!recorder) return TRACECORN_ERROR_INVALID_ARGUMENT;
  return guarded(recorder, [&] {
    if (recorder->finished) return recorder->fail(TRACECORN_ERROR_STATE, "registers_changed after finish");
    recorder->recorder->registers_changed();
    return TRACECORN_OK;
  });
}

tracecorn_status tracecorn_recorder_code_written(tracecorn_recorder* recorder, uint64_t address, uint64_t size) {
  if (!recorder) return TRACECORN_ERROR_INVALID_ARGUMENT;
  return guarded(recorder, [&] {
    if (recorder->finished) return recorder->fail(TRACECORN_ERROR_STATE, "code_written after finish");
    recorder->recorder->code_written(address, size);
    return TRACECORN_OK;
  });
}

tracecorn_status tracecorn_recorder_dump(tracecorn_recorder* recorder, const char* path) {
  if (!recorder) return TRACECORN_ERROR_INVALID_ARGUMENT;
  return guarded(recorder, [&] {
    if (!path) return recorder->fail(TRACECORN_ERROR_INVALID_ARGUMENT, "dump path is NULL");
    if (const tracecorn_status status = check_flight_recorder(recorder); status != TRACECORN_OK) return status;
    auto writer = formats::TextWriter::open(path, *recorder->arch);
    if (!writer) return recorder->fail(status_for(writer.error().code), writer.error().to_string());
    ExceptionFenceSink fence(**writer, path);
    return dump_to(recorder, fence);
  });
}

tracecorn_status tracecorn_recorder_dump_trace(tracecorn_recorder* recorder, const char* path, const char* format,
                                               int zstd) {
  if (!recorder) return TRACECORN_ERROR_INVALID_ARGUMENT;
  return guarded(recorder, [&] {
    if (!path) return recorder->fail(TRACECORN_ERROR_INVALID_ARGUMENT, "dump path is NULL");
    if (const tracecorn_status status = check_flight_recorder(recorder); status != TRACECORN_OK) return status;
    auto writer = session::open_trace_writer(*recorder->arch, format ? format : "ucir", path, zstd != 0,
                                             formats::ZstdCompression{0, 0}, recorder->level, "");
    if (!writer) return recorder->fail(status_for(writer.error().code), writer.error().to_string());
    return dump_to(recorder, **writer);
  });
}

tracecorn_status tracecorn_recorder_dump_events(tracecorn_recorder* recorder, tracecorn_event_callback callback,
                                                void* user) {
  if (!recorder) return TRACECORN_ERROR_INVALID_ARGUMENT;
  return guarded(recorder, [&] {
    if (!callback) return recorder->fail(TRACECORN_ERROR_INVALID_ARGUMENT, "dump callback is NULL");
    if (const tracecorn_status status = check_flight_recorder(recorder); status != TRACECORN_OK) return status;
    CallbackSink sink(callback, user);
    return dump_to(recorder, sink);
  });
}

tracecorn_status tracecorn_recorder_finish(tracecorn_recorder* recorder) {
  if (!recorder) return TRACECORN_ERROR_INVALID_ARGUMENT;
  return guarded(recorder, [&] {
    if (!recorder->finished) {
      recorder->finished = true;
      recorder->finish_error = recorder->recorder->finish();
      if (!recorder->finish_error.empty()) recorder->finish_status = TRACECORN_ERROR_IO;
    }
    if (recorder->finish_status != TRACECORN_OK) return recorder->fail(recorder->finish_status, recorder->finish_error);
    return TRACECORN_OK;
  });
}

tracecorn_status tracecorn_recorder_stats(const tracecorn_recorder* recorder, tracecorn_stats* out) {
  if (!recorder || !out) return TRACECORN_ERROR_INVALID_ARGUMENT;
  try {
    const core::RecorderStats stats = recorder->recorder->stats();
    out->records = stats.records;
    out->ring_bytes_written = stats.ring_bytes_written;
    out->producer_stalls = stats.producer_stalls;
    out->records_overwritten = stats.records_overwritten;
    out->records_lost = stats.records_lost;
    out->blocks_decoded = stats.blocks_decoded;
    out->events = stats.events;
    out->instructions = stats.instructions;
    out->registers_derived = stats.registers_derived;
    return TRACECORN_OK;
  } catch (...) {
    return TRACECORN_ERROR_INTERNAL;
  }
}

void tracecorn_recorder_destroy(tracecorn_recorder* recorder) {
  if (!recorder) return;
  try {
    if (!recorder->finished) {
      recorder->finished = true;
      (void)recorder->recorder->finish();
    }
  } catch (...) {
  }
  delete recorder;
}

const char* tracecorn_last_error(const tracecorn_recorder* recorder) {
  if (!recorder) return "no recorder (NULL handle)";
  return recorder->last_error.c_str();
}

tracecorn_status tracecorn_parse_level(const char* name, tracecorn_level* out) {
  if (!name || !out) return TRACECORN_ERROR_INVALID_ARGUMENT;
  const std::optional<core::TraceLevel> level = core::parse_trace_level(name);
  if (!level) return TRACECORN_ERROR_INVALID_ARGUMENT;
  *out = static_cast<tracecorn_level>(*level);
  return TRACECORN_OK;
}

const char* tracecorn_status_name(tracecorn_status status) {
  switch (raw_enum(status)) {  // a C caller may pass any int
    case TRACECORN_OK: return "ok";
    case TRACECORN_ERROR_INVALID_ARGUMENT: return "invalid argument";
    case TRACECORN_ERROR_IO: return "i/o error";
    case TRACECORN_ERROR_EMULATOR: return "emulator error";
    case TRACECORN_ERROR_STATE: return "invalid state";
    case TRACECORN_ERROR_OUT_OF_MEMORY: return "out of memory";
    case TRACECORN_ERROR_INTERNAL: return "internal error";
    case TRACECORN_ERROR_BAD_TRACE: return "bad trace";
  }
  return "unknown status";
}

const char* tracecorn_event_kind_name(tracecorn_event_kind kind) {
  switch (kind) {
    case TRACECORN_EVENT_BLOCK: return "block";
    case TRACECORN_EVENT_INSN: return "insn";
    case TRACECORN_EVENT_MEM_READ: return "read";
    case TRACECORN_EVENT_MEM_WRITE: return "write";
    case TRACECORN_EVENT_REGISTERS: return "regs";
    case TRACECORN_EVENT_SYSCALL: return "syscall";
    case TRACECORN_EVENT_FAULT: return "fault";
    case TRACECORN_EVENT_MODULE_LOAD: return "module";
    case TRACECORN_EVENT_EXIT: return "exit";
    case TRACECORN_EVENT_GAP: return "gap";
    case TRACECORN_EVENT_SIGNAL: return "signal";
    case TRACECORN_EVENT_THREAD: return "thread";
    case TRACECORN_EVENT_PROCESS: return "process";
  }
  return "unknown";
}

}  // extern "C"
