// Role: implementation of the sample directive parser (see sample_spec.h).
#include "sample_spec.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "harness.h"

namespace tracecorn::behaviour {
namespace {

std::string trim(const std::string& s) {
  std::size_t b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return "";
  std::size_t e = s.find_last_not_of(" \t\r");
  return s.substr(b, e - b + 1);
}

std::string replace_all(std::string text, const std::string& from, const std::string& to) {
  for (std::size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
  return text;
}

}  // namespace

bool split_words(const std::string& text, std::vector<std::string>& words, std::string& error) {
  std::size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) i++;
    if (i == text.size()) break;
    std::string word;
    while (i < text.size() && !std::isspace(static_cast<unsigned char>(text[i]))) {
      char c = text[i];
      if (c == '\'' || c == '"') {
        std::size_t close = text.find(c, i + 1);
        if (close == std::string::npos) {
          error = "unterminated " + std::string(1, c) + " quote";
          return false;
        }
        word += text.substr(i + 1, close - i - 1);
        i = close + 1;
      } else {
        word += c;
        i++;
      }
    }
    words.push_back(word);
  }
  return true;
}

std::string unescape(const std::string& text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); i++) {
    if (text[i] != '\\' || i + 1 == text.size()) {
      out += text[i];
      continue;
    }
    char c = text[++i];
    if (c == 'n') out += '\n';
    else if (c == 't') out += '\t';
    else if (c == '\\') out += '\\';
    else if (c == 'x' && i + 2 < text.size() && std::isxdigit(static_cast<unsigned char>(text[i + 1])) &&
             std::isxdigit(static_cast<unsigned char>(text[i + 2]))) {
      out += static_cast<char>(std::stoi(text.substr(i + 1, 2), nullptr, 16));
      i += 2;
    } else {
      out += '\\';
      out += c;
    }
  }
  return out;
}

std::optional<SampleSpec> parse_sample(const std::string& name, const std::string& source_text,
                                       std::string& error) {
  SampleSpec spec;
  spec.name = name;
  std::string stdin_text;
  long repeat = 1;
  std::istringstream in(source_text);
  std::string line;
  int line_no = 0;
  while (std::getline(in, line)) {
    line_no++;
    if (line.rfind("//", 0) != 0) break;  // the directive block is the leading comment
    std::string body = trim(line.substr(2));
    std::size_t colon = body.find(':');
    if (colon == std::string::npos || colon == 0) continue;
    std::string key = body.substr(0, colon);
    bool lowercase_key = std::all_of(key.begin(), key.end(), [](char c) { return (c >= 'a' && c <= 'z') || c == '-'; });
    if (!lowercase_key) continue;  // prose such as "Role:" or "Invariants:"
    std::string value = trim(body.substr(colon + 1));
    auto fail = [&](const std::string& why) {
      error = name + ".c:" + std::to_string(line_no) + ": " + why;
      return std::nullopt;
    };
    if (key == "args") {
      std::string why;
      if (!split_words(value, spec.args, why)) return fail(why);
    } else if (key == "env") {
      if (value.find('=') == std::string::npos || value[0] == '=') return fail("env needs KEY=VALUE");
      spec.env.push_back(value);
    } else if (key == "stdin") {
      stdin_text += unescape(value);
    } else if (key == "stdin-repeat") {
      try {
        repeat = std::stol(value);
      } catch (...) {
        return fail("stdin-repeat needs a number");
      }
      if (repeat < 0 || repeat > 1'000'000) return fail("stdin-repeat out of range");
    } else if (key == "exit") {
      try {
        spec.expected_exit = std::stoi(value);
      } catch (...) {
        return fail("exit needs a number");
      }
    } else if (key == "strace") {
      if (value != "yes" && value != "no") return fail("strace takes yes or no");
      spec.strace = value == "yes";
    } else if (key == "archs") {
      std::string why;
      if (!split_words(value, spec.archs, why) || spec.archs.empty()) return fail("archs needs architecture names");
    } else {
      return fail("unknown directive '" + key + ":' (known: args env stdin stdin-repeat exit strace archs)");
    }
  }
  for (long i = 0; i < repeat; i++) spec.stdin_data += stdin_text;
  return spec;
}

bool SampleSpec::runs_on(const std::string& arch) const {
  return archs.empty() || std::find(archs.begin(), archs.end(), arch) != archs.end();
}

ProcessSpec SampleSpec::process(const std::string& binary, const std::string& tmp_dir) const {
  ProcessSpec p;
  p.argv.push_back(binary);
  for (const auto& a : args) p.argv.push_back(replace_all(a, "{tmp}", tmp_dir));
  p.env = base_env();
  p.env.insert(p.env.end(), env.begin(), env.end());
  p.stdin_data = stdin_data;
  p.cwd = tmp_dir;
  p.timeout = run_timeout();
  return p;
}

std::vector<SampleSpec> discover_samples(const std::string& source_dir, std::vector<std::string>& errors) {
  std::vector<SampleSpec> samples;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(source_dir, ec)) {
    if (!entry.is_regular_file() || entry.path().extension() != ".c") continue;
    std::ifstream file(entry.path());
    std::stringstream text;
    text << file.rdbuf();
    std::string name = entry.path().stem().string();
    std::string error;
    auto spec = parse_sample(name, text.str(), error);
    if (!spec) {
      errors.push_back(error);
      SampleSpec broken;
      broken.name = name;
      spec = broken;
    }
    spec->source_path = entry.path().string();
    samples.push_back(*spec);
  }
  if (ec) errors.push_back("cannot list " + source_dir + ": " + ec.message());
  std::sort(samples.begin(), samples.end(), [](const auto& x, const auto& y) { return x.name < y.name; });
  return samples;
}

}  // namespace tracecorn::behaviour
