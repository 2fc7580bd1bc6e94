// Role: tests of the behaviour harness itself (subprocess, directives, diff,
// log parsing), so that a failing behaviour test means tracecorn and not the
// harness. Native programs only; no tracecorn needed; fast.
#include <string>
#include <vector>

#include "harness.h"
#include "sample_spec.h"
#include "syscall_log.h"

namespace tracecorn::behaviour {
namespace {

ProcessSpec shell(const std::string& script, std::string stdin_data = "") {
  ProcessSpec spec;
  spec.argv = {"/bin/sh", "-c", script};
  spec.env = base_env();
  spec.stdin_data = std::move(stdin_data);
  return spec;
}

}  // namespace

TEST_CASE("Harness: subprocess captures stdout, stderr, stdin and exit status") {
  const std::string big(1 << 20, 'x');  // larger than a pipe buffer both ways
  const auto r = run_process(shell("cat; echo to-stderr >&2; exit 3", big));
  CHECK(r.status == 3);
  CHECK(r.signal == 0);
  CHECK(r.out == big);
  CHECK(r.err == "to-stderr\n");
  CHECK_FALSE(r.timed_out);
}

TEST_CASE("Harness: subprocess reports death by signal as 128+N") {
  const auto r = run_process(shell("kill -SEGV $$"));
  CHECK(r.signal == 11);
  CHECK(r.status == 139);
}

TEST_CASE("Harness: subprocess kills the child at the timeout") {
  ProcessSpec spec = shell("sleep 10");
  spec.timeout = std::chrono::milliseconds(200);
  const auto r = run_process(spec);
  CHECK(r.timed_out);
  CHECK(r.seconds < 5.0);
}

TEST_CASE("Harness: subprocess reports a program that cannot start") {
  ProcessSpec spec;
  spec.argv = {"/nonexistent/program"};
  const auto r = run_process(spec);
  CHECK(r.status == 127);
  CHECK(r.spawn_error.find("No such file") != std::string::npos);
}

TEST_CASE("Harness: child starts with exactly fds 0, 1, 2 and the given environment") {
  ProcessSpec spec;
  spec.argv = {"/bin/ls", "/proc/self/fd"};  // ls's own directory fd is 3
  const auto r = run_process(spec);
  CHECK(r.out == "0\n1\n2\n3\n");
  const auto env = run_process(shell("env | sort"));
  CHECK(env.out.find("LC_ALL=C\n") != std::string::npos);
  CHECK(env.out.find("TZ=UTC\n") != std::string::npos);
}

TEST_CASE("Harness: directives parse args, env, stdin, exit and strace") {
  std::string error;
  const auto spec = parse_sample("demo",
                                 "// Role: a demo.\n"
                                 "// args: {tmp} \"two words\" '' plain\n"
                                 "// env: A=1\n"
                                 "// env: B=\n"
                                 "// stdin: ab\\n\n"
                                 "// stdin-repeat: 3\n"
                                 "// exit: 139\n"
                                 "// strace: yes\n"
                                 "#include <stdio.h>\n"
                                 "// args: ignored after the leading block\n",
                                 error);
  REQUIRE_MESSAGE(spec.has_value(), error);
  CHECK(spec->args == std::vector<std::string>{"{tmp}", "two words", "", "plain"});
  CHECK(spec->env == std::vector<std::string>{"A=1", "B="});
  CHECK(spec->stdin_data == "ab\nab\nab\n");
  CHECK(spec->expected_exit == 139);
  CHECK(spec->strace);
  const ProcessSpec p = spec->process("/bin/demo", "/tmp/x");
  CHECK(p.argv == std::vector<std::string>{"/bin/demo", "/tmp/x", "two words", "", "plain"});
  CHECK(p.cwd == "/tmp/x");
}

TEST_CASE("Harness: an unknown directive is an error naming the line") {
  std::string error;
  CHECK_FALSE(parse_sample("typo", "// Role: x\n// arg: {tmp}\n", error).has_value());
  CHECK(error == "typo.c:2: unknown directive 'arg:' (known: args env stdin stdin-repeat exit strace archs)");
}

TEST_CASE("Harness: the archs directive limits a sample to the architectures it names") {
  std::string error;
  const auto spec = parse_sample("x86_only", "// Role: x\n// archs: x86_64 i386\n", error);
  REQUIRE_MESSAGE(spec.has_value(), error);
  CHECK(spec->runs_on("x86_64"));
  CHECK(spec->runs_on("i386"));
  CHECK_FALSE(spec->runs_on("aarch64"));
  const auto everywhere = parse_sample("all", "// Role: x\n", error);
  REQUIRE(everywhere.has_value());
  CHECK(everywhere->runs_on("aarch64"));
  CHECK_FALSE(parse_sample("empty", "// archs:\n", error).has_value());
}

TEST_CASE("Harness: every sample's directives parse") {
  std::vector<std::string> errors;
  const auto samples = discover_samples(paths().samples_source, errors);
  CHECK(samples.size() >= 15);
  std::string all;
  for (const auto& e : errors) all += e + "\n";
  CHECK_MESSAGE(errors.empty(), all);
}

TEST_CASE("Harness: diff shows the differing line with its number") {
  CHECK(describe_difference("a", "same\n", "b", "same\n").empty());
  const std::string d = describe_difference("native", "1\n2\n3\n4\n5\n6\n7\n8\n", "tracecorn", "1\n2\n3\n4\nFIVE\n6\n7\n8\n");
  CHECK(d.find("@@ line 2 @@") != std::string::npos);
  CHECK(d.find("-5\n+FIVE\n") != std::string::npos);
  const std::string nl = describe_difference("x", "end\n", "y", "end");
  CHECK(nl.find("no newline at end") != std::string::npos);
  const std::string bin = describe_difference("x", std::string("a\0b\n", 4), "y", "a b\n");
  CHECK(bin.find("a\\x00b") != std::string::npos);
}

TEST_CASE("Harness: tracecorn's own stderr lines are dropped before comparing") {
  CHECK(drop_tracecorn_lines("guest line\ntracecorn: killed by SIGSEGV\nlast") == "guest line\nlast");
  CHECK(count_tracecorn_lines("tracecorn: a\nx tracecorn: b\ntracecorn: c\n") == 2);
}

TEST_CASE("Harness: qemu strace and tracecorn syscall logs reduce to names") {
  const auto q = parse_qemu_strace(
      "3225 brk(NULL) = 0x00000000004ac000\n"
      "3225 Unknown syscall 334\n"
      "3225 write(2,0x47900a,4)err\n"
      " = 4\n"
      "--- SIGSEGV {si_signo=SIGSEGV, si_code=1, si_addr=NULL} ---\n"
      "3225 exit_group(3)\n");
  CHECK(q == std::vector<std::string>{"brk", "rseq", "write", "exit_group"});
  const auto t = parse_tracecorn_syscall_log(
      "brk(NULL) = 0x4ac000\n"
      "openat(AT_FDCWD, \"/etc/passwd\", 0x0) = 3\n"
      "\n"
      "exit_group(0) = ?\n");
  CHECK(t == std::vector<std::string>{"brk", "openat", "exit_group"});
}

}  // namespace tracecorn::behaviour
