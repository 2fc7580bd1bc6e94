// Role: unit tests of the architectures' signal frames (arch/signal_frame.h)
// on a bare Unicorn engine: every architecture's frame goes through
// enter_signal_handler and back through sigreturn (old and rt) with the
// interrupted stack pointer, pc and blocked mask restored; and sigreturn from
// a frame the guest made unreadable, misaligned or garbage never crashes.
// The byte layouts themselves are checked against qemu-user and the cross
// compilers' headers by the signal_* samples (tests/behaviour) and, for mips,
// by arch_test.cpp.
#include <doctest/doctest.h>

#include <unicorn/unicorn.h>

#include <cstring>
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
    REQUIRE(uc_open(arch.unicorn_arch, arch.unicorn_mode, &engine) == UC_ERR_OK);
    {
      auto cpu = arch.make_guest_cpu(engine);
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
