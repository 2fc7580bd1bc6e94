// Role: guest threads beyond "the output equals the native run" (which the
// samples threads, futex_ops and robust_mutex check on every architecture,
// and debian_test.cpp for Debian's threaded programs): the schedule is
// deterministic (two runs of a multi-threaded sample make the same syscalls
// from the same threads in the same order), and every count of CPUs says one.
// Invariants: thread ids differ between runs only by the pid they start
// from; the comparison renames each run's ids in order of first appearance
// and leaves arguments out (see schedule_of).
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "harness.h"
#include "text_diff.h"

namespace tracecorn::behaviour {
namespace {

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// The log reduced to what the program decides: each line's thread, syscall
// name and result, without the arguments (registers a call does not read
// hold leftovers, such as the stack canary from AT_RANDOM), and with every
// thread id (the "[tid]" prefixes, and results such as clone's or gettid's)
// replaced by T0, T1... in order of first appearance.
std::string schedule_of(const std::string& log) {
  std::map<std::string, std::string> names;
  auto symbolic = [&](const std::string& value) {
    const auto found = names.find(value);
    return found == names.end() ? value : found->second;
  };
  std::istringstream first_pass(log);
  for (std::string line; std::getline(first_pass, line);) {
    const auto close = line.find("] ");
    if (line.starts_with('[') && close != std::string::npos && !names.count(line.substr(1, close - 1)))
      names.emplace(line.substr(1, close - 1), "T" + std::to_string(names.size()));
  }
  std::istringstream lines(log);
  std::string result;
  for (std::string line; std::getline(lines, line);) {
    std::string thread;
    if (line.starts_with('[')) {
      const auto close = line.find("] ");
      if (close == std::string::npos) continue;
      thread = line.substr(1, close - 1);
      line.erase(0, close + 2);
    }
    const auto open = line.find('(');
    const auto equals = line.rfind(") = ");
    if (open == std::string::npos || equals == std::string::npos) continue;
    result += symbolic(thread) + " " + line.substr(0, open) + " = " + symbolic(line.substr(equals + 4)) + "\n";
  }
  return result;
}

std::string syscall_log_of(const std::string& binary, const std::string& log_path) {
  ProcessSpec spec;
  spec.argv = {binary};
  spec.env = base_env();
  spec.timeout = run_timeout();
  const ProcessResult result = run_process(under_tracecorn(spec, {"--syscall-log", log_path}));
  CHECK_MESSAGE(result.status == 0, binary << ": " << result.describe_status() << "\n" << result.err);
  return read_text(log_path);
}

void check_same_schedule_twice(const std::string& binary) {
  const std::string missing = missing_executable(binary, "build the guest samples") +
                              missing_executable(paths().tracecorn, "build the tracecorn target");
  REQUIRE_MESSAGE(missing.empty(), missing);
  TempDir dir("threads-schedule");
  const std::string first = schedule_of(syscall_log_of(binary, dir / "first.log"));
  const std::string second = schedule_of(syscall_log_of(binary, dir / "second.log"));
  REQUIRE(first.find("\nT1 ") != std::string::npos);  // it did run several threads
  CHECK_MESSAGE(first == second, "two runs of " << binary << " made different syscalls or switched threads "
                                                << "elsewhere:\n"
                                                << describe_difference("first run", first, "second run", second));
}

}  // namespace

TEST_CASE("Threads: the same program gives the same schedule twice") {
  check_same_schedule_twice(paths().samples_binary + "/static/threads");
  check_same_schedule_twice(cross_samples_binary("arm") + "/static/threads");
}

// One engine runs one guest thread at a time: every way a program asks how
// many CPUs it has says 1 (sched_getaffinity for nproc, sysfs's CPU lists for
// glibc's get_nprocs/get_nprocs_conf, which getconf and Python read).
TEST_CASE("Threads: nproc, getconf and Python's cpu_count all see one CPU") {
  const std::string missing = missing_executable(paths().tracecorn, "build the tracecorn target") +
                              missing_executable("/usr/bin/nproc", "coreutils") +
                              missing_executable("/usr/bin/getconf", "libc-bin") +
                              missing_executable("/usr/bin/python3", "apt-get install python3");
  REQUIRE_MESSAGE(missing.empty(), missing);
  ProcessSpec spec;
  spec.env = base_env();
  spec.timeout = 5 * run_timeout();
  spec.argv = {"/bin/sh", "-c",
               "nproc; nproc --all; getconf _NPROCESSORS_ONLN; getconf _NPROCESSORS_CONF; "
               "/usr/bin/python3 -S -c 'import os; print(os.cpu_count(), len(os.sched_getaffinity(0)))'; "
               "cat /sys/devices/system/cpu/online; echo x > /sys/devices/system/cpu/online || echo refused"};
  const ProcessResult result = run_process(under_tracecorn(spec));
  CHECK(result.status == 0);
  CHECK(result.out == "1\n1\n1\n1\n1 1\n0\nrefused\n");
}

}  // namespace tracecorn::behaviour
