// Role: the single-producer single-consumer byte ring that carries trace records
// from the emulation thread to the drain thread. The ring frames variable-length
// records that the producer writes in place; it knows nothing of their contents.
// Who calls it: the recorder core. Exactly ONE producer thread (the emulation
// thread, inside Unicorn hooks: reserve/commit/publish/close) and, in kLossless
// mode, exactly ONE consumer thread (the drain thread: wait_for_data/consume).
// stats() and the accessors may be called from any thread.
// Invariants: the producer path is noexcept and never allocates, locks or makes a
// syscall, except the documented kLossless wait on a full ring; a record is never
// split across the end of the buffer; the consumer sees whole records in the order
// they were committed; kLossless never drops a record; kFlightRecorder drops only
// whole records, oldest first, and counts them.
//
// ## Design
//
// Memory layout. One buffer of `capacity` bytes (a power of two, page aligned:
// fresh anonymous pages, zero until the producer first writes one, so a short
// recording touches only what it uses; the first pass takes each page's fault
// once). Cursors are monotonically increasing 64-bit byte positions (they never
// wrap in practice: 2^64 bytes); a position's offset in the buffer is
// `position & (capacity - 1)`.
//
//   offset 0                                                        capacity
//   |<------------------------------ buffer ------------------------------->|
//   | rec | rec | rec |   free (producer may write)   | rec | rec | pad     |
//   +-----+-----+-----+-------------------------------+-----+-----+---------+
//                     ^                               ^
//          write_pos_ & mask                  read_pos_ & mask
//     (published end; the producer's         (consumer's cursor: everything
//      private head_ may be ahead of it       before it is free again)
//      by up to publish_every commits)
//
//   Published and unread:  [read_pos_, write_pos_)   (may wrap past the end)
//   Free for the producer: [head_, read_pos_ + capacity)
//
// Framing. Every slot starts with an 8-byte RecordHeader written by the ring;
// slots are 8-byte aligned, so user bytes are 8-byte aligned too.
//
//   +------------+------------+------------------------------+-----------+
//   | size (u32) | kind (u32) | user bytes (size - 8 bytes)  | 0-7 bytes |
//   | 4 bytes    | 4 bytes    | 8-byte aligned               | alignment |
//   +------------+------------+------------------------------+-----------+
//   |<--------------- size = 8 + user bytes ---------------->|
//   |<-------------------- slot = align_up(size, 8) -------------------->|
//
//   kind 1 (kRecord):  a record; `size` counts the header and the user bytes.
//   kind 2 (kPadding): filler up to the end of the buffer, written when the next
//                      record does not fit contiguously there; `size` is the whole
//                      filler (always a multiple of 8, at least 8, so the header
//                      always fits); the record then starts at offset 0.
//   kind 0:            zeroed, never-written memory; never inside a readable range.
//
// Writing (producer). reserve(n) checks that `head_ + needed - oldest_ <=
// capacity` (needed = the slot, plus the padding to the end when the slot does not
// fit there), writes the padding and the record header, and returns the user
// bytes. commit() advances the private head_; every `publish_every` commits (or
// at publish()/close()) head_ is published with ONE release store to write_pos_.
// Batching matters because each publication moves write_pos_'s cache line to the
// consumer. When the ring looks full, the producer re-reads read_pos_ (acquire);
// if still full, kLossless publishes what it has (else the consumer could starve
// on records it cannot see) and waits: spins with a CPU pause, then yields, then
// sleeps 50 us at a time (the only syscalls on the producer side; one stall is
// counted per wait). kFlightRecorder instead drops records from oldest_ (which
// then tracks the start of the oldest retained record) until the new one fits.
//
// Reading (consumer, kLossless only). The consumer keeps a cached copy of
// write_pos_ and reloads it (acquire) only when it has read everything before it,
// in wait_for_data() or consume(). consume() hands each record before that cached
// end to the callback as a span that is valid during the call only, skips padding,
// and frees space with a release store to read_pos_ every quarter ring and at the
// end, so a long batch does not hold the producer back. The producer wakes nobody (that would be a syscall), so
// wait_for_data() polls: spin, yield, then sleeps backing off from 20 us to 1 ms
// (at 1 GB/s a 1 ms nap fills 1 MB of a 64 MB ring).
//
// Flight recorder: no concurrent consumer. After the emulation stops, the
// producer thread calls for_each_retained() to visit [oldest_, head_): exactly
// the most recent committed records that fit in the ring with this layout.
//
// Atomics (each written by one side only; every access names its order):
//   write_pos_     producer: store release (publish) | consumer: load acquire
//   closed_        producer: store release (close)   | consumer: load acquire
//   read_pos_      consumer: store release (free)    | producer: load acquire
//   producer stats producer: load+store relaxed      | stats(): load relaxed
//   records_read_  consumer: load+store relaxed      | stats(): load relaxed
// Single-writer counters use load+store rather than fetch_add: no locked
// instruction on the hot path. stats() is a relaxed snapshot while both sides
// run, exact once they are joined.
//
// Cache lines (alignas(64)): [write_pos_, closed_] published by the producer;
// [head_, oldest_ (= the producer's cached copy of read_pos_), reservation, batch
// count, producer counters] private to the producer; [read_pos_] published by the
// consumer; [the consumer's read cursor, its cached copy of write_pos_,
// records_read_] private to the consumer. The published cursors sit apart from the
// private ones so the other side's polling never steals a line the owner writes
// on every record.
#pragma once

#include <atomic>
#include <cassert>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <span>
#include <type_traits>

#include "recorder/support/expected.h"

namespace tracecorn::ring {

enum class OverflowPolicy : std::uint8_t {
  kLossless,        // a full ring makes the producer wait for the consumer
  kFlightRecorder,  // a full ring drops the oldest whole records; no consumer
};

struct RingOptions {
  // Rounded up to a power of two; must be in [kMinCapacity, kMaxCapacity].
  std::size_t capacity_bytes = std::size_t{64} << 20;
  OverflowPolicy policy = OverflowPolicy::kLossless;
  // Commits per batched publication to the consumer; must be at least 1.
  std::uint32_t publish_every = 64;
};

struct RingStats {
  std::uint64_t records_written = 0;      // committed records
  std::uint64_t bytes_written = 0;        // their user bytes (headers and padding excluded)
  std::uint64_t records_read = 0;         // records handed to consume()'s callback
  std::uint64_t records_overwritten = 0;  // kFlightRecorder: records dropped to make room
  std::uint64_t producer_stalls = 0;      // kLossless: times reserve() had to wait
};

namespace detail {

// The on-ring frame header (see the diagram above).
struct RecordHeader {
  std::uint32_t size;  // kRecord: 8 + user bytes; kPadding: the whole filler
  std::uint32_t kind;  // a RecordKind
};
static_assert(sizeof(RecordHeader) == 8, "the frame header is 8 bytes on the ring");
static_assert(alignof(RecordHeader) <= 8, "headers sit at 8-byte aligned offsets");
static_assert(std::is_trivially_copyable_v<RecordHeader>, "headers are memcpy'd to and from the ring");

enum RecordKind : std::uint32_t { kNeverWritten = 0, kRecord = 1, kPadding = 2 };

inline constexpr std::size_t kCacheLine = 64;
inline constexpr std::uint64_t kAlignment = 8;
inline constexpr std::uint64_t kHeaderSize = sizeof(RecordHeader);

inline constexpr std::uint64_t slot_bytes(std::uint64_t framed_size) noexcept {
  return (framed_size + kAlignment - 1) & ~(kAlignment - 1);
}

// Releases the ring's pages (an anonymous mapping of `bytes`).
struct UnmapRing {
  std::size_t bytes = 0;
  void operator()(std::byte* buffer) const noexcept;
};

}  // namespace detail

class SpscRing {
 public:
  static constexpr std::size_t kMinCapacity = 4096;
  static constexpr std::uint64_t kMaxCapacity = std::uint64_t{1} << 32;

  // A ring with `options`. The capacity is rounded up to a power of two.
  // Fails with kInvalidArgument when capacity_bytes is below kMinCapacity or
  // above kMaxCapacity, or publish_every is 0; with kLimit when the buffer
  // cannot be allocated. Allocates, zeroes and pre-faults the buffer.
  static Expected<std::unique_ptr<SpscRing>> create(const RingOptions& options);

  SpscRing(const SpscRing&) = delete;
  SpscRing& operator=(const SpscRing&) = delete;
  ~SpscRing();

  // ---- Producer (one thread) ----

  // Returns `size` writable, contiguous, 8-byte aligned bytes for the caller's
  // record, which becomes visible after commit() and a publication. kLossless:
  // waits while the ring is full (counts producer_stalls), never drops.
  // kFlightRecorder: drops the oldest whole records to make room (counts
  // records_overwritten). Returns nullptr when size is 0, size exceeds
  // max_record_size(), or after close() (a closed ring has no consumer to wait
  // for). A second reserve() without commit() abandons the first reservation.
  std::byte* reserve(std::uint32_t size) noexcept;
  // Completes the reserved record; publishes every `publish_every` commits.
  // Without a pending reservation it does nothing.
  void commit() noexcept;
  // Publishes every committed record now (one release store).
  void publish() noexcept;
  // The producer is done: publishes, abandons any pending reservation, and lets
  // the consumer's wait_for_data() return false once it has drained the ring.
  void close() noexcept;

  // ---- Consumer (one thread; kLossless only) ----

  // Calls f(std::span<const std::byte>) for each published record, oldest first,
  // at most `max_records` times (records published while it runs may wait for
  // the next call); the span is valid during the call only. Frees the records'
  // space and returns how many it delivered. If f throws, the records before it
  // stay freed and the throwing one is delivered again by the next consume().
  // kFlightRecorder: returns 0 without touching the ring.
  template <typename F>
  std::size_t consume(F&& f, std::size_t max_records = std::numeric_limits<std::size_t>::max());
  // Polls (spin, yield, then sleeps backing off up to 1 ms) until records are
  // published, the ring is closed, or `timeout` passes. Returns false only when
  // the ring is closed and every published record has been consumed; true
  // otherwise (consume() may then deliver 0 records, after a timeout).
  // kFlightRecorder: returns false at once.
  bool wait_for_data(std::chrono::milliseconds timeout);

  // ---- Flight recorder (producer thread, emulation stopped) ----

  // Calls f(std::span<const std::byte>) for each retained committed record,
  // oldest to newest. Also valid in kLossless mode when no consumer runs: it
  // then visits the committed records not yet consumed.
  template <typename F>
  void for_each_retained(F&& f) const;

  // ---- Any thread ----

  RingStats stats() const noexcept;
  // The largest `size` reserve() accepts: capacity / 8 - 8 (a framed record is at
  // most an eighth of the ring).
  std::uint32_t max_record_size() const noexcept { return max_record_size_; }
  std::size_t capacity() const noexcept { return static_cast<std::size_t>(capacity_); }
  OverflowPolicy policy() const noexcept { return policy_; }

 private:
  SpscRing(std::unique_ptr<std::byte[], detail::UnmapRing> buffer, std::uint64_t capacity,
           const RingOptions& options) noexcept;

  // Slow path of reserve(): makes `needed` bytes free after head_ (waits or drops).
  void make_room(std::uint64_t needed) noexcept;
  void wait_for_consumer(std::uint64_t needed) noexcept;
  void drop_oldest(std::uint64_t needed) noexcept;

  detail::RecordHeader load_header(std::uint64_t position) const noexcept {
    detail::RecordHeader header;
    std::memcpy(&header, buffer_.get() + (position & mask_), sizeof header);
    return header;
  }
  void store_header(std::uint64_t offset, std::uint64_t size, detail::RecordKind kind) noexcept {
    const detail::RecordHeader header{static_cast<std::uint32_t>(size), kind};
    std::memcpy(buffer_.get() + offset, &header, sizeof header);
  }
  // Single-writer counter increment: no locked instruction.
  static void bump(std::atomic<std::uint64_t>& counter, std::uint64_t by) noexcept {
    counter.store(counter.load(std::memory_order_relaxed) + by, std::memory_order_relaxed);
  }
  // Consumer: frees everything before the read cursor.
  void release_read() noexcept {
    read_pos_.store(consumer_read_, std::memory_order_release);
    consumer_released_ = consumer_read_;
  }

  // Immutable after construction (read by both sides; shares no line with a cursor).
  alignas(detail::kCacheLine) const std::unique_ptr<std::byte[], detail::UnmapRing> buffer_;
  const std::uint64_t capacity_;
  const std::uint64_t mask_;
  const std::uint64_t release_every_;  // consumer frees space at least this often (bytes)
  const std::uint32_t max_record_size_;
  const std::uint32_t publish_every_;
  const OverflowPolicy policy_;

  // Published by the producer, polled by the consumer.
  alignas(detail::kCacheLine) std::atomic<std::uint64_t> write_pos_{0};  // writer: producer
  std::atomic<bool> closed_{false};                                      // writer: producer

  // Private to the producer (plus its counters, read relaxed by stats()).
  alignas(detail::kCacheLine) std::uint64_t head_ = 0;  // end of committed records
  // kLossless: the producer's cached copy of read_pos_. kFlightRecorder: the start
  // of the oldest retained record. Either way, [oldest_, head_) is not free.
  std::uint64_t oldest_ = 0;
  std::uint64_t reserved_slot_ = 0;  // slot bytes of the pending reservation, 0 if none
  std::uint32_t reserved_size_ = 0;  // its user bytes
  std::uint32_t unpublished_ = 0;    // commits since the last publication
  bool producer_closed_ = false;
  std::atomic<std::uint64_t> records_written_{0};      // writer: producer
  std::atomic<std::uint64_t> bytes_written_{0};        // writer: producer
  std::atomic<std::uint64_t> records_overwritten_{0};  // writer: producer
  std::atomic<std::uint64_t> producer_stalls_{0};      // writer: producer

  // Published by the consumer, read by the producer only when it looks full.
  alignas(detail::kCacheLine) std::atomic<std::uint64_t> read_pos_{0};  // writer: consumer

  // Private to the consumer.
  alignas(detail::kCacheLine) std::uint64_t consumer_read_ = 0;  // next record to read
  std::uint64_t consumer_released_ = 0;                           // last value stored to read_pos_
  // The consumer's cached copy of write_pos_, loaded with acquire: every record
  // before it is visible to the consumer.
  std::uint64_t cached_write_pos_ = 0;
  std::atomic<std::uint64_t> records_read_{0};                     // writer: consumer
};

static_assert(std::atomic<std::uint64_t>::is_always_lock_free, "the cursors must be lock free");
static_assert(std::atomic<bool>::is_always_lock_free, "the closed flag must be lock free");
static_assert(alignof(SpscRing) == detail::kCacheLine, "the cursors' cache lines must not be shared");

// ---- Inline hot paths ----

inline std::byte* SpscRing::reserve(std::uint32_t size) noexcept {
  if (size == 0 || size > max_record_size_ || producer_closed_) [[unlikely]] {
    return nullptr;
  }
  const std::uint64_t slot = detail::slot_bytes(detail::kHeaderSize + size);
  std::uint64_t offset = head_ & mask_;
  const std::uint64_t to_end = capacity_ - offset;
  const bool wraps = slot > to_end;
  const std::uint64_t needed = wraps ? to_end + slot : slot;
  if (head_ + needed - oldest_ > capacity_) [[unlikely]] {
    make_room(needed);
  }
  if (wraps) [[unlikely]] {
    store_header(offset, to_end, detail::kPadding);
    head_ += to_end;
    offset = 0;
  }
  store_header(offset, detail::kHeaderSize + size, detail::kRecord);
  reserved_slot_ = slot;
  reserved_size_ = size;
  return buffer_.get() + offset + detail::kHeaderSize;
}

inline void SpscRing::commit() noexcept {
  if (reserved_slot_ == 0) [[unlikely]] {
    return;
  }
  head_ += reserved_slot_;
  reserved_slot_ = 0;
  bump(records_written_, 1);
  bump(bytes_written_, reserved_size_);
  if (++unpublished_ >= publish_every_) {
    publish();
  }
}

inline void SpscRing::publish() noexcept {
  write_pos_.store(head_, std::memory_order_release);
  unpublished_ = 0;
}

template <typename F>
std::size_t SpscRing::consume(F&& f, std::size_t max_records) {
  if (policy_ != OverflowPolicy::kLossless) {
    return 0;
  }
  // Frees what was delivered even if f throws.
  struct ReleaseOnExit {
    SpscRing& ring;
    ~ReleaseOnExit() {
      if (ring.consumer_read_ != ring.consumer_released_) ring.release_read();
    }
  } release_on_exit{*this};

  if (consumer_read_ == cached_write_pos_) {
    cached_write_pos_ = write_pos_.load(std::memory_order_acquire);
  }
  const std::uint64_t end = cached_write_pos_;
  std::size_t delivered = 0;
  while (consumer_read_ != end && delivered < max_records) {
    const detail::RecordHeader header = load_header(consumer_read_);
    assert(header.kind == detail::kRecord || header.kind == detail::kPadding);
    assert(header.size >= detail::kHeaderSize && consumer_read_ + header.size <= end);
    if (header.kind == detail::kPadding) {
      consumer_read_ += header.size;
      continue;
    }
    const std::byte* user = buffer_.get() + (consumer_read_ & mask_) + detail::kHeaderSize;
    f(std::span<const std::byte>(user, header.size - detail::kHeaderSize));
    consumer_read_ += detail::slot_bytes(header.size);
    ++delivered;
    bump(records_read_, 1);
    if (consumer_read_ - consumer_released_ >= release_every_) {
      release_read();
    }
  }
  return delivered;
}

template <typename F>
void SpscRing::for_each_retained(F&& f) const {
  std::uint64_t position = policy_ == OverflowPolicy::kFlightRecorder
                               ? oldest_
                               : read_pos_.load(std::memory_order_acquire);
  while (position != head_) {
    const detail::RecordHeader header = load_header(position);
    assert(header.kind == detail::kRecord || header.kind == detail::kPadding);
    assert(header.size >= detail::kHeaderSize && position + header.size <= head_);
    if (header.kind == detail::kRecord) {
      const std::byte* user = buffer_.get() + (position & mask_) + detail::kHeaderSize;
      f(std::span<const std::byte>(user, header.size - detail::kHeaderSize));
    }
    position += detail::slot_bytes(header.size);
  }
}

}  // namespace tracecorn::ring
