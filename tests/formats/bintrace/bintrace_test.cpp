// Role: binary trace v1.0 unit tests: golden bytes of a small trace, worked out
// here from the spec (rvnbintrace's trace-format.md and the metadata
// wrapper of docs/formats/bintrace.md), not from the writer; reading it back
// (events and the state at an event); and "Malicious:" files, each refused with
// the byte offset of the fault and the reason; aarch64, whose 'arm1' magic has
// no register set anywhere, refused by the writer and the CLI with that reason.
#include <doctest/doctest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "formats/bintrace/bintrace_reader.h"
#include "formats/bintrace/bintrace_writer.h"
#include "tests/support/error_text.h"

using namespace tracecorn;

namespace {

// A little-endian byte builder that remembers offsets.
struct Bytes {
  std::vector<std::uint8_t> data;
  std::size_t size() const { return data.size(); }
  Bytes& le(std::uint64_t value, std::size_t count) {
    for (std::size_t i = 0; i < count; ++i) data.push_back(static_cast<std::uint8_t>(i < 8 ? value >> (8 * i) : 0));
    return *this;
  }
  Bytes& u8(std::uint64_t value) { return le(value, 1); }
  Bytes& u16(std::uint64_t value) { return le(value, 2); }
  Bytes& u32(std::uint64_t value) { return le(value, 4); }
  Bytes& u64(std::uint64_t value) { return le(value, 8); }
  Bytes& str(std::string_view text) {  // spec string: u8 count, characters
    u8(text.size());
    data.insert(data.end(), text.begin(), text.end());
    return *this;
  }
  Bytes& padded(std::string_view text, std::size_t field) {  // metadata string: u64 length, NUL padded field
    u64(text.size());
    data.insert(data.end(), text.begin(), text.end());
    data.insert(data.end(), field - text.size(), 0);
    return *this;
  }
  Bytes& raw(std::span<const std::uint8_t> bytes) {
    data.insert(data.end(), bytes.begin(), bytes.end());
    return *this;
  }
  Bytes& zeros(std::size_t count) {
    data.insert(data.end(), count, 0);
    return *this;
  }
  void patch_u64(std::size_t at, std::uint64_t value) {
    for (int i = 0; i < 8; ++i) data[at + static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(value >> (8 * i));
  }
};

const arch::ArchInfo& x86() { return arch::x86_64_arch(); }
const arch::BintraceMachine& machine() { return *x86().format_ids.bintrace; }

std::size_t id_of(std::string_view name) {
  for (std::size_t i = 0; i < machine().registers.size(); ++i)
    if (machine().registers[i].name == name) return i;
  FAIL("no register " << name);
  return 0;
}
std::uint16_t table_of(std::string_view name) {
  for (std::size_t i = 0; i < x86().registers.size(); ++i)
    if (x86().registers[i].name == name) return static_cast<std::uint16_t>(i);
  FAIL("no table register " << name);
  return 0;
}

events::RegisterValue value_of(std::string_view name, std::uint64_t value) {
  events::RegisterValue out;
  out.index = table_of(name);
  out.size = static_cast<std::uint8_t>(std::min<std::size_t>(x86().registers[out.index].size, 16));
  for (int i = 0; i < 8; ++i) out.bytes[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(value >> (8 * i));
  return out;
}

std::vector<std::uint8_t> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

// The golden trace: what the test feeds the writer, and the bytes the spec says it must produce.
struct Golden {
  std::vector<std::uint8_t> expected;
  std::vector<std::uint8_t> written;
  // Offsets (in `expected`) the malicious cases aim at.
  std::size_t header_compression = 0, machine_start = 0, first_operation = 0, memory_size_field = 0,
              registers_start = 0, events_size_field = 0, event_count_field = 0, module_diff = 0, push_address = 0,
              rax_id = 0, exit_length = 0, continuation = 0;
};

// With `as_runs`, each instruction reaches the writer as a run of one
// (Sink::on_instructions, as the recorder hands them over at the full level)
// instead of an instruction event.
Golden make_golden(bool as_runs = false) {
  Golden golden;
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("tracecorn-bintrace-golden-" + std::to_string(::getpid()) + ".bt")).string();
  formats::BintraceWriterOptions options;
  options.tool_version = "9.9";
  options.tool_info = "golden";
  options.unix_time = 1700000000;
  auto writer = formats::BintraceWriter::open(path, x86(), options);
  REQUIRE_MESSAGE(writer.has_value(), tracecorn::test_support::error_text(writer));

  events::TraceInfo info;
  info.level = "regs";
  info.has_initial_state = true;
  for (std::size_t i = 0; i < x86().registers.size(); ++i) {
    events::RegisterValue value;
    value.index = static_cast<std::uint16_t>(i);
    value.size = static_cast<std::uint8_t>(std::min<std::size_t>(x86().registers[i].size, 16));
    info.initial_registers.push_back(value);
  }
  info.initial_registers[table_of("rsp")] = value_of("rsp", 0x7000);
  info.initial_registers[table_of("rflags")] = value_of("rflags", 0x2);
  events::InitialRegion code{events::GuestAddress{0x1000}, 0x1000, 5, std::vector<std::uint8_t>(0x1000), "code", ""};
  for (std::size_t i = 0; i < code.bytes.size(); ++i) code.bytes[i] = static_cast<std::uint8_t>(i * 7);
  events::InitialRegion stack{events::GuestAddress{0x6000}, 0x1000, 3, std::vector<std::uint8_t>(0x1000), "stack", ""};
  info.initial_memory = {code, stack};

  // Feed: a module load; push rax (0x1000, 1 byte: writes 8 bytes at 0x6ff8,
  // rsp -8); mov eax, 5 + flags (0x1001, 3 bytes: rax = 5, rflags 0x2 -> 0x46);
  // syscall (0x1004, 2 bytes) whose kernel maps 0x8000 and sets rax, rcx; an
  // instruction at 0x1006 (5 bytes) writing 15 separate bytes; exit 0.
  auto& w = **writer;
  w.begin(info);
  std::uint64_t sequence = 0;
  auto feed = [&](events::EventKind kind, events::EventPayload payload) {
    w.on_event(events::Event{events::EventSequence{sequence++}, {}, kind, std::move(payload)});
  };
  std::vector<events::InstructionBounds> bounds;
  auto instruction = [&](std::uint64_t address, std::uint8_t size, std::uint32_t index) {
    if (!as_runs) {
      feed(events::EventKind::kInstruction, events::InstructionEvent{events::GuestAddress{address}, size, {}, index});
      return;
    }
    bounds.assign(1, events::InstructionBounds{events::GuestAddress{address}, 0, size});
    w.on_instructions(events::InstructionRun{events::EventSequence{sequence++}, {}, {}, bounds, index, 0});
  };
  feed(events::EventKind::kModuleLoad, events::ModuleLoadEvent{events::GuestAddress{0x1000}, events::GuestAddress{0x2000}, 0, "/m"});
  feed(events::EventKind::kBlock, events::BlockEvent{events::GuestAddress{0x1000}, 11, 4, {}});
  instruction(0x1000, 1, 0);
  feed(events::EventKind::kMemoryWrite,
       events::MemoryEvent{events::GuestAddress{0x6ff8}, 8, 0x1122334455667788, events::GuestAddress{0x1000}, true});
  std::vector<events::RegisterValue> push_regs = {value_of("rsp", 0x6ff8)};
  feed(events::EventKind::kRegisters, events::RegistersEvent{events::GuestAddress{0x1000}, push_regs});
  instruction(0x1001, 3, 1);
  feed(events::EventKind::kMemoryRead,
       events::MemoryEvent{events::GuestAddress{0x1800}, 4, 0, events::GuestAddress{0x1001}, true});
  std::vector<events::RegisterValue> mov_regs = {value_of("rflags", 0x46), value_of("rax", 5)};
  feed(events::EventKind::kRegisters, events::RegistersEvent{events::GuestAddress{0x1001}, mov_regs});
  instruction(0x1004, 2, 2);
  std::vector<events::MappingEffect> maps = {{events::MappingChangeKind::kMap, events::GuestAddress{0x8000}, 0x1000, 3}};
  std::vector<events::RegisterValue> kernel_regs = {value_of("rax", 0x10), value_of("rcx", 0x1006)};
  events::SyscallEvent call;
  call.pc = events::GuestAddress{0x1004};
  call.number = 1;
  call.name = "write";
  for (int i = 0; i < 6; ++i) call.args[i] = static_cast<std::uint64_t>(i + 1);
  call.result = 5;
  call.mapping_changes = maps;
  call.register_changes = kernel_regs;
  feed(events::EventKind::kSyscall, call);
  instruction(0x1006, 5, 0);
  for (std::uint64_t i = 0; i < 15; ++i)
    feed(events::EventKind::kMemoryWrite, events::MemoryEvent{events::GuestAddress{0x6000 + 2 * i}, 1, i + 1,
                                                              events::GuestAddress{0x1006}, true});
  feed(events::EventKind::kExit, events::ExitEvent{false, 0, 0});
  const std::string error = w.end({});
  REQUIRE_MESSAGE(error.empty(), error);
  CHECK(w.events_written() == 8);
  golden.written = read_file(path);
  std::filesystem::remove(path);

  // ---- the expected bytes, from the spec ----
  const std::size_t registers = machine().registers.size();
  const std::size_t rip = id_of("rip"), rsp = id_of("rsp"), eflags = id_of("eflags"), rax = id_of("rax"),
                    rcx = id_of("rcx");
  const std::uint8_t flag_bits[] = {0, 2, 4, 6, 7, 8, 9, 10, 11};  // CF PF AF ZF SF TF IF DF OF
  const std::int64_t sp_steps[] = {2, 4, 8, 16, -2, -4, -8, -16};
  auto rip_op = [&](unsigned step) { return registers + step - 1; };
  auto flag_set_op = [&](unsigned k) { return registers + 15 + k; };
  auto sp_op = [&](unsigned k) { return registers + 15 + 18 + k; };

  Bytes b;
  b.u64(0x72766e62696e7273).u32(1).u32(1);
  b.padded("1.0.0", 512).padded("tracecorn", 512).padded("9.9", 512).padded("golden", 2048).u64(1700000000);
  b.u64(1);  // header: size 1
  golden.header_compression = b.size();
  b.u8(0);   // no compression
  golden.machine_start = b.size();
  b.u64(0).u32(0x31343678).u8(8);
  b.u32(3).u64(0x1000).u64(0x1000).u64(0x6000).u64(0x1000).u64(0x8000).u64(0x1000);  // regions (0x8000: mapped later)
  b.u32(static_cast<std::uint32_t>(registers));
  for (std::size_t i = 0; i < registers; ++i) b.u16(i).u16(machine().registers[i].size).str(machine().registers[i].name);
  b.u32(15 + 9 + 9 + 8);
  golden.first_operation = b.size();
  for (unsigned step = 1; step <= 15; ++step) b.u8(rip_op(step)).u16(rip).u8(1).u64(step);
  for (unsigned k = 0; k < 9; ++k) b.u8(registers + 15 + k).u16(eflags).u8(3).u32(1u << flag_bits[k]);
  for (unsigned k = 0; k < 9; ++k) b.u8(registers + 24 + k).u16(eflags).u8(2).u32(~(1u << flag_bits[k]));
  for (unsigned k = 0; k < 8; ++k) b.u8(sp_op(k)).u16(rsp).u8(1).u64(static_cast<std::uint64_t>(sp_steps[k]));
  auto statics = machine().static_registers();
  REQUIRE(statics.has_value());
  b.u32(statics->size());
  for (const auto& reg : *statics) b.str(reg.name).u8(1).u8(reg.value);
  b.patch_u64(golden.machine_start, b.size() - golden.machine_start - 8);
  golden.memory_size_field = b.size();
  b.u64(0x3000).raw(code.bytes).zeros(0x1000).zeros(0x1000);
  golden.registers_start = b.size();
  b.u64(0).u32(static_cast<std::uint32_t>(registers));
  for (std::size_t i = 0; i < registers; ++i) {
    const auto& reg = machine().registers[i];
    b.u16(i);
    std::uint64_t value = 0;
    if (reg.source == arch::BintraceRegister::Source::kConstant) value = reg.constant;
    if (reg.name == "rip") value = 0x1000;  // the first instruction's address
    if (reg.name == "rsp") value = 0x7000;
    if (reg.name == "eflags") value = 0x2;
    b.le(value, reg.size);  // everything else (x87, zmm...) is zero here
  }
  b.patch_u64(golden.registers_start, b.size() - golden.registers_start - 8);
  golden.events_size_field = b.size();
  b.u64(0);
  golden.event_count_field = b.size();
  b.u64(8);
  // 1. other: the module load, empty diff.
  b.u8(0xff).u8(0xff).str("module 0x1000 0x2000 bias 0x0 /m");
  golden.module_diff = b.size();
  b.u8(0x00);
  // 2. push rax: 2 registers (rsp -8, rip +1, in id order), 1 memory entry.
  b.u8(0x21);
  golden.push_address = b.size();
  b.u64(0x6ff8).u8(8).u64(0x1122334455667788).u8(sp_op(6)).u8(rip_op(1));
  // 3. rax = 5 (SET), rip +3, eflags PF and ZF set (0x2 -> 0x46): 4 registers.
  b.u8(0x40);
  golden.rax_id = b.size();
  b.u8(rax).u64(5).u8(rip_op(3)).u8(flag_set_op(1)).u8(flag_set_op(3));
  // 4. syscall: rip +2.
  b.u8(0x10).u8(rip_op(2));
  // 5. other: the mapping (fresh memory: nothing to zero).
  b.u8(0xff).u8(0xff).str("map 0x8000 0x1000 prot 3").u8(0x00);
  // 6. other: the syscall, the kernel's registers.
  b.u8(0xff).u8(0xff).str("syscall write(0x1, 0x2, 0x3, 0x4, 0x5, 0x6) = 5 #1");
  b.u8(0x20).u8(rax).u64(0x10).u8(rcx).u64(0x1006);
  // 7. 15 one-byte writes: 14 (count 0xf) and rip +5, then a continuation with the 15th.
  b.u8(0x1f);
  for (unsigned i = 0; i < 14; ++i) b.u64(0x6000 + 2 * i).u8(1).u8(i + 1);
  b.u8(rip_op(5));
  golden.continuation = b.size();
  b.u8(0x01).u64(0x6000 + 2 * 14).u8(1).u8(15);
  // 8. other: the exit.
  golden.exit_length = b.size() + 2;
  b.u8(0xff).u8(0xff).str("exit code 0").u8(0x00);
  b.patch_u64(golden.events_size_field, b.size() - golden.events_size_field - 8);
  golden.expected = b.data;
  return golden;
}

std::string first_difference(const std::vector<std::uint8_t>& a, const std::vector<std::uint8_t>& b) {
  for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i)
    if (a[i] != b[i]) return "first difference at offset " + std::to_string(i);
  return a.size() == b.size() ? "" : "sizes " + std::to_string(a.size()) + " and " + std::to_string(b.size());
}

Error read_error(std::vector<std::uint8_t> bytes) {
  auto reader = formats::BintraceReader::from_bytes(std::move(bytes), "bad.bt");
  if (!reader) return reader.error();
  for (;;) {
    auto more = (*reader)->next([](const events::Event&) {});
    if (!more) return more.error();
    if (!*more) break;
  }
  FAIL("the file was accepted");
  return {};
}

void set_u64(std::vector<std::uint8_t>& bytes, std::size_t at, std::uint64_t value) {
  for (int i = 0; i < 8; ++i) bytes[at + static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(value >> (8 * i));
}

}  // namespace

TEST_CASE("Bintrace: the writer's bytes are the spec's, byte for byte") {
  const Golden golden = make_golden();
  CHECK_MESSAGE(golden.written == golden.expected, first_difference(golden.written, golden.expected));
}

TEST_CASE("Bintrace: instructions handed over as runs give the golden bytes") {
  const Golden golden = make_golden(true);
  CHECK_MESSAGE(golden.written == golden.expected, first_difference(golden.written, golden.expected));
}

TEST_CASE("Bintrace: the golden trace reads back as its events and states") {
  const Golden golden = make_golden();
  for (const bool with_metadata : {true, false}) {
    CAPTURE(with_metadata);
    // Without metadata: a file that starts with the header section.
    const std::size_t skip = with_metadata ? 0 : std::min<std::size_t>(3640, golden.expected.size());
    const std::vector<std::uint8_t> bytes(golden.expected.begin() + static_cast<std::ptrdiff_t>(skip), golden.expected.end());
    CHECK(formats::BintraceReader::recognizes(bytes));
    auto reader = formats::BintraceReader::from_bytes(bytes, "golden.bt");
    REQUIRE_MESSAGE(reader.has_value(), tracecorn::test_support::error_text(reader));
    auto& r = **reader;
    CHECK(r.metadata().present == with_metadata);
    if (with_metadata) {
      CHECK(r.metadata().tool_name == "tracecorn");
      CHECK(r.metadata().unix_time == 1700000000);
    }
    CHECK(r.event_count() == 8);
    CHECK(r.machine().regions.size() == 3);
    CHECK(r.machine().statics.size() == 5);
    std::vector<std::string> seen;
    std::uint64_t rip_after_push = 0;
    for (;;) {
      auto more = r.next([&](const events::Event& event) {
        std::string line(events::event_kind_name(event.kind));
        if (auto* insn = std::get_if<events::InstructionEvent>(&event.payload))
          line += " " + std::to_string(insn->address.value) + "/" + std::to_string(insn->size);
        if (auto* mem = std::get_if<events::MemoryEvent>(&event.payload))
          line += " " + std::to_string(mem->address.value) + "=" + std::to_string(mem->value);
        if (auto* regs = std::get_if<events::RegistersEvent>(&event.payload))
          for (const auto& value : regs->changes)
            line += " " + std::string(x86().registers[value.index].name) + "=" + std::to_string(value.as_u64());
        if (auto* call = std::get_if<events::SyscallEvent>(&event.payload)) {
          line += " " + std::string(call->name) + " " + std::to_string(call->result) + " pc " +
                  std::to_string(call->pc.value) + " maps " + std::to_string(call->mapping_changes.size());
          for (const auto& value : call->register_changes)
            line += " " + std::string(x86().registers[value.index].name) + "=" + std::to_string(value.as_u64());
        }
        if (auto* exit = std::get_if<events::ExitEvent>(&event.payload)) line += " " + std::to_string(exit->code);
        if (auto* module = std::get_if<events::ModuleLoadEvent>(&event.payload)) line += " " + std::string(module->path);
        seen.push_back(line);
      });
      REQUIRE_MESSAGE(more.has_value(), tracecorn::test_support::error_text(more));
      if (!*more) break;
      if (r.events_read() == 2) rip_after_push = r.registers()[table_of("rip")].as_u64();
    }
    CHECK(rip_after_push == 0x1001);
    // Instruction sizes are decoded from the code region's bytes (i * 7), not from the feed.
    REQUIRE(seen.size() >= 10);
    CHECK(seen[0] == std::string(events::event_kind_name(events::EventKind::kModuleLoad)) + " /m");
    auto name = [](events::EventKind kind) { return std::string(events::event_kind_name(kind)); };
    CHECK(seen[1].rfind(name(events::EventKind::kInstruction) + " 4096/", 0) == 0);
    CHECK(seen[2] == name(events::EventKind::kMemoryWrite) + " " + std::to_string(0x6ff8) + "=" +
                         std::to_string(0x1122334455667788));
    CHECK(seen[3] == name(events::EventKind::kRegisters) + " rsp=" + std::to_string(0x6ff8));
    CHECK(seen[5] == name(events::EventKind::kRegisters) + " rax=5 rflags=70");
    CHECK(seen[7] == std::string(events::event_kind_name(events::EventKind::kSyscall)) + " write 5 pc 4100 maps 1 rax=16 rcx=4102");
    CHECK(seen.back() == std::string(events::event_kind_name(events::EventKind::kExit)) + " 0");
    // The state: rip after the last instruction, the 15 bytes written, rsp.
    const auto registers = r.registers();
    CHECK(registers[table_of("rip")].as_u64() == 0x100b);
    CHECK(registers[table_of("rsp")].as_u64() == 0x6ff8);
    CHECK(registers[table_of("rflags")].as_u64() == 0x46);
    std::uint8_t written[30] = {};
    r.read_memory(0x6000, written);
    for (unsigned i = 0; i < 15; ++i) CHECK(written[2 * i] == i + 1);
    std::uint8_t pushed[8] = {};
    r.read_memory(0x6ff8, pushed);
    CHECK(pushed[0] == 0x88);
  }
  // The state at an event: after 2 events (the module load and the push).
  auto reader = formats::BintraceReader::from_bytes(golden.expected, "golden.bt");
  REQUIRE(reader.has_value());
  REQUIRE((*reader)->skip_to(2).has_value());
  CHECK((*reader)->registers()[table_of("rsp")].as_u64() == 0x6ff8);
  CHECK((*reader)->registers()[table_of("rax")].as_u64() == 0);
  CHECK(!(*reader)->skip_to(1).has_value());
  CHECK(!(*reader)->skip_to(9).has_value());
}

TEST_CASE("Malicious: binary traces with bad declarations or events are refused with the offset and the reason") {
  const Golden golden = make_golden();
  struct Case {
    const char* name;
    std::function<void(std::vector<std::uint8_t>&)> damage;
    std::uint64_t offset;
    const char* reason;
  };
  const Golden& g = golden;
  const std::vector<Case> cases = {
      {"unknown register id in a diff", [&](auto& b) { b[g.rax_id] = 0xfe; }, g.rax_id, "unknown register id 254"},
      {"both counts 0xf", [&](auto& b) { b[g.module_diff] = 0xff; }, g.module_diff, "both counts 0xf"},
      {"both counts 0xf in a continuation", [&](auto& b) { b[g.continuation] = 0xff; }, g.continuation,
       "both counts 0xf"},
      {"a string past the end", [&](auto& b) { b[g.exit_length] = 0xff; }, g.exit_length + 1,
       "description of 255 characters runs past the end"},
      {"a diff past the end",
       [&](auto& b) {
         b.pop_back();
         set_u64(b, g.events_size_field, b.size() - g.events_size_field - 8);
       },
       g.expected.size() - 1, "diff runs past the end"},
      {"more events declared than there are",
       [&](auto& b) { set_u64(b, g.event_count_field, 9); }, g.expected.size(), "ends after 8 of its 9 events"},
      {"fewer events declared than there are",
       [&](auto& b) { set_u64(b, g.event_count_field, 7); }, g.expected.size() - 15, "bytes after the 7 events"},
      {"memory outside the declared regions", [&](auto& b) { b[g.push_address + 1] = 0x5f; }, g.push_address,
       "outside the declared regions"},
      {"an unknown compression", [&](auto& b) { b[g.header_compression] = 2; }, g.header_compression,
       "compression scheme 2"},
      {"another major version", [&](auto& b) { b[16 + 8] = '2'; }, 16, "format version '2.0.0'"},
      {"initial memory of the wrong size", [&](auto& b) { set_u64(b, g.memory_size_field, 0x2000); },
       g.memory_size_field, "initial memory of 8192 bytes; the regions declare 12288"},
      {"a register initialized twice", [&](auto& b) { b[g.registers_start + 8 + 4 + 2 + 8] = 0; },
       g.registers_start + 8 + 4 + 2 + 8, "register rax initialized twice"},
      {"an operation on an undeclared register", [&](auto& b) { b[g.first_operation + 2] = 0x30; },
       g.first_operation + 1, "names undeclared register"},
      {"an operation id that is a register id", [&](auto& b) { b[g.first_operation] = 3; }, g.first_operation,
       "already a register or operation id"},
      {"an unknown machine magic", [&](auto& b) { b[g.machine_start + 8] = 'y'; }, g.machine_start + 8,
       "architecture magic"},
      {"the reference's aarch64 magic, whose registers nobody defines",
       [&](auto& b) { std::memcpy(&b[g.machine_start + 8], "arm1", 4); }, g.machine_start + 8,
       "('arm1') is aarch64's: binary trace v1.0 defines no aarch64 register set"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.name);
    std::vector<std::uint8_t> bytes = golden.expected;
    c.damage(bytes);
    const Error error = read_error(bytes);
    CHECK_MESSAGE(error.message.find(c.reason) != std::string::npos, error.to_string());
    CHECK_MESSAGE(error.offset == std::optional<std::uint64_t>(c.offset), error.to_string());
  }
}

TEST_CASE("Malicious: every truncation and every single-byte change of a binary trace is refused or read, never a crash") {
  const Golden golden = make_golden();
  for (std::size_t length = 0; length < golden.expected.size(); length += (length < 3800 ? 1 : 97)) {
    std::vector<std::uint8_t> bytes(golden.expected.begin(), golden.expected.begin() + static_cast<std::ptrdiff_t>(length));
    auto reader = formats::BintraceReader::from_bytes(bytes, "cut.bt");
    CHECK_FALSE(reader.has_value());
  }
  // Flip each byte of everything but the initial memory (which any byte value is valid for).
  std::size_t refused = 0, read = 0;
  for (std::size_t at = 3640; at < golden.expected.size(); ++at) {
    if (at > golden.memory_size_field + 8 && at < golden.registers_start) continue;
    std::vector<std::uint8_t> bytes = golden.expected;
    bytes[at] ^= 0x5a;
    auto reader = formats::BintraceReader::from_bytes(bytes, "flip.bt");
    bool ok = reader.has_value();
    while (ok) {
      auto more = (*reader)->next([](const events::Event&) {});
      if (!more) ok = false;
      else if (!*more) break;
    }
    ++(ok ? read : refused);
  }
  CHECK(refused > 0);
  MESSAGE(refused << " single-byte changes refused, " << read << " read as another valid trace");
}

TEST_CASE("Bintrace: aarch64 is refused with the reason, and no file is left") {
  // The magic exists (the reference rvnbintrace's 'arm1'), the register set does not.
  CHECK(arch::aarch64_arch().format_ids.bintrace_magic == 0x316d7261);
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("tracecorn-bintrace-aarch64-" + std::to_string(::getpid()) + ".bt")).string();
  auto writer = formats::BintraceWriter::open(path, arch::aarch64_arch(), {});
  REQUIRE(!writer.has_value());
  CHECK(writer.error().code == ErrorCode::kUnsupported);
  CHECK_MESSAGE(writer.error().message.find("no aarch64 register set") != std::string::npos, writer.error().to_string());
  CHECK(!std::filesystem::exists(path));
  // The CLI: a clear error line and status, no file.
  const std::string command = std::string(TRACECORN_CLI) + " record --format bintrace --level full -o '" + path +
                              "' -- '" + TRACECORN_SAMPLES_DIR + "-aarch64/static/hello' > '" + path + ".out' 2>&1";
  const int status = std::system(command.c_str());
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 125);
  std::ifstream in(path + ".out");
  const std::string output{std::istreambuf_iterator<char>(in), {}};
  CHECK_MESSAGE(output.find("binary trace has no machine description for aarch64: binary trace v1.0 defines no "
                            "aarch64 register set") != std::string::npos,
                output);
  CHECK(!std::filesystem::exists(path));
  std::filesystem::remove(path + ".out");
}

TEST_CASE("Bintrace: an architecture the spec defines no machine for (arm) is refused by name, no file written") {
  const auto path = std::filesystem::temp_directory_path() / ("tracecorn-bintrace-arm-" + std::to_string(::getpid()));
  auto writer = formats::BintraceWriter::open(path.string(), arch::arm_arch(), {});
  REQUIRE_FALSE(writer.has_value());
  CHECK(writer.error().code == ErrorCode::kUnsupported);
  CHECK(writer.error().message.find("for arm") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(path));
}
