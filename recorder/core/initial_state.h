// Role: the machine state a snapshot-based trace starts from (UCIR's first
// keyframe, the binary trace's initial memory, BAP frames' initial
// registers): every register of the architecture's table and every region
// the engine has mapped, with its bytes, each region named from what the
// caller knows of its mappings.
// Threads: the engine's thread, between runs (the Recorder's attach).
#pragma once

#include <unicorn/unicorn.h>

#include "arch/arch.h"
#include "recorder/events/event.h"

namespace tracecorn::core {

// Fills info.initial_registers (table order) and info.initial_memory (by
// address) from `engine`, and sets info.has_initial_state; names regions from
// info.mapped_ranges, else from info.modules.
void capture_initial_state(uc_engine* engine, const arch::ArchInfo& arch, events::TraceInfo& info);

// Names `region` of the initial state: from the caller's mapped range that
// holds its start (name, backing file, file offset and size at its start),
// else from the named module holding it (its path).
void describe_region(const events::TraceInfo& info, events::InitialRegion& region);

}  // namespace tracecorn::core
