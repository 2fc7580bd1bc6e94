// Role: hex(value), the "0x1f" text of an address, offset or value that error
// messages and dumps print. Header-only, pure, no state; any thread.
#pragma once

#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <string>

namespace tracecorn {

// `value` in lowercase hexadecimal with a 0x prefix and no padding.
inline std::string hex(std::uint64_t value) {
  char text[24];
  std::snprintf(text, sizeof text, "0x%" PRIx64, value);
  return text;
}

}  // namespace tracecorn
