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

namespace tracecorn::behaviour {
namespace {

struct GoArch {
  std::string goarch;  // the folder samples/go.cmake builds into
  std::string qemu;    // qemu-<qemu>-static; empty: none to compare with
  std::string replay_level;  // empty: not replayed
};
const std::vector<GoArch> kGoArches = {
    {"amd64", "", "regs"},           {"386", "", ""},        {"arm64", "aarch64", "blocks"},
    {"arm", "arm", "blocks"},        {"mips", "mips", "blocks"}, {"mipsle", "mipsel", "blocks"},
    {"riscv64", "riscv64", "regs"}};

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
  const std::string missing = missing_executable(go_sample("amd64"), "apt-get install golang-go, then build go_samples") +
                              missing_executable(paths().tracecorn, "build the tracecorn target");
  REQUIRE_MESSAGE(missing.empty(), missing);
  const ProcessSpec native_spec = go_program({go_sample("amd64")});
  const ProcessResult native = run_process(native_spec);
  REQUIRE_MESSAGE(native.status == 0, native.describe_status() << "\n" << native.err);
  REQUIRE(native.out.find("spinner preempted and stopped: true") != std::string::npos);
  for (const auto& arch : kGoArches) {
    CAPTURE(arch.goarch);
    const std::string binary = go_sample(arch.goarch);
    REQUIRE_MESSAGE(missing_executable(binary, "build go_samples").empty(), binary);
    const ProcessResult emulated = run_process(under_tracecorn(go_program({binary})));
    CHECK_MESSAGE(compare_runs(native_spec, native, emulated).empty(),
                  "(the native run is the x86-64 build's)\n" << compare_runs(native_spec, native, emulated));
    if (!arch.qemu.empty()) {
      ProcessSpec qemu_spec = go_program({qemu_for(arch.qemu), binary});
      const ProcessResult qemu = without_qemu_messages(run_process(qemu_spec));
      CHECK_MESSAGE(compare_runs(qemu_spec, qemu, emulated).empty(),
                    "(the \"native\" run is qemu's)\n" << compare_runs(qemu_spec, qemu, emulated));
    }
    if (!arch.replay_level.empty()) check_replays(binary, arch.replay_level);
  }
}

}  // namespace tracecorn::behaviour
