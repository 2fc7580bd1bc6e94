// Role: unit tests of the architectures' signal frames (arch/signal_frame.h)
// on a bare Unicorn engine: every architecture's frame goes through
// enter_signal_handler and back through sigreturn (old and rt) with the
// interrupted stack pointer, pc and blocked mask restored; and sigreturn from
// a frame the guest made unreadable, misaligned or garbage never crashes.
// Every signal trampoline's saved-register slots (the unwinder's view,
// ArchInfo::signal_abi.trampolines) hold what the frame builder saved there,
// and x86-64's are where the host's <sys/ucontext.h> says.
// The byte layouts themselves are checked against qemu-user and the cross
// compilers' headers by the signal_* samples (tests/behaviour) and, for mips,
// by arch_test.cpp.
#include <doctest/doctest.h>

#include <sys/ucontext.h>
#include <unicorn/unicorn.h>

#include <cstddef>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "arch/arch.h"

namespace tracecorn::arch {
namespace {

constexpr std::uint64_t kStackBase = 0x10000, kStackSize = 0x20000;

std::uint64_t read_sp(uc_engine* engine, const ArchInfo& arch) {
  std::uint64_t value = 0;
  uc_reg_read(engine, arch.sp_reg, &value);
  return arch.elf_64bit ? value : value & 0xffffffff;
}

void write_sp(uc_engine* engine, const ArchInfo& arch, std::uint64_t value) { uc_reg_write(engine, arch.sp_reg, &value); }

// What the handler's return leaves on the stack before sigreturn runs: x86's
// `ret` pops the return address, i386's old restorer also pops the signal number.
std::uint64_t popped_by_return(const ArchInfo& arch, bool rt) {
  if (arch.name == "x86_64") return 8;
  if (arch.name == "i386") return rt ? 4 : 8;
  return 0;
}

SignalFrameRequest make_request(const ArchInfo& arch, bool rt, std::uint64_t stack_top) {
  SignalFrameRequest request;
  request.guest_signal = 10;
  request.handler = 0x400100;
  request.guest_flags = rt ? arch.signal_abi.sa_siginfo : 0;
  request.return_address = 0x7000;
  request.saved_mask = 0x0000000100000202ull;
  request.stack_top = stack_top;
  request.saved_altstack = {0, 2, 0};
  request.resume_pc = 0x400200;
  return request;
}

// Runs `body` with a fresh engine and GuestCpu of `arch`, for old and rt frames.
template <typename Body>
void for_each_frame_kind(const ArchInfo& arch, Body&& body) {
  for (const bool rt : {false, true}) {
    CAPTURE(arch.name);
    CAPTURE(rt);
    uc_engine* engine = nullptr;
    REQUIRE(uc_open(arch.engine->unicorn_arch, arch.engine->unicorn_mode, &engine) == UC_ERR_OK);
    {
      auto cpu = arch.engine->make_guest_cpu(engine);
      REQUIRE(cpu.has_value());
      body(engine, **cpu, rt);
    }
    uc_close(engine);
  }
}

}  // namespace

TEST_CASE("Arch: every architecture's signal frame goes to the handler and back through sigreturn") {
  for (const ArchInfo* arch : all_archs()) {
    for_each_frame_kind(*arch, [&](uc_engine* engine, GuestCpu& guest, bool rt) {
      REQUIRE(guest.has_signal_frames());
      REQUIRE(uc_mem_map(engine, kStackBase, kStackSize, UC_PROT_READ | UC_PROT_WRITE) == UC_ERR_OK);
      const std::uint64_t interrupted_sp = kStackBase + kStackSize - 0x100;
      write_sp(engine, *arch, interrupted_sp);
      const SignalFrameRequest request = make_request(*arch, rt, interrupted_sp);
      const SignalFrame frame = guest.build_signal_frame(request);
      REQUIRE_FALSE(frame.bytes.empty());
      CHECK(frame.address + frame.bytes.size() <= interrupted_sp);
      CHECK(frame.address >= kStackBase);
      REQUIRE(uc_mem_write(engine, frame.address, frame.bytes.data(), frame.bytes.size()) == UC_ERR_OK);
      guest.enter_signal_handler(request, frame);
      CHECK(read_sp(engine, *arch) == frame.address);
      write_sp(engine, *arch, frame.address + popped_by_return(*arch, rt));
      const std::optional<SignalReturn> back = guest.return_from_signal(rt);
      REQUIRE(back.has_value());
      CHECK(back->pc == request.resume_pc);
      CHECK(back->saved_mask == request.saved_mask);
      CHECK(read_sp(engine, *arch) == interrupted_sp);
    });
  }
}

// Where the handler's return leaves sp when the trampoline starts: x86's `ret`
// pops the return address; the others return through lr/ra.
std::uint64_t trampoline_sp_offset(const ArchInfo& arch) {
  if (arch.name == "x86_64") return 8;
  if (arch.name == "i386") return 4;
  return 0;
}

TEST_CASE("Arch: every signal trampoline's saved registers are where the frame builder put them") {
  std::size_t checked = 0;
  for (const ArchInfo* arch : all_archs()) {
    REQUIRE_MESSAGE(!arch->signal_abi.trampolines.empty(), arch->name);
    for_each_frame_kind(*arch, [&](uc_engine* engine, GuestCpu& guest, bool rt) {
      REQUIRE(uc_mem_map(engine, kStackBase, kStackSize, UC_PROT_READ | UC_PROT_WRITE) == UC_ERR_OK);
      // Every register a slot names a distinct value (sp last: the frame goes
      // below it), read back as the engine keeps it.
      std::map<int, std::uint64_t> values;
      std::uint64_t next = 0x1111;
      for (const SignalTrampoline& trampoline : arch->signal_abi.trampolines) {
        for (const SavedRegisterSlot& slot : trampoline.saved) {
          if (slot.uc_id == arch->pc_reg || slot.uc_id == arch->sp_reg || values.count(slot.uc_id)) continue;
          uc_reg_write(engine, slot.uc_id, &next);
          values[slot.uc_id] = 0;
          next += 0x10101;
        }
      }
      const std::uint64_t interrupted_sp = kStackBase + kStackSize - 0x100;
      write_sp(engine, *arch, interrupted_sp);
      values[arch->sp_reg] = 0;
      for (auto& [id, value] : values) REQUIRE(uc_reg_read(engine, id, &value) == UC_ERR_OK);
      const SignalFrameRequest request = make_request(*arch, rt, interrupted_sp);
      const SignalFrame frame = guest.build_signal_frame(request);
      const FrameReader reader(frame.bytes, arch->little_endian);
      const std::size_t word = arch->elf_64bit ? 8 : 4;
      const std::uint64_t mask = word == 8 ? ~std::uint64_t{0} : 0xffffffff;
      for (const SignalTrampoline& trampoline : arch->signal_abi.trampolines) {
        if (trampoline.rt != rt) continue;
        REQUIRE(trampoline.saved.size() >= 10);  // i386: 8 general registers, eip, eflags
        bool pc_seen = false, sp_seen = false;
        for (const SavedRegisterSlot& slot : trampoline.saved) {
          CAPTURE(slot.uc_id);
          const auto at =
              static_cast<std::size_t>(trampoline_sp_offset(*arch) + static_cast<std::uint64_t>(slot.offset));
          REQUIRE(at + word <= frame.bytes.size());
          const std::uint64_t saved = reader.get(at, word);
          if (slot.uc_id == arch->pc_reg) {
            CHECK(saved == request.resume_pc);
            pc_seen = true;
          } else {
            REQUIRE(values.count(slot.uc_id) == 1);
            CHECK(saved == (values[slot.uc_id] & mask));
            sp_seen |= slot.uc_id == arch->sp_reg;
          }
          ++checked;
        }
        CHECK(pc_seen);
        CHECK(sp_seen);
      }
    });
  }
  CHECK(checked > 300);
}

TEST_CASE("Arch: x86-64's trampoline finds the registers where the host's <sys/ucontext.h> puts them") {
  // The trampoline runs with rsp at the ucontext (the handler's ret popped pretcode).
  const auto& trampolines = x86_64_arch().signal_abi.trampolines;
  REQUIRE(trampolines.size() == 1);
  const std::map<int, int> greg = {{UC_X86_REG_RIP, REG_RIP}, {UC_X86_REG_RSP, REG_RSP}, {UC_X86_REG_RBP, REG_RBP},
                                   {UC_X86_REG_RAX, REG_RAX}, {UC_X86_REG_R15, REG_R15}, {UC_X86_REG_EFLAGS, REG_EFL}};
  std::size_t checked = 0;
  for (const SavedRegisterSlot& slot : trampolines[0].saved) {
    const auto found = greg.find(slot.uc_id);
    if (found == greg.end()) continue;
    CAPTURE(slot.uc_id);
    const std::size_t expected = offsetof(ucontext_t, uc_mcontext.gregs) + 8 * static_cast<std::size_t>(found->second);
    CHECK(static_cast<std::size_t>(slot.offset) == expected);
    ++checked;
  }
  CHECK(checked == greg.size());
}

TEST_CASE("Malicious: sigreturn from an unreadable, misaligned or garbage frame never crashes") {
  for (const ArchInfo* arch : all_archs()) {
    for_each_frame_kind(*arch, [&](uc_engine* engine, GuestCpu& guest, bool rt) {
      // Nothing mapped at sp: Linux kills the process (nullopt here), and no register changes.
      write_sp(engine, *arch, 0x5000);
      CHECK_FALSE(guest.return_from_signal(rt).has_value());
      CHECK(read_sp(engine, *arch) == 0x5000);
      // The frame runs off the end of the mapping.
      REQUIRE(uc_mem_map(engine, kStackBase, 0x1000, UC_PROT_READ | UC_PROT_WRITE) == UC_ERR_OK);
      write_sp(engine, *arch, kStackBase + 0xff0);
      CHECK_FALSE(guest.return_from_signal(rt).has_value());
      // Garbage bytes, at an aligned and a misaligned sp: whatever comes back, nothing crashes.
      REQUIRE(uc_mem_map(engine, kStackBase + 0x1000, 0x4000, UC_PROT_READ | UC_PROT_WRITE) == UC_ERR_OK);
      std::vector<std::uint8_t> garbage(0x5000);
      for (std::size_t i = 0; i < garbage.size(); ++i) garbage[i] = static_cast<std::uint8_t>(i * 131 + 7);
      REQUIRE(uc_mem_write(engine, kStackBase, garbage.data(), garbage.size()) == UC_ERR_OK);
      for (const std::uint64_t sp : {kStackBase + 0x10, kStackBase + 0x13}) {
        write_sp(engine, *arch, sp);
        (void)guest.return_from_signal(rt);
      }
    });
  }
}

}  // namespace tracecorn::arch
