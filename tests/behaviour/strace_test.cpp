// Role: checks that tracecorn makes the same syscalls, in the same order, as
// qemu-user does for the same guest: for each sample marked "strace: yes"
// (see samples/README.md), static and dynamic variants, the names from
// `qemu-x86_64-static -strace -D LOG` must equal the names from
// `tracecorn run --syscall-log LOG --`.
//
// Why qemu: it is an independent user-mode emulator of the same guest code,
// so where the two disagree one of them answered a syscall differently and
// the guest took another path. Known, justified differences are listed in
// kIgnoredSyscalls below, plus one narrower rule for ld.so's scratch mmap
// (drop_loader_scratch_mmaps, with its evidence).
//
// Samples cross-built for another architecture compare with
// qemu-<arch>-static the same way ("Strace: aarch64 static").
// Invariants: both runs get the same argv, environment and stdin, and each its
// own fresh {tmp} directory; only names are compared (arguments and results
// hold addresses and fds that legitimately differ).
#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "harness.h"
#include "sample_spec.h"
#include "syscall_log.h"
#include "tests/support/architectures.h"
#include "tests/support/test_case_per_row.h"

namespace tracecorn::behaviour {
namespace {

struct IgnoredSyscall {
  std::string_view name;
  std::string_view reason;  // why the two emulators may legitimately differ here
};

// THE list of known differences between qemu -strace and tracecorn
// --syscall-log. Each entry drops every call of that name from both sequences.
// Keep it short; each entry needs a reason (and evidence where there is one).
const std::vector<IgnoredSyscall> kIgnoredSyscalls = {
    {"set_tls", "qemu-arm runs arm's private set_tls (0xf0005) in its CPU loop and never logs it"},
};

// Samples qemu itself crashes on, or dies of another signal than Linux sends,
// for one architecture (a qemu bug, with its evidence): there qemu must still
// die of `signal`, and tracecorn's sequence must begin with all of qemu's up
// to the crash.
struct QemuCrash {
  std::string_view sample;
  std::string_view arch;
  std::string_view evidence;
  int signal = SIGSEGV;
};
constexpr std::string_view kQemuMipsTrapEvidence =
    "qemu-mips(el)-static 7.2 sends SIGTRAP for every break and trap instruction, whatever its code (`break 7`, "
    "`teq $0,$0,6` too); Linux's do_trap_or_bp (arch/mips/kernel/traps.c) sends SIGFPE for codes 6 and 7, the "
    "`teq $divisor,$zero,7` gcc emits before a division (see qemu_deviations.cpp)";
const std::vector<QemuCrash> kQemuCrashes = {
    {"mmap_file", "i386",
     "qemu-i386-static 7.2 loses the first page of a mapping mremap shrank in place after growing it; the sample "
     "reads it and dies of SIGSEGV (Linux keeps it: see qemu_deviations.cpp)"},
    {"divide_by_zero", "mips", kQemuMipsTrapEvidence, SIGTRAP},
    {"divide_by_zero", "mipsel", kQemuMipsTrapEvidence, SIGTRAP},
};

// The one difference that is not a whole syscall name: ld.so's minimal malloc
// takes its first blocks from the rest of ld.so's last data page and mmaps an
// anonymous read-write block when they do not fit. How much it needs depends on
// the glibc-hwcaps levels the CPU advertises (x86-64-v2/v3/v4 search paths), and
// qemu's CPU, the host CPU and tracecorn's CPUID (baseline, see arch/x86_64.cpp)
// differ there: native and qemu make that mmap at different points, tracecorn
// (fewer levels) needs none. So anonymous read-write mmaps of at most 64 KiB with
// no address hint, before the first mprotect (ld.so's RELRO, after loading), are
// dropped from both logs. Evidence: `strace` of the native run shows the mmap
// right after brk(NULL); qemu 7.2 shows it after libc's newfstatat.
std::string drop_loader_scratch_mmaps(const std::string& log, bool is_qemu) {
  std::istringstream lines(log);
  std::string line, kept;
  bool loading = true;
  while (std::getline(lines, line)) {
    if (line.find("mprotect(") != std::string::npos) loading = false;
    bool drop = false;
    if (loading) {
      std::size_t size = 0;
      char tail[64] = {};
      if (is_qemu) {
        const auto at = line.find(" mmap(NULL,");
        drop = at != std::string::npos &&
               std::sscanf(line.c_str() + at, " mmap(NULL,%zu,%63[^)]", &size, tail) == 2 &&
               std::string(tail) == "PROT_READ|PROT_WRITE,MAP_PRIVATE|MAP_ANONYMOUS,-1,0" && size <= 65536;
      } else {
        drop = std::sscanf(line.c_str(), "mmap(0x0, %zx, 0x3, 0x22, %63[^)]", &size, tail) == 2 && size <= 65536;
      }
    }
    if (!drop) kept += line + "\n";
  }
  return kept;
}

std::string read_whole_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string join_lines(const std::vector<std::string>& names) {
  std::string text;
  for (const auto& n : names) {
    bool ignored = false;
    for (const auto& i : kIgnoredSyscalls) ignored |= n == i.name;
    if (!ignored) text += n + "\n";
  }
  return text;
}

// `binary` under `qemu` -strace and under tracecorn --syscall-log; `arch` names
// the guest architecture for qemu's unnamed syscall numbers.
void compare_with_qemu(const SampleSpec& sample, const std::string& binary, const std::string& qemu_path,
                       const std::string& arch) {
  const std::string missing = missing_executable(binary, "build the guest_samples target") +
                              missing_executable(qemu_path, "apt-get install qemu-user-static") +
                              missing_executable(paths().tracecorn, "build the tracecorn target");
  REQUIRE_MESSAGE(missing.empty(), missing);

  TempDir qemu_dir(sample.name + "-qemu"), tracecorn_dir(sample.name + "-strace");
  TempDir logs("syscall-logs");
  const std::string qemu_log = logs / "qemu.log", tracecorn_log = logs / "tracecorn.log";

  ProcessSpec qemu = sample.process(binary, qemu_dir.path());
  std::vector<std::string> prefix = {qemu_path, "-strace", "-D", qemu_log};
  for (const auto& option : qemu_cpu_options(arch)) prefix.push_back(option);
  qemu.argv.insert(qemu.argv.begin(), prefix.begin(), prefix.end());
  const ProcessResult qemu_run = run_process(qemu);
  const bool qemu_ran = qemu_run.spawn_error.empty() && !qemu_run.timed_out;
  REQUIRE_MESSAGE(qemu_ran, "qemu did not run: " << qemu_run.describe_status());

  const ProcessSpec traced =
      under_tracecorn(sample.process(binary, tracecorn_dir.path()), {"--syscall-log", tracecorn_log});
  const ProcessResult traced_run = run_process(traced);
  const auto crash = std::find_if(kQemuCrashes.begin(), kQemuCrashes.end(), [&](const QemuCrash& entry) {
    return entry.sample == sample.name && entry.arch == arch;
  });
  const bool qemu_crashes = crash != kQemuCrashes.end();
  if (qemu_crashes) CHECK_MESSAGE(qemu_run.status == 128 + crash->signal, "the qemu bug listed in kQemuCrashes is gone");
  else CHECK_MESSAGE(traced_run.status == qemu_run.status,
                "exit status differs: qemu " << qemu_run.describe_status() << ", tracecorn "
                                             << traced_run.describe_status() << "\n"
                                             << printable(traced_run.err));

  const auto qemu_names = parse_qemu_strace(drop_loader_scratch_mmaps(read_whole_file(qemu_log), true), arch);
  auto tracecorn_names =
      parse_tracecorn_syscall_log(drop_loader_scratch_mmaps(read_whole_file(tracecorn_log), false));
  if (qemu_crashes && tracecorn_names.size() > qemu_names.size()) tracecorn_names.resize(qemu_names.size());
  if (arch == "mips" || arch == "mipsel") {
    // Numbers below 4000 are no o32 call: qemu-mips answers ENOSYS without
    // logging them (linux-user/mips/cpu_loop.c checks the number before the
    // strace hook; the unknown_syscall sample's syscall(1000)), so they are
    // dropped from tracecorn's side.
    std::erase_if(tracecorn_names, [](const std::string& name) {
      return name.starts_with("syscall_") && std::strtol(name.c_str() + 8, nullptr, 10) < 4000;
    });
  }
  REQUIRE_MESSAGE(qemu_names.size() >= 3, "qemu's strace log has too few syscalls; has its format changed?\n"
                                              << printable(read_whole_file(qemu_log)));
  const std::string diff = describe_difference("qemu -strace syscalls", join_lines(qemu_names),
                                               "tracecorn --syscall-log syscalls", join_lines(tracecorn_names));
  CHECK_MESSAGE(diff.empty(), "syscall sequences differ for " << quote_command(traced.argv) << "\n"
                                                              << "(ignored names are listed in kIgnoredSyscalls)\n"
                                                              << diff);
}

void compare_all_marked(const std::string& variant) {
  std::vector<std::string> errors;
  const auto samples = discover_samples(paths().samples_source, errors);
  int marked = 0;
  for (const auto& sample : samples) {
    if (!sample.strace) continue;
    marked++;
    SUBCASE(sample.name.c_str()) {
      compare_with_qemu(sample, paths().samples_binary + "/" + variant + "/" + sample.name, paths().qemu, "x86_64");
    }
  }
  REQUIRE_MESSAGE(marked > 0, "no sample in " << paths().samples_source << " says 'strace: yes'");
}

// The samples cross-built for `arch` (static: no loader), against qemu-<arch>-static.
void compare_all_marked_cross(const std::string& arch, const std::string& variant) {
  std::vector<std::string> errors;
  const auto samples = discover_samples(paths().samples_source, errors);
  int marked = 0;
  for (const auto& sample : samples) {
    if (!sample.strace || !sample.runs_on(arch)) continue;
    marked++;
    SUBCASE(sample.name.c_str()) {
      compare_with_qemu(sample, cross_samples_binary(arch) + "/" + variant + "/" + sample.name, qemu_for(arch), arch);
    }
  }
  REQUIRE_MESSAGE(marked > 0, "no " << arch << " sample in " << paths().samples_source << " says 'strace: yes'");
}

using test_support::SampleBuild;

// The variants compared (test_support::is_strace_compared: all but
// static-pie) of every architecture of tests/support/architectures.h: one
// case each, "Strace: static" for the host's, "Strace: aarch64 static" for
// the others' (tests/behaviour/CMakeLists.txt registers one ctest entry per
// case and marked sample).
constexpr auto kStraceBuilds = test_support::sample_builds_where<&test_support::is_strace_compared>();

std::string strace_case_name(const SampleBuild& build) { return test_support::sample_build_case_name("Strace", build); }

void compare_sample_build(const SampleBuild& build) {
  if (build.architecture->is_host) compare_all_marked(std::string(build.variant));
  else compare_all_marked_cross(std::string(build.architecture->name), std::string(build.variant));
}

}  // namespace

TRACECORN_TEST_CASE_PER_ROW(kStraceBuilds, strace_case_name, compare_sample_build);

}  // namespace tracecorn::behaviour
