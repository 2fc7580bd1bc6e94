// Role: the error vocabulary of tracecorn: `Error` (a code, where it happened, a
// message) and `Expected<T>`, a value-or-error result used by every parser of
// untrusted bytes (ELF, trace files, unwind tables) and every fallible set-up step.
// Invariants: an Expected holds exactly one of a value or an Error; reading the
// wrong alternative is a programming error and throws std::logic_error (it never
// reads garbage). Header-only; usable from any component, including arch/.
#pragma once

#include <cstdint>
#include <cstdio>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <variant>

namespace tracecorn {

enum class ErrorCode : std::uint8_t {
  kIo,           // the host refused a read, write or open
  kNotFound,     // a file or path does not exist
  kBadFormat,    // bytes that do not follow the format (bad magic, bad field)
  kTruncated,    // the input ends before a structure it announces
  kUnsupported,  // valid input tracecorn cannot handle yet (an architecture, a feature)
  kEmulator,     // Unicorn refused a set-up call
  kLimit,        // a configured limit was reached
  kInvalidArgument,
};

// What went wrong, and where: `source` names the file (or other input), `offset`
// the byte offset inside it when one is known.
struct Error {
  ErrorCode code = ErrorCode::kBadFormat;
  std::string message;
  std::string source;
  std::optional<std::uint64_t> offset;

  // "FILE: at offset 0x40: MESSAGE", omitting the parts that are unknown.
  std::string to_string() const {
    std::string text;
    if (!source.empty()) text += source + ": ";
    if (offset) {
      char buffer[40];
      std::snprintf(buffer, sizeof buffer, "at offset 0x%llx: ",
                    static_cast<unsigned long long>(*offset));
      text += buffer;
    }
    return text + message;
  }
};

inline Error make_error(ErrorCode code, std::string message, std::string source = {},
                        std::optional<std::uint64_t> offset = std::nullopt) {
  return Error{code, std::move(message), std::move(source), offset};
}

// A typed exception carrying an Error, for the few places (the CLI, test helpers)
// where unwinding is the clearer control flow. Never thrown through Unicorn's C frames.
class TracecornError : public std::runtime_error {
 public:
  explicit TracecornError(Error error) : std::runtime_error(error.to_string()), error_(std::move(error)) {}
  const Error& error() const noexcept { return error_; }

 private:
  Error error_;
};

template <typename T>
class [[nodiscard]] Expected {
 public:
  Expected(T value) : storage_(std::in_place_index<0>, std::move(value)) {}  // NOLINT: implicit by design
  Expected(Error error) : storage_(std::in_place_index<1>, std::move(error)) {}  // NOLINT

  bool has_value() const noexcept { return storage_.index() == 0; }
  explicit operator bool() const noexcept { return has_value(); }

  T& value() & { check_value(); return std::get<0>(storage_); }
  const T& value() const& { check_value(); return std::get<0>(storage_); }
  T&& value() && { check_value(); return std::get<0>(std::move(storage_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  const Error& error() const {
    if (has_value()) throw std::logic_error("Expected::error() on a value");
    return std::get<1>(storage_);
  }

  // The value, or throws TracecornError with the error.
  T value_or_throw() && {
    if (!has_value()) throw TracecornError(std::get<1>(storage_));
    return std::get<0>(std::move(storage_));
  }

 private:
  void check_value() const {
    if (!has_value()) throw std::logic_error("Expected::value() on an error: " + std::get<1>(storage_).to_string());
  }
  std::variant<T, Error> storage_;
};

// Expected<void>: success or an Error.
struct Ok {};
using Status = Expected<Ok>;
inline Status ok_status() { return Ok{}; }

}  // namespace tracecorn
