// Role: the shared vocabulary of the behaviour tests: where things are
// (tracecorn, the samples, qemu, busybox), the fixed environment every run
// gets, temporary directories, running a program natively and under
// `tracecorn run --`, and comparing two runs.
//
// Called from doctest test bodies on the main thread; not thread safe.
//
// Invariants:
//   - native and emulated runs of one comparison get the same argv (the
//     program path is spelled the same), the same environment (base_env()
//     plus per-test entries) and the same stdin; only the temporary directory
//     differs, and tests never print its name;
//   - the comparison is exit status, stdout, and stderr with every line that
//     starts with "tracecorn: " dropped (tracecorn's own messages);
//   - paths come from compile definitions set by tests/behaviour/CMakeLists.txt
//     and can be overridden by environment variables (TRACECORN_BIN,
//     TRACECORN_SAMPLES_BINARY_DIR, TRACECORN_SAMPLES_SOURCE_DIR, QEMU_X86_64,
//     BUSYBOX), e.g. to point the harness at another build of tracecorn.
#pragma once

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include <doctest/doctest.h>

#include "subprocess.h"
#include "text_diff.h"

namespace tracecorn::behaviour {

struct Paths {
  std::string tracecorn;       // the CLI under test
  std::string samples_source;  // samples/guest (the .c files)
  std::string samples_binary;  // <build>/samples/guest (one folder per variant)
  std::string qemu;            // qemu-x86_64-static, the reference emulator
  std::string busybox;         // Debian's static busybox
};
const Paths& paths();

// The link variants every host sample is built in, in a fixed order (the host
// row's of tests/support/architectures.h).
const std::vector<std::string>& variants();

// Where the samples cross-built for `arch` are: samples_binary + "-" + arch.
std::string cross_samples_binary(const std::string& arch);
// The reference emulator for `arch`: qemu-<arch>-static, or the environment's
// QEMU_<ARCH> (upper case, e.g. QEMU_AARCH64).
std::string qemu_for(const std::string& arch);
// The options that make qemu emulate the CPU tracecorn gives `arch`: -cpu and
// the row's qemu_cpu in tests/support/architectures.h (arm: cortex-a15,
// Unicorn's ARMv7 CPU; qemu's default "max" is an ARMv8 that reports
// AT_PLATFORM v8l; mips and mipsel: 74Kf, Unicorn's default mips32 CPU, where
// qemu's is a 24Kf); empty for the others.
std::vector<std::string> qemu_cpu_options(const std::string& arch);

// The environment every run starts from: PATH, LC_ALL=C, TZ=UTC, HOME.
std::vector<std::string> base_env();

// Per-run wall-clock limit: 20 s (times TRACECORN_TEST_TIMEOUT_SCALE, 4 in the
// sanitized build), or TRACECORN_BEHAVIOUR_TIMEOUT seconds.
std::chrono::milliseconds run_timeout();

// A fresh empty directory under $TMPDIR (or /tmp), removed with its contents
// on destruction. Throws std::system_error if it cannot be created.
class TempDir {
 public:
  explicit TempDir(std::string_view tag);
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  // path() + "/" + relative
  std::string operator/(std::string_view relative) const;

 private:
  std::string path_;
};

// Writes `bytes` to `path` (created or truncated) and, if mtime_epoch >= 0,
// sets its access and modification times to that many seconds after 1970.
// Throws std::system_error on failure.
void write_file(const std::string& path, std::string_view bytes, long long mtime_epoch = 1'000'000'000);

// Sets the modification time of `path` (a file or directory) without
// following symlinks. Throws std::system_error on failure.
void set_mtime(const std::string& path, long long mtime_epoch = 1'000'000'000);

// The same run under tracecorn: argv becomes
// {tracecorn, "run", options..., "--", argv...}; env, stdin, cwd unchanged.
ProcessSpec under_tracecorn(ProcessSpec native, const std::vector<std::string>& options = {});

// `result` without qemu-user's own report of a fatal guest signal on stderr
// ("qemu: uncaught target signal 11 (Segmentation fault) - core dumped"): not
// the guest's output, so dropped before comparing with a qemu reference run.
ProcessResult without_qemu_messages(ProcessResult result);

// `stderr_text` without the lines that start with "tracecorn: ".
std::string drop_tracecorn_lines(std::string_view stderr_text);

// How many lines of `stderr_text` start with "tracecorn: ".
int count_tracecorn_lines(std::string_view stderr_text);

// "" when the runs agree (see the header comment); otherwise a message that
// gives the command, both statuses and a diff of each differing stream.
std::string compare_runs(const ProcessSpec& native_spec, const ProcessResult& native,
                         const ProcessResult& emulated);

// A text listing of the tree under `dir`: one line per entry with its
// relative path, type, permission bits, size and a hash of its contents
// (symlink targets for links), sorted; times and inode numbers left out.
std::string snapshot_tree(const std::string& dir);

// FNV-1a 64 of `bytes`, as 16 hex digits.
std::string fnv1a_hex(std::string_view bytes);

// Returns "" if `path` is an executable file, else a message saying what to build.
std::string missing_executable(const std::string& path, std::string_view how_to_get_it);

}  // namespace tracecorn::behaviour

// Runs `spec` natively and under tracecorn and checks both agree; evaluates
// to nothing. A non-fatal doctest CHECK, so one test can compare many runs.
#define TRACECORN_CHECK_SAME_BEHAVIOUR(spec)                                                     \
  do {                                                                                          \
    const ::tracecorn::behaviour::ProcessSpec& tc_spec_ = (spec);                               \
    const auto tc_native_ = ::tracecorn::behaviour::run_process(tc_spec_);                      \
    const auto tc_emulated_ =                                                                   \
        ::tracecorn::behaviour::run_process(::tracecorn::behaviour::under_tracecorn(tc_spec_)); \
    const std::string tc_diff_ = ::tracecorn::behaviour::compare_runs(tc_spec_, tc_native_, tc_emulated_); \
    CHECK_MESSAGE(tc_diff_.empty(), tc_diff_);                                                  \
  } while (false)
