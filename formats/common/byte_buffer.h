// Role: a growable byte buffer for the trace writers' hot paths (BAP frames'
// wire bytes, UCIR's frame ops): append() hands out bytes to fill without
// zero-filling them and checks the capacity once per call, where a
// std::vector<std::uint8_t> would check it (and may not inline) per byte.
// Who calls it: one writer on one thread; not thread safe.
// Invariant: the caller of append(count) writes every one of the `count` bytes.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>

namespace tracecorn::formats {

// A growable byte buffer that never zero-fills what it hands out: the caller
// of append() writes every byte it asked for. Reused across frames (clear()
// keeps the capacity), so the hot path allocates nothing once it is warm.
class ByteBuffer {
 public:
  // `count` more bytes at the end, for the caller to fill; valid until the
  // next append(). With `slack`, `slack` bytes after them may be written too
  // (a fixed-size copy); the next append() overwrites them.
  // (Forced inline, with grow() kept out of line: it runs several times per
  // event, and GCC would otherwise inline grow() into it and call it.)
  [[gnu::always_inline]] std::uint8_t* append(std::size_t count, std::size_t slack = 0) {
    if (count + slack > capacity_ - size_) grow(size_ + count + slack);
    std::uint8_t* at = data_.get() + size_;
    size_ += count;
    return at;
  }
  void append(std::span<const std::uint8_t> bytes) {
    if (!bytes.empty()) std::memcpy(append(bytes.size()), bytes.data(), bytes.size());
  }
  std::span<const std::uint8_t> bytes() const { return {data_.get(), size_}; }
  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  void clear() { size_ = 0; }
  void shrink_to(std::size_t size) { size_ = std::min(size, size_); }  // keeps the first `size` bytes

 private:
  [[gnu::noinline]] void grow(std::size_t needed) {
    const std::size_t capacity = std::max<std::size_t>({needed, capacity_ * 2, 256});
    auto data = std::make_unique_for_overwrite<std::uint8_t[]>(capacity);
    if (size_) std::memcpy(data.get(), data_.get(), size_);
    data_ = std::move(data);
    capacity_ = capacity;
  }

  std::unique_ptr<std::uint8_t[]> data_;
  std::size_t size_ = 0;
  std::size_t capacity_ = 0;
};

}  // namespace tracecorn::formats
