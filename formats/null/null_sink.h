// Role: a sink that keeps nothing but counts, for measuring the recorder without
// any serialisation cost (`tracecorn record --format null`, the benchmarks).
// Called on the drain thread; the counts are read after end().
#pragma once

#include <array>
#include <cstdint>

#include "recorder/events/event.h"

namespace tracecorn::formats {

class NullSink final : public events::Sink {
 public:
  void begin(const events::TraceInfo&) override {}
  void on_event(const events::Event& event) override {
    ++events_;
    ++by_kind_[static_cast<std::size_t>(event.kind)];
  }
  void on_events(std::span<const events::Event> events) override {
    events_ += events.size();
    for (const events::Event& event : events) ++by_kind_[static_cast<std::size_t>(event.kind)];
  }
  void on_instructions(const events::InstructionRun& run) override {
    events_ += run.instructions.size();
    by_kind_[static_cast<std::size_t>(events::EventKind::kInstruction)] += run.instructions.size();
  }
  std::string end(const events::TraceSummary& summary) override {
    summary_ = summary;
    return "";
  }
  std::uint64_t events() const { return events_; }
  std::uint64_t count(events::EventKind kind) const { return by_kind_[static_cast<std::size_t>(kind)]; }
  const events::TraceSummary& summary() const { return summary_; }

 private:
  std::uint64_t events_ = 0;
  std::array<std::uint64_t, 16> by_kind_{};
  events::TraceSummary summary_;
};

}  // namespace tracecorn::formats
