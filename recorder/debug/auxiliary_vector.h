// Role: what gdb reads of a process image besides its registers and memory:
// its auxiliary vector (qXfer:auxv:read, by which gdb relocates a
// position-independent program) and the program file it runs (an exec
// stop's path), both found in a trace's memory and mappings.
// Who calls it: GdbSession (gdb_session.h) and tests; the index's thread.
// Untrusted input: the trace's memory; every read is bounded and a vector
// that does not look like one (no AT_PHDR, AT_ENTRY and a page size) is not
// given to gdb.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "recorder/replay/trace_index.h"

namespace tracecorn::debug {

// The auxiliary vector of the image in `index`, whose stack pointer at the
// index's current position is `sp`, as bytes in the guest's layout: the one
// after argc, argv and envp at `sp` when the trace starts at the image's
// entry; otherwise (a forked child's trace starts at the fork's return) the
// one the kernel left at the top of the stack, found above `sp`. Empty when
// the trace does not hold one.
std::vector<std::uint8_t> auxiliary_vector(const replay::TraceIndex& index, std::uint64_t sp);

// The program an image runs, as the host names it: the file mapped where
// `auxv`'s AT_PHDR points (the program's own headers, not the
// interpreter's); "" when the trace does not say.
std::string mapped_program(const replay::TraceIndex& index, std::span<const std::uint8_t> auxv);

}  // namespace tracecorn::debug
