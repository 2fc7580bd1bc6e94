// Role: Debian 12's busybox-static for arm64, armhf, i386 and mipsel (fetched by
// scripts/fetch_guest_busybox.sh) as real-world AArch64 and ARM/Thumb guest code
// nobody here wrote: each applet run under qemu-<arch>-static and under
// tracecorn with the same argv, environment and stdin must agree (status,
// stdout, stderr).
//
// Invariants: inputs are the deterministic fixtures (fixtures.h), shared
// read-only by both runs; applets that write run in two identically prepared
// directories, whose trees must match afterwards.
#include <cctype>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "fixtures.h"
#include "harness.h"
#include "tests/support/architectures.h"

#ifndef TRACECORN_BEHAVIOUR_GUEST_BUSYBOX_DIR
#error "tests/behaviour/CMakeLists.txt must define TRACECORN_BEHAVIOUR_GUEST_BUSYBOX_DIR"
#endif

namespace tracecorn::behaviour {
namespace {

// A guest architecture's busybox: Debian's busybox-static for the row's
// debian_arch, where scripts/fetch_guest_busybox.sh puts it.
struct GuestBusybox {
  const test_support::GuestArchitecture* row;
  std::string arch() const { return std::string(row->name); }
  // BUSYBOX_<ARCH> (BUSYBOX_AARCH64, BUSYBOX_ARM) overrides where it is.
  std::string path() const {
    std::string variable = "BUSYBOX_";
    for (const char c : row->name) variable += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    const char* value = std::getenv(variable.c_str());
    if (value && *value) return value;
    return TRACECORN_BEHAVIOUR_GUEST_BUSYBOX_DIR "/" + std::string(row->debian_arch) + "/busybox";
  }
};
const GuestBusybox kArm64{&test_support::guest_architecture("aarch64")};

ProcessSpec busybox(const GuestBusybox& guest, const std::vector<std::string>& args, std::string stdin_data = "",
                    std::string cwd = "/") {
  ProcessSpec spec;
  spec.argv = {guest.path()};
  spec.argv.insert(spec.argv.end(), args.begin(), args.end());
  spec.env = base_env();
  spec.stdin_data = std::move(stdin_data);
  spec.cwd = std::move(cwd);
  spec.timeout = run_timeout();
  return spec;
}
ProcessSpec busybox(const std::vector<std::string>& args, std::string stdin_data = "", std::string cwd = "/") {
  return busybox(kArm64, args, std::move(stdin_data), std::move(cwd));
}

void require_tools(const GuestBusybox& guest = kArm64) {
  const std::string missing =
      missing_executable(guest.path(), "run scripts/fetch_guest_busybox.sh " + std::string(guest.row->debian_arch)) +
      missing_executable(qemu_for(guest.arch()), "apt-get install qemu-user-static") +
      missing_executable(paths().tracecorn, "build the tracecorn target");
  REQUIRE_MESSAGE(missing.empty(), missing);
}

// `spec` under qemu-<arch>-static (the reference, with the CPU tracecorn
// emulates) and, with `emulated_cwd` as its directory, under tracecorn.
void check_against_qemu(const ProcessSpec& spec, const std::string& emulated_cwd = "",
                        const GuestBusybox& guest = kArm64) {
  ProcessSpec reference = spec;
  std::vector<std::string> prefix = {qemu_for(guest.arch())};
  for (const auto& option : qemu_cpu_options(guest.arch())) prefix.push_back(option);
  reference.argv.insert(reference.argv.begin(), prefix.begin(), prefix.end());
  ProcessSpec traced = spec;
  if (!emulated_cwd.empty()) traced.cwd = emulated_cwd;
  const ProcessResult expected = without_qemu_messages(run_process(reference));
  const ProcessResult got = run_process(under_tracecorn(traced));
  const std::string diff = compare_runs(reference, expected, got);
  CHECK_MESSAGE(diff.empty(), "(the \"native\" run below is qemu-" << guest.arch() << "-static)\n" << diff);
}

// The memory accesses of a text trace, as "read ADDRESS [SIZE] pc PC" lines
// (values left out: AT_RANDOM and the pid differ between runs).
std::string accesses_of(const std::string& trace_path) {
  std::ifstream in(trace_path);
  std::string line, out;
  const std::regex access("^#[0-9]+ ((read|write) 0x[0-9a-f]+ \\[[0-9]+\\]) = 0x[0-9a-f]+ (pc .*)$");
  std::smatch match;
  while (std::getline(in, line))
    if (std::regex_match(line, match, access)) out += match[1].str() + " " + match[3].str() + "\n";
  return out;
}

}  // namespace

// At the mem level the recorder has no per-instruction hook: it gives each
// access the pc of the instruction its plan says made it (arch/aarch64.cpp's
// count_memory_accesses). The full level's instruction hook knows the pc; the
// two must agree on every access of real code.
TEST_CASE("Busybox aarch64: mem-level accesses carry the pcs the full level sees") {
  require_tools();
  TempDir dir("busybox-arm64-pcs");
  write_file(dir / "payload", payload(4 * 1024));
  std::string traces[2];
  const char* levels[2] = {"mem", "full"};
  for (int i = 0; i < 2; ++i) {
    ProcessSpec record = busybox(kArm64, {"sha256sum", dir / "payload"});
    record.argv.insert(record.argv.begin(), {paths().tracecorn, "record", "--format", "text", "--level", levels[i],
                                             "-o", dir / (std::string(levels[i]) + ".txt"), "--"});
    const ProcessResult result = run_process(record);
    REQUIRE_MESSAGE(result.status == 0, result.describe_status() << "\n" << result.err);
    traces[i] = accesses_of(dir / (std::string(levels[i]) + ".txt"));
  }
  CHECK(traces[0].size() > 200000);  // bytes of text: some thousands of accesses
  CHECK(traces[0].find(" pc ?") == std::string::npos);
  const std::string diff = describe_difference("mem level", traces[0], "full level", traces[1]);
  CHECK_MESSAGE(diff.empty(), diff);
}

TEST_CASE("Busybox aarch64: sha256sum and md5sum") {
  require_tools();
  TempDir dir("busybox-arm64-sums");
  write_file(dir / "payload", payload(1024 * 1024));
  write_file(dir / "empty", "");
  check_against_qemu(busybox({"sha256sum", dir / "payload", dir / "empty"}));
  check_against_qemu(busybox({"md5sum", dir / "payload", dir / "missing"}));
  check_against_qemu(busybox({"sha256sum"}, payload(64 * 1024)));
}

TEST_CASE("Busybox aarch64: text applets") {
  require_tools();
  TempDir dir("busybox-arm64-text");
  write_file(dir / "text", sample_text());
  check_against_qemu(busybox({"echo", "-e", "tab\\there\\nsecond line"}));
  check_against_qemu(busybox({"cat", "-n", dir / "text", "-"}, "from stdin\n"));
  check_against_qemu(busybox({"sort", "-u", dir / "text"}));
  check_against_qemu(busybox({"wc", dir / "text"}));
  check_against_qemu(busybox({"tr", "a-z", "A-Z"}, sample_text()));
  check_against_qemu(busybox({"uname", "-m"}));
}

TEST_CASE("Busybox aarch64: ls and a gzip round trip") {
  require_tools();
  TempDir listing("busybox-arm64-ls");
  prepare_listing_dir(listing.path());
  // -l without -a: ".." is the shared temporary folder, whose times other tests change.
  check_against_qemu(busybox({"ls", "-ln", listing.path(), listing / "beta"}));
  check_against_qemu(busybox({"ls", "-1F", listing.path()}));
  TempDir reference_dir("busybox-arm64-gzip-qemu"), traced_dir("busybox-arm64-gzip");
  for (const auto* dir : {&reference_dir, &traced_dir}) write_file(*dir / "data", payload(200 * 1024));
  for (const std::vector<std::string>& step :
       {std::vector<std::string>{"gzip", "-9", "data"}, {"gunzip", "data.gz"}, {"mkdir", "-p", "a/b"},
        {"cp", "data", "a/b/copy"}, {"rm", "data"}}) {
    CAPTURE(quote_command(step));
    check_against_qemu(busybox(step, "", reference_dir.path()), traced_dir.path());
  }
  const std::string diff = describe_difference("qemu tree", snapshot_tree(reference_dir.path()), "tracecorn tree",
                                               snapshot_tree(traced_dir.path()));
  CHECK_MESSAGE(diff.empty(), "the directories differ after the steps\n" << diff);
}

}  // namespace tracecorn::behaviour

namespace tracecorn::behaviour {

// Applets of `guest`'s busybox, each against qemu (the same argv and stdin);
// cat uses sendfile64 (i386's and arm's busybox).
void check_applets(const GuestBusybox& guest) {
  require_tools(guest);
  TempDir dir("busybox-" + std::string(guest.row->debian_arch));
  write_file(dir / "payload", payload(512 * 1024));
  write_file(dir / "text", sample_text());
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"sha256sum", dir / "payload", dir / "missing"}, {"md5sum", dir / "payload"},
        {"sort", "-u", dir / "text"}, {"wc", dir / "text"}, {"uname", "-m"}, {"ls", "-ln", dir.path()},
        {"id", "-u"}, {"cat", dir / "text"}}) {
    CAPTURE(quote_command(args));
    check_against_qemu(busybox(guest, args), "", guest);
  }
  check_against_qemu(busybox(guest, {"tr", "a-z", "A-Z"}, sample_text()), "", guest);
}

// The other architectures Debian 12 ships a busybox-static for (scripts/test.sh
// fetches them), aarch64 apart (its cases above go further); Debian 12 has no
// riscv64 port and no big-endian mips. arm's busybox is Thumb code.
constexpr auto kAppletArchitectures = test_support::guest_architectures({"arm", "i386", "mipsel"});

TEST_CASE("Busybox cross: applets of Debian's busybox of each other architecture against qemu-<arch>-static") {
  for (const test_support::GuestArchitecture* architecture : kAppletArchitectures) {
    const std::string arch(architecture->name);
    SUBCASE(arch.c_str()) { check_applets(GuestBusybox{architecture}); }
  }
}

}  // namespace tracecorn::behaviour
