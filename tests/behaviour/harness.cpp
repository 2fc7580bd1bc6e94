// Role: implementation of the behaviour-test harness (see harness.h).
#include "harness.h"

#include <fcntl.h>
#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>

#include "tests/support/architectures.h"

#ifndef TRACECORN_BEHAVIOUR_TRACECORN
#error "tests/behaviour/CMakeLists.txt must define TRACECORN_BEHAVIOUR_TRACECORN"
#endif

namespace tracecorn::behaviour {
namespace {

constexpr std::string_view kTracecornPrefix = "tracecorn: ";

std::string from_env(const char* name, const char* fallback) {
  const char* value = std::getenv(name);
  return value && *value ? value : fallback;
}

int remove_entry(const char* path, const struct stat*, int, struct FTW*) { return ::remove(path); }

template <typename Fn>
void for_each_line(std::string_view text, Fn fn) {
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    std::size_t stop = end == std::string_view::npos ? text.size() : end + 1;
    fn(text.substr(start, stop - start));
    start = stop;
  }
}

}  // namespace

const Paths& paths() {
  static const Paths p = {
      from_env("TRACECORN_BIN", TRACECORN_BEHAVIOUR_TRACECORN),
      from_env("TRACECORN_SAMPLES_SOURCE_DIR", TRACECORN_BEHAVIOUR_SAMPLES_SOURCE_DIR),
      from_env("TRACECORN_SAMPLES_BINARY_DIR", TRACECORN_BEHAVIOUR_SAMPLES_BINARY_DIR),
      from_env("QEMU_X86_64", "/usr/bin/qemu-x86_64-static"),
      from_env("BUSYBOX", "/bin/busybox"),
  };
  return p;
}

const std::vector<std::string>& variants() {
  static const std::vector<std::string> v(test_support::host_architecture().sample_variants.begin(),
                                          test_support::host_architecture().sample_variants.end());
  return v;
}

std::string cross_samples_binary(const std::string& arch) { return paths().samples_binary + "-" + arch; }

std::string qemu_for(const std::string& arch) {
  std::string variable = "QEMU_";
  for (const char c : arch) variable += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return from_env(variable.c_str(), ("/usr/bin/qemu-" + arch + "-static").c_str());
}

std::vector<std::string> qemu_cpu_options(const std::string& arch) {
  const test_support::GuestArchitecture* row = test_support::find_guest_architecture(arch);
  if (!row || row->qemu_cpu.empty()) return {};
  return {"-cpu", std::string(row->qemu_cpu)};
}

std::vector<std::string> base_env() {
  return {"PATH=/usr/bin:/bin", "LC_ALL=C", "TZ=UTC", "HOME=/nonexistent-home"};
}

std::chrono::milliseconds run_timeout() {
  const char* text = std::getenv("TRACECORN_BEHAVIOUR_TIMEOUT");
  long seconds = text ? std::strtol(text, nullptr, 10) : 0;
  // A sanitized build (scripts/asan.sh) runs tracecorn several times slower.
  return std::chrono::milliseconds(1000 * (seconds > 0 ? seconds : 20 * TRACECORN_BEHAVIOUR_TIMEOUT_SCALE));
}

TempDir::TempDir(std::string_view tag) {
  std::string base = from_env("TMPDIR", "/tmp");
  std::string pattern = base + "/tracecorn-" + std::string(tag) + "-XXXXXX";
  std::vector<char> buffer(pattern.begin(), pattern.end());
  buffer.push_back('\0');
  if (!mkdtemp(buffer.data())) throw std::system_error(errno, std::generic_category(), "mkdtemp " + pattern);
  path_ = buffer.data();
}

TempDir::~TempDir() {
  // Guests may leave read-only directories behind; make them writable first.
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(path_, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    if (it->is_directory(ec) && !it->is_symlink(ec)) chmod(it->path().c_str(), 0700);
  }
  nftw(path_.c_str(), remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

std::string TempDir::operator/(std::string_view relative) const { return path_ + "/" + std::string(relative); }

void write_file(const std::string& path, std::string_view bytes, long long mtime_epoch) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) throw std::system_error(errno, std::generic_category(), "write " + path);
  if (mtime_epoch >= 0) set_mtime(path, mtime_epoch);
}

void set_mtime(const std::string& path, long long mtime_epoch) {
  struct timespec times[2] = {{static_cast<time_t>(mtime_epoch), 0}, {static_cast<time_t>(mtime_epoch), 0}};
  if (utimensat(AT_FDCWD, path.c_str(), times, AT_SYMLINK_NOFOLLOW) != 0)
    throw std::system_error(errno, std::generic_category(), "utimensat " + path);
}

ProcessSpec under_tracecorn(ProcessSpec native, const std::vector<std::string>& options) {
  std::vector<std::string> argv = {paths().tracecorn, "run"};
  argv.insert(argv.end(), options.begin(), options.end());
  argv.push_back("--");
  argv.insert(argv.end(), native.argv.begin(), native.argv.end());
  native.argv = std::move(argv);
  return native;
}

std::string drop_tracecorn_lines(std::string_view stderr_text) {
  std::string kept;
  for_each_line(stderr_text, [&](std::string_view line) {
    if (!line.starts_with(kTracecornPrefix)) kept += line;
  });
  return kept;
}

ProcessResult without_qemu_messages(ProcessResult result) {
  std::string kept;
  for_each_line(result.err, [&](std::string_view line) {
    if (!line.starts_with("qemu: uncaught target signal ")) kept += line;
  });
  result.err = std::move(kept);
  return result;
}

int count_tracecorn_lines(std::string_view stderr_text) {
  int n = 0;
  for_each_line(stderr_text, [&](std::string_view line) { n += line.starts_with(kTracecornPrefix); });
  return n;
}

std::string compare_runs(const ProcessSpec& native_spec, const ProcessResult& native,
                         const ProcessResult& emulated) {
  std::string problems;
  if (!native.spawn_error.empty() || native.timed_out)
    problems += "the native run itself failed: " + native.describe_status() + "\n";
  if (!emulated.spawn_error.empty()) problems += "tracecorn did not start: " + emulated.spawn_error + "\n";
  if (emulated.timed_out) problems += "tracecorn timed out (limit " + std::to_string(native_spec.timeout.count() / 1000) + " s)\n";
  if (native.status != emulated.status)
    problems += "exit status differs: native " + native.describe_status() + ", tracecorn " +
                emulated.describe_status() + "\n";
  if (native.signal != 0 && count_tracecorn_lines(emulated.err) == 0)
    problems += "the guest died of a signal but tracecorn printed no 'tracecorn: ' line on stderr\n";
  problems += describe_difference("native stdout", native.out, "tracecorn stdout", emulated.out);
  problems += describe_difference("native stderr", native.err, "tracecorn stderr without 'tracecorn: ' lines",
                                  drop_tracecorn_lines(emulated.err));
  if (problems.empty()) return "";
  std::string message = "native and tracecorn runs differ\ncommand: " + quote_command(native_spec.argv) + "\n";
  if (!native_spec.stdin_data.empty())
    message += "stdin: " + std::to_string(native_spec.stdin_data.size()) + " bytes\n";
  message += problems;
  if (count_tracecorn_lines(emulated.err) > 0) {
    message += "tracecorn's own messages:\n";
    for_each_line(emulated.err, [&](std::string_view line) {
      if (line.starts_with(kTracecornPrefix)) message += "  " + printable(line, true, 500);
    });
    if (message.back() != '\n') message += '\n';
  }
  message += "times: native " + std::to_string(native.seconds) + " s, tracecorn " + std::to_string(emulated.seconds) + " s\n";
  return message;
}

std::string fnv1a_hex(std::string_view bytes) {
  std::uint64_t h = 14695981039346656037ull;
  for (unsigned char c : bytes) h = (h ^ c) * 1099511628211ull;
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(h));
  return text;
}

std::string snapshot_tree(const std::string& dir) {
  namespace fs = std::filesystem;
  std::vector<std::string> lines;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    struct stat st;
    const std::string path = it->path().string();
    if (lstat(path.c_str(), &st) != 0) continue;
    std::string line = fs::relative(it->path(), dir, ec).string();
    char mode[16];
    std::snprintf(mode, sizeof mode, " %04o", static_cast<unsigned>(st.st_mode & 07777));
    if (S_ISDIR(st.st_mode)) {
      line += " dir" + std::string(mode);
    } else if (S_ISLNK(st.st_mode)) {
      line += " symlink -> " + fs::read_symlink(it->path(), ec).string();
    } else if (S_ISREG(st.st_mode)) {
      std::ifstream in(path, std::ios::binary);
      std::stringstream content;
      content << in.rdbuf();
      line += " file" + std::string(mode) + " size " + std::to_string(st.st_size) + " fnv1a " + fnv1a_hex(content.str());
    } else {
      line += " other" + std::string(mode);
    }
    lines.push_back(line + "\n");
  }
  if (ec) lines.push_back("(listing failed: " + ec.message() + ")\n");
  std::sort(lines.begin(), lines.end());
  std::string text;
  for (const auto& l : lines) text += l;
  return text;
}

std::string missing_executable(const std::string& path, std::string_view how_to_get_it) {
  if (access(path.c_str(), X_OK) == 0) return "";
  return path + " is missing or not executable (" + std::string(how_to_get_it) + ")";
}

}  // namespace tracecorn::behaviour
