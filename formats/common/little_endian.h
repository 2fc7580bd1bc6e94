// Role: appending bytes and little-endian numbers to a trace writer's output:
// a std::vector<std::uint8_t> (headers and sections built once) or a
// ByteBuffer (the hot path: UCIR's frames, the binary trace's events).
// Who calls it: the UCIR and binary trace writers, on their writing thread;
// pure functions over the caller's buffer.
// Invariant: numbers are stored little endian whatever the host's order.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "formats/common/byte_buffer.h"

namespace tracecorn::formats {

// `count` more bytes at the end of `out`, for the caller to fill.
// (The helpers are forced inline: they run several times per event, and GCC
// leaves them as calls at -O2.)
inline std::uint8_t* append_to(std::vector<std::uint8_t>& out, std::size_t count) {
  out.resize(out.size() + count);
  return out.data() + out.size() - count;
}
[[gnu::always_inline]] inline std::uint8_t* append_to(ByteBuffer& out, std::size_t count) { return out.append(count); }

template <typename Out>
[[gnu::always_inline]] inline void put_bytes(Out& out, std::span<const std::uint8_t> bytes) {
  if (!bytes.empty()) std::memcpy(append_to(out, bytes.size()), bytes.data(), bytes.size());
}
template <typename Out>
[[gnu::always_inline]] inline void put_u8(Out& out, std::uint8_t value) {
  *append_to(out, 1) = value;
}

// `value` in sizeof(Unsigned) little-endian bytes at `at`; returns the end.
template <typename Unsigned>
[[gnu::always_inline]] inline std::uint8_t* store_le(std::uint8_t* at, Unsigned value) {
  if constexpr (std::endian::native == std::endian::little) {
    std::memcpy(at, &value, sizeof value);  // one store (GCC keeps the loop below as a loop)
  } else {
    for (std::size_t i = 0; i < sizeof(Unsigned); ++i) at[i] = static_cast<std::uint8_t>(value >> (8 * i));
  }
  return at + sizeof(Unsigned);
}
template <typename Out>
[[gnu::always_inline]] inline void put_u16(Out& out, std::uint16_t value) {
  store_le(append_to(out, sizeof value), value);
}
template <typename Out>
[[gnu::always_inline]] inline void put_u32(Out& out, std::uint32_t value) {
  store_le(append_to(out, sizeof value), value);
}
template <typename Out>
[[gnu::always_inline]] inline void put_u64(Out& out, std::uint64_t value) {
  store_le(append_to(out, sizeof value), value);
}
// The low `bytes` bytes of `value`, little endian, zero beyond 8: a width the
// format declares at run time (a register's size, an address size).
template <typename Out>
void put_le(Out& out, std::uint64_t value, std::size_t bytes) {
  std::uint8_t* at = append_to(out, bytes);
  for (std::size_t i = 0; i < bytes; ++i) at[i] = static_cast<std::uint8_t>(i < 8 ? value >> (8 * i) : 0);
}

}  // namespace tracecorn::formats
