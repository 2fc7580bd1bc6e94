// Role: unit tests of the UCIR writer and reader on hand-made traces: the exact
// bytes of a tiny trace (expected bytes written out by hand from the spec, not
// from the writer), reading them back, write errors, and "Malicious:" inputs
// (truncation at every offset, bit flips, nested frames, overrunning counts).
#include <doctest/doctest.h>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "formats/ucir/ucir_layout.h"
#include "formats/ucir/ucir_reader.h"
#include "formats/ucir/ucir_writer.h"

#include "tests/formats/test_files.h"
#include "tests/support/error_text.h"
using namespace tracecorn;
namespace ucir = tracecorn::formats::ucir;

namespace {

using test::Bytes;
using test::slurp;

std::string temp_path(const std::string& name) { return test::temp_file("ucir", name); }

// Appends little-endian numbers and raw bytes.
struct ByteBuilder {
  Bytes out;
  ByteBuilder& u8(std::uint8_t v) { out.push_back(v); return *this; }
  ByteBuilder& u16(std::uint16_t v) { return u8(static_cast<std::uint8_t>(v)).u8(static_cast<std::uint8_t>(v >> 8)); }
  ByteBuilder& u32(std::uint32_t v) { return u16(static_cast<std::uint16_t>(v)).u16(static_cast<std::uint16_t>(v >> 16)); }
  ByteBuilder& u64(std::uint64_t v) { return u32(static_cast<std::uint32_t>(v)).u32(static_cast<std::uint32_t>(v >> 32)); }
  ByteBuilder& raw(std::initializer_list<std::uint8_t> bytes) { out.insert(out.end(), bytes); return *this; }
  ByteBuilder& text(std::string_view s) { out.insert(out.end(), s.begin(), s.end()); return *this; }
  ByteBuilder& padded(std::string_view s, std::size_t n) {
    text(s);
    for (std::size_t i = s.size(); i < n; ++i) u8(0);
    return *this;
  }
};

// The tiny trace, as events: one region (code at 0x1010..0x1012 inside a zero
// page), one register, then a block whose one instruction writes memory,
// changes rax and makes a syscall (write) with one memory effect, then the exit.
// Hands events to a sink, numbered 0, 1, 2...
class EventFeed {
 public:
  explicit EventFeed(events::Sink& sink) : sink_(sink) {}
  void operator()(events::EventKind kind, events::EventPayload payload) {
    events::Event event;
    event.sequence = events::EventSequence{sent_++};
    event.kind = kind;
    event.payload = std::move(payload);
    sink_.on_event(event);
  }
  std::uint64_t sent() const { return sent_; }

 private:
  events::Sink& sink_;
  std::uint64_t sent_ = 0;
};

struct TinyTrace {
  const arch::ArchInfo& arch = arch::x86_64_arch();
  std::uint16_t rax = static_cast<std::uint16_t>(arch.find_register("rax") - arch.registers.data());
  events::TraceInfo info;
  std::vector<events::Event> events;
  events::RegisterValue rax_initial, rax_after;
  events::MemoryWriteEffect effect;
  Bytes effect_bytes{0xaa, 0xbb};

  TinyTrace() {
    info.arch_name = arch.name;
    info.level = "regs";
    info.has_initial_state = true;
    events::InitialRegion region;
    region.start = events::GuestAddress{0x1000};
    region.size = 0x1000;
    region.prot = 5;
    region.bytes.assign(0x1000, 0);
    region.bytes[0x10] = 0x90;
    region.bytes[0x12] = 0xc3;
    region.name = "code";
    region.file = "/bin/x";
    info.initial_memory.push_back(region);
    rax_initial.index = rax;
    rax_initial.size = 8;
    for (int i = 0; i < 8; ++i) rax_initial.bytes[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(0x88 - 0x11 * i);
    info.initial_registers.push_back(rax_initial);
    rax_after.index = rax;
    rax_after.size = 8;
    rax_after.bytes[0] = 5;
    effect = {events::GuestAddress{0x3000}, effect_bytes};
  }

  // Hands the events to `sink`. (Built on the fly: the spans point into this object.)
  void play(events::Sink& sink) {
    sink.begin(info);
    EventFeed send(sink);
    send(events::EventKind::kBlock, events::BlockEvent{events::GuestAddress{0x1010}, 3, 1, {}});
    send(events::EventKind::kInstruction, events::InstructionEvent{events::GuestAddress{0x1010}, 2, {}, 0});
    send(events::EventKind::kMemoryWrite,
         events::MemoryEvent{events::GuestAddress{0x2000}, 4, 0xdeadbeef, events::GuestAddress{0x1010}, true});
    send(events::EventKind::kRegisters,
         events::RegistersEvent{events::GuestAddress{0x1010}, std::span<const events::RegisterValue>(&rax_after, 1)});
    events::SyscallEvent call;
    call.pc = events::GuestAddress{0x1010};
    call.number = 1;
    call.name = "write";
    call.args[0] = 1;
    call.args[1] = 0x3000;
    call.args[2] = 2;
    call.result = 2;
    call.memory_writes = std::span<const events::MemoryWriteEffect>(&effect, 1);
    send(events::EventKind::kSyscall, call);
    send(events::EventKind::kFault, events::FaultEvent{});  // no UCIR op: dropped
    send(events::EventKind::kExit, events::ExitEvent{false, 0, 0});
  }
};

// The expected file, derived by hand from the spec (ucir-usercorn-trace-format.md).
Bytes expected_tiny_trace() {
  ByteBuilder b;
  // Header: magic, version 0 (u32 LE), arch[32], os[32], corder, dorder.
  b.text("UCIR").u32(0).padded("x86_64", 32).padded("linux", 32).u8(0).u8(0);
  // OP_KEYFRAME, pid 1, 3 ops.
  b.u8(2).u64(1).u32(3);
  //   OP_MEM_MAP addr 0x1000 size 0x1000 prot 5 off 0 fsize 0 dlen 4 flen 6 "code" "/bin/x"
  b.u8(9).u64(0x1000).u32(0x1000).u8(5).u64(0).u64(0).u16(4).u16(6).text("code").text("/bin/x");
  //   OP_MEM_WRITE of the region's bytes with the zero bytes around them trimmed: 90 00 c3 at 0x1010
  b.u8(8).u64(0x1010).u32(3).raw({0x90, 0x00, 0xc3});
  //   OP_REG rax (Unicorn's UC_X86_REG_RAX = 35) = 0x1122334455667788
  b.u8(5).u16(35).u64(0x1122334455667788);
  // OP_FRAME, pid 1, 5 ops: JMP, MEM_WRITE, REG, SYSCALL, STEP, EXIT.
  b.u8(1).u64(1).u32(6);
  b.u8(3).u64(0x1010).u32(3);                         // OP_JMP
  b.u8(8).u64(0x2000).u32(4).raw({0xef, 0xbe, 0xad, 0xde});  // OP_MEM_WRITE
  b.u8(5).u16(35).u64(5);                             // OP_REG rax = 5
  // OP_SYSCALL num 1 (u16), ret 2, argc 6, 1 nested op, args, then OP_MEM_WRITE 0x3000 aa bb
  b.u8(12).u16(1).u64(2).u8(6).u16(1).u64(1).u64(0x3000).u64(2).u64(0).u64(0).u64(0);
  b.u8(8).u64(0x3000).u32(2).raw({0xaa, 0xbb});
  b.u8(4).u8(2);  // OP_STEP size 2
  b.u8(13);       // OP_EXIT
  // The end note: OP_FRAME, pid 1, no ops (ucir_layout.h).
  b.u8(1).u64(1).u32(0);
  return b.out;
}

constexpr std::size_t kEndNoteBytes = 13;
// Where the tiny trace's one OP_FRAME with events starts.
std::size_t tiny_frame_start(const Bytes& bytes) {
  return bytes.size() - kEndNoteBytes - (13 + 13 + 17 + 11 + 14 + 48 + 15 + 2 + 1);
}

Bytes write_tiny(const std::string& name, formats::UcirWriterOptions options = {}) {
  const std::string path = temp_path(name);
  options.keyframe_interval = 0;
  TinyTrace trace;
  auto writer = formats::UcirWriter::open(path, trace.arch, options);
  REQUIRE(writer.has_value());
  trace.play(**writer);
  CHECK((*writer)->end({}).empty());
  CHECK((*writer)->dropped_events() == 1);
  Bytes bytes = slurp(path);
  std::filesystem::remove(path);
  return bytes;
}

struct Collected {
  std::vector<events::EventKind> kinds;
  std::vector<std::string> lines;
};

// Reads everything; returns the error text ("" when none). Never throws.
std::string read_everything(const Bytes& bytes, Collected* out = nullptr, std::string* warning = nullptr) {
  auto reader = formats::UcirReader::from_bytes(bytes, "test");
  if (!reader) return reader.error().to_string();
  for (int guard = 0; guard < 100000; ++guard) {
    auto more = (*reader)->next([&](const events::Event& event) {
      if (out) out->kinds.push_back(event.kind);
    });
    if (!more) return more.error().to_string();
    if (!*more) break;
  }
  if (warning) *warning = (*reader)->warning();
  return "";
}

}  // namespace

TEST_CASE("UCIR: the writer's bytes for a tiny trace are the spec's, byte for byte") {
  const Bytes written = write_tiny("golden");
  const Bytes expected = expected_tiny_trace();
  REQUIRE(written.size() == expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    CAPTURE(i);
    CHECK(static_cast<int>(written[i]) == static_cast<int>(expected[i]));
  }
}

// A block's instructions as runs (Sink::on_instructions, what the recorder
// hands over) and the same instructions as events one by one (the Sink's
// default expansion, which the golden bytes above check): two threads, so
// that a run also starts a new frame, and memory accesses between the runs.
Bytes write_runs(const std::string& name, bool as_events) {
  const std::string path = temp_path(name);
  TinyTrace trace;
  formats::UcirWriterOptions options;
  options.keyframe_interval = 0;
  auto opened = formats::UcirWriter::open(path, trace.arch, options);
  REQUIRE(opened.has_value());
  formats::UcirWriter& writer = **opened;
  writer.begin(trace.info);
  const Bytes code{0x90, 0x48, 0x01, 0xd8, 0x90, 0x66, 0x90, 0xc3};
  const std::vector<events::InstructionBounds> bounds{{events::GuestAddress{0x1010}, 0, 1},
                                                     {events::GuestAddress{0x1011}, 1, 3},
                                                     {events::GuestAddress{0x1014}, 4, 1},
                                                     {events::GuestAddress{0x1015}, 5, 2},
                                                     {events::GuestAddress{0x1017}, 7, 1}};
  std::uint64_t sequence = 0;
  auto send = [&](events::ThreadId thread, events::EventKind kind, events::EventPayload payload) {
    events::Event event;
    event.sequence = events::EventSequence{sequence++};
    event.thread = thread;
    event.kind = kind;
    event.payload = std::move(payload);
    writer.on_event(event);
  };
  auto run = [&](events::ThreadId thread, std::size_t first, std::size_t count) {
    const events::InstructionRun instructions{events::EventSequence{sequence}, thread, code,
                                              std::span(bounds).subspan(first, count),
                                              static_cast<std::uint32_t>(first), 0};
    if (as_events)
      writer.events::Sink::on_instructions(instructions);
    else
      writer.on_instructions(instructions);
    sequence += count;
  };
  for (const std::uint32_t thread : {1u, 7u, 1u}) {
    const events::ThreadId id{thread};
    send(id, events::EventKind::kBlock, events::BlockEvent{events::GuestAddress{0x1010}, 8, 5, code});
    run(id, 0, 2);
    send(id, events::EventKind::kMemoryRead,
         events::MemoryEvent{events::GuestAddress{0x2000}, 8, 7, events::GuestAddress{0x1011}, true});
    run(id, 2, 1);
    run(id, 3, 2);
  }
  // A run that resumes thread 1 after another thread's event, with no block first.
  send(events::ThreadId{7}, events::EventKind::kMemoryRead,
       events::MemoryEvent{events::GuestAddress{0x2000}, 8, 7, events::GuestAddress{0x1011}, true});
  run(events::ThreadId{1}, 3, 2);
  send(events::ThreadId{1}, events::EventKind::kExit, events::ExitEvent{false, 0, 0});
  CHECK(writer.end({}).empty());
  Bytes bytes = slurp(path);
  std::filesystem::remove(path);
  return bytes;
}

TEST_CASE("UCIR: a run of instructions writes the bytes of its instruction events, one OP_STEP each") {
  const Bytes runs = write_runs("runs", false);
  const Bytes events = write_runs("run_events", true);
  CHECK(runs == events);
  // Five instructions a block, three blocks, and two more: seventeen OP_STEPs.
  Collected collected;
  REQUIRE(read_everything(runs, &collected).empty());
  CHECK(std::count(collected.kinds.begin(), collected.kinds.end(), events::EventKind::kInstruction) == 17);
}

TEST_CASE("UCIR: --ucir-strict and the call stack extension") {
  TinyTrace trace;
  const std::uint64_t stack[2] = {0x401000, 0x402000};
  // Without a call stack both flavours are the same; with one, only the default writes OP_CALLSTACK.
  formats::UcirWriterOptions strict;
  strict.strict = true;
  CHECK(write_tiny("strict", strict) == expected_tiny_trace());
  const std::string path = temp_path("stack");
  auto writer = formats::UcirWriter::open(path, trace.arch, {});
  REQUIRE(writer.has_value());
  (*writer)->begin(trace.info);
  events::SyscallEvent call;
  call.number = 39;
  call.call_stack = stack;
  (*writer)->on_event(events::Event{{0}, {}, events::EventKind::kBlock, events::BlockEvent{{0x1010}, 3, 1, {}}});
  (*writer)->on_event(events::Event{{1}, {}, events::EventKind::kSyscall, call});
  REQUIRE((*writer)->end({}).empty());
  auto reader = formats::UcirReader::open(path);
  REQUIRE(reader.has_value());
  std::vector<std::uint64_t> seen;
  auto more = (*reader)->next([&](const events::Event& event) {
    if (event.kind == events::EventKind::kSyscall) {
      const auto& read_call = std::get<events::SyscallEvent>(event.payload);
      seen.assign(read_call.call_stack.begin(), read_call.call_stack.end());
      CHECK(read_call.name == "getpid");
    }
  });
  REQUIRE(more.has_value());
  CHECK(seen == std::vector<std::uint64_t>{0x401000, 0x402000});
  std::filesystem::remove(path);
}

TEST_CASE("UCIR: the reader turns the tiny trace back into its events") {
  const Bytes bytes = expected_tiny_trace();
  auto reader = formats::UcirReader::from_bytes(bytes, "tiny");
  REQUIRE(reader.has_value());
  CHECK((*reader)->header().arch == "x86_64");
  CHECK((*reader)->header().os == "linux");
  const auto& info = (*reader)->info();
  REQUIRE(info.initial_memory.size() == 1);
  CHECK(info.initial_memory[0].start.value == 0x1000);
  CHECK(info.initial_memory[0].size == 0x1000);
  CHECK(info.initial_memory[0].prot == 5);
  CHECK(info.initial_memory[0].name == "code");
  CHECK(info.initial_memory[0].file == "/bin/x");
  CHECK(info.initial_memory[0].bytes[0x12] == 0xc3);
  REQUIRE(info.initial_registers.size() == 1);
  CHECK(info.initial_registers[0].as_u64() == 0x1122334455667788ull);
  std::vector<events::EventKind> kinds;
  auto more = (*reader)->next([&](const events::Event& event) {
    kinds.push_back(event.kind);
    switch (event.kind) {
      case events::EventKind::kBlock:
        CHECK(std::get<events::BlockEvent>(event.payload).address.value == 0x1010);
        CHECK(std::get<events::BlockEvent>(event.payload).instruction_count == 1);
        CHECK(std::get<events::BlockEvent>(event.payload).bytes.size() == 3);  // from the keyframe's memory
        break;
      case events::EventKind::kInstruction:
        CHECK(std::get<events::InstructionEvent>(event.payload).address.value == 0x1010);
        CHECK(std::get<events::InstructionEvent>(event.payload).size == 2);
        break;
      case events::EventKind::kMemoryWrite: {
        const auto& memory = std::get<events::MemoryEvent>(event.payload);
        CHECK(memory.address.value == 0x2000);
        CHECK(memory.size == 4);
        CHECK(memory.value == 0xdeadbeef);
        CHECK(memory.pc.value == 0x1010);
        break;
      }
      case events::EventKind::kRegisters: {
        const auto& registers = std::get<events::RegistersEvent>(event.payload);
        REQUIRE(registers.changes.size() == 1);
        CHECK(registers.changes[0].as_u64() == 5);
        break;
      }
      case events::EventKind::kSyscall: {
        const auto& call = std::get<events::SyscallEvent>(event.payload);
        CHECK(call.number == 1);
        CHECK(call.name == "write");
        CHECK(call.pc.value == 0x1010);
        CHECK(call.result == 2);
        CHECK(call.args[1] == 0x3000);
        REQUIRE(call.memory_writes.size() == 1);
        CHECK(call.memory_writes[0].address.value == 0x3000);
        CHECK(Bytes(call.memory_writes[0].bytes.begin(), call.memory_writes[0].bytes.end()) == Bytes{0xaa, 0xbb});
        break;
      }
      default:
        break;
    }
  });
  REQUIRE(more.has_value());
  CHECK(*more);
  using K = events::EventKind;
  CHECK(kinds == std::vector<K>{K::kBlock, K::kInstruction, K::kMemoryWrite, K::kRegisters, K::kSyscall, K::kExit});
  std::size_t after = 0;
  auto end_note = (*reader)->next([&](const events::Event&) { ++after; });
  REQUIRE(end_note.has_value());
  CHECK(*end_note);  // a frame, of no events
  CHECK(after == 0);
  auto end = (*reader)->next([](const events::Event&) {});
  REQUIRE(end.has_value());
  CHECK(!*end);
  CHECK((*reader)->warning().empty());
  CHECK(!formats::UcirReader::can_carry(K::kFault));
  CHECK(formats::UcirReader::can_carry(K::kSyscall));
}

// A JIT's code below the mem level: the trace has none of the guest's stores,
// so a block read from writable memory is preceded by its bytes (once per
// content, again after the reader's memory changed there); the reader takes
// them for code, not for a memory event. At mem the stores carry them.
TEST_CASE("UCIR: below mem, a block from writable memory carries its code once per content; the reader decodes it") {
  const arch::ArchInfo& arch = arch::x86_64_arch();
  const Bytes version1{0xb8, 0x0a, 0x00, 0x00, 0x00, 0xc3}, version2{0xb8, 0x14, 0x00, 0x00, 0x00, 0xc3};
  const Bytes overwrite{0x90, 0x90};
  const events::MemoryWriteEffect read_into_code{events::GuestAddress{0x5000}, overwrite};
  for (const std::string level : {"insns", "mem"}) {
    CAPTURE(level);
    events::TraceInfo info;
    info.arch_name = arch.name;
    info.level = level;
    info.has_initial_state = true;
    events::InitialRegion region;  // anonymous, read-write-execute, zeros
    region.start = events::GuestAddress{0x5000};
    region.size = 0x1000;
    region.prot = 7;
    region.bytes.assign(0x1000, 0);
    info.initial_memory.push_back(region);
    const std::string path = temp_path("jit_" + level);
    formats::UcirWriterOptions options;
    options.keyframe_interval = 0;
    auto writer = formats::UcirWriter::open(path, arch, options);
    REQUIRE(writer.has_value());
    (*writer)->begin(info);
    EventFeed send(**writer);
    // Entered: version 1, twice; version 2 (rewritten); after a read() into it, version 2 again.
    for (const Bytes* code : {&version1, &version1, &version2, &version2}) {
      if (code == &version2 && send.sent() > 6) {
        events::SyscallEvent call;
        call.number = 0;
        call.name = "read";
        call.memory_writes = std::span<const events::MemoryWriteEffect>(&read_into_code, 1);
        send(events::EventKind::kSyscall, call);
      }
      send(events::EventKind::kBlock, events::BlockEvent{events::GuestAddress{0x5000}, 6, 2, *code, 0, true});
      send(events::EventKind::kInstruction, events::InstructionEvent{events::GuestAddress{0x5000}, 5, *code, 0});
      send(events::EventKind::kInstruction,
           events::InstructionEvent{events::GuestAddress{0x5005}, 1, std::span(*code).subspan(5), 1});
    }
    CHECK((*writer)->end({}).empty());
    const Bytes bytes = slurp(path);
    std::filesystem::remove(path);

    auto reader = formats::UcirReader::from_bytes(bytes, "jit");
    REQUIRE(reader.has_value());
    std::vector<Bytes> block_code;
    std::vector<bool> given;
    std::vector<events::EventKind> kinds;
    for (int guard = 0; guard < 100; ++guard) {
      auto more = (*reader)->next([&](const events::Event& event) {
        kinds.push_back(event.kind);
        if (event.kind != events::EventKind::kBlock) return;
        const auto& block = std::get<events::BlockEvent>(event.payload);
        block_code.emplace_back(block.bytes.begin(), block.bytes.end());
        given.push_back(block.from_writable_memory);
      });
      REQUIRE(more.has_value());
      if (!*more) break;
    }
    CHECK(std::count(kinds.begin(), kinds.end(), events::EventKind::kMemoryWrite) == 0);
    CHECK(std::count(kinds.begin(), kinds.end(), events::EventKind::kInstruction) == 8);
    if (level == "insns") {
      CHECK(block_code == std::vector<Bytes>{version1, version1, version2, version2});
      CHECK(given == std::vector<bool>{true, false, true, true});
    } else {  // the guest's stores are not in this made-up mem trace, and no code is given
      CHECK(block_code == std::vector<Bytes>{Bytes(6, 0), Bytes(6, 0), Bytes(6, 0), Bytes{0x90, 0x90, 0, 0, 0, 0}});
      CHECK(given == std::vector<bool>{false, false, false, false});
    }
  }
}

// The reader's rule for given code is exact: a frame's first op that writes
// exactly the next OP_JMP's range is code; one byte short, it is the memory
// write it says it is (an event before the block), as any other reader sees it.
TEST_CASE("UCIR: only a write of exactly the next block's range, first in its frame, is read as the block's code") {
  ByteBuilder b;
  b.text("UCIR").u32(0).padded("x86_64", 32).padded("linux", 32).u8(0).u8(0);
  b.u8(2).u64(1).u32(1);  // OP_KEYFRAME: OP_MEM_MAP 0x5000, one page, rwx, anonymous
  b.u8(9).u64(0x5000).u32(0x1000).u8(7).u64(0).u64(0).u16(0).u16(0);
  for (const std::uint32_t written : {6u, 5u}) {  // mov eax, 10; ret (6 bytes), then 5 of them
    b.u8(1).u64(1).u32(4);
    b.u8(8).u64(0x5000).u32(written).raw({0xb8, 0x0a, 0x00, 0x00, 0x00});
    if (written == 6) b.u8(0xc3);
    b.u8(3).u64(0x5000).u32(6);  // OP_JMP
    b.u8(4).u8(5).u8(4).u8(1);   // OP_STEP 5, OP_STEP 1
  }
  b.u8(1).u64(1).u32(0);  // the end note
  auto reader = formats::UcirReader::from_bytes(b.out, "given");
  REQUIRE(reader.has_value());
  std::vector<events::EventKind> kinds;
  std::vector<bool> given;
  std::vector<Bytes> code;
  for (int guard = 0; guard < 10; ++guard) {
    auto more = (*reader)->next([&](const events::Event& event) {
      kinds.push_back(event.kind);
      if (event.kind != events::EventKind::kBlock) return;
      const auto& block = std::get<events::BlockEvent>(event.payload);
      given.push_back(block.from_writable_memory);
      code.emplace_back(block.bytes.begin(), block.bytes.end());
    });
    REQUIRE(more.has_value());
    if (!*more) break;
  }
  using K = events::EventKind;
  CHECK(kinds == std::vector<K>{K::kBlock, K::kInstruction, K::kInstruction, K::kMemoryWrite, K::kBlock,
                                K::kInstruction, K::kInstruction});
  CHECK(given == std::vector<bool>{true, false});
  const Bytes code_bytes{0xb8, 0x0a, 0x00, 0x00, 0x00, 0xc3};
  CHECK(code == std::vector<Bytes>{code_bytes, code_bytes});  // (the short write changed nothing)
  CHECK((*reader)->warning().empty());
}

TEST_CASE("UCIR: --compress zstd writes one zstd stream the reader opens") {
  formats::UcirWriterOptions options;
  options.compress_zstd = true;
  const Bytes compressed = write_tiny("zstd", options);
  REQUIRE(compressed.size() > 4);
  CHECK(Bytes(compressed.begin(), compressed.begin() + 4) == Bytes{0x28, 0xb5, 0x2f, 0xfd});
  auto reader = formats::UcirReader::from_bytes(compressed, "z");
  REQUIRE(reader.has_value());
  CHECK((*reader)->header().zstd);
  Collected collected;
  CHECK(read_everything(compressed, &collected).empty());
  CHECK(collected.kinds.size() == 6);
}

TEST_CASE("UCIR: a write error (disk full) comes back from end(), naming the file") {
  if (!std::filesystem::exists("/dev/full")) return;
  TinyTrace trace;
  auto writer = formats::UcirWriter::open("/dev/full", trace.arch, {});
  REQUIRE(writer.has_value());
  trace.play(**writer);
  const std::string error = (*writer)->end({});
  CHECK(error.find("/dev/full") != std::string::npos);
  CHECK(error.find("write error") != std::string::npos);
}

TEST_CASE("Malicious: a UCIR file cut at every offset is read up to its last complete frame") {
  const Bytes bytes = expected_tiny_trace();
  const std::size_t frame_start = tiny_frame_start(bytes);
  REQUIRE(bytes[frame_start] == 1);
  for (std::size_t length = 0; length < bytes.size(); ++length) {
    CAPTURE(length);
    const Bytes cut(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(length));
    Collected collected;
    std::string warning;
    const std::string error = read_everything(cut, &collected, &warning);
    if (length < ucir::kHeaderBytes) {
      CHECK(error.find("shorter than the 74-byte UCIR header") != std::string::npos);
      continue;
    }
    CHECK(error.empty());
    // Only with the whole frame of events (the end note missing, or cut) are there events.
    CHECK(collected.kinds.size() == (length < bytes.size() - kEndNoteBytes ? 0u : 6u));
    // Without only its end note, the file ends with the exit: whole (the next test).
    if (length == bytes.size() - kEndNoteBytes) {
      CHECK(warning.empty());
      continue;
    }
    // Cut inside a frame, or exactly between two (where only the end note tells).
    const bool between_frames = length == ucir::kHeaderBytes || length == frame_start;
    CHECK_MESSAGE(warning.find(between_frames ? "without the end note" : "the trace ends inside the OP_") !=
                      std::string::npos,
                  warning);
  }
  // Whole, it has no warning.
  std::string warning;
  CHECK(read_everything(bytes, nullptr, &warning).empty());
  CHECK(warning.empty());
}

TEST_CASE("UCIR: a file from before the end note is whole when its last frame exits, cut short when not") {
  const Bytes bytes = expected_tiny_trace();
  const Bytes exits(bytes.begin(), bytes.end() - static_cast<std::ptrdiff_t>(kEndNoteBytes));
  std::string warning;
  Collected collected;
  CHECK(read_everything(exits, &collected, &warning).empty());
  CHECK(collected.kinds.size() == 6);
  CHECK(warning.empty());
  // The same frame without its OP_EXIT (op_count 5): a recording cut between frames.
  Bytes no_exit(exits.begin(), exits.end() - 1);
  no_exit[tiny_frame_start(bytes) + 9] = 5;
  collected = {};
  CHECK(read_everything(no_exit, &collected, &warning).empty());
  CHECK(collected.kinds.size() == 5);
  char where[64];
  std::snprintf(where, sizeof where, "ends at offset %zu after a complete frame", no_exit.size());
  CHECK_MESSAGE(warning.find(where) != std::string::npos, warning);
}

TEST_CASE("Malicious: a zstd UCIR file cut at every offset never crashes the reader") {
  formats::UcirWriterOptions options;
  options.compress_zstd = true;
  const Bytes compressed = write_tiny("zstd-cut", options);
  for (std::size_t length = 0; length < compressed.size(); ++length) {
    const Bytes cut(compressed.begin(), compressed.begin() + static_cast<std::ptrdiff_t>(length));
    Collected collected;
    (void)read_everything(cut, &collected);
    CHECK(collected.kinds.size() <= 6);
  }
  // Cut in its middle, the stream is read as far as it goes, with a warning.
  const Bytes half(compressed.begin(), compressed.begin() + static_cast<std::ptrdiff_t>(compressed.size() / 2));
  std::string warning;
  const std::string error = read_everything(half, nullptr, &warning);
  CAPTURE(error);
  CHECK((warning.find("zstd stream ends early") != std::string::npos ||
         error.find("zstd stream ends early") != std::string::npos));
}

// What reading damaged bytes gave: the error (if any), how many events came
// before it, and whether the reader finished by itself (not stopped by the guard).
struct Outcome {
  std::optional<Error> error;
  std::size_t events = 0;
  bool finished = false;
  bool operator==(const Outcome& other) const {
    return events == other.events && finished == other.finished &&
           error.has_value() == other.error.has_value() && (!error || error->to_string() == other.error->to_string());
  }
};

Outcome read_outcome(const Bytes& bytes) {
  Outcome outcome;
  auto reader = formats::UcirReader::from_bytes(bytes, "damaged.ucir");
  if (!reader) {
    outcome.error = reader.error();
    outcome.finished = true;
    return outcome;
  }
  for (int guard = 0; guard < 100000; ++guard) {
    auto more = (*reader)->next([&](const events::Event&) { ++outcome.events; });
    if (!more) outcome.error = more.error();
    if (!more || !*more) {
      outcome.finished = true;
      break;
    }
  }
  return outcome;
}

// Each damaged read ends by itself, the same way twice, in events (no more than
// one per byte) or an error that names the file, says what is wrong and, when it
// gives an offset, one inside the bytes read. Counts the errors and clean reads.
void check_damaged(const Bytes& bytes, int* errors, int* clean) {
  const Outcome outcome = read_outcome(bytes);
  CHECK(outcome.finished);
  CHECK(outcome.events <= bytes.size());
  CHECK(read_outcome(bytes) == outcome);
  if (!outcome.error) {
    ++*clean;
    return;
  }
  ++*errors;
  CAPTURE(outcome.error->to_string());
  CHECK(outcome.error->source == "damaged.ucir");
  CHECK_FALSE(outcome.error->message.empty());
  if (outcome.error->offset) CHECK(*outcome.error->offset <= bytes.size());
}

TEST_CASE("Malicious: random bit flips give an error or events, never a crash") {
  const Bytes original = expected_tiny_trace();
  std::mt19937 random(12345);
  int errors = 0, clean = 0;
  for (int round = 0; round < 5000; ++round) {
    Bytes bytes = original;
    const int flips = 1 + round % 4;
    for (int i = 0; i < flips; ++i) {
      const std::size_t at = random() % bytes.size();
      bytes[at] = static_cast<std::uint8_t>(bytes[at] ^ (1u << (random() % 8)));
    }
    CAPTURE(round);
    check_damaged(bytes, &errors, &clean);
  }
  // Both outcomes occur: the flips reach past the header into the frames.
  CHECK(errors > 500);
  CHECK(clean > 500);
  // And random bytes after a valid header: an error, or ops read as events.
  errors = clean = 0;
  for (int round = 0; round < 2000; ++round) {
    Bytes bytes(original.begin(), original.begin() + ucir::kHeaderBytes);
    const std::size_t extra = random() % 200;
    for (std::size_t i = 0; i < extra; ++i) bytes.push_back(static_cast<std::uint8_t>(random() % 16));
    CAPTURE(round);
    check_damaged(bytes, &errors, &clean);
  }
  CHECK(errors > 200);
  CHECK(clean > 0);
}

TEST_CASE("Malicious: an unknown op, a frame inside a syscall, an overrunning op_count and a huge memory op are named with their offset") {
  const Bytes original = expected_tiny_trace();
  const std::size_t frame_start = tiny_frame_start(original);
  const std::size_t jmp = frame_start + 13;
  const std::size_t nested = original.size() - kEndNoteBytes - 1 - 2 - 15;  // the syscall's nested OP_MEM_WRITE
  REQUIRE(original[nested] == 8);

  Bytes unknown = original;
  unknown[jmp] = 0x42;
  std::string error = read_everything(unknown);
  CHECK(error.find("unknown op 66") != std::string::npos);
  char where[40];
  std::snprintf(where, sizeof where, "at offset 0x%zx", jmp);
  CHECK(error.find(where) != std::string::npos);

  Bytes frame_in_syscall = original;
  frame_in_syscall[nested] = 1;
  error = read_everything(frame_in_syscall);
  CHECK(error.find("OP_FRAME nested inside OP_SYSCALL") != std::string::npos);

  Bytes overrun(original.begin(), original.end() - static_cast<std::ptrdiff_t>(kEndNoteBytes));
  overrun[frame_start + 9] = 100;  // op_count (the frame is the file's last)
  std::string warning;
  error = read_everything(overrun, nullptr, &warning);
  CHECK(error.empty());
  CHECK(warning.find("announces 100 ops") != std::string::npos);

  // A memory op's length hit by garbage (0xffffffff) is damage, not a file cut
  // short: no writer writes an op over 16 MiB (ucir::kMaxMemOpBytes).
  Bytes huge_write = original;
  for (int i = 0; i < 4; ++i) huge_write[nested + 9 + static_cast<std::size_t>(i)] = 0xff;
  warning.clear();
  error = read_everything(huge_write, nullptr, &warning);
  CHECK(error.find("OP_MEM_WRITE of 4294967295 bytes") != std::string::npos);
  std::snprintf(where, sizeof where, "at offset 0x%zx", nested);
  CHECK_MESSAGE(error.find(where) != std::string::npos, error);
  CHECK(warning.empty());

  Bytes not_ucir = original;
  not_ucir[0] = 'X';
  CHECK(read_everything(not_ucir).find("not a UCIR file") != std::string::npos);
  Bytes usercorn = original;
  usercorn[4] = 0;
  usercorn[7] = 1;  // version 1 written big endian: the rest must be a snappy framed stream
  std::string snappy_warning;
  CHECK(read_everything(usercorn, nullptr, &snappy_warning).empty());
  CHECK(snappy_warning.find("does not start with its identifier chunk") != std::string::npos);
}

// Our OP_THREAD and OP_SIGNAL (ucir_layout.h): a change that is not 1, 2 or
// 3, and an effect that is not theirs, are named with the op's offset.
TEST_CASE("Malicious: an OP_THREAD with an unknown change or a mapping among its effects is named with its offset") {
  const Bytes original = expected_tiny_trace();
  const std::size_t frame_start = tiny_frame_start(original);
  const std::size_t at = frame_start + 13;  // the frame's first op (its OP_JMP)
  char where[40];
  Bytes bad_change = original;
  bad_change[at] = 0x82;
  bad_change[at + 1] = 9;
  std::string error = read_everything(bad_change);
  CHECK_MESSAGE(error.find("OP_THREAD change 9") != std::string::npos, error);
  std::snprintf(where, sizeof where, "at offset 0x%zx", at);
  CHECK(error.find(where) != std::string::npos);

  Bytes mapping = original;
  const std::uint8_t thread[24] = {0x82, 3, 7, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0};
  std::copy(std::begin(thread), std::end(thread), mapping.begin() + static_cast<std::ptrdiff_t>(at));
  Bytes map_op(34, 0);
  map_op[0] = 9;  // OP_MEM_MAP, as an effect of the thread change
  std::copy(map_op.begin(), map_op.end(), mapping.begin() + static_cast<std::ptrdiff_t>(at + 24));
  error = read_everything(mapping);
  CHECK_MESSAGE(error.find("OP_MEM_MAP inside OP_THREAD") != std::string::npos, error);
  std::snprintf(where, sizeof where, "at offset 0x%zx", at + 24);
  CHECK(error.find(where) != std::string::npos);
}

namespace {

// CRC-32C, written here from its definition (reflected polynomial 0x82f63b78),
// masked as the snappy framing format says: ((crc >> 15) | (crc << 17)) + 0xa282ead8.
std::uint32_t test_masked_crc(const Bytes& data) {
  std::uint32_t crc = ~0u;
  for (const std::uint8_t byte : data) {
    crc ^= byte;
    for (int k = 0; k < 8; ++k) crc = (crc & 1) ? (crc >> 1) ^ 0x82f63b78u : crc >> 1;
  }
  crc = ~crc;
  return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

// A snappy framing chunk: type, u24 length, masked CRC of `plain`, body.
void snappy_chunk(ByteBuilder& b, std::uint8_t type, const Bytes& plain, const Bytes& body) {
  const std::size_t length = 4 + body.size();
  b.u8(type).u8(static_cast<std::uint8_t>(length)).u8(static_cast<std::uint8_t>(length >> 8)).u8(static_cast<std::uint8_t>(length >> 16));
  b.u32(test_masked_crc(plain));
  b.out.insert(b.out.end(), body.begin(), body.end());
}

// A snappy block holding `plain` (at most 60 bytes) as one literal: varint
// length, literal tag ((n - 1) << 2), the bytes.
Bytes snappy_literal_block(const Bytes& plain) {
  Bytes block{static_cast<std::uint8_t>(plain.size()), static_cast<std::uint8_t>((plain.size() - 1) << 2)};
  block.insert(block.end(), plain.begin(), plain.end());
  return block;
}

}  // namespace

TEST_CASE("UCIR: a usercorn-flavoured file (version 1 big endian, snappy framed, u64 sizes, u32 syscall numbers)") {
  // Built byte by byte from docs/formats/ucir.md (usercorn's own writer).
  ByteBuilder keyframe;  // OP_KEYFRAME pid 1, 2 ops: OP_MEM_MAP (u64 size) and OP_REG
  keyframe.u8(2).u64(1).u32(2);
  keyframe.u8(9).u64(0x1000).u64(0x1000).u8(5).u64(0).u64(0).u16(0).u16(0);
  keyframe.u8(5).u16(35).u64(7);
  ByteBuilder frame;  // OP_FRAME pid 1, 4 ops: JMP, STEP, SYSCALL (u32 number) with one nested OP_MEM_PROT (u64 size), EXIT
  frame.u8(1).u64(1).u32(4);
  frame.u8(3).u64(0x1000).u32(2);
  frame.u8(4).u8(2);
  frame.u8(12).u32(231).u64(0).u8(6).u16(1).u64(9).u64(0).u64(0).u64(0).u64(0).u64(0);
  frame.u8(11).u64(0x1000).u64(0x1000).u8(1);
  frame.u8(13);
  REQUIRE(frame.out.size() > 60);  // split: the first 40 bytes compressed, the rest stored
  const Bytes frame_head(frame.out.begin(), frame.out.begin() + 40);
  const Bytes frame_tail(frame.out.begin() + 40, frame.out.end());

  ByteBuilder file;
  file.text("UCIR").raw({0, 0, 0, 1}).padded("x86_64", 32).padded("linux", 32).u8(0).u8(0);
  file.raw({0xff, 0x06, 0x00, 0x00, 0x73, 0x4e, 0x61, 0x50, 0x70, 0x59});  // stream identifier
  snappy_chunk(file, 0x01, keyframe.out, keyframe.out);                      // uncompressed
  file.raw({0xfe, 0x02, 0x00, 0x00, 0x00, 0x00});                            // padding (skippable)
  snappy_chunk(file, 0x00, frame_head, snappy_literal_block(frame_head));    // compressed
  snappy_chunk(file, 0x01, frame_tail, frame_tail);

  auto reader = formats::UcirReader::from_bytes(file.out, "usercorn");
  REQUIRE_MESSAGE(reader.has_value(), tracecorn::test_support::error_text(reader));
  CHECK((*reader)->header().usercorn_flavour);
  CHECK((*reader)->header().version == 1);
  REQUIRE((*reader)->info().initial_memory.size() == 1);
  CHECK((*reader)->info().initial_memory[0].size == 0x1000);
  CHECK((*reader)->info().initial_memory[0].prot == 5);
  REQUIRE((*reader)->info().initial_registers.size() == 1);
  CHECK((*reader)->info().initial_registers[0].as_u64() == 7);
  std::vector<events::EventKind> kinds;
  std::uint64_t number = 0, prot_length = 0;
  std::int32_t code = -1;
  auto more = (*reader)->next([&](const events::Event& event) {
    kinds.push_back(event.kind);
    if (event.kind == events::EventKind::kSyscall) {
      const auto& call = std::get<events::SyscallEvent>(event.payload);
      number = call.number;
      REQUIRE(call.mapping_changes.size() == 1);
      prot_length = call.mapping_changes[0].length;
      CHECK(call.mapping_changes[0].kind == events::MappingChangeKind::kProtect);
    }
    if (event.kind == events::EventKind::kExit) code = std::get<events::ExitEvent>(event.payload).code;
  });
  REQUIRE_MESSAGE(more.has_value(), tracecorn::test_support::error_text(more));
  CHECK(*more);
  using K = events::EventKind;
  CHECK(kinds == std::vector<K>{K::kBlock, K::kInstruction, K::kSyscall, K::kExit});
  CHECK(number == 231);
  CHECK(prot_length == 0x1000);
  CHECK(code == 9);  // exit_group's argument
  CHECK((*reader)->warning().empty());

  // A damaged chunk (checksum) ends the stream there, with a warning, never a crash.
  Bytes damaged = file.out;
  damaged.back() ^= 1;
  std::string warning;
  CHECK(read_everything(damaged, nullptr, &warning).empty());
  CHECK(warning.find("checksum mismatch") != std::string::npos);
  for (std::size_t length = 0; length < file.out.size(); ++length)
    (void)read_everything(Bytes(file.out.begin(), file.out.begin() + static_cast<std::ptrdiff_t>(length)));
}

TEST_CASE("UCIR: periodic keyframes hold the memory written since the previous one and every register") {
  TinyTrace trace;
  const std::string path = temp_path("keyframes");
  formats::UcirWriterOptions options;
  options.keyframe_interval = 1;
  auto writer = formats::UcirWriter::open(path, trace.arch, options);
  REQUIRE(writer.has_value());
  (*writer)->begin(trace.info);  // level "regs": keyframes carry registers
  const events::BlockEvent block{events::GuestAddress{0x1010}, 3, 1, {}};
  (*writer)->on_event(events::Event{{0}, {}, events::EventKind::kBlock, block});
  (*writer)->on_event(events::Event{{1}, {}, events::EventKind::kInstruction,
                                    events::InstructionEvent{events::GuestAddress{0x1010}, 2, {}, 0}});
  (*writer)->on_event(events::Event{{2}, {}, events::EventKind::kMemoryWrite,
                                    events::MemoryEvent{events::GuestAddress{0x2000}, 4, 0xdeadbeef, {0x1010}, true}});
  (*writer)->on_event(events::Event{{3}, {}, events::EventKind::kBlock, block});  // 1 instruction done: a keyframe first
  REQUIRE((*writer)->end({}).empty());
  const Bytes bytes = slurp(path);
  std::filesystem::remove(path);
  // OP_FRAME (JMP, MEM_WRITE, STEP), then OP_KEYFRAME: the write again, then one OP_REG/OP_SPREG per register.
  ByteBuilder expected;
  expected.u8(1).u64(1).u32(3).u8(3).u64(0x1010).u32(3).u8(8).u64(0x2000).u32(4).raw({0xef, 0xbe, 0xad, 0xde}).u8(4).u8(2);
  expected.u8(2).u64(1).u32(static_cast<std::uint32_t>(1 + trace.arch.registers.size()));
  expected.u8(8).u64(0x2000).u32(4).raw({0xef, 0xbe, 0xad, 0xde});
  const auto found = std::search(bytes.begin(), bytes.end(), expected.out.begin(), expected.out.end());
  CHECK(found != bytes.end());
  auto reader = formats::UcirReader::from_bytes(bytes, "keyframes");
  REQUIRE(reader.has_value());
  std::size_t events_seen = 0;
  for (;;) {
    auto more = (*reader)->next([&](const events::Event&) { ++events_seen; });
    REQUIRE(more.has_value());
    if (!*more) break;
  }
  CHECK((*reader)->keyframes_read() == 2);
  CHECK(events_seen == 4);  // block, insn, write, block (the keyframe adds none)
}
