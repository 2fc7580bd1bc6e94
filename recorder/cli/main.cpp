// Role: the `tracecorn` command line. Parses options (CLI11) and drives the
// library; nothing below the CLI parses options.
//   tracecorn run [options] [--strace [-k]] -- PROGRAM [ARGS...]
//   tracecorn record [options] [-o FILE] [--format text|null|ucir] [--level L] -- PROGRAM [ARGS...]
//            (ucir: [--compress zstd] [--ucir-strict]; bintrace: [--compress zstd], --level regs|full)
//            (frames: [--compress zstd]; --level defaults to full)
//   tracecorn dump FILE [--kind K,..] [--range A-B] [--events N-M] [--thread TID]
//                            (prints a UCIR, BAP frames or binary trace as the text format does;
//                             the reader is chosen by content: recorder/replay/trace_reader.h)
//   tracecorn recover FILE [-o OUT]
//                            (a binary trace killed before it was written: rebuilt from
//                             FILE.head.part and FILE.events.part, formats/bintrace/bintrace_recover.h)
// Exit status: the guest's own status (128+signal when it is killed), 124 when a
// --max-insns/--timeout limit stops it, 125 for tracecorn's own errors, 126 when
// the program cannot be run (not an ELF, unsupported architecture), 127 when it
// is not found. Every message tracecorn prints starts with "tracecorn: ".
#include <unistd.h>

#include <pthread.h>
#include <sys/resource.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstring>
#include <thread>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <capstone/capstone.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unicorn/unicorn.h>

#include "formats/bintrace/bintrace_recover.h"
#include "formats/registry.h"
#include "formats/text/text_writer.h"
#include "recorder/cli/debug_command.h"
#include "recorder/cli/why_command.h"
#include "recorder/cli/stack_display.h"
#include "recorder/core/guest_stacks.h"
#include "recorder/core/recorder.h"
#include "recorder/engine/instruction_counter.h"
#include "recorder/linux/linux_process.h"
#include "recorder/replay/process_tree.h"
#include "recorder/replay/replayer.h"
#include "recorder/replay/trace_reader.h"
#include "recorder/replay/trace_tools.h"
#include "recorder/session/program_recording.h"
#include "recorder/support/started_thread.h"

extern char** environ;

namespace {

using tracecorn::ErrorCode;

constexpr int kExitToolError = 125;
constexpr int kExitCannotRun = 126;
constexpr int kExitNotFound = 127;

struct RunOptions {
  std::vector<std::string> command;
  std::uint64_t max_instructions = 0;
  double timeout_seconds = 0;
  std::string rootfs;
  bool read_only = false;     // --read-only
  bool allow_net = false;     // --allow-net
  std::string max_memory;     // --max-memory BYTES[K|M|G] ("" = the default cap, "0" = none)
  std::vector<std::string> set_env;
  std::vector<std::string> unset_env;
  bool clear_env = false;
  bool stats = false;
  std::string syscall_log;
  std::string stacks;          // --stacks: auto|sframe|cfi|fp|none ("" = the command's default)
  bool strace = false;         // run --strace: a line per syscall on stderr
  bool strace_stacks = false;  // run -k: the stack under each line
  std::uint64_t max_processes = 256;  // --max-processes
  int exec_state_fd = -1;             // --exec-state-fd (hidden: an exec'd image, linux/inherited_state.h)
  std::vector<std::string> relaunch_command;  // tracecorn's own argv up to "--", without --exec-state-fd
};

// --compress-level and --jobs, shared by record and convert.
struct CompressionOptions {
  int level = 0;  // 0: not given (formats::default_zstd_level)
  int jobs = -1;  // -1: not given (formats::default_zstd_workers; no encoder threads)
};

// `record`'s own options as typed (recording_options_from parses them).
struct RecordOptions {
  std::string output = "-";
  std::string format = "text";
  std::string level = "blocks";
  std::size_t ring_kib = 64 * 1024;
  bool flight_recorder = false;
  bool only_main = false;
  std::string range;
  std::string start_at;
  std::string stop_at;
  std::uint64_t stop_after = 0;
  std::string compress = "none";
  CompressionOptions compression;
  bool ucir_strict = false;
  std::vector<std::string> tracer_args;  // tracecorn's own command line (BAP frames' meta frame)
};

// A usage error of `option`: said as CLI::ValidationError says it ("OPTION: MESSAGE").
tracecorn::Error usage_error(const char* option, std::string message) {
  return tracecorn::make_error(ErrorCode::kInvalidArgument, std::move(message), option);
}

// Parses "0x401000" or "4198400"; the error names the option.
tracecorn::Expected<std::uint64_t> parse_address(const std::string& text, const char* option) {
  try {
    std::size_t used = 0;
    const std::uint64_t value = std::stoull(text, &used, 0);
    if (used == text.size()) return value;
  } catch (const std::exception&) {
  }
  return usage_error(option, "not an address: " + text);
}

// Parses "512M", "4G", "65536" or "0" (K, M, G: binary multiples, either case);
// throws CLI::ValidationError naming the option on anything else or on overflow.
std::uint64_t parse_size(const std::string& text, const char* option) {
  std::size_t used = 0;
  std::uint64_t value = 0;
  try {
    if (!text.empty() && text[0] != '-') value = std::stoull(text, &used, 10);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0) throw CLI::ValidationError(option, "not a size: " + text);
  unsigned shift = 0;
  if (used + 1 == text.size()) {
    switch (text[used]) {
      case 'k': case 'K': shift = 10; break;
      case 'm': case 'M': shift = 20; break;
      case 'g': case 'G': shift = 30; break;
      default: throw CLI::ValidationError(option, "not a size (suffixes: K, M, G): " + text);
    }
  } else if (used != text.size()) {
    throw CLI::ValidationError(option, "not a size (suffixes: K, M, G): " + text);
  }
  if (shift && value > (UINT64_MAX >> shift)) throw CLI::ValidationError(option, "too large: " + text);
  return value << shift;
}

// Turns SIGINT and SIGTERM from outside the guest's process tree into a
// clean stop: the emulation stops, the trace is finished (marked interrupted)
// and tracecorn exits with 128+signal, as the guest would have. Every other
// signal it watches, and SIGINT/SIGTERM sent by a process of the guest's own
// tree (a guest shell killing its child), goes to the guest
// (LinuxProcess::post_host_signal): its handler, or its default action. The
// signals are blocked in every thread (set before any thread starts) and
// taken by one watcher thread with sigtimedwait, so no handler runs inside
// Unicorn. Owned by run_command, on the main thread; the session's
// HostThreads (session/program_recording.h): a fork or an exec of the guest
// pauses or ends it.
class InterruptWatcher final : public tracecorn::session::HostThreads {
 public:
  InterruptWatcher() {
    sigemptyset(&signals_);
    for (const int signal : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGALRM, SIGCHLD, SIGCONT, SIGWINCH,
                             SIGURG, SIGVTALRM, SIGPROF, SIGTSTP})
      sigaddset(&signals_, signal);
    // (Not SIGTTIN and SIGTTOU: blocked, a background read or write on the
    // terminal would fail with EIO instead of stopping tracecorn and its guest.)
    for (int signal = SIGRTMIN; signal <= SIGRTMAX; ++signal) sigaddset(&signals_, signal);
    pthread_sigmask(SIG_BLOCK, &signals_, &previous_);
  }
  ~InterruptWatcher() override {
    stop_watching();
    pthread_sigmask(SIG_SETMASK, &previous_, nullptr);
  }
  InterruptWatcher(const InterruptWatcher&) = delete;
  InterruptWatcher& operator=(const InterruptWatcher&) = delete;

  // Starts watching: a stop signal stops `process` (LinuxProcess::request_stop
  // is meant to be called from another thread), the others go to it.
  // Returns once the watching thread runs (support/started_thread.h).
  void watch(tracecorn::linux_layer::LinuxProcess& process) {
    done_ = false;
    process_ = &process;
    const std::uint64_t tree_root = process.tree_root_pid();
    thread_ = tracecorn::start_thread([this, &process, tree_root] {
      const timespec tick{0, 100'000'000};
      while (!done_) {
        siginfo_t info{};
        const int signal = sigtimedwait(&signals_, &info, &tick);
        if (signal > 0 && done_ && is_wake_up(info)) break;
        if (signal > 0) {
          const bool stop_signal = signal == SIGINT || signal == SIGTERM;
          const bool from_guest = info.si_code == SI_USER && info.si_pid > 0 &&
                                  tracecorn::linux_layer::host_process_descends_from(
                                      static_cast<std::uint64_t>(info.si_pid), tree_root);
          if (stop_signal && !from_guest) {
            if (received_ == 0) received_ = signal;
          } else {
            process.post_host_signal(signal, info.si_code, static_cast<std::uint64_t>(info.si_pid), info.si_uid,
                                     signal == SIGCHLD ? info.si_status : 0);
          }
        }
        // Asked again at every tick: a stop asked before uc_emu_start has begun
        // is ignored by Unicorn (a signal that comes while the process is still
        // being set up, on a loaded machine).
        if (received_ != 0) process.request_stop();
      }
    });
  }
  // Around a fork of the guest: the watching thread ends before it (it could
  // hold a lock the child would inherit held: the kernel's queue of host
  // signals, the allocator) and starts again after it, in the parent and in
  // the child. Signals sent meanwhile wait, blocked, for the new thread.
  void pause_for_fork() noexcept override { stop_watching(); }
  void resume_after_fork() noexcept override {
    if (process_ && !thread_.joinable()) watch(*process_);
  }
  void stop_for_exec() noexcept override { stop_watching(); }
  // Ends the watching thread (before the process it stops goes away); the
  // signals stay blocked until the watcher is destroyed. received() stays valid.
  void stop_watching() {
    done_ = true;
    if (!thread_.joinable()) return;
    // Woken now rather than at its next tick (up to 0.1 s on every exit and
    // every exec of every process of the tree).
    sigval value{};
    value.sival_int = kWakeUp;
    (void)pthread_sigqueue(thread_.native_handle(), SIGURG, value);
    thread_.join();
  }
  int received() const { return received_; }

 private:
  static constexpr int kWakeUp = 0x7463776b;
  // stop_watching()'s own signal (queued by this process to the watcher).
  static bool is_wake_up(const siginfo_t& info) {
    return info.si_signo == SIGURG && info.si_code == SI_QUEUE && info.si_pid == ::getpid() &&
           info.si_value.sival_int == kWakeUp;
  }

  sigset_t signals_{};
  sigset_t previous_{};
  std::atomic<bool> done_{false};
  std::atomic<int> received_{0};
  tracecorn::linux_layer::LinuxProcess* process_ = nullptr;  // what watch() was last given
  std::thread thread_;
};

// Finds PROGRAM the way a shell would: as given when it contains a slash, else in $PATH.
std::string find_program(const std::string& name) {
  if (name.find('/') != std::string::npos) return name;
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/local/bin:/usr/bin:/bin";
  std::size_t start = 0;
  while (start <= dirs.size()) {
    std::size_t end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    std::string dir = dirs.substr(start, end - start);
    if (dir.empty()) dir = ".";
    const std::string candidate = dir + "/" + name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    start = end + 1;
  }
  return name;
}

std::vector<std::string> guest_environment(const RunOptions& options) {
  std::vector<std::string> env;
  if (!options.clear_env)
    for (char** entry = environ; *entry; ++entry) env.emplace_back(*entry);
  auto remove = [&](const std::string& name) {
    std::erase_if(env, [&](const std::string& item) { return item.compare(0, name.size() + 1, name + "=") == 0; });
  };
  for (const auto& name : options.unset_env) remove(name);
  for (const auto& assignment : options.set_env) {
    remove(assignment.substr(0, assignment.find('=')));
    env.push_back(assignment);
  }
  return env;
}

int exit_status_for(const tracecorn::Error& error) {
  switch (error.code) {
    case ErrorCode::kNotFound: return kExitNotFound;
    case ErrorCode::kBadFormat: case ErrorCode::kTruncated: case ErrorCode::kUnsupported:
    case ErrorCode::kInvalidArgument:
      return kExitCannotRun;
    default: return kExitToolError;
  }
}

// --compress-level is about zstd, and so is --jobs but for a format that
// encodes on several threads (BAP frames): without zstd they are a mistake.
tracecorn::Status validate_compression(const CompressionOptions& compression, bool zstd, std::string_view format) {
  if (zstd) return tracecorn::ok_status();
  if (compression.level != 0) return usage_error("--compress-level", "needs --compress zstd");
  if (compression.jobs != -1 && format != "frames")
    return usage_error("--jobs", "needs --compress zstd (or --format frames)");
  return tracecorn::ok_status();
}

// The threads that encode (formats::WriterRequest::encoder_threads): --jobs,
// else none (on 2 cores they cost more than they save: bench/README.md,
// encode_bench; no bigger machine has measured them yet).
int encoder_threads(const CompressionOptions& compression) { return std::max(compression.jobs, 0); }

// zstd's settings from --compress-level and --jobs; any count of workers from
// 1 up writes the same bytes (formats/common/zstd_compression.h). What is not
// given is left for the writer's caller to set from the trace's level of
// detail (formats::with_zstd_defaults): level 0, workers kDefaultWorkers.
tracecorn::formats::ZstdCompression zstd_compression(const CompressionOptions& compression) {
  const int workers =
      compression.jobs >= 0 ? compression.jobs : tracecorn::formats::ZstdCompression::kDefaultWorkers;
  return {compression.level, workers};
}

void add_compression_options(CLI::App* app, CompressionOptions& compression) {
  app->add_option("--compress-level", compression.level,
                  "zstd's level with --compress zstd: 1 (fastest) to 19 (smallest); default 1 for a trace of "
                  "level regs or full, 3 below")
      ->check(CLI::Range(1, 19));
  app->add_option("--jobs", compression.jobs,
                  "Threads that compress with --compress zstd while the trace is written (0: on the writing "
                  "thread; default: for a trace of level regs or full the cores but one, 1 to 8, below 0). Every "
                  "N from 1 up writes the same bytes. With --format frames, also the threads that encode the "
                  "frames, with or without zstd (default, 0 and 1: on the writing thread); the frames are the "
                  "same for every N")
      ->check(CLI::Range(0, 16));  // each holds about 8 MiB: at 16, a full-level recording peaked at 276 MB
}

// Checks the combination of recording options (before anything runs); the
// error names the option concerned.
tracecorn::Status validate_record_options(const RecordOptions& record) {
  if (record.compress != "none" && record.format != "ucir" && record.format != "frames" && record.format != "bintrace")
    return usage_error("--compress", "only --format ucir, frames and bintrace can be compressed");
  if (auto valid = validate_compression(record.compression, record.compress == "zstd", record.format); !valid)
    return valid;
  if (record.format == "bintrace" && record.level != "regs" && record.level != "full")
    return usage_error("--level", "--format bintrace needs per-instruction registers: --level regs or full");
  // BAP frames carry the register values each instruction reads: code left
  // unrecorded would leave them stale (formats/bap/bap_writer.h).
  if (record.format == "frames" && (record.only_main || !record.range.empty() || !record.start_at.empty()))
    return usage_error("--format frames",
                       "cannot be combined with --only-main, --range or --start-at (register values would be stale)");
  return tracecorn::ok_status();
}

// Parses --range's "A-B".
tracecorn::Expected<tracecorn::core::AddressRange> parse_range(const std::string& text) {
  const auto dash = text.find('-');
  if (dash == std::string::npos) return usage_error("--range", "expected A-B");
  auto start = parse_address(text.substr(0, dash), "--range");
  if (!start) return start.error();
  auto end = parse_address(text.substr(dash + 1), "--range");
  if (!end) return end.error();
  return tracecorn::core::AddressRange{*start, *end};
}

// Sets `address` from `text` unless it is empty (the option not given).
tracecorn::Status parse_given_address(const std::string& text, const char* option,
                                      std::optional<std::uint64_t>& address) {
  if (text.empty()) return tracecorn::ok_status();
  auto value = parse_address(text, option);
  if (!value) return value.error();
  address = *value;
  return tracecorn::ok_status();
}

// `record`'s options parsed for the session (session/program_recording.h),
// or the first usage error among them (the combination, then --range,
// --start-at, --stop-at).
tracecorn::Expected<tracecorn::session::RecordingOptions> recording_options_from(const RecordOptions& record,
                                                                                 const RunOptions& run) {
  if (auto valid = validate_record_options(record); !valid) return valid.error();
  tracecorn::session::RecordingOptions parsed;
  parsed.output = record.output;
  parsed.format = record.format;
  parsed.level = tracecorn::core::parse_trace_level(record.level).value_or(tracecorn::core::TraceLevel::kFull);
  parsed.compress_zstd = record.compress == "zstd";
  parsed.zstd = tracecorn::formats::with_zstd_defaults(zstd_compression(record.compression),
                                                       tracecorn::core::level_has_registers(parsed.level));
  parsed.encoder_threads = encoder_threads(record.compression);
  parsed.ucir_strict = record.ucir_strict;
  parsed.ring_bytes = record.ring_kib << 10;
  parsed.flight_recorder = record.flight_recorder;
  parsed.only_main = record.only_main;
  if (!record.range.empty()) {
    auto range = parse_range(record.range);
    if (!range) return range.error();
    parsed.code_range = *range;
  }
  if (auto start = parse_given_address(record.start_at, "--start-at", parsed.start_at); !start) return start.error();
  if (auto stop = parse_given_address(record.stop_at, "--stop-at", parsed.stop_at); !stop) return stop.error();
  parsed.stop_after = record.stop_after;
  parsed.tracer_args = record.tracer_args;
  for (char** entry = environ; *entry; ++entry) parsed.tracer_envp.emplace_back(*entry);
  parsed.address_namer = [rootfs = run.rootfs]() -> std::unique_ptr<tracecorn::formats::AddressNamer> {
    return std::make_unique<tracecorn::cli::SymbolNamer>(rootfs);  // for text's stacks
  };
  return parsed;
}

// Flushes what a forked child of the guest tree printed itself. Never
// fflush(nullptr): the child still holds its parent's trace file (leaked on
// purpose, see session::ProcessTreeRecording), whose unwritten buffer would land in the
// parent's trace at the shared file offset.
void flush_own_output() {
  std::fflush(stdout);
  std::fflush(stderr);
}

// Ends a forked child by host signal `signal` (its default action; no core file).
void die_by_signal(int signal) {
  flush_own_output();
  const rlimit no_core{0, 0};
  ::setrlimit(RLIMIT_CORE, &no_core);
  std::signal(signal, SIG_DFL);
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, signal);
  pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
  ::raise(signal);
}

// The guest's process as the options describe it (no syscall log yet).
tracecorn::linux_layer::ProcessConfig process_config_for(const RunOptions& options) {
  tracecorn::linux_layer::ProcessConfig config;
  config.program = find_program(options.command.front());
  config.argv = options.command;
  config.envp = guest_environment(options);
  config.rootfs = options.rootfs;
  config.read_only = options.read_only;
  config.allow_net = options.allow_net;
  if (!options.max_memory.empty()) config.max_memory = parse_size(options.max_memory, "--max-memory");
  config.max_instructions = options.max_instructions;
  config.timeout = std::chrono::microseconds(static_cast<std::int64_t>(options.timeout_seconds * 1e6));
  config.relaunch_command = options.relaunch_command;
  config.inherited_state_fd = options.exec_state_fd;
  config.max_processes = options.max_processes;
  return config;
}

using LogFile = std::unique_ptr<std::FILE, int (*)(std::FILE*)>;

// Opens --syscall-log (an exec'd image goes on with the log its process
// began) and points `config` at it, or at stderr for --strace. False, said
// on stderr, when the log cannot be opened.
bool open_syscall_log(const RunOptions& options, tracecorn::linux_layer::ProcessConfig& config, LogFile& log) {
  if (!options.syscall_log.empty()) {
    log.reset(std::fopen(options.syscall_log.c_str(), options.exec_state_fd >= 0 ? "a" : "w"));
    if (!log) {
      fmt::print(stderr, "tracecorn: {}: cannot open the syscall log: {}\n", options.syscall_log, std::strerror(errno));
      return false;
    }
    config.syscall_log = log.get();
  }
  if (options.strace) config.syscall_log = stderr;
  return true;
}

// The call stacks at syscalls (--stacks; recording defaults to auto, run -k
// too); null for none.
tracecorn::Expected<std::unique_ptr<tracecorn::core::GuestStacks>> stacks_for(
    tracecorn::linux_layer::LinuxProcess& process, const RunOptions& options, bool recording) {
  const std::string choice = !options.stacks.empty()                       ? options.stacks
                             : (recording || options.strace_stacks) ? "auto"
                                                                    : "none";
  if (choice == "none") return std::unique_ptr<tracecorn::core::GuestStacks>();
  return tracecorn::core::GuestStacks::create(process.engine(), process.arch(),
                                              *tracecorn::unwind::parse_unwind_method(choice),
                                              tracecorn::cli::host_path_mapper(options.rootfs));
}

// What ended the run as the user sees it: a stop by the interrupt watcher or
// by the recorder looks like any other early return of uc_emu_start.
void explain_early_stop(tracecorn::linux_layer::RunOutcome& outcome, int interrupt,
                        const tracecorn::session::ImageRecording& image) {
  using Kind = tracecorn::linux_layer::RunOutcome::Kind;
  if (outcome.kind == Kind::kExited) return;
  if (interrupt != 0) {
    outcome.kind = Kind::kSignaled;
    outcome.is_fault = false;
    outcome.signal = interrupt;
    outcome.description = std::string("interrupted by SIG") + sigabbrev_np(outcome.signal) +
                          (image.recorder ? "; the trace was finished and marked interrupted" : "");
  } else if (image.recorder && image.recorder->stop_requested()) {
    outcome.kind = Kind::kStopped;
    outcome.is_fault = false;
    outcome.description = image.recorder->sink_failed() ? "stopped: the trace cannot be written (below)"
                                                        : "stopped: the recording's stop condition was reached";
  }
}

// The recording's lines once its image is finished: the records lost, and
// with --stats (`stats_wanted`) its counters. Returns the recorder's
// instruction count.
std::uint64_t print_recording_stats(const tracecorn::core::RecorderStats& stats, bool stats_wanted) {
  if (stats.records_lost)
    fmt::print(stderr, "tracecorn: {} records could not be recorded (see the gap markers)\n", stats.records_lost);
  if (!stats_wanted) return stats.instructions;
  fmt::print(stderr, "tracecorn: recorded {} events in {} ring records ({} bytes, {} producer stalls, {} overwritten)\n",
             stats.events, stats.records, stats.ring_bytes_written, stats.producer_stalls, stats.records_overwritten);
  // What the sinks were handed, by kind: `tracecorn stat` on the file counts the same way.
  std::string by_kind;
  for (std::size_t k = 1; k < stats.events_by_kind.size(); ++k)
    if (stats.events_by_kind[k])
      by_kind += fmt::format("{}{} {}", by_kind.empty() ? "" : ", ",
                             tracecorn::events::event_kind_name(static_cast<tracecorn::events::EventKind>(k)),
                             stats.events_by_kind[k]);
  fmt::print(stderr, "tracecorn: events by kind: {}\n", by_kind.empty() ? "none" : by_kind);
  if (stats.registers_derived)
    fmt::print(stderr, "tracecorn: register writes derived (not read) for {} instructions\n", stats.registers_derived);
  return stats.instructions;
}

// --stats' line about the call stacks walked.
void print_stack_stats(const tracecorn::core::GuestStacks& stacks) {
  const auto walked = stacks.stats();
  fmt::print(stderr, "tracecorn: {} call stacks, {} frames, {:.3f} s unwinding ({:.2f} us a stack){}\n", walked.stacks,
             walked.frames, static_cast<double>(walked.nanoseconds) / 1e9,
             walked.stacks ? static_cast<double>(walked.nanoseconds) / 1e3 / static_cast<double>(walked.stacks) : 0.0,
             stacks.unreadable_modules() ? fmt::format(", {} modules unreadable", stacks.unreadable_modules()) : "");
}

// Runs the guest; with `record` (record's options parsed, or their usage
// error), records it. Returns the exit status.
int run_command(const RunOptions& options, const tracecorn::Expected<tracecorn::session::RecordingOptions>* record) {
  namespace linux = tracecorn::linux_layer;
  linux::ProcessConfig config = process_config_for(options);
  LogFile log(nullptr, &std::fclose);
  if (!open_syscall_log(options, config, log)) return kExitToolError;

  // A write to a pipe nobody reads fails with EPIPE; the Linux layer gives
  // the guest its SIGPIPE (tracecorn itself must not die of the host's).
  std::signal(SIGPIPE, SIG_IGN);
  const auto started = std::chrono::steady_clock::now();
  InterruptWatcher interrupts;  // before any thread starts, so that all inherit the mask
  // Forks and execs: the watcher paused or ended, the traces started and finished.
  tracecorn::session::ProcessTreeRecording tree(interrupts, config);
  config.lifecycle = &tree;
  auto process = linux::LinuxProcess::create(config);
  if (!process) {
    fmt::print(stderr, "tracecorn: {}\n", process.error().to_string());
    return exit_status_for(process.error());
  }
  std::unique_ptr<tracecorn::engine::InstructionCounter> counter;
  if (options.stats && !record) {
    auto attached = tracecorn::engine::InstructionCounter::attach((*process)->engine(), (*process)->arch());
    if (!attached) {
      fmt::print(stderr, "tracecorn: {}\n", attached.error().to_string());
      return kExitToolError;
    }
    counter = std::move(*attached);
  }
  auto stacks = stacks_for(**process, options, record != nullptr);
  if (!stacks) {
    fmt::print(stderr, "tracecorn: {}\n", stacks.error().to_string());
    return kExitToolError;
  }
  std::unique_ptr<tracecorn::cli::StraceStackPrinter> strace_printer;
  if (!record && options.strace && options.strace_stacks && *stacks) {
    strace_printer = std::make_unique<tracecorn::cli::StraceStackPrinter>(**stacks, stderr);
    (*process)->set_observer(strace_printer.get());
  }

  // Recording: the first image's trace, then its tree's (ProcessTreeRecording).
  // A usage error of record's options is said here, once the program was
  // found, as the recording would start.
  tracecorn::session::ImageRecording image;
  if (record && !*record) {
    fmt::print(stderr, "tracecorn: {}\n", record->error().to_string());
    return kExitToolError;
  }
  if (record) {
    if (auto recording = tree.start(**process, image, **record, stacks->get()); !recording) {
      fmt::print(stderr, "tracecorn: {}\n", recording.error().to_string());
      return kExitToolError;
    }
  }

  interrupts.watch(**process);
  linux::RunOutcome outcome = (*process)->run();
  interrupts.stop_watching();  // it must not reach the process after this function ends
  const bool interrupted = interrupts.received() != 0 && outcome.kind != linux::RunOutcome::Kind::kExited;
  explain_early_stop(outcome, interrupts.received(), image);
  std::fflush(stdout);
  int status = outcome.host_exit_status();
  // A process of the guest's tree other than its root dies as its guest did,
  // silently (its parent's wait sees the signal, as natively).
  const bool tree_child = (*process)->guest_pid() != (*process)->tree_root_pid();
  const bool dies_by_signal = tree_child && outcome.kind == linux::RunOutcome::Kind::kSignaled;
  if (outcome.kind != linux::RunOutcome::Kind::kExited && !(dies_by_signal && !outcome.is_fault))
    fmt::print(stderr, "tracecorn: {}\n", outcome.description);
  // A fault ends the run inside a block: what ran before the faulting instruction.
  std::uint64_t instructions = !counter ? 0 : outcome.is_fault ? counter->instructions_before(outcome.pc) : counter->instructions();
  if (image.recorder) {
    const tracecorn::session::FinishedImage finished = tree.finish_image(outcome, interrupted);
    if (!finished.trace_complete) status = kExitToolError;
    instructions = print_recording_stats(finished.stats, options.stats);
  }
  if (*stacks && options.stats) print_stack_stats(**stacks);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  if (options.stats)
    fmt::print(stderr, "tracecorn: {} instructions, {} syscalls, {:.3f} s, exit status {}\n", instructions,
               (*process)->syscall_count(), seconds, outcome.host_exit_status());
  if (dies_by_signal && status == outcome.host_exit_status()) die_by_signal(outcome.signal);
  if (tree_child) {
    // A forked child ends here: its own trace is finished (ended and closed
    // with `image`), and what it holds of its parent's (a recorder, a writer,
    // threads it never had) must not be ended by destructors or exit handlers.
    image = tracecorn::session::ImageRecording{};
    flush_own_output();
    std::_Exit(status);
  }
  return status;
}

// `tracecorn dump FILE [--kind K,...] [--range A-B] [--events N-M] [--thread TID]`: the reader
// is chosen by the file's content (recorder/replay/trace_reader.h); its
// description, then its events (those the filter accepts: EventFilter in
// recorder/replay/trace_tools.h) with the text sink. Returns 0, or 125 when the
// file cannot be read or is invalid (after printing the events before the
// problem, and the byte offset), a filter is malformed, or the file ends early
// (printed up to its last complete record, then the error naming where).
struct DumpOptions {
  std::string path, kinds, range, events, thread;
};
// The recording's process tree below the process of trace `path`, when it
// has more than one process or image (process_tree.h). Returns 0, or 125
// with the error of a trace of the tree that cannot be read.
int print_process_tree(const std::string& path, std::string_view line_prefix) {
  auto tree = tracecorn::replay::read_process_tree(path);
  if (!tree) {
    fmt::print(stderr, "tracecorn: the process tree: {}\n", tree.error().to_string());
    return kExitToolError;
  }
  if (tree->traces() < 2) return 0;
  fmt::print("{}process tree ({} processes, {} traces):\n{}", line_prefix, tree->processes.size(), tree->traces(),
             tracecorn::replay::format_process_tree(*tree, std::string(line_prefix) + "  "));
  return 0;
}

int dump_command(const DumpOptions& options) {
  const std::string& path = options.path;
  auto filter = tracecorn::replay::parse_event_filter(options.kinds, options.range, options.events, options.thread);
  if (!filter) {
    fmt::print(stderr, "tracecorn: {}\n", filter.error().to_string());
    return kExitToolError;
  }
  auto reader = tracecorn::replay::TraceReader::open(path);
  if (!reader) {
    fmt::print(stderr, "tracecorn: {}\n", reader.error().to_string());
    return kExitToolError;
  }
  auto text = tracecorn::formats::TextWriter::open("-", (*reader)->arch());
  if (!text) {
    fmt::print(stderr, "tracecorn: {}\n", text.error().to_string());
    return kExitToolError;
  }
  // Call stacks symbolized from the modules' files where they are readable here.
  (*text)->set_address_namer(std::make_unique<tracecorn::cli::SymbolNamer>(""));
  (*reader)->show_progress("dump");  // on stderr, only when it is a terminal
  if (!options.kinds.empty() || !options.range.empty() || !options.events.empty() || !options.thread.empty())
    (*text)->set_filter([f = *filter](const tracecorn::events::Event& event) { return f.matches(event); });
  fmt::print("{}", (*reader)->describe());
  std::fflush(stdout);
  auto status = (*reader)->read_all(**text);
  if (status) status = (*reader)->check_complete();  // a cut file: printed up to its end, then this error
  if (!status) {
    fmt::print(stderr, "tracecorn: {}\n", status.error().to_string());
    return kExitToolError;
  }
  return print_process_tree(path, "# ");
}

// One trace's replay (replay_command), its line said as `who` (a process's pid).
int replay_one(const std::string& path, const tracecorn::replay::ReplayOptions& options, const std::string& who) {
  auto report = tracecorn::replay::replay_trace(path, options);
  if (!report) {
    fmt::print(stderr, "tracecorn: {}\n", report.error().to_string());
    return kExitToolError;
  }
  if (report->divergence) {
    fmt::print("tracecorn: {}: {}diverged at {}\n", path, who, report->divergence->to_string());
    return 1;
  }
  fmt::print("tracecorn: {}: {}replay matches: {} events, {} steps compared at level {}, {} syscalls answered from the "
             "trace, {} run in the emulator; not compared: {}\n",
             path, who, report->trace_events, report->steps_compared, report->level, report->syscalls_answered,
             report->syscalls_run, fmt::join(report->not_compared, "; "));
  std::fflush(stdout);
  return 0;
}

// `tracecorn replay [--rootfs DIR] [--no-children] TRACE [-- PROGRAM [ARGS...]]` (recorder/replay/replayer.h):
// re-runs the program with the trace's syscall answers and compares (its
// interpreter, for a dynamic program, from DIR as at recording). Prints one
// line per trace: the match, or the first divergence. A recording of several
// processes (process_tree.h) replays whole from its first trace: each
// process's images in tree order, stopping at the first that diverges
// (`with_children` false, or a PROGRAM given: that trace alone). Returns 0
// (match), 1 (divergence), 125 (a replay could not start: an invalid trace,
// with its byte offset...).
int replay_command(const std::string& path, const std::vector<std::string>& command, const std::string& rootfs,
                   bool with_children) {
  tracecorn::replay::ReplayOptions options;
  options.rootfs = rootfs;
  options.progress = true;  // shown only when stderr is a terminal
  if (!command.empty()) {
    options.program = find_program(command.front());
    options.argv = command;
  }
  if (!command.empty() || !with_children) return replay_one(path, options, "");
  auto tree = tracecorn::replay::read_process_tree(path);
  if (!tree) {
    fmt::print(stderr, "tracecorn: the process tree: {}\n", tree.error().to_string());
    return kExitToolError;
  }
  if (tree->traces() < 2) return replay_one(path, options, "");
  for (const auto& process : tree->processes) {
    for (const auto& image : process.images)
      if (const int status = replay_one(image.path, options, fmt::format("process {}: ", process.pid)); status != 0) {
        fmt::print("tracecorn: {}: the process tree's replay stopped at process {} ({})\n", path, process.pid,
                   image.path);
        return status;
      }
  }
  fmt::print("tracecorn: {}: the process tree replays: the {} traces of its {} processes match\n", path,
             tree->traces(), tree->processes.size());
  return 0;
}

// `tracecorn stat FILE`: counts by kind, model bytes per kind, the hottest
// blocks, the syscalls. Returns 0, or 125 with the reader's error (byte
// offset), also after printing the counts of a file that ends early.
int stat_command(const std::string& path) {
  auto reader = tracecorn::replay::TraceReader::open(path);
  if (!reader) {
    fmt::print(stderr, "tracecorn: {}\n", reader.error().to_string());
    return kExitToolError;
  }
  (*reader)->show_progress("stat");  // on stderr, only when it is a terminal
  tracecorn::cli::SymbolNamer namer("");  // blocks named from the modules' files where they are readable here
  auto stats = tracecorn::replay::compute_stats(**reader, &namer);
  if (!stats) {
    fmt::print(stderr, "tracecorn: {}\n", stats.error().to_string());
    return kExitToolError;
  }
  fmt::print("{}", (*reader)->describe());
  fmt::print("{} events, {} instructions, {} bytes in the file ({:.2f} bytes per event)\n", stats->events,
             stats->instructions, stats->file_bytes,
             stats->events ? static_cast<double>(stats->file_bytes) / static_cast<double>(stats->events) : 0.0);
  fmt::print("{:<10} {:>12} {:>14}  (model bytes: addresses, values, code and effects, not the file's encoding)\n",
             "kind", "events", "bytes");
  for (std::size_t k = 1; k < tracecorn::events::kEventKindCount; ++k)
    if (stats->count[k])
      fmt::print("{:<10} {:>12} {:>14}\n", tracecorn::events::event_kind_name(static_cast<tracecorn::events::EventKind>(k)),
                 stats->count[k], stats->bytes[k]);
  std::vector<std::pair<std::uint64_t, std::uint64_t>> hot(stats->block_hits.begin(), stats->block_hits.end());
  std::sort(hot.begin(), hot.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  fmt::print("hottest blocks ({} distinct):\n", hot.size());
  for (std::size_t i = 0; i < hot.size() && i < 10; ++i) {
    const auto name = stats->block_names.find(hot[i].first);
    fmt::print("  {:#x} {}{}\n", hot[i].first, hot[i].second, name == stats->block_names.end() ? "" : " " + name->second);
  }
  fmt::print("syscalls:\n");
  for (const auto& [name, calls] : stats->syscalls) fmt::print("  {} {}\n", name, calls);
  if (!stats->signals.empty()) {
    fmt::print("signals delivered to handlers:\n");
    for (const auto& [signal, count] : stats->signals)
      fmt::print("  {} {}\n", tracecorn::replay::signal_name(static_cast<std::int32_t>(signal)), count);
  }
  fmt::print("events by thread:\n");
  for (const auto& [thread, count] : stats->thread_events) fmt::print("  {} {}\n", thread, count);
  if ((*reader)->interrupted()) fmt::print("interrupted: the recording was stopped by SIGINT or SIGTERM and finished\n");
  if (const std::uint32_t signal = (*reader)->killed_by_signal())
    fmt::print("killed: the process was killed by {}\n", tracecorn::replay::signal_name(static_cast<std::int32_t>(signal)));
  if (auto complete = (*reader)->check_complete(); !complete) {  // the counts above stop where the file does
    fmt::print(stderr, "tracecorn: {}\n", complete.error().to_string());
    return kExitToolError;
  }
  return print_process_tree(path, "");
}

// `tracecorn recover FILE [-o OUT]`: a binary trace recording killed before
// it finished left FILE.head.part and FILE.events.part (FILE may also name the
// spool itself); writes OUT (default FILE) with every complete event and says
// where the spool was cut. The .part files are left as they were. Returns 0,
// or 125 (nothing to recover, an invalid head, a write error; OUT exists and
// is not the recovery's own output).
int recover_command(std::string path, std::string output) {
  const std::string spool_suffix = ".events.part";
  if (path.size() > spool_suffix.size() && path.ends_with(spool_suffix)) path.resize(path.size() - spool_suffix.size());
  if (output.empty()) output = path;
  if (::access(output.c_str(), F_OK) == 0) {
    fmt::print(stderr, "tracecorn: {}: exists: give another -o OUT (recover never replaces a file)\n", output);
    return kExitToolError;
  }
  auto recovered = tracecorn::formats::recover_bintrace(path + ".head.part", path + spool_suffix, output);
  if (!recovered) {
    fmt::print(stderr, "tracecorn: {}\n", recovered.error().to_string());
    return kExitToolError;
  }
  const auto& scan = recovered->scan;
  fmt::print(stderr, "tracecorn: {}: recovered {} events ({} of the spool's {} bytes, decompressed), {} regions{}\n",
             output, scan.events, scan.complete_bytes, scan.bytes, recovered->regions,
             scan.cut.empty() ? std::string("; the spool ends after a whole event")
                              : fmt::format("; the spool was cut after its last complete event, which ends at offset "
                                            "{}: {}",
                                            scan.complete_bytes, scan.cut));
  return 0;
}

// `tracecorn convert IN OUT --format F [--compress zstd]`, and the exporters
// (`--format drcov|chrome`). Prints what the target cannot carry. Returns 0 or 125.
int convert_command(const std::string& in, const std::string& out, const std::string& format, bool zstd,
                    const CompressionOptions& compression) {
  using tracecorn::replay::TraceFormat;
  if (auto valid = validate_compression(compression, zstd, format); !valid) {
    fmt::print(stderr, "tracecorn: {}\n", valid.error().to_string());
    return kExitToolError;
  }
  if (format == "drcov" || format == "chrome" || format == "tenet") {
    auto written = format == "drcov"    ? tracecorn::replay::export_drcov(in, out, true)
                   : format == "chrome" ? tracecorn::replay::export_chrome(in, out, true)
                                        : tracecorn::replay::export_tenet(in, out, true);
    if (!written) {
      fmt::print(stderr, "tracecorn: {}\n", written.error().to_string());
      return kExitToolError;
    }
    fmt::print(stderr, "tracecorn: {}: {} {}\n", out, *written,
               format == "drcov" ? "blocks" : format == "chrome" ? "trace events" : "lines");
    return 0;
  }
  const TraceFormat target = format == "ucir" ? TraceFormat::kUcir : format == "frames" ? TraceFormat::kFrames
                                                                                         : TraceFormat::kBintrace;
  auto lost = tracecorn::replay::convert_trace(in, out, target, zstd, true, zstd_compression(compression),
                                               encoder_threads(compression));
  if (!lost) {
    fmt::print(stderr, "tracecorn: {}\n", lost.error().to_string());
    return kExitToolError;
  }
  for (const auto& line : *lost) fmt::print(stderr, "tracecorn: {}: {}\n", out, line);
  return 0;
}

void add_run_options(CLI::App* app, RunOptions& run) {
  app->add_option("--max-insns", run.max_instructions, "Stop after N guest instructions (exit status 124)");
  app->add_option("--timeout", run.timeout_seconds, "Stop after S seconds (exit status 124)")
      ->check(CLI::NonNegativeNumber);
  app->add_option("--rootfs", run.rootfs, "Resolve every guest path inside DIR")->check(CLI::ExistingDirectory);
  app->add_flag("--read-only", run.read_only, "Refuse every guest syscall that could change the host file system (EROFS)");
  app->add_flag("--allow-net", run.allow_net, "Let the guest's network syscalls reach the host (default: EACCES)");
  app->add_option("--max-memory", run.max_memory,
                  "Cap the guest's mapped memory at BYTES (K, M, G suffixes; 0: no cap; default: half the host's RAM)")
      ->check([](const std::string& text) {
        try {
          parse_size(text, "--max-memory");
        } catch (const CLI::ValidationError&) {
          return "not a size (a number of bytes with an optional K, M or G): " + text;
        }
        return std::string();
      });
  app->add_option("--env", run.set_env, "Set NAME=VALUE in the guest's environment (repeatable)");
  app->add_option("--unset-env", run.unset_env, "Remove NAME from the guest's environment (repeatable)");
  app->add_flag("--clear-env", run.clear_env, "Start the guest with an empty environment");
  app->add_flag("--stats", run.stats, "Print instructions, syscalls and time on stderr at the end");
  app->add_option("--syscall-log", run.syscall_log, "Write one line per guest syscall to FILE");
  app->add_option("--stacks", run.stacks,
                  "Call stack at each syscall: auto (SFrame, then DWARF CFI, then frame pointers), sframe, cfi, fp or "
                  "none (default: auto when recording or with -k, else none)")
      ->check(CLI::IsMember({"auto", "sframe", "cfi", "fp", "none"}));
  app->add_option("--max-processes", run.max_processes,
                  "Cap the guest's live processes at N (fork then fails with EAGAIN; 0: no cap; default 256)");
  app->add_option("--exec-state-fd", run.exec_state_fd, "(internal) the state an exec'd image inherits")
      ->group("");
  app->add_option("command", run.command, "PROGRAM [ARGS...] (after --)")->required();
}

// How an exec'd image runs tracecorn again: this command line up to the
// guest's command (its "--", or where the command begins), without
// --exec-state-fd (the exec adds its own).
std::vector<std::string> relaunch_command(int argc, char** argv, const std::vector<std::string>& command) {
  std::vector<std::string> args(argv, argv + argc);
  std::size_t end = args.size();
  if (const auto dash = std::find(args.begin(), args.end(), "--"); dash != args.end())
    end = static_cast<std::size_t>(dash - args.begin());
  else if (command.size() <= args.size() && std::equal(command.rbegin(), command.rend(), args.rbegin()))
    end = args.size() - command.size();
  std::vector<std::string> result;
  for (std::size_t i = 0; i < end; ++i) {
    if (args[i].rfind("--exec-state-fd=", 0) == 0) continue;
    if (args[i] == "--exec-state-fd") {
      ++i;
      continue;
    }
    result.push_back(args[i]);
  }
  return result;
}

// `tracecorn --version`: tracecorn's version, then the Unicorn and Capstone
// libraries this process runs with (their run-time major.minor, and the
// release of the headers it was built against).
std::string version_text() {
  unsigned uc_major = 0, uc_minor = 0;
  uc_version(&uc_major, &uc_minor);
  int cs_major = 0, cs_minor = 0;
  cs_version(&cs_major, &cs_minor);
  return fmt::format("tracecorn {}\nUnicorn {}.{} (built against {}.{}.{})\nCapstone {}.{} (built against {}.{}.{})",
                     TRACECORN_VERSION, uc_major, uc_minor, UC_VERSION_MAJOR, UC_VERSION_MINOR, UC_VERSION_PATCH,
                     cs_major, cs_minor, CS_VERSION_MAJOR, CS_VERSION_MINOR, CS_VERSION_EXTRA);
}

// The example line at the foot of a subcommand's --help.
std::string example(const char* lines) { return std::string("\nExample:\n") + lines; }

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"tracecorn: run and trace Linux programs inside the Unicorn CPU emulator"};
  app.require_subcommand(1);
  app.set_version_flag("--version", version_text, "Print tracecorn's, Unicorn's and Capstone's versions and exit");
  app.footer("\nExamples:\n"
             "  tracecorn record --format ucir -o hello.ucir -- ./hello   # record a program\n"
             "  tracecorn stat hello.ucir                                 # what it did\n"
             "  tracecorn COMMAND --help                                  # one command's options\n"
             "\nExit status: the guest's own (128+signal if it was killed), 124 when a limit stopped it,\n"
             "125 for tracecorn's errors, 126 when the program cannot run, 127 when it is not found.");
  RunOptions run;
  CLI::App* run_app = app.add_subcommand("run", "Run a program in the emulator, with no trace");
  run_app->footer(example("  tracecorn run --strace -- /bin/true"));
  add_run_options(run_app, run);
  run_app->add_flag("--strace", run.strace, "Print one line per guest syscall on stderr, as strace does");
  run_app->add_flag("-k", run.strace_stacks, "With --strace: print the call stack under each syscall (strace -k)");

  RunOptions record_run;
  RecordOptions record;
  CLI::App* record_app = app.add_subcommand("record", "Run a program in the emulator and record a trace");
  record_app->footer(example("  tracecorn record --format ucir --level regs -o ls.ucir -- /bin/ls /"));
  add_run_options(record_app, record_run);
  record_app->add_option("-o,--output", record.output, "Trace file (default: - for stdout)");
  record_app->add_option("--format", record.format, "Trace format: text, ucir (usercorn's binary format), frames (BAP's), bintrace (binary trace v1.0, REVEN's; --level regs or full), or null (count events, write nothing)")
      ->check(CLI::IsMember({"text", "ucir", "frames", "bintrace", "null"}));
  record_app->add_option("--compress", record.compress, "Compress the trace: none or zstd (ucir, frames; bintrace: the events section)")
      ->check(CLI::IsMember({"none", "zstd"}));
  add_compression_options(record_app, record.compression);
  record_app->add_flag("--ucir-strict", record.ucir_strict,
                       "UCIR: write only the spec's ops (no call stack extension op)");
  record_app->add_option("--level", record.level, "blocks, insns, mem, regs or full")
      ->check(CLI::IsMember({"blocks", "insns", "mem", "regs", "full"}));
  record_app->add_option("--ring-kib", record.ring_kib, "Ring buffer size in KiB (default 65536)")
      ->check(CLI::Range(4, 4 << 20));
  record_app->add_flag("--flight-recorder", record.flight_recorder,
                       "Keep only the last --ring-kib of events and write them when the run ends");
  record_app->add_flag("--only-main", record.only_main, "Record only the main program's code");
  record_app->add_option("--range", record.range, "Record only code in A-B (addresses, hex with 0x)");
  record_app->add_option("--start-at", record.start_at, "Start recording when this address first runs");
  record_app->add_option("--stop-at", record.stop_at, "Stop the run when this address is reached");
  record_app->add_option("--stop-after", record.stop_after, "Stop after about N recorded instructions");

  DumpOptions dump;
  CLI::App* dump_app = app.add_subcommand("dump", "Print a trace file (UCIR, BAP frames, binary trace) readably");
  dump_app->footer(example("  tracecorn dump --kind syscall ls.ucir"));
  dump_app->add_option("file", dump.path, "The trace file (plain or zstd)")->required();
  dump_app->add_option("--kind", dump.kinds,
                       "Print only these kinds: block,insn,read,write,mem,regs,syscall,fault,module,exit,gap,signal,"
                       "thread,process");
  dump_app->add_option("--range", dump.range, "Print only events whose address or pc is in A-B (B excluded)");
  dump_app->add_option("--events", dump.events, "Print only events numbered N-M (the #N dump prints), N- or N");
  dump_app->add_option("--thread", dump.thread,
                       "Print only the events of guest thread TID (a single-threaded guest's: its pid; see stat)");

  std::string replay_path;
  std::vector<std::string> replay_program;
  CLI::App* replay_app =
      app.add_subcommand("replay", "Re-run a trace's program with its syscalls answered from the trace, and compare");
  replay_app->footer(example("  tracecorn replay ls.ucir   # exit status 0: the re-run matches the trace, 1: it diverges"));
  replay_app->add_option("trace", replay_path, "The trace file (UCIR, BAP frames, binary trace)")->required();
  replay_app->add_option("program", replay_program, "PROGRAM [ARGS...] (after --; default: the trace's)");
  std::string replay_rootfs;
  replay_app->add_option("--rootfs", replay_rootfs, "The tree the recording ran in (--rootfs of record)")
      ->check(CLI::ExistingDirectory);
  bool replay_no_children = false;
  replay_app->add_flag("--no-children", replay_no_children,
                       "Replay this trace alone, not the traces of the processes and images it started");

  std::string stat_path;
  CLI::App* stat_app = app.add_subcommand("stat", "Count a trace's events by kind, its hottest blocks and syscalls");
  stat_app->footer(example("  tracecorn stat ls.ucir"));
  stat_app->add_option("file", stat_path, "The trace file")->required();
  std::string convert_in, convert_out, convert_format, convert_compress = "none";
  CLI::App* convert_app =
      app.add_subcommand("convert", "Convert a trace to another format, or export it (drcov, chrome, tenet)");
  convert_app->footer(example("  tracecorn convert ls.ucir ls.frames --format frames\n"
                              "  tracecorn convert ls.ucir ls.json --format chrome   # for Perfetto\n"
                              "  tracecorn convert ls.ucir ls.log --format tenet     # for Tenet in IDA (a full-level trace)"));
  convert_app->add_option("in", convert_in, "The trace file")->required();
  convert_app->add_option("out", convert_out, "The file to write")->required();
  convert_app
      ->add_option("--format", convert_format,
                   "ucir, frames, bintrace, drcov, chrome (trace-event JSON) or tenet (Tenet's text trace)")
      ->required()
      ->check(CLI::IsMember({"ucir", "frames", "bintrace", "drcov", "chrome", "tenet"}));
  convert_app->add_option("--compress", convert_compress, "none or zstd")->check(CLI::IsMember({"none", "zstd"}));
  CompressionOptions convert_compression;
  add_compression_options(convert_app, convert_compression);

  tracecorn::cli::DebugCommandOptions debug;
  CLI::App* debug_app = tracecorn::cli::add_debug_command(app, debug);
  tracecorn::cli::WhyCommandOptions why;
  CLI::App* why_app = tracecorn::cli::add_why_command(app, why);

  CLI::App* recover_app =
      app.add_subcommand("recover", "Rebuild a binary trace whose recording was killed, from FILE.head.part and "
                                    "FILE.events.part");
  recover_app->footer(example("  tracecorn recover killed.bintrace -o whole.bintrace"));
  std::string recover_path, recover_output;
  recover_app->add_option("file", recover_path, "The trace the recording was writing (or its .events.part)")->required();
  recover_app->add_option("-o,--output", recover_output, "Where to write the recovered trace (default: FILE)");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    if (error.get_exit_code() != 0) {
      fmt::print(stderr, "tracecorn: {}\n", error.what());
      return kExitToolError;
    }
    return app.exit(error);
  }
  try {
    if (run_app->parsed()) {
      run.relaunch_command = relaunch_command(argc, argv, run.command);
      return run_command(run, nullptr);
    }
    if (record_app->parsed()) {
      record_run.relaunch_command = relaunch_command(argc, argv, record_run.command);
      // BAP frames want every operand value: full unless a level is given.
      if (record.format == "frames" && record_app->count("--level") == 0) record.level = "full";
      record.tracer_args.assign(argv, argv + argc);
      const auto recording = recording_options_from(record, record_run);
      return run_command(record_run, &recording);
    }
    if (dump_app->parsed()) return dump_command(dump);
    if (replay_app->parsed()) return replay_command(replay_path, replay_program, replay_rootfs, !replay_no_children);
    if (stat_app->parsed()) return stat_command(stat_path);
    if (recover_app->parsed()) return recover_command(recover_path, recover_output);
    if (debug_app->parsed()) return tracecorn::cli::debug_command(debug);
    if (why_app->parsed()) return tracecorn::cli::why_command(why);
    if (convert_app->parsed())
      return convert_command(convert_in, convert_out, convert_format, convert_compress == "zstd", convert_compression);
  } catch (const CLI::ValidationError& error) {
    fmt::print(stderr, "tracecorn: {}\n", error.what());
    return kExitToolError;
  } catch (const std::exception& error) {
    fmt::print(stderr, "tracecorn: internal error: {}\n", error.what());
    return kExitToolError;
  }
  return kExitToolError;
}
