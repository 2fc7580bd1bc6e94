// Role: the unwinder's stacks on other guest architectures against gdb-multiarch.
// nested_calls, cross-built static for aarch64 with SFrame (-Wa,--gsframe: SFrame
// v1 from Debian's gas), with .eh_frame CFI only, and with the program's CFI in
// .debug_frame only (samples/unwind_variants_cross.cmake), runs under
// qemu-aarch64-static -g with gdb-multiarch breaking on every `svc #0x0`
// objdump finds (gdb_trap_stacks.py: qemu-user's stub has no `catch syscall`)
// and printing its backtrace; the i386 build of the guest sample (.eh_frame,
// samples/cross.cmake) the same way under qemu-i386-static, on `int $0x80`; the
// arm builds (static Thumb-2 and -marm: glibc unwinds only through .ARM.exidx,
// the program through its -g .debug_frame) under qemu-arm-static on `svc 0`,
// where glibc's EXIDX_CANTUNWIND ranges (code without unwind tables) are
// crossed by prologue analysis, by gdb and tracecorn alike; the riscv64 build under
// qemu-riscv64-static on `ecall` (number in a7) and the mips/mipsel builds
// under qemu-mips(el)-static on `syscall` (number in v0), where Debian's glibc
// has functions without CFI that gdb and tracecorn (auto) both get through by
// prologue analysis, while the CFI-only walk must equal gdb's stacks cut
// there. gdb's stacks are what `backtrace` prints (gdb_trap_stacks.py). Otherwise, at
// every syscall, tracecorn's stack must equal gdb's frame by frame: the pcs of the in-process walks (auto and cfi; the
// sframe-only walk a prefix, and under auto the program's frames found by
// SFrame exactly when it has .sframe), and `tracecorn run --strace -k`'s
// lines: the same pcs, each named by a symbol at the address gdb's symbol has
// (readelf -s gives the aliases: gdb says getrlimit64 where we say __getrlimit).
// And samples/guest/signal_stacks on aarch64, riscv64, mips and mipsel: every
// syscall's stack, those made inside signal handlers included, equals gdb's
// backtrace through its `<signal handler called>` frame (check_signal_stacks).
// Who runs it: unit_tests, on the doctest thread; a few seconds a variant.
// Invariants: static binaries only (qemu-user loads a PIE elsewhere than Linux
// does); without gdb-multiarch or qemu-aarch64-static the cases fail saying
// what to install (scripts/setup.sh installs both).
#include <doctest/doctest.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <utility>

#include "tests/recorder/unwind/stack_probe.h"
#include "tests/recorder/unwind/unwind_test_support.h"
#include "tests/support/architectures.h"

using namespace tracecorn;
using unwind::test::SyscallStack;

namespace {

// How one architecture traps and which tools see it.
struct CrossArch {
  std::string name;         // "aarch64": samples/unwind-<name>/
  std::string qemu;         // qemu-user with a gdb stub
  std::string objdump;      // disassembles the trap instruction
  std::string trap_regex;   // objdump's text for the trap (Python regex)
  unsigned trap_length;     // bytes: frame 0 is the address after the trap
  std::string syscall_register;  // gdb's name of the register holding the syscall number
  std::string binutils_package;  // the Debian package with `objdump`
};

// The name, qemu and binutils of `row` of tests/support/architectures.h, with its trap.
CrossArch cross_arch(const test_support::GuestArchitecture& row, std::string trap_regex, unsigned trap_length,
                     std::string syscall_register) {
  return {std::string(row.name), "/usr/bin/qemu-" + std::string(row.name) + "-static", row.cross_tool("objdump"),
          std::move(trap_regex), trap_length, std::move(syscall_register), "binutils-" + std::string(row.gnu_triplet)};
}

const CrossArch kAarch64 = cross_arch(test_support::guest_architecture("aarch64"), "svc\\s+#0x0", 4, "$x8");
const CrossArch kI386 = cross_arch(test_support::guest_architecture("i386"), "int\\s+\\$0x80", 2, "$eax");
// arm: objdump prints `svc 0` in both states; the trap length (2 in
// Thumb, 4 in ARM) is read from CPSR at each stop (trap length 0).
const CrossArch kArm = cross_arch(test_support::guest_architecture("arm"), "svc\\s+(?:0|0x0+)", 0, "$r7");
const CrossArch kRiscv64 = cross_arch(test_support::guest_architecture("riscv64"), "ecall", 4, "$a7");
// mips o32: `syscall` is 4 bytes; objdump prints it bare. gdb names the number register v0.
const CrossArch kMips = cross_arch(test_support::guest_architecture("mips"), "\\bsyscall\\b", 4, "$v0");
const CrossArch kMipsel = cross_arch(test_support::guest_architecture("mipsel"), "\\bsyscall\\b", 4, "$v0");
const std::string kGdbMultiarch = "/usr/bin/gdb-multiarch";
const std::string kTrampolineFrame = "<signal handler called>";  // gdb's name of a signal trampoline's frame

struct NamedFrame {
  std::uint64_t pc = 0;
  std::uint64_t start = 0;  // the named symbol's address; 0 when unnamed
  std::string name;         // "" when unnamed
};

struct NamedStack {
  std::uint64_t number = 0;  // gdb's side only
  std::vector<NamedFrame> frames;
};

std::string missing_tools(const CrossArch& arch) {
  std::string missing;
  if (::access(kGdbMultiarch.c_str(), X_OK) != 0) missing += kGdbMultiarch + " is missing (apt-get install gdb-multiarch). ";
  if (::access(arch.qemu.c_str(), X_OK) != 0) missing += arch.qemu + " is missing (apt-get install qemu-user-static). ";
  if (unwind::test::run_tool("command -v " + arch.objdump).empty())
    missing += arch.objdump + " is missing (apt-get install " + arch.binutils_package + "). ";
  return missing;
}

// gdb's stack at every trap of `program` run under qemu's stub (a Unix socket
// of this process's own, so parallel runs do not meet); `qemu_cpu`, when set,
// is the CPU qemu emulates (QEMU_CPU).
std::vector<NamedStack> gdb_trap_stacks(const CrossArch& arch, const std::string& program, const std::string& tag,
                                        const std::string& qemu_cpu = "") {
  const std::string socket =
      (std::filesystem::temp_directory_path() / ("tracecorn-gdb-" + std::to_string(::getpid()) + "-" + tag)).string();
  const std::string script = std::string(TRACECORN_UNWIND_TEST_DIR) + "/gdb_trap_stacks.py";
  const std::string command =
      "rm -f '" + socket + "'; " + (qemu_cpu.empty() ? "" : "QEMU_CPU=" + qemu_cpu + " ") + "'" + arch.qemu +
      "' -g '" + socket + "' '" + program + "' >/dev/null 2>&1 & q=$!; " +
      "i=0; while [ ! -S '" + socket + "' ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done; " +
      "TRACECORN_GDB_TARGET='" + socket + "' TRACECORN_OBJDUMP='" + arch.objdump + "' TRACECORN_TRAP_REGEX='" +
      arch.trap_regex + "' TRACECORN_TRAP_LENGTH=" + std::to_string(arch.trap_length) + " TRACECORN_SYSCALL_REGISTER='" +
      arch.syscall_register + "' timeout 60 " +
      kGdbMultiarch + " -batch -nx -x '" + script + "' '" + program + "' 2>&1; kill $q 2>/dev/null; wait $q; rm -f '" +
      socket + "'";
  const std::string output = unwind::test::run_tool(command);
  std::vector<NamedStack> stacks;
  std::istringstream in(output);
  std::string line;
  while (std::getline(in, line)) {
    const auto words = unwind::test::split_words(line);
    if (words.size() == 2 && words[0] == "syscall") {
      stacks.push_back({std::stoull(words[1]), {}});
    } else if (words.size() == 4 && words[0] == "frame" && !stacks.empty()) {
      NamedFrame frame;
      frame.pc = std::stoull(words[1], nullptr, 16);
      if (words[2] != "?") {
        frame.start = std::stoull(words[2], nullptr, 16);
        frame.name = words[3];
      }
      stacks.back().frames.push_back(frame);
    } else if (words.size() == 2 && words[0] == "sigtramp" && !stacks.empty()) {
      stacks.back().frames.push_back({std::stoull(words[1], nullptr, 16), 0, kTrampolineFrame});
    }
  }
  if (stacks.empty()) MESSAGE("gdb's output: " << output);
  return stacks;
}

// `tracecorn run --strace -k`'s stacks: " > MODULE(SYMBOL+0xOFF) [0xPC]" under each syscall line.
std::vector<NamedStack> strace_k_stacks(const std::string& program, const std::string& method) {
  const std::string output = unwind::test::run_tool(std::string(TRACECORN_CLI) + " run --stacks " + method +
                                                    " --strace -k -- '" + program + "' 2>&1 >/dev/null");
  static const std::regex frame_line(R"(^ > .*\(([^()+]*)(?:\+0x([0-9a-f]+))?\) \[0x([0-9a-f]+)\]$)");
  std::vector<NamedStack> stacks;
  std::istringstream in(output);
  std::string line;
  while (std::getline(in, line)) {
    std::smatch match;
    if (line.rfind(" > ", 0) == 0) {
      REQUIRE_MESSAGE(std::regex_match(line, match, frame_line), line);
      REQUIRE(!stacks.empty());
      NamedFrame frame;
      frame.pc = std::stoull(match[3], nullptr, 16);
      if (match[1].length() > 0) {
        frame.name = match[1];
        frame.start = frame.pc - (match[2].matched ? std::stoull(match[2], nullptr, 16) : 0);
      }
      stacks.back().frames.push_back(frame);
    } else if (line.find(") = ") != std::string::npos) {
      stacks.emplace_back();
    }
  }
  return stacks;
}

// The names of every symbol by address (readelf -s: the reference for aliases).
// `thumb_bit`: arm, whose function symbols carry bit 0 for Thumb code.
std::map<std::uint64_t, std::set<std::string>> symbols_by_address(const std::string& program, bool thumb_bit) {
  std::map<std::uint64_t, std::set<std::string>> names;
  std::istringstream in(unwind::test::run_tool("readelf -sW '" + program + "'"));
  std::string line;
  while (std::getline(in, line)) {
    const auto words = unwind::test::split_words(line);
    // "Num: Value Size Type Bind Vis Ndx Name"
    if (words.size() != 8 || words[0].back() != ':' || words[6] == "UND" || words[6] == "ABS" ||
        words[1].find_first_not_of("0123456789abcdef") != std::string::npos)
      continue;
    std::uint64_t value = std::stoull(words[1], nullptr, 16);
    if (thumb_bit && words[3] == "FUNC") value &= ~std::uint64_t{1};  // arm: bit 0 marks a Thumb function
    names[value].insert(words[7]);
  }
  return names;
}

// Whether `name` is a symbol at `start`. gdb drops a numbered suffix
// ("ptmalloc_init.part" for ptmalloc_init.part.0): a symbol that is `name`
// followed by ".N" counts too.
bool names_symbol_at(const std::map<std::uint64_t, std::set<std::string>>& symbols, std::uint64_t start,
                     const std::string& name) {
  const auto at = symbols.find(start);
  if (at == symbols.end()) return false;
  return std::any_of(at->second.begin(), at->second.end(), [&](const std::string& symbol) {
    return symbol == name || (symbol.rfind(name + ".", 0) == 0 &&
                              symbol.find_first_not_of("0123456789", name.size() + 1) == std::string::npos);
  });
}

// The address ranges the FDEs of `program`'s .eh_frame and .debug_frame cover
// (readelf --debug-dump=frames: "... FDE cie=... pc=START..END").
std::vector<std::pair<std::uint64_t, std::uint64_t>> fde_ranges(const std::string& program) {
  std::vector<std::pair<std::uint64_t, std::uint64_t>> ranges;
  std::istringstream in(unwind::test::run_tool("readelf --debug-dump=frames '" + program + "' 2>/dev/null"));
  std::string line;
  static const std::regex fde(R"( FDE cie=[0-9a-f]+ pc=([0-9a-f]+)\.\.([0-9a-f]+))");
  while (std::getline(in, line)) {
    std::smatch match;
    if (std::regex_search(line, match, fde))
      ranges.emplace_back(std::stoull(match[1], nullptr, 16), std::stoull(match[2], nullptr, 16));
  }
  return ranges;
}

// The entries of `program`'s .ARM.exidx as `readelf -u` lists them: function
// start -> whether the entry is EXIDX_CANTUNWIND ("0x10332 <f>: 0x1 [cantunwind]").
std::map<std::uint64_t, bool> readelf_exidx_entries(const std::string& readelf, const std::string& program) {
  std::map<std::uint64_t, bool> entries;
  std::istringstream in(unwind::test::run_tool(readelf + " -u '" + program + "'"));
  std::string line;
  while (std::getline(in, line)) {
    const auto words = unwind::test::split_words(line);
    if (words.size() < 3 || line.rfind("0x", 0) != 0 || words[1].front() != '<') continue;
    entries[std::stoull(words[0], nullptr, 16)] = words.back() == "[cantunwind]";
  }
  return entries;
}

// Whether an entry covers `address` and is not EXIDX_CANTUNWIND.
bool exidx_unwinds(const std::map<std::uint64_t, bool>& entries, std::uint64_t address) {
  auto after = entries.upper_bound(address);
  return after != entries.begin() && !std::prev(after)->second;
}

// Cuts gdb's stacks after their first frame whose function has no table (no
// FDE in .eh_frame or .debug_frame, and on arm, `exidx`, no .ARM.exidx entry
// other than EXIDX_CANTUNWIND), where gdb goes on with its prologue analyser
// and the tables alone cannot: Debian 12's riscv64 and mips glibc have no FDE
// for many C functions (_dl_early_allocate, __getrlimit, __tls_init_tp...),
// its armhf glibc has [cantunwind] ranges for them. Returns how many stacks were cut.
std::size_t cut_at_functions_without_cfi(std::vector<NamedStack>& stacks, const std::string& program,
                                         const std::map<std::uint64_t, bool>& exidx) {
  const auto ranges = fde_ranges(program);
  REQUIRE((ranges.size() > 100 || !exidx.empty()));  // arm: the tables may all be EHABI
  auto covered = [&](std::uint64_t pc) {  // pc - 1: inside the trap or the call
    return exidx_unwinds(exidx, pc - 1) || std::any_of(ranges.begin(), ranges.end(), [&](const auto& range) {
             return range.first <= pc - 1 && pc - 1 < range.second;
           });
  };
  std::size_t cut = 0;
  for (NamedStack& stack : stacks) {
    for (std::size_t k = 0; k + 1 < stack.frames.size(); ++k) {
      if (covered(stack.frames[k].pc)) continue;
      stack.frames.resize(k + 1);
      ++cut;
      break;
    }
  }
  return cut;
}

std::string pcs_text(const std::vector<std::uint64_t>& pcs) {
  std::ostringstream out;
  for (const auto pc : pcs) out << " " << std::hex << pc;
  return out.str();
}

std::vector<std::uint64_t> pcs_of(const NamedStack& stack) {
  std::vector<std::uint64_t> pcs;
  for (const auto& frame : stack.frames) pcs.push_back(frame.pc);
  return pcs;
}

// How to compare with gdb: kEqual, every stack equal; kPrologue (mips,
// riscv64, arm: architectures with a prologue analyser): the auto walk and
// `--stacks auto` equal gdb's stacks frame for frame, gdb's prologue analysis
// included; the CFI-only walk (on arm with EHABI) and `--stacks cfi` equal
// gdb's stacks cut after their first frame in a function without tables
// (cut_at_functions_without_cfi: there the tables alone cannot go on).
enum class Compare { kEqual, kPrologue };

// `program` (static, of `arch`; `variant` names it in messages and sockets).
void check_against_gdb_multiarch(const CrossArch& arch, const std::string& program, const std::string& variant,
                                 bool expect_sframe, Compare compare = Compare::kEqual) {
  const std::string missing = missing_tools(arch);
  REQUIRE_MESSAGE(missing.empty(), missing);
  INFO(program);
  REQUIRE(std::filesystem::exists(program));
  auto expected = gdb_trap_stacks(arch, program, variant);
  REQUIRE(expected.size() > 10);
  const bool prologue = compare == Compare::kPrologue;
  const bool arm = arch.name == "arm";
  // What the tables alone can find: gdb's stacks cut where a function has none.
  auto expected_cfi = expected;
  if (prologue) {
    const auto exidx = arm ? readelf_exidx_entries("arm-linux-gnueabihf-readelf", program)
                           : std::map<std::uint64_t, bool>{};
    if (arm) REQUIRE(!exidx.empty());
    const std::size_t cut = cut_at_functions_without_cfi(expected_cfi, program, exidx);
    MESSAGE(arch.name << " " << variant << ": " << cut << " of gdb's " << expected.size()
                      << " stacks go on through a function without CFI (prologue analysis)");
    CHECK(cut > 0);
    CHECK(cut < expected.size());
  }

  // In-process walks: every syscall, the same number, the same pcs as gdb.
  const auto emulated = unwind::test::emulated_stacks(program);
  REQUIRE(emulated[0].size() == expected.size());
  std::size_t frames = 0;
  for (std::size_t i = 0; i < expected.size(); ++i) {
    CAPTURE(i);
    const auto want = pcs_of(expected[i]);
    CHECK(emulated[0][i].number == expected[i].number);
    CHECK_MESSAGE(emulated[0][i].pcs == want, "auto:" << pcs_text(emulated[0][i].pcs) << "\ngdb: " << pcs_text(want));
    const auto want_cfi = prologue ? pcs_of(expected_cfi[i]) : want;
    CHECK_MESSAGE(emulated[1][i].pcs == want_cfi,
                  "cfi: " << pcs_text(emulated[1][i].pcs) << "\ngdb: " << pcs_text(want_cfi));
    // SFrame alone: a prefix of gdb's stack (libc has no .sframe).
    const auto& sframe = emulated[2][i].pcs;
    CHECK(sframe.size() <= want.size());
    CHECK(std::equal(sframe.begin(), sframe.begin() + static_cast<std::ptrdiff_t>(std::min(sframe.size(), want.size())),
                     want.begin()));
    frames += want.size();
  }
  const auto sources = unwind::test::check_frame_sources(emulated[0], expect_sframe);
  MESSAGE(arch.name << " " << variant << ": " << expected.size() << " syscalls, " << frames << " frames equal gdb's ("
                    << sources.sframe << " found by SFrame, " << sources.cfi << " by CFI, " << sources.ehabi
                    << " by EHABI, " << sources.prologue << " by prologue analysis)");
  if (prologue)
    CHECK(sources.prologue > 0);
  else
    CHECK(sources.prologue == 0);
  if (arm) CHECK(sources.ehabi > 0);
  CHECK(frames > expected.size() * 3);

  // The CLI: the same pcs, named by symbols at the addresses gdb's names have.
  const auto symbols = symbols_by_address(program, arm);
  REQUIRE(!symbols.empty());
  std::size_t named_frames = 0;
  for (const std::string method : {"auto", "cfi"}) {
    CAPTURE(method);
    const auto printed = strace_k_stacks(program, method);
    REQUIRE(printed.size() == expected.size());
    const auto& reference = method == "cfi" ? expected_cfi : expected;
    std::size_t named = 0;
    for (std::size_t i = 0; i < reference.size(); ++i) {
      CAPTURE(i);
      const std::size_t length = reference[i].frames.size();
      REQUIRE_MESSAGE(printed[i].frames.size() == length,
                      "ours:" << pcs_text(pcs_of(printed[i])) << "\ngdb: " << pcs_text(pcs_of(reference[i])));
      for (std::size_t k = 0; k < length && k < reference[i].frames.size(); ++k) {
        const NamedFrame& want = reference[i].frames[k];
        const NamedFrame& got = printed[i].frames[k];
        CAPTURE(k);
        CAPTURE(want.name);
        CAPTURE(got.name);
        CHECK(got.pc == want.pc);
        CHECK(got.start == want.start);
        if (want.name.empty()) continue;
        CHECK(names_symbol_at(symbols, want.start, want.name));
        CHECK(names_symbol_at(symbols, got.start, got.name));
        ++named;
      }
    }
    if (method == "auto") {
      CHECK(named >= frames);
      named_frames = named;
    }
  }
  CHECK(named_frames > 0);
}

// samples/guest/signal_stacks (aarch64, riscv64, mips, mipsel; on i386 and
// arm gdb-multiarch 13 on qemu-user unwinds the frame above its own
// `<signal handler called>` to pc 0, so there is no reference to compare
// with): a handler entered from raise() under main ->
// outer -> inner, one entered at a faulting store in a loop): at every trap
// the same pcs as gdb's backtrace, except gdb's `<signal handler called>`
// frame, where ours must be a signal trampoline's frame too (the one before a
// FrameSource::kSignalFrame frame): qemu returns handlers through a page of
// its own where tracecorn maps its trampoline page, so those addresses differ.
// `trampoline_syscalls`: the rt_sigreturn numbers made from such a page, where
// gdb has no breakpoint (it breaks only on the program's traps): left out of
// ours. `qemu_cpu`: see gdb_trap_stacks. Returns the number of stacks
// through a signal frame.
std::size_t check_signal_stacks(const CrossArch& arch, const std::string& program,
                                const std::set<std::uint64_t>& trampoline_syscalls, const std::string& qemu_cpu = "") {
  const std::string missing = missing_tools(arch);
  REQUIRE_MESSAGE(missing.empty(), missing);
  INFO(program);
  REQUIRE(std::filesystem::exists(program));
  const auto expected = gdb_trap_stacks(arch, program, arch.name + "-signal", qemu_cpu);
  const auto walks = unwind::test::emulated_stacks(program);
  std::vector<SyscallStack> emulated;
  for (const auto& stack : walks[0])
    if (!trampoline_syscalls.count(stack.number)) emulated.push_back(stack);
  REQUIRE(emulated.size() == expected.size());
  std::size_t through_signal_frames = 0;
  for (std::size_t i = 0; i < expected.size(); ++i) {
    CAPTURE(i);
    const auto& want = expected[i].frames;
    const auto& got = emulated[i];
    CHECK(got.number == expected[i].number);
    REQUIRE_MESSAGE(got.pcs.size() == want.size(),
                    "ours:" << pcs_text(got.pcs) << "\ngdb: " << pcs_text(pcs_of(expected[i])));
    bool signal = false;
    for (std::size_t k = 0; k < want.size(); ++k) {
      CAPTURE(k);
      if (want[k].name == kTrampolineFrame) {
        signal = true;
        REQUIRE(k + 1 < want.size());
        CHECK(got.sources[k + 1] == unwind::FrameSource::kSignalFrame);
      } else {
        CHECK(got.pcs[k] == want[k].pc);
      }
    }
    through_signal_frames += signal;
  }
  MESSAGE(arch.name << " signal_stacks: " << expected.size() << " syscalls, " << through_signal_frames
                    << " of them inside handlers, equal gdb's backtrace");
  return through_signal_frames;
}

// The unwind variant `variant` of nested_calls for `arch` (samples/unwind_variants_cross.cmake).
std::string unwind_variant(const CrossArch& arch, const std::string& variant) {
  return std::string(TRACECORN_UNWIND_SAMPLES_DIR) + "-" + arch.name + "/" + variant + "/nested_calls";
}

}  // namespace

TEST_CASE("Stacks aarch64: SFrame static binary, every syscall equals gdb-multiarch on qemu-aarch64-static") {
  check_against_gdb_multiarch(kAarch64, unwind_variant(kAarch64, "sframe-static"), "sframe-static", true);
}
TEST_CASE("Stacks aarch64: CFI-only static binary, every syscall equals gdb-multiarch on qemu-aarch64-static") {
  check_against_gdb_multiarch(kAarch64, unwind_variant(kAarch64, "cfi-static"), "cfi-static", false);
}
TEST_CASE("Stacks aarch64: the program's CFI in .debug_frame only, every syscall equals gdb-multiarch") {
  check_against_gdb_multiarch(kAarch64, unwind_variant(kAarch64, "debug_frame"), "debug_frame", false);
}
TEST_CASE("Stacks i386: static binary (.eh_frame), every syscall equals gdb-multiarch on qemu-i386-static") {
  check_against_gdb_multiarch(kI386, std::string(TRACECORN_SAMPLES_DIR) + "-i386/static/nested_calls", "i386-static",
                              false);
}
TEST_CASE("Stacks arm: static Thumb-2 binary (glibc's .ARM.exidx, the program's .debug_frame), every syscall equals gdb-multiarch's, through EXIDX_CANTUNWIND code by prologue analysis") {
  check_against_gdb_multiarch(kArm, std::string(TRACECORN_SAMPLES_DIR) + "-arm/static/nested_calls", "arm-static",
                              false, Compare::kPrologue);
}
TEST_CASE("Stacks arm: static -marm binary (the program in ARM code, glibc in Thumb-2), every syscall equals gdb-multiarch's, through EXIDX_CANTUNWIND code by prologue analysis") {
  check_against_gdb_multiarch(kArm, std::string(TRACECORN_SAMPLES_DIR) + "-arm/static-marm/nested_calls",
                              "arm-static-marm", false, Compare::kPrologue);
}
TEST_CASE("Stacks arm: the program's own EHABI tables (-funwind-tables, Thumb-2), every syscall equals gdb-multiarch's, through EXIDX_CANTUNWIND code by prologue analysis") {
  check_against_gdb_multiarch(kArm, unwind_variant(kArm, "exidx-static"), "exidx-static", false, Compare::kPrologue);
}
TEST_CASE("Stacks arm: the program's own EHABI tables in ARM code (-marm -funwind-tables), every syscall equals gdb-multiarch's, through EXIDX_CANTUNWIND code by prologue analysis") {
  check_against_gdb_multiarch(kArm, unwind_variant(kArm, "exidx-marm"), "exidx-marm", false, Compare::kPrologue);
}
TEST_CASE("Stacks riscv64: static binary (.eh_frame, prologue analysis where glibc has none), every syscall equals gdb-multiarch on qemu-riscv64-static") {
  check_against_gdb_multiarch(kRiscv64, std::string(TRACECORN_SAMPLES_DIR) + "-riscv64/static/nested_calls",
                              "riscv64-static", false, Compare::kPrologue);
}
TEST_CASE("Stacks mips: big-endian static binary (.eh_frame), every syscall equals gdb-multiarch on qemu-mips-static, through glibc's functions without CFI by prologue analysis") {
  check_against_gdb_multiarch(kMips, std::string(TRACECORN_SAMPLES_DIR) + "-mips/static/nested_calls", "mips-static",
                              false, Compare::kPrologue);
}
TEST_CASE("Stacks mipsel: static binary (.eh_frame), every syscall equals gdb-multiarch on qemu-mipsel-static, through glibc's functions without CFI by prologue analysis") {
  check_against_gdb_multiarch(kMipsel, std::string(TRACECORN_SAMPLES_DIR) + "-mipsel/static/nested_calls",
                              "mipsel-static", false, Compare::kPrologue);
}

TEST_CASE("Stacks aarch64: syscalls inside signal handlers equal gdb-multiarch's backtrace through <signal handler called>") {
  // The writes in both handlers and the fault handler's mprotect. qemu 7.2's
  // default CPU has SVE and puts an SVE record in its signal frames, which
  // gdb 13 refuses ("Invalid vector length in signal frame 4 vs 16"); a
  // Cortex-A72 has none (tracecorn's frames have fpsimd_context only).
  CHECK(check_signal_stacks(kAarch64, std::string(TRACECORN_SAMPLES_DIR) + "-aarch64/static/signal_stacks", {139},
                            "cortex-a72") == 3);
}
TEST_CASE("Stacks riscv64: syscalls inside signal handlers equal gdb-multiarch's backtrace through <signal handler called>") {
  CHECK(check_signal_stacks(kRiscv64, std::string(TRACECORN_SAMPLES_DIR) + "-riscv64/static/signal_stacks", {139}) ==
        3);
}
TEST_CASE("Stacks mips: syscalls inside signal handlers equal gdb-multiarch's backtrace through <signal handler called>") {
  // mips' handlers without SA_SIGINFO return through sigreturn (4119), not rt_sigreturn (4193).
  CHECK(check_signal_stacks(kMips, std::string(TRACECORN_SAMPLES_DIR) + "-mips/static/signal_stacks", {4119, 4193}) ==
        3);
}
TEST_CASE("Stacks mipsel: syscalls inside signal handlers equal gdb-multiarch's backtrace through <signal handler called>") {
  CHECK(check_signal_stacks(kMipsel, std::string(TRACECORN_SAMPLES_DIR) + "-mipsel/static/signal_stacks",
                            {4119, 4193}) == 3);
}
