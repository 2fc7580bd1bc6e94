// Role: `tracecorn record --format text` as a user runs it, on sample programs:
// the guest behaves as under `run`, the trace is complete, instruction counts
// agree with `run --stats`, syscalls agree with --syscall-log, and the filters
// (--only-main, --range, --start-at, --stop-at, --stop-after) and the flight
// recorder do what they say. Addresses come from `nm` on the sample binaries.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "harness.h"
#include "tests/support/architectures.h"

namespace tracecorn::behaviour {
namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

ProcessResult tracecorn_cli(std::vector<std::string> args) {
  ProcessSpec spec;
  spec.argv = {paths().tracecorn};
  spec.argv.insert(spec.argv.end(), args.begin(), args.end());
  spec.env = base_env();
  spec.timeout = run_timeout();
  return run_process(spec);
}

std::string sample(const std::string& variant, const std::string& name) {
  return paths().samples_binary + "/" + variant + "/" + name;
}

// Address of `symbol` in `binary` (nm), as printed: 0x-less hex.
std::uint64_t symbol_address(const std::string& binary, const std::string& symbol) {
  ProcessSpec nm;
  nm.argv = {"/usr/bin/nm", binary};
  nm.env = base_env();
  const ProcessResult result = run_process(nm);
  std::smatch match;
  const std::regex line("([0-9a-f]+) [Tt] " + symbol + "\n");
  REQUIRE_MESSAGE(std::regex_search(result.out, match, line), "no symbol " << symbol << " in " << binary);
  return std::stoull(match[1], nullptr, 16);
}

std::vector<std::uint64_t> addresses_of(const std::string& trace, const std::string& kind) {
  std::vector<std::uint64_t> found;
  std::istringstream lines(trace);
  std::string line;
  const std::string marker = " " + kind + " 0x";
  while (std::getline(lines, line)) {
    const auto at = line.find(marker);
    if (line[0] == '#' && at != std::string::npos && at < 12)
      found.push_back(std::stoull(line.substr(at + marker.size()), nullptr, 16));
  }
  return found;
}

std::uint64_t run_stats_instructions(const std::string& binary) {
  const ProcessResult run = tracecorn_cli({"run", "--stats", "--", binary});
  std::smatch match;
  REQUIRE(std::regex_search(run.err, match, std::regex("tracecorn: ([0-9]+) instructions")));
  return std::stoull(match[1]);
}

}  // namespace

TEST_CASE("Record: every level leaves the guest's behaviour alone and writes a complete trace") {
  TempDir dir("record-levels");
  const std::string binary = sample("static", "hello");
  const std::uint64_t instructions = run_stats_instructions(binary);
  for (const std::string level : {"blocks", "insns", "mem", "regs", "full"}) {
    CAPTURE(level);
    const std::string trace_path = dir / (level + ".txt");
    const ProcessResult result = tracecorn_cli({"record", "--level", level, "-o", trace_path, "--", binary});
    CHECK(result.status == 3);
    CHECK(result.out == "hello from a tracecorn guest\n");
    CHECK(drop_tracecorn_lines(result.err) == "hello on stderr\n");
    const std::string trace = slurp(trace_path);
    CHECK(trace.rfind("# tracecorn text trace: arch x86_64, level " + level, 0) == 0);
    std::smatch end;
    REQUIRE(std::regex_search(trace, end, std::regex("# end: ([0-9]+) events, ([0-9]+) instructions, 0 lost\n$")));
    CHECK(std::stoull(end[2]) == instructions);
    if (level != "blocks") CHECK(addresses_of(trace, "insn").size() == instructions);
    CHECK(trace.find(" exit status 3\n") != std::string::npos);
    if (level == "mem" || level == "full") CHECK(trace.find(" write 0x") != std::string::npos);
    if (level == "regs" || level == "full") CHECK(trace.find(" regs 0x") != std::string::npos);
  }
}

TEST_CASE("Record: the syscalls in the trace are the ones --syscall-log names") {
  TempDir dir("record-syscalls");
  const std::string binary = sample("dynamic", "file_io");
  const ProcessResult result = tracecorn_cli({"record", "-o", dir / "trace.txt", "--syscall-log", dir / "log.txt", "--",
                                              binary, dir.path()});
  CHECK(result.status == 0);
  std::vector<std::string> from_trace, from_log;
  std::istringstream trace(slurp(dir / "trace.txt")), log(slurp(dir / "log.txt"));
  std::string line;
  const std::regex syscall_line("^#[0-9]+ syscall 0x[0-9a-f]+ ([a-z0-9_]+)\\(");
  while (std::getline(trace, line)) {
    std::smatch match;
    if (std::regex_search(line, match, syscall_line)) from_trace.push_back(match[1]);
  }
  while (std::getline(log, line)) from_log.push_back(line.substr(0, line.find('(')));
  CHECK(from_trace.size() > 20);
  CHECK(from_trace == from_log);
}

TEST_CASE("Record: an i386 program is refused by the binary trace (no machine there) and recorded as text") {
  TempDir dir("record-i386");
  const std::string binary = cross_samples_binary("i386") + "/static/hello";
  const ProcessResult refused =
      tracecorn_cli({"record", "--format", "bintrace", "--level", "full", "-o", dir / "t.bt", "--", binary});
  CHECK(refused.status == 125);
  CHECK(refused.err.find("binary trace has no machine description for i386") != std::string::npos);
  CHECK(!std::ifstream(dir / "t.bt").good());
  const ProcessResult text = tracecorn_cli({"record", "--level", "regs", "-o", dir / "t.txt", "--", binary});
  CHECK(text.status == 3);  // hello's own status
  CHECK(slurp(dir / "t.txt").rfind("# tracecorn text trace: arch i386, level regs", 0) == 0);
}

// riscv64: Capstone 4 has no RISC-V; arch/riscv64.cpp decodes for the
// recorder and Debian's libLLVM-14 disassembles for the text format. BAP
// frames and binary trace v1.0 have no id for it: each refuses, naming it.
// UCIR's arch string is free ("such as ..." in the spec) and usercorn has no
// RISC-V: tracecorn writes "riscv64", and its own tools read it back (dump
// names it and disassembles every instruction, stat counts what run counts).
TEST_CASE("Record: a riscv64 program is refused by BAP frames and binary trace, recorded in UCIR and as text") {
  TempDir dir("record-riscv64");
  const std::string binary = cross_samples_binary("riscv64") + "/static/hello";
  const std::vector<std::pair<std::string, std::string>> refusals = {
      {"frames", "bap-frames has no architecture id for riscv64"},
      {"bintrace", "binary trace has no machine description for riscv64"}};
  for (const auto& refusal : refusals) {
    const std::string& format = refusal.first;
    const std::string& message = refusal.second;
    CAPTURE(format);
    const ProcessResult refused =
        tracecorn_cli({"record", "--format", format, "--level", "full", "-o", dir / "refused", "--", binary});
    CHECK(refused.status == 125);
    CHECK_MESSAGE(refused.err.find(message) != std::string::npos, refused.err);
    CHECK(!std::ifstream(dir / "refused").good());
  }
  const std::uint64_t instructions = run_stats_instructions(binary);
  for (const std::string level : {"blocks", "full"}) {
    CAPTURE(level);
    const ProcessResult ucir =
        tracecorn_cli({"record", "--format", "ucir", "--level", level, "-o", dir / "t.ucir", "--", binary});
    CHECK(ucir.status == 3);  // hello's own status
    const ProcessResult dump = tracecorn_cli({"dump", dir / "t.ucir"});
    REQUIRE(dump.status == 0);
    CHECK(dump.out.find("# UCIR version 0, arch riscv64, os linux") == 0);
    if (level == "full") {
      CHECK(addresses_of(dump.out, "insn").size() == instructions);
      CHECK(dump.out.find(".insn") == std::string::npos);  // every one disassembled
    }
    const ProcessResult stat = tracecorn_cli({"stat", dir / "t.ucir"});
    std::smatch counts;
    REQUIRE(std::regex_search(stat.out, counts, std::regex("\n([0-9]+) events, ([0-9]+) instructions")));
    CHECK(std::stoull(counts[2]) == instructions);
  }
  for (const std::string level : {"blocks", "insns", "mem", "regs", "full"}) {
    CAPTURE(level);
    const ProcessResult text = tracecorn_cli({"record", "--level", level, "-o", dir / "t.txt", "--", binary});
    CHECK(text.status == 3);  // hello's own status
    const std::string trace = slurp(dir / "t.txt");
    CHECK(trace.rfind("# tracecorn text trace: arch riscv64, level " + level, 0) == 0);
    std::smatch end;
    REQUIRE(std::regex_search(trace, end, std::regex("# end: ([0-9]+) events, ([0-9]+) instructions, 0 lost\n$")));
    CHECK(std::stoull(end[2]) == instructions);
    if (level != "blocks") CHECK(addresses_of(trace, "insn").size() == instructions);
  }
}

namespace {

// One instruction's text split into mnemonic and operands, comments (objdump's
// "# 77bb8 <__global_pointer$>") and symbol annotations ("<load_gp>") dropped.
struct Disassembly {
  std::string mnemonic;
  std::vector<std::string> operands;
};
Disassembly split_disassembly(const std::string& text) {
  Disassembly out;
  std::string body = text.substr(0, text.find('#'));
  if (const auto symbol = body.find('<'); symbol != std::string::npos) body.erase(symbol);
  std::istringstream words(body);
  words >> out.mnemonic;
  std::string rest, operand;
  std::getline(words, rest);
  std::istringstream operands(rest);
  while (std::getline(operands, operand, ',')) {
    std::erase_if(operand, [](char c) { return c == ' ' || c == '\t'; });
    if (!operand.empty()) out.operands.push_back(operand);
  }
  return out;
}
std::optional<std::int64_t> integer(const std::string& text, int base) {
  if (text.empty()) return std::nullopt;
  char* end = nullptr;
  const std::int64_t value = std::strtoll(text.c_str(), &end, base);
  return *end == '\0' ? std::optional(value) : std::nullopt;
}

// Whether LLVM's text `ours` for the instruction at `address` is the
// instruction objdump's text names: the same mnemonic (binutils 2.40 spells
// immediate forms without their i: "add gp,gp,1554" for addi, "sll" for slli,
// "addw" for addiw; "zext.b" for andi ...,255), the same registers, the same
// immediate values (objdump prints lui/auipc/shift amounts in hex), and the
// same branch targets (LLVM prints the offset, objdump the address).
bool same_instruction(std::uint64_t address, const std::string& ours, const std::string& objdump) {
  Disassembly a = split_disassembly(ours), b = split_disassembly(objdump);
  if (a.mnemonic == "andi" && b.mnemonic == "zext.b" && a.operands.size() == 3 && a.operands[2] == "255") {
    a.operands.pop_back();
    a.mnemonic = b.mnemonic;
  }
  auto without_i = [](std::string mnemonic) {  // addi -> add, addiw -> addw
    const bool w = mnemonic.size() > 2 && mnemonic.back() == 'w';
    if (w) mnemonic.pop_back();
    if (!mnemonic.empty() && mnemonic.back() == 'i') mnemonic.pop_back();
    return w ? mnemonic + "w" : mnemonic;
  };
  if (a.mnemonic != b.mnemonic && without_i(a.mnemonic) != b.mnemonic) return false;
  if (a.operands.size() != b.operands.size()) return false;
  const bool branch = a.mnemonic[0] == 'b' || a.mnemonic == "j" || a.mnemonic == "jal";
  for (std::size_t i = 0; i < a.operands.size(); ++i) {
    if (a.operands[i] == b.operands[i]) continue;
    const auto x = integer(a.operands[i], 10), y = integer(b.operands[i], branch ? 16 : 0);
    if (!x || !y) return false;
    if (branch ? address + static_cast<std::uint64_t>(*x) != static_cast<std::uint64_t>(*y) : *x != *y) return false;
  }
  return true;
}

}  // namespace

// `tracecorn run --stats` counts with one block hook (recorder/engine/
// instruction_counter.h), `record` through the recorder's levels (whose counts
// the unit tests check against a UC_HOOK_CODE count). The same program with
// the same argv, environment and stdout gives the same count: a guest's count
// itself moves with those (glibc's string functions take other paths for
// other string lengths and alignments; a character-device stdout costs an
// isatty ioctl: heap on riscv64 runs 75 instructions more with stdout on
// /dev/null than on a pipe), which is why counts taken from different shells
// disagreed. A fault ends the run inside a block: run counts the instructions
// before the faulting one, as record's instruction levels do (arm and mips
// report the faulting block's start: arch::GuestCpu::locate_faulting_instruction).
TEST_CASE("Record: run --stats counts the instructions record counts, on long runs and on faults, every architecture") {
  TempDir dir("record-counts");
  auto counted = [](const ProcessResult& result) {
    std::smatch match;
    REQUIRE_MESSAGE(std::regex_search(result.err, match, std::regex("tracecorn: ([0-9]+) instructions, ")), result.err);
    return std::stoull(match[1]);
  };
  std::vector<std::string> faulting;  // every architecture's static segfault (tests/support/architectures.h)
  for (const test_support::GuestArchitecture& architecture : test_support::kGuestArchitectures)
    faulting.push_back(architecture.is_host ? sample("static", "segfault")
                                            : cross_samples_binary(std::string(architecture.name)) + "/static/segfault");
  for (const auto& binary : faulting) {
    CAPTURE(binary);
    const ProcessResult run = tracecorn_cli({"run", "--stats", "--", binary});
    CHECK(run.status == 139);
    const ProcessResult record =
        tracecorn_cli({"record", "--format", "null", "--level", "insns", "--stats", "--", binary});
    CHECK(counted(run) == counted(record));
  }
  // Long runs (38 and 42 million instructions), also through a UCIR file and `stat`.
  // (A deliberate selection of tests/support/architectures.h's rows, bounding the time.)
  constexpr auto kLongRunArchitectures = test_support::guest_architectures({"aarch64", "riscv64"});
  for (const test_support::GuestArchitecture* architecture : kLongRunArchitectures) {
    const std::string binary = cross_samples_binary(std::string(architecture->name)) + "/static/heap";
    CAPTURE(binary);
    const ProcessResult run = tracecorn_cli({"run", "--stats", "--", binary});
    REQUIRE(run.status == 0);
    const ProcessResult record = tracecorn_cli(
        {"record", "--format", "ucir", "--level", "blocks", "--stats", "-o", dir / "heap.ucir", "--", binary});
    REQUIRE(record.status == 0);
    CHECK(record.out == run.out);
    CHECK(counted(run) > 30'000'000);
    CHECK(counted(run) == counted(record));
    const ProcessResult stat = tracecorn_cli({"stat", dir / "heap.ucir"});
    std::smatch counts;
    REQUIRE(std::regex_search(stat.out, counts, std::regex("\n([0-9]+) events, ([0-9]+) instructions")));
    CHECK(std::stoull(counts[2]) == counted(run));
  }
}

TEST_CASE("Record: riscv64 text traces disassemble every executed instruction as objdump does (LLVM's disassembler)") {
  TempDir dir("record-riscv64-text");
  for (const std::string name : {"floating", "file_io", "dup_pipe"}) {
    CAPTURE(name);
    const std::string binary = cross_samples_binary("riscv64") + "/static/" + name;
    const ProcessResult text =
        tracecorn_cli({"record", "--level", "insns", "-o", dir / "t.txt", "--", binary, dir.path()});
    CHECK(text.err.find("tracecorn:") == std::string::npos);
    ProcessSpec objdump;
    objdump.argv = {"/usr/bin/riscv64-linux-gnu-objdump", "-d", "--no-show-raw-insn", binary};
    objdump.env = base_env();
    const ProcessResult listing = run_process(objdump);
    REQUIRE(listing.status == 0);
    // objdump's "   105a6:<TAB>auipc<TAB>gp,0x67" lines, parsed by hand (std::regex
    // takes ~15 s over the 200,000 lines of a trace here).
    std::map<std::uint64_t, std::string> reference;
    std::istringstream lines(listing.out);
    std::string line;
    while (std::getline(lines, line)) {
      const auto colon = line.find(":\t");
      const auto start = line.find_first_not_of(' ');
      if (line.empty() || line[0] != ' ' || colon == std::string::npos || start >= colon) continue;
      const std::string address = line.substr(start, colon - start);
      if (address.find_first_not_of("0123456789abcdef") != std::string::npos) continue;
      reference[std::stoull(address, nullptr, 16)] = line.substr(colon + 2);
    }
    REQUIRE(reference.size() > 10000);
    // The trace's "#N insn 0xADDR TEXT" lines.
    std::istringstream trace(slurp(dir / "t.txt"));
    std::set<std::uint64_t> seen;
    std::size_t different = 0;
    while (std::getline(trace, line)) {
      const auto marker = line.find(" insn 0x");
      if (line.empty() || line[0] != '#' || marker == std::string::npos) continue;
      std::size_t used = 0;
      const std::uint64_t address = std::stoull(line.substr(marker + 8), &used, 16);
      const std::string ours = line.substr(std::min(line.size(), marker + 8 + used + 1));
      if (!seen.insert(address).second) continue;
      const auto it = reference.find(address);
      REQUIRE_MESSAGE(it != reference.end(), "no objdump instruction for " << line);
      if (!same_instruction(address, ours, it->second) && ++different <= 10)
        MESSAGE(line << " differs from objdump's " << it->second);
    }
    MESSAGE(name << ": " << seen.size() << " distinct instructions, " << different << " differ from objdump");
    CHECK(seen.size() > 1000);
    CHECK(different == 0);
  }
}

// samples/guest/code_rewrite.c is a tiny JIT: a function that returns a
// constant, in a read-write-execute mapping, called twice, then rewritten in
// place (same address) three times; then the same in a mapping toggled
// between writable and executable with mprotect. The instruction levels
// decode each block once, so they must see the stores into decoded code (a
// write hook over just those pages: recorder/core/code_write_watch.h) and
// decode it again; the trace must show each version where it ran: as text,
// and in UCIR, whose readers decode code from the memory they rebuild and
// which below mem holds none of the guest's stores (the writer gives the
// code of blocks from writable memory: formats/ucir/ucir_writer.h).
TEST_CASE("Record: code a program rewrites in place (a JIT) is recorded as it ran, every architecture") {
  TempDir dir("record-code-rewrite");
  for (const test_support::GuestArchitecture& architecture : test_support::kGuestArchitectures) {
    const std::string binary = architecture.is_host
                                   ? sample("static", "code_rewrite")
                                   : cross_samples_binary(std::string(architecture.name)) + "/static/code_rewrite";
    for (const std::string level : {"insns", "regs"}) {
      for (const std::string format : {"text", "ucir"}) {
        CAPTURE(binary);
        CAPTURE(level);
        CAPTURE(format);
        const std::string trace = dir / ("t." + format);
        const ProcessResult record =
            tracecorn_cli({"record", "--format", format, "--level", level, "-o", trace, "--", binary});
        REQUIRE(record.status == 0);
        CHECK(record.out.find("sum: 310\n") != std::string::npos);
        std::string text = slurp(trace);
        if (format == "ucir") {
          const ProcessResult dump = tracecorn_cli({"dump", trace});  // the same lines as the text trace's
          REQUIRE(dump.status == 0);
          text = dump.out;
        }
        // The instructions recorded at each address, in order; those with more than one text.
        std::map<std::uint64_t, std::vector<std::string>> texts;
        std::istringstream lines(text);
        std::string line;
        const std::regex insn("^#[0-9]+ insn 0x([0-9a-f]+) (.*)$");
        std::smatch match;
        while (std::getline(lines, line))
          if (std::regex_match(line, match, insn)) texts[std::stoull(match[1], nullptr, 16)].push_back(match[2]);
        std::vector<std::vector<std::string>> rewritten;
        for (const auto& [address, seen] : texts)
          if (std::set<std::string>(seen.begin(), seen.end()).size() > 1) rewritten.push_back(seen);
        // By address: the mprotect'ed page (mapped second, below) first, then the read-write-execute one.
        REQUIRE(rewritten.size() == 2);
        const auto& toggled = rewritten[0];
        const auto& in_place = rewritten[1];
        CHECK(toggled.size() == 2);
        REQUIRE(in_place.size() == 8);
        for (std::size_t call = 0; call < 8; call += 2) {
          CHECK(in_place[call] == in_place[call + 1]);               // the two calls of a version
          if (call) CHECK(in_place[call] != in_place[call - 1]);   // and the version before it
        }
      }
    }
  }
}

TEST_CASE("Record: --only-main and --range keep only the chosen code") {
  TempDir dir("record-filters");
  const std::string dynamic = sample("dynamic", "hello");
  tracecorn_cli({"record", "--level", "insns", "--only-main", "-o", dir / "main.txt", "--", dynamic});
  const auto main_insns = addresses_of(slurp(dir / "main.txt"), "insn");
  REQUIRE(main_insns.size() > 10);
  for (const auto address : main_insns) {
    CHECK(address >= 0x555555554000ull);
    CHECK(address < 0x555555560000ull);
  }
  const std::string trace_all = slurp(dir / "main.txt");
  CHECK(trace_all.find(" syscall 0x") != std::string::npos);  // syscalls are always recorded

  const std::string binary = sample("static", "hello");
  const std::uint64_t main_address = symbol_address(binary, "main");
  char range[64];
  std::snprintf(range, sizeof range, "0x%llx-0x%llx", static_cast<unsigned long long>(main_address),
                static_cast<unsigned long long>(main_address + 0x40));
  tracecorn_cli({"record", "--level", "insns", "--range", range, "-o", dir / "range.txt", "--", binary});
  const auto range_insns = addresses_of(slurp(dir / "range.txt"), "insn");
  REQUIRE(!range_insns.empty());
  for (const auto address : range_insns) {
    CHECK(address >= main_address);
    CHECK(address < main_address + 0x40 + 16);  // a block that starts inside may run a little past
  }
}

TEST_CASE("Record: --start-at, --stop-at and --stop-after bound the recording") {
  TempDir dir("record-bounds");
  const std::string binary = sample("static", "hello");
  const std::uint64_t main_address = symbol_address(binary, "main");
  char address[32];
  std::snprintf(address, sizeof address, "0x%llx", static_cast<unsigned long long>(main_address));

  tracecorn_cli({"record", "--level", "insns", "--start-at", address, "-o", dir / "start.txt", "--", binary});
  const auto started = addresses_of(slurp(dir / "start.txt"), "block");
  REQUIRE(!started.empty());
  CHECK(started.front() == main_address);

  const ProcessResult stopped =
      tracecorn_cli({"record", "--level", "insns", "--stop-at", address, "-o", dir / "stop.txt", "--", binary});
  CHECK(stopped.status == 124);
  CHECK(stopped.out.empty());  // main never ran
  const std::string stop_trace = slurp(dir / "stop.txt");
  CHECK(stop_trace.find("# end:") != std::string::npos);
  const auto before_main = addresses_of(stop_trace, "insn");
  REQUIRE(!before_main.empty());
  for (const auto insn : before_main) CHECK(insn != main_address);

  const ProcessResult counted =
      tracecorn_cli({"record", "--level", "insns", "--stop-after", "1000", "-o", dir / "count.txt", "--", binary});
  CHECK(counted.status == 124);
  const auto insns = addresses_of(slurp(dir / "count.txt"), "insn");
  CHECK(insns.size() >= 1000);
  CHECK(insns.size() < 1000 + 512);  // stops at the end of the block that crosses the limit
}

TEST_CASE("Record: the flight recorder writes the last events, ending with the fault") {
  TempDir dir("record-flight");
  const std::string binary = sample("static", "segfault");
  const ProcessResult result = tracecorn_cli({"record", "--level", "insns", "--flight-recorder", "--ring-kib", "64",
                                              "-o", dir / "flight.txt", "--", binary});
  CHECK(result.status == 139);
  const std::string trace = slurp(dir / "flight.txt");
  CHECK(trace.find(" gap ") != std::string::npos);  // the start was overwritten, and says so
  std::smatch fault;
  REQUIRE(std::regex_search(trace, fault, std::regex("#[0-9]+ fault pc (0x[0-9a-f]+) address 0x0 signal 11")));
  // The same pc as the one-line report.
  CHECK(result.err.find("pc " + std::string(fault[1])) != std::string::npos);
  CHECK(trace.find("exit signal 11") != std::string::npos);
}

}  // namespace tracecorn::behaviour

namespace tracecorn::behaviour {

TEST_CASE("Record: SIGINT or SIGTERM finishes the trace, marked interrupted, and exits 128+signal") {
  TempDir dir("record-interrupt");
  for (const std::string signal : {"INT", "TERM"}) {
    CAPTURE(signal);
    ProcessSpec spec;
    spec.argv = {"/usr/bin/timeout", "--preserve-status", "-s", signal, "1", paths().tracecorn, "record",
                 "-o", dir / "trace.txt", "--", paths().busybox, "sh", "-c", "while :; do :; done"};
    spec.env = base_env();
    spec.timeout = run_timeout();
    const ProcessResult result = run_process(spec);
    CHECK(result.status == (signal == "INT" ? 130 : 143));
    CHECK_MESSAGE(result.err.find("tracecorn: interrupted by SIG" + signal) != std::string::npos, result.err);
    const std::string trace = slurp(dir / "trace.txt");
    CHECK(trace.find(", interrupted\n") != std::string::npos);
    CHECK(trace.find("exit signal") != std::string::npos);
  }
  // A UCIR recording interrupted the same way reads back whole.
  ProcessSpec ucir;
  ucir.argv = {"/usr/bin/timeout", "--preserve-status", "-s", "INT", "0.2", paths().tracecorn, "record", "--format",
               "ucir", "-o", dir / "trace.ucir", "--", paths().busybox, "sh", "-c", "while :; do :; done"};
  ucir.env = base_env();
  CHECK(run_process(ucir).status == 130);
  // The dump runs to millions of lines: it goes to a file, and only its last
  // line and its stderr come back.
  ProcessSpec dump;
  dump.argv = {"/bin/sh", "-c", "\"$0\" dump \"$1\" > \"$2\" 2>&1; status=$?; echo warnings: $(grep -c warning \"$2\"); tail -n 1 \"$2\"; exit $status",
               paths().tracecorn, dir / "trace.ucir", dir / "dump.txt"};
  dump.env = base_env();
  dump.timeout = std::chrono::milliseconds(120000);
  const ProcessResult dumped = run_process(dump);
  CHECK_MESSAGE(dumped.status == 0, dumped.describe_status());
  CHECK_MESSAGE(dumped.out.rfind("warnings: 0\n", 0) == 0, dumped.out);
  CHECK_MESSAGE(dumped.out.find("# end:") != std::string::npos, dumped.out);
}

}  // namespace tracecorn::behaviour
