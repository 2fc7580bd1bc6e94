// Role: the unwinder's stacks against gdb. Each x86-64 sample (nested calls,
// -O2 -fomit-frame-pointer; static and dynamic; with SFrame, with CFI only,
// with the program's CFI in .debug_frame only, with frame pointers) runs
// natively under gdb (gdb_syscall_stacks.py: catch syscall + backtrace past
// main and entry) and emulated; at every syscall entry the emulated stack
// must equal gdb's, frame by frame, as (module, offset) pairs. Checked three
// ways: the unwinder in-process through GuestStacks (with the method of each
// frame), `tracecorn record --format text` (the recorder integration), and
// `tracecorn run --strace -k`.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <sstream>

#include "recorder/core/guest_stacks.h"
#include "recorder/linux/linux_process.h"
#include "tests/recorder/unwind/stack_probe.h"
#include "tests/recorder/unwind/unwind_test_support.h"

using namespace tracecorn;
using unwind::FrameSource;
using unwind::UnwindMethod;
using unwind::test::emulated_stacks;
using unwind::test::ModuleMap;
using unwind::test::SyscallStack;

namespace {

const std::string kUnwindSamples = TRACECORN_UNWIND_SAMPLES_DIR;

std::vector<SyscallStack> gdb_stacks(const std::string& program) { return unwind::test::gdb_syscall_stacks(program); }

std::string join(const std::vector<std::string>& frames) {
  std::string text;
  for (const auto& frame : frames) text += "\n  " + frame;
  return text;
}

// Pairs the native and emulated syscalls: a longest common subsequence of
// (number, stack). The native run makes one syscall more, the mmap ld.so makes
// for the vDSO's link map (tracecorn gives no vDSO), so pairing by position
// would compare different calls; an emulated syscall that pairs with none has
// a stack that equals gdb's at no native syscall, and compare_all reports it.
std::vector<std::pair<std::size_t, std::size_t>> align(const std::vector<SyscallStack>& expected,
                                                       const std::vector<SyscallStack>& actual, bool by_stack = true) {
  auto same = [by_stack](const SyscallStack& a, const SyscallStack& b) {
    return a.number == b.number && (!by_stack || a.frames == b.frames);
  };
  const std::size_t n = expected.size(), m = actual.size();
  std::vector<std::vector<std::size_t>> length(n + 1, std::vector<std::size_t>(m + 1, 0));
  for (std::size_t i = n; i-- > 0;)
    for (std::size_t j = m; j-- > 0;)
      length[i][j] = same(expected[i], actual[j]) ? length[i + 1][j + 1] + 1
                                                  : std::max(length[i + 1][j], length[i][j + 1]);
  std::vector<std::pair<std::size_t, std::size_t>> pairs;
  for (std::size_t i = 0, j = 0; i < n && j < m;) {
    if (same(expected[i], actual[j])) {
      pairs.emplace_back(i++, j++);
    } else if (length[i + 1][j] >= length[i][j + 1]) {
      ++i;
    } else {
      ++j;
    }
  }
  return pairs;
}

// Whether an unpaired syscall is one the vDSO explains: ld.so's minimal
// malloc maps its first page while setting up the vDSO's link map natively
// (tracecorn gives no vDSO), so natively that mmap comes from the vDSO setup
// and the next allocation needs none, while emulated the first allocation
// comes later, from elsewhere. Only mmaps made by ld.so itself qualify.
bool explained_by_vdso(const SyscallStack& stack) {
  return stack.number == 9 &&
         std::all_of(stack.frames.begin(), stack.frames.end(),
                     [](const std::string& frame) { return frame.rfind("ld-linux-x86-64.so.2 ", 0) == 0; });
}

// Every emulated syscall's stack equals gdb's at the paired native syscall;
// the only unpaired syscalls are the vDSO's mmaps (at most two native, one
// emulated). Returns the number of frames compared.
std::size_t compare_all(const std::vector<SyscallStack>& expected, const std::vector<SyscallStack>& actual) {
  const auto pairs = align(expected, actual);
  std::size_t frames = 0, next = 0, native = 0, unpaired_actual = 0, unpaired_native = 0;
  auto unpaired_emulated = [&](std::size_t j) {
    ++unpaired_actual;
    CHECK_MESSAGE(explained_by_vdso(actual[j]), "syscall #" << j << " (number " << actual[j].number
                                                            << ") matches no native stack; ours:" << join(actual[j].frames));
  };
  auto unpaired_gdb = [&](std::size_t i) {
    ++unpaired_native;
    CHECK_MESSAGE(explained_by_vdso(expected[i]), "native syscall #" << i << " (number " << expected[i].number
                                                                     << ") unpaired; gdb:" << join(expected[i].frames));
  };
  for (const auto& [i, j] : pairs) {
    for (; next < j; ++next) unpaired_emulated(next);
    for (; native < i; ++native) unpaired_gdb(native);
    next = j + 1;
    native = i + 1;
    frames += expected[i].frames.size();
  }
  for (; next < actual.size(); ++next) unpaired_emulated(next);
  for (; native < expected.size(); ++native) unpaired_gdb(native);
  CHECK(unpaired_actual <= 1);
  CHECK(unpaired_native <= 2);
  return frames;
}

void check_against_gdb(const std::string& variant, bool expect_sframe) {
  const std::string program = kUnwindSamples + "/" + variant + "/nested_calls";
  INFO(program);
  const auto expected = gdb_stacks(program);
  REQUIRE(expected.size() > 10);
  const auto emulated = emulated_stacks(program);
  // auto and cfi: the whole stack, every syscall.
  const std::size_t frames = compare_all(expected, emulated[0]);
  MESSAGE(variant << ": " << expected.size() << " syscalls, " << frames << " frames equal gdb's (auto)");
  CHECK(frames > expected.size() * 3);
  compare_all(expected, emulated[1]);
  // Which method found each frame under auto: SFrame for the program's own
  // functions when it has .sframe, CFI everywhere else (libc has no SFrame).
  unwind::test::check_frame_sources(emulated[0], expect_sframe);
  // sframe only: a prefix of gdb's stack (it stops where SFrame does not cover a pc).
  // (Paired by the auto stacks, which equal gdb's.)
  const auto pairs = align(expected, emulated[0]);
  for (const auto& pair : pairs) {  // (no structured bindings: doctest's macros are lambdas)
    const std::size_t i = pair.first, j = pair.second;
    const auto& want = expected[i].frames;
    const auto& sframe = emulated[2][j].frames;
    CHECK(sframe.size() <= want.size());
    CHECK(std::equal(sframe.begin(), sframe.end(), want.begin()));
  }
}

// Frame pointers (-fno-omit-frame-pointer): at a syscall made by libc's write
// wrapper (which keeps no frame) called from the program, the frame-pointer
// walk skips the wrapper's caller (its return address is at the top of the
// stack, not in a frame record) and then follows the program's frame records:
// frames 1..4 equal gdb's frames 2..5.
TEST_CASE("Stacks: frame pointers follow the program's frame records as gdb does") {
  const std::string program = kUnwindSamples + "/fp/nested_calls";
  const auto expected = gdb_stacks(program);
  const auto emulated = emulated_stacks(program);
  std::size_t checked = 0;
  for (const auto& pair : align(expected, emulated[0])) {
    const std::size_t i = pair.first, j = pair.second;
    const auto& want = expected[i].frames;
    const auto& fp = emulated[3][j].frames;
    if (want.size() < 6 || want[1].rfind("nested_calls ", 0) != 0 || expected[i].number != 1) continue;
    REQUIRE(fp.size() >= 5);
    CHECK(fp[0] == want[0]);
    for (std::size_t k = 1; k < 5; ++k) CHECK(fp[k] == want[k + 1]);
    for (std::size_t k = 1; k < 5; ++k) CHECK(emulated[3][j].sources[k] == FrameSource::kFramePointer);
    ++checked;
  }
  CHECK(checked >= 3);
}

}  // namespace

TEST_CASE("Stacks: CFI-only static binary, every syscall equals gdb") { check_against_gdb("cfi-static", false); }
TEST_CASE("Stacks: CFI-only dynamic binary, every syscall equals gdb") { check_against_gdb("cfi-dynamic", false); }
TEST_CASE("Stacks: SFrame static binary, every syscall equals gdb") { check_against_gdb("sframe-static", true); }
TEST_CASE("Stacks: SFrame dynamic binary, every syscall equals gdb") { check_against_gdb("sframe-dynamic", true); }
TEST_CASE("Stacks: the program's CFI in .debug_frame only, every syscall equals gdb") {
  check_against_gdb("debug_frame", false);
}

TEST_CASE("Stacks: tracecorn record --format text carries gdb's stack at every syscall") {
  const std::string program = kUnwindSamples + "/sframe-dynamic/nested_calls";
  const auto expected = gdb_stacks(program);
  REQUIRE(expected.size() > 10);
  // "#N module START-END bias B PATH", "#N syscall PC NAME(...) = R", "    at 0xPC ..."
  const auto lines = unwind::test::text_trace_lines(TRACECORN_CLI, program);
  REQUIRE(!lines.empty());
  ModuleMap modules;
  std::vector<SyscallStack> actual;
  for (const std::string& line : lines) {
    const auto words = unwind::test::split_words(line);
    if (words.size() >= 6 && words[1] == "module") {
      const auto dash = words[2].find('-');
      modules.add(std::stoull(words[2].substr(0, dash), nullptr, 16), std::stoull(words[2].substr(dash + 1), nullptr, 16),
                  words[5]);
    } else if (words.size() >= 3 && words[1] == "syscall") {
      actual.push_back({});
    } else if (words.size() >= 2 && words[0] == "at" && !actual.empty()) {
      actual.back().frames.push_back(modules.describe(std::stoull(words[1], nullptr, 16)));
    }
  }
  for (std::size_t i = 0; i < actual.size() && i < expected.size(); ++i) actual[i].number = 0;
  // The text trace names syscalls; pair them by position in the in-process run's order instead.
  const auto emulated = emulated_stacks(program)[0];
  REQUIRE(actual.size() == emulated.size());
  for (std::size_t i = 0; i < actual.size(); ++i) actual[i].number = emulated[i].number;
  const std::size_t frames = compare_all(expected, actual);
  CHECK(frames > expected.size() * 3);
}

TEST_CASE("Stacks: tracecorn run --strace -k prints gdb's frames, symbolized, under each syscall") {
  const std::string program = kUnwindSamples + "/cfi-dynamic/nested_calls";
  const auto expected = gdb_stacks(program);
  REQUIRE(expected.size() > 10);
  const std::string output =
      unwind::test::run_tool(std::string(TRACECORN_CLI) + " run --strace -k -- '" + program + "' 2>&1 >/dev/null");
  std::istringstream in(output);
  std::string line;
  std::vector<std::vector<std::string>> stacks;  // the " > " lines under each syscall line
  while (std::getline(in, line)) {
    if (line.rfind(" > ", 0) == 0) {
      if (!stacks.empty()) stacks.back().push_back(line);
    } else if (line.find(") = ") != std::string::npos) {
      stacks.emplace_back();
    }
  }
  const auto emulated = emulated_stacks(program)[0];
  REQUIRE(stacks.size() == emulated.size());
  for (std::size_t i = 0; i < emulated.size(); ++i) CHECK(stacks[i].size() == emulated[i].frames.size());
  // (emulated[0] equals gdb's stacks: checked by "Stacks: CFI-only dynamic binary".)
  // The first write comes from say <- level3 <- level2 <- level1 <- main, named
  // from the program's symbol table, under libc's write.
  auto first_write = std::find_if(emulated.begin(), emulated.end(), [](const SyscallStack& s) { return s.number == 1; });
  REQUIRE(first_write != emulated.end());
  const auto& lines = stacks[static_cast<std::size_t>(first_write - emulated.begin())];
  REQUIRE(lines.size() >= 6);
  CHECK(lines[0].find("libc.so.6(write+0x") != std::string::npos);
  // (gcc may clone a function with a constant argument: level2.constprop.0.)
  const char* callers[] = {"(say+0x", "(level3", "(level2", "(level1", "(main+0x"};
  for (std::size_t i = 0; i < 5; ++i) {
    INFO(lines[i + 1]);
    CHECK(lines[i + 1].find("nested_calls" + std::string(callers[i])) != std::string::npos);
  }
}

TEST_CASE("Stacks: under --rootfs, modules are read from the tree (symlinks resolved inside it)") {
  // A tree with the program, libc and ld.so, reached through an absolute symlink
  // (/lib64/ld-linux-x86-64.so.2 -> /lib/x86_64-linux-gnu/...), as Debian lays it out.
  char directory[] = "/tmp/tracecorn-rootfs-XXXXXX";
  REQUIRE(::mkdtemp(directory) != nullptr);
  const std::filesystem::path root = directory;
  std::filesystem::create_directories(root / "lib/x86_64-linux-gnu");
  std::filesystem::create_directories(root / "lib64");
  std::filesystem::create_directories(root / "bin");
  std::filesystem::copy_file("/lib/x86_64-linux-gnu/libc.so.6", root / "lib/x86_64-linux-gnu/libc.so.6");
  std::filesystem::copy_file("/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2",
                             root / "lib/x86_64-linux-gnu/ld-linux-x86-64.so.2");
  std::filesystem::create_symlink("/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2", root / "lib64/ld-linux-x86-64.so.2");
  std::filesystem::copy_file(kUnwindSamples + "/cfi-dynamic/nested_calls", root / "bin/nested_calls");
  // The program opens its argv[0], a host path: the same path inside the tree.
  const std::filesystem::path again = root / root.relative_path() / "bin";
  std::filesystem::create_directories(again);
  std::filesystem::copy_file(kUnwindSamples + "/cfi-dynamic/nested_calls", again / "nested_calls");
  auto strace_k = [&](const std::string& rootfs, const std::string& program) {
    const std::string output = unwind::test::run_tool(std::string(TRACECORN_CLI) + " run " + rootfs +
                                                      " --strace -k -- '" + program + "' 2>&1 >/dev/null");
    // The frames from the program's first write on (before it, ld.so searches
    // the tree for libraries with syscalls of its own: no ld.so.cache there).
    std::vector<std::string> frames;
    std::istringstream in(output);
    std::string line;
    bool started = false;
    while (std::getline(in, line)) {
      started = started || line.rfind("write(", 0) == 0;
      if (started && line.rfind(" > ", 0) == 0) frames.push_back(line.substr(0, line.find(" [")));  // without the address
    }
    return frames;
  };
  const auto in_tree = strace_k("--rootfs '" + root.string() + "'", (root / "bin/nested_calls").string());
  const auto on_host = strace_k("", kUnwindSamples + "/cfi-dynamic/nested_calls");
  std::filesystem::remove_all(root);
  REQUIRE(on_host.size() > 50);
  // The same frames, named the same (the program's own path aside).
  REQUIRE(in_tree.size() == on_host.size());
  std::size_t libc_named = 0;
  for (std::size_t i = 0; i < on_host.size(); ++i) {
    if (on_host[i].find("libc.so.6(") == std::string::npos) continue;
    CHECK(in_tree[i] == on_host[i]);
    libc_named += on_host[i].find("libc.so.6(+") == std::string::npos;
  }
  CHECK(libc_named > 20);
}
