// Role: what the round-trip tests of every trace format share: a sink that
// copies the events a format can carry, a register-list comparison, chunked
// digests for long runs compared as they stream, and the recording of a guest
// sample with that sink and a format's writer attached to the same recording.
// Used by tests/formats/<format>/*_roundtrip_test.cpp.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "recorder/events/event.h"
#include "tests/formats/sample_recording.h"

namespace tracecorn::test {

// An event copied out of the sink call, with the fields UCIR carries.
struct Copied {
  events::EventKind kind;
  std::uint64_t address = 0, size = 0, value = 0, pc = 0, count = 0;
  bool pc_known = false;
  std::vector<std::uint8_t> bytes;
  std::vector<events::RegisterValue> registers;
  std::uint64_t args[6] = {};
  std::int64_t result = 0;
  std::vector<std::pair<std::uint64_t, std::vector<std::uint8_t>>> writes;
  std::vector<std::tuple<int, std::uint64_t, std::uint64_t, std::uint32_t>> mappings;  // kind, start, length, prot
  // Per mapping change: its name, file, file offset and bytes from the file
  // (compared by the formats that carry them).
  std::vector<std::tuple<std::string, std::string, std::uint64_t, std::uint64_t>> mapping_files;
  std::vector<std::uint64_t> stack;
  std::string text;  // a fault's description, a module's path, a gap's reason
  std::uint32_t thread = 0;
  std::uint8_t mode = 0;  // a block's or instruction's instruction set (arm: 1 = Thumb)
};

// The fields of `event` the round-trip tests compare.
inline Copied copy_event(const events::Event& event) {
  Copied copy;
  copy.kind = event.kind;
  copy.thread = event.thread.value;
  std::visit(
      [&](const auto& p) {
        using T = std::decay_t<decltype(p)>;
        if constexpr (std::is_same_v<T, events::BlockEvent>) {
          copy.address = p.address.value;
          copy.size = p.size;
          copy.count = p.instruction_count;
          copy.mode = p.mode;
        } else if constexpr (std::is_same_v<T, events::InstructionEvent>) {
          copy.address = p.address.value;
          copy.size = p.size;
          copy.mode = p.mode;
          copy.bytes.assign(p.bytes.begin(), p.bytes.end());
        } else if constexpr (std::is_same_v<T, events::MemoryEvent>) {
          copy.address = p.address.value;
          copy.size = p.size;
          copy.value = p.value;
          copy.pc = p.pc.value;
          copy.pc_known = p.pc_known;
        } else if constexpr (std::is_same_v<T, events::RegistersEvent>) {
          copy.pc = p.pc.value;
          copy.registers.assign(p.changes.begin(), p.changes.end());
        } else if constexpr (std::is_same_v<T, events::SyscallEvent>) {
          copy.pc = p.pc.value;
          copy.value = p.number;
          std::copy(std::begin(p.args), std::end(p.args), copy.args);
          copy.result = p.result;
          copy.registers.assign(p.register_changes.begin(), p.register_changes.end());
          for (const auto& w : p.memory_writes) copy.writes.push_back({w.address.value, {w.bytes.begin(), w.bytes.end()}});
          for (const auto& m : p.mapping_changes) {
            copy.mappings.emplace_back(static_cast<int>(m.kind), m.start.value, m.length,
                                       m.kind == events::MappingChangeKind::kUnmap ? 0u : m.prot & 7u);
            copy.mapping_files.emplace_back(std::string(m.name), std::string(m.file), m.file_offset, m.file_size);
          }
          copy.stack.assign(p.call_stack.begin(), p.call_stack.end());
        } else if constexpr (std::is_same_v<T, events::ExitEvent>) {
          copy.value = static_cast<std::uint64_t>(p.code);
        } else if constexpr (std::is_same_v<T, events::FaultEvent>) {
          copy.pc = p.pc.value;
          copy.address = p.address.value;
          copy.value = p.signal;
          copy.text = std::string(p.description);
        } else if constexpr (std::is_same_v<T, events::ModuleLoadEvent>) {
          copy.address = p.start.value;
          copy.size = p.end.value - p.start.value;
          copy.value = p.load_bias;
          copy.text = std::string(p.path);
        } else if constexpr (std::is_same_v<T, events::GapEvent>) {
          copy.value = p.lost_events;
          copy.text = std::string(p.reason);
        }
      },
      event.payload);
  return copy;
}

// Keeps a copy of every event of a kind `carries` accepts (the kinds a format can carry).
class CopySink final : public events::Sink {
 public:
  explicit CopySink(bool (*carries)(events::EventKind)) : carries_(carries) {}
  void begin(const events::TraceInfo& info) override { info_ = info; }
  void on_event(const events::Event& event) override {
    if (!carries_(event.kind)) return;
    events_.push_back(copy_event(event));
  }
  std::string end(const events::TraceSummary&) override { return ""; }
  events::TraceInfo info_;
  std::vector<Copied> events_;

 private:
  bool (*carries_)(events::EventKind);
};

// Whether two register lists hold the same registers with the same values, in the same order.
inline bool same_registers(const std::vector<events::RegisterValue>& a, const std::vector<events::RegisterValue>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i].index != b[i].index || a[i].size != b[i].size ||
        std::memcmp(a[i].bytes.data(), b[i].bytes.data(), a[i].size) != 0)
      return false;
  return true;
}

// Folds a stream of byte strings (one per event, a format's projection of it)
// into one FNV-1a digest per kChunkEvents events, so that two long event
// streams are compared in constant memory and a difference is located to its
// chunk. Single-threaded; call finish() once after the last fold().
class ChunkDigests {
 public:
  static constexpr std::uint64_t kChunkEvents = 1 << 16;
  void fold(std::string_view bytes) {
    if (counted_ % kChunkEvents == 0) digest_ = 14695981039346656037ull;
    for (const char c : bytes) digest_ = (digest_ ^ static_cast<std::uint8_t>(c)) * 1099511628211ull;
    if (++counted_ % kChunkEvents == 0) digests_.push_back(digest_);
  }
  void finish() {
    if (counted_ % kChunkEvents) digests_.push_back(digest_);
  }
  std::uint64_t counted() const { return counted_; }
  const std::vector<std::uint64_t>& digests() const { return digests_; }

 private:
  std::vector<std::uint64_t> digests_;
  std::uint64_t counted_ = 0;
  std::uint64_t digest_ = 0;
};

// Checks (doctest) that two streams folded the same number of events to the
// same digests, naming the first chunk that differs.
inline void check_same_digests(const ChunkDigests& recorded, const ChunkDigests& read) {
  CHECK(read.counted() == recorded.counted());
  REQUIRE(read.digests().size() == recorded.digests().size());
  const auto differ = std::mismatch(read.digests().begin(), read.digests().end(), recorded.digests().begin());
  CHECK_MESSAGE(differ.first == read.digests().end(),
                "events differ in chunk " << differ.first - read.digests().begin() << " (events from "
                                          << (differ.first - read.digests().begin()) * ChunkDigests::kChunkEvents
                                          << ")");
}

// Records `program` (argv: the program, then `scratch_dir` when given: samples
// that work in a directory take it first) at `level` into the sink
// `make_writer` returns and into a CopySink keeping the kinds `carries`
// accepts; returns the CopySink once the writer has been ended.
inline std::unique_ptr<CopySink> record_sample(
    const std::string& program, core::TraceLevel level, const std::string& scratch_dir,
    bool (*carries)(events::EventKind),
    const std::function<std::unique_ptr<events::Sink>(const arch::ArchInfo&)>& make_writer) {
  auto probe = std::make_unique<CopySink>(carries);
  std::unique_ptr<events::Sink> writer;
  const auto run = record_sample(
      program, level,
      [&](linux_layer::LinuxProcess& process) -> std::vector<events::Sink*> {
        writer = make_writer(process.arch());
        REQUIRE(writer);
        return {probe.get(), writer.get()};
      },
      scratch_dir);
  CHECK(run.finish_error.empty());
  return probe;
}

// The samples cross-built for `arch` in `variant` (samples/cross.cmake), named
// relative to the host samples' folder `samples_dir` ("../guest-arm/static/hello"),
// sorted, except those that take signals in handlers (see
// takes_signals_in_handlers); at least 15 of them are required.
inline std::vector<std::string> cross_samples(const std::string& samples_dir, const std::string& arch,
                                              const std::string& variant) {
  std::vector<std::string> samples;
  for (const auto& entry : std::filesystem::directory_iterator(samples_dir + "-" + arch + "/" + variant))
    if (!takes_signals_in_handlers("/" + entry.path().filename().string()))
      samples.push_back("../guest-" + arch + "/" + variant + "/" + entry.path().filename().string());
  std::sort(samples.begin(), samples.end());
  REQUIRE(samples.size() >= 15);
  return samples;
}

}  // namespace tracecorn::test
