// Role: turns "these two outputs differ" into a message a person can act on:
// a unified-diff-like excerpt with line numbers, used by every comparison in
// the behaviour tests.
//
// Pure functions, no state; safe from any thread.
// Invariants: returns "" exactly when the inputs are byte-identical; bytes
// that are not printable ASCII are shown as \xNN so binary output (gzip) and
// missing final newlines stay visible; the message is bounded (about 80 lines)
// however large the inputs are.
#pragma once

#include <string>
#include <string_view>

namespace tracecorn::behaviour {

// "" if `expected` == `actual`; otherwise a header naming both sides and the
// byte offset (and line, column) of the first difference, then the
// differing lines prefixed "-" (expected) and "+" (actual) with a little
// context prefixed " ", and "@@ line N @@" markers giving 1-based line numbers
// in `expected`.
std::string describe_difference(std::string_view expected_label, std::string_view expected,
                                std::string_view actual_label, std::string_view actual);

// `text` with bytes outside printable ASCII escaped (\n kept as a line break
// only when `keep_newlines`), cut to `max_bytes` with a marker.
std::string printable(std::string_view text, bool keep_newlines = true, std::size_t max_bytes = 4000);

}  // namespace tracecorn::behaviour
