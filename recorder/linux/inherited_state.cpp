// Role: the text form of InheritedState (see inherited_state.h). One field a
// line: `name value`; strings are written as `LENGTH:BYTES` so that any byte
// (a newline in an argument) survives; lists repeat the field.
// Threads: any; no shared state.
#include "recorder/linux/inherited_state.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>

namespace tracecorn::linux_layer {
namespace {

void put_string(std::string& out, std::string_view name, std::string_view value) {
  out.append(name).append(" ").append(std::to_string(value.size())).append(":").append(value).append("\n");
}
void put_number(std::string& out, std::string_view name, std::uint64_t value) {
  out.append(name).append(" ").append(std::to_string(value)).append("\n");
}

class Cursor {
 public:
  explicit Cursor(std::string_view text) : text_(text) {}
  bool done() const { return at_ >= text_.size(); }
  std::size_t offset() const { return at_; }
  // The field name of the next line.
  std::string_view name() {
    const std::size_t space = text_.find(' ', at_);
    if (space == std::string_view::npos) return {};
    const std::string_view result = text_.substr(at_, space - at_);
    at_ = space + 1;
    return result;
  }
  bool number(std::uint64_t& value) {
    const char* begin = text_.data() + at_;
    const auto [end, error] = std::from_chars(begin, text_.data() + text_.size(), value);
    if (error != std::errc() || end == text_.data() + text_.size() || *end != '\n') return false;
    at_ = static_cast<std::size_t>(end - text_.data()) + 1;
    return true;
  }
  bool string(std::string& value) {
    std::uint64_t length = 0;
    const char* begin = text_.data() + at_;
    const auto [end, error] = std::from_chars(begin, text_.data() + text_.size(), length);
    if (error != std::errc() || end == text_.data() + text_.size() || *end != ':') return false;
    const std::size_t start = static_cast<std::size_t>(end - text_.data()) + 1;
    if (length > text_.size() - start || start + length >= text_.size() || text_[start + length] != '\n') return false;
    value.assign(text_.substr(start, length));
    at_ = start + length + 1;
    return true;
  }

 private:
  std::string_view text_;
  std::size_t at_ = 0;
};

// A field of the last descriptor (fd_counter, fd_signal_of, fd_signal_mask).
bool set_descriptor_field(InheritedState& state, std::string_view name, std::uint64_t number) {
  if (state.descriptors.empty()) return false;
  InheritedDescriptor& fd = state.descriptors.back();
  if (name == "fd_counter") fd.counter_words = number != 0;
  else if (name == "fd_signal_of" && number < (1u << 20)) fd.signal_fd_of = static_cast<int>(number);
  else if (name == "fd_signal_mask") fd.signal_mask = number;
  else return false;
  return true;
}

// A pending signal's siginfo: "sig" starts one, the others fill it.
bool set_signal_field(InheritedState& state, std::string_view name, std::uint64_t number) {
  if (name == "sig") {
    if (number < 1 || number > 64) return false;
    state.pending_origins.push_back(InheritedSignal{static_cast<int>(number)});
    return true;
  }
  if (state.pending_origins.empty()) return false;
  InheritedSignal& origin = state.pending_origins.back();
  if (name == "sig_code") origin.code = static_cast<int>(static_cast<std::uint32_t>(number));
  else if (name == "sig_pid") origin.pid = number;
  else if (name == "sig_uid") origin.uid = number;
  else if (name == "sig_value") origin.value = number;
  else return false;
  return true;
}

}  // namespace

std::string serialize(const InheritedState& state) {
  std::string out;
  put_string(out, "program", state.program);
  put_string(out, "execfn", state.execfn);
  for (const auto& arg : state.argv) put_string(out, "arg", arg);
  for (const auto& env : state.envp) put_string(out, "env", env);
  for (const auto& fd : state.descriptors) {
    put_number(out, "fd", static_cast<std::uint64_t>(fd.guest_fd));
    put_number(out, "host_fd", static_cast<std::uint64_t>(fd.host_fd));
    put_string(out, "fd_path", fd.guest_path);
    if (fd.counter_words) put_number(out, "fd_counter", 1);
    if (fd.signal_fd_of >= 0) {
      put_number(out, "fd_signal_of", static_cast<std::uint64_t>(fd.signal_fd_of));
      put_number(out, "fd_signal_mask", fd.signal_mask);
    }
  }
  put_string(out, "cwd", state.cwd);
  put_number(out, "umask", static_cast<std::uint64_t>(state.umask));
  put_number(out, "ignored", state.ignored_signals);
  put_number(out, "blocked", state.blocked_signals);
  put_number(out, "pending", state.pending_signals);
  for (const auto& origin : state.pending_origins) {
    put_number(out, "sig", static_cast<std::uint64_t>(origin.signal));
    put_number(out, "sig_code", static_cast<std::uint64_t>(static_cast<std::uint32_t>(origin.code)));
    put_number(out, "sig_pid", origin.pid);
    put_number(out, "sig_uid", origin.uid);
    put_number(out, "sig_value", origin.value);
  }
  put_number(out, "tree_root", state.tree_root_pid);
  put_number(out, "image", state.image_serial);
  for (const auto child : state.children) put_number(out, "child", child);
  return out;
}

Expected<InheritedState> parse_inherited_state(std::string_view text) {
  InheritedState state;
  Cursor cursor(text);
  while (!cursor.done()) {
    const std::size_t line_start = cursor.offset();
    const std::string name(cursor.name());
    std::uint64_t number = 0;
    std::string value;
    bool ok = false;
    if (name == "program") ok = cursor.string(state.program);
    else if (name == "execfn") ok = cursor.string(state.execfn);
    else if (name == "arg" || name == "env" || name == "fd_path" || name == "cwd") {
      ok = cursor.string(value);
      if (ok && name == "arg") state.argv.push_back(value);
      else if (ok && name == "env") state.envp.push_back(value);
      else if (ok && name == "cwd") state.cwd = value;
      else if (ok) ok = !state.descriptors.empty() && (state.descriptors.back().guest_path = value, true);
    } else {
      ok = cursor.number(number);
      if (!ok) {
      } else if (name == "fd") state.descriptors.push_back({static_cast<int>(number), -1, {}});
      else if (name == "host_fd") ok = !state.descriptors.empty() && (state.descriptors.back().host_fd = static_cast<int>(number), true);
      else if (name.starts_with("fd_")) ok = set_descriptor_field(state, name, number);
      else if (name.starts_with("sig")) ok = set_signal_field(state, name, number);
      else if (name == "umask") state.umask = static_cast<int>(number & 0777);
      else if (name == "ignored") state.ignored_signals = number;
      else if (name == "blocked") state.blocked_signals = number;
      else if (name == "pending") state.pending_signals = number;
      else if (name == "tree_root") state.tree_root_pid = number;
      else if (name == "image") state.image_serial = number;
      else if (name == "child") state.children.push_back(number);
      else ok = false;
    }
    if (!ok)
      return make_error(ErrorCode::kBadFormat, "exec state: bad field '" + name + "'", "exec state", line_start);
  }
  if (state.program.empty() || state.argv.empty())
    return make_error(ErrorCode::kBadFormat, "exec state: no program or argv", "exec state");
  return state;
}

Expected<int> write_inherited_state(const InheritedState& state) {
  const int fd = ::memfd_create("tracecorn-exec-state", 0);
  if (fd < 0) return make_error(ErrorCode::kIo, std::string("memfd_create: ") + std::strerror(errno));
  const std::string text = serialize(state);
  std::size_t written = 0;
  while (written < text.size()) {
    const ssize_t n = ::write(fd, text.data() + written, text.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int error = errno;
      ::close(fd);
      return make_error(ErrorCode::kIo, std::string("writing the exec state: ") + std::strerror(error));
    }
    written += static_cast<std::size_t>(n);
  }
  return fd;
}

Expected<InheritedState> read_inherited_state(int fd) {
  std::string text;
  char buffer[65536];
  for (off_t offset = 0;;) {
    const ssize_t n = ::pread(fd, buffer, sizeof buffer, offset);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int error = errno;
      ::close(fd);
      return make_error(ErrorCode::kIo, std::string("reading the exec state: ") + std::strerror(error),
                        "descriptor " + std::to_string(fd));
    }
    if (n == 0) break;
    text.append(buffer, static_cast<std::size_t>(n));
    offset += n;
  }
  ::close(fd);
  return parse_inherited_state(text);
}

}  // namespace tracecorn::linux_layer
