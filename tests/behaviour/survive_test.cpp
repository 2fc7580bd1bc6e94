// Role: traces that survive (issue 10): `tracecorn record` stopped by SIGINT or
// SIGTERM finishes the trace in every format; killed by SIGKILL at random
// times, it leaves a file every reading tool reads up to its last complete
// record, naming the byte offset of the cut; a full disk (/dev/full, a file
// size limit, a small tmpfs) gives an error naming the file and the bytes
// written, exit status 125, and a prefix that reads with a cut warning.
// SIGINT and SIGTERM leave each format's interruption note, which dump and stat
// report (", interrupted", "interrupted: ..."); a recording that ends by itself
// has none; the BAP note also reads with python3-protobuf (frames_decode.py).
// Runs tracecorn through its command line only (harness.h), on the test thread.
// The guest is Debian's busybox running an endless shell loop (it never ends by
// itself: a full disk must stop the recording).
// What the tools must do with a cut file (docs/robustness.md):
// `dump` prints every event up to the last complete record, then both tools
// exit 125 with "tracecorn: FILE: the file ends early: ... offset ..." (the cut
// and where the last complete record ends); a cut exactly between two records
// of a UCIR file reads as a whole file (exit 0). A binary trace is written
// whole at the end, so a killed recording leaves only its spool and recovery
// head, which the tools name (exit 125), and `tracecorn recover` turns them
// into a file every tool reads (exit 0).
#include <sys/stat.h>

#include <cstdlib>
#include <random>
#include <regex>
#include <string>
#include <tuple>
#include <vector>

#include "harness.h"

namespace tracecorn::behaviour {
namespace {

struct Config {
  std::string format;
  bool zstd;
  int jobs = -1;  // --jobs (-1: not given)
};

// Every format tracecorn writes, plain and (where it has it) zstd.
std::vector<Config> all_configs() {
  return {{"ucir", false}, {"ucir", true}, {"frames", false}, {"frames", true},
          {"bintrace", false}, {"bintrace", true}, {"text", false}};
}

// BAP frames encoded on 4 threads, at the full level (chunks in flight when
// the recording stops); its own test below (reading back a full-level
// recording of the loop takes seconds per second recorded).
const Config kFramesOnThreads{"frames", true, 4};

std::string label(const Config& config) {
  return config.format + (config.zstd ? "+zstd" : "") + (config.jobs >= 0 ? "+jobs" + std::to_string(config.jobs) : "");
}

// `tracecorn record` options for `config`, writing `output` (bintrace needs registers).
std::vector<std::string> record_args(const Config& config, const std::string& output) {
  std::vector<std::string> args = {paths().tracecorn, "record", "--format", config.format, "-o", output};
  if (config.zstd) args.insert(args.end(), {"--compress", "zstd"});
  if (config.jobs >= 0) args.insert(args.end(), {"--jobs", std::to_string(config.jobs), "--level", "full"});
  if (config.format == "bintrace") args.insert(args.end(), {"--level", "regs"});
  return args;
}

const std::vector<std::string> kEndlessLoop = {"sh", "-c", "while :; do :; done"};

// Runs `argv` under /bin/sh -c `script` ("$@" is argv), with a generous limit.
ProcessResult shell(const std::string& script, const std::vector<std::string>& argv, int timeout_ms = 120000) {
  ProcessSpec spec;
  spec.argv = {"/bin/sh", "-c", script, "sh"};
  spec.argv.insert(spec.argv.end(), argv.begin(), argv.end());
  spec.env = base_env();
  spec.timeout = std::chrono::milliseconds(timeout_ms);
  return run_process(spec);
}

// `record` (its command line up to the program) of busybox's endless loop,
// sent SIG`signal` ("INT", "TERM") by timeout(1) after `seconds`.
ProcessResult record_loop_until(const std::string& signal, const std::string& seconds,
                                const std::vector<std::string>& record) {
  ProcessSpec spec;
  spec.argv = {"/usr/bin/timeout", "--preserve-status", "-s", signal, seconds};
  spec.argv.insert(spec.argv.end(), record.begin(), record.end());
  spec.argv.push_back("--");
  spec.argv.push_back(paths().busybox);
  spec.argv.insert(spec.argv.end(), kEndlessLoop.begin(), kEndlessLoop.end());
  spec.env = base_env();
  spec.timeout = std::chrono::milliseconds(60000);
  return run_process(spec);
}

// `tracecorn COMMAND FILE` with stdout thrown away (a dump runs to millions of lines).
ProcessResult read_with(const std::string& command, const std::string& file) {
  return shell("exec \"$@\" >/dev/null", {paths().tracecorn, command, file});
}

bool is_file(const std::string& path) {
  struct stat status {};
  return ::stat(path.c_str(), &status) == 0 && S_ISREG(status.st_mode);
}
std::uint64_t file_size(const std::string& path) {
  struct stat status {};
  return ::stat(path.c_str(), &status) == 0 ? static_cast<std::uint64_t>(status.st_size) : 0;
}

// `tracecorn stat FILE` (its output is short).
ProcessResult read_stat(const std::string& file) { return shell("exec \"$@\"", {paths().tracecorn, "stat", file}); }
// What `tracecorn stat` prints for a file with the interruption note.
constexpr const char* kStatInterrupted = "interrupted: the recording was stopped by SIGINT or SIGTERM";

// The independent BAP frames decoder (python3-protobuf), in the source tree.
std::string frames_decoder() { return paths().samples_source + "/../../tests/formats/bap/frames_decode.py"; }

// Checks what every reading tool says about `file`, a recording cut short
// (killed, or its disk full).
void check_cut_file_reads(const Config& config, const std::string& file) {
  CAPTURE(file);
  if (config.format == "text") {
    // Text is for people: the prefix is the text trace's own lines.
    const ProcessResult head = shell("head -c 24 \"$1\"", {file});
    CHECK_MESSAGE((file_size(file) == 0 || head.out.rfind("# tracecorn text trace", 0) == 0), head.out);
    return;
  }
  if (config.format == "bintrace") {
    // Written whole at the end: what is left is the spool (and the recovery
    // head), and the tools say so; `tracecorn recover` rebuilds a file that
    // every tool reads whole.
    CHECK_FALSE(is_file(file));
    CHECK(is_file(file + ".events.part"));
    for (const std::string command : {"dump", "stat"}) {
      const ProcessResult read = read_with(command, file);
      CHECK_MESSAGE(read.status == 125, command << ": " << read.describe_status() << "\n" << read.err);
      CHECK_MESSAGE(read.err.find(".events.part is: the events spool of a binary trace recording") != std::string::npos,
                    read.err);
      CHECK_MESSAGE(read.err.find("`tracecorn recover ") != std::string::npos, read.err);
    }
    const ProcessResult recover = shell("exec \"$@\"", {paths().tracecorn, "recover", file});
    if (!is_file(file + ".head.part")) {  // killed before the first instruction (rare, on a loaded machine)
      CHECK_MESSAGE(recover.status == 125, recover.describe_status() << "\n" << recover.err);
      CHECK_MESSAGE(recover.err.find("nothing to recover") != std::string::npos, recover.err);
      return;
    }
    CHECK_MESSAGE(recover.status == 0, recover.describe_status() << "\n" << recover.err);
    CHECK_MESSAGE(std::regex_search(recover.err, std::regex("recovered [0-9]+ events")), recover.err);
    for (const std::string command : {"dump", "stat"}) {
      const ProcessResult read = read_with(command, file);
      CHECK_MESSAGE(read.status == 0, command << ": " << read.describe_status() << "\n" << read.err);
    }
    // It never replaces a file.
    CHECK(shell("exec \"$@\"", {paths().tracecorn, "recover", file}).status == 125);
    return;
  }
  const std::regex cut_error("tracecorn: [^\n]*: the file ends early: [^\n]*offset (0x)?[0-9a-f]+");
  const std::regex header_error("tracecorn: [^\n]*offset (0x)?[0-9a-f]+");
  for (const std::string command : {"dump", "stat"}) {
    CAPTURE(command);
    const ProcessResult read = read_with(command, file);
    CHECK_MESSAGE(read.signal == 0, read.describe_status());  // never a crash
    if (read.status == 0) {
      // A cut exactly between two records of a UCIR file reads as a whole file
      // would; a BAP frames file is never whole (its n and TOC come at the end).
      CHECK(config.format != "frames");
    } else {
      // A cut after the header: read up to the last complete record, then the
      // error naming the cut; inside the header (UCIR's first keyframe holds
      // the initial memory): the error with its offset.
      CHECK_MESSAGE(read.status == 125, read.describe_status());
      const bool named = std::regex_search(read.err, cut_error) || std::regex_search(read.err, header_error);
      CHECK_MESSAGE(named, read.err);
    }
  }
}

// A recording of the endless loop into `file` under a file size limit of
// `limit` bytes (SIGXFSZ ignored, inherited through exec, so that write()
// returns EFBIG): exit status 125, "File too large", and an error naming the
// file and the bytes written (`written`, at most `limit`).
struct SizeLimitedRun {
  ProcessResult result;
  std::uint64_t written = 0;
};
SizeLimitedRun record_loop_past_size_limit(const Config& config, const std::string& file, std::uint64_t limit) {
  std::vector<std::string> argv = record_args(config, file);
  argv.insert(argv.end(), {"--", paths().busybox});
  argv.insert(argv.end(), kEndlessLoop.begin(), kEndlessLoop.end());
  argv.insert(argv.begin(), {"/usr/bin/prlimit", "--fsize=" + std::to_string(limit)});
  SizeLimitedRun run{shell("trap '' XFSZ; exec \"$@\"", argv)};
  const ProcessResult& result = run.result;
  CHECK_MESSAGE(result.status == 125, result.describe_status() << "\n" << result.err);
  CHECK_MESSAGE(result.err.find("File too large") != std::string::npos, result.err);
  const std::regex names_bytes("tracecorn: ([^:\n]+): write error[^\n]*after ([0-9]+) bytes were written");
  std::smatch match;
  REQUIRE_MESSAGE(std::regex_search(result.err, match, names_bytes), result.err);
  CHECK(match[1] == file);
  run.written = std::stoull(match[2]);
  CHECK(run.written <= limit);
  return run;
}

// The seed the SIGKILL delays are drawn with: TRACECORN_SURVIVE_SEED repeats a
// run; the seed is always printed.
std::uint32_t kill_delay_seed() {
  const char* seed_text = std::getenv("TRACECORN_SURVIVE_SEED");
  const std::uint32_t seed = seed_text ? static_cast<std::uint32_t>(std::strtoul(seed_text, nullptr, 0))
                                       : std::random_device{}();
  MESSAGE("SIGKILL delays drawn with seed " << seed << " (TRACECORN_SURVIVE_SEED=" << seed << " repeats them)");
  return seed;
}

}  // namespace

TEST_CASE("Survive: SIGINT and SIGTERM finish every format, plain and zstd, and the trace reads back whole") {
  TempDir dir("survive-interrupt");
  for (const Config& config : all_configs()) {
    for (const std::string signal : {"INT", "TERM"}) {
      CAPTURE(label(config));
      CAPTURE(signal);
      const std::string file = dir / (label(config) + "." + signal);
      std::vector<std::string> record = record_args(config, file);
      // Plain BAP frames are decoded by python3-protobuf below: at the blocks
      // level the file stays a few KiB (at full, 0.5 s of the loop is ~160 MB,
      // minutes of Python).
      if (config.format == "frames" && !config.zstd) record.insert(record.end(), {"--level", "blocks"});
      const ProcessResult result = record_loop_until(signal, "0.5", record);
      const int number = signal == "INT" ? 2 : 15;
      CHECK_MESSAGE(result.status == 128 + number, result.describe_status() << "\n" << result.err);
      CHECK_MESSAGE(result.err.find("tracecorn: interrupted by SIG" + signal) != std::string::npos, result.err);
      CHECK_FALSE(is_file(file + ".events.part"));  // a bintrace spool is removed once the file is written
      CHECK_FALSE(is_file(file + ".head.part"));    // and so is its recovery head
      if (config.format == "text") {
        const ProcessResult tail = shell("tail -n 2 \"$1\"", {file});
        CHECK_MESSAGE(tail.out.find("exit signal " + std::to_string(number)) != std::string::npos, tail.out);
        CHECK_MESSAGE(tail.out.find(", interrupted\n") != std::string::npos, tail.out);
        continue;
      }
      // The finished trace reads to its end with no warning, ending with the
      // summary line. Only the binary trace says how it ended (its exit event
      // carries the signal): BAP frames have no exit frame, and UCIR's reader
      // rebuilds the exit from the last exit syscall (TraceReader::capabilities).
      const ProcessResult dump = shell("\"$@\" 2>&1 >\"$0.dump\"; status=$?; tail -n 2 \"$0.dump\"; exit $status",
                                       {paths().tracecorn, "dump", file});
      CHECK_MESSAGE(dump.status == 0, dump.describe_status() << "\n" << dump.out);
      CHECK_MESSAGE(dump.out.find("warning") == std::string::npos, dump.out);
      CHECK_MESSAGE(dump.out.find("# end:") != std::string::npos, dump.out);
      // The file itself says it was interrupted (each format's interruption
      // note: recorder/replay/trace_reader.h), and both tools say so.
      CHECK_MESSAGE(dump.out.find(", interrupted\n") != std::string::npos, dump.out);
      const ProcessResult stat = read_stat(file);
      CHECK_MESSAGE(stat.status == 0, stat.describe_status() << "\n" << stat.err);
      CHECK_MESSAGE(stat.out.find(kStatInterrupted) != std::string::npos, stat.out);
      if (config.format == "frames" && !config.zstd) {
        // Debian's python3-protobuf, with the piqi schema and not our .proto,
        // reads the note as one more exception frame carrying the signal.
        const ProcessResult decoded = shell("/usr/bin/python3 \"$1\" \"$2\" | tail -n 2", {frames_decoder(), file});
        CHECK_MESSAGE(decoded.status == 0, decoded.describe_status() << "\n" << decoded.err);
        CHECK_MESSAGE(decoded.out.rfind("exception\t" + std::to_string(number) + "\t", 0) == 0, decoded.out);
      }
      if (config.format == "bintrace")
        CHECK_MESSAGE(dump.out.find("exit signal " + std::to_string(number)) != std::string::npos, dump.out);
      std::remove((file + ".dump").c_str());
      std::remove(file.c_str());
    }
  }
}

// A recording interrupted while its guest loops without syscalls stops at the
// start of a block (none of whose instructions ran), so every register value
// of the last instruction is its own: the trace replays up to its end, where
// replay stops the re-run and says why. (Stopped from another thread, Unicorn
// would run the rest of its block without hooks, and the last instruction's
// registers in the trace would hold their effects.)
TEST_CASE("Survive: a recording interrupted in a loop replays up to where it stopped, in every format") {
  TempDir dir("survive-replay");
  for (const auto& [format, level, seconds] :
       {std::tuple<std::string, std::string, std::string>{"ucir", "regs", "0.2"}, {"bintrace", "regs", "0.2"},
        {"frames", "full", "0.1"}}) {
    CAPTURE(format);
    const std::string file = dir / ("loop." + format);
    const ProcessResult recorded = record_loop_until(
        "INT", seconds, {paths().tracecorn, "record", "--format", format, "--level", level, "-o", file});
    REQUIRE_MESSAGE(recorded.status == 128 + 2, recorded.describe_status() << "\n" << recorded.err);
    const ProcessResult replayed = shell("exec \"$@\"", {paths().tracecorn, "replay", file});
    CHECK_MESSAGE(replayed.status == 0, replayed.describe_status() << "\n" << replayed.out << replayed.err);
    CHECK_MESSAGE(replayed.out.find("replay matches") != std::string::npos, replayed.out);
    CHECK_MESSAGE(replayed.out.find("the recording was interrupted there by SIGINT or SIGTERM") != std::string::npos,
                  replayed.out);
    std::remove(file.c_str());
  }
}

TEST_CASE("Survive: SIGTERM ends a recording whose guest waits in a read or a sleep") {
  // The guest blocks in the host (a read of a FIFO whose writer stays, a
  // 100 s nanosleep); `timeout -s TERM 2` must end the recording at once,
  // finished and marked interrupted, not when the wait would have ended.
  TempDir dir("survive-blocked");
  const std::vector<std::vector<std::string>> guests = {{paths().busybox, "sh", "-c", "read line"},
                                                        {paths().busybox, "sleep", "100"}};
  for (const auto& guest : guests) {
    const std::string output = dir / "blocked.ucir";
    CAPTURE(guest[1]);
    std::vector<std::string> argv = {dir.path(), paths().tracecorn, "record", "--format", "ucir", "-o", output, "--"};
    argv.insert(argv.end(), guest.begin(), guest.end());
    const ProcessResult result = shell(
        "d=$1; shift; rm -f \"$d/fifo\"; mkfifo \"$d/fifo\"; exec 3<>\"$d/fifo\"; start=$(date +%s); "
        "timeout -s TERM 2 \"$@\" <\"$d/fifo\"; status=$?; echo \"status $status seconds $(( $(date +%s) - start ))\"",
        argv, 60000);
    CAPTURE(result.err);
    const std::smatch found = [&] {
      std::smatch match;
      std::regex_search(result.out, match, std::regex("status (\\d+) seconds (\\d+)"));
      return match;
    }();
    REQUIRE_MESSAGE(found.size() == 3, result.out);
    CHECK(found[1] == "124");
    CHECK(std::stoi(found[2]) <= 6);
    const ProcessResult stat = read_stat(output);
    CHECK(stat.status == 0);
    CHECK_MESSAGE(stat.out.find(kStatInterrupted) != std::string::npos, stat.out);
  }
}

TEST_CASE("Survive: a recording that ends by itself is not marked interrupted, in any format") {
  TempDir dir("survive-whole");
  for (const Config& config : all_configs()) {
    if (config.format == "text") continue;  // covered by the text trace's own tests
    CAPTURE(label(config));
    const std::string file = dir / label(config);
    std::vector<std::string> argv = record_args(config, file);
    argv.insert(argv.end(), {"--", paths().busybox, "true"});
    const ProcessResult result = shell("exec \"$@\"", argv);
    REQUIRE_MESSAGE(result.status == 0, result.describe_status() << "\n" << result.err);
    const ProcessResult dump = shell("\"$@\" 2>&1 | tail -n 1", {paths().tracecorn, "dump", file});
    CHECK_MESSAGE(dump.out.rfind("# end:", 0) == 0, dump.out);
    CHECK_MESSAGE(dump.out.find("interrupted") == std::string::npos, dump.out);
    const ProcessResult stat = read_stat(file);
    CHECK_MESSAGE(stat.status == 0, stat.describe_status() << "\n" << stat.err);
    CHECK_MESSAGE(stat.out.find(kStatInterrupted) == std::string::npos, stat.out);
  }
}

TEST_CASE("Survive: after SIGKILL at random times every trace reads up to its last complete record") {
  TempDir dir("survive-kill");
  std::mt19937 random(kill_delay_seed());
  std::uniform_int_distribution<int> delay_ms(50, 900);
  for (const Config& config : all_configs()) {
    for (int round = 0; round < 3; ++round) {
      const int delay = delay_ms(random);
      CAPTURE(label(config));
      CAPTURE(delay);
      const std::string file = dir / (label(config) + "." + std::to_string(round));
      std::vector<std::string> argv = {"/usr/bin/timeout", "-s", "KILL", std::to_string(delay / 1000.0)};
      for (const auto& arg : record_args(config, file)) argv.push_back(arg);
      // Plain BAP frames are decoded by python3-protobuf below: at the blocks
      // level the file stays a few KiB (at full, 0.5 s of the loop is ~160 MB,
      // minutes of Python).
      if (config.format == "frames" && !config.zstd) argv.insert(argv.end(), {"--level", "blocks"});
      argv.push_back("--");
      argv.push_back(paths().busybox);
      argv.insert(argv.end(), kEndlessLoop.begin(), kEndlessLoop.end());
      ProcessSpec spec;
      spec.argv = argv;
      spec.env = base_env();
      spec.timeout = std::chrono::milliseconds(60000);
      const ProcessResult result = run_process(spec);
      CHECK_MESSAGE(result.status == 137, result.describe_status());  // timeout passes on the KILL
      // Killed before the output was even created: nothing to read (rare, on a loaded machine).
      if (!is_file(file) && !is_file(file + ".events.part")) {
        MESSAGE("killed before " << file << " was created");
        continue;
      }
      check_cut_file_reads(config, file);
      for (const char* suffix : {"", ".events.part", ".head.part", ".head.part.tmp"}) std::remove((file + suffix).c_str());
    }
  }
}

TEST_CASE("Survive: a full disk gives an error naming the file and the bytes written, exit 125, and a readable prefix") {
  TempDir dir("survive-full");
  // The guest never ends by itself: the recording stops when its sink cannot
  // write (Recorder::sink_failed), else the test's time limit kills it.
  const std::regex names_bytes("tracecorn: ([^:\n]+): write error[^\n]*after ([0-9]+) bytes were written");

  SUBCASE("/dev/full: no space at once") {
    for (const Config& config : all_configs()) {
      CAPTURE(label(config));
      std::vector<std::string> argv = record_args(config, "/dev/full");
      argv.insert(argv.end(), {"--", paths().busybox, "true"});
      const ProcessResult result = shell("exec \"$@\"", argv);
      CHECK_MESSAGE(result.status == 125, result.describe_status() << "\n" << result.err);
      if (config.format == "frames") {  // refused before it starts: n and T are patched at the end
        CHECK_MESSAGE(result.err.find("need a seekable output file") != std::string::npos, result.err);
      } else {
        CHECK_MESSAGE(result.err.find("tracecorn: /dev/full: write error") != std::string::npos, result.err);
        CHECK_MESSAGE(result.err.find("No space left on device") != std::string::npos, result.err);
      }
      // Regression: the binary trace writer renamed its PATH.part over the
      // output, which replaced the /dev/full device with a regular file.
      struct stat status {};
      REQUIRE(::stat("/dev/full", &status) == 0);
      CHECK(S_ISCHR(status.st_mode));
      CHECK_FALSE(is_file("/dev/full.part"));
      CHECK_FALSE(is_file("/dev/full.events.part"));
    }
  }

  SUBCASE("a file size limit: write() fails with EFBIG at a chosen size") {
    for (const Config& config : all_configs()) {
      CAPTURE(label(config));
      // Past UCIR's keyframe (busybox's initial memory) when plain; zstd traces
      // of the loop grow slowly (a binary trace's zstd spool slowest).
      const std::uint64_t kLimit = !config.zstd ? 6 << 20 : config.format == "bintrace" ? 4 << 10 : 256 << 10;
      const std::string file = dir / ("limited." + label(config));
      const SizeLimitedRun run = record_loop_past_size_limit(config, file, kLimit);
      const ProcessResult& result = run.result;
      if (config.format == "bintrace") {
        // The first file to fill: the events spool, or (plain: busybox's
        // initial memory) the recovery head written at the first instruction.
        CHECK_MESSAGE((result.err.find("events spool") != std::string::npos ||
                       result.err.find("recovery head") != std::string::npos),
                      result.err);
        CHECK_FALSE(is_file(file));  // a failed binary trace leaves no file (nor its spool)
        CHECK_FALSE(is_file(file + ".events.part"));
        CHECK_FALSE(is_file(file + ".head.part"));
        CHECK_FALSE(is_file(file + ".head.part.tmp"));
        continue;
      }
      CHECK(file_size(file) <= kLimit);
      CHECK(run.written == file_size(file));
      check_cut_file_reads(config, file);
    }
  }

  SUBCASE("a small tmpfs that fills up") {
    // In a private mount namespace (unshare -m), so nothing outlives the test.
    const ProcessResult probe = shell("exec unshare -m sh -c 'mount -t tmpfs -o size=1m tmpfs \"$1\"' sh \"$1\"",
                                      {dir.path()}, 20000);
    if (probe.status != 0) {
      MESSAGE("skipped: cannot mount a tmpfs here (" << probe.err << ")");
      return;
    }
    const std::string mount_point = dir / "small";
    REQUIRE(shell("mkdir \"$1\"", {mount_point}).status == 0);
    for (const Config& config : all_configs()) {
      // A binary trace's spool fills the disk before the file exists (as above);
      // BAP frames with zstd grow too slowly on this loop (the size limit case covers them).
      if (config.format == "bintrace" || (config.format == "frames" && config.zstd)) continue;
      CAPTURE(label(config));
      const std::string file = mount_point + "/trace";
      std::vector<std::string> argv = record_args(config, file);
      argv.push_back("--");
      argv.push_back(paths().busybox);
      argv.insert(argv.end(), kEndlessLoop.begin(), kEndlessLoop.end());
      // Record into a 1 MiB tmpfs, then copy what is left out for the readers.
      argv.insert(argv.begin(), {mount_point, dir / "copy"});
      const ProcessResult result = shell(
          "unshare -m sh -c 'mount -t tmpfs -o size=1m tmpfs \"$0\" || exit 99; copy=$1; shift; \"$@\"; "
          "status=$?; cp \"$0/trace\" \"$copy\"; exit $status' \"$@\"",
          argv);
      REQUIRE_MESSAGE(result.status != 99, result.err);
      CHECK_MESSAGE(result.status == 125, result.describe_status() << "\n" << result.err);
      CHECK_MESSAGE(result.err.find("No space left on device") != std::string::npos, result.err);
      std::smatch match;
      REQUIRE_MESSAGE(std::regex_search(result.err, match, names_bytes), result.err);
      CHECK(match[1] == file);
      CHECK(std::stoull(match[2]) == file_size(dir / "copy"));
      check_cut_file_reads(config, dir / "copy");
    }
  }
}

TEST_CASE("Survive: BAP frames encoded on 4 threads, killed by SIGKILL or out of disk, read up to their last frame") {
  TempDir dir("survive-frames-threads");
  const Config& config = kFramesOnThreads;
  std::mt19937 random(kill_delay_seed());
  std::uniform_int_distribution<int> delay_ms(100, 400);
  for (int round = 0; round < 2; ++round) {
    const int delay = delay_ms(random);
    CAPTURE(delay);
    const std::string file = dir / ("killed." + std::to_string(round));
    std::vector<std::string> argv = {"/usr/bin/timeout", "-s", "KILL", std::to_string(delay / 1000.0)};
    for (const auto& arg : record_args(config, file)) argv.push_back(arg);
    argv.insert(argv.end(), {"--", paths().busybox});
    argv.insert(argv.end(), kEndlessLoop.begin(), kEndlessLoop.end());
    const ProcessResult result = shell("exec \"$@\"", argv);
    CHECK_MESSAGE(result.status == 137, result.describe_status());
    if (!is_file(file)) {
      MESSAGE("killed before " << file << " was created");
      continue;
    }
    check_cut_file_reads(config, file);
    std::remove(file.c_str());
  }
  // A file size limit: write() fails with EFBIG, the error names the file and
  // the bytes written, and what was written reads up to its last frame.
  const std::uint64_t kLimit = 256 << 10;
  const std::string file = dir / "limited";
  const SizeLimitedRun run = record_loop_past_size_limit(config, file, kLimit);
  CHECK(run.written == file_size(file));
  CHECK(file_size(file) <= kLimit);
  check_cut_file_reads(config, file);
}

}  // namespace tracecorn::behaviour
