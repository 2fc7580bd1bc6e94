// Role: small helpers of the event model.
#include "recorder/events/event.h"

#include <cstring>

namespace tracecorn::events {

std::string_view event_kind_name(EventKind kind) {
  switch (kind) {
    case EventKind::kBlock: return "block";
    case EventKind::kInstruction: return "insn";
    case EventKind::kMemoryRead: return "read";
    case EventKind::kMemoryWrite: return "write";
    case EventKind::kRegisters: return "regs";
    case EventKind::kSyscall: return "syscall";
    case EventKind::kFault: return "fault";
    case EventKind::kModuleLoad: return "module";
    case EventKind::kExit: return "exit";
    case EventKind::kGap: return "gap";
    case EventKind::kSignal: return "signal";
    case EventKind::kThread: return "thread";
    case EventKind::kProcess: return "process";
  }
  return "unknown";
}

std::uint64_t RegisterValue::as_u64() const {
  std::uint64_t value = 0;
  std::memcpy(&value, bytes.data(), sizeof value);
  return value;
}

}  // namespace tracecorn::events
