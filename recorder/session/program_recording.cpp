// Role: implementation of the program's recording (see program_recording.h).
#include "recorder/session/program_recording.h"

#include <stdio_ext.h>

#include <exception>
#include <utility>

#include <fmt/format.h>

#include "formats/registry.h"

namespace tracecorn::session {
namespace {

// The writer of `options.format` for `path`, with what it says of the program.
Expected<std::unique_ptr<events::Sink>> open_image_writer(const linux_layer::LinuxProcess& process,
                                                          const RecordingOptions& options,
                                                          const linux_layer::ProcessConfig& config,
                                                          const std::string& path) {
  // The one writer factory (formats/registry.h) builds every format's writer.
  formats::WriterRequest request;
  request.path = path;
  request.arch = &process.arch();
  request.compress_zstd = options.compress_zstd;
  request.zstd = options.zstd;
  request.encoder_threads = options.encoder_threads;
  request.ucir_strict = options.ucir_strict;
  request.tracer_args = options.tracer_args;
  request.tracer_envp = options.tracer_envp;
  request.program = config.program;
  request.program_args = config.argv;
  request.program_envp = config.envp;
  if (options.address_namer) request.address_namer = options.address_namer();  // for text's stacks
  return formats::open_writer(options.format, std::move(request));
}

core::RecorderOptions recorder_options_for(const linux_layer::LinuxProcess& process, const RecordingOptions& options,
                                           core::StackProvider* stacks) {
  core::RecorderOptions recorder_options;
  recorder_options.level = options.level;
  // The Linux layer changes registers only through syscalls (which the
  // recorder brackets) and instructions: derived register values are exact.
  recorder_options.derive_registers = true;
  recorder_options.ring_bytes = options.ring_bytes;
  recorder_options.policy = options.flight_recorder ? core::RingPolicy::kFlightRecorder : core::RingPolicy::kLossless;
  if (options.only_main) {
    const auto& main_module = process.initial_modules().front();
    recorder_options.code_range = core::AddressRange{main_module.start, main_module.end};
  }
  if (options.code_range) recorder_options.code_range = options.code_range;
  recorder_options.start_at = options.start_at;
  recorder_options.stop_at = options.stop_at;
  recorder_options.stop_after_instructions = options.stop_after;
  // UCIR and binary traces open with a snapshot of the machine, frames need the
  // initial registers; the other formats skip its cost.
  recorder_options.capture_initial_state =
      options.format == "ucir" || options.format == "frames" || options.format == "bintrace";
  recorder_options.stack_provider = stacks;
  return recorder_options;
}

// What the trace says of the program at its start.
events::TraceInfo trace_info_for(const linux_layer::LinuxProcess& process, const linux_layer::ProcessConfig& config) {
  events::TraceInfo info;
  info.program = config.program;
  info.argv = config.argv;
  for (const auto& module : process.initial_modules())
    info.modules.push_back({events::GuestAddress{module.start}, events::GuestAddress{module.end}, module.path});
  info.mapped_ranges = process.mapped_ranges();
  info.process_id = process.guest_pid();
  return info;
}

}  // namespace

Expected<ImageRecording> start_image_recording(linux_layer::LinuxProcess& process, const RecordingOptions& options,
                                               const linux_layer::ProcessConfig& config, core::StackProvider* stacks,
                                               const std::string& path) {
  ImageRecording result;
  auto writer = open_image_writer(process, options, config, path);
  if (!writer) return writer.error();
  result.sink = std::move(*writer);
  auto attached = core::Recorder::attach(process.engine(), process.arch(), recorder_options_for(process, options, stacks),
                                         {result.sink.get()}, trace_info_for(process, config));
  if (!attached) return attached.error();
  result.recorder = std::move(*attached);
  result.forwarding =
      std::make_unique<ProcessRecording>(*result.recorder, TraceNaming{options.output, process.tree_root_pid()});
  return result;
}

TraceNaming ProcessTreeRecording::naming() const { return TraceNaming{options_->output, process_->tree_root_pid()}; }

void ProcessTreeRecording::note_not_recorded(std::uint64_t pid) const {
  if (!config_.diagnostics) return;
  fmt::print(config_.diagnostics,
             "tracecorn: process {} is not recorded: the trace goes to standard output, which holds one "
             "(name a file with -o to record every process)\n",
             pid);
}

Status ProcessTreeRecording::start(linux_layer::LinuxProcess& process, ImageRecording& image,
                                   const RecordingOptions& options, core::StackProvider* stacks) {
  options_ = &options;
  process_ = &process;
  stacks_ = stacks;
  // For every image a recording runs, traced or not (its forks may be).
  // Where the trace has memory or registers: a stop from another thread lets
  // the rest of a block run without their hooks. At blocks and insns, where
  // the hook would cost most, the trace holds no value those instructions
  // could change: the stop is left to Unicorn.
  if (core::level_has_memory(options.level) || core::level_has_registers(options.level))
    process.stop_outside_kills_at_blocks();
  const std::string path = naming().path_of(process.guest_pid(), process.image_serial());
  if (path.empty()) {
    note_not_recorded(process.guest_pid());
  } else {
    auto started = start_image_recording(process, options, config_, stacks, path);
    if (!started) return started.error();
    image = std::move(*started);
    process.set_observer(image.forwarding.get());
  }
  image_ = &image;
  return ok_status();
}

FinishedImage ProcessTreeRecording::finish_image(const linux_layer::RunOutcome& outcome, bool interrupted) {
  FinishedImage finished;
  if (!recording()) return finished;
  core::Recorder& recorder = *image_->recorder;
  process_->set_observer(nullptr);
  image_->forwarding->finish_run(outcome);
  const auto say_failure = [&](const std::string& error) {
    if (error.empty()) return;
    if (config_.diagnostics) fmt::print(config_.diagnostics, "tracecorn: {}\n", error);
    finished.trace_complete = false;
  };
  if (options_->flight_recorder) say_failure(recorder.dump(*image_->sink));
  say_failure(recorder.finish(interrupted));
  finished.stats = recorder.stats();
  return finished;
}

void ProcessTreeRecording::after_fork_in_child(std::uint64_t pid) noexcept {
  // The parent's recorder and writer are the parent's: forgotten here,
  // never ended; first of all, as abandoning them lets go of the handle of
  // the parent's drain thread (a descriptor a thread started here could
  // take over: the handle would then mark that thread detached).
  const bool recorded = recording();
  const std::uint64_t fork_pc = recorded ? image_->forwarding->syscall_pc() : 0;
  if (recorded) {
    image_->recorder->abandon_in_forked_child();
    (void)image_->sink.release();
    (void)image_->recorder.release();
    (void)image_->forwarding.release();
    process_->set_observer(nullptr);
  }
  threads_.resume_after_fork();
  if (recorded) start_child_recording(pid, fork_pc);
}

void ProcessTreeRecording::start_child_recording(std::uint64_t pid, std::uint64_t fork_pc) noexcept {
  const std::string path = naming().path_of(pid, 0);
  if (path.empty()) {
    __fpurge(stdout);  // the parent's trace bytes still buffered there are the parent's to write
    note_not_recorded(pid);
    return;
  }
  try {
    auto started = start_image_recording(*process_, *options_, config_, stacks_, path);
    if (!started) {
      if (config_.diagnostics)
        fmt::print(config_.diagnostics, "tracecorn: child {}: {}\n", pid, started.error().to_string());
      return;
    }
    *image_ = std::move(*started);
    image_->forwarding->resume_syscall(fork_pc);
    process_->set_observer(image_->forwarding.get());
  } catch (const std::exception& error) {
    if (config_.diagnostics) fmt::print(config_.diagnostics, "tracecorn: child {}: {}\n", pid, error.what());
  }
}

void ProcessTreeRecording::before_fork() noexcept {
  threads_.pause_for_fork();
  if (recording()) image_->recorder->hold_drain();
}

void ProcessTreeRecording::after_fork_in_parent() noexcept {
  if (recording()) image_->recorder->release_drain();
  threads_.resume_after_fork();
}

void ProcessTreeRecording::before_exec(const std::string&) noexcept {
  threads_.stop_for_exec();  // first: a host thread may be asking the recording for a block interrupt
  if (!recording()) return;
  process_->set_observer(nullptr);
  const std::string error = image_->recorder->finish(false);
  if (!error.empty() && config_.diagnostics) fmt::print(config_.diagnostics, "tracecorn: {}\n", error);
  image_->recorder.reset();
  image_->sink.reset();
}

}  // namespace tracecorn::session
