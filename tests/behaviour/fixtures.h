// Role: deterministic inputs shared by the busybox and Debian comparisons:
// text to sort and filter, a payload to hash and compress, and a prepared
// directory with fixed names, modes, contents and times for `ls`.
//
// Called from test bodies on the main thread.
// Invariants: every byte and every timestamp is a fixed function of the code
// (no clock, no randomness), so the native and the emulated run see the same
// input; directories that both runs read are created once per test and never
// written by the program under test.
#pragma once

#include <string>

#include "harness.h"

namespace tracecorn::behaviour {

// A dozen short lines with duplicates, numbers, mixed case, an empty line and
// leading blanks: input for sort, uniq, wc, tr, head, tail.
std::string sample_text();

// `bytes` bytes of line-structured deterministic text (for hashing, gzip).
std::string payload(std::size_t bytes);

// Fills `dir` with: alpha.txt (0644, 6 bytes), gamma.sh (0755), beta/ (0755)
// holding inner.txt (0644) and "with space.txt" (0600, empty), and
// link -> alpha.txt; modes are set explicitly (no umask); every entry,
// and `dir` itself, gets the same fixed mtime (2001-09-09 01:46:40 UTC).
void prepare_listing_dir(const std::string& dir);

}  // namespace tracecorn::behaviour
