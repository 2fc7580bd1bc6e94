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

#include "arch/arch.h"
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
  // Signals: value the signal, result si_code, count the sender's pid, args[0]
  // si_addr, pc where the interrupted code resumes, address the handler, size
  // the frame's address, pc_known whether it is a fault, writes the frame,
  // registers the handler's. Threads: value the change, count `from`, result
  // the exit code, registers a switch's.
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
        } else if constexpr (std::is_same_v<T, events::SignalEvent>) {
          copy.value = p.signal;
          copy.result = p.code;
          copy.count = p.sender_pid;
          copy.args[0] = p.fault_address.value;
          copy.pc = p.interrupted_pc.value;
          copy.address = p.handler.value;
          copy.size = p.frame.value;
          copy.pc_known = p.fault;
          for (const auto& w : p.frame_writes) copy.writes.push_back({w.address.value, {w.bytes.begin(), w.bytes.end()}});
          copy.registers.assign(p.register_changes.begin(), p.register_changes.end());
        } else if constexpr (std::is_same_v<T, events::ThreadEvent>) {
          copy.value = static_cast<std::uint64_t>(p.change);
          copy.count = p.from.value;
          copy.result = p.exit_code;
          copy.registers.assign(p.registers.begin(), p.registers.end());
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

// Whether two signal or thread events (kSignal, kThread) say the same: every
// field, the frame's bytes, and the registers (exactly, or, when the format
// keeps only the registers that changed, `registers_as_diff`: every register
// the read event has, with the recorded value).
inline bool same_signal_or_thread(const Copied& a, const Copied& b, bool registers_as_diff = false) {
  if (a.kind != b.kind || a.value != b.value || a.result != b.result || a.count != b.count || a.pc != b.pc ||
      a.address != b.address || a.size != b.size || a.pc_known != b.pc_known || a.args[0] != b.args[0] ||
      a.writes != b.writes)
    return false;
  if (!registers_as_diff) return same_registers(a.registers, b.registers);
  for (const auto& read : b.registers) {
    const auto found = std::find_if(a.registers.begin(), a.registers.end(),
                                    [&](const events::RegisterValue& value) { return value.index == read.index; });
    if (found == a.registers.end() || std::memcmp(found->bytes.data(), read.bytes.data(), read.size) != 0) return false;
  }
  return true;
}

// For each event of `events`, whether it is a block that a fault's signal cut
// short (a kSignal with pc_known, the fault flag, before the next block): a
// format that counts the instructions that ran may give it fewer.
inline std::vector<bool> blocks_cut_by_faults(const std::vector<Copied>& events) {
  std::vector<bool> cut(events.size(), false);
  std::size_t block = events.size();
  for (std::size_t i = 0; i < events.size(); ++i) {
    if (events[i].kind == events::EventKind::kBlock) block = i;
    if (events[i].kind == events::EventKind::kSignal && events[i].pc_known && block < events.size()) cut[block] = true;
  }
  return cut;
}

// How many registers the architecture's table has (a recorded signal's
// registers are all of them), from a recording's initial state.
inline std::size_t arch_register_count(const events::TraceInfo& info) { return info.initial_registers.size(); }

// The events of `events` of `kind`, in order (the signal samples' checks).
inline std::vector<Copied> of_kind(const std::vector<Copied>& events, events::EventKind kind) {
  std::vector<Copied> out;
  for (const auto& event : events)
    if (event.kind == kind) out.push_back(event);
  return out;
}

// Threads are not in the Linux layer yet: this sink makes a recorded stream
// multi-threaded. It forwards every event to `out` (a format's writer and a
// probe), and after the first syscall adds thread `pid + 1` (created by the
// process's thread, then switched to, with every register's current value
// but the pc, which the next instruction says), gives the events up to the
// second syscall to it, then switches back and ends it (status 7). Events
// keep their order and numbers are given afresh.
class ThreadInjector final : public events::Sink {
 public:
  ThreadInjector(const arch::ArchInfo& arch, std::vector<events::Sink*> out) : arch_(arch), out_(std::move(out)) {}
  void begin(const events::TraceInfo& info) override {
    main_ = running_ = events::ThreadId{static_cast<std::uint32_t>(info.process_id)};
    file_ = info.initial_registers;
    for (auto* sink : out_) sink->begin(info);
  }
  void on_event(const events::Event& event) override {
    events::Event copy = event;
    copy.thread = running_;
    forward(copy);
    track(event);
    if (event.kind != events::EventKind::kSyscall || ++syscalls_ > 2) return;
    const events::ThreadId other{main_.value + 1};
    std::vector<events::RegisterValue> registers;
    for (const auto& value : file_)
      if (value.index != pc_index()) registers.push_back(value);
    if (syscalls_ == 1) {
      inject(other, {events::ThreadChange::kCreated, main_, 0, {}, {}});
      inject(other, {events::ThreadChange::kSwitched, main_, 0, registers, {}});
      running_ = other;
    } else {
      inject(main_, {events::ThreadChange::kSwitched, other, 0, registers, {}});
      running_ = main_;
      inject(other, {events::ThreadChange::kExited, main_, 7, {}, {}});
    }
  }
  std::string end(const events::TraceSummary& summary) override {
    events::TraceSummary total = summary;
    total.events = sequence_;
    std::string errors;
    for (auto* sink : out_) errors += sink->end(total);
    return errors;
  }
  std::uint32_t other_thread() const { return main_.value + 1; }

 private:
  std::uint16_t pc_index() const {
    for (std::size_t i = 0; i < arch_.registers.size(); ++i)
      if (arch_.registers[i].uc_id == arch_.pc_reg) return static_cast<std::uint16_t>(i);
    return 0xffff;
  }
  void forward(events::Event& event) {
    event.sequence = events::EventSequence{sequence_++};
    for (auto* sink : out_) sink->on_event(event);
  }
  void inject(events::ThreadId thread, const events::ThreadEvent& change) {
    events::Event event;
    event.thread = thread;
    event.kind = events::EventKind::kThread;
    event.payload = change;
    forward(event);
  }
  // The register file as the events leave it (what a switch gives back).
  void track(const events::Event& event) {
    std::span<const events::RegisterValue> changes;
    if (const auto* r = std::get_if<events::RegistersEvent>(&event.payload)) changes = r->changes;
    if (const auto* c = std::get_if<events::SyscallEvent>(&event.payload)) changes = c->register_changes;
    if (const auto* g = std::get_if<events::SignalEvent>(&event.payload)) changes = g->register_changes;
    for (const auto& value : changes)
      for (auto& held : file_)
        if (held.index == value.index) held = value;
  }

  const arch::ArchInfo& arch_;
  std::vector<events::Sink*> out_;
  events::ThreadId main_, running_;
  std::vector<events::RegisterValue> file_;
  std::uint64_t sequence_ = 0;
  int syscalls_ = 0;
};

// Records `program` at `level` through a ThreadInjector into the writer
// `make_writer` returns and a probe keeping the kinds `carries` accepts;
// returns the probe once the writer has been ended.
inline std::unique_ptr<CopySink> record_with_threads(
    const std::string& program, core::TraceLevel level, bool (*carries)(events::EventKind),
    const std::function<std::unique_ptr<events::Sink>(const arch::ArchInfo&)>& make_writer) {
  auto probe = std::make_unique<CopySink>(carries);
  std::unique_ptr<events::Sink> writer;
  std::unique_ptr<ThreadInjector> injector;
  const auto run = record_sample(program, level, [&](linux_layer::LinuxProcess& process) -> std::vector<events::Sink*> {
    writer = make_writer(process.arch());
    REQUIRE(writer);
    injector = std::make_unique<ThreadInjector>(process.arch(), std::vector<events::Sink*>{probe.get(), writer.get()});
    return {injector.get()};
  });
  CHECK(run.finish_error.empty());
  // The injected events are there: two switches, a creation and an exit, and
  // the second thread's events between the switches.
  std::size_t switches = 0, others = 0;
  for (const auto& event : probe->events_) {
    if (event.kind == events::EventKind::kThread && event.value == 3) ++switches;
    if (event.kind != events::EventKind::kThread && event.thread == injector->other_thread()) ++others;
  }
  CHECK(switches == 2);
  CHECK(others > 0);
  return probe;
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
// sorted, the signal samples included unless `with_signal_samples` is false
// (see takes_signals_in_handlers), those that run several threads left out
// (see runs_several_threads) and those that start processes
// (starts_processes); at least 15 of them are required.
inline std::vector<std::string> cross_samples(const std::string& samples_dir, const std::string& arch,
                                              const std::string& variant, bool with_signal_samples = true) {
  std::vector<std::string> samples;
  for (const auto& entry : std::filesystem::directory_iterator(samples_dir + "-" + arch + "/" + variant))
    if ((with_signal_samples || !takes_signals_in_handlers("/" + entry.path().filename().string())) &&
        !runs_several_threads("/" + entry.path().filename().string()) &&
        !starts_processes("/" + entry.path().filename().string()))
      samples.push_back("../guest-" + arch + "/" + variant + "/" + entry.path().filename().string());
  std::sort(samples.begin(), samples.end());
  REQUIRE(samples.size() >= 15);
  return samples;
}

}  // namespace tracecorn::test
