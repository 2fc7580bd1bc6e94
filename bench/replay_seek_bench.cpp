// Role: how fast the state at any event of a long trace can be reached
// (recorder/replay/trace_index.h): builds the index of TRACE in one pass (timed
// apart: events/s), then seeks to SEEKS positions spread over the trace in a
// fixed pseudo-random order and reports the slowest, median and fastest seek,
// with a register and 64 bytes of stack read at each (so that the work is real).
// Not part of ctest; run by hand (bench/README.md gives a recorded figure):
//   build/bench/replay_seek_bench TRACE [SEEKS=50] [CHECKPOINT_INTERVAL=262144]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "bench/bench_machine.h"
#include "recorder/replay/trace_index.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s TRACE [SEEKS] [CHECKPOINT_INTERVAL]\n", argv[0]);
    return 2;
  }
  const int seeks = argc > 2 ? std::atoi(argv[2]) : 50;
  tracecorn::replay::TraceIndexOptions options;
  if (argc > 3) options.checkpoint_interval = std::strtoull(argv[3], nullptr, 0);
  using Clock = std::chrono::steady_clock;
  auto reader = tracecorn::replay::TraceReader::open(argv[1]);
  if (!reader) {
    std::fprintf(stderr, "%s\n", reader.error().to_string().c_str());
    return 1;
  }
  (*reader)->show_progress("indexing");  // on stderr, only when it is a terminal
  const auto started = Clock::now();
  auto index = tracecorn::replay::TraceIndex::build(**reader, options);
  if (!index) {
    std::fprintf(stderr, "%s\n", index.error().to_string().c_str());
    return 1;
  }
  const double build = std::chrono::duration<double>(Clock::now() - started).count();
  const auto& idx = **index;
  std::printf("machine:  %s, load %s; commit %s\n", tracecorn::bench::cpu_model().c_str(),
              tracecorn::bench::load_average().c_str(), tracecorn::bench::commit().c_str());
  std::printf("trace:    %s (%s)\n", argv[1], std::string(tracecorn::replay::trace_format_name((*reader)->format())).c_str());
  std::printf("index:    %llu events in %.1f s (%.1f M events/s), %llu checkpoints every %llu events, delta log %.1f MB\n",
              static_cast<unsigned long long>(idx.event_count()), build, idx.event_count() / build / 1e6,
              static_cast<unsigned long long>(idx.checkpoint_count()),
              static_cast<unsigned long long>(options.checkpoint_interval), idx.delta_bytes() / 1e6);
  std::size_t sp_index = 0;
  while (sp_index < idx.arch().registers.size() && idx.arch().registers[sp_index].uc_id != idx.arch().sp_reg) ++sp_index;
  std::mt19937_64 random(42);
  std::vector<double> times;
  std::uint64_t checksum = 0;
  for (int i = 0; i < seeks; ++i) {
    const std::uint64_t target = random() % (idx.event_count() + 1);
    const auto t0 = Clock::now();
    if (auto status = (*index)->seek(target); !status) {
      std::fprintf(stderr, "seek %llu: %s\n", static_cast<unsigned long long>(target), status.error().to_string().c_str());
      return 1;
    }
    std::uint8_t stack[64];
    if (auto sp = idx.register_value(sp_index)) (void)idx.read_memory(sp->as_u64(), stack), checksum += stack[0];
    if (auto pc = idx.pc()) checksum += *pc;
    times.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  }
  std::sort(times.begin(), times.end());
  std::printf("seek:     %d seeks: fastest %.2f ms, median %.2f ms, slowest %.2f ms (checksum %llx)\n", seeks,
              times.front(), times[times.size() / 2], times.back(), static_cast<unsigned long long>(checksum));
  return 0;
}
