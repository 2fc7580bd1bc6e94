// Role: implementation of describe_difference (see text_diff.h): common prefix
// and suffix lines are stripped, the rest is diffed with a plain LCS table
// when it is small enough, and shown as two blocks otherwise.
#include "text_diff.h"

#include <algorithm>
#include <cstdio>
#include <vector>

namespace tracecorn::behaviour {
namespace {

constexpr std::size_t kContextLines = 3;
constexpr std::size_t kMaxShownLines = 80;
constexpr std::size_t kMaxLcsCells = 4'000'000;  // 4M cells of uint32 = 16 MB, well under a second

// Marks a final line that has no '\n', so that it differs from one that has.
constexpr std::string_view kNoNewline = "\n\\ (no newline at end)";

// Splits into raw lines (escaping happens only when printing).
std::vector<std::string> split_lines(std::string_view text) {
  std::vector<std::string> lines;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) {
      lines.push_back(std::string(text.substr(start)) + std::string(kNoNewline));
      break;
    }
    lines.push_back(std::string(text.substr(start, end - start)));
    start = end + 1;
  }
  return lines;
}

// One line for the message: escaped, cut to 300 bytes, the no-newline marker readable.
std::string show_line(const std::string& line) {
  if (line.size() >= kNoNewline.size() && line.ends_with(kNoNewline))
    return printable(std::string_view(line).substr(0, line.size() - kNoNewline.size()), false, 300) +
           "  \\ (no newline at end)";
  return printable(line, false, 300);
}

struct Edit {
  char kind;  // ' ', '-' or '+'
  std::size_t expected_line;  // 0-based index into expected (for '-' and ' ')
  const std::string* text;
};

// Classic LCS over [a0, a1) x [b0, b1); returns the edit script.
std::vector<Edit> lcs_edits(const std::vector<std::string>& a, std::size_t a0, std::size_t a1,
                            const std::vector<std::string>& b, std::size_t b0, std::size_t b1) {
  const std::size_t n = a1 - a0, m = b1 - b0;
  std::vector<std::uint32_t> table((n + 1) * (m + 1), 0);
  auto at = [&](std::size_t i, std::size_t j) -> std::uint32_t& { return table[i * (m + 1) + j]; };
  for (std::size_t i = n; i-- > 0;)
    for (std::size_t j = m; j-- > 0;)
      at(i, j) = a[a0 + i] == b[b0 + j] ? at(i + 1, j + 1) + 1 : std::max(at(i + 1, j), at(i, j + 1));
  std::vector<Edit> edits;
  std::size_t i = 0, j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && a[a0 + i] == b[b0 + j]) {
      edits.push_back({' ', a0 + i, &a[a0 + i]});
      i++, j++;
    } else if (i < n && (j == m || at(i + 1, j) >= at(i, j + 1))) {
      edits.push_back({'-', a0 + i, &a[a0 + i]});  // removals first, as diff -u prints them
      i++;
    } else {
      edits.push_back({'+', a0 + i, &b[b0 + j]});
      j++;
    }
  }
  return edits;
}

}  // namespace

std::string printable(std::string_view text, bool keep_newlines, std::size_t max_bytes) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); i++) {
    if (out.size() >= max_bytes) {
      out += "... (" + std::to_string(text.size() - i) + " more bytes)";
      break;
    }
    unsigned char c = static_cast<unsigned char>(text[i]);
    if ((c == '\n' && keep_newlines) || (c >= 0x20 && c < 0x7f && c != '\\')) {
      out += static_cast<char>(c);
    } else if (c == '\\') {
      out += "\\\\";
    } else {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", c);
      out += hex;
    }
  }
  return out;
}

std::string describe_difference(std::string_view expected_label, std::string_view expected,
                                std::string_view actual_label, std::string_view actual) {
  if (expected == actual) return "";
  const auto a = split_lines(expected), b = split_lines(actual);
  std::string message = "--- " + std::string(expected_label) + " (" + std::to_string(expected.size()) +
                        " bytes, " + std::to_string(a.size()) + " lines)\n+++ " + std::string(actual_label) +
                        " (" + std::to_string(actual.size()) + " bytes, " + std::to_string(b.size()) +
                        " lines)\n";

  std::size_t first = 0, line = 1, column = 1;
  while (first < expected.size() && first < actual.size() && expected[first] == actual[first]) {
    if (expected[first] == '\n') line++, column = 0;
    first++, column++;
  }
  message += "first difference at byte " + std::to_string(first) + " (line " + std::to_string(line) + ", column " +
             std::to_string(column) + ")\n";

  std::size_t prefix = 0;
  while (prefix < a.size() && prefix < b.size() && a[prefix] == b[prefix]) prefix++;
  std::size_t suffix = 0;
  while (suffix < a.size() - prefix && suffix < b.size() - prefix &&
         a[a.size() - 1 - suffix] == b[b.size() - 1 - suffix])
    suffix++;
  const std::size_t a_end = a.size() - suffix, b_end = b.size() - suffix;

  std::vector<Edit> edits;
  const std::size_t context_start = prefix > kContextLines ? prefix - kContextLines : 0;
  for (std::size_t i = context_start; i < prefix; i++) edits.push_back({' ', i, &a[i]});
  if ((a_end - prefix) * (b_end - prefix) <= kMaxLcsCells) {
    auto middle = lcs_edits(a, prefix, a_end, b, prefix, b_end);
    edits.insert(edits.end(), middle.begin(), middle.end());
  } else {
    for (std::size_t i = prefix; i < a_end; i++) edits.push_back({'-', i, &a[i]});
    for (std::size_t j = prefix; j < b_end; j++) edits.push_back({'+', a_end, &b[j]});
  }
  for (std::size_t i = a_end; i < a.size() && i < a_end + kContextLines; i++) edits.push_back({' ', i, &a[i]});

  // Print hunks: runs of changes with up to kContextLines of unchanged lines around them.
  std::vector<bool> shown(edits.size(), false);
  for (std::size_t k = 0; k < edits.size(); k++) {
    if (edits[k].kind == ' ') continue;
    std::size_t lo = k > kContextLines ? k - kContextLines : 0;
    std::size_t hi = std::min(edits.size(), k + kContextLines + 1);
    for (std::size_t x = lo; x < hi; x++) shown[x] = true;
  }
  std::size_t printed = 0, changes = 0;
  for (const auto& e : edits) changes += e.kind != ' ';
  bool in_hunk = false;
  for (std::size_t k = 0; k < edits.size(); k++) {
    if (!shown[k]) {
      in_hunk = false;
      continue;
    }
    if (printed >= kMaxShownLines) {
      message += "... (diff cut; " + std::to_string(changes) + " changed lines in all)\n";
      break;
    }
    if (!in_hunk) {
      message += "@@ line " + std::to_string(edits[k].expected_line + 1) + " @@\n";
      in_hunk = true;
    }
    message += edits[k].kind;
    message += show_line(*edits[k].text);
    message += '\n';
    printed++;
  }
  return message;
}

}  // namespace tracecorn::behaviour
