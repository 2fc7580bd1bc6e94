// Role: reads the run directives of a guest sample (samples/guest/*.c) and
// finds the samples; the convention is documented in samples/README.md:
//
//   // args: {tmp} "two words" ''    arguments after argv[0]; shell-like
//                                    single/double quotes, no escapes;
//                                    {tmp} becomes a fresh empty directory
//   // env: KEY=VALUE                one more environment entry (repeatable)
//   // stdin: text\n                 stdin bytes; escapes \n \t \\ \xNN
//   // stdin-repeat: N               stdin is the text repeated N times
//   // exit: N                       expected native exit status (128+sig
//                                    for a death by signal)
//   // strace: yes                   take part in the syscall-sequence
//                                    comparison against qemu -strace
//   // archs: x86_64                 only these guest architectures (the
//                                    sample is x86-specific); default: all
//
// Called from test bodies on the main thread.
// Invariants: directives are read only from the comment block at the top of
// the file (lines starting with "//" before the first other line); a
// lowercase "key:" there that is not a known directive is an error, so typos
// fail loudly instead of being ignored; sources are trusted (they are ours),
// but errors still come back as messages, never aborts.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "subprocess.h"

namespace tracecorn::behaviour {

struct SampleSpec {
  std::string name;                    // file name without ".c"
  std::string source_path;
  std::vector<std::string> args;       // may contain "{tmp}"
  std::vector<std::string> env;        // extra "KEY=VALUE" entries
  std::string stdin_data;
  std::optional<int> expected_exit;    // native status the sample promises
  bool strace = false;
  std::vector<std::string> archs;      // empty: every architecture

  // Whether the sample is meant for guest architecture `arch` ("aarch64").
  bool runs_on(const std::string& arch) const;

  // The native run of `binary` with these directives, {tmp} replaced by
  // `tmp_dir`, run in `tmp_dir` with base_env() plus `env`.
  ProcessSpec process(const std::string& binary, const std::string& tmp_dir) const;
};

// Parses the directive block of `source_text`. Returns the spec, or an error
// message naming the line in `error`.
std::optional<SampleSpec> parse_sample(const std::string& name, const std::string& source_text,
                                       std::string& error);

// Splits a directive's argument text into words (see the header comment).
// Returns false with `error` set on an unterminated quote.
bool split_words(const std::string& text, std::vector<std::string>& words, std::string& error);

// Decodes \n \t \\ \xNN in a stdin directive.
std::string unescape(const std::string& text);

// Every samples/guest/*.c under `source_dir`, sorted by name. A sample whose
// directives fail to parse is returned with its name and the error in
// `errors` ("name: message"), so the caller can fail that sample loudly.
std::vector<SampleSpec> discover_samples(const std::string& source_dir, std::vector<std::string>& errors);

}  // namespace tracecorn::behaviour
