// Role: what the Python package hands out for one event, and the columns it
// fills natively. An events::Event is valid only during the reader's callback;
// an EventRecord owns a copy of what Python may ask of it (the register
// changes as table indices, names resolved only when Python reads them), so
// that the Python object stays small and is made without touching Python.
// Threads: plain values; the column helpers are pure functions (called with
// the GIL released).
// Invariants: a field an event does not have is absent (std::nullopt, an
// empty vector), never a zero standing for "unknown".
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "arch/arch_info.h"
#include "recorder/events/event.h"

namespace tracecorn::python {

struct EventRecord {
  const arch::ArchInfo* arch = nullptr;  // names `registers`' indices
  std::uint64_t index = 0;  // its place in the trace: what state_at(n) and "event N" mean
  std::uint64_t sequence = 0;
  std::uint32_t thread = 0;
  events::EventKind kind = events::EventKind::kBlock;
  std::optional<std::uint64_t> pc;       // the instruction concerned (block: its start)
  std::optional<std::uint64_t> address;  // accessed (read, write, fault), or the code's (block, insn)
  std::optional<std::uint64_t> size;     // bytes (block, insn, read, write)
  std::optional<std::uint64_t> value;    // read, write: the value, as a number
  std::optional<std::int64_t> result;    // syscall: its result; exit: the status; signal: si_code
  std::optional<std::uint64_t> number;   // syscall: its number; signal, fault, exit by signal: the signal
  std::string name;                      // syscall: its name; fault: what; module: its path; process: the trace
  std::vector<std::uint64_t> args;       // syscall: its six arguments
  std::vector<std::uint64_t> stack;      // syscall: return addresses, innermost first
  std::vector<std::uint8_t> bytes;       // block, insn: the code
  std::vector<events::RegisterValue> registers;  // regs, syscall, signal, thread switch: what changed
};

// Copies what Python may ask of `event` (the `index`th of its trace, of `arch`).
EventRecord record_of(const events::Event& event, std::uint64_t index, const arch::ArchInfo& arch);

// The numeric columns Trace.column() fills.
enum class Column : std::uint8_t { kIndex, kSequence, kThread, kKind, kPc, kAddress, kSize, kValue };
// The column called `name` ("pc", "address", "size", "value", "seq", "index",
// "thread", "kind"); nullopt for another word.
std::optional<Column> column_named(std::string_view name);
// Whether events of `kind` have a value in `column` (every kind has index,
// seq, thread and kind).
bool column_defined(Column column, events::EventKind kind);
// `event`'s value in `column` (column_defined for its kind). A memory access
// whose pc the recorder could not tell has ~0 in the pc column.
std::uint64_t column_value(const events::Event& event, std::uint64_t index, Column column);

// The kind called `name` (events::event_kind_name's words, "mem" aside); nullopt for another word.
std::optional<events::EventKind> kind_named(std::string_view name);

}  // namespace tracecorn::python
