// Role: the BAP frames writer's encoder threads (FramesWriterOptions::
// encoder_threads) on real guest programs (x86-64's, and each other
// architecture's with frames): one recording at the full level
// feeds several writers at once (the same events), the writer's own thread and
// 2, 3 and 4 encoder threads, with chunks small enough to cut the trace in
// thousands of places, one of them flushed every few events (between an
// instruction and its accesses, as a fork or a kill request can), and the
// files must be the same bytes. The samples carry signal deliveries, guest
// threads and syscalls that change registers: the frames whose register
// changes the next chunk must start from; gaps are injected (after one, no
// register value is known).
#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "formats/bap/bap_reader.h"
#include "formats/bap/bap_writer.h"
#include "formats/null/null_sink.h"
#include "tests/formats/sample_recording.h"
#include "tests/support/architectures.h"
#include "tests/support/error_text.h"

using namespace tracecorn;

namespace {

const std::string kSamples = TRACECORN_SAMPLES_DIR;

// Forwards everything to `writer`, one event at a time, with a gap (events
// lost: no register value is certain after it) after every `gap_every`
// events, and a flush() after every `flush_every` (0: none), so that both land
// anywhere, between an instruction and its accesses too.
class ForwardingSink final : public events::Sink {
 public:
  ForwardingSink(events::Sink& writer, std::size_t gap_every, std::size_t flush_every)
      : writer_(writer), gap_every_(gap_every), flush_every_(flush_every) {}
  void begin(const events::TraceInfo& info) override { writer_.begin(info); }
  void on_event(const events::Event& event) override {
    writer_.on_event(event);
    counted(event.thread);
  }
  void on_instructions(const events::InstructionRun& run) override {
    writer_.on_instructions(run);
    counted(run.thread);
  }
  void flush() override { writer_.flush(); }
  std::string end(const events::TraceSummary& summary) override { return writer_.end(summary); }
  bool failed() const override { return writer_.failed(); }
  std::uint64_t flushes() const { return flushes_; }

 private:
  void counted(events::ThreadId thread) {
    ++count_;
    if (count_ % gap_every_ == 0) {
      events::Event gap;
      gap.kind = events::EventKind::kGap;
      gap.thread = thread;
      gap.payload = events::GapEvent{3, "injected by the test"};
      writer_.on_event(gap);
    }
    if (flush_every_ && count_ % flush_every_ == 0) {
      writer_.flush();
      ++flushes_;
    }
  }
  events::Sink& writer_;
  std::size_t gap_every_, flush_every_;
  std::uint64_t count_ = 0, flushes_ = 0;
};

std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

struct Variant {
  unsigned threads;
  std::size_t chunk_bytes;
  std::size_t flush_every;  // 0: never
};

void check_same_bytes(const std::string& sample) {
  CAPTURE(sample);
  const std::vector<Variant> variants = {
      {0, 0, 0}, {2, 4096, 0}, {3, 300, 0}, {4, 1000, 7}, {2, std::size_t{256} << 10, 0}};
  const std::string stem =
      (std::filesystem::temp_directory_path() / ("tracecorn-bap-enc-" + std::to_string(::getpid()) + "-")).string();
  std::vector<std::unique_ptr<formats::FramesWriter>> writers;
  std::vector<std::unique_ptr<ForwardingSink>> forwarders;
  const auto run = test::record_sample(kSamples + "/" + sample, core::TraceLevel::kFull,
                                       [&](linux_layer::LinuxProcess& process) {
                                         std::vector<events::Sink*> sinks;
                                         for (std::size_t i = 0; i < variants.size(); ++i) {
                                           formats::FramesWriterOptions options;
                                           options.meta = formats::FramesMeta{};  // (no time of writing in it)
                                           options.frames_per_toc_entry = 100;
                                           options.encoder_threads = variants[i].threads;
                                           if (variants[i].chunk_bytes)
                                             options.encoder_chunk_bytes = variants[i].chunk_bytes;
                                           auto writer = formats::FramesWriter::open(stem + std::to_string(i),
                                                                                     process.arch(), options);
                                           REQUIRE(writer.has_value());
                                           writers.push_back(std::move(*writer));
                                           forwarders.push_back(std::make_unique<ForwardingSink>(
                                               *writers.back(), 5003, variants[i].flush_every));
                                           sinks.push_back(forwarders.back().get());
                                         }
                                         return sinks;
                                       });
  CHECK(run.finish_error.empty());
  REQUIRE(writers.size() == variants.size());
  CHECK(writers[0]->frames_written() > 1000);
  CHECK(forwarders[3]->flushes() > 100);
  const std::string expected = file_bytes(stem + "0");
  for (std::size_t i = 1; i < variants.size(); ++i) {
    CAPTURE(variants[i].threads);
    CAPTURE(variants[i].chunk_bytes);
    CAPTURE(variants[i].flush_every);
    CHECK(writers[i]->frames_written() == writers[0]->frames_written());
    CHECK(writers[i]->dropped_events() == writers[0]->dropped_events());
    CHECK(file_bytes(stem + std::to_string(i)) == expected);
  }
  // And the file reads back whole (TOC included).
  auto reader = formats::FramesReader::open(stem + "1");
  REQUIRE_MESSAGE(reader.has_value(), test_support::error_text(reader));
  formats::NullSink none;
  const auto status = (*reader)->read_all(none);
  CHECK_MESSAGE(status.has_value(), test_support::error_text(status));
  CHECK((*reader)->warning().empty());
  for (std::size_t i = 0; i < variants.size(); ++i) std::filesystem::remove(stem + std::to_string(i));
}

}  // namespace

TEST_CASE("BAP frames: encoder threads write the bytes the writer's own thread writes (signals, threads, flushes)") {
  for (const std::string sample : {"static/signal_handlers", "static/robust_mutex", "static/thread_abuse", "static/signal_timers"})
    check_same_bytes(sample);
}

TEST_CASE("BAP frames: encoder threads write the bytes the writer's own thread writes, on every other architecture") {
  // Each one's signal sample in its static build (arm's is Thumb-2; static-marm
  // is ARM: both instruction sets' frames name their mode).
  for (const auto& row : test_support::kGuestArchitectures) {
    if (row.is_host || !row.has_bap_frames) continue;
    for (const std::string_view variant : row.sample_variants)
      if (variant == "static" || variant == "static-marm")
        check_same_bytes("../guest-" + std::string(row.name) + "/" + std::string(variant) + "/signal_handlers");
  }
}
