// Role: what every benchmark prints beside its figures: the CPU model, the load
// average and the git commit (with a dirty-tree marker). Header-only, shared by
// the benchmark programs in bench/; TRACECORN_SOURCE_DIR must be defined (CMake does).
#pragma once

#include <array>
#include <cstdio>
#include <fstream>
#include <string>

namespace tracecorn::bench {

// The output of a shell command, without its trailing newline; "" if it cannot run.
inline std::string command_output(const std::string& command) {
  std::string out;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return out;
  std::array<char, 256> buffer{};
  while (std::fgets(buffer.data(), static_cast<int>(buffer.size()), pipe) != nullptr) out += buffer.data();
  pclose(pipe);
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  return out;
}

inline std::string cpu_model() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.starts_with("model name")) {
      const std::size_t colon = line.find(": ");
      if (colon != std::string::npos) return line.substr(colon + 2);
    }
  }
  return "unknown CPU";
}

// The first three fields of /proc/loadavg: other work on the machine skews every figure.
inline std::string load_average() {
  std::ifstream file("/proc/loadavg");
  std::string one, five, fifteen;
  file >> one >> five >> fifteen;
  return one + " " + five + " " + fifteen;
}

inline std::string commit() {
  const std::string dir = TRACECORN_SOURCE_DIR;
  std::string id = command_output("git -C '" + dir + "' rev-parse --short HEAD 2>/dev/null");
  if (id.empty()) return "none";
  if (!command_output("git -C '" + dir + "' status --porcelain 2>/dev/null | head -1").empty()) id += " (dirty tree)";
  return id;
}

}  // namespace tracecorn::bench
