// Role: implementation of the Recorder (see recorder.h): its life (attach,
// finish, the flight recorder's dump, the drain's hold and flush), composed
// of units with their own state: the level's Unicorn hooks
// (execution_hooks.h, whose file comment has the hooks per level and their
// costs) and what they write with: the record output (record_output.h: the
// block run, the register batch, every record, losses), the producer's blocks
// and the rewritten-code check (producer_blocks.h), the register shadow
// (register_shadow.h); the syscall and fault path (process_events.h); the
// consumer side (the drain thread and the assembler that feeds the sinks) is
// drain.h's, the initial snapshot initial_state.h's.
// Threads: the emulation thread, but for interrupt_next_block and stats (any
// thread) and the drain thread the lossless policy starts.

#include "recorder/core/recorder.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <chrono>
#include <cstring>
#include <optional>
#include <span>
#include <utility>

#include "recorder/core/block_cache.h"
#include "recorder/core/drain.h"
#include "recorder/core/event_assembler.h"
#include "recorder/core/execution_hooks.h"
#include "recorder/core/initial_state.h"
#include "recorder/core/process_events.h"
#include "recorder/core/producer_blocks.h"
#include "recorder/core/record_output.h"
#include "recorder/core/register_shadow.h"
#include "recorder/core/ring_records.h"
#include "recorder/ring/spsc_ring.h"

namespace tracecorn::core {

class Recorder::Impl {
 public:
  Impl(uc_engine* engine, const arch::ArchInfo& arch, const RecorderOptions& options)
      : engine_(engine), arch_(arch), options_(options) {}

  ~Impl() { finish(false); }

  Status init(std::vector<events::Sink*> sinks, events::TraceInfo info) {
    std::size_t engine_arch = 0, engine_mode = 0;
    if (uc_query(engine_, UC_QUERY_ARCH, &engine_arch) == UC_ERR_OK &&
        uc_query(engine_, UC_QUERY_MODE, &engine_mode) == UC_ERR_OK &&
        (engine_arch != static_cast<std::size_t>(arch_.engine->unicorn_arch) ||
         (engine_mode & static_cast<std::size_t>(arch_.engine->unicorn_mode)) != static_cast<std::size_t>(arch_.engine->unicorn_mode)))
      return make_error(ErrorCode::kInvalidArgument,
                        "the engine is not a " + std::string(arch_.name) + " engine (Unicorn arch/mode differ)");
    auto consumer_decoder = BlockDecoder::create(arch_);
    if (!consumer_decoder) return consumer_decoder.error();
    consumer_decoder_ = std::move(*consumer_decoder);

    ring::RingOptions ring_options;
    ring_options.capacity_bytes = options_.ring_bytes;
    ring_options.policy = options_.policy == RingPolicy::kLossless ? ring::OverflowPolicy::kLossless
                                                                   : ring::OverflowPolicy::kFlightRecorder;
    auto ring = ring::SpscRing::create(ring_options);
    if (!ring) return ring.error();
    ring_ = std::move(*ring);
    if (auto status = hooks_.install(*ring_); !status) return status;

    info.level = std::string(trace_level_name(options_.level));
    info.arch_name = arch_.name;
    if (options_.capture_initial_state) capture_initial_state(engine_, arch_, info);
    info_ = std::move(info);
    sinks_ = std::move(sinks);
    assembler_ = std::make_unique<EventAssembler>(arch_, *consumer_decoder_, options_.level, sinks_);

    if (options_.policy == RingPolicy::kLossless) {
      assembler_->begin(info_);
      drain_ = std::make_unique<Drain>(*ring_, *assembler_, hooks_.sink_failed());
      drain_->start();
    }
    return ok_status();
  }

  std::string dump(events::Sink& sink) {
    process_events_.write_stop_if_cut_short();
    output_.write_pending();
    output_.publish();
    EventAssembler replay(arch_, *consumer_decoder_, options_.level, {&sink});
    replay.begin(info_);
    const auto stats = ring_->stats();
    replay.note_lost(stats.records_overwritten, "overwritten by the flight recorder");
    for (const DecodedBlock* block : hooks_.blocks().all()) replay.adopt_block(*block);
    ring_->for_each_retained([&](std::span<const std::byte> record) { replay.on_record(record); });
    return replay.end(false);
  }

  // (A drain stuck in a sink's write, to a pipe nobody reads now, is not
  // waited for long: the process stops all the same, its trace unflushed.)
  void flush_to_files() noexcept {
    if (finished_ || !drain_) return;
    output_.write_pending();
    output_.publish();
    drain_->flush_to_files(std::chrono::milliseconds(500));
  }

  void hold_drain() noexcept {
    if (drain_) drain_->hold();
  }
  void release_drain() noexcept {
    if (drain_) drain_->release();
  }

  void abandon_in_forked_child() noexcept {
    finished_ = true;
    hooks_.remove();
    if (drain_) drain_->abandon();
    sinks_.clear();
  }

  std::string finish(bool interrupted) {
    if (finished_) return finish_error_;
    finished_ = true;
    hooks_.remove();
    if (!ring_) return finish_error_;
    hooks_.flush_pending_registers();
    process_events_.write_stop_if_cut_short();
    output_.write_pending();
    ring_->close();
    if (drain_ && drain_->join()) {
      finish_error_ = assembler_->end(interrupted);
      events_ = assembler_->events();
      events_by_kind_ = assembler_->events_by_kind();
      instructions_ = assembler_->instructions();
    }
    return finish_error_;
  }

  RecorderStats stats() const {
    RecorderStats result;
    if (ring_) {
      const auto ring_stats = ring_->stats();
      result.records = ring_stats.records_written;
      result.ring_bytes_written = ring_stats.bytes_written;
      result.producer_stalls = ring_stats.producer_stalls;
      result.records_overwritten = ring_stats.records_overwritten;
    }
    result.records_lost = output_.records_lost();
    result.blocks_decoded = hooks_.blocks().decoded();
    result.registers_derived = hooks_.registers().derived_total();
    result.events = events_;
    result.events_by_kind = events_by_kind_;
    result.instructions = instructions_;
    return result;
  }

  ProcessEvents& events() noexcept { return process_events_; }
  void block_not_run(std::uint64_t address) noexcept {
    hooks_.leave_interrupted_code(false, address);
    process_events_.write_stop_at_block_boundary(address);
  }
  bool stop_requested() const { return hooks_.stop_requested(); }
  bool sink_failed() { return hooks_.sink_failed().load(std::memory_order_relaxed); }
  void interrupt_next_block() noexcept { hooks_.interrupt_next_block(); }
  void set_block_interrupt_handler(std::function<void(std::uint64_t)> handler) {
    hooks_.set_block_interrupt_handler(std::move(handler));
  }

 private:
  uc_engine* engine_;
  const arch::ArchInfo& arch_;
  RecorderOptions options_;
  events::TraceInfo info_;
  std::vector<events::Sink*> sinks_;
  std::unique_ptr<BlockDecoder> consumer_decoder_;
  std::unique_ptr<ring::SpscRing> ring_;
  std::unique_ptr<EventAssembler> assembler_;
  std::unique_ptr<Drain> drain_;  // the consumer side (lossless policy only)
  // The hooks and the units they write with (the process events write with them too).
  ExecutionHooks hooks_{engine_, arch_, options_};
  RecordOutput& output_ = hooks_.output();
  ProcessEvents process_events_{engine_, arch_, options_, hooks_};  // the syscall and fault path

  // Results (set by finish, on the emulation thread).
  bool finished_ = false;
  std::string finish_error_;
  std::uint64_t events_ = 0;
  std::array<std::uint64_t, events::kEventKindCount> events_by_kind_{};
  std::uint64_t instructions_ = 0;
};

Recorder::Recorder(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Recorder::~Recorder() = default;

Expected<std::unique_ptr<Recorder>> Recorder::attach(uc_engine* engine, const arch::ArchInfo& arch,
                                                     const RecorderOptions& options, std::vector<events::Sink*> sinks,
                                                     events::TraceInfo info) {
  auto impl = std::make_unique<Impl>(engine, arch, options);
  if (auto status = impl->init(std::move(sinks), std::move(info)); !status) return status.error();
  return std::unique_ptr<Recorder>(new Recorder(std::move(impl)));
}

void Recorder::syscall_enter() noexcept { impl_->events().syscall_enter(std::nullopt); }
void Recorder::syscall_enter(std::uint64_t trap_pc) noexcept { impl_->events().syscall_enter(trap_pc); }
void Recorder::syscall_memory_written(std::uint64_t address, std::span<const std::uint8_t> bytes) noexcept {
  impl_->events().syscall_memory_written(address, bytes);
}
void Recorder::syscall_mapping_changed(const events::MappingEffect& change) noexcept {
  impl_->events().syscall_mapping_changed(change);
}
void Recorder::syscall_exit(std::uint64_t pc, std::uint64_t number, const std::uint64_t (&args)[6], std::int64_t result,
                            std::span<const std::uint64_t> call_stack) noexcept {
  impl_->events().syscall_exit(pc, number, args, result, call_stack);
}
void Recorder::module_loaded(std::uint64_t start, std::uint64_t end, std::uint64_t load_bias,
                             std::string_view path) noexcept {
  impl_->events().module_loaded(start, end, load_bias, path);
}
void Recorder::fault(std::uint64_t pc, std::uint64_t address, std::uint32_t signal,
                     std::string_view description) noexcept {
  impl_->events().fault(pc, address, signal, description);
}
void Recorder::exited(bool by_signal, std::int32_t code, std::int32_t signal) noexcept {
  impl_->events().exited(by_signal, code, signal);
}
std::string Recorder::dump(events::Sink& sink) { return impl_->dump(sink); }
std::string Recorder::finish(bool interrupted) { return impl_->finish(interrupted); }
void Recorder::abandon_in_forked_child() noexcept { impl_->abandon_in_forked_child(); }
void Recorder::set_block_interrupt_handler(std::function<void(std::uint64_t)> handler) {
  impl_->set_block_interrupt_handler(std::move(handler));
}
void Recorder::interrupt_next_block() noexcept { impl_->interrupt_next_block(); }
void Recorder::hold_drain() noexcept { impl_->hold_drain(); }
void Recorder::flush_to_files() noexcept { impl_->flush_to_files(); }
void Recorder::release_drain() noexcept { impl_->release_drain(); }
RecorderStats Recorder::stats() const { return impl_->stats(); }
bool Recorder::stop_requested() const { return impl_->stop_requested(); }
void Recorder::registers_changed() noexcept { impl_->events().registers_changed(); }
void Recorder::code_written(std::uint64_t address, std::uint64_t size) noexcept {
  impl_->events().code_written_by_caller(address, size);
}
void Recorder::block_not_run(std::uint64_t address) noexcept { impl_->block_not_run(address); }
void Recorder::signal_delivered(const events::SignalEvent& signal) noexcept { impl_->events().signal_delivered(signal); }
void Recorder::thread_event(events::ThreadId thread, const events::ThreadEvent& change) noexcept {
  impl_->events().thread_event(thread, change);
}
void Recorder::process_event(const events::ProcessEvent& change) noexcept { impl_->events().process_event(change); }
bool Recorder::sink_failed() const { return impl_->sink_failed(); }

}  // namespace tracecorn::core
