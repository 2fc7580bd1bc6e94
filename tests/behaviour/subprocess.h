// Role: the behaviour tests' only way to start a program: fork/execve with an
// explicit argv, environment, working directory and stdin bytes, capturing
// stdout and stderr separately, with a wall-clock timeout.
//
// Called from doctest test bodies on the main thread; not thread safe (it
// forks, and ignores SIGPIPE process-wide the first time it runs).
//
// Invariants:
//   - the child starts with exactly fds 0, 1, 2 open (every other descriptor
//     is closed), default signal dispositions and an empty signal mask, core
//     dumps disabled, and its own process group (a timeout kills the group);
//   - execve is called directly: argv[0] must be a path, PATH is not searched;
//   - the exit status follows the shell convention: a normal exit gives the
//     exit code, death by signal N gives 128+N.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace tracecorn::behaviour {

// What to run and how.
struct ProcessSpec {
  std::vector<std::string> argv;   // argv[0] is the path that is executed
  std::vector<std::string> env;    // "KEY=VALUE" entries, passed verbatim
  std::string stdin_data;          // written to the child's stdin, then EOF
  std::string cwd;                 // empty: inherit the test's directory
  std::chrono::milliseconds timeout{20000};
};

// What happened.
struct ProcessResult {
  std::string out;                 // everything the child wrote to fd 1
  std::string err;                 // everything the child wrote to fd 2
  int status = -1;                 // exit code, or 128+signal
  int signal = 0;                  // the killing signal, 0 after a normal exit
  bool timed_out = false;          // killed by us after ProcessSpec::timeout
  std::string spawn_error;         // non-empty if the program never started
  double seconds = 0.0;            // wall-clock run time

  // One line such as "exit 3", "signal 11 (status 139)" or "timed out after 20 s".
  std::string describe_status() const;
};

// Runs `spec` to completion (or timeout) and returns what happened. Never
// throws for a failure of the child; a failure to start it (missing file,
// exec error) comes back in `spawn_error` with status 127. Throws
// std::system_error only if the test process itself cannot make pipes or fork.
ProcessResult run_process(const ProcessSpec& spec);

// Shell-like quoting of argv for messages: each word in single quotes when it
// holds anything but [A-Za-z0-9_./=:-].
std::string quote_command(const std::vector<std::string>& argv);

}  // namespace tracecorn::behaviour
