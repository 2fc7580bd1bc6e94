// Role: what the C API's two halves share (recording, tracecorn_capi.cpp;
// reading, tracecorn_reader.cpp): the C view of one event (tracecorn_event,
// tracecorn.h) made from tracecorn's event model, the fence that keeps C++
// exceptions out of C frames, and the copy of a message into a caller's
// buffer. Internal: not installed.
// Threads: pure functions, on the caller's thread.
#pragma once

#include <cstddef>
#include <exception>
#include <new>
#include <string>
#include <string_view>

#include "recorder/capi/tracecorn.h"
#include "recorder/events/event.h"

namespace tracecorn::capi {

// `event` as the table in tracecorn.h says, but `text`: set to the view the
// event's text comes from (not NUL-terminated: the caller copies it and points
// the result's `text` at its copy). The result's `text` is left NULL.
tracecorn_event c_event_of(const events::Event& event, std::string_view& text);

// The last error of a handle (a recorder, a reader), which both derive from.
struct LastError {
  std::string last_error;
  // Sets last_error to `message` + `detail`; returns `status`.
  tracecorn_status fail(tracecorn_status status, std::string_view message, std::string_view detail = {}) noexcept {
    try {
      last_error.assign(message);
      last_error.append(detail);
    } catch (...) {
      last_error.clear();  // no memory for the message: the status still tells
    }
    return status;
  }
};

// Copies `message` into `buffer` (size bytes, NUL-terminated, truncated);
// nothing when buffer is NULL or size is 0.
void copy_message(std::string_view message, char* buffer, std::size_t size) noexcept;

// Runs `body` (which returns a tracecorn_status) with every exception turned
// into a status, told to `handle` (a recorder or a reader: its
// fail(status, message, detail) keeps the message) when there is one.
template <typename Handle, typename Body>
tracecorn_status guarded(Handle* handle, Body&& body) noexcept {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    return handle ? handle->fail(TRACECORN_ERROR_OUT_OF_MEMORY, "out of memory") : TRACECORN_ERROR_OUT_OF_MEMORY;
  } catch (const std::exception& error) {
    return handle ? handle->fail(TRACECORN_ERROR_INTERNAL, "internal error: ", error.what()) : TRACECORN_ERROR_INTERNAL;
  } catch (...) {
    return handle ? handle->fail(TRACECORN_ERROR_INTERNAL, "internal error") : TRACECORN_ERROR_INTERNAL;
  }
}

}  // namespace tracecorn::capi
