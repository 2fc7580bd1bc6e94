// Role: Debian's own dynamically linked coreutils (/bin/true, /bin/echo,
// /usr/bin/sha256sum, /bin/ls, /usr/bin/sort), python3 and perl as guests
// (the last two with a timer's signal caught by a handler; python3, xz and
// zstd also with threads): they exercise the
// dynamic loader, libc's startup and a real program's syscalls; each is run
// natively and under tracecorn with the same argv, environment and stdin.
//
// Invariants: inputs are small (GNU sort only starts threads for inputs of
// 128Ki lines or more: one case gives it 140,000 lines and --parallel=2, the
// others run single threaded); LC_ALL=C, so no
// locale files are read; `ls -l` output is made stable by fixed mtimes, TZ=UTC
// and an explicit --time-style.
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "fixtures.h"
#include "harness.h"

namespace tracecorn::behaviour {
namespace {

ProcessSpec program(std::vector<std::string> argv, std::string stdin_data = "") {
  ProcessSpec spec;
  spec.argv = std::move(argv);
  spec.env = base_env();
  spec.stdin_data = std::move(stdin_data);
  spec.cwd = "/";
  spec.timeout = run_timeout();
  return spec;
}

void require_tools(const std::string& binary) {
  const std::string missing = missing_executable(binary, "part of Debian's coreutils") +
                              missing_executable(paths().tracecorn, "build the tracecorn target");
  REQUIRE_MESSAGE(missing.empty(), missing);
}

}  // namespace

TEST_CASE("Debian: /bin/true") {
  require_tools("/bin/true");
  TRACECORN_CHECK_SAME_BEHAVIOUR(program({"/bin/true"}));
  TRACECORN_CHECK_SAME_BEHAVIOUR(program({"/bin/true", "ignored", "arguments"}));
  TRACECORN_CHECK_SAME_BEHAVIOUR(program({"/bin/true", "--version"}));
}

TEST_CASE("Debian: /bin/echo") {
  require_tools("/bin/echo");
  TRACECORN_CHECK_SAME_BEHAVIOUR(program({"/bin/echo", "hello", "world"}));
  TRACECORN_CHECK_SAME_BEHAVIOUR(program({"/bin/echo", "-n", "no newline"}));
  TRACECORN_CHECK_SAME_BEHAVIOUR(program({"/bin/echo", "-e", "a\\tb\\x41\\0101"}));
}

TEST_CASE("Debian: /usr/bin/sha256sum") {
  require_tools("/usr/bin/sha256sum");
  TempDir dir("debian-sha256sum");
  write_file(dir / "payload", payload(256 * 1024));
  write_file(dir / "text", sample_text());
  TRACECORN_CHECK_SAME_BEHAVIOUR(program({"/usr/bin/sha256sum", dir / "payload", dir / "text"}));
  TRACECORN_CHECK_SAME_BEHAVIOUR(program({"/usr/bin/sha256sum"}, payload(64 * 1024)));
  TRACECORN_CHECK_SAME_BEHAVIOUR(program({"/usr/bin/sha256sum", dir / "missing"}));  // status 1
  // --check reads a list back and opens each file named in it.
  ProcessSpec make_sums = program({"/usr/bin/sha256sum", "payload", "text"});
  make_sums.cwd = dir.path();
  const ProcessResult sums = run_process(make_sums);
  REQUIRE_MESSAGE(sums.status == 0, sums.describe_status() << "\n" << sums.err);
  write_file(dir / "SUMS", sums.out);
  ProcessSpec check = program({"/usr/bin/sha256sum", "--check", "SUMS"});
  check.cwd = dir.path();
  TRACECORN_CHECK_SAME_BEHAVIOUR(check);
}

TEST_CASE("Debian: /bin/ls of a prepared directory") {
  require_tools("/bin/ls");
  TempDir dir("debian-ls");
  prepare_listing_dir(dir.path());
  TRACECORN_CHECK_SAME_BEHAVIOUR(program({"/bin/ls", dir.path()}));
  TRACECORN_CHECK_SAME_BEHAVIOUR(program({"/bin/ls", "-1aF", dir.path()}));
  TRACECORN_CHECK_SAME_BEHAVIOUR(
      program({"/bin/ls", "-ln", "--time-style=+%Y-%m-%d %H:%M:%S", dir.path(), dir / "beta"}));
  TRACECORN_CHECK_SAME_BEHAVIOUR(program({"/bin/ls", "-R", dir.path()}));
  TRACECORN_CHECK_SAME_BEHAVIOUR(program({"/bin/ls", dir / "missing"}));  // status 2
}

TEST_CASE("Debian: /usr/bin/sort") {
  require_tools("/usr/bin/sort");
  TempDir dir("debian-sort");
  write_file(dir / "text", sample_text());
  TRACECORN_CHECK_SAME_BEHAVIOUR(program({"/usr/bin/sort"}, sample_text()));
  TRACECORN_CHECK_SAME_BEHAVIOUR(program({"/usr/bin/sort", "-n", dir / "text"}));
  TRACECORN_CHECK_SAME_BEHAVIOUR(program({"/usr/bin/sort", "-r", "-u", dir / "text"}));
  TRACECORN_CHECK_SAME_BEHAVIOUR(program({"/usr/bin/sort", "-t", ",", "-k", "2,2n"}, "x,3\ny,1\nz,2\n"));
}


TEST_CASE("Debian: python3 and perl catch their timer's SIGALRM in a handler") {
  // A busy loop with no syscall: the signal comes at a block boundary; the
  // handler prints and exits with its own status.
  require_tools("/usr/bin/python3");
  require_tools("/usr/bin/perl");
  TRACECORN_CHECK_SAME_BEHAVIOUR(program(
      {"/usr/bin/python3", "-S", "-c",
       "import signal\n"
       "def on_alarm(number, frame):\n    print('alarm', number)\n    raise SystemExit(3)\n"
       "signal.signal(signal.SIGALRM, on_alarm)\nsignal.setitimer(signal.ITIMER_REAL, 0.2)\nwhile True: pass\n"}));
  TRACECORN_CHECK_SAME_BEHAVIOUR(program(
      {"/usr/bin/perl", "-e", "$SIG{ALRM} = sub { print \"alarm\\n\"; exit 4 }; alarm 1; 1 while 1;"}));
}

TEST_CASE("Debian: python3 threads and a thread pool") {
  const std::string missing = missing_executable("/usr/bin/python3", "apt-get install python3");
  REQUIRE_MESSAGE(missing.empty(), missing);
  TRACECORN_CHECK_SAME_BEHAVIOUR(program(
      {"/usr/bin/python3", "-S", "-c",
       "import threading, concurrent.futures\n"
       "results = [0] * 3\n"
       "def work(i):\n    results[i] = sum(range(i * 1000, (i + 1) * 1000))\n"
       "ts = [threading.Thread(target=work, args=(i,)) for i in range(3)]\n"
       "[t.start() for t in ts]; [t.join() for t in ts]\n"
       "print('threads', results, threading.active_count())\n"
       "with concurrent.futures.ThreadPoolExecutor(max_workers=3) as pool:\n"
       "    print('pool', sorted(pool.map(lambda x: x * x, range(8))))\n"
       "cond = threading.Condition(); box = []\n"
       "def take():\n    with cond:\n        cond.wait_for(lambda: box)\n        print('took', box.pop())\n"
       "t = threading.Thread(target=take); t.start()\n"
       "with cond:\n    box.append(42); cond.notify()\n"
       "t.join()\n"}));
}

TEST_CASE("Debian: xz -T2 and zstd -T2 compress with worker threads") {
  const std::string missing = missing_executable("/usr/bin/xz", "apt-get install xz-utils") +
                              missing_executable("/usr/bin/zstd", "apt-get install zstd");
  REQUIRE_MESSAGE(missing.empty(), missing);
  TempDir dir("threads-compress");
  write_file(dir / "input", sample_text() + payload(96 * 1024));
  // The compressed bytes on stdout must equal the native run's.
  TRACECORN_CHECK_SAME_BEHAVIOUR(program({"/usr/bin/xz", "-T2", "-1", "-c", dir / "input"}));
  TRACECORN_CHECK_SAME_BEHAVIOUR(program({"/usr/bin/zstd", "-T2", "-q", "-c", dir / "input"}));
}

// GNU sort sorts with --parallel's threads once the input has 128 Ki lines
// (SUBTHREAD_LINES_HEURISTIC), whatever nproc says: 140,000 lines here.
TEST_CASE("Debian: sort --parallel=2 sorts 140,000 lines with a second thread, as natively") {
  require_tools("/usr/bin/sort");
  TempDir dir("debian-sort-parallel");
  std::string lines;
  std::uint64_t state = 7;
  for (int i = 0; i < 140000; ++i) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    char line[32];
    std::snprintf(line, sizeof line, "%08llx %d\n", static_cast<unsigned long long>(state >> 32), i);
    lines += line;
  }
  write_file(dir / "lines", lines);
  const ProcessSpec spec = program({"/usr/bin/sort", "--parallel=2", "-S", "64M", dir / "lines"});
  const std::string log = dir / "syscalls.log";
  const ProcessResult native = run_process(spec), emulated = run_process(under_tracecorn(spec, {"--syscall-log", log}));
  const std::string diff = compare_runs(spec, native, emulated);
  CHECK_MESSAGE(diff.empty(), diff);
  CHECK(native.out.size() == lines.size());
  std::ifstream log_file(log);
  const std::string syscalls((std::istreambuf_iterator<char>(log_file)), std::istreambuf_iterator<char>());
  CHECK_MESSAGE(syscalls.find("clone") != std::string::npos, "sort started no thread: " << syscalls.substr(0, 2000));
}

}  // namespace tracecorn::behaviour
