// Role: unit tests of SpscRing: creation limits, framing and alignment, the empty,
// exactly-full and wrap-around edges, publish batching, close(), the lossless
// guarantees under two threads (a multi-million-record stress test), stalls on a
// tiny ring, and the flight recorder's "exactly the newest records that fit".
// Also built alone under ThreadSanitizer by scripts/tsan.sh (ring_tsan_tests),
// which lowers TRACECORN_RING_STRESS_RECORDS to stay under a minute.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <deque>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "recorder/ring/spsc_ring.h"

using namespace tracecorn::ring;
using namespace std::chrono_literals;

#ifndef TRACECORN_RING_STRESS_RECORDS
#define TRACECORN_RING_STRESS_RECORDS 4000000
#endif

namespace {

constexpr std::uint64_t kHeader = 8;  // the ring's frame header (spsc_ring.h)
constexpr std::uint64_t slot_of(std::uint32_t size) { return (kHeader + size + 7) & ~std::uint64_t{7}; }

std::unique_ptr<SpscRing> make_ring(std::size_t capacity, OverflowPolicy policy = OverflowPolicy::kLossless,
                                    std::uint32_t publish_every = 1) {
  auto ring = SpscRing::create({capacity, policy, publish_every});
  REQUIRE(ring.has_value());
  return std::move(ring).value();
}

// A deterministic size in [8, 8 + spread) for record `sequence`.
std::uint32_t size_for(std::uint64_t sequence, std::uint32_t spread) {
  return 8 + static_cast<std::uint32_t>((sequence * 0x9E3779B97F4A7C15ull) >> 40) % spread;
}

std::byte pattern(std::uint64_t sequence, std::size_t index) {
  return static_cast<std::byte>((sequence * 31 + index) & 0xff);
}

// Writes record `sequence` of `size` bytes (>= 8): the sequence number, then a pattern.
void write_record(SpscRing& ring, std::uint64_t sequence, std::uint32_t size) {
  std::byte* out = ring.reserve(size);
  REQUIRE(out != nullptr);
  CHECK(reinterpret_cast<std::uintptr_t>(out) % 8 == 0);
  std::memcpy(out, &sequence, sizeof sequence);
  for (std::size_t i = sizeof sequence; i < size; ++i) out[i] = pattern(sequence, i);
  ring.commit();
}

// The sequence number of a record written by write_record, and whether its bytes are intact.
struct Decoded {
  std::uint64_t sequence = 0;
  bool intact = false;
};
Decoded decode(std::span<const std::byte> record) {
  Decoded decoded;
  if (record.size() < 8) return decoded;
  std::memcpy(&decoded.sequence, record.data(), sizeof decoded.sequence);
  decoded.intact = true;
  for (std::size_t i = 8; i < record.size(); ++i)
    if (record[i] != pattern(decoded.sequence, i)) decoded.intact = false;
  return decoded;
}

std::vector<std::uint64_t> drain(SpscRing& ring) {
  std::vector<std::uint64_t> sequences;
  ring.consume([&](std::span<const std::byte> record) {
    const Decoded decoded = decode(record);
    CHECK(decoded.intact);
    sequences.push_back(decoded.sequence);
  });
  return sequences;
}

std::size_t discard(SpscRing& ring) {
  return ring.consume([](std::span<const std::byte>) {});
}

std::vector<std::uint64_t> retained(const SpscRing& ring) {
  std::vector<std::uint64_t> sequences;
  ring.for_each_retained([&](std::span<const std::byte> record) {
    const Decoded decoded = decode(record);
    CHECK(decoded.intact);
    sequences.push_back(decoded.sequence);
  });
  return sequences;
}

}  // namespace

TEST_CASE("SpscRing: create rounds the capacity up to a power of two and refuses bad options") {
  CHECK(make_ring(4096)->capacity() == 4096);
  CHECK(make_ring(5000)->capacity() == 8192);
  CHECK(make_ring(4096)->max_record_size() == 4096 / 8 - 8);
  CHECK(make_ring(1 << 20)->max_record_size() == (1 << 20) / 8 - 8);

  auto too_small = SpscRing::create({4095, OverflowPolicy::kLossless, 64});
  REQUIRE_FALSE(too_small.has_value());
  CHECK(too_small.error().code == tracecorn::ErrorCode::kInvalidArgument);
  CHECK_FALSE(SpscRing::create({0, OverflowPolicy::kLossless, 64}).has_value());
  CHECK_FALSE(SpscRing::create({SpscRing::kMaxCapacity + 1, OverflowPolicy::kLossless, 64}).has_value());
  CHECK_FALSE(SpscRing::create({4096, OverflowPolicy::kLossless, 0}).has_value());
}

TEST_CASE("SpscRing: an empty ring delivers nothing and reports zeroed stats") {
  auto ring = make_ring(4096);
  CHECK(ring->consume([](std::span<const std::byte>) { FAIL("no record expected"); }) == 0);
  CHECK(ring->wait_for_data(0ms));  // not closed: "keep going", even with nothing to read
  CHECK(retained(*ring).empty());
  const RingStats stats = ring->stats();
  CHECK(stats.records_written == 0);
  CHECK(stats.bytes_written == 0);
  CHECK(stats.records_read == 0);
  CHECK(stats.records_overwritten == 0);
  CHECK(stats.producer_stalls == 0);
}

TEST_CASE("SpscRing: records come back in order, intact, 8-byte aligned, of every small size") {
  auto ring = make_ring(4096);
  for (std::uint32_t size = 1; size <= 40; ++size) {
    std::byte* out = ring->reserve(size);
    REQUIRE(out != nullptr);
    CHECK(reinterpret_cast<std::uintptr_t>(out) % 8 == 0);
    for (std::uint32_t i = 0; i < size; ++i) out[i] = static_cast<std::byte>(size);
    ring->commit();
  }
  std::uint32_t expected_size = 1;
  const std::size_t count = ring->consume([&](std::span<const std::byte> record) {
    CHECK(record.size() == expected_size);
    CHECK(reinterpret_cast<std::uintptr_t>(record.data()) % 8 == 0);
    for (std::byte byte : record) CHECK(byte == static_cast<std::byte>(expected_size));
    ++expected_size;
  });
  CHECK(count == 40);
  CHECK(ring->stats().records_read == 40);
  CHECK(ring->stats().bytes_written == 40 * 41 / 2);
}

TEST_CASE("SpscRing: reserve refuses empty and oversize records and counts nothing") {
  auto ring = make_ring(4096);
  CHECK(ring->reserve(0) == nullptr);
  CHECK(ring->reserve(ring->max_record_size() + 1) == nullptr);
  CHECK(ring->reserve(0xffffffffu) == nullptr);
  ring->commit();  // no pending reservation: nothing happens
  CHECK(ring->stats().records_written == 0);
  std::byte* largest = ring->reserve(ring->max_record_size());
  REQUIRE(largest != nullptr);
  std::memset(largest, 0xab, ring->max_record_size());
  ring->commit();
  std::size_t seen = 0;
  ring->consume([&](std::span<const std::byte> record) { seen = record.size(); });
  CHECK(seen == ring->max_record_size());
}

TEST_CASE("SpscRing: a second reserve without commit abandons the first") {
  auto ring = make_ring(4096);
  REQUIRE(ring->reserve(100) != nullptr);
  write_record(*ring, 7, 16);
  CHECK(drain(*ring) == std::vector<std::uint64_t>{7});
  CHECK(ring->stats().records_written == 1);
}

TEST_CASE("SpscRing: a ring filled exactly to capacity neither stalls nor loses a record") {
  // 56 user bytes + 8 header = 64-byte slots: 64 of them fill 4096 bytes exactly.
  auto ring = make_ring(4096);
  for (int round = 0; round < 3; ++round) {
    for (std::uint64_t i = 0; i < 64; ++i) write_record(*ring, round * 64 + i, 56);
    const auto sequences = drain(*ring);
    REQUIRE(sequences.size() == 64);
    for (std::uint64_t i = 0; i < 64; ++i) CHECK(sequences[i] == round * 64 + i);
  }
  CHECK(ring->stats().producer_stalls == 0);
  CHECK(ring->stats().records_read == 192);
}

TEST_CASE("SpscRing: a full lossless ring makes the producer wait until the consumer frees space") {
  auto ring = make_ring(4096);
  for (std::uint64_t i = 0; i < 64; ++i) write_record(*ring, i, 56);
  std::atomic<bool> producer_done{false};
  std::thread producer([&] {
    write_record(*ring, 64, 56);  // the 65th slot: must wait
    producer_done.store(true, std::memory_order_release);
  });
  while (ring->stats().producer_stalls == 0) std::this_thread::yield();
  std::this_thread::sleep_for(20ms);
  CHECK_FALSE(producer_done.load(std::memory_order_acquire));
  auto sequences = drain(*ring);
  producer.join();
  CHECK(producer_done.load(std::memory_order_acquire));
  for (std::uint64_t sequence : drain(*ring)) sequences.push_back(sequence);
  REQUIRE(sequences.size() == 65);
  for (std::uint64_t i = 0; i < 65; ++i) CHECK(sequences[i] == i);
  CHECK(ring->stats().producer_stalls == 1);
}

TEST_CASE("SpscRing: a record that does not fit before the end is padded to offset 0") {
  auto ring = make_ring(4096);
  // 63 slots of 64 bytes leave 64 bytes before the end; a 16-byte slot then leaves 48.
  std::byte* first = ring->reserve(56);
  REQUIRE(first != nullptr);
  std::byte* const base = first - kHeader;
  ring->commit();
  for (std::uint64_t i = 1; i < 63; ++i) write_record(*ring, i, 56);
  CHECK(discard(*ring) == 63);
  std::byte* tail = ring->reserve(8);
  CHECK(tail == base + 63 * 64 + kHeader);
  ring->commit();
  // 48 bytes left: a 48-byte slot (40 user bytes) still fits exactly, with no padding...
  std::byte* exact = ring->reserve(40);
  CHECK(exact == base + 63 * 64 + 16 + kHeader);
  ring->commit();
  CHECK(discard(*ring) == 2);
  // ...and at offset 0 again, leave 8 bytes before the end: the next record pads.
  for (std::uint64_t i = 0; i < 63; ++i) write_record(*ring, i, 56);
  write_record(*ring, 63, 48);  // 56-byte slot: 8 bytes left
  CHECK(discard(*ring) == 64);
  std::byte* wrapped = ring->reserve(8);
  CHECK(wrapped == base + kHeader);
  ring->commit();
  std::vector<std::size_t> sizes;
  ring->consume([&](std::span<const std::byte> record) { sizes.push_back(record.size()); });
  CHECK(sizes == std::vector<std::size_t>{8});  // the padding is never delivered
}

TEST_CASE("SpscRing: varying sizes wrap around many times, single-threaded, with nothing lost") {
  auto ring = make_ring(4096);
  std::uint64_t next_written = 0;
  std::uint64_t next_read = 0;
  std::uint64_t wraps = 0;
  const std::byte* previous = nullptr;
  for (int round = 0; round < 500; ++round) {
    // Write what surely fits (at most half the ring of slots, padding included), then drain.
    std::uint64_t budget = 0;
    while (true) {
      const std::uint32_t size = size_for(next_written, ring->max_record_size() - 8);
      budget += 2 * slot_of(size);
      if (budget > 4096) break;
      write_record(*ring, next_written++, size);
    }
    ring->consume([&](std::span<const std::byte> record) {
      const Decoded decoded = decode(record);
      CHECK(decoded.intact);
      CHECK(decoded.sequence == next_read);
      CHECK(record.size() == size_for(next_read, ring->max_record_size() - 8));
      if (previous != nullptr && record.data() < previous) ++wraps;
      previous = record.data();
      ++next_read;
    });
  }
  CHECK(next_read == next_written);
  CHECK(wraps > 50);
  CHECK(ring->stats().producer_stalls == 0);
  CHECK(ring->stats().records_read == ring->stats().records_written);
}

TEST_CASE("SpscRing: a committed record stays invisible until publish_every commits or publish()") {
  auto ring = make_ring(4096, OverflowPolicy::kLossless, 4);
  for (std::uint64_t i = 0; i < 3; ++i) write_record(*ring, i, 16);
  CHECK(discard(*ring) == 0);
  write_record(*ring, 3, 16);  // the 4th commit publishes the batch
  CHECK(drain(*ring) == std::vector<std::uint64_t>{0, 1, 2, 3});

  write_record(*ring, 4, 16);
  CHECK(discard(*ring) == 0);
  ring->publish();
  CHECK(ring->wait_for_data(0ms));
  CHECK(drain(*ring) == std::vector<std::uint64_t>{4});

  // A pending reservation is not published, and publish() restarts the batch count.
  write_record(*ring, 5, 16);
  REQUIRE(ring->reserve(16) != nullptr);
  ring->publish();
  CHECK(drain(*ring) == std::vector<std::uint64_t>{5});
  ring->commit();
  CHECK(discard(*ring) == 0);
}

TEST_CASE("SpscRing: close publishes, refuses new records, and ends the consumer's wait once drained") {
  auto ring = make_ring(4096, OverflowPolicy::kLossless, 64);
  write_record(*ring, 0, 16);
  write_record(*ring, 1, 24);
  REQUIRE(ring->reserve(16) != nullptr);  // abandoned by close()
  ring->close();
  CHECK(ring->reserve(16) == nullptr);
  ring->commit();
  CHECK(ring->wait_for_data(0ms));
  CHECK(drain(*ring) == std::vector<std::uint64_t>{0, 1});
  CHECK_FALSE(ring->wait_for_data(0ms));
  CHECK_FALSE(ring->wait_for_data(100ms));
  CHECK(ring->stats().records_written == 2);
}

TEST_CASE("SpscRing: wait_for_data wakes for a record published by another thread, and times out") {
  auto ring = make_ring(4096, OverflowPolicy::kLossless, 1);
  const auto start = std::chrono::steady_clock::now();
  CHECK(ring->wait_for_data(30ms));  // times out: true, nothing to read
  CHECK(std::chrono::steady_clock::now() - start >= 30ms);
  CHECK(discard(*ring) == 0);

  std::thread producer([&] {
    std::this_thread::sleep_for(20ms);
    write_record(*ring, 42, 8);
    ring->close();
  });
  CHECK(ring->wait_for_data(10s));
  std::vector<std::uint64_t> sequences;
  while (ring->wait_for_data(10s))
    for (std::uint64_t sequence : drain(*ring)) sequences.push_back(sequence);
  producer.join();
  CHECK(sequences == std::vector<std::uint64_t>{42});
}

TEST_CASE("SpscRing: consume honours max_records and redelivers a record whose callback threw") {
  auto ring = make_ring(4096);
  for (std::uint64_t i = 0; i < 6; ++i) write_record(*ring, i, 16);
  std::vector<std::uint64_t> seen;
  auto collect = [&](std::span<const std::byte> record) { seen.push_back(decode(record).sequence); };
  CHECK(ring->consume(collect, 2) == 2);
  CHECK(seen == std::vector<std::uint64_t>{0, 1});
  CHECK_THROWS_AS(ring->consume([&](std::span<const std::byte> record) {
    const std::uint64_t sequence = decode(record).sequence;
    if (sequence == 3) throw std::runtime_error("writer failed");
    seen.push_back(sequence);
  }),
                  std::runtime_error);
  CHECK(seen == std::vector<std::uint64_t>{0, 1, 2});
  CHECK(ring->consume(collect) == 3);
  CHECK(seen == std::vector<std::uint64_t>{0, 1, 2, 3, 4, 5});
  CHECK(ring->stats().records_read == 6);
}

TEST_CASE("SpscRing: two threads, millions of variable-size records arrive in order and intact") {
  constexpr std::uint64_t kRecords = TRACECORN_RING_STRESS_RECORDS;
  auto ring = make_ring(64 << 10, OverflowPolicy::kLossless, 64);
  std::atomic<bool> refused{false};
  std::thread producer([&] {
    for (std::uint64_t sequence = 0; sequence < kRecords; ++sequence) {
      const std::uint32_t size = size_for(sequence, 57);  // 8..64 bytes
      std::byte* out = ring->reserve(size);
      if (out == nullptr) {
        refused.store(true, std::memory_order_relaxed);
        break;
      }
      std::memcpy(out, &sequence, sizeof sequence);
      for (std::size_t i = 8; i < size; ++i) out[i] = pattern(sequence, i);
      ring->commit();
    }
    ring->close();
  });
  std::uint64_t expected = 0;
  std::uint64_t bad = 0;  // counted, not CHECKed per record: keeps doctest off the hot loop
  while (ring->wait_for_data(1000ms)) {
    ring->consume([&](std::span<const std::byte> record) {
      const Decoded decoded = decode(record);
      if (!decoded.intact || decoded.sequence != expected || record.size() != size_for(expected, 57)) ++bad;
      ++expected;
    });
  }
  producer.join();
  CHECK_FALSE(refused.load(std::memory_order_relaxed));
  CHECK(bad == 0);
  CHECK(expected == kRecords);
  const RingStats stats = ring->stats();
  CHECK(stats.records_written == kRecords);
  CHECK(stats.records_read == stats.records_written);
  MESSAGE("stress: " << kRecords << " records, " << stats.bytes_written << " bytes, " << stats.producer_stalls
                     << " producer stalls");
}

TEST_CASE("SpscRing: a consumer polling consume() alone, without wait_for_data, gets every record") {
  constexpr std::uint64_t kRecords = TRACECORN_RING_STRESS_RECORDS / 10;
  auto ring = make_ring(16 << 10, OverflowPolicy::kLossless, 16);
  std::atomic<bool> refused{false};
  std::thread producer([&] {
    for (std::uint64_t sequence = 0; sequence < kRecords; ++sequence) {
      const std::uint32_t size = size_for(sequence, 120);
      std::byte* out = ring->reserve(size);
      if (out == nullptr) {
        refused.store(true, std::memory_order_relaxed);
        break;
      }
      std::memcpy(out, &sequence, sizeof sequence);
      for (std::size_t i = 8; i < size; ++i) out[i] = pattern(sequence, i);
      ring->commit();
    }
    ring->publish();
  });
  std::uint64_t expected = 0;
  std::uint64_t bad = 0;
  const auto give_up = std::chrono::steady_clock::now() + 60s;
  while (expected < kRecords && !refused.load(std::memory_order_relaxed) &&
         std::chrono::steady_clock::now() < give_up) {
    const std::size_t delivered = ring->consume(
        [&](std::span<const std::byte> record) {
          const Decoded decoded = decode(record);
          if (!decoded.intact || decoded.sequence != expected) ++bad;
          ++expected;
        },
        1000);
    if (delivered == 0) std::this_thread::yield();
  }
  producer.join();
  CHECK_FALSE(refused.load(std::memory_order_relaxed));
  CHECK(bad == 0);
  CHECK(expected == kRecords);
  CHECK(ring->stats().records_read == kRecords);
}

TEST_CASE("SpscRing: a tiny lossless ring with a slow consumer stalls the producer and drops nothing") {
  constexpr std::uint64_t kRecords = 20000;
  auto ring = make_ring(4096, OverflowPolicy::kLossless, 8);
  std::thread producer([&] {
    for (std::uint64_t sequence = 0; sequence < kRecords; ++sequence)
      write_record(*ring, sequence, size_for(sequence, ring->max_record_size() - 8));
    ring->close();
  });
  std::uint64_t expected = 0;
  std::uint64_t bad = 0;
  int batches = 0;
  while (ring->wait_for_data(1000ms)) {
    if (++batches % 16 == 0) std::this_thread::sleep_for(1ms);  // a slow writer now and then
    ring->consume([&](std::span<const std::byte> record) {
      const Decoded decoded = decode(record);
      if (!decoded.intact || decoded.sequence != expected) ++bad;
      ++expected;
    });
  }
  producer.join();
  CHECK(bad == 0);
  const RingStats stats = ring->stats();
  CHECK(stats.records_written == kRecords);
  CHECK(stats.records_read == kRecords);
  CHECK(stats.records_overwritten == 0);
  CHECK(stats.producer_stalls > 0);
}

TEST_CASE("SpscRing: the flight recorder keeps exactly the last records and counts the overwritten") {
  auto ring = make_ring(4096, OverflowPolicy::kFlightRecorder, 64);
  constexpr std::uint64_t kRecords = 1000;
  for (std::uint64_t i = 0; i < kRecords; ++i) write_record(*ring, i, 56);  // 64-byte slots: 64 fit
  const auto kept = retained(*ring);
  REQUIRE(kept.size() == 64);
  for (std::uint64_t i = 0; i < 64; ++i) CHECK(kept[i] == kRecords - 64 + i);
  const RingStats stats = ring->stats();
  CHECK(stats.records_written == kRecords);
  CHECK(stats.records_overwritten == kRecords - 64);
  CHECK(stats.producer_stalls == 0);
  // No consumer in this mode.
  CHECK(ring->consume([](std::span<const std::byte>) { FAIL("no consumer in flight-recorder mode"); }) == 0);
  CHECK_FALSE(ring->wait_for_data(0ms));
  CHECK(ring->stats().records_read == 0);
}

TEST_CASE("SpscRing: the flight recorder with varying sizes keeps exactly the newest records that fit") {
  // Reference layout: a record of slot s starts at position p, or at the next
  // multiple of the capacity when it would cross the end (the gap is padding).
  // The ring keeps every record starting at or after head - capacity.
  constexpr std::uint64_t kCapacity = 8192;
  auto ring = make_ring(kCapacity, OverflowPolicy::kFlightRecorder, 64);
  std::deque<std::pair<std::uint64_t, std::uint64_t>> starts;  // (sequence, start position)
  std::uint64_t head = 0;
  for (std::uint64_t sequence = 0; sequence < 5000; ++sequence) {
    const std::uint32_t size = size_for(sequence, ring->max_record_size() - 8);
    const std::uint64_t slot = slot_of(size);
    if (head % kCapacity + slot > kCapacity) head += kCapacity - head % kCapacity;
    starts.emplace_back(sequence, head);
    head += slot;
    write_record(*ring, sequence, size);

    if (sequence % 97 == 0 || sequence == 4999) {
      std::vector<std::uint64_t> expected;
      for (const auto& [expected_sequence, start] : starts)
        if (start + kCapacity >= head) expected.push_back(expected_sequence);
      const auto kept = retained(*ring);
      REQUIRE(kept == expected);
      CHECK(ring->stats().records_overwritten + kept.size() == sequence + 1);
      // One record older would not have fit.
      REQUIRE(!kept.empty());
      if (kept.front() > 0) {
        const std::uint64_t older_start = starts[kept.front() - 1 - starts.front().first].second;
        CHECK(older_start + kCapacity < head);
      }
    }
  }
}

TEST_CASE("SpscRing: for_each_retained in lossless mode visits the committed, unconsumed records") {
  auto ring = make_ring(4096, OverflowPolicy::kLossless, 64);
  for (std::uint64_t i = 0; i < 5; ++i) write_record(*ring, i, 16);
  CHECK(retained(*ring) == std::vector<std::uint64_t>{0, 1, 2, 3, 4});
  ring->publish();
  CHECK(ring->consume([](std::span<const std::byte>) {}, 3) == 3);
  CHECK(retained(*ring) == std::vector<std::uint64_t>{3, 4});
}
