// Role: finding one instruction in a translated block, shared by the guest CPUs
// that locate a faulting instruction (arch/x86_common.cpp, aarch64.cpp, arm.cpp):
// Unicorn 2.0.1 reports a block's start after a fault, so the CPU decodes the
// block and asks which instruction's memory operand touches the fault address.
// Called on the emulation thread, after the fault; reads guest memory only.
// Invariants: decodes at most 64 instructions and stops at the block's end (a
// jump, call or return); never writes guest memory.
#pragma once

#include <capstone/capstone.h>
#include <unicorn/unicorn.h>

#include <cstddef>
#include <cstdint>
#include <functional>

namespace tracecorn::arch {

// Decodes the block at `start` with `capstone` (detail on), reading up to
// `max_bytes` of it (halved until readable, never below `min_bytes`), and
// returns the address of the first instruction `matches` accepts; `start` when
// none does; `unreadable` when not even `min_bytes` can be read (a fetch fault).
std::uint64_t find_instruction_in_block(uc_engine* engine, csh capstone, std::uint64_t start, std::size_t max_bytes,
                                        std::size_t min_bytes, std::uint64_t unreadable,
                                        const std::function<bool(const cs_insn&)>& matches);

}  // namespace tracecorn::arch
