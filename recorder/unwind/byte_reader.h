// Role: a bounds-checked cursor over untrusted bytes (ELF sections, SFrame,
// DWARF CFI, DW_OP expressions), used by every parser in recorder/unwind.
// Who calls it: the parsers, on whatever thread owns them; it holds no state
// beyond a span and a position.
// Invariants: a read never touches a byte outside `bytes`; a failed read leaves
// the cursor where it was and returns false (the caller turns that into an
// Error naming `base_offset() + offset()`, the offset inside the section).
// Values are read in the byte order given at construction.
#pragma once

#include <cstdint>
#include <span>

namespace tracecorn::unwind::detail {

class ByteReader {
 public:
  ByteReader(std::span<const std::uint8_t> bytes, bool little_endian, std::uint64_t base_offset = 0)
      : bytes_(bytes), little_endian_(little_endian), base_offset_(base_offset) {}

  std::uint64_t offset() const { return position_; }
  // Where offset 0 of this reader lies in the enclosing section (for errors).
  std::uint64_t section_offset() const { return base_offset_ + position_; }
  std::uint64_t size() const { return bytes_.size(); }
  std::uint64_t remaining() const { return bytes_.size() - position_; }
  bool at_end() const { return position_ >= bytes_.size(); }
  std::span<const std::uint8_t> bytes() const { return bytes_; }

  // Moves to `offset`; false (cursor unchanged) when it lies past the end.
  bool seek(std::uint64_t offset) {
    if (offset > bytes_.size()) return false;
    position_ = offset;
    return true;
  }
  bool skip(std::uint64_t count) {
    if (count > remaining()) return false;
    position_ += count;
    return true;
  }

  // Unsigned integer of `size` bytes (1..8).
  bool read_unsigned(unsigned size, std::uint64_t& value) {
    if (size == 0 || size > 8 || size > remaining()) return false;
    value = 0;
    const std::uint8_t* p = bytes_.data() + position_;
    for (unsigned i = 0; i < size; ++i) {
      const std::uint64_t byte = p[i];
      value |= little_endian_ ? byte << (8 * i) : byte << (8 * (size - 1 - i));
    }
    position_ += size;
    return true;
  }
  // Signed integer of `size` bytes (1..8), sign-extended.
  bool read_signed(unsigned size, std::int64_t& value) {
    std::uint64_t raw = 0;
    if (!read_unsigned(size, raw)) return false;
    if (size < 8 && (raw >> (8 * size - 1)) & 1) raw |= ~std::uint64_t{0} << (8 * size);
    value = static_cast<std::int64_t>(raw);
    return true;
  }
  bool u8(std::uint8_t& value) {
    std::uint64_t raw = 0;
    if (!read_unsigned(1, raw)) return false;
    value = static_cast<std::uint8_t>(raw);
    return true;
  }
  bool u16(std::uint16_t& value) {
    std::uint64_t raw = 0;
    if (!read_unsigned(2, raw)) return false;
    value = static_cast<std::uint16_t>(raw);
    return true;
  }
  bool u32(std::uint32_t& value) {
    std::uint64_t raw = 0;
    if (!read_unsigned(4, raw)) return false;
    value = static_cast<std::uint32_t>(raw);
    return true;
  }
  bool u64(std::uint64_t& value) { return read_unsigned(8, value); }

  // LEB128: at most 10 bytes; bits beyond 64 are dropped (as readelf does).
  bool uleb128(std::uint64_t& value) { return leb128(false, value); }
  bool sleb128(std::int64_t& value) {
    std::uint64_t raw = 0;
    if (!leb128(true, raw)) return false;
    value = static_cast<std::int64_t>(raw);
    return true;
  }

  // `count` bytes as a span, advancing past them.
  bool take(std::uint64_t count, std::span<const std::uint8_t>& out) {
    if (count > remaining()) return false;
    out = bytes_.subspan(position_, count);
    position_ += count;
    return true;
  }

 private:
  bool leb128(bool sign_extend, std::uint64_t& value) {
    std::uint64_t result = 0;
    unsigned shift = 0;
    std::uint64_t at = position_;
    for (unsigned count = 0; count < 10; ++count) {
      if (at >= bytes_.size()) return false;
      const std::uint8_t byte = bytes_[at++];
      if (shift < 64) result |= static_cast<std::uint64_t>(byte & 0x7f) << shift;
      shift += 7;
      if (!(byte & 0x80)) {
        if (sign_extend && shift < 64 && (byte & 0x40)) result |= ~std::uint64_t{0} << shift;
        position_ = at;
        value = result;
        return true;
      }
    }
    return false;
  }

  std::span<const std::uint8_t> bytes_;
  bool little_endian_;
  std::uint64_t base_offset_;
  std::uint64_t position_ = 0;
};

}  // namespace tracecorn::unwind::detail
