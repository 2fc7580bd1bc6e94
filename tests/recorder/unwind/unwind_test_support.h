// Role: helpers shared by the unwinder's tests: run a host tool and capture
// its output, read a file, parse `readelf --debug-dump=frames-interp`.
// Who calls it: tests/recorder/unwind/*_test.cpp, on the doctest thread.
// Invariants: header-only; a tool that cannot run yields an empty string (the
// test that needs it then fails on its own REQUIREs, never silently passes).
#pragma once

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <stdlib.h>

namespace tracecorn::unwind::test {

inline std::string run_tool(const std::string& command) {
  std::string output;
  std::FILE* pipe = ::popen(command.c_str(), "r");
  if (!pipe) return output;
  char buffer[65536];
  std::size_t got = 0;
  while ((got = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) output.append(buffer, got);
  ::pclose(pipe);
  return output;
}

// The lines of `cli record --format text` of `program` (its output dropped),
// recorded into a temporary folder that is removed after.
inline std::vector<std::string> text_trace_lines(const std::string& cli, const std::string& program) {
  char directory[] = "/tmp/tracecorn-text-trace-XXXXXX";
  if (!::mkdtemp(directory)) return {};
  const std::string trace = std::string(directory) + "/trace.txt";
  run_tool(cli + " record --format text -o '" + trace + "' -- '" + program + "' > /dev/null 2>&1");
  std::vector<std::string> lines;
  {
    std::ifstream in(trace);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
  }
  std::filesystem::remove_all(directory);
  return lines;
}

inline std::vector<std::uint8_t> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

inline std::vector<std::string> split_words(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> words;
  std::string word;
  while (in >> word) words.push_back(word);
  return words;
}

// One CIE or FDE as readelf's frames-interp view prints it.
struct ReadelfEntry {
  bool is_cie = false;
  std::uint64_t offset = 0;
  std::uint64_t cie_offset = 0;
  std::uint64_t pc_begin = 0, pc_end = 0;
  std::vector<std::string> columns;  // "CFA", "rbx", ..., "ra"
  std::vector<std::pair<std::uint64_t, std::vector<std::string>>> rows;  // LOC, one cell per column
};

// Entries per section name (".eh_frame", ".debug_frame").
inline std::map<std::string, std::vector<ReadelfEntry>> parse_readelf_frames(const std::string& text) {
  std::map<std::string, std::vector<ReadelfEntry>> sections;
  std::vector<ReadelfEntry>* current = nullptr;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("Contents of the ", 0) == 0) {
      const auto start = std::string("Contents of the ").size();
      current = &sections[line.substr(start, line.find(' ', start) - start)];
      continue;
    }
    if (!current) continue;
    auto words = split_words(line);
    if (words.empty()) continue;
    // A register cell is printed as two words, "r9 (r9)": join them.
    for (std::size_t i = 1; i < words.size();) {
      if (words[i].front() == '(' && words[i].back() == ')') {
        words[i - 1] += " " + words[i];
        words.erase(words.begin() + static_cast<std::ptrdiff_t>(i));
      } else {
        ++i;
      }
    }
    if (words.size() >= 4 && (words[3] == "CIE" || words[3] == "FDE") && line[0] != ' ') {
      ReadelfEntry entry;
      entry.offset = std::stoull(words[0], nullptr, 16);
      entry.is_cie = words[3] == "CIE";
      if (!entry.is_cie) {
        for (const auto& word : words) {
          if (word.rfind("cie=", 0) == 0) entry.cie_offset = std::stoull(word.substr(4), nullptr, 16);
          if (word.rfind("pc=", 0) == 0) {
            const auto dots = word.find("..");
            entry.pc_begin = std::stoull(word.substr(3, dots - 3), nullptr, 16);
            entry.pc_end = std::stoull(word.substr(dots + 2), nullptr, 16);
          }
        }
      }
      current->push_back(entry);
      continue;
    }
    if (current->empty()) continue;
    ReadelfEntry& entry = current->back();
    if (words[0] == "LOC") {
      entry.columns.assign(words.begin() + 1, words.end());
      continue;
    }
    if (!entry.columns.empty() && words.size() == entry.columns.size() + 1 && words[1] != "ZERO" &&
        words[0].find_first_not_of("0123456789abcdef") == std::string::npos) {
      entry.rows.emplace_back(std::stoull(words[0], nullptr, 16),
                              std::vector<std::string>(words.begin() + 1, words.end()));
    }
  }
  return sections;
}

}  // namespace tracecorn::unwind::test
