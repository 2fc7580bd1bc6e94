// Role: libFuzzer harness for the debug server's input (untrusted: whatever a
// client sends): any bytes go through the packet parser into a fresh
// GdbSession over a small trace (formats/ucir/fuzz_seeds/tiny.ucir: an
// instruction, a write, a syscall), and every reply must come back without a
// crash, a hang or a sanitizer report. Built with clang only (see
// recorder/debug/CMakeLists.txt); CTest runs it briefly as gdb_session_fuzzer_smoke.
#include <cstddef>
#include <cstdint>
#include <memory>

#include "recorder/debug/gdb_session.h"
#include "recorder/debug/remote_protocol.h"
#include "recorder/debug/time_travel.h"
#include "recorder/replay/trace_index.h"
#include "recorder/replay/trace_reader.h"

namespace {

// The trace, its index and the position, made once for the whole run.
struct Fixture {
  std::unique_ptr<tracecorn::replay::TraceReader> reader;
  std::unique_ptr<tracecorn::replay::TraceIndex> index;
  std::unique_ptr<tracecorn::debug::TimeTravel> travel;
};

Fixture& fixture() {
  static Fixture made = [] {
    Fixture f;
    auto reader = tracecorn::replay::TraceReader::open(TRACECORN_DEBUG_FUZZ_TRACE);
    if (!reader) __builtin_trap();
    f.reader = std::move(*reader);
    auto index = tracecorn::replay::TraceIndex::build(*f.reader);
    if (!index) __builtin_trap();
    f.index = std::move(*index);
    auto travel = tracecorn::debug::TimeTravel::start(*f.index);
    if (!travel) __builtin_trap();
    f.travel = std::move(*travel);
    return f;
  }();
  return made;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto& travel = *fixture().travel;
  travel.breakpoints().clear();
  travel.watchpoints().clear();
  travel.catch_syscalls(false, {});
  tracecorn::debug::GdbSession session(travel);
  tracecorn::debug::PacketParser parser;
  std::vector<tracecorn::debug::ClientItem> items;
  parser.feed(std::span(data, size), items);
  std::size_t replied = 0;
  for (const auto& item : items) {
    replied += session.handle(item).bytes.size();
    if (session.closed()) break;
  }
  return replied == ~std::size_t{0} ? 1 : 0;
}
