// Role: the message of a failed Expected for doctest's *_MESSAGE assertions:
// "" when it holds a value. doctest evaluates a message for passing
// assertions too when asked to report successes (-s), where calling error()
// on a value would throw; this never does.
// Threads: a pure function.
#pragma once

#include <string>

#include "recorder/support/expected.h"

namespace tracecorn::test_support {

template <typename T>
std::string error_text(const Expected<T>& result) {
  return result.has_value() ? std::string() : result.error().to_string();
}

}  // namespace tracecorn::test_support
