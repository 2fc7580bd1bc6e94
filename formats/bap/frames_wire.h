// Role: the protobuf wire format written directly, for the hot path of BAP
// frames (FramesWriter): the `frame` that holds a std_frame, one per
// instruction, and its operand_info entries (frames.proto), encoded straight
// into a reused buffer instead of building `frame` messages and serialising
// them. The bytes are those the generated code (protoc 3.21, lite runtime)
// serialises for the same message; tests/formats/bap/frames_wire_test.cpp
// proves it on every architecture with frames. The rarer frames (meta, key,
// syscall, exception, modload) stay on the generated code.
// Who calls it: FramesWriter on the recorder's drain thread, and the tests. No
// shared state: a ByteBuffer belongs to one thread.
// Invariants (protobuf.dev/programming-guides/encoding, as protobuf's
// SerializeWithCachedSizes writes a proto2 message): fields in field-number
// order; every required field and every optional field that is set is
// written, even when it holds its default (proto2 has presence); varints are
// minimal; sint32 is zigzag encoded; a length-delimited field's length is
// computed before its bytes are written, so nothing is moved or patched.
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "formats/common/byte_buffer.h"

namespace tracecorn::formats::bap {

namespace wire {

inline constexpr std::uint32_t kVarint = 0;
inline constexpr std::uint32_t kLengthDelimited = 2;

// A field's key: its number and wire type.
constexpr std::uint32_t key(std::uint32_t field, std::uint32_t wire_type) { return field << 3 | wire_type; }

constexpr std::size_t varint_size(std::uint64_t value) {
  return value < 0x80 ? 1 : static_cast<std::size_t>((std::bit_width(value) + 6) / 7);
}

inline std::uint8_t* put_varint(std::uint8_t* at, std::uint64_t value) {
  while (value >= 0x80) {
    *at++ = static_cast<std::uint8_t>(value | 0x80);
    value >>= 7;
  }
  *at++ = static_cast<std::uint8_t>(value);
  return at;
}

inline std::uint8_t* put_bytes(std::uint8_t* at, std::span<const std::uint8_t> bytes) {
  if (!bytes.empty()) std::memcpy(at, bytes.data(), bytes.size());
  return at + bytes.size();
}

constexpr std::uint32_t zigzag32(std::int32_t value) {
  return (static_cast<std::uint32_t>(value) << 1) ^ static_cast<std::uint32_t>(value >> 31);
}

// The bytes of a varint field (key and value) and of a length-delimited one
// (key, length and `payload` bytes).
constexpr std::size_t varint_field_size(std::uint32_t key, std::uint64_t value) {
  return varint_size(key) + varint_size(value);
}
constexpr std::size_t delimited_field_size(std::uint32_t key, std::size_t payload) {
  return varint_size(key) + varint_size(payload) + payload;
}

inline std::uint8_t* put_varint_field(std::uint8_t* at, std::uint32_t key, std::uint64_t value) {
  return put_varint(put_varint(at, key), value);
}
// Key and length; the caller writes the `payload` bytes next.
inline std::uint8_t* put_delimited_header(std::uint8_t* at, std::uint32_t key, std::size_t payload) {
  return put_varint(put_varint(at, key), payload);
}
inline std::uint8_t* put_delimited_field(std::uint8_t* at, std::uint32_t key, std::span<const std::uint8_t> payload) {
  return put_bytes(put_delimited_header(at, key, payload.size()), payload);
}

}  // namespace wire

// operand_usage's four flags (all required).
struct OperandUsage {
  bool read = false;
  bool written = false;
  bool index = false;
  bool base = false;
};

// operand_info's field 1 (key, length, operand_info_specific) naming a
// register: reg_operand { name }. Made once per register of the arch table.
std::vector<std::uint8_t> register_operand_specific(std::string_view name);

// operand_info's field 1 naming a memory operand: mem_operand { address }.
struct MemoryOperandSpecific {
  std::uint8_t bytes[16];  // key, length, key, length, key, address (at most 10 bytes)
  std::uint8_t size = 0;
  std::span<const std::uint8_t> span() const { return {bytes, size}; }
};
MemoryOperandSpecific memory_operand_specific(std::uint64_t address);

// Appends to `list` (an operand_value_list's bytes) one `elem`: operand_info
// { specific (register_operand_specific's or memory_operand_specific's bytes),
// bit_length, usage, taint_info { no_taint: true }, value }.
void append_operand(ByteBuffer& list, std::span<const std::uint8_t> specific, std::int32_t bit_length,
                    OperandUsage usage, std::span<const std::uint8_t> value);

// One register's whole `elem`, encoded once (its name, and its width: the
// value's size, bit_length = 8 x size, are fixed): append() copies it and
// fills in the usage flags and the value. What append_operand writes for the
// same operand, without working out its sizes each time. Both copies are of a
// fixed size (kCopyBytes, 16), which the compiler inlines: the list gets them
// as slack beyond the elem.
class RegisterOperandEncoder {
 public:
  using Value = std::array<std::uint8_t, 16>;  // events::RegisterValue's bytes: the first value_size used
  static constexpr std::size_t kCopyBytes = 64;

  // `value_size`: 1 to 16 bytes (a wider register is cut to its first 16, as the writer does).
  RegisterOperandEncoder(std::string_view name, std::size_t value_size);
  void append(ByteBuffer& list, OperandUsage usage, const Value& value) const {
    if (size_ > kCopyBytes) return append_long(list, usage, value);  // (a long name: past 20 bytes or so)
    std::uint8_t* at = list.append(size_, kCopyBytes + sizeof(Value));
    std::memcpy(at, encoded_.data(), kCopyBytes);
    set_usage(at, usage);
    std::memcpy(at + value_at_, value.data(), sizeof(Value));
  }

 private:
  void set_usage(std::uint8_t* elem, OperandUsage usage) const {
    elem[usage_at_ + 1] = usage.read;  // each flag after its one-byte key
    elem[usage_at_ + 3] = usage.written;
    elem[usage_at_ + 5] = usage.index;
    elem[usage_at_ + 7] = usage.base;
  }
  void append_long(ByteBuffer& list, OperandUsage usage, const Value& value) const;

  std::vector<std::uint8_t> encoded_;  // with the flags false and the value zero (kCopyBytes at least)
  std::size_t size_ = 0;               // the elem's bytes
  std::size_t usage_at_ = 0;           // operand_usage's first key
  std::size_t value_at_ = 0;           // the value's first byte (the value ends the elem)
};

// The fields of one std_frame. The operand lists are operand_value_list
// message bodies (append_operand's bytes); nullopt leaves an optional field
// out, an empty list that is present is written with length 0.
struct StdFrameFields {
  std::uint64_t address = 0;
  std::uint64_t thread_id = 0;
  std::span<const std::uint8_t> rawbytes;
  std::span<const std::uint8_t> operand_pre_list;                       // required
  std::optional<std::span<const std::uint8_t>> operand_post_list;       // field 5
  std::optional<std::string_view> mode;                                 // field 6
  std::optional<std::span<const std::uint8_t>> tracecorn_unattributed;  // field 1000
};

// The sizes of `frame { std_frame = fields }` (`message`) and of the
// std_frame inside it (`std_frame`), worked out once for write_std_frame.
struct StdFrameSizes {
  std::size_t std_frame = 0;
  std::size_t message = 0;
};
StdFrameSizes std_frame_sizes(const StdFrameFields& fields);
// Writes the `frame` message, exactly sizes.message bytes at `at` (sizes:
// std_frame_sizes(fields)); returns the end.
std::uint8_t* write_std_frame(std::uint8_t* at, const StdFrameFields& fields, const StdFrameSizes& sizes);

}  // namespace tracecorn::formats::bap
