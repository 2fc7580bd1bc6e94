// Role: a Go program as the guest, on every architecture: samples/go/fanout
// (goroutines over channels, a spinning goroutine the runtime must preempt
// with a signal, a mutex), built with Debian's golang-go (samples/go.cmake).
// The Go runtime starts threads, parks them on futexes, preempts goroutines
// with SIGURG sent by tgkill, reads and sets every signal's disposition (mips:
// 128 of them, SIGEMT among them), opens a non-blocking pipe for its poller,
// calls arm's kuser helpers and reads riscv64's time CSR. Under `tracecorn
// run` the output and exit status equal the native x86-64 run's (the output
// does not depend on the architecture) and, where qemu runs the program,
// qemu-<arch>-static's (qemu-i386-static 7.2 dies in Go's signal handler:
// "fatal: bad g in signal handler"). A recording replays without divergence
// (UCIR): at the regs level on x86-64 and riscv64 (the runtime reads the
// time stamp counter, the time CSR: host clocks whose values only registers
// carry; i386 is x86-64's case, left out for time), at the blocks level on
// arm64, arm, mips and mipsel.
// Runs on the doctest thread of behaviour_tests; one entry, about 45 s.
#include <filesystem>
#include <string>
#include <vector>

#include "harness.h"
#include "tests/support/architectures.h"

namespace tracecorn::behaviour {
namespace {

using test_support::GuestArchitecture;

// Whether qemu-<name>-static runs the program to compare with: not for the
// host (the native run is the reference) nor i386 (qemu 7.2 dies in Go's
// signal handler).
bool compared_with_qemu(const GuestArchitecture& architecture) {
  return !architecture.is_host && architecture.name != "i386";
}

// The level its recording is replayed at; empty: not replayed. regs where the
// runtime reads host clocks only registers carry (x86-64's time stamp
// counter, riscv64's time CSR), i386 (x86-64's case) left out for time,
// blocks on the others.
std::string replay_level(const GuestArchitecture& architecture) {
  if (architecture.name == "i386") return "";
  if (architecture.is_host || architecture.name == "riscv64") return "regs";
  return "blocks";
}

std::string go_sample(const std::string& goarch) {
  return (std::filesystem::path(paths().samples_binary).parent_path() / "go" / goarch / "fanout").string();
}

ProcessSpec go_program(std::vector<std::string> argv) {
  ProcessSpec spec;
  spec.argv = std::move(argv);
  spec.env = base_env();
  spec.timeout = run_timeout();
  return spec;
}

void check_replays(const std::string& binary, const std::string& level) {
  TempDir dir("go-replay");
  const std::string trace = dir / "fanout.ucir";
  const ProcessResult recorded = run_process(go_program(
      {paths().tracecorn, "record", "--format", "ucir", "--level", level, "-o", trace, "--", binary}));
  REQUIRE_MESSAGE(recorded.status == 0, recorded.describe_status() << "\n" << recorded.err);
  ProcessSpec replay = go_program({paths().tracecorn, "replay", trace});
  replay.timeout *= 3;  // (a replay at regs records and compares every instruction: several times a run)
  const ProcessResult replayed = run_process(replay);
  CHECK_MESSAGE(replayed.status == 0, replayed.describe_status() << "\n" << replayed.err << replayed.out);
}

}  // namespace

TEST_CASE("Go: goroutines, channels and a preempted spinner equal the native run and qemu on every architecture") {
  const std::string host_goarch(test_support::host_architecture().goarch);
  const std::string missing = missing_executable(go_sample(host_goarch), "apt-get install golang-go, then build go_samples") +
                              missing_executable(paths().tracecorn, "build the tracecorn target");
  REQUIRE_MESSAGE(missing.empty(), missing);
  const ProcessSpec native_spec = go_program({go_sample(host_goarch)});
  const ProcessResult native = run_process(native_spec);
  REQUIRE_MESSAGE(native.status == 0, native.describe_status() << "\n" << native.err);
  REQUIRE(native.out.find("spinner preempted and stopped: true") != std::string::npos);
  for (const GuestArchitecture& architecture : test_support::kGuestArchitectures) {  // tests/support/architectures.h
    const std::string goarch(architecture.goarch);
    CAPTURE(goarch);
    const std::string binary = go_sample(goarch);
    REQUIRE_MESSAGE(missing_executable(binary, "build go_samples").empty(), binary);
    const ProcessResult emulated = run_process(under_tracecorn(go_program({binary})));
    CHECK_MESSAGE(compare_runs(native_spec, native, emulated).empty(),
                  "(the native run is the x86-64 build's)\n" << compare_runs(native_spec, native, emulated));
    if (compared_with_qemu(architecture)) {
      ProcessSpec qemu_spec = go_program({qemu_for(std::string(architecture.name)), binary});
      const ProcessResult qemu = without_qemu_messages(run_process(qemu_spec));
      CHECK_MESSAGE(compare_runs(qemu_spec, qemu, emulated).empty(),
                    "(the \"native\" run is qemu's)\n" << compare_runs(qemu_spec, qemu, emulated));
    }
    if (const std::string level = replay_level(architecture); !level.empty()) check_replays(binary, level);
  }
}

}  // namespace tracecorn::behaviour
