// Role: implementation of the syscall-log readers (see syscall_log.h).
#include "syscall_log.h"

#include <cctype>
#include <cstdlib>

namespace tracecorn::behaviour {
namespace {

bool is_name_char(char c) { return std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) || c == '_'; }

// If `line` starts with a syscall name followed by '(', returns the name.
std::string_view leading_call_name(std::string_view line) {
  std::size_t n = 0;
  while (n < line.size() && is_name_char(line[n])) n++;
  if (n == 0 || n == line.size() || line[n] != '(' || std::isdigit(static_cast<unsigned char>(line[0]))) return {};
  return line.substr(0, n);
}

template <typename Fn>
void for_each_line(std::string_view text, Fn fn) {
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    fn(text.substr(start, end - start));
    start = end + 1;
  }
}

}  // namespace

std::string_view qemu_unnamed_syscall(long nr, std::string_view arch) {
  // Evidence: qemu-x86_64-static 7.2 (Debian 12) prints "Unknown syscall 334"
  // for glibc 2.36's rseq registration at startup, qemu-aarch64-static 7.2
  // "Unknown syscall 293" for the same call, qemu-arm-static "398" (and "406" for clock_getres_time64), qemu-i386-static "386" and "406", qemu-mips(el)-static "4367" and "4406". Add entries
  // only when seen.
  if (arch == "x86_64" && nr == 334) return "rseq";
  if (arch == "aarch64" && nr == 293) return "rseq";
  if (arch == "arm" && nr == 398) return "rseq";
  if (arch == "arm" && nr == 406) return "clock_getres_time64";
  if (arch == "i386" && nr == 386) return "rseq";
  if (arch == "i386" && nr == 406) return "clock_getres_time64";
  if ((arch == "mips" || arch == "mipsel") && nr == 4367) return "rseq";
  if ((arch == "mips" || arch == "mipsel") && nr == 4406) return "clock_getres_time64";
  return "";
}

std::vector<std::string> parse_qemu_strace(std::string_view log, std::string_view arch) {
  std::vector<std::string> names;
  for_each_line(log, [&](std::string_view line) {
    std::size_t digits = 0;
    while (digits < line.size() && std::isdigit(static_cast<unsigned char>(line[digits]))) digits++;
    if (digits == 0 || digits == line.size() || line[digits] != ' ') return;
    std::string_view rest = line.substr(digits + 1);
    constexpr std::string_view kUnknown = "Unknown syscall ";
    if (rest.starts_with(kUnknown)) {
      long nr = std::strtol(std::string(rest.substr(kUnknown.size())).c_str(), nullptr, 10);
      std::string_view known = qemu_unnamed_syscall(nr, arch);
      names.push_back(known.empty() ? "syscall_" + std::to_string(nr) : std::string(known));
      return;
    }
    std::string_view name = leading_call_name(rest);
    // o32's getrlimit (4076) is the word-sized call arm names ugetrlimit, and
    // tracecorn names it so on both.
    if ((arch == "mips" || arch == "mipsel") && name == "getrlimit") name = "ugetrlimit";
    if (!name.empty()) names.emplace_back(name);
  });
  return names;
}

std::vector<std::string> parse_tracecorn_syscall_log(std::string_view log) {
  std::vector<std::string> names;
  for_each_line(log, [&](std::string_view line) {
    // A multi-threaded process's lines begin with "[tid] ".
    if (line.starts_with('[')) {
      const auto close = line.find("] ");
      if (close != std::string_view::npos) line.remove_prefix(close + 2);
    }
    std::string_view name = leading_call_name(line);
    if (!name.empty()) names.emplace_back(name);
  });
  return names;
}

}  // namespace tracecorn::behaviour
