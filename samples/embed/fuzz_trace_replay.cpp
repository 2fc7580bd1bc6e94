// Role: replays a crash trace written by the fuzz harness (fuzz_harness.cpp
// with TRACECORN_CRASH_TRACE=*.ucir) against the harness's own engine set-up
// (parser_guest.h): the input that crashed is run again from the parser's
// entry on a fresh engine built as the harness builds it, recorded at the
// trace's level and compared with the trace from the crash backwards
// (replay::replay_engine_trace in recorder/replay/replayer.h says how the
// starting state is obtained and how the two are aligned).
//   fuzz_trace_replay TRACE INPUT
// Prints one line: the match (steps compared, steps not compared on either
// side), or the first divergence with the trace's event index.
// Exit status: 0 match, 1 divergence, 2 usage or unreadable input, 125 the
// replay could not start (an invalid trace: its reader's error with the byte offset).
// Built in tracecorn's tree only (it links the replay library); single-threaded
// apart from the recorder's drain thread.
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "parser_guest.h"
#include "recorder/replay/replayer.h"

int main(int argc, char** argv) {
  using namespace tracecorn;
  if (argc != 3) {
    std::fprintf(stderr, "usage: fuzz_trace_replay TRACE INPUT\n");
    return 2;
  }
  std::ifstream file(argv[2], std::ios::binary);
  if (!file) {
    std::fprintf(stderr, "fuzz_trace_replay: cannot read %s\n", argv[2]);
    return 2;
  }
  const std::vector<std::uint8_t> input((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  auto guest = samples::ParserGuest::create();
  if (!guest) {
    std::fprintf(stderr, "fuzz_trace_replay: %s\n", guest.error().to_string().c_str());
    return 125;
  }
  replay::EngineReplay replay;
  replay.engine = (*guest)->engine();
  replay.arch = &(*guest)->arch();
  replay.progress = true;
  replay.run = [&](core::Recorder& recorder) {
    if (!(*guest)->run(input.data(), input.size())) samples::report_crash(recorder, (*guest)->crash());
  };
  auto report = replay::replay_engine_trace(argv[1], replay);
  if (!report) {
    std::fprintf(stderr, "fuzz_trace_replay: %s\n", report.error().to_string().c_str());
    return 125;
  }
  if (report->divergence) {
    std::printf("fuzz_trace_replay: %s: diverged at %s\n", argv[1], report->divergence->to_string().c_str());
    return 1;
  }
  std::printf("fuzz_trace_replay: %s: replay matches: %llu steps compared at level %s; not compared: %llu trace "
              "steps before the run (earlier inputs), %llu steps of the run the ring had overwritten\n",
              argv[1], static_cast<unsigned long long>(report->steps_compared), report->level.c_str(),
              static_cast<unsigned long long>(report->trace_steps_before_run),
              static_cast<unsigned long long>(report->run_steps_before_trace));
  return 0;
}
