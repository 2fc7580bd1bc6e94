// Role: AddressNamer, the interface that names code addresses for the call
// stacks a trace's readers print (the CLI gives one over the unwinder's
// symbolizer), and the two functions that feed it a trace's mappings. Shared by
// the format registry (WriterRequest::address_namer), the text writer and
// `tracecorn stat`; it lives beside the registry so that the registry needs no
// format's folder (scripts/check_layering.sh: no cycle between folders).
// Threads: a namer is called on one thread at a time (the sink's or the reader's).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "recorder/events/event.h"

namespace tracecorn::formats {

// Names code addresses for the call stacks printed under syscalls (the CLI
// gives one over the unwinder's symbolizer). Fed the trace's module and unmap
// events in order; called on the sink's thread only.
class AddressNamer {
 public:
  virtual ~AddressNamer() = default;
  virtual void module_loaded(const events::ModuleLoadEvent& module) = 0;
  virtual void unmapped(std::uint64_t start, std::uint64_t length) = 0;
  // A file mapped from its first byte at [start, end), as a trace's mapping
  // records say it (initial regions, syscall maps): for traces without module
  // events (UCIR). Default: ignored.
  virtual void file_mapped(std::uint64_t start, std::uint64_t end, std::string_view path) {
    (void)start, (void)end, (void)path;
  }
  // "write+0x17 (/usr/lib/x86_64-linux-gnu/libc.so.6)", or "" when unknown.
  virtual std::string name(std::uint64_t address) = 0;
  // Whether `address` is the start of a signal trampoline (a stack's frame
  // there is gdb's `<signal handler called>`). Default: never.
  virtual bool is_signal_trampoline(std::uint64_t address) {
    (void)address;
    return false;
  }
};

// Tells `namer` what a trace maps, in the trace's order: the files mapped from
// their first byte in the initial state (each over its run of adjacent regions),
// then, per event, a module load or a syscall's mapping changes (after the
// syscall: its stack was taken before the kernel ran). Used by every reader of a
// trace that names addresses (the text writer, `tracecorn stat`).
void name_initial_mappings(AddressNamer& namer, const events::TraceInfo& info);
void name_event_mappings(AddressNamer& namer, const events::Event& event);

}  // namespace tracecorn::formats
