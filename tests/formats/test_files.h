// Role: file helpers the format tests share: a per-process temporary path and
// reading a whole file. Test thread only.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace tracecorn::test {

using Bytes = std::vector<std::uint8_t>;

// "<tmp>/tracecorn-<format>-<pid>-<name>": unique per test process.
inline std::string temp_file(const std::string& format, const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("tracecorn-" + format + "-" + std::to_string(::getpid()) + "-" + name))
      .string();
}

// The whole file (empty when it cannot be read).
inline Bytes slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return Bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

}  // namespace tracecorn::test
