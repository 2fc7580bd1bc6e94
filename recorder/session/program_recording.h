// Role: the session layer's recording of a program: one process image's
// recording (its writer, a Recorder on the process's engine, the
// ProcessRecording glue) and the process tree's (a forked child starts its own
// trace, an exec finishes the image's), from options already parsed. Used by
// `tracecorn record` and the tests; parses nothing and prints only the
// one-line diagnostics a fork or an exec cannot return (to the process's
// ProcessConfig::diagnostics, "tracecorn: " first, as the Linux layer does).
// Threads: the emulation thread, between runs or inside the Linux layer's
// fork and exec (ProcessLifecycle); the caller's other threads are reached
// only through HostThreads. Invariants: in a forked child the parent's
// recorder is abandoned before any thread starts; an ImageRecording outlives
// no LinuxProcess it was started on (its owner declares it after the process).
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "formats/address_namer.h"
#include "formats/common/zstd_compression.h"
#include "recorder/core/recorder.h"
#include "recorder/core/stack_provider.h"
#include "recorder/core/trace_level.h"
#include "recorder/events/event.h"
#include "recorder/linux/linux_process.h"
#include "recorder/session/process_recording.h"
#include "recorder/support/expected.h"

namespace tracecorn::session {

// What to record of every image of the tree, parsed (the CLI's `record`
// options once read).
struct RecordingOptions {
  std::string output = "-";      // the first image's trace (TraceNaming's base); "-": standard output
  std::string format = "text";   // a writer of formats/registry.h: text, ucir, frames, bintrace, null
  core::TraceLevel level = core::TraceLevel::kBlocks;
  bool compress_zstd = false;    // ucir, frames, bintrace
  formats::ZstdCompression zstd;  // its level and worker threads
  int encoder_threads = 0;        // formats::WriterRequest::encoder_threads
  bool ucir_strict = false;      // UCIR: only the spec's ops
  std::size_t ring_bytes = std::size_t{64} << 20;
  bool flight_recorder = false;  // keep the newest ring_bytes, written when the image ends
  bool only_main = false;        // record only the main program's code (its first module)
  std::optional<core::AddressRange> code_range;  // record only code in it (after only_main)
  std::optional<std::uint64_t> start_at;         // recording starts when this address first runs
  std::optional<std::uint64_t> stop_at;          // the run stops when this address is reached
  std::uint64_t stop_after = 0;                  // stop after about N recorded instructions; 0: never
  // BAP frames' meta frame: the recording tool's command line and environment.
  std::vector<std::string> tracer_args, tracer_envp;
  // Names the addresses of the text format's call stacks (a symbolizer); empty: none.
  std::function<std::unique_ptr<formats::AddressNamer>()> address_namer;
};

// One image's recording: its writer, the recorder on the process's engine
// and the glue that forwards the kernel's reports to it. All null: the image
// is not recorded.
struct ImageRecording {
  std::unique_ptr<events::Sink> sink;
  std::unique_ptr<core::Recorder> recorder;
  std::unique_ptr<ProcessRecording> forwarding;
};

// Starts recording `process`'s current image into `path` (its trace file,
// "-" for standard output); `config` is the process's (its program, argv and
// environment go into the trace); `stacks` (may be null) gives the call stack
// at each syscall and must outlive the recording. The error names what failed
// (the writer, the recorder).
Expected<ImageRecording> start_image_recording(linux_layer::LinuxProcess& process, const RecordingOptions& options,
                                               const linux_layer::ProcessConfig& config, core::StackProvider* stacks,
                                               const std::string& path);

// The caller's threads besides the emulation thread (the CLI's host signal
// watcher), which a fork or an exec of the guest must stop and start again.
class HostThreads {
 public:
  virtual ~HostThreads() = default;
  // Before the host fork: they end (a thread could hold a lock the child
  // would inherit held). After it, in the parent and in the child: they start again.
  virtual void pause_for_fork() noexcept = 0;
  virtual void resume_after_fork() noexcept = 0;
  // Before an exec: they end for good (first of all: one may be asking the
  // recording for a block interrupt).
  virtual void stop_for_exec() noexcept = 0;
};

// How an image's recording ended (finish_image).
struct FinishedImage {
  bool trace_complete = true;  // false: the trace could not be written whole (said on the diagnostics)
  core::RecorderStats stats;
};

// The recording of a program's process tree, named as TraceNaming names it:
// the first image's trace (start), a forked child's new trace opening with
// the fork's return, an image's trace finished before its exec. Set as the
// ProcessConfig's lifecycle before the process is created; without start()
// (a run that records nothing) a fork only pauses the host threads.
class ProcessTreeRecording final : public linux_layer::ProcessLifecycle {
 public:
  // `config` is the process's (kept by reference, as `threads`).
  ProcessTreeRecording(HostThreads& threads, const linux_layer::ProcessConfig& config)
      : threads_(threads), config_(config) {}

  // Records `process`'s current image into `image` (which its caller keeps,
  // declared after the process, until the process ends), or says on the
  // diagnostics that the image is not recorded (its trace would go to a
  // standard output that holds the first image's); then its forks and execs.
  // `options` and `stacks` (may be null) are kept until the run ends. The
  // error is start_image_recording's; nothing is recorded then.
  Status start(linux_layer::LinuxProcess& process, ImageRecording& image, const RecordingOptions& options,
               core::StackProvider* stacks);

  // After the run: the outcome (fault, exit) recorded, the flight recorder's
  // events written, the trace finished (`interrupted`: marked so). The
  // recorder and writer stay in the image (its owner ends them).
  FinishedImage finish_image(const linux_layer::RunOutcome& outcome, bool interrupted);

  void after_fork_in_child(std::uint64_t pid) noexcept override;
  void before_fork() noexcept override;
  void after_fork_in_parent() noexcept override;
  void before_exec(const std::string& program) noexcept override;

 private:
  bool recording() const { return image_ && image_->recorder; }
  // Says on the diagnostics that process `pid`'s image is not recorded.
  void note_not_recorded(std::uint64_t pid) const;
  // Starts the forked child `pid`'s trace (its fork's syscall entered at `fork_pc`).
  void start_child_recording(std::uint64_t pid, std::uint64_t fork_pc) noexcept;
  TraceNaming naming() const;

  HostThreads& threads_;
  const linux_layer::ProcessConfig& config_;
  const RecordingOptions* options_ = nullptr;
  linux_layer::LinuxProcess* process_ = nullptr;
  ImageRecording* image_ = nullptr;
  core::StackProvider* stacks_ = nullptr;
};

}  // namespace tracecorn::session
