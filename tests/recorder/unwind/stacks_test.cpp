// Role: the unwinder's stacks against gdb. Each x86-64 sample (nested calls,
// -O2 -fomit-frame-pointer; static and dynamic; with SFrame, with CFI only,
// with the program's CFI in .debug_frame only, with frame pointers) runs
// natively under gdb (gdb_syscall_stacks.py: catch syscall + backtrace past
// main and entry) and emulated; at every syscall entry the emulated stack
// must equal gdb's, frame by frame, as (module, offset) pairs. Checked three
// ways: the unwinder in-process through GuestStacks (with the method of each
// frame), `tracecorn record --format text` (the recorder integration), and
// `tracecorn run --strace -k`. The i386 sample (built by samples/cross.cmake)
// is checked against gdb-multiarch on qemu-i386-static's gdb stub instead
// (gdb_int80_stacks.py: a breakpoint on every `int 0x80`).
#include <doctest/doctest.h>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <regex>
#include <sstream>

#include "recorder/core/guest_stacks.h"
#include "recorder/linux/linux_process.h"
#include "tests/recorder/unwind/unwind_test_support.h"

using namespace tracecorn;
using unwind::FrameSource;
using unwind::UnwindMethod;

namespace {

const std::string kUnwindSamples = TRACECORN_UNWIND_SAMPLES_DIR;
const std::string kGdbScript = std::string(TRACECORN_UNWIND_TEST_DIR) + "/gdb_syscall_stacks.py";
const std::string kGdbInt80Script = std::string(TRACECORN_UNWIND_TEST_DIR) + "/gdb_int80_stacks.py";

struct SyscallStack {
  std::uint64_t number = 0;
  std::vector<std::string> frames;  // "libc.so.6 f8350"
  std::vector<FrameSource> sources;
};

std::string frame_text(const std::string& module, std::uint64_t offset) {
  std::ostringstream out;
  out << (module.empty() ? "?" : std::filesystem::path(module).filename().string()) << " " << std::hex << offset;
  return out.str();
}

// The "syscall N" / "frame MODULE OFFSET" blocks the gdb scripts print.
std::vector<SyscallStack> parse_gdb_stacks(const std::string& output) {
  std::vector<SyscallStack> stacks;
  std::istringstream in(output);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("syscall ", 0) == 0) {
      stacks.push_back({std::stoull(line.substr(8)), {}, {}});
    } else if (line.rfind("frame ", 0) == 0 && !stacks.empty()) {
      stacks.back().frames.push_back(line.substr(6));
    }
  }
  return stacks;
}

std::vector<SyscallStack> gdb_stacks(const std::string& program) {
  const std::string output =
      unwind::test::run_tool("gdb -batch -nx -x '" + kGdbScript + "' --args '" + program + "' 2>/dev/null");
  std::vector<SyscallStack> stacks = parse_gdb_stacks(output);
  // No FDE covers ld.so's entry point (_start/_dl_start_user): gdb's heuristic
  // unwinder then walks on into the words above the initial stack pointer
  // (argc, argv[0], NULL), which lie in no module. Those are not frames.
  for (auto& stack : stacks)
    while (!stack.frames.empty() && stack.frames.back().rfind("? ", 0) == 0) stack.frames.pop_back();
  return stacks;
}

// gdb-multiarch's stacks at every `int 0x80` of the static i386 `program` run
// by qemu-i386-static -g (see gdb_int80_stacks.py), named as gdb_stacks names them.
std::vector<SyscallStack> gdb_int80_stacks(const std::string& program) {
  const std::string objdump = unwind::test::run_tool("i686-linux-gnu-objdump -d '" + program + "'");
  const std::string program_headers = unwind::test::run_tool("readelf -lW '" + program + "'");
  std::smatch load;
  REQUIRE_MESSAGE(std::regex_search(program_headers, load, std::regex("LOAD +0x[0-9a-f]+ (0x[0-9a-f]+)")),
                  "readelf -lW gave no LOAD segment for " << program);
  const std::uint64_t base = std::stoull(load[1], nullptr, 16) & ~std::uint64_t{0xfff};
  std::string breaks;
  const std::regex trap("\\n *([0-9a-f]+):\\s+cd 80 +\\s*int +\\$0x80");
  for (auto it = std::sregex_iterator(objdump.begin(), objdump.end(), trap); it != std::sregex_iterator(); ++it)
    breaks += " -ex 'break *0x" + (*it)[1].str() + "'";
  REQUIRE_MESSAGE(!breaks.empty(), "no int 0x80 in " << program << " (i686-linux-gnu-objdump missing?)");
  const std::string port = std::to_string(20000 + ::getpid() % 20000);
  const std::string output = unwind::test::run_tool(
      "(qemu-i386-static -g " + port + " '" + program + "' >/dev/null 2>&1 &); sleep 0.5; "
      "gdb-multiarch -nx -batch -ex 'set $base = " + std::to_string(base) + "' -ex 'file " + program +
      "' -ex 'target remote :" + port + "'" + breaks + " -x '" + kGdbInt80Script + "' 2>/dev/null");
  return parse_gdb_stacks(output);
}

// Modules by lowest start, as the gdb side names them.
struct ModuleMap {
  std::map<std::string, std::uint64_t> lowest;  // path -> lowest start
  std::vector<std::tuple<std::uint64_t, std::uint64_t, std::string>> ranges;
  void add(std::uint64_t start, std::uint64_t end, const std::string& path) {
    auto [it, inserted] = lowest.emplace(path, start);
    if (!inserted) it->second = std::min(it->second, start);
    ranges.emplace_back(start, end, path);
  }
  std::string describe(std::uint64_t pc) const {
    for (auto it = ranges.rbegin(); it != ranges.rend(); ++it) {
      const auto& [start, end, path] = *it;
      if (pc >= start && pc < end) return frame_text(path, pc - lowest.at(path));
    }
    return frame_text("", pc);
  }
};

// Runs `program` emulated and walks the stack at every syscall with each method.
class StackProbe final : public linux_layer::ProcessObserver {
 public:
  explicit StackProbe(std::vector<core::GuestStacks*> walkers) : walkers_(std::move(walkers)), stacks_(walkers_.size()) {}
  void on_syscall_enter(std::uint64_t pc, std::uint64_t number) noexcept override {
    for (std::size_t w = 0; w < walkers_.size(); ++w) {
      std::vector<unwind::StackFrame> frames(128);
      const auto result = walkers_[w]->walk(pc, frames);
      SyscallStack stack;
      stack.number = number;
      for (std::size_t i = 0; i < result.depth; ++i) {
        stack.frames.push_back(modules_.describe(frames[i].pc));
        stack.sources.push_back(frames[i].source);
      }
      stacks_[w].push_back(std::move(stack));
    }
  }
  void on_memory_written(std::uint64_t, std::span<const std::uint8_t>) noexcept override {}
  void on_mapping_changed(const events::MappingEffect& change) noexcept override {
    if (change.kind == events::MappingChangeKind::kUnmap)
      for (auto* walker : walkers_) walker->unmapped(change.start.value, change.length);
  }
  void on_syscall(std::uint64_t, std::uint64_t, arch::SyscallId, const std::uint64_t (&)[6],
                  std::int64_t) noexcept override {}
  void on_module_loaded(std::uint64_t start, std::uint64_t end, std::uint64_t bias,
                        std::string_view path) noexcept override {
    for (auto* walker : walkers_) walker->module_loaded(start, end, bias, path);
    modules_.add(start, end, std::string(path));
  }
  const std::vector<SyscallStack>& stacks(std::size_t walker) const { return stacks_[walker]; }

 private:
  std::vector<core::GuestStacks*> walkers_;
  std::vector<std::vector<SyscallStack>> stacks_;
  ModuleMap modules_;
};

const std::vector<UnwindMethod> kMethods = {UnwindMethod::kAuto, UnwindMethod::kCfi, UnwindMethod::kSFrame,
                                            UnwindMethod::kFramePointer};

std::vector<std::vector<SyscallStack>> emulated_stacks(const std::string& program) {
  linux_layer::ProcessConfig config;
  config.program = program;
  config.argv = {program};
  config.envp = {"LC_ALL=C"};
  config.diagnostics = nullptr;
  // The guest's stdout is /dev/null, as in the gdb run (stdio asks the
  // terminal only when it is one, which changes the syscalls).
  std::fflush(stdout);
  const int saved_stdout = ::dup(1);
  const int null = ::open("/dev/null", O_WRONLY);
  ::dup2(null, 1);
  auto process = linux_layer::LinuxProcess::create(config);
  std::vector<std::unique_ptr<core::GuestStacks>> owned;
  std::vector<core::GuestStacks*> walkers;
  REQUIRE(process.has_value());
  for (UnwindMethod method : kMethods) {
    auto stacks = core::GuestStacks::create((*process)->engine(), (*process)->arch(), method);
    REQUIRE(stacks.has_value());
    walkers.push_back(stacks->get());
    owned.push_back(std::move(*stacks));
  }
  StackProbe probe(walkers);
  (*process)->set_observer(&probe);
  const auto outcome = (*process)->run();
  (*process)->set_observer(nullptr);
  process->reset();  // closes the guest's copy of stdout before ours comes back
  ::dup2(saved_stdout, 1);
  ::close(saved_stdout);
  ::close(null);
  CHECK(outcome.kind == linux_layer::RunOutcome::Kind::kExited);
  std::vector<std::vector<SyscallStack>> result;
  for (std::size_t w = 0; w < kMethods.size(); ++w) result.push_back(probe.stacks(w));
  return result;
}

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
  std::size_t sframe_frames = 0, cfi_frames = 0, fp_frames = 0;
  for (const auto& stack : emulated[0]) {
    for (const auto source : stack.sources) {
      sframe_frames += source == FrameSource::kSFrame;
      cfi_frames += source == FrameSource::kCfi;
      fp_frames += source == FrameSource::kFramePointer;
    }
  }
  CHECK(cfi_frames > 0);
  CHECK(fp_frames == 0);
  if (expect_sframe)
    CHECK(sframe_frames > 0);
  else
    CHECK(sframe_frames == 0);
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

// i386 (static, -O2, .eh_frame): every syscall's stack, under auto and cfi,
// equals gdb-multiarch's on qemu-i386-static, frame by frame.
TEST_CASE("Stacks: i386 static binary, every syscall equals gdb-multiarch on qemu-i386-static") {
  const std::string program = kUnwindSamples + "/../guest-i386/static/nested_calls";
  INFO(program);
  REQUIRE_MESSAGE(::access(program.c_str(), X_OK) == 0, "build guest_samples_i386 (gcc-i686-linux-gnu)");
  const auto expected = gdb_int80_stacks(program);
  REQUIRE(expected.size() > 10);
  const auto emulated = emulated_stacks(program);
  for (std::size_t method = 0; method < 2; ++method) {  // auto, cfi
    CAPTURE(method);
    CHECK(align(expected, emulated[method]).size() == expected.size());
    CHECK(emulated[method].size() == expected.size());
    const std::size_t frames = compare_all(expected, emulated[method]);
    CHECK(frames > expected.size() * 3);
    MESSAGE("i386: " << expected.size() << " syscalls, " << frames << " frames equal gdb's");
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
  char directory[] = "/tmp/tracecorn-stacks-XXXXXX";
  REQUIRE(::mkdtemp(directory) != nullptr);
  const std::string trace = std::string(directory) + "/trace.txt";
  unwind::test::run_tool(std::string(TRACECORN_CLI) + " record --format text -o '" + trace + "' -- '" + program +
                 "' > /dev/null 2>&1");
  // "#N module START-END bias B PATH", "#N syscall PC NAME(...) = R", "    at 0xPC ..."
  std::ifstream in(trace);
  std::string line;
  ModuleMap modules;
  std::vector<SyscallStack> actual;
  while (std::getline(in, line)) {
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
  std::filesystem::remove_all(directory);
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
