// Role: `tracecorn run` as a user meets it: limits (--max-insns, --timeout),
// --rootfs (static and dynamic programs, escapes refused), the environment
// options, and bad input (missing file, not an ELF, a directory, a truncated
// ELF): a one-line "tracecorn: " error naming the file and a non-zero status,
// never a crash.
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include "harness.h"

namespace tracecorn::behaviour {
namespace {

ProcessSpec tracecorn_run(std::vector<std::string> options, std::vector<std::string> command) {
  ProcessSpec spec;
  spec.argv = {paths().tracecorn, "run"};
  spec.argv.insert(spec.argv.end(), options.begin(), options.end());
  spec.argv.push_back("--");
  spec.argv.insert(spec.argv.end(), command.begin(), command.end());
  spec.env = base_env();
  spec.timeout = run_timeout();
  return spec;
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// One line, starting with "tracecorn: ".
void check_one_error_line(const ProcessResult& result, const std::string& must_name) {
  CHECK(count_tracecorn_lines(result.err) == 1);
  CHECK(drop_tracecorn_lines(result.err).empty());
  CHECK_MESSAGE(contains(result.err, must_name), result.err);
  CHECK(result.signal == 0);
}

}  // namespace

TEST_CASE("Cli: --max-insns and --timeout stop a guest that never ends, with status 124") {
  const ProcessResult counted = run_process(tracecorn_run({"--max-insns", "5000000"}, {paths().busybox, "yes"}));
  CHECK(counted.status == 124);
  CHECK_MESSAGE(contains(counted.err, "tracecorn: stopped: --max-insns 5000000 reached"), counted.err);
  CHECK(counted.out.size() > 0);

  const ProcessResult timed = run_process(tracecorn_run({"--timeout", "0.5"}, {paths().busybox, "sh", "-c", "while :; do :; done"}));
  CHECK(timed.status == 124);
  CHECK_MESSAGE(contains(timed.err, "tracecorn: stopped: --timeout reached"), timed.err);
  CHECK(timed.seconds < 10);
}

TEST_CASE("Cli: --stats prints plausible instruction and syscall counts and the time") {
  const ProcessResult result = run_process(tracecorn_run({"--stats"}, {paths().busybox, "echo", "hi"}));
  CHECK(result.status == 0);
  CHECK(result.out == "hi\n");
  std::smatch match;
  REQUIRE_MESSAGE(std::regex_search(result.err, match,
                                    std::regex("tracecorn: ([0-9]+) instructions, ([0-9]+) syscalls, [0-9.]+ s")),
                  result.err);
  CHECK(std::stoull(match[1]) > 1000);     // busybox's start-up alone runs thousands
  CHECK(std::stoull(match[1]) < 10000000);
  CHECK(std::stoull(match[2]) >= 3);       // at least a write and exit_group
}

TEST_CASE("Cli: --rootfs runs a static program on the tree and refuses escapes") {
  TempDir root("rootfs-static");
  std::filesystem::create_directories(root / "data");
  write_file(root / "data/inside.txt", "inside the rootfs\n");
  TempDir outside("rootfs-outside");
  write_file(outside / "secret.txt", "outside\n");
  std::filesystem::create_symlink(outside / "secret.txt", root / "data/link");

  const ProcessResult inside = run_process(tracecorn_run({"--rootfs", root.path()}, {paths().busybox, "cat", "/data/inside.txt"}));
  CHECK(inside.status == 0);
  CHECK(inside.out == "inside the rootfs\n");

  // The same file through .., through an absolute symlink, and by the host path: none reaches outside.
  const std::string relative_escape = "/../../../../../../" + outside.path() + "/secret.txt";
  for (const std::string& path : {relative_escape, std::string("/data/link"), outside.path() + "/secret.txt"}) {
    CAPTURE(path);
    const ProcessResult escaped = run_process(tracecorn_run({"--rootfs", root.path()}, {paths().busybox, "cat", path}));
    CHECK(escaped.status != 0);
    CHECK_FALSE(contains(escaped.out, "outside"));
  }
  // The guest sees the rootfs as "/".
  const ProcessResult listing = run_process(tracecorn_run({"--rootfs", root.path()}, {paths().busybox, "ls", "/"}));
  CHECK(listing.out == "data\n");
}

TEST_CASE("Cli: --rootfs gives a dynamic program its interpreter and libraries from the tree") {
  TempDir root("rootfs-dynamic");
  // A minimal tree: the sample's interpreter, libc and libm (a clang build links it), copied in.
  for (const std::string lib : {"/lib64/ld-linux-x86-64.so.2", "/lib/x86_64-linux-gnu/libc.so.6",
                                "/lib/x86_64-linux-gnu/libm.so.6"}) {
    const std::string target = root.path() + lib;
    std::filesystem::create_directories(std::filesystem::path(target).parent_path());
    std::filesystem::copy_file(std::filesystem::canonical(lib), target);
  }
  const std::string sample = paths().samples_binary + "/dynamic/hello";
  const ProcessResult result = run_process(tracecorn_run({"--rootfs", root.path()}, {sample}));
  CHECK(result.status == 3);
  CHECK(result.out == "hello from a tracecorn guest\n");

  // Without libc in the tree, the dynamic loader (from the tree) says so, as it would in a chroot.
  std::filesystem::remove(root.path() + "/lib/x86_64-linux-gnu/libc.so.6");
  const ProcessResult missing = run_process(tracecorn_run({"--rootfs", root.path()}, {sample}));
  CHECK(missing.status == 127);
  CHECK_MESSAGE(contains(missing.err, "libc.so.6"), missing.err);
}

TEST_CASE("Cli: --env, --unset-env and --clear-env shape the guest's environment") {
  const ProcessResult set = run_process(tracecorn_run({"--env", "GREETING=hi there", "--unset-env", "TZ"},
                                                      {paths().busybox, "env"}));
  CHECK(contains(set.out, "GREETING=hi there\n"));
  CHECK_FALSE(contains(set.out, "TZ="));
  CHECK(contains(set.out, "PATH="));
  const ProcessResult cleared = run_process(tracecorn_run({"--clear-env", "--env", "ONLY=1"}, {paths().busybox, "env"}));
  CHECK(cleared.out == "ONLY=1\n");
}

TEST_CASE("Cli: an unknown syscall is named once on stderr and answered ENOSYS") {
  const ProcessResult result = run_process(tracecorn_run({}, {paths().samples_binary + "/static/unknown_syscall"}));
  CHECK(result.status == 0);
  CHECK(count_tracecorn_lines(result.err) == 1);
  CHECK_MESSAGE(contains(result.err, "tracecorn: unsupported syscall 1000: returning ENOSYS"), result.err);
  CHECK(contains(result.out, "still running"));
}

TEST_CASE("Cli: bad programs get one clear error line and a distinct status") {
  TempDir dir("bad-input");
  const ProcessResult missing = run_process(tracecorn_run({}, {dir / "no-such-program"}));
  CHECK(missing.status == 127);
  check_one_error_line(missing, dir / "no-such-program");

  // A `#!` script runs its interpreter (binfmt_script), when it may be executed.
  write_file(dir / "script.sh", "#!/bin/sh\necho hi\n");
  const ProcessResult script = run_process(tracecorn_run({}, {dir / "script.sh"}));
  CHECK(script.status == 126);
  check_one_error_line(script, "cannot run the script: Permission denied");
  std::filesystem::permissions(dir / "script.sh", std::filesystem::perms::owner_exec, std::filesystem::perm_options::add);
  const ProcessResult ran = run_process(tracecorn_run({}, {dir / "script.sh"}));
  CHECK(ran.status == 0);
  CHECK(ran.out == "hi\n");
  write_file(dir / "text", "just text\n");
  const ProcessResult text = run_process(tracecorn_run({}, {dir / "text"}));
  CHECK(text.status == 126);
  check_one_error_line(text, "not an ELF file");

  const ProcessResult directory = run_process(tracecorn_run({}, {dir.path()}));
  CHECK(directory.status == 126);
  check_one_error_line(directory, "is a directory");

  // A truncated copy of a real program: the error names the file and the offset.
  std::ifstream in(paths().busybox, std::ios::binary);
  std::string bytes(3000, '\0');
  REQUIRE(in.read(bytes.data(), static_cast<std::streamsize>(bytes.size())));
  write_file(dir / "truncated", bytes.substr(0, 3000));
  const ProcessResult truncated = run_process(tracecorn_run({}, {dir / "truncated"}));
  CHECK(truncated.status == 126);
  check_one_error_line(truncated, dir / "truncated");
  CHECK_MESSAGE(contains(truncated.err, "at offset 0x"), truncated.err);

  const ProcessResult usage = run_process(tracecorn_run({"--no-such-option"}, {"/bin/true"}));
  CHECK(usage.status == 125);
}

}  // namespace tracecorn::behaviour
