// Role: the core behaviour check: every guest sample (samples/guest/*.c; the
// list comes from the folder) in every link variant runs natively and under
// `tracecorn run --` with the same argv, environment and stdin, and the two
// runs must agree on exit status, stdout and stderr.
//
// One test case per variant, one doctest subcase per sample, so ctest can run
// a single pair with `--test-case="Samples: static" --subcase=hello`.
// Invariants: each run gets its own fresh {tmp} directory; a sample's "exit:"
// directive is checked against the native run first, so a broken sample is
// reported as such rather than as a tracecorn bug.
#include <string>
#include <vector>

#include "harness.h"
#include "sample_spec.h"

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

}  // namespace

TEST_CASE("Samples: static") { check_all_samples("static"); }
TEST_CASE("Samples: static-pie") { check_all_samples("static-pie"); }
TEST_CASE("Samples: dynamic") { check_all_samples("dynamic"); }

}  // namespace tracecorn::behaviour
