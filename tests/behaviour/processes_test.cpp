// Role: real programs that start processes, natively and under `tracecorn
// run` with the same argv, environment and stdin: busybox sh pipelines and
// loops calling other applets, GNU tar through a pipe, Debian's zcat and
// gunzip (shell scripts: a `#!` program on tracecorn's command line), find
// -exec, xargs, timeout killing its child (status 124), env and nice chains,
// make with two rules, python3's subprocess and asyncio (epoll, a
// socketpair); and `tracecorn record` of a
// pipeline: one trace per process image (OUT, OUT.PID, OUT.PID.N), each read
// back whole by `tracecorn stat`, and every one replays.
// Invariants: outputs are made order-independent where the host may
// interleave them (sorted listings); every file is in a fresh TempDir.
#include <cctype>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "fixtures.h"
#include "harness.h"
#include "tests/support/architectures.h"

namespace tracecorn::behaviour {
namespace {

ProcessSpec in_dir(std::vector<std::string> argv, const std::string& cwd) {
  ProcessSpec spec;
  spec.argv = std::move(argv);
  spec.env = base_env();
  spec.env.push_back("PATH=/usr/bin:/bin");
  spec.cwd = cwd;
  spec.timeout = run_timeout();
  return spec;
}

// python3 -S -c `code`: importing asyncio or subprocess takes the longest of
// these runs (seconds under tracecorn, tens of them in a sanitized build),
// so its limit is five times the others'.
ProcessSpec python(const std::string& code, const std::string& cwd) {
  ProcessSpec spec = in_dir({"/usr/bin/python3", "-S", "-c", code}, cwd);
  spec.timeout = 5 * run_timeout();
  return spec;
}

void require(std::initializer_list<const char*> programs) {
  std::string missing = missing_executable(paths().tracecorn, "build the tracecorn target");
  for (const char* program : programs) missing += missing_executable(program, "scripts/setup.sh installs it");
  REQUIRE_MESSAGE(missing.empty(), missing);
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// A command line as `tracecorn stat` shows it (recorder/replay/process_tree.h):
// words joined by spaces, a word with a space or a shell character quoted '...'.
std::string shown(const std::vector<std::string>& argv) {
  std::string text;
  for (const auto& word : argv) {
    std::string quoted = word;
    if (word.empty() || word.find_first_of(" \t\n'\"\\$;|&<>*?()") != std::string::npos) {
      quoted = "'";
      for (const char c : word) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
      quoted += "'";
    }
    text += (text.empty() ? "" : " ") + quoted;
  }
  return text;
}

// The strings of strace's ["a", "b"] list starting at `from`.
std::vector<std::string> strace_strings(const std::string& line, std::size_t from) {
  std::vector<std::string> words;
  for (std::size_t at = from; at < line.size() && line[at] != ']'; ++at) {
    if (line[at] != '"') continue;
    std::string word;
    for (++at; at < line.size() && line[at] != '"'; ++at) {
      if (line[at] == '\\' && at + 1 < line.size()) {
        const char next = line[++at];
        word += next == 'n' ? '\n' : next == 't' ? '\t' : next;
      } else {
        word += line[at];
      }
    }
    words.push_back(word);
  }
  return words;
}

// A process tree as "depth: command -> ending" lines, in preorder (a parent's
// images, then its children in fork order): from `strace -f -q -s 4096 -e
// trace=process -o FILE`'s lines (the reference) ...
std::string tree_from_strace(const std::string& log) {
  struct Process {
    std::vector<std::vector<std::string>> images;  // its execs'
    std::vector<std::pair<long, std::size_t>> children;  // pid, how many execs it had made at the fork
    std::string ending = "no exit";
  };
  std::map<long, Process> processes;
  std::map<long, std::vector<std::string>> pending_exec;  // an execve <unfinished ...>
  long root = 0;
  std::istringstream lines(log);
  for (std::string line; std::getline(lines, line);) {
    const long pid = std::atol(line.c_str());
    if (!root) root = pid;
    const std::size_t result = line.rfind(" = ");  // (strace pads short lines before it)
    const long value = result == std::string::npos ? -1 : std::atol(line.c_str() + result + 3);
    if (const std::size_t exec = line.find("execve(\""); exec != std::string::npos) {
      pending_exec[pid] = strace_strings(line, line.find('[', exec));
      if (value != 0) continue;
    } else if (line.find("<... execve resumed>") == std::string::npos || value != 0) {
      if (line.find("+++ exited with ") != std::string::npos)
        processes[pid].ending = "exit " + std::to_string(std::atol(line.c_str() + line.find("with ") + 5));
      else if (const std::size_t killed = line.find("+++ killed by "); killed != std::string::npos)
        processes[pid].ending = line.substr(killed + 4, line.find(' ', killed + 14) - killed - 4);
      else if ((line.find("clone(") != std::string::npos || line.find("<... clone resumed>") != std::string::npos ||
                line.find("fork(") != std::string::npos || line.find("<... vfork resumed>") != std::string::npos) &&
               value > 0)
        processes[pid].children.emplace_back(value, processes[pid].images.size());
      continue;
    }
    processes[pid].images.push_back(pending_exec[pid]);
  }
  std::string text;
  std::function<void(long, std::size_t, std::vector<std::string>)> visit = [&](long pid, std::size_t depth,
                                                                               std::vector<std::string> argv) {
    const Process& process = processes[pid];
    std::vector<std::vector<std::string>> images = process.images;
    if (depth > 0) images.insert(images.begin(), argv);  // a child runs its parent's image until it execs
    for (std::size_t i = 0; i < images.size(); ++i)
      text += std::to_string(depth) + ": " + shown(images[i]) + " -> " +
              (i + 1 < images.size() ? "exec" : process.ending) + "\n";
    for (const auto& [child, execs] : process.children)  // the image it ran at that fork
      visit(child, depth + 1, images.at(depth > 0 ? execs : execs - 1));
  };
  visit(root, 0, {});
  return text;
}

// ... and from `tracecorn stat`'s "process tree" lines.
std::string tree_from_stat(const std::string& out) {
  std::string text;
  std::istringstream lines(out.substr(std::min(out.size(), out.find("process tree ("))));
  std::string line;
  std::getline(lines, line);
  std::size_t depth = 0;
  while (std::getline(lines, line)) {
    const std::size_t indent = line.find_first_not_of(' ');
    if (indent == std::string::npos) break;
    if (std::isdigit(static_cast<unsigned char>(line[indent]))) {
      depth = indent / 2 - 1;
      continue;
    }
    text += std::to_string(depth) + ": " + line.substr(indent, line.rfind("  [") - indent) + "\n";
  }
  return text;
}

// Replays each trace of the tree recorded in `dir` (its files named tree.*)
// on its own (--no-children) and hands `check` each one's path and result.
// Returns how many traces there were and how many said "replay matches".
struct ReplayedTraces {
  std::size_t traces = 0, matched = 0;
};
ReplayedTraces replay_each_trace(const std::string& dir,
                                 const std::function<void(const std::string&, const ProcessResult&)>& check = {}) {
  ReplayedTraces counts;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().filename().string().rfind("tree.", 0) != 0) continue;
    ++counts.traces;
    const std::string path = entry.path().string();
    CAPTURE(path);
    const ProcessResult replayed = run_process(in_dir({paths().tracecorn, "replay", "--no-children", path}, dir));
    CHECK_MESSAGE(replayed.status == 0, replayed.out << replayed.err);
    counts.matched += replayed.out.find("replay matches") != std::string::npos;
    if (check) check(path, replayed);
  }
  return counts;
}

// Records sample `name` (its static build for `arch`) in `format` at `level`
// into a fresh folder, checks that its output holds each of `lines`, and
// replays every trace of its tree on its own: `traces` of them, each must
// match. `check_trace` looks at the first trace too. Nothing is run when that
// architecture's cross compiler is missing.
using test_support::GuestArchitecture;

// Deliberate selections of tests/support/architectures.h's rows, to bound the
// slower process-tree recordings below: the host and one architecture whose
// signal numbers differ from the host's (mipsel); with aarch64 too for a
// second instruction set and page size.
constexpr auto kHostAndMipsel = test_support::guest_architectures({"x86_64", "mipsel"});
constexpr auto kHostAarch64AndMipsel = test_support::guest_architectures({"x86_64", "aarch64", "mipsel"});
constexpr auto kHostAndAarch64 = test_support::guest_architectures({"x86_64", "aarch64"});

void record_and_replay_tree(const std::string& name, const GuestArchitecture& architecture, const std::string& format,
                            const std::string& level, std::initializer_list<const char*> lines, std::size_t traces,
                            const std::function<void(const std::string&, const std::string&)>& check_trace = {},
                            std::initializer_list<const char*> record_options = {}) {
  const std::string arch(architecture.name);
  CAPTURE(arch);
  CAPTURE(format);
  const std::string program =
      (architecture.is_host ? paths().samples_binary : cross_samples_binary(arch)) + "/static/" + name;
  if (!std::filesystem::exists(program)) return;  // that cross compiler is missing
  TempDir dir("processes-" + name + "-" + arch);
  const std::string trace = dir / ("tree." + format);
  std::vector<std::string> argv = {paths().tracecorn, "record", "--format", format, "--level", level, "-o", trace};
  argv.insert(argv.end(), record_options.begin(), record_options.end());
  argv.insert(argv.end(), {"--", program});
  const ProcessResult recorded = run_process(in_dir(argv, dir.path()));
  REQUIRE_MESSAGE(recorded.status == 0, recorded.err);
  for (const char* line : lines) CHECK_MESSAGE(recorded.out.find(line) != std::string::npos, line);
  if (check_trace) check_trace(trace, dir.path());
  const ReplayedTraces replayed = replay_each_trace(dir.path());
  CHECK(replayed.traces == traces);
  CHECK(replayed.matched == traces);
}

}  // namespace

TEST_CASE("Processes: busybox sh pipelines, loops and subshells equal the native run") {
  require({"/bin/busybox"});
  TempDir dir("processes-sh");
  TRACECORN_CHECK_SAME_BEHAVIOUR(in_dir(
      {"/bin/busybox", "sh", "-c",
       "for i in 1 2 3; do echo line $i | busybox tr a-z A-Z; done; (exit 3); echo subshell $?; "
       "echo a b c | busybox wc -w | busybox sed s/3/three/; sh -c 'kill -TERM $$'; echo killed $?; "
       "false | true; echo last $?; busybox seq 1 200 | busybox head -n 2; echo end"},
      dir.path()));
}

TEST_CASE("Processes: tar czf through a pipe, zcat and gunzip scripts equal the native run") {
  require({"/bin/tar", "/bin/gzip", "/bin/zcat", "/bin/gunzip", "/bin/busybox"});
  TempDir dir("processes-tar");
  std::filesystem::create_directories(dir / "tree/sub");
  write_file(dir / "tree/a.txt", sample_text());
  write_file(dir / "tree/sub/b.bin", payload(20000));
  TRACECORN_CHECK_SAME_BEHAVIOUR(
      in_dir({"/bin/busybox", "sh", "-c", "tar czf - tree | tar tzf - | busybox sort"}, dir.path()));
  write_file(dir / "text", sample_text());
  const ProcessResult zipped = run_process(in_dir({"/bin/gzip", "-k", "text"}, dir.path()));
  REQUIRE(zipped.status == 0);
  TRACECORN_CHECK_SAME_BEHAVIOUR(in_dir({"/bin/zcat", "text.gz"}, dir.path()));
  TRACECORN_CHECK_SAME_BEHAVIOUR(in_dir({"/bin/gunzip", "-c", "text.gz"}, dir.path()));
}

TEST_CASE("Processes: find -exec, xargs, timeout, env and nice equal the native run") {
  require({"/usr/bin/find", "/usr/bin/xargs", "/usr/bin/timeout", "/usr/bin/env", "/usr/bin/nice", "/bin/busybox"});
  TempDir dir("processes-tools");
  std::filesystem::create_directories(dir / "tree/sub");
  write_file(dir / "tree/one", "one\n");
  write_file(dir / "tree/sub/two", "two\n");
  TRACECORN_CHECK_SAME_BEHAVIOUR(
      in_dir({"/bin/busybox", "sh", "-c", "find tree -type f -exec md5sum {} + | busybox sort"}, dir.path()));
  ProcessSpec xargs = in_dir({"/usr/bin/xargs", "-n", "2", "echo", "pair:"}, dir.path());
  xargs.stdin_data = "a b c d e\n";
  TRACECORN_CHECK_SAME_BEHAVIOUR(xargs);
  TRACECORN_CHECK_SAME_BEHAVIOUR(in_dir({"/usr/bin/timeout", "1", "sleep", "5"}, dir.path()));  // 124
  TRACECORN_CHECK_SAME_BEHAVIOUR(
      in_dir({"/usr/bin/env", "GREETING=hi", "/usr/bin/nice", "-n", "1", "/bin/sh", "-c", "echo $GREETING; nice"},
             dir.path()));
}

TEST_CASE("Processes: make with two rules and python3's subprocess equal the native run") {
  require({"/usr/bin/make", "/usr/bin/python3"});
  TempDir dir("processes-make");
  write_file(dir / "Makefile", "all: out.txt\n\tcat out.txt\nout.txt:\n\techo built > out.txt\n");
  TRACECORN_CHECK_SAME_BEHAVIOUR(in_dir({"/usr/bin/make", "-s", "-f", "Makefile"}, dir.path()));
  TRACECORN_CHECK_SAME_BEHAVIOUR(python(
      "import subprocess\n"
      "r = subprocess.run(['sh', '-c', 'echo out; echo err >&2; exit 5'], capture_output=True)\n"
      "print(r.returncode, r.stdout, r.stderr)\n"
      "print(subprocess.check_output(['echo', 'checked']))\n",
      dir.path()));
}

TEST_CASE("Processes: python3's asyncio subprocess (epoll, a socketpair, SIGCHLD) equals the native run") {
  require({"/usr/bin/python3"});
  TempDir dir("processes-asyncio");
  TRACECORN_CHECK_SAME_BEHAVIOUR(python(
      "import asyncio\n"
      "async def main():\n"
      "    p = await asyncio.create_subprocess_exec('sh', '-c', 'echo async; exit 4', stdout=asyncio.subprocess.PIPE)\n"
      "    out, _ = await p.communicate()\n"
      "    print(out, p.returncode)\n"
      "    await asyncio.sleep(0.01)\n"
      "asyncio.run(main())\n",
      dir.path()));
}

TEST_CASE("Processes: record writes one trace per process image, each read back whole") {
  require({"/bin/busybox"});
  TempDir dir("processes-record");
  const std::string trace = dir / "pipe.ucir";
  ProcessSpec record = in_dir({paths().tracecorn, "record", "--format", "ucir", "-o", trace, "--", "/bin/busybox",
                               "sh", "-c", "echo hi | busybox tr a-z A-Z; exec busybox true"},
                              dir.path());
  const ProcessResult recorded = run_process(record);
  REQUIRE_MESSAGE(recorded.status == 0, recorded.err);
  CHECK(recorded.out == "HI\n");
  // The shell; its two pipeline children (OUT.PID), of which the second
  // execs busybox for `tr` (OUT.PID.1); and the shell's exec'd image (OUT.ROOTPID.1).
  std::vector<std::string> traces;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path()))
    if (entry.path().filename().string().rfind("pipe.ucir", 0) == 0) traces.push_back(entry.path().string());
  CHECK(traces.size() == 5);
  std::size_t exec_images = 0;
  for (const auto& path : traces) {
    CAPTURE(path);
    exec_images += path.size() > 2 && path.compare(path.size() - 2, 2, ".1") == 0;
    const ProcessResult stat = run_process(in_dir({paths().tracecorn, "stat", path}, dir.path()));
    CHECK_MESSAGE(stat.status == 0, stat.err);
    CHECK(stat.out.find(" events, ") != std::string::npos);
  }
  CHECK(exec_images == 2);
  // Each trace but the first is named by one fork or exec event of another
  // (`dump --kind process`: "#N process forked child PID (clone), trace
  // pipe.ucir.PID" and "#N process PID exec PATH, trace pipe.ucir.PID.1").
  std::multiset<std::string> named, expected;
  std::size_t forks = 0, execs = 0;
  for (const auto& path : traces) {
    const std::string name = std::filesystem::path(path).filename().string();
    if (name != "pipe.ucir") expected.insert(name);
    const ProcessResult dumped = run_process(in_dir({paths().tracecorn, "dump", "--kind", "process", path}, dir.path()));
    CHECK_MESSAGE(dumped.status == 0, dumped.err);
    std::istringstream lines(dumped.out);
    for (std::string line; std::getline(lines, line);) {
      if (line.size() < 2 || line[0] != '#' || !std::isdigit(static_cast<unsigned char>(line[1]))) continue;
      CAPTURE(line);
      const std::size_t trace_at = line.rfind(", trace ");
      REQUIRE(trace_at != std::string::npos);
      named.insert(line.substr(trace_at + 8));
      forks += line.find(" process forked child ") != std::string::npos;
      execs += line.find(" exec ") != std::string::npos;
    }
  }
  CHECK(forks == 2);
  CHECK(execs == 2);
  CHECK(named == expected);
}

// The tree `tracecorn stat` prints from the first trace is the native run's
// (strace -f): the same processes in the same places, each image's command
// line, the shell's exec of its last command, and each ending (an exit
// status, SIGTERM). Recorded in the binary trace, whose exits carry the
// signal; `tracecorn replay` of the first trace then replays all eight traces.
TEST_CASE("Processes: stat of the first trace prints the process tree strace -f shows natively, and replay replays it") {
  require({"/bin/busybox", "/usr/bin/strace"});
  TempDir dir("processes-tree");
  const std::vector<std::string> command = {
      "/bin/busybox", "sh", "-c", "echo hi | busybox tr a-z A-Z; busybox sh -c 'kill -TERM $$'; (exit 3); busybox true"};
  std::vector<std::string> traced = {"/usr/bin/strace", "-f", "-q", "-s", "4096", "-e", "trace=process", "-o",
                                     dir / "native.log"};
  traced.insert(traced.end(), command.begin(), command.end());
  REQUIRE(run_process(in_dir(traced, dir.path())).status == 0);
  const std::string native = tree_from_strace(read_file(dir / "native.log"));
  std::vector<std::string> record = {paths().tracecorn, "record", "--format", "bintrace", "--level", "regs",
                                     "-o", dir / "tree.bt", "--"};
  record.insert(record.end(), command.begin(), command.end());
  const ProcessResult recorded = run_process(in_dir(record, dir.path()));
  REQUIRE_MESSAGE(recorded.status == 0, recorded.err);
  const ProcessResult stat = run_process(in_dir({paths().tracecorn, "stat", dir / "tree.bt"}, dir.path()));
  REQUIRE_MESSAGE(stat.status == 0, stat.err);
  CHECK(stat.out.find("process tree (5 processes, 8 traces):") != std::string::npos);
  CHECK(tree_from_stat(stat.out) == native);
  CHECK(native.find("1: busybox sh -c 'kill -TERM $$' -> killed by SIGTERM") != std::string::npos);

  const ProcessResult replayed = run_process(in_dir({paths().tracecorn, "replay", dir / "tree.bt"}, dir.path()));
  CHECK_MESSAGE(replayed.status == 0, replayed.out << replayed.err);
  CHECK(replayed.out.find("the process tree replays: the 8 traces of its 5 processes match") != std::string::npos);

  // A child's trace that is no trace: stat names it and fails.
  std::string child;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path()))
    if (entry.path().filename().string().rfind("tree.bt.", 0) == 0) child = entry.path().string();
  REQUIRE_FALSE(child.empty());
  write_file(child, "not a trace at all\n");
  const ProcessResult broken = run_process(in_dir({paths().tracecorn, "stat", dir / "tree.bt"}, dir.path()));
  CHECK(broken.status == 125);
  CHECK_MESSAGE(broken.err.find("the process tree: " + child + ": at offset 0x0: not a trace") != std::string::npos,
                broken.err);
}

// Every process of a recorded tree replays on its own: the parent with its
// forks, kills and waits answered from its trace (and each SIGCHLD handler
// reading the siginfo it read), each child from its fork's return (its
// parent's memory at the fork is its trace's initial state; BAP frames give
// what it read first). A child's trace opens with its fork's return in the
// middle of a block: its first step is the instruction after the syscall
// (a UCIR frame gives the block and its instructions at once; the re-run
// starts at the first of them, not the last).
TEST_CASE("Processes: each process's trace of fork_wait replays without divergence (UCIR blocks and insns, BAP frames full)") {
  require({});
  for (const auto& [format, level] :
       {std::pair<std::string, std::string>{"ucir", "blocks"}, {"ucir", "insns"}, {"frames", "full"}}) {
    CAPTURE(format);
    TempDir dir("processes-replay");
    const std::string trace = dir / ("tree." + format);
    const ProcessResult recorded = run_process(in_dir({paths().tracecorn, "record", "--format", format, "--level", level,
                                                       "-o", trace, "--", paths().samples_binary + "/static/fork_wait"},
                                                      dir.path()));
    REQUIRE_MESSAGE(recorded.status == 0, recorded.err);
    const ReplayedTraces replayed = replay_each_trace(dir.path());
    CHECK(replayed.traces == 8);  // the parent and its seven children
    CHECK(replayed.matched == 8);
  }
}

// The same on the other architectures, in UCIR at the insns level: each
// child's trace starts from its parent's memory, its fork's return and its
// registers (i386: the GDT page the architecture maps itself is kept).
TEST_CASE("Processes: each process's trace of fork_wait replays on every other architecture (UCIR insns)") {
  require({});
  for (const GuestArchitecture* architecture : test_support::kCrossArchitectures) {
    const std::string arch(architecture->name);
    CAPTURE(arch);
    const std::string program = cross_samples_binary(arch) + "/static/fork_wait";
    if (!std::filesystem::exists(program)) continue;  // that cross compiler is missing
    TempDir dir("processes-replay-" + arch);
    const std::string trace = dir / "tree.ucir";
    const ProcessResult recorded = run_process(in_dir(
        {paths().tracecorn, "record", "--format", "ucir", "--level", "insns", "-o", trace, "--", program}, dir.path()));
    REQUIRE_MESSAGE(recorded.status == 0, recorded.err);
    CHECK(replay_each_trace(dir.path()).matched == 8);  // the parent and its seven children
  }
}

// pidfds (pidfd_wait: pidfd_open, poll, waitid P_PIDFD, pidfd_send_signal):
// the output equals the native run (samples_test compares it on every
// architecture), and each of the three processes' traces replays, the
// parent's pidfd calls answered from its trace (UCIR insns, on x86-64 and
// on one 32-bit architecture whose pidfd numbers differ from mips').
TEST_CASE("Processes: each process's trace of pidfd_wait replays without divergence (UCIR insns)") {
  require({});
  for (const GuestArchitecture* architecture : kHostAndMipsel)  // the parent and its two children
    record_and_replay_tree("pidfd_wait", *architecture, "ucir", "insns", {"waitid(P_PIDFD): 0, CLD_KILLED, SIGTERM"}, 3);
}

// Signals from another process reaching a threaded process whose every
// thread waits (thread_signal_wait: a worker in pause while the main thread
// joins it, then a sigwait thread): the run waits for them as Linux does (it
// used to end with "deadlock"), and each trace replays, the woken thread's
// switch, its wait's end and the handler where the recording had them. UCIR
// insns on every architecture (aarch64 and riscv64 pause in ppoll, whose
// wait ends at the switch), BAP frames and the binary trace at full on x86-64.
TEST_CASE("Processes: a signal from a child wakes a threaded process whose threads all wait, and each trace replays") {
  require({});
  for (const GuestArchitecture& architecture : test_support::kGuestArchitectures) {
    std::vector<std::pair<std::string, std::string>> runs = {{"ucir", "insns"}};
    if (architecture.is_host) runs.insert(runs.end(), {{"frames", "full"}, {"bintrace", "full"}});
    for (const auto& [format, level] : runs)  // the process and the child that signals it
      record_and_replay_tree("thread_signal_wait", architecture, format, level,
                             {"worker: pause returned -1, EINTR; the handler ran: yes",
                              "shutdown thread: sigwait gave SIGTERM (error 0)"},
                             2);
  }
}

// A signal from another process reaching threads that spin without syscalls
// (thread_spin_signal): the recording takes it as the scheduler switches to
// the thread that can take it; the replay injects it at that same switch
// (the re-run never gets the other process's kill). UCIR blocks (the spin
// makes millions of blocks) on x86-64, aarch64 and mipsel.
TEST_CASE("Processes: a signal from a child reaching spinning threads at a thread switch replays there (UCIR blocks)") {
  require({});
  const auto has_the_signal = [](const std::string& trace, const std::string& dir) {
    const ProcessResult dumped = run_process(in_dir({paths().tracecorn, "dump", "--kind", "thread,signal", trace}, dir));
    CHECK(dumped.out.find("signal SIGUSR1") != std::string::npos);
  };
  for (const GuestArchitecture* architecture : kHostAarch64AndMipsel)  // the process and the child that signals it
    record_and_replay_tree("thread_spin_signal", *architecture, "ucir", "blocks", {"the spinning thread's handler ran: yes"}, 2,
                           has_the_signal);
}

// A signal from another process reaching a single-threaded process busy in a
// loop without syscalls (busy_signal: SIGUSR1 from a child, then SIGCHLD as
// a child ends, each for a handler): delivered at the start of the loop's
// next block, as Linux would (it used to wait for the next syscall, after
// the loop gave up), and replayed at that same execution of that block. UCIR
// blocks, compressed (the spin makes millions of blocks), on x86-64, aarch64
// and mipsel.
TEST_CASE("Processes: a signal from another process reaches a handler in a loop without syscalls, and replays there") {
  require({});
  for (const GuestArchitecture* architecture : kHostAarch64AndMipsel)  // the process and its two children
    record_and_replay_tree("busy_signal", *architecture, "ucir", "blocks",
                           {"SIGUSR1 from a child reached the handler during the loop: yes",
                            "SIGCHLD reached the handler during the loop: yes"},
                           3, {}, {"--compress", "zstd"});
}

// A signalfd kept across execve (signal_fd_exec): the exec'd image reads the
// pending signal through it, and the child's two traces (before and after
// its exec) and the parent's replay. UCIR insns on x86-64 and aarch64.
TEST_CASE("Processes: a signalfd kept across execve is read in the new image, and each trace replays") {
  require({});
  for (const GuestArchitecture* architecture : kHostAndAarch64)  // the parent, the child and the child's exec'd image
    record_and_replay_tree("signal_fd_exec", *architecture, "ucir", "insns",
                           {"after execve: its dup read SIGUSR2, ssi_code SI_TKILL: yes, ssi_pid its own: yes"}, 3);
}

// Job control (job_control: children stopped by SIGSTOP and SIGTSTP, their
// own or their parent's, continued by SIGCONT, a SIGTSTP handler, the
// parent's SIGCHLD for each change): the host stops the child's tracecorn as
// Linux stops the guest, the parent's waits and SIGCHLD handler see it, and
// each of the six traces replays (a stop is no event: the re-run goes on).
// UCIR insns on x86-64 and mipsel (whose signal numbers differ from the
// host's).
TEST_CASE("Processes: each process's trace of job_control replays without divergence (UCIR insns)") {
  require({});
  for (const GuestArchitecture* architecture : kHostAndMipsel)  // the parent and its five children
    record_and_replay_tree("job_control", *architecture, "ucir", "insns", {"raise(SIGTSTP), waitid(WSTOPPED): CLD_STOPPED, TSTP"},
                           6);
}

// A child killed in a loop without syscalls (busy_kill: SIGTERM, SIGUSR1 from
// its parent) has a trace that ends after a block: its replay matches up to
// there and stops, saying why; where the run stops at the next block's start
// (levels with memory or registers), that block, which the recorder's block
// hook saw entered, is taken back, so the trace's last block ran (at mem, its
// instructions are there, the loop's single block's too); the parent's and the third child's (killed
// as it unblocked the signal, in a syscall) replay whole. In UCIR at the
// blocks level; and at the full level in BAP frames, which has no exit event
// (its death note says the signal), and in the binary trace, both with every
// register after every instruction: the run stops at a block's start, so the
// last instruction's registers are its own (the parent lets each child spin
// 5 ms, not 100, for traces of a few MB).
// Whether the last block event of the trace at `path` before its exit is
// followed by instruction events (it ran), from `dump` of its last events.
bool last_block_ran(const std::string& path, const std::string& dir) {
  const ProcessResult stat = run_process(in_dir({paths().tracecorn, "stat", path}, dir));
  const auto counted = stat.out.find(" events, ");
  REQUIRE(counted != std::string::npos);
  const auto line_start = stat.out.rfind('\n', counted) + 1;
  const std::uint64_t events = std::stoull(stat.out.substr(line_start, counted - line_start));
  const std::uint64_t first = events > 40 ? events - 40 : 0;
  const ProcessResult dump =
      run_process(in_dir({paths().tracecorn, "dump", "--events", std::to_string(first) + "-", path}, dir));
  const auto exit_at = dump.out.rfind(" exit ");
  REQUIRE(exit_at != std::string::npos);
  const auto block_at = dump.out.rfind(" block ", exit_at);
  const auto insn_at = dump.out.rfind(" insn ", exit_at);
  return block_at == std::string::npos || (insn_at != std::string::npos && insn_at > block_at);
}

TEST_CASE("Processes: each process's trace of busy_kill replays, the children killed in their loops up to their last block") {
  require({});
  for (const auto& [format, level, spin_ms] :
       {std::tuple<std::string, std::string, std::string>{"ucir", "blocks", "100"}, {"ucir", "mem", "5"},
        {"frames", "full", "5"}, {"bintrace", "full", "5"}}) {
    CAPTURE(format);
    TempDir dir("processes-busy-kill");
    const std::string trace = dir / ("tree." + format);
    const ProcessResult recorded = run_process(in_dir({paths().tracecorn, "record", "--format", format, "--level", level,
                                                       "-o", trace, "--", paths().samples_binary + "/static/busy_kill",
                                                       spin_ms},
                                                      dir.path()));
    REQUIRE_MESSAGE(recorded.status == 0, recorded.err);
    std::size_t stopped_in_loop = 0;
    const ReplayedTraces replayed = replay_each_trace(dir.path(), [&](const std::string& path, const ProcessResult& run) {
      const bool killed_in_loop = run.out.find("killed there by a signal from another process") != std::string::npos;
      stopped_in_loop += killed_in_loop;
      if (killed_in_loop && level == "mem") CHECK_MESSAGE(last_block_ran(path, dir.path()), path);
      if (format == "frames" && path != trace) {  // each child's death note
        const ProcessResult stat = run_process(in_dir({paths().tracecorn, "stat", path}, dir.path()));
        CHECK(stat.status == 0);
        CHECK((stat.out.find("killed: the process was killed by SIGTERM") != std::string::npos ||
               stat.out.find("killed: the process was killed by SIGUSR1") != std::string::npos));
      }
    });
    CHECK(replayed.traces == 4);  // the parent and its three children
    CHECK(replayed.matched == 4);
    CHECK(stopped_in_loop >= 1);  // (both, unless a loaded machine was slow to start a child's loop)
  }
}

// A child's BAP frames trace below the mem level holds neither its memory at
// the fork (its thread's data sits in the parent's heap) nor what its reads
// got: its replay is refused, naming the file and what to record instead,
// while the parent's (a fresh load) replays.
TEST_CASE("Processes: a child's BAP frames trace at the insns level is refused by replay with the reason, the parent's replays") {
  require({});
  TempDir dir("processes-replay-refused");
  const std::string trace = dir / "tree.frames";
  const ProcessResult recorded =
      run_process(in_dir({paths().tracecorn, "record", "--format", "frames", "--level", "insns", "-o", trace, "--",
                          paths().samples_binary + "/static/fork_wait"},
                         dir.path()));
  REQUIRE_MESSAGE(recorded.status == 0, recorded.err);
  std::size_t refused = 0, no_code = 0, replayed_whole = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path())) {
    const std::string path = entry.path().string();
    if (entry.path().filename().string().rfind("tree.", 0) != 0) continue;
    CAPTURE(path);
    const ProcessResult replayed = run_process(in_dir({paths().tracecorn, "replay", "--no-children", path}, dir.path()));
    if (path == trace) {
      CHECK_MESSAGE(replayed.status == 0, replayed.out << replayed.err);
      replayed_whole += replayed.status == 0;
      continue;
    }
    if (replayed.status == 0) {  // the child its parent kills, when it died before it ran code of its own
      CHECK(replayed.out.find("no code ran") != std::string::npos);
      ++no_code;
      continue;
    }
    CHECK(replayed.err.find(path + ": the trace opens inside a syscall (a forked child's)") != std::string::npos);
    CHECK(replayed.err.find("record it in UCIR, or at --level mem or full") != std::string::npos);
    ++refused;
  }
  CHECK(replayed_whole == 1);
  CHECK(refused + no_code == 7);
  CHECK(refused >= 6);
}

// A stopped process may be killed by SIGKILL, which leaves tracecorn no
// chance to write anything: as it stops (stop_then_kill's child, raise
// (SIGSTOP)), it hands every event so far to its trace file. The child's
// trace then holds its write() and what raise() called before the stop, in
// UCIR (plain and zstd, three architectures), BAP frames and the binary
// trace (its spool, recovered). Before, the child's UCIR and frames traces
// ended inside their first record.
TEST_CASE("Processes: a child killed by SIGKILL while stopped keeps in its trace what it did before the stop") {
  require({});
  struct Case {
    const GuestArchitecture* architecture;
    std::string format, level, compress;
  };
  std::vector<Case> cases;
  for (const GuestArchitecture* architecture : kHostAarch64AndMipsel)
    cases.push_back({architecture, "ucir", "blocks", "none"});
  const GuestArchitecture* host = kHostAarch64AndMipsel[0];
  cases.push_back({host, "ucir", "insns", "zstd"});
  cases.push_back({host, "frames", "full", "none"});
  cases.push_back({host, "bintrace", "regs", "none"});
  for (const Case& c : cases) {
    const std::string arch(c.architecture->name);
    CAPTURE(arch);
    CAPTURE(c.format);
    const std::string program =
        (c.architecture->is_host ? paths().samples_binary : cross_samples_binary(arch)) + "/static/stop_then_kill";
    if (!std::filesystem::exists(program)) continue;  // that cross compiler is missing
    TempDir dir("processes-stop-then-kill");
    const std::string trace = dir / ("tree." + c.format);
    const ProcessResult recorded =
        run_process(in_dir({paths().tracecorn, "record", "--format", c.format, "--level", c.level, "--compress",
                            c.compress, "-o", trace, "--", program},
                           dir.path()));
    REQUIRE_MESSAGE(recorded.status == 0, recorded.err);
    CHECK(recorded.out == "child: about to stop\nparent: the child is stopped by STOP\nparent: the child was killed by KILL\n");
    std::string child;
    for (const auto& entry : std::filesystem::directory_iterator(dir.path())) {
      const std::string name = entry.path().filename().string();
      if (name.rfind("tree." + c.format + ".", 0) == 0 && name.find(".part") == std::string::npos) child = entry.path();
      if (name.size() > 10 && name.ends_with(".head.part")) child = (dir / name.substr(0, name.size() - 10));
    }
    REQUIRE_FALSE(child.empty());
    if (c.format == "bintrace") {  // killed: its spool is left for `tracecorn recover`
      const ProcessResult recovered = run_process(in_dir({paths().tracecorn, "recover", child}, dir.path()));
      REQUIRE_MESSAGE(recovered.status == 0, recovered.err);
    }
    const ProcessResult dumped = run_process(in_dir({paths().tracecorn, "dump", "--kind", "syscall", child}, dir.path()));
    CAPTURE(dumped.err);
    // Its last syscalls: write() of its line (21 bytes), and what raise() asks before tgkill.
    CHECK(dumped.out.find(" write(0x1, ") != std::string::npos);
    CHECK(dumped.out.find(") = 21\n") != std::string::npos);
    CHECK(dumped.out.find(" getpid(") != std::string::npos);
  }
}

}  // namespace tracecorn::behaviour
