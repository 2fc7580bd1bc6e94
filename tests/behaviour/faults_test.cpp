// Role: a guest that faults is reported as the kernel and a debugger see it:
// the pc and the address on tracecorn's "killed by SIGSEGV" line must equal
// the $pc and $_siginfo address gdb reports for the same binary run natively
// (gdb disables ASLR, so PIE binaries load at 0x555555554000 there too, as in
// tracecorn). The reference is gdb, not our own decoder.
#include <unistd.h>

#include <regex>
#include <string>

#include "harness.h"
#include "tests/support/architectures.h"

namespace tracecorn::behaviour {
namespace {

struct FaultReport {
  std::string pc;
  std::string address;
};

FaultReport gdb_fault(const std::string& binary) {
  ProcessSpec gdb;
  gdb.argv = {"/usr/bin/gdb", "-nx", "-batch", "-ex", "run", "-ex", "printf \"pc=%#lx\\n\", $pc", "-ex",
              "printf \"addr=%#lx\\n\", $_siginfo._sifields._sigfault.si_addr", binary};
  gdb.env = base_env();
  const ProcessResult result = run_process(gdb);
  std::smatch pc, address;
  REQUIRE_MESSAGE(std::regex_search(result.out, pc, std::regex("pc=(0x[0-9a-f]+)")), result.out << result.err);
  REQUIRE_MESSAGE(std::regex_search(result.out, address, std::regex("addr=(0x[0-9a-f]+|0)")), result.out);
  return {pc[1], address[1]};
}

// The pc of the fault of `binary` (another architecture's) under
// qemu-<arch>-static's gdb stub, as gdb-multiarch reports it after `continue`.
std::string gdb_multiarch_fault_pc(const std::string& arch, const std::string& binary) {
  const std::string port = std::to_string(20000 + ::getpid() % 20000);
  std::string cpu_options;  // qemu's CPU for Unicorn's (qemu_cpu_options): words without quoting needs
  for (const auto& option : qemu_cpu_options(arch)) cpu_options += option + " ";
  ProcessSpec script;
  script.argv = {"/bin/sh", "-c",
                 "\"$0\" " + cpu_options + "-g " + port + " \"$1\" >/dev/null 2>&1 & sleep 0.5; "
                 "/usr/bin/gdb-multiarch -nx -batch -ex 'target remote :" + port +
                     "' -ex continue -ex 'printf \"pc=%#lx\\n\", $pc' -ex kill \"$1\" 2>&1; wait",
                 qemu_for(arch), binary};
  script.env = base_env();
  const ProcessResult result = run_process(script);
  std::smatch pc;
  REQUIRE_MESSAGE(std::regex_search(result.out, pc, std::regex("pc=(0x[0-9a-f]+)")), result.out << result.err);
  return pc[1];
}

// The static segfault sample of `arch` under tracecorn: killed by SIGSEGV at
// address 0 with gdb-multiarch's pc (Unicorn reports the block's start: the
// architecture's locate_faulting_instruction must find the store in it).
void check_cross_segfault(const std::string& arch) {
  const std::string missing = missing_executable("/usr/bin/gdb-multiarch", "apt-get install gdb-multiarch") +
                              missing_executable(qemu_for(arch), "apt-get install qemu-user-static");
  REQUIRE_MESSAGE(missing.empty(), missing);
  // static only: qemu-user loads a static-pie at its own base, not where Linux would.
  const std::string binary = cross_samples_binary(arch) + "/static/segfault";
  const std::string expected_pc = gdb_multiarch_fault_pc(arch, binary);
  ProcessSpec spec;
  spec.argv = {binary};
  spec.env = base_env();
  const ProcessResult emulated = run_process(under_tracecorn(spec));
  CHECK(emulated.status == 139);
  std::smatch line;
  REQUIRE_MESSAGE(std::regex_search(emulated.err, line,
                                    std::regex("tracecorn: killed by SIGSEGV: .* at address (0x[0-9a-f]+), pc "
                                               "(0x[0-9a-f]+)")),
                  emulated.err);
  CHECK(std::stoull(line[1], nullptr, 16) == 0);  // the sample writes through NULL
  CHECK(std::stoull(line[2], nullptr, 16) == std::stoull(expected_pc, nullptr, 16));
}

}  // namespace

// Every other architecture of the table, one subcase each. Unicorn 2.0.1
// leaves the pc at the block's start after a memory fault (on arm the Thumb-2
// store is the block's sixth instruction, on mips the fourth: objdump -d of
// the samples); locate_faulting_instruction must find the store.
TEST_CASE("Faults: each other architecture's segfault pc matches gdb-multiarch on qemu-<arch>-static") {
  for (const test_support::GuestArchitecture* architecture : test_support::kCrossArchitectures) {
    const std::string arch(architecture->name);
    SUBCASE(arch.c_str()) { check_cross_segfault(arch); }
  }
}

TEST_CASE("Faults: the pc and address of a segfault match gdb's on the native run") {
  const std::string missing = missing_executable("/usr/bin/gdb", "apt-get install gdb");
  REQUIRE_MESSAGE(missing.empty(), missing);
  for (const auto& variant : variants()) {
    CAPTURE(variant);
    const std::string binary = paths().samples_binary + "/" + variant + "/segfault";
    const FaultReport expected = gdb_fault(binary);
    ProcessSpec spec;
    spec.argv = {binary};
    spec.env = base_env();
    const ProcessResult emulated = run_process(under_tracecorn(spec));
    CHECK(emulated.status == 139);
    std::smatch line;
    REQUIRE_MESSAGE(std::regex_search(emulated.err, line,
                                      std::regex("tracecorn: killed by SIGSEGV: .* at address (0x[0-9a-f]+), pc "
                                                 "(0x[0-9a-f]+)")),
                    emulated.err);
    CHECK(std::stoull(line[1], nullptr, 16) == std::stoull(expected.address, nullptr, 16));
    CHECK(std::stoull(line[2], nullptr, 16) == std::stoull(expected.pc, nullptr, 16));
  }
}

}  // namespace tracecorn::behaviour
