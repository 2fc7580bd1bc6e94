// Role: Debian's static busybox (/bin/busybox, x86-64, not PIE) as a body of
// real-world guest code nobody here wrote: each applet run natively and under
// tracecorn with the same argv, environment and stdin must agree.
//
// Invariants: read-only inputs (files, the prepared listing directory) are
// shared by both runs; applets that write (cp, mkdir, rm, gzip) run in two
// identically prepared directories, one per side, and after the steps the two
// trees must be identical too (names, types, modes, sizes, contents).
#include <string>
#include <vector>

#include "fixtures.h"
#include "harness.h"

namespace tracecorn::behaviour {
namespace {

ProcessSpec busybox(std::vector<std::string> args, std::string stdin_data = "", std::string cwd = "") {
  ProcessSpec spec;
  spec.argv = {paths().busybox};
  spec.argv.insert(spec.argv.end(), args.begin(), args.end());
  spec.env = base_env();
  spec.stdin_data = std::move(stdin_data);
  spec.cwd = cwd.empty() ? "/" : cwd;
  spec.timeout = run_timeout();
  return spec;
}

void require_tools() {
  const std::string missing = missing_executable(paths().busybox, "apt-get install busybox-static") +
                              missing_executable(paths().tracecorn, "build the tracecorn target");
  REQUIRE_MESSAGE(missing.empty(), missing);
}

// Runs each step in `native_dir` natively and in `emulated_dir` under
// tracecorn, comparing every step, then compares the two trees.
void check_steps_in_dirs(const std::vector<std::vector<std::string>>& steps, const TempDir& native_dir,
                         const TempDir& emulated_dir) {
  for (const auto& step : steps) {
    CAPTURE(quote_command(step));
    const ProcessSpec native_spec = busybox(step, "", native_dir.path());
    const ProcessResult native = run_process(native_spec);
    const ProcessResult emulated = run_process(under_tracecorn(busybox(step, "", emulated_dir.path())));
    const std::string diff = compare_runs(native_spec, native, emulated);
    CHECK_MESSAGE(diff.empty(), diff);
  }
  const std::string diff = describe_difference("native tree", snapshot_tree(native_dir.path()), "tracecorn tree",
                                               snapshot_tree(emulated_dir.path()));
  CHECK_MESSAGE(diff.empty(), "the directories differ after the steps\n" << diff);
}

}  // namespace

TEST_CASE("Busybox: echo") {
  require_tools();
  TRACECORN_CHECK_SAME_BEHAVIOUR(busybox({"echo", "hello", "world"}));
  TRACECORN_CHECK_SAME_BEHAVIOUR(busybox({"echo", "-n", "no newline"}));
  TRACECORN_CHECK_SAME_BEHAVIOUR(busybox({"echo", "-e", "tab\\there\\nsecond line"}));
}

TEST_CASE("Busybox: cat") {
  require_tools();
  TempDir dir("busybox-cat");
  write_file(dir / "text", sample_text());
  TRACECORN_CHECK_SAME_BEHAVIOUR(busybox({"cat"}, sample_text()));
  TRACECORN_CHECK_SAME_BEHAVIOUR(busybox({"cat", "-n", dir / "text"}));
  TRACECORN_CHECK_SAME_BEHAVIOUR(busybox({"cat", dir / "text", "-", dir / "text"}, "from stdin\n"));
  TRACECORN_CHECK_SAME_BEHAVIOUR(busybox({"cat", dir / "missing"}));  // error message, status 1
}

TEST_CASE("Busybox: sha256sum and md5sum") {
  require_tools();
  TempDir dir("busybox-sums");
  write_file(dir / "payload", payload(256 * 1024));
  write_file(dir / "empty", "");
  TRACECORN_CHECK_SAME_BEHAVIOUR(busybox({"sha256sum", dir / "payload", dir / "empty"}));
  TRACECORN_CHECK_SAME_BEHAVIOUR(busybox({"md5sum", dir / "payload", dir / "empty"}));
  TRACECORN_CHECK_SAME_BEHAVIOUR(busybox({"sha256sum"}, payload(64 * 1024)));
  TRACECORN_CHECK_SAME_BEHAVIOUR(busybox({"md5sum", "-"}, sample_text()));
}

TEST_CASE("Busybox: wc sort uniq") {
  require_tools();
  TempDir dir("busybox-text");
  write_file(dir / "text", sample_text());
  TRACECORN_CHECK_SAME_BEHAVIOUR(busybox({"wc"}, sample_text()));
  TRACECORN_CHECK_SAME_BEHAVIOUR(busybox({"wc", "-l", "-w", "-c", dir / "text"}));
  TRACECORN_CHECK_SAME_BEHAVIOUR(busybox({"sort"}, sample_text()));
  TRACECORN_CHECK_SAME_BEHAVIOUR(busybox({"sort", "-n", dir / "text"}));
  TRACECORN_CHECK_SAME_BEHAVIOUR(busybox({"sort", "-r", "-u", dir / "text"}));
  TRACECORN_CHECK_SAME_BEHAVIOUR(busybox({"uniq", "-c"}, "a\na\nb\nc\nc\nc\na\n"));
  TRACECORN_CHECK_SAME_BEHAVIOUR(busybox({"uniq", "-d"}, "a\na\nb\nc\nc\n"));
}

TEST_CASE("Busybox: head tail tr seq") {
  require_tools();
  TempDir dir("busybox-filters");
  write_file(dir / "text", sample_text());
  TRACECORN_CHECK_SAME_BEHAVIOUR(busybox({"head", "-n", "3", dir / "text"}));
  TRACECORN_CHECK_SAME_BEHAVIOUR(busybox({"head", "-c", "20"}, sample_text()));
  TRACECORN_CHECK_SAME_BEHAVIOUR(busybox({"tail", "-n", "3", dir / "text"}));
  TRACECORN_CHECK_SAME_BEHAVIOUR(busybox({"tail", "-c", "15"}, sample_text()));
  TRACECORN_CHECK_SAME_BEHAVIOUR(busybox({"tr", "a-z", "A-Z"}, sample_text()));
  TRACECORN_CHECK_SAME_BEHAVIOUR(busybox({"tr", "-d", "aeiou"}, sample_text()));
  TRACECORN_CHECK_SAME_BEHAVIOUR(busybox({"tr", "-s", " "}, sample_text()));
  TRACECORN_CHECK_SAME_BEHAVIOUR(busybox({"seq", "10"}));
  TRACECORN_CHECK_SAME_BEHAVIOUR(busybox({"seq", "5", "-2", "-5"}));
  TRACECORN_CHECK_SAME_BEHAVIOUR(busybox({"seq", "-w", "8", "11"}));
}

TEST_CASE("Busybox: ls of a prepared directory") {
  require_tools();
  TempDir dir("busybox-ls");
  prepare_listing_dir(dir.path());
  TRACECORN_CHECK_SAME_BEHAVIOUR(busybox({"ls", dir.path()}));
  TRACECORN_CHECK_SAME_BEHAVIOUR(busybox({"ls", "-1aF", dir.path()}));
  // -l without -a: "..", whose times other tests keep changing, stays out.
  TRACECORN_CHECK_SAME_BEHAVIOUR(busybox({"ls", "-ln", dir.path(), dir / "beta"}));
  TRACECORN_CHECK_SAME_BEHAVIOUR(busybox({"ls", "-R", "."}, "", dir.path()));
  TRACECORN_CHECK_SAME_BEHAVIOUR(busybox({"ls", dir / "missing"}));  // error message, status 1
}

TEST_CASE("Busybox: cp mkdir rm in a temporary directory") {
  require_tools();
  TempDir native_dir("busybox-files-native"), emulated_dir("busybox-files-emulated");
  for (const TempDir* d : {&native_dir, &emulated_dir}) write_file(*d / "source.txt", sample_text());
  check_steps_in_dirs(
      {
          {"mkdir", "-p", "a/b/c"},
          {"mkdir", "a"},  // fails: exists
          {"mkdir", "-m", "700", "private"},
          {"cp", "source.txt", "a/b/c/copy.txt"},
          {"cp", "-r", "a", "a2"},
          {"cp", "missing.txt", "a"},  // fails: no such file
          {"rm", "a/b/c/copy.txt"},
          {"rm", "a"},  // fails: is a directory
          {"rm", "-r", "a"},
          {"rm", "-f", "missing.txt"},
          {"ls", "-R", "."},
      },
      native_dir, emulated_dir);
}

TEST_CASE("Busybox: gzip and gunzip round trip") {
  require_tools();
  const std::string data = payload(200 * 1024);

  // Through pipes: compress on both sides, compare; decompress the native result on both sides.
  const ProcessSpec compress = busybox({"gzip", "-c"}, data);
  const ProcessResult native_gz = run_process(compress);
  REQUIRE_MESSAGE(native_gz.status == 0, "native gzip failed: " << native_gz.describe_status() << "\n" << native_gz.err);
  const ProcessResult emulated_gz = run_process(under_tracecorn(compress));
  std::string diff = compare_runs(compress, native_gz, emulated_gz);
  CHECK_MESSAGE(diff.empty(), diff);

  const ProcessSpec decompress = busybox({"gunzip", "-c"}, native_gz.out);
  const ProcessResult native_plain = run_process(decompress);
  const ProcessResult emulated_plain = run_process(under_tracecorn(decompress));
  diff = compare_runs(decompress, native_plain, emulated_plain);
  CHECK_MESSAGE(diff.empty(), diff);
  diff = describe_difference("original", data, "tracecorn gunzip output", emulated_plain.out);
  CHECK_MESSAGE(diff.empty(), "the round trip lost data\n" << diff);

  // In place on files: data.txt -> data.txt.gz -> data.txt.
  TempDir native_dir("busybox-gzip-native"), emulated_dir("busybox-gzip-emulated");
  for (const TempDir* d : {&native_dir, &emulated_dir}) write_file(*d / "data.txt", data);
  check_steps_in_dirs({{"gzip", "-9", "data.txt"}, {"ls", "."}, {"gunzip", "data.txt.gz"}, {"ls", "."}}, native_dir,
                      emulated_dir);
}

}  // namespace tracecorn::behaviour
