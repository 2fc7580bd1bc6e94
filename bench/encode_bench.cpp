// Role: how the BAP frames encoder scales with threads (issue 22's `--jobs`),
// apart from the recorder and the reader: the first EVENTS events of TRACE are
// read into memory once (events::EventBatch), then handed to a FramesWriter
// (plain, into a scratch file in DIR) with 0 encoder threads (the caller's
// thread encodes) and with each count in THREADS; each row is the best of
// three runs. Prints events/s, MB/s of frames and the ratio to the caller's
// thread (and the CPU seconds of the thread that hands the events over and
// writes the file: what does not scale), and checks that every count wrote the same frames (count and bytes).
// Not part of ctest: it measures, it does not pass or fail (but exits 1 when
// the counts disagree). Run by hand (bench/README.md gives a recorded figure):
//   build/bench/encode_bench TRACE [EVENTS=2000000] [THREADS=2,4,8] [DIR=/tmp]
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "bench/bench_machine.h"
#include "formats/bap/bap_writer.h"
#include "recorder/events/event_batch.h"
#include "recorder/replay/trace_reader.h"

namespace {

using Clock = std::chrono::steady_clock;

double thread_cpu_seconds() {
  timespec now{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) / 1e9;
}

struct Run {
  double seconds = 0;
  double caller_cpu = 0;  // CPU seconds of the thread that hands the events over (and writes the file)
  std::uint64_t frames = 0;
  std::uint64_t bytes = 0;
};

// One encoding of every event of `batches` into `path`; nullopt-like (seconds < 0) on an error.
Run encode_once(const std::vector<std::unique_ptr<tracecorn::events::EventBatch>>& batches,
                const tracecorn::events::TraceInfo& info, const tracecorn::arch::ArchInfo& arch,
                const std::string& path, unsigned threads) {
  tracecorn::formats::FramesWriterOptions options;
  options.encoder_threads = threads;
  options.meta = tracecorn::formats::FramesMeta{};  // (no host facts collected: not what is measured)
  auto writer = tracecorn::formats::FramesWriter::open(path, arch, options);
  if (!writer) {
    std::fprintf(stderr, "%s\n", writer.error().to_string().c_str());
    return {-1, 0, 0, 0};
  }
  const auto started = Clock::now();
  const double cpu_started = thread_cpu_seconds();
  (*writer)->begin(info);
  for (const auto& batch : batches) (*writer)->on_events(batch->events());
  const std::string error = (*writer)->end({});
  const double seconds = std::chrono::duration<double>(Clock::now() - started).count();
  const double caller_cpu = thread_cpu_seconds() - cpu_started;
  if (!error.empty()) {
    std::fprintf(stderr, "%s\n", error.c_str());
    return {-1, 0, 0, 0};
  }
  return {seconds, caller_cpu, (*writer)->frames_written(), (*writer)->bytes_written()};
}

std::vector<unsigned> parse_threads(const char* text) {
  std::vector<unsigned> counts;
  std::stringstream list(text);
  std::string item;
  while (std::getline(list, item, ','))
    if (!item.empty()) counts.push_back(static_cast<unsigned>(std::strtoul(item.c_str(), nullptr, 10)));
  return counts;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s TRACE [EVENTS] [THREADS=2,4,8] [DIR=/tmp]\n", argv[0]);
    return 2;
  }
  const std::uint64_t wanted = argc > 2 ? std::strtoull(argv[2], nullptr, 0) : 2000000;
  const std::vector<unsigned> thread_counts = parse_threads(argc > 3 ? argv[3] : "2,4,8");
  const std::string dir = argc > 4 ? argv[4] : "/tmp";
  auto reader = tracecorn::replay::TraceReader::open(argv[1]);
  if (!reader) {
    std::fprintf(stderr, "%s\n", reader.error().to_string().c_str());
    return 1;
  }
  std::vector<std::unique_ptr<tracecorn::events::EventBatch>> batches;
  std::uint64_t loaded = 0;
  while (loaded < wanted) {
    if (batches.empty() || batches.back()->size() >= 65536)
      batches.push_back(std::make_unique<tracecorn::events::EventBatch>());
    auto more = (*reader)->next([&](const tracecorn::events::Event& event) {
      batches.back()->add(event);
      ++loaded;
    });
    if (!more) {
      std::fprintf(stderr, "%s\n", more.error().to_string().c_str());
      return 1;
    }
    if (!*more) break;
  }
  const std::string path = dir + "/encode_bench." + std::to_string(getpid()) + ".frames";
  std::printf("machine: %s, load %s; commit %s\n", tracecorn::bench::cpu_model().c_str(),
              tracecorn::bench::load_average().c_str(), tracecorn::bench::commit().c_str());
  std::printf("events:  %llu of %s, encoded as plain BAP frames into %s\n",
              static_cast<unsigned long long>(loaded), argv[1], dir.c_str());
  std::printf("%-8s %9s %12s %10s %9s %11s\n", "threads", "seconds", "M events/s", "MB/s", "vs 0", "caller cpu");
  std::vector<unsigned> rows{0};
  rows.insert(rows.end(), thread_counts.begin(), thread_counts.end());
  double baseline = 0;
  Run first;
  bool agree = true;
  for (const unsigned threads : rows) {
    Run best;
    for (int attempt = 0; attempt < 3; ++attempt) {
      const Run run = encode_once(batches, (*reader)->info(), (*reader)->arch(), path, threads);
      if (run.seconds < 0) return 1;
      if (attempt == 0 || run.seconds < best.seconds) best = run;
    }
    if (threads == 0) {
      baseline = best.seconds;
      first = best;
    } else if (best.frames != first.frames || best.bytes != first.bytes) {
      agree = false;
    }
    std::printf("%-8u %9.3f %12.2f %10.1f %8.2fx %10.3fs\n", threads, best.seconds, loaded / best.seconds / 1e6,
                best.bytes / best.seconds / 1e6, baseline / best.seconds, best.caller_cpu);
  }
  std::remove(path.c_str());
  std::printf("frames:  %llu, %llu bytes%s\n", static_cast<unsigned long long>(first.frames),
              static_cast<unsigned long long>(first.bytes), agree ? "" : "; THE THREAD COUNTS DISAGREE");
  return agree ? 0 : 1;
}
