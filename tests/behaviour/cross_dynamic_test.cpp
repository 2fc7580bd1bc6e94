// Role: dynamic aarch64 programs: the samples cross-built as dynamic PIEs
// (samples/cross_dynamic.cmake) run with Debian's arm64 ld.so and libc from the
// cross toolchain's tree (/usr/aarch64-linux-gnu, libc6-arm64-cross) as the
// guest root, `tracecorn run --rootfs TREE` against `qemu-aarch64-static -L
// TREE` (exit status, stdout, stderr); and a dynamic program recorded under
// --rootfs in UCIR and BAP frames replays without divergence.
// Left out, each for a stated reason: the samples given a {tmp} directory (under
// --rootfs every guest path resolves inside the tree, where the host's
// temporary directory is not; qemu -L falls back to the host's path), for the
// same reason tty_ioctls (it opens /dev/null, which the tree lacks), and the
// samples where qemu itself departs from Linux (qemu_deviations.cpp).
// Override the tree with TRACECORN_AARCH64_ROOTFS.
// Runs on the doctest thread of behaviour_tests; each ctest entry a few seconds.
#include <cstdlib>
#include <filesystem>

#include "harness.h"
#include "qemu_deviations.h"
#include "sample_spec.h"

namespace tracecorn::behaviour {
namespace {

std::string aarch64_rootfs() {
  const char* set = std::getenv("TRACECORN_AARCH64_ROOTFS");
  return set && *set ? set : "/usr/aarch64-linux-gnu";
}

std::string missing_for_dynamic_aarch64() {
  return missing_executable(aarch64_rootfs() + "/lib/ld-linux-aarch64.so.1", "apt-get install libc6-arm64-cross") +
         missing_executable(qemu_for("aarch64"), "apt-get install qemu-user-static") +
         missing_executable(paths().tracecorn, "build the tracecorn target");
}

bool takes_tmp_directory(const SampleSpec& sample) {
  for (const auto& arg : sample.args)
    if (arg.find("{tmp}") != std::string::npos) return true;
  return false;
}

}  // namespace

TEST_CASE("Dynamic aarch64: samples with Debian's arm64 ld.so and libc under --rootfs equal qemu-aarch64-static -L") {
  const std::string missing = missing_for_dynamic_aarch64();
  REQUIRE_MESSAGE(missing.empty(), missing);
  const std::string rootfs = aarch64_rootfs();
  std::vector<std::string> errors;
  const auto samples = discover_samples(paths().samples_source, errors);
  REQUIRE(errors.empty());
  std::size_t compared = 0;
  for (const auto& sample : samples) {
    // Where qemu departs from Linux (qemu_deviations.cpp) the static build is
    // checked against the native run in samples_test.cpp.
    if (!sample.runs_on("aarch64") || takes_tmp_directory(sample) || sample.name == "tty_ioctls" ||
        qemu_deviates(sample.name, "aarch64"))
      continue;
    CAPTURE(sample.name);
    const std::string binary = cross_samples_binary("aarch64") + "/dynamic/" + sample.name;
    REQUIRE_MESSAGE(missing_executable(binary, "build guest_samples_aarch64_dynamic").empty(), binary);
    TempDir reference_dir(sample.name + "-qemu-dynamic");
    TempDir emulated_dir(sample.name + "-emulated-dynamic");
    ProcessSpec reference_spec = sample.process(binary, reference_dir.path());
    reference_spec.argv.insert(reference_spec.argv.begin(), {qemu_for("aarch64"), "-L", rootfs});
    const ProcessResult reference = without_qemu_messages(run_process(reference_spec));
    if (sample.expected_exit) CHECK(reference.status == *sample.expected_exit);
    const ProcessResult emulated =
        run_process(under_tracecorn(sample.process(binary, emulated_dir.path()), {"--rootfs", rootfs}));
    const std::string diff = compare_runs(reference_spec, reference, emulated);
    CHECK_MESSAGE(diff.empty(), "(the \"native\" run below is qemu-aarch64-static -L " << rootfs << ")\n" << diff);
    ++compared;
  }
  MESSAGE(compared << " dynamic aarch64 samples equal qemu-aarch64-static -L " << rootfs);
  CHECK(compared >= 10);
}

TEST_CASE("Dynamic aarch64: a program recorded under --rootfs in UCIR and frames replays without divergence") {
  const std::string missing = missing_for_dynamic_aarch64();
  REQUIRE_MESSAGE(missing.empty(), missing);
  const std::string rootfs = aarch64_rootfs();
  const std::string binary = cross_samples_binary("aarch64") + "/dynamic/nested_calls";
  TempDir work("dynamic-aarch64-replay");
  for (const std::string format : {"ucir", "frames"}) {
    CAPTURE(format);
    const std::string trace = work.path() + "/trace." + format;
    ProcessSpec record;
    record.argv = {paths().tracecorn, "record", "--rootfs", rootfs, "--format", format, "--level", "full", "-o", trace,
                   "--", binary};
    record.env = base_env();
    const ProcessResult recorded = run_process(record);
    REQUIRE_MESSAGE(recorded.status == 0, recorded.describe_status() << "\n" << recorded.err);
    CHECK(recorded.out.find("done 1") != std::string::npos);  // the program ran to its end
    ProcessSpec replay;
    replay.argv = {paths().tracecorn, "replay", "--rootfs", rootfs, trace, "--", binary};
    replay.env = base_env();
    const ProcessResult replayed = run_process(replay);
    CHECK_MESSAGE(replayed.status == 0, replayed.out << replayed.err);
    CHECK_MESSAGE(replayed.out.find("replay matches") != std::string::npos, replayed.out << replayed.err);
  }
  // Without the tree the interpreter is missing on this host: the replay says so, it does not diverge.
  if (std::filesystem::exists("/lib/ld-linux-aarch64.so.1")) return;  // an arm64 multiarch libc on the host
  ProcessSpec bare;
  bare.argv = {paths().tracecorn, "replay", work.path() + "/trace.ucir", "--", binary};
  bare.env = base_env();
  const ProcessResult without = run_process(bare);
  CHECK(without.status == 125);
  CHECK(without.err.find("ld-linux-aarch64.so.1") != std::string::npos);
}

}  // namespace tracecorn::behaviour
