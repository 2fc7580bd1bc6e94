// Role: binfmt_script's rules and exec's checks (see exec_image.h).
// Threads: the emulation thread. Invariant: every host fd opened here is closed before returning.
#include "recorder/linux/exec_image.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace tracecorn::linux_layer {
namespace {

constexpr int kMaxInterpreterDepth = 4;   // fs/exec.c: bprm->interp recursion limit
constexpr std::size_t kFirstLineBytes = 256;  // BINPRM_BUF_SIZE

std::string host_path_of(int fd) {
  char buffer[4096];
  const std::string link = "/proc/self/fd/" + std::to_string(fd);
  const ssize_t length = ::readlink(link.c_str(), buffer, sizeof buffer - 1);
  return length > 0 ? std::string(buffer, static_cast<std::size_t>(length)) : std::string();
}

// The interpreter and optional argument of a "#!" first line; ENOEXEC when
// the line does not fit or names nothing.
SysResult<std::pair<std::string, std::string>> parse_script_line(const char* bytes, std::size_t size) {
  std::string line(bytes + 2, size - 2);
  const std::size_t newline = line.find('\n');
  const bool complete = newline != std::string::npos;
  if (complete) line.resize(newline);
  auto blank = [](char c) { return c == ' ' || c == '\t'; };
  std::size_t start = 0;
  while (start < line.size() && blank(line[start])) ++start;
  std::size_t end = start;
  while (end < line.size() && !blank(line[end]) && line[end] != '\0') ++end;
  // A first line with no end within the buffer: Linux accepts it only when
  // the interpreter's name ends inside it (the argument is then cut).
  if (start == end || (!complete && end == line.size())) return {{}, ENOEXEC};
  std::string interpreter = line.substr(start, end - start);
  std::size_t arg_start = end;
  while (arg_start < line.size() && blank(line[arg_start])) ++arg_start;
  std::size_t arg_end = line.size();
  while (arg_end > arg_start && (blank(line[arg_end - 1]) || line[arg_end - 1] == '\0')) --arg_end;
  return {{std::move(interpreter), line.substr(arg_start, arg_end - arg_start)}, 0};
}

}  // namespace

SysResult<ExecTarget> resolve_exec_target(GuestFs& fs, const std::string& path, std::vector<std::string> argv) {
  ExecTarget target;
  target.execfn = path;
  std::string current = path;
  for (int depth = 0; depth <= kMaxInterpreterDepth; ++depth) {
    // The exec'd file itself resolves as the guest names it (relative to its
    // working directory); interpreters as absolute or cwd-relative paths alike.
    auto opened = fs.open(AT_FDCWD, current, O_RDONLY, 0);
    if (!opened.ok()) return {{}, opened.error};
    const int host = fs.host_fd(opened.value);
    struct stat info {};
    char bytes[kFirstLineBytes] = {};
    ssize_t got = -1;
    int error = 0;
    if (::fstat(host, &info) != 0) error = errno;
    else if (!S_ISREG(info.st_mode)) error = EACCES;
    else if (::faccessat(AT_FDCWD, host_path_of(host).c_str(), X_OK, AT_EACCESS) != 0 && errno == EACCES) error = EACCES;
    else if ((got = ::pread(host, bytes, sizeof bytes, 0)) < 0) error = errno;
    const std::string host_path = host_path_of(host);
    fs.close(opened.value);
    if (error) return {{}, error};
    const auto size = static_cast<std::size_t>(got);
    if (size >= 4 && std::memcmp(bytes, "\x7f" "ELF", 4) == 0) {
      target.host_path = host_path;
      target.argv = std::move(argv);
      return {std::move(target), 0};
    }
    if (size < 2 || bytes[0] != '#' || bytes[1] != '!') return {{}, ENOEXEC};
    auto line = parse_script_line(bytes, size);
    if (!line.ok()) return {{}, line.error};
    // binfmt_script: argv[0] goes; the interpreter, its argument and the
    // script's path as the exec named it come first.
    std::vector<std::string> next{line.value.first};
    if (!line.value.second.empty()) next.push_back(line.value.second);
    next.push_back(current);
    for (std::size_t i = 1; i < argv.size(); ++i) next.push_back(std::move(argv[i]));
    argv = std::move(next);
    current = line.value.first;
  }
  return {{}, ELOOP};
}

}  // namespace tracecorn::linux_layer
