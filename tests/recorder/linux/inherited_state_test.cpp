// Role: unit tests of the exec state (recorder/linux/inherited_state.h): what
// one image hands the next survives the text form byte for byte (arguments
// with newlines, colons and NULs), and a damaged or hostile state file (a
// hidden option names its descriptor) is refused with the field and offset
// named, never half applied, never a crash.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <unistd.h>

#include <random>
#include <string>

#include "recorder/linux/inherited_state.h"

using namespace tracecorn::linux_layer;

namespace {

InheritedState example_state() {
  InheritedState state;
  state.program = "/usr/bin/busybox";
  state.execfn = "/bin/sh";
  state.argv = {"sh", "-c", std::string("echo a\nb:c\0d", 13), ""};
  state.envp = {"PATH=/usr/bin", "EMPTY="};
  state.descriptors = {{0, 11, "/dev/null"}, {5, 12, ""}, {6, 13, "anon_inode:[eventfd]", true},
                       {7, 14, "anon_inode:[signalfd]", false, 7, 1u << 11}};
  state.cwd = "/tmp/a dir";
  state.umask = 027;
  state.ignored_signals = 1u << 12;
  state.blocked_signals = 3;
  state.pending_signals = 1u << 9 | 1u << 11;
  state.pending_origins = {{10, -6, 4242, 1000, 0}, {12, -1, 7, 0, 0xdeadbeefcafe}};
  state.tree_root_pid = 4242;
  state.image_serial = 2;
  state.children = {4250, 4251};
  return state;
}

}  // namespace

TEST_CASE("Exec state: every field survives its text form") {
  const InheritedState state = example_state();
  auto parsed = parse_inherited_state(serialize(state));
  REQUIRE(parsed);
  CHECK(parsed->program == state.program);
  CHECK(parsed->execfn == state.execfn);
  CHECK(parsed->argv == state.argv);
  CHECK(parsed->envp == state.envp);
  REQUIRE(parsed->descriptors.size() == 4);
  CHECK(parsed->descriptors[1].guest_fd == 5);
  CHECK(parsed->descriptors[1].host_fd == 12);
  CHECK(parsed->descriptors[0].guest_path == "/dev/null");
  CHECK(!parsed->descriptors[1].counter_words);
  CHECK(parsed->descriptors[1].signal_fd_of == -1);
  CHECK(parsed->descriptors[2].counter_words);
  CHECK(parsed->descriptors[3].signal_fd_of == 7);
  CHECK(parsed->descriptors[3].signal_mask == 1u << 11);
  REQUIRE(parsed->pending_origins.size() == 2);
  CHECK(parsed->pending_origins[0].signal == 10);
  CHECK(parsed->pending_origins[0].code == -6);
  CHECK(parsed->pending_origins[0].pid == 4242);
  CHECK(parsed->pending_origins[0].uid == 1000);
  CHECK(parsed->pending_origins[1].code == -1);
  CHECK(parsed->pending_origins[1].value == 0xdeadbeefcafe);
  CHECK(parsed->cwd == state.cwd);
  CHECK(parsed->umask == 027);
  CHECK(parsed->ignored_signals == state.ignored_signals);
  CHECK(parsed->blocked_signals == 3);
  CHECK(parsed->pending_signals == state.pending_signals);
  CHECK(parsed->tree_root_pid == 4242);
  CHECK(parsed->image_serial == 2);
  CHECK(parsed->children == state.children);
  // Through a memfd, as an execve passes it.
  auto fd = write_inherited_state(state);
  REQUIRE(fd);
  auto read_back = read_inherited_state(*fd);
  REQUIRE(read_back);
  CHECK(read_back->argv == state.argv);
  CHECK(::fcntl(*fd, F_GETFD) == -1);  // read_inherited_state closed it
}

TEST_CASE("Malicious: damaged exec states are refused with the field named, never half applied") {
  const std::string good = serialize(example_state());
  CHECK(!parse_inherited_state(""));                                     // no program, no argv
  CHECK(!parse_inherited_state("program 3:abc\n"));                      // no argv
  CHECK(!parse_inherited_state("program 99:abc\narg 1:x\n"));            // a length past the end
  CHECK(!parse_inherited_state("program 3:abcarg 1:x\n"));               // no newline after the bytes
  CHECK(!parse_inherited_state("program 3:abc\narg 1:x\numask x\n"));    // not a number
  CHECK(!parse_inherited_state("program 3:abc\narg 1:x\nhost_fd 4\n"));  // a host fd before its fd
  CHECK(!parse_inherited_state("program 3:abc\narg 1:x\nsurprise 1\n"));
  CHECK(!parse_inherited_state("program 3:abc\narg 1:x\nfd_counter 1\n"));    // before any fd
  CHECK(!parse_inherited_state("program 3:abc\narg 1:x\nsig_code 1\n"));      // before its sig
  CHECK(!parse_inherited_state("program 3:abc\narg 1:x\nsig 65\n"));          // no such signal
  CHECK(!parse_inherited_state("program 3:abc\narg 1:x\nfd 3\nfd_signal_of 99999999\n"));
  const auto refused = parse_inherited_state("program 3:abc\narg 1:x\nsurprise 1\n");
  REQUIRE(!refused);
  CHECK(refused.error().to_string().find("surprise") != std::string::npos);
  CHECK(refused.error().offset.has_value());
  // Every cut and every single-byte change of a good state: parsed or refused, never a crash.
  for (std::size_t cut = 0; cut < good.size(); ++cut) (void)parse_inherited_state(good.substr(0, cut));
  std::mt19937 random(7);
  for (int round = 0; round < 2000; ++round) {
    std::string damaged = good;
    damaged[random() % damaged.size()] = static_cast<char>(random());
    (void)parse_inherited_state(damaged);
  }
}
