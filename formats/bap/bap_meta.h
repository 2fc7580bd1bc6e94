// Role: what a BAP frames trace says about itself in its meta frame (container
// version >= 2: the tracer, the traced program, its file's stats, who, where,
// when), as plain data, and the host-side collection of it for the writer.
// Who calls it: the CLI (collect_host_meta, before recording), FramesWriter
// (writes it), FramesReader (gives it back). Any thread; no shared state.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "recorder/support/expected.h"

namespace tracecorn::formats {

struct FramesMeta {
  std::string tracer_name = "tracecorn";
  std::vector<std::string> tracer_args;  // the tracer's own command line
  std::vector<std::string> tracer_envp;  // the tracer's environment
  std::string tracer_version;
  std::string target_path;               // the traced program
  std::vector<std::string> target_args;
  std::vector<std::string> target_envp;  // the program's environment
  std::vector<std::uint8_t> target_md5;  // 16 bytes: MD5 of the program's file
  std::int32_t target_size = 0;          // bytes (saturated at INT32_MAX: piqi's `int`)
  double target_atime = 0, target_mtime = 0, target_ctime = 0;  // seconds since the epoch
  std::string user;
  std::string host;
  double time = 0;  // when the recording started, seconds since the epoch
  std::string level;  // tracecorn's: the recording's level ("" when unknown)
};

// Fills the MD5 and the stats of the file at `meta.target_path`, and the user,
// the host and the current time. Fails (kNotFound/kIo, naming the file) when
// the file cannot be read; the other fields are then still filled.
// The MD5 (RFC 1321) comes from Debian's nettle.
Status collect_host_meta(FramesMeta& meta);

}  // namespace tracecorn::formats
