// Role: tests of read_ahead() (recorder/replay/read_ahead.h) and of the
// EventBatch copies it hands over (recorder/events/event_batch.h): the events
// the caller sees on the other side of the thread are those a plain loop over
// reader.next() gives, field for field and byte for byte (through the format
// round-trip tests' copy_event, which shares no code with EventBatch), in
// every format, for whole traces, for damaged ones (the same events, then the
// same error) and when the caller stops early.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include "recorder/events/event_batch.h"
#include "recorder/replay/read_ahead.h"
#include "tests/formats/roundtrip_helpers.h"
#include "tests/recorder/replay/replay_test_helpers.h"
#include "tests/support/error_text.h"

using namespace tracecorn;
using replay::TraceFormat;
using replay::TraceReader;

namespace {

// Every field of `event` as text: copy_event's fields, and those it leaves
// out (a block's bytes, a syscall's name, a process event, the sequence).
std::string fingerprint(const events::Event& event) {
  const test::Copied copy = test::copy_event(event);
  std::ostringstream out;
  out << static_cast<int>(copy.kind) << ' ' << event.sequence.value << ' ' << copy.thread << ' ' << copy.address
      << ' ' << copy.size << ' ' << copy.value << ' ' << copy.pc << ' ' << copy.count << ' ' << copy.pc_known << ' '
      << copy.result << ' ' << copy.text << ' ' << int(copy.mode) << " b";
  for (auto byte : copy.bytes) out << ' ' << int(byte);
  out << " r";
  for (const auto& r : copy.registers) {
    out << ' ' << r.index << ':' << int(r.size) << '=';
    for (std::size_t i = 0; i < r.size; ++i) out << int(r.bytes[i]) << '.';
  }
  out << " a";
  for (auto arg : copy.args) out << ' ' << arg;
  for (const auto& [address, bytes] : copy.writes) {
    out << " w" << address << ':';
    for (auto byte : bytes) out << int(byte) << '.';
  }
  for (const auto& [kind, start, length, prot] : copy.mappings) out << " m" << kind << ',' << start << ',' << length << ',' << prot;
  for (const auto& [name, file, offset, size] : copy.mapping_files) out << " f" << name << ',' << file << ',' << offset << ',' << size;
  out << " s";
  for (auto frame : copy.stack) out << ' ' << frame;
  std::visit(
      [&](const auto& p) {
        using T = std::decay_t<decltype(p)>;
        if constexpr (std::is_same_v<T, events::BlockEvent>) {
          out << " code";
          for (auto byte : p.bytes) out << ' ' << int(byte);
        } else if constexpr (std::is_same_v<T, events::SyscallEvent>) {
          out << " name " << p.name;
        } else if constexpr (std::is_same_v<T, events::ProcessEvent>) {
          out << " process " << int(p.change) << ' ' << p.pid << ' ' << p.trace << ' ' << p.detail;
        }
      },
      event.payload);
  return out.str();
}

struct Reading {
  std::vector<std::string> events;
  std::string error;  // "" when the reading ended well
};

// (nullopt when the file does not open: a damaged header.)
std::optional<Reading> read_in_a_loop(const std::string& path) {
  Reading result;
  auto reader = TraceReader::open(path);
  if (!reader) return std::nullopt;
  for (;;) {
    auto more = (*reader)->next([&](const events::Event& event) { result.events.push_back(fingerprint(event)); });
    if (!more) {
      result.error = more.error().to_string();
      break;
    }
    if (!*more) break;
  }
  return result;
}

Reading read_ahead_of(const std::string& path, std::size_t stop_after = 0) {
  Reading result;
  auto reader = TraceReader::open(path);
  REQUIRE_MESSAGE(reader.has_value(), test_support::error_text(reader));
  const Status status = replay::read_ahead(
      **reader, [&](const events::Event& event) { result.events.push_back(fingerprint(event)); },
      [&] { return stop_after && result.events.size() >= stop_after; });
  if (!status) result.error = status.error().to_string();
  return result;
}

void check_same(const Reading& ahead, const Reading& plain) {
  CHECK(ahead.error == plain.error);
  CHECK(ahead.events.size() == plain.events.size());
  const auto differ = std::mismatch(ahead.events.begin(), ahead.events.end(), plain.events.begin(), plain.events.end());
  if (differ.first != ahead.events.end() && differ.second != plain.events.end())
    FAIL("event " << differ.first - ahead.events.begin() << " differs: " << *differ.first << " / " << *differ.second);
}

}  // namespace

TEST_CASE("Read ahead: every format gives the events a plain loop gives, in order, to the byte") {
  // signal_handlers: syscalls with kernel writes and mappings, signal frames;
  // debug_threads: thread events with every register.
  for (const char* name : {"signal_handlers", "debug_threads"}) {
    CAPTURE(name);
    const std::string program = test::kReplaySamples + "/static/" + name;
    const std::string ucir = test::replay_temp_path(std::string("ahead-") + name + ".ucir");
    const std::string frames = test::replay_temp_path(std::string("ahead-") + name + ".frames");
    const std::string bt = test::replay_temp_path(std::string("ahead-") + name + ".bt");
    test::record_files(program, core::TraceLevel::kFull,
                       {{TraceFormat::kUcir, ucir, true}, {TraceFormat::kFrames, frames}, {TraceFormat::kBintrace, bt}});
    for (const std::string& path : {ucir, frames, bt}) {
      CAPTURE(path);
      const auto plain = read_in_a_loop(path).value();
      CHECK(plain.error.empty());
      CHECK(plain.events.size() > 20000);  // more than one batch
      check_same(read_ahead_of(path), plain);
      std::filesystem::remove(path);
    }
  }
}

TEST_CASE("Read ahead: a damaged trace gives the same events, then the same error; a caller may stop early") {
  const std::string program = test::kReplaySamples + "/static/signal_handlers";
  const std::string ucir = test::replay_temp_path("ahead-damaged.ucir");
  test::record_files(program, core::TraceLevel::kFull, {{TraceFormat::kUcir, ucir}});
  const auto opened = read_in_a_loop(ucir);
  REQUIRE(opened.has_value());
  const Reading& whole = *opened;
  REQUIRE(whole.error.empty());

  SUBCASE("stopped after the first events: fewer events, each as in the plain loop, and no error") {
    const Reading stopped = read_ahead_of(ucir, 100);
    CHECK(stopped.error.empty());
    CHECK(stopped.events.size() >= 100);
    CHECK(stopped.events.size() < whole.events.size());
    CHECK(std::equal(stopped.events.begin(), stopped.events.end(), whole.events.begin()));
  }

  SUBCASE("bytes overwritten past the middle until the reader fails after some events") {
    // (Where the first frame after the initial memory starts depends on the
    // sample's build: a damage there fails before any event. Each failing
    // place is compared; the search ends at one with events before it.)
    std::ifstream in(ucir, std::ios::binary);
    const std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const std::string damaged = test::replay_temp_path("ahead-damaged-copy.ucir");
    std::size_t failing = 0;
    bool failed_after_events = false;
    for (std::size_t at = bytes.size() / 2; at < bytes.size() && !failed_after_events; at += 997) {
      std::vector<char> copy = bytes;
      for (std::size_t i = at; i < at + 8 && i < copy.size(); ++i) copy[i] = static_cast<char>(0xee);
      std::ofstream(damaged, std::ios::binary | std::ios::trunc).write(copy.data(), static_cast<std::streamsize>(copy.size()));
      const auto read = read_in_a_loop(damaged);
      if (!read || read->error.empty()) continue;  // (in the first keyframe, or harmless)
      const Reading& plain = *read;
      CAPTURE(plain.error);
      ++failing;
      failed_after_events = !plain.events.empty();
      check_same(read_ahead_of(damaged), plain);
    }
    CHECK(failing > 0);
    CHECK(failed_after_events);
    std::filesystem::remove(damaged);
  }
  std::filesystem::remove(ucir);
}

TEST_CASE("Event batch: the copies keep their bytes after the originals change, across blocks and after clear()") {
  std::vector<std::uint8_t> code = {0x90, 0xc3}, big(300 * 1024, 0x5a), frame = {1, 2, 3, 4};
  std::string name = "openat", path = "/lib/x.so", detail = "clone", reason = "ring full";
  std::vector<events::RegisterValue> registers(3);
  for (std::size_t i = 0; i < registers.size(); ++i) registers[i].index = static_cast<std::uint16_t>(i), registers[i].size = 8, registers[i].bytes[0] = static_cast<std::uint8_t>(i + 7);
  std::vector<std::uint64_t> stack = {0x401000, 0x402000};
  std::vector<events::MemoryWriteEffect> writes = {{events::GuestAddress{0x1000}, big}, {events::GuestAddress{0x9000}, frame}};
  std::vector<events::MappingEffect> mappings(1);
  mappings[0].start = events::GuestAddress{0x7000};
  mappings[0].length = 4096;
  mappings[0].name = path;
  mappings[0].file = path;

  auto make = [](events::EventKind kind, events::EventPayload payload) {
    events::Event event;
    event.kind = kind;
    event.payload = std::move(payload);
    return event;
  };
  std::vector<events::Event> originals;
  originals.push_back(make(events::EventKind::kBlock, events::BlockEvent{events::GuestAddress{0x400000}, 2, 2, code, 0}));
  originals.push_back(make(events::EventKind::kInstruction, events::InstructionEvent{events::GuestAddress{0x400000}, 1, std::span(code).first(1), 0, 0}));
  originals.push_back(make(events::EventKind::kRegisters, events::RegistersEvent{events::GuestAddress{0x400001}, registers}));
  events::SyscallEvent call;
  call.name = name;
  call.memory_writes = writes;
  call.mapping_changes = mappings;
  call.register_changes = registers;
  call.call_stack = stack;
  originals.push_back(make(events::EventKind::kSyscall, call));
  events::SignalEvent signal;
  signal.frame_writes = std::span(writes).subspan(1);
  signal.register_changes = registers;
  originals.push_back(make(events::EventKind::kSignal, signal));
  events::ThreadEvent thread;
  thread.registers = registers;
  originals.push_back(make(events::EventKind::kThread, thread));
  originals.push_back(make(events::EventKind::kProcess, events::ProcessEvent{events::ProcessChange::kForked, 42, path, detail}));
  originals.push_back(make(events::EventKind::kModuleLoad, events::ModuleLoadEvent{events::GuestAddress{1}, events::GuestAddress{2}, 0, path}));
  originals.push_back(make(events::EventKind::kGap, events::GapEvent{5, reason}));
  events::FaultEvent fault;
  fault.description = reason;
  originals.push_back(make(events::EventKind::kFault, fault));

  std::vector<std::string> expected;
  for (const auto& event : originals) expected.push_back(fingerprint(event));
  events::EventBatch batch;
  for (int round = 0; round < 2; ++round) {  // the second round reuses the storage after clear()
    CAPTURE(round);
    batch.clear();
    for (int copies = 0; copies < 3; ++copies)  // 3 x 300 KiB: several blocks
      for (const auto& event : originals) batch.add(event);
    // The originals' bytes change (as a reader's buffers do on its next record).
    std::vector<std::uint8_t> saved_big = big, saved_code = code;
    std::string saved_name = name;
    std::fill(big.begin(), big.end(), 0);
    std::fill(code.begin(), code.end(), 0);
    std::fill(name.begin(), name.end(), 'x');
    for (auto& r : registers) r.bytes[0] = 0xff;
    REQUIRE(batch.size() == 3 * originals.size());
    CHECK(batch.stored_bytes() >= 3 * big.size());
    for (std::size_t i = 0; i < batch.size(); ++i) {
      CAPTURE(i);
      CHECK(fingerprint(batch.events()[i]) == expected[i % originals.size()]);
    }
    big = saved_big, code = saved_code, name = saved_name;
    for (std::size_t i = 0; i < registers.size(); ++i) registers[i].bytes[0] = static_cast<std::uint8_t>(i + 7);
  }
}
