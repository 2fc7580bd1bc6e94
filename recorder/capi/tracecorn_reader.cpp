// Role: the C API's trace reader (tracecorn_reader_*, see tracecorn.h): a
// handle over the format registry's reader (formats::open_trace: every
// format, chosen by content) that hands out one event at a time as a
// tracecorn_event, with the event's details (registers, syscall arguments,
// call stack, code, kernel writes) through accessor functions.
// Threads: one thread per reader.
// Invariants: every extern "C" function is noexcept and catches everything;
// the events of one record are copied out of the reader's callback (its views
// die with the call) into owned storage, handed out one by one; a file that
// ends early is an error once its complete records are read, never a quiet end.
#include <algorithm>
#include <cstring>
#include <deque>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "formats/registry.h"
#include "recorder/capi/c_events.h"
#include "recorder/capi/tracecorn.h"

using namespace tracecorn;
using tracecorn::capi::copy_message;
using tracecorn::capi::guarded;

namespace {

// One event with everything the accessors can give, owned.
struct OwnedEvent {
  std::uint64_t index = 0;
  tracecorn_event event{};
  std::string text;
  std::vector<events::RegisterValue> registers;
  std::vector<std::uint64_t> args, stack;
  std::vector<std::uint8_t> code;
  std::vector<std::pair<std::uint64_t, std::vector<std::uint8_t>>> memory_writes;
};

template <typename T>
std::vector<T> copied(std::span<const T> values) {
  return {values.begin(), values.end()};
}

void copy_effects(OwnedEvent& owned, std::span<const events::MemoryWriteEffect> writes) {
  for (const events::MemoryWriteEffect& write : writes)
    owned.memory_writes.emplace_back(write.address.value, copied(write.bytes));
}

// The details of `event` the tracecorn_event does not hold.
void copy_details(OwnedEvent& owned, const events::Event& event) {
  if (const auto* block = std::get_if<events::BlockEvent>(&event.payload)) owned.code = copied(block->bytes);
  else if (const auto* insn = std::get_if<events::InstructionEvent>(&event.payload)) owned.code = copied(insn->bytes);
  else if (const auto* regs = std::get_if<events::RegistersEvent>(&event.payload))
    owned.registers = copied(regs->changes);
  else if (const auto* call = std::get_if<events::SyscallEvent>(&event.payload)) {
    owned.registers = copied(call->register_changes);
    owned.args.assign(std::begin(call->args), std::end(call->args));
    owned.stack = copied(call->call_stack);
    copy_effects(owned, call->memory_writes);
  } else if (const auto* signal = std::get_if<events::SignalEvent>(&event.payload)) {
    owned.registers = copied(signal->register_changes);
    copy_effects(owned, signal->frame_writes);
  } else if (const auto* thread = std::get_if<events::ThreadEvent>(&event.payload))
    owned.registers = copied(thread->registers);
}

tracecorn_status status_of(const Error& error) {
  return error.code == ErrorCode::kIo || error.code == ErrorCode::kNotFound ? TRACECORN_ERROR_IO
                                                                             : TRACECORN_ERROR_BAD_TRACE;
}

}  // namespace

struct tracecorn_reader : capi::LastError {
  std::string path;
  std::unique_ptr<formats::FormatReader> reader;
  std::string level;
  std::deque<OwnedEvent> pending;  // the rest of the record read last
  OwnedEvent current;              // the event last handed out
  std::uint64_t produced = 0;
  bool ended = false;

  // Reads records until one has an event, or the end. OK with `pending`
  // empty at the end.
  tracecorn_status fill() {
    while (pending.empty() && !ended) {
      auto more = reader->next([&](const events::Event& event) {
        OwnedEvent& owned = pending.emplace_back();
        owned.index = produced++;
        std::string_view text;
        owned.event = capi::c_event_of(event, text);
        owned.text.assign(text.data(), text.size());
        copy_details(owned, event);
      });
      if (!more) return fail(status_of(more.error()), more.error().to_string());
      if (!*more) {
        ended = true;
        if (const std::string why = reader->ended_early(); !why.empty())
          return fail(TRACECORN_ERROR_BAD_TRACE, path + ": the file ends early: " + why);
      }
    }
    return TRACECORN_OK;
  }
};

extern "C" {

tracecorn_status tracecorn_reader_open(const char* path, tracecorn_reader** out, char* error, size_t error_size) {
  if (out) *out = nullptr;
  if (!path || !out) {
    copy_message(!path ? "path is NULL" : "out is NULL", error, error_size);
    return TRACECORN_ERROR_INVALID_ARGUMENT;
  }
  try {
    auto opened = formats::open_trace(path);
    if (!opened) {
      copy_message(opened.error().to_string(), error, error_size);
      return status_of(opened.error());
    }
    auto handle = std::make_unique<tracecorn_reader>();
    handle->path = path;
    handle->reader = std::move(opened->reader);
    handle->level = handle->reader->info().level;
    *out = handle.release();
    return TRACECORN_OK;
  } catch (const std::bad_alloc&) {
    copy_message("out of memory", error, error_size);
    return TRACECORN_ERROR_OUT_OF_MEMORY;
  } catch (...) {
    copy_message("internal error", error, error_size);
    return TRACECORN_ERROR_INTERNAL;
  }
}

const char* tracecorn_reader_arch(const tracecorn_reader* reader) {
  return reader ? reader->reader->arch().name.data() : "";
}

const char* tracecorn_reader_level(const tracecorn_reader* reader) { return reader ? reader->level.c_str() : ""; }

tracecorn_status tracecorn_reader_next(tracecorn_reader* reader, tracecorn_event* event, int* has_event) {
  if (has_event) *has_event = 0;
  if (!reader || !event || !has_event) return TRACECORN_ERROR_INVALID_ARGUMENT;
  return guarded(reader, [&] {
    reader->last_error.clear();
    if (const tracecorn_status status = reader->fill(); status != TRACECORN_OK) return status;
    if (reader->pending.empty()) return TRACECORN_OK;
    reader->current = std::move(reader->pending.front());
    reader->pending.pop_front();
    reader->current.event.text = reader->current.text.c_str();
    *event = reader->current.event;
    *has_event = 1;
    return TRACECORN_OK;
  });
}

uint64_t tracecorn_reader_index(const tracecorn_reader* reader) { return reader ? reader->current.index : 0; }

size_t tracecorn_reader_register_count(const tracecorn_reader* reader) {
  return reader ? reader->current.registers.size() : 0;
}

tracecorn_status tracecorn_reader_register(const tracecorn_reader* reader, size_t i, const char** name,
                                           uint32_t* size, uint8_t bytes[16]) {
  if (!reader || !name || !size || !bytes || i >= reader->current.registers.size())
    return TRACECORN_ERROR_INVALID_ARGUMENT;
  const events::RegisterValue& value = reader->current.registers[i];
  const auto& table = reader->reader->arch().registers;
  *name = value.index < table.size() ? table[value.index].name.data() : "";
  *size = value.size;
  std::memcpy(bytes, value.bytes.data(), value.bytes.size());
  return TRACECORN_OK;
}

uint64_t tracecorn_reader_syscall_arg(const tracecorn_reader* reader, unsigned i) {
  return reader && i < reader->current.args.size() ? reader->current.args[i] : 0;
}

size_t tracecorn_reader_stack_depth(const tracecorn_reader* reader) {
  return reader ? reader->current.stack.size() : 0;
}

uint64_t tracecorn_reader_stack_frame(const tracecorn_reader* reader, size_t i) {
  return reader && i < reader->current.stack.size() ? reader->current.stack[i] : 0;
}

const uint8_t* tracecorn_reader_code(const tracecorn_reader* reader, size_t* size) {
  if (size) *size = reader ? reader->current.code.size() : 0;
  return reader && !reader->current.code.empty() ? reader->current.code.data() : nullptr;
}

size_t tracecorn_reader_memory_write_count(const tracecorn_reader* reader) {
  return reader ? reader->current.memory_writes.size() : 0;
}

tracecorn_status tracecorn_reader_memory_write(const tracecorn_reader* reader, size_t i, uint64_t* address,
                                               const uint8_t** bytes, size_t* size) {
  if (!reader || !address || !bytes || !size || i >= reader->current.memory_writes.size())
    return TRACECORN_ERROR_INVALID_ARGUMENT;
  const auto& [start, data] = reader->current.memory_writes[i];
  *address = start;
  *bytes = data.data();
  *size = data.size();
  return TRACECORN_OK;
}

const char* tracecorn_last_reader_error(const tracecorn_reader* reader) {
  return reader ? reader->last_error.c_str() : "no reader (NULL)";
}

void tracecorn_reader_close(tracecorn_reader* reader) { delete reader; }

}  // extern "C"
