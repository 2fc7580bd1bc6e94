// Role: the core behaviour check: every guest sample (samples/guest/*.c; the
// list comes from the folder) in every link variant runs natively and under
// `tracecorn run --` with the same argv, environment and stdin, and the two
// runs must agree on exit status, stdout and stderr.
//
// One test case per architecture and variant (the rows of
// tests/support/architectures.h), one doctest subcase per sample, so ctest can
// run a single pair with `--test-case="Samples: static" --subcase=hello`.
// Samples cross-built for another architecture (samples/cross.cmake) run under
// qemu-<arch>-static instead of natively: "Samples: aarch64 static".
// Invariants: each run gets its own fresh {tmp} directory; a sample's "exit:"
// directive is checked against the native run first, so a broken sample is
// reported as such rather than as a tracecorn bug.
#include <string>
#include <string_view>
#include <vector>

#include "harness.h"
#include "qemu_deviations.h"
#include "sample_spec.h"
#include "tests/support/architectures.h"
#include "tests/support/test_case_per_row.h"

namespace tracecorn::behaviour {
namespace {

void check_sample(const SampleSpec& sample, const std::string& variant) {
  const std::string binary = paths().samples_binary + "/" + variant + "/" + sample.name;
  const std::string missing = missing_executable(binary, "build the guest_samples target");
  REQUIRE_MESSAGE(missing.empty(), missing);
  const std::string tracecorn_missing = missing_executable(paths().tracecorn, "build the tracecorn target");
  REQUIRE_MESSAGE(tracecorn_missing.empty(), tracecorn_missing);

  TempDir native_dir(sample.name + "-native");
  TempDir emulated_dir(sample.name + "-emulated");
  const ProcessSpec native_spec = sample.process(binary, native_dir.path());
  const ProcessResult native = run_process(native_spec);
  if (sample.expected_exit) {
    CHECK_MESSAGE(native.status == *sample.expected_exit,
                  "the sample itself misbehaves natively: expected status " << *sample.expected_exit << ", got "
                                                                           << native.describe_status() << "\n"
                                                                           << printable(native.err));
  }
  const ProcessResult emulated = run_process(under_tracecorn(sample.process(binary, emulated_dir.path())));
  const std::string diff = compare_runs(native_spec, native, emulated);
  CHECK_MESSAGE(diff.empty(), diff);
}

void check_all_samples(const std::string& variant) {
  std::vector<std::string> errors;
  const auto samples = discover_samples(paths().samples_source, errors);
  REQUIRE_MESSAGE(!samples.empty(), "no samples found in " << paths().samples_source);
  for (const auto& sample : samples) {
    SUBCASE(sample.name.c_str()) {
      for (const auto& e : errors)
        if (e.rfind(sample.name + ".c:", 0) == 0) FAIL(e);
      check_sample(sample, variant);
    }
  }
}

// A sample cross-built for `arch`: the reference run is qemu-<arch>-static
// (the same argv, environment, stdin), or the native host build for the
// samples in qemu_deviations.cpp; tracecorn must agree with it.
void check_cross_sample(const SampleSpec& sample, const std::string& arch, const std::string& variant) {
  const std::string binary = cross_samples_binary(arch) + "/" + variant + "/" + sample.name;
  const std::string qemu = qemu_for(arch);
  const std::string missing = missing_executable(binary, "build guest_samples_" + arch + " (scripts/setup.sh installs the cross compiler)") +
                              missing_executable(qemu, "apt-get install qemu-user-static") +
                              missing_executable(paths().tracecorn, "build the tracecorn target");
  REQUIRE_MESSAGE(missing.empty(), missing);

  TempDir reference_dir(sample.name + "-qemu");
  TempDir emulated_dir(sample.name + "-emulated");
  const bool use_native = qemu_deviates(sample.name, arch);
  // arm's static-marm (ARM code instead of Thumb-2) has no host build: its reference is the host's static one.
  const std::string native_variant = variant == "static-marm" ? "static" : variant;
  ProcessSpec reference_spec =
      sample.process(use_native ? paths().samples_binary + "/" + native_variant + "/" + sample.name : binary,
                     reference_dir.path());
  if (!use_native) {
    std::vector<std::string> prefix = {qemu};
    for (const auto& option : qemu_cpu_options(arch)) prefix.push_back(option);
    reference_spec.argv.insert(reference_spec.argv.begin(), prefix.begin(), prefix.end());
  }
  const ProcessResult reference = without_qemu_messages(run_process(reference_spec));
  if (sample.expected_exit) {
    CHECK_MESSAGE(reference.status == *sample.expected_exit,
                  "the sample itself misbehaves under " << qemu << ": expected status " << *sample.expected_exit
                                                        << ", got " << reference.describe_status());
  }
  const ProcessResult emulated = run_process(under_tracecorn(sample.process(binary, emulated_dir.path())));
  const std::string diff = compare_runs(reference_spec, reference, emulated);
  CHECK_MESSAGE(diff.empty(), "(the \"native\" run below is " << (use_native ? "the host build, natively" : qemu)
                                                                << ")\n" << diff);
}

void check_all_cross_samples(const std::string& arch, const std::string& variant) {
  std::vector<std::string> errors;
  const auto samples = discover_samples(paths().samples_source, errors);
  REQUIRE_MESSAGE(!samples.empty(), "no samples found in " << paths().samples_source);
  for (const auto& sample : samples) {
    if (!sample.runs_on(arch)) continue;
    SUBCASE(sample.name.c_str()) {
      for (const auto& e : errors)
        if (e.rfind(sample.name + ".c:", 0) == 0) FAIL(e);
      check_cross_sample(sample, arch, variant);
    }
  }
}

using test_support::SampleBuild;

// Every architecture of tests/support/architectures.h in every variant its
// samples are built in: one case each, "Samples: static" for the host's,
// "Samples: aarch64 static" for the others' (tests/behaviour/CMakeLists.txt
// registers one ctest entry per case and sample).
constexpr auto kSampleBuilds = test_support::sample_builds_where<&test_support::any_sample_build>();

std::string samples_case_name(const SampleBuild& build) { return test_support::sample_build_case_name("Samples", build); }

void check_sample_build(const SampleBuild& build) {
  if (build.architecture->is_host) check_all_samples(std::string(build.variant));
  else check_all_cross_samples(std::string(build.architecture->name), std::string(build.variant));
}

}  // namespace

TRACECORN_TEST_CASE_PER_ROW(kSampleBuilds, samples_case_name, check_sample_build);

// Beside the comparison above: the socketcall numbers Linux does not have are
// refused (EINVAL, as natively) and named once each on tracecorn's stderr.
TEST_CASE("Compat32: i386 socketcall numbers Linux does not have are refused with EINVAL and named on stderr") {
  ProcessSpec spec;
  spec.argv = {paths().tracecorn, "run", "--", cross_samples_binary("i386") + "/static/compat32_blocks"};
  spec.env = base_env();
  spec.timeout = run_timeout();
  const ProcessResult result = run_process(spec);
  CHECK_MESSAGE(result.status == 0, result.describe_status() << "\n" << result.err);
  CHECK(result.out.find("socketcall(21): EINVAL\n") != std::string::npos);
  for (const std::string call : {"0", "21", "-1"})
    CHECK_MESSAGE(result.err.find("tracecorn: socketcall " + call + ": no such call") != std::string::npos, result.err);
}

}  // namespace tracecorn::behaviour
