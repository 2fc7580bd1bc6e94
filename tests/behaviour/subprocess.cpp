// Role: fork/execve implementation of run_process (see subprocess.h).
// Invariants: between fork and execve the child calls only async-signal-safe
// functions on data prepared before the fork; the parent never blocks on one
// pipe while the child blocks on another (one poll loop serves stdin, stdout
// and stderr together).
#include "subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <system_error>

namespace tracecorn::behaviour {
namespace {

// Caps what we keep of a runaway child's output; beyond it bytes are dropped
// and a marker is appended so the comparison cannot silently pass.
constexpr std::size_t kMaxCapturedBytes = 64u << 20;

[[noreturn]] void throw_errno(const char* what) {
  throw std::system_error(errno, std::generic_category(), what);
}

void make_pipe(int fds[2]) {
  if (pipe2(fds, O_CLOEXEC) != 0) throw_errno("pipe2");
}

void set_nonblocking(int fd) {
  int flags = fcntl(fd, F_GETFL);
  if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) != 0) throw_errno("fcntl O_NONBLOCK");
}

// Child side, after fork: wire up fds 0-2 and exec. Async-signal-safe only.
[[noreturn]] void exec_child(const ProcessSpec& spec, char* const* argv, char* const* envp, int in_fd,
                             int out_fd, int err_fd, int report_fd) {
  setpgid(0, 0);
  struct rlimit no_core = {0, 0};
  setrlimit(RLIMIT_CORE, &no_core);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  struct sigaction dfl;
  std::memset(&dfl, 0, sizeof dfl);
  dfl.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; sig++) sigaction(sig, &dfl, nullptr);  // fails harmlessly for KILL/STOP

  if (dup2(in_fd, 0) < 0 || dup2(out_fd, 1) < 0 || dup2(err_fd, 2) < 0) {
    int e = errno;
    (void)!write(report_fd, &e, sizeof e);
    _exit(127);
  }
  // Keep the reporting pipe (close-on-exec) but nothing else above 2.
  if (report_fd > 3) close_range(3, static_cast<unsigned>(report_fd) - 1, 0);
  close_range(static_cast<unsigned>(report_fd) + 1, ~0u, 0);
  if (!spec.cwd.empty() && chdir(spec.cwd.c_str()) != 0) {
    int e = errno;
    (void)!write(report_fd, &e, sizeof e);
    _exit(127);
  }
  execve(argv[0], argv, envp);
  int e = errno;
  (void)!write(report_fd, &e, sizeof e);
  _exit(127);
}

std::vector<char*> c_strings(const std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (const auto& s : strings) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

void append_capped(std::string& sink, const char* data, std::size_t n, bool& truncated) {
  if (sink.size() + n > kMaxCapturedBytes) {
    n = kMaxCapturedBytes - sink.size();
    truncated = true;
  }
  sink.append(data, n);
}

}  // namespace

std::string ProcessResult::describe_status() const {
  if (!spawn_error.empty()) return "did not start: " + spawn_error;
  if (timed_out) return "timed out (killed after the time limit)";
  if (signal != 0)
    return "killed by signal " + std::to_string(signal) + " (" + strsignal(signal) + "), status " +
           std::to_string(status);
  return "exit " + std::to_string(status);
}

ProcessResult run_process(const ProcessSpec& spec) {
  static const bool sigpipe_ignored = [] {
    std::signal(SIGPIPE, SIG_IGN);  // a child that exits early must not kill us while we feed it
    return true;
  }();
  (void)sigpipe_ignored;

  ProcessResult result;
  if (spec.argv.empty()) {
    result.spawn_error = "empty argv";
    result.status = 127;
    return result;
  }
  auto argv = c_strings(spec.argv);
  auto envp = c_strings(spec.env);

  int in[2], out[2], err[2], report[2];
  make_pipe(in);
  make_pipe(out);
  make_pipe(err);
  make_pipe(report);

  const auto start = std::chrono::steady_clock::now();
  pid_t pid = fork();
  if (pid < 0) throw_errno("fork");
  if (pid == 0) exec_child(spec, argv.data(), envp.data(), in[0], out[1], err[1], report[1]);
  setpgid(pid, pid);  // also done by the child; whichever runs first wins the race harmlessly

  close(in[0]);
  close(out[1]);
  close(err[1]);
  close(report[1]);

  int exec_errno = 0;
  ssize_t got = read(report[0], &exec_errno, sizeof exec_errno);  // EOF once execve succeeded
  close(report[0]);
  if (got == static_cast<ssize_t>(sizeof exec_errno)) {
    result.spawn_error = spec.argv[0] + ": " + std::strerror(exec_errno);
  }

  int in_fd = in[1];
  if (spec.stdin_data.empty() || !result.spawn_error.empty()) {
    close(in_fd);
    in_fd = -1;
  } else {
    set_nonblocking(in_fd);
  }
  set_nonblocking(out[0]);
  set_nonblocking(err[0]);
  int out_fd = out[0], err_fd = err[0];
  std::size_t stdin_written = 0;
  bool out_truncated = false, err_truncated = false;
  const auto deadline = start + spec.timeout;
  char buffer[65536];

  while (out_fd >= 0 || err_fd >= 0) {
    auto now = std::chrono::steady_clock::now();
    if (now >= deadline && !result.timed_out) {
      result.timed_out = true;
      kill(-pid, SIGKILL);
      kill(pid, SIGKILL);
    }
    pollfd fds[3];
    int n = 0;
    if (out_fd >= 0) fds[n++] = {out_fd, POLLIN, 0};
    if (err_fd >= 0) fds[n++] = {err_fd, POLLIN, 0};
    if (in_fd >= 0) fds[n++] = {in_fd, POLLOUT, 0};
    int wait_ms = result.timed_out ? 1000
                                   : static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                                          deadline - now)
                                                          .count()) +
                                         1;
    int ready = poll(fds, static_cast<nfds_t>(n), wait_ms);
    if (ready < 0) {
      if (errno == EINTR) continue;
      throw_errno("poll");
    }
    if (ready == 0 && result.timed_out) break;  // a grandchild outside the group holds a pipe
    for (int i = 0; i < n; i++) {
      if (fds[i].revents == 0) continue;
      int fd = fds[i].fd;
      if (fd == in_fd) {
        ssize_t w = write(in_fd, spec.stdin_data.data() + stdin_written, spec.stdin_data.size() - stdin_written);
        if (w > 0) stdin_written += static_cast<std::size_t>(w);
        if ((w < 0 && errno != EAGAIN && errno != EINTR) || stdin_written == spec.stdin_data.size()) {
          close(in_fd);  // EPIPE: the child stopped reading; it sees no more input either way
          in_fd = -1;
        }
        continue;
      }
      ssize_t r = read(fd, buffer, sizeof buffer);
      if (r > 0) {
        if (fd == out_fd) append_capped(result.out, buffer, static_cast<std::size_t>(r), out_truncated);
        else append_capped(result.err, buffer, static_cast<std::size_t>(r), err_truncated);
      } else if (r == 0 || (errno != EAGAIN && errno != EINTR)) {
        close(fd);
        (fd == out_fd ? out_fd : err_fd) = -1;
      }
    }
  }
  if (in_fd >= 0) close(in_fd);
  if (out_fd >= 0) close(out_fd);
  if (err_fd >= 0) close(err_fd);

  int wstatus = 0;
  while (waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
  }
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (WIFEXITED(wstatus)) {
    result.status = WEXITSTATUS(wstatus);
  } else if (WIFSIGNALED(wstatus)) {
    result.signal = WTERMSIG(wstatus);
    result.status = 128 + result.signal;
  }
  if (out_truncated) result.out += "\n[behaviour harness: stdout truncated]\n";
  if (err_truncated) result.err += "\n[behaviour harness: stderr truncated]\n";
  return result;
}

std::string quote_command(const std::vector<std::string>& argv) {
  std::string text;
  for (const auto& word : argv) {
    if (!text.empty()) text += ' ';
    bool plain = !word.empty();
    for (char c : word)
      if (!(std::isalnum(static_cast<unsigned char>(c)) || std::strchr("_./=:-+,@%", c))) plain = false;
    if (plain) {
      text += word;
      continue;
    }
    text += '\'';
    for (char c : word) {
      if (c == '\'') text += "'\\''";
      else text += c;
    }
    text += '\'';
  }
  return text;
}

}  // namespace tracecorn::behaviour
