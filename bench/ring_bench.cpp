// Role: the ring benchmark. Measures SpscRing throughput (records/s, payload
// bytes/s, ns per record) for 16-, 32- and 64-byte records in one run:
//   producer -> consumer  kLossless, two threads (the emulation thread's hook
//                         side and the drain thread), 64 MiB ring, publish
//                         every 64 commits; the consumer reads every record.
//   producer only         kFlightRecorder, no consumer: the cost a hook pays to
//                         put one record in the ring (reserve + copy + commit).
// It prints the machine and the commit above the table.
//
// Who runs it: a person or CI, by hand (`ring_bench [--quick] [--records N]
// [--runs N]`); it is not a ctest test. Two threads in the lossless part.
//
// Invariants: the record payloads are generated before and outside the timed
// part; the clock starts when both threads are running and stops when the
// consumer has seen the ring closed and drained; every run checks that the
// consumer saw every record, in order (sum and count of sequence numbers), and
// that records_read == records_written, otherwise the program exits 1 after the
// table.
#include "bench_machine.h"
#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <sys/utsname.h>

#include "recorder/ring/spsc_ring.h"

using tracecorn::ring::OverflowPolicy;
using tracecorn::ring::RingOptions;
using tracecorn::ring::RingStats;
using tracecorn::ring::SpscRing;

namespace {

constexpr std::array<std::uint32_t, 3> kRecordSizes = {16, 32, 64};
constexpr std::size_t kCapacity = std::size_t{64} << 20;
constexpr std::uint32_t kPublishEvery = 64;

struct Result {
  double seconds = 0;
  RingStats stats;
  bool ok = true;
};

std::unique_ptr<SpscRing> make_ring(OverflowPolicy policy) {
  auto ring = SpscRing::create(RingOptions{kCapacity, policy, kPublishEvery});
  if (!ring) {
    std::fprintf(stderr, "ring_bench: %s\n", ring.error().to_string().c_str());
    std::exit(2);
  }
  return std::move(ring).value();
}

// The producer's loop: what a hook does per event. `payload` is the record
// template; the first 8 bytes become the sequence number.
void produce(SpscRing& ring, std::uint64_t records, std::uint32_t size, const std::byte* payload) {
  for (std::uint64_t sequence = 0; sequence < records; ++sequence) {
    std::byte* out = ring.reserve(size);
    if (out == nullptr) [[unlikely]] break;  // the run's check then fails
    std::memcpy(out, payload, size);
    std::memcpy(out, &sequence, sizeof sequence);
    ring.commit();
  }
  ring.close();
}

Result run_lossless(std::uint64_t records, std::uint32_t size, const std::byte* payload) {
  auto ring = make_ring(OverflowPolicy::kLossless);
  std::atomic<int> ready{0};
  std::thread producer([&] {
    ready.fetch_add(1, std::memory_order_acq_rel);
    while (ready.load(std::memory_order_acquire) < 2) {
    }
    produce(*ring, records, size, payload);
  });
  ready.fetch_add(1, std::memory_order_acq_rel);
  while (ready.load(std::memory_order_acquire) < 2) {
  }
  const auto start = std::chrono::steady_clock::now();
  std::uint64_t count = 0;
  std::uint64_t sum = 0;
  std::uint64_t out_of_order = 0;
  while (ring->wait_for_data(std::chrono::milliseconds(1000))) {
    ring->consume([&](std::span<const std::byte> record) {
      std::uint64_t sequence = 0;
      std::memcpy(&sequence, record.data(), sizeof sequence);
      out_of_order += sequence != count;
      sum += sequence;
      ++count;
    });
  }
  const auto stop = std::chrono::steady_clock::now();
  producer.join();

  Result result;
  result.seconds = std::chrono::duration<double>(stop - start).count();
  result.stats = ring->stats();
  result.ok = count == records && out_of_order == 0 && sum == records * (records - 1) / 2 &&
              result.stats.records_read == result.stats.records_written;
  return result;
}

Result run_producer_only(std::uint64_t records, std::uint32_t size, const std::byte* payload) {
  auto ring = make_ring(OverflowPolicy::kFlightRecorder);
  const auto start = std::chrono::steady_clock::now();
  produce(*ring, records, size, payload);
  const auto stop = std::chrono::steady_clock::now();
  Result result;
  result.seconds = std::chrono::duration<double>(stop - start).count();
  result.stats = ring->stats();
  std::uint64_t retained = 0;
  std::uint64_t previous = 0;
  ring->for_each_retained([&](std::span<const std::byte> record) {
    std::uint64_t sequence = 0;
    std::memcpy(&sequence, record.data(), sizeof sequence);
    if (retained > 0 && sequence != previous + 1) result.ok = false;
    previous = sequence;
    ++retained;
  });
  result.ok = result.ok && result.stats.records_written == records && previous == records - 1 &&
              retained + result.stats.records_overwritten == records;
  return result;
}

// ---------------------------------------------------------------------------
// Machine and commit
// ---------------------------------------------------------------------------

using tracecorn::bench::commit;
using tracecorn::bench::cpu_model;
using tracecorn::bench::load_average;

// ---------------------------------------------------------------------------

struct Options {
  std::uint64_t records = 20'000'000;
  int runs = 3;
};

Options parse_options(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--quick") {
      options.records = 2'000'000;
      options.runs = 1;
    } else if (arg == "--records" && i + 1 < argc) {
      options.records = std::strtoull(argv[++i], nullptr, 10);
    } else if (arg == "--runs" && i + 1 < argc) {
      options.runs = std::max(1, std::atoi(argv[++i]));
    } else {
      std::fprintf(stderr, "usage: ring_bench [--quick] [--records N] [--runs N]\n");
      std::exit(2);
    }
  }
  if (options.records == 0) options.records = 1;
  return options;
}

void print_row(const char* mode, std::uint32_t size, const Result& best, std::uint64_t records, int runs) {
  const double records_per_second = static_cast<double>(records) / best.seconds;
  const double bytes_per_second = records_per_second * size;
  std::printf("%-18s %5u %12.1f %12.1f %10.2f %10" PRIu64 " %5d  %s\n", mode, size, records_per_second / 1e6,
              bytes_per_second / (1 << 20), best.seconds * 1e9 / static_cast<double>(records),
              best.stats.producer_stalls, runs, best.ok ? "ok" : "MISMATCH");
}

}  // namespace

int main(int argc, char** argv) {
  const Options options = parse_options(argc, argv);
  utsname uts{};
  uname(&uts);
  std::printf("ring_bench: SpscRing throughput, %" PRIu64 " records per run, best of %d run(s)\n", options.records,
              options.runs);
  std::printf("machine:  %u cores, %s, kernel %s\n", std::thread::hardware_concurrency(), cpu_model().c_str(),
              uts.release);
  std::printf("commit:   %s\n", commit().c_str());
  std::printf("ring:     %zu MiB, publish every %u commits; payload bytes only (8-byte header and padding excluded)\n",
              kCapacity >> 20, kPublishEvery);
  std::printf("\n%-18s %5s %12s %12s %10s %10s %5s\n", "mode", "bytes", "Mrecords/s", "MiB/s", "ns/record",
              "stalls", "runs");

  // Inputs, outside the timed part.
  std::vector<std::byte> payload(64);
  for (std::size_t i = 0; i < payload.size(); ++i) payload[i] = static_cast<std::byte>(i * 7 + 1);

  bool all_ok = true;
  const struct {
    const char* name;
    Result (*run)(std::uint64_t, std::uint32_t, const std::byte*);
  } kModes[] = {{"producer->consumer", &run_lossless}, {"producer only", &run_producer_only}};
  for (const auto& mode : kModes) {
    for (std::uint32_t size : kRecordSizes) {
      Result best;
      best.seconds = 1e300;
      for (int run = 0; run < options.runs; ++run) {
        const Result result = mode.run(options.records, size, payload.data());
        all_ok = all_ok && result.ok;
        if (result.seconds < best.seconds) best = result;
      }
      print_row(mode.name, size, best, options.records, options.runs);
    }
  }
  return all_ok ? 0 : 1;
}
