// Role: the unwinder's stacks at syscalls made inside signal handlers against
// gdb's backtrace, natively on x86-64: samples/guest/signal_stacks (a handler
// entered from raise() under main -> outer -> inner, and one entered at a
// faulting store in a loop) runs under gdb (gdb_syscall_stacks.py: catch
// syscall; gdb's frame of the signal trampoline is `<signal handler called>`)
// and emulated; every syscall made inside a handler (a stack with a signal
// trampoline's frame) must have gdb's stack, frame by frame, the trampoline's
// frame included (libc's __restore_rt, reached from the handler's return
// address). Checked through the unwinder in-process (GuestStacks) and through
// `tracecorn run --strace -k`, which prints gdb's `<signal handler called>`
// line there and names the interrupted frame by its own pc, and through
// `tracecorn record --format text`, whose namer finds libc's restorer.
// The aarch64 build is compared with gdb-multiarch on qemu-aarch64-static in
// cross_stacks_test.cpp.
// Who runs it: unit_tests, on the doctest thread; about a second a variant.
#include <doctest/doctest.h>

#include <sstream>
#include <string>
#include <vector>

#include "tests/recorder/unwind/stack_probe.h"
#include "tests/recorder/unwind/unwind_test_support.h"

using namespace tracecorn;
using unwind::test::SyscallStack;

namespace {

const std::string kTrampolineFrame = "<signal handler called> ";

// The stacks that go through a signal frame.
std::vector<SyscallStack> handler_stacks(const std::vector<SyscallStack>& stacks) {
  std::vector<SyscallStack> kept;
  for (const auto& stack : stacks)
    for (const auto& frame : stack.frames)
      if (frame.rfind(kTrampolineFrame, 0) == 0) {
        kept.push_back(stack);
        break;
      }
  return kept;
}

std::string join(const std::vector<std::string>& frames) {
  std::string text;
  for (const auto& frame : frames) text += "\n  " + frame;
  return text;
}

void check_against_gdb(const std::string& variant) {
  const std::string program = std::string(TRACECORN_SAMPLES_DIR) + "/" + variant + "/signal_stacks";
  INFO(program);
  const auto expected = handler_stacks(unwind::test::gdb_syscall_stacks(program));
  // A write in each handler, the fault handler's mprotect, and each handler's
  // rt_sigreturn (made by the trampoline: its own frame is the trampoline's).
  REQUIRE(expected.size() >= 3);
  const auto emulated = handler_stacks(unwind::test::emulated_stacks(program)[0]);
  REQUIRE(emulated.size() == expected.size());
  std::size_t frames = 0;
  for (std::size_t i = 0; i < expected.size(); ++i) {
    CAPTURE(i);
    CHECK(emulated[i].number == expected[i].number);
    CHECK_MESSAGE(emulated[i].frames == expected[i].frames,
                  "ours:" << join(emulated[i].frames) << "\ngdb:" << join(expected[i].frames));
    frames += expected[i].frames.size();
  }
  MESSAGE(variant << ": " << expected.size() << " syscalls inside handlers, " << frames << " frames equal gdb's");
}

}  // namespace

TEST_CASE("Stacks: syscalls inside signal handlers equal gdb's backtrace through <signal handler called> (dynamic)") {
  check_against_gdb("dynamic");
}

TEST_CASE("Stacks: syscalls inside signal handlers equal gdb's backtrace through <signal handler called> (static)") {
  check_against_gdb("static");
}

TEST_CASE("Stacks: tracecorn run --strace -k shows <signal handler called> and the interrupted frames") {
  const std::string program = std::string(TRACECORN_SAMPLES_DIR) + "/dynamic/signal_stacks";
  const std::string output =
      unwind::test::run_tool(std::string(TRACECORN_CLI) + " run --strace -k -- '" + program + "' 2>&1 >/dev/null");
  std::vector<std::vector<std::string>> stacks;  // the " > " lines under each write
  std::istringstream in(output);
  std::string line;
  bool in_write = false;
  while (std::getline(in, line)) {
    if (line.rfind(" > ", 0) == 0) {
      if (in_write) stacks.back().push_back(line);
    } else if (line.find(") = ") != std::string::npos) {
      in_write = line.rfind("write(", 0) == 0;
      if (in_write) stacks.emplace_back();
    }
  }
  // The handlers' writes: write <- handler <- trampoline <- the interrupted code.
  std::vector<std::vector<std::string>> in_handlers;
  for (const auto& stack : stacks)
    if (stack.size() > 3 && stack[2].rfind(" > <signal handler called> [0x", 0) == 0) in_handlers.push_back(stack);
  REQUIRE_MESSAGE(in_handlers.size() == 2, output);
  const auto& raised = in_handlers[0];
  CHECK(raised[1].find("signal_stacks(on_usr1+0x") != std::string::npos);
  // The interrupted frame: the tgkill in __pthread_kill_implementation (a
  // local symbol libc does not export: named by its offset), raise's callee.
  CHECK(raised[3].find("libc.so.6(+0x") != std::string::npos);
  CHECK(raised[4].find("libc.so.6(raise+0x") != std::string::npos);
  bool inner_named = false;
  for (const auto& frame : raised) inner_named |= frame.find("signal_stacks(inner+0x") != std::string::npos;
  CHECK(inner_named);
  const auto& fault = in_handlers[1];
  CHECK(fault[1].find("signal_stacks(on_segv+0x") != std::string::npos);
  // The faulting store, named by its own pc (gcc may clone fill: fill.constprop.0).
  CHECK(fault[3].find("signal_stacks(fill") != std::string::npos);
  CHECK(fault[4].find("signal_stacks(main+0x") != std::string::npos);
}

TEST_CASE("Stacks: tracecorn record --format text names the signal trampoline's frame <signal handler called>") {
  const std::string program = std::string(TRACECORN_SAMPLES_DIR) + "/dynamic/signal_stacks";
  const auto lines = unwind::test::text_trace_lines(TRACECORN_CLI, program);
  REQUIRE(!lines.empty());
  std::vector<std::string> frames;  // the "    at" lines of the current syscall
  std::size_t handler_writes = 0;
  auto finish = [&] {
    // write <- handler <- trampoline <- the interrupted code
    if (frames.size() > 3 && frames[2].find(" <signal handler called>") != std::string::npos &&
        frames[1].find(" on_") != std::string::npos)
      ++handler_writes;
    frames.clear();
  };
  for (const std::string& line : lines) {
    if (line.rfind("    at 0x", 0) == 0) {
      frames.push_back(line);
    } else if (line.rfind("#", 0) == 0) {
      finish();
    }
  }
  finish();
  CHECK(handler_writes >= 2);
}
