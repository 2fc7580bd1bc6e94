// Role: the out-of-line parts of SpscRing: creation, the slow paths of reserve()
// (waiting for the consumer, dropping the oldest records) and the consumer's
// wait. The hot paths are inline in spsc_ring.h; the design is described there.
// Who calls it: create() and stats() from any thread; make_room() on the producer
// thread; wait_for_data() on the consumer thread.
// Invariants: the producer-side functions here are noexcept and make syscalls
// (yield, nanosleep) only while a kLossless ring is full.
#include "recorder/ring/spsc_ring.h"

#include <algorithm>
#include <bit>
#include <new>
#include <string>
#include <thread>

#include <sys/mman.h>

namespace tracecorn::ring {

namespace {

// Tells the host CPU we are spinning (frees the sibling hyperthread, saves
// power). This is about the machine running tracecorn, not the guest's arch.
inline void cpu_relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield" ::: "memory");
#else
  std::atomic_signal_fence(std::memory_order_seq_cst);
#endif
}

// Producer wait on a full kLossless ring: spin, then yield, then sleep.
constexpr unsigned kProducerSpins = 1024;
constexpr unsigned kProducerYields = 64;
constexpr auto kProducerNap = std::chrono::microseconds(50);

// Consumer poll: spin, then yield, then sleep backing off.
constexpr unsigned kConsumerSpins = 256;
constexpr unsigned kConsumerYields = 16;
constexpr auto kConsumerFirstNap = std::chrono::microseconds(20);
constexpr auto kConsumerLongestNap = std::chrono::microseconds(1000);

}  // namespace

void detail::UnmapRing::operator()(std::byte* buffer) const noexcept { ::munmap(buffer, bytes); }

Expected<std::unique_ptr<SpscRing>> SpscRing::create(const RingOptions& options) {
  if (options.capacity_bytes < kMinCapacity) {
    return make_error(ErrorCode::kInvalidArgument,
                      "ring capacity " + std::to_string(options.capacity_bytes) + " is below the minimum " +
                          std::to_string(kMinCapacity));
  }
  if (options.capacity_bytes > kMaxCapacity) {
    return make_error(ErrorCode::kInvalidArgument,
                      "ring capacity " + std::to_string(options.capacity_bytes) + " is above the maximum " +
                          std::to_string(kMaxCapacity));
  }
  if (options.publish_every == 0) {
    return make_error(ErrorCode::kInvalidArgument, "publish_every must be at least 1");
  }
  const std::uint64_t capacity = std::bit_ceil(static_cast<std::uint64_t>(options.capacity_bytes));
  const std::size_t bytes = static_cast<std::size_t>(capacity);

  // Fresh anonymous pages read as zero (kNeverWritten) and cost nothing until
  // the producer first writes them: a recording (a forked child's above all)
  // starts without touching 64 MiB first, and a short one never touches most
  // of it. (Zeroing it all here took 0.3 s per recording.)
  void* raw = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) {
    return make_error(ErrorCode::kLimit, "cannot allocate a ring of " + std::to_string(bytes) + " bytes");
  }
  std::unique_ptr<std::byte[], detail::UnmapRing> buffer(static_cast<std::byte*>(raw), detail::UnmapRing{bytes});

  std::unique_ptr<SpscRing> ring(new (std::nothrow) SpscRing(std::move(buffer), capacity, options));
  if (!ring) {
    return make_error(ErrorCode::kLimit, "cannot allocate the ring's control block");
  }
  return ring;
}

SpscRing::SpscRing(std::unique_ptr<std::byte[], detail::UnmapRing> buffer, std::uint64_t capacity,
                   const RingOptions& options) noexcept
    : buffer_(std::move(buffer)),
      capacity_(capacity),
      mask_(capacity - 1),
      release_every_(capacity / 4),
      max_record_size_(static_cast<std::uint32_t>(capacity / 8 - detail::kHeaderSize)),
      publish_every_(options.publish_every),
      policy_(options.policy) {}

SpscRing::~SpscRing() = default;

void SpscRing::close() noexcept {
  reserved_slot_ = 0;
  producer_closed_ = true;
  publish();
  // After the final publication: a consumer that sees closed_ (acquire) also
  // sees the final write_pos_.
  closed_.store(true, std::memory_order_release);
}

void SpscRing::make_room(std::uint64_t needed) noexcept {
  if (policy_ == OverflowPolicy::kFlightRecorder) {
    drop_oldest(needed);
    return;
  }
  oldest_ = read_pos_.load(std::memory_order_acquire);
  if (head_ + needed - oldest_ > capacity_) {
    wait_for_consumer(needed);
  }
}

void SpscRing::wait_for_consumer(std::uint64_t needed) noexcept {
  // The consumer may be waiting for records it cannot see yet: show them first,
  // or a ring full of unpublished records would never drain.
  publish();
  bump(producer_stalls_, 1);
  for (unsigned iteration = 0;; ++iteration) {
    oldest_ = read_pos_.load(std::memory_order_acquire);
    if (head_ + needed - oldest_ <= capacity_) {
      return;
    }
    if (iteration < kProducerSpins) {
      cpu_relax();
    } else if (iteration < kProducerSpins + kProducerYields) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(kProducerNap);
    }
  }
}

void SpscRing::drop_oldest(std::uint64_t needed) noexcept {
  // [oldest_, head_) holds whole committed records and padding; drop them from
  // the oldest until the new record (and its padding) fits.
  while (head_ + needed - oldest_ > capacity_) {
    const detail::RecordHeader header = load_header(oldest_);
    assert(header.kind == detail::kRecord || header.kind == detail::kPadding);
    assert(header.size >= detail::kHeaderSize);
    oldest_ += detail::slot_bytes(header.size);
    if (header.kind == detail::kRecord) {
      bump(records_overwritten_, 1);
    }
  }
}

bool SpscRing::wait_for_data(std::chrono::milliseconds timeout) {
  if (policy_ != OverflowPolicy::kLossless) {
    return false;
  }
  if (cached_write_pos_ != consumer_read_) {
    return true;  // still unread records from the last look: no shared load
  }
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::chrono::microseconds nap = kConsumerFirstNap;
  for (unsigned iteration = 0;; ++iteration) {
    cached_write_pos_ = write_pos_.load(std::memory_order_acquire);
    if (cached_write_pos_ != consumer_read_) {
      return true;
    }
    if (closed_.load(std::memory_order_acquire)) {
      // close() published before setting closed_ (release): this load sees the final end.
      cached_write_pos_ = write_pos_.load(std::memory_order_acquire);
      return cached_write_pos_ != consumer_read_;
    }
    if (iteration < kConsumerSpins) {
      cpu_relax();
      continue;
    }
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) {
      return true;
    }
    if (iteration < kConsumerSpins + kConsumerYields) {
      std::this_thread::yield();
      continue;
    }
    std::this_thread::sleep_for(
        std::min<std::chrono::steady_clock::duration>(nap, deadline - now));
    nap = std::min(nap * 2, kConsumerLongestNap);
  }
}

RingStats SpscRing::stats() const noexcept {
  RingStats stats;
  stats.records_written = records_written_.load(std::memory_order_relaxed);
  stats.bytes_written = bytes_written_.load(std::memory_order_relaxed);
  stats.records_read = records_read_.load(std::memory_order_relaxed);
  stats.records_overwritten = records_overwritten_.load(std::memory_order_relaxed);
  stats.producer_stalls = producer_stalls_.load(std::memory_order_relaxed);
  return stats;
}

}  // namespace tracecorn::ring
