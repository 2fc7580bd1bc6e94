// Role: the emulated side of the unwinder's stack tests: runs a guest program
// in-process (LinuxProcess, its stdout on /dev/null) and walks the stack at
// every syscall entry with each method of kMethods (auto, cfi, sframe, fp),
// keeping each frame's pc, its (module, offset) text and the method that found it
// (a signal trampoline's frame, the one before a FrameSource::kSignalFrame
// frame, is "<signal handler called> MODULE OFFSET", as gdb_syscall_stacks.py
// prints gdb's); and the native side: gdb's stacks at every syscall
// (gdb_syscall_stacks.py).
// Who calls it: tests/recorder/unwind/stacks_test.cpp (x86-64, against gdb)
// and cross_stacks_test.cpp (other architectures, against gdb-multiarch), on
// the doctest thread.
// Invariants: header-only; stdout is redirected only for the run and restored
// after it; a program that cannot be loaded fails the calling test (REQUIRE).
#pragma once

#include <doctest/doctest.h>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "recorder/core/guest_stacks.h"
#include "recorder/linux/linux_process.h"
#include "tests/recorder/unwind/unwind_test_support.h"

namespace tracecorn::unwind::test {

struct SyscallStack {
  std::uint64_t number = 0;
  std::vector<std::string> frames;  // "libc.so.6 f8350"
  std::vector<unwind::FrameSource> sources;
  std::vector<std::uint64_t> pcs;  // each frame's pc (the in-process walks only)
};

inline std::string frame_text(const std::string& module, std::uint64_t offset) {
  std::ostringstream out;
  out << (module.empty() ? "?" : std::filesystem::path(module).filename().string()) << " " << std::hex << offset;
  return out.str();
}

// Modules by lowest start, as the gdb side names them.
struct ModuleMap {
  std::map<std::string, std::uint64_t> lowest;  // path -> lowest start
  std::vector<std::tuple<std::uint64_t, std::uint64_t, std::string>> ranges;
  void add(std::uint64_t start, std::uint64_t end, const std::string& path) {
    auto [it, inserted] = lowest.emplace(path, start);
    if (!inserted) it->second = std::min(it->second, start);
    ranges.emplace_back(start, end, path);
  }
  std::string describe(std::uint64_t pc) const {
    for (auto it = ranges.rbegin(); it != ranges.rend(); ++it) {
      const auto& [start, end, path] = *it;
      if (pc >= start && pc < end) return frame_text(path, pc - lowest.at(path));
    }
    return frame_text("", pc);
  }
};

// Runs `program` emulated and walks the stack at every syscall with each method.
class StackProbe final : public linux_layer::ProcessObserver {
 public:
  explicit StackProbe(std::vector<core::GuestStacks*> walkers) : walkers_(std::move(walkers)), stacks_(walkers_.size()) {}
  void on_syscall_enter(std::uint64_t pc, std::uint64_t number) noexcept override {
    for (std::size_t w = 0; w < walkers_.size(); ++w) {
      std::vector<unwind::StackFrame> frames(128);
      const auto result = walkers_[w]->walk(pc, frames);
      SyscallStack stack;
      stack.number = number;
      for (std::size_t i = 0; i < result.depth; ++i) {
        const bool trampoline = i + 1 < result.depth && frames[i + 1].source == unwind::FrameSource::kSignalFrame;
        stack.frames.push_back((trampoline ? "<signal handler called> " : "") + modules_.describe(frames[i].pc));
        stack.sources.push_back(frames[i].source);
        stack.pcs.push_back(frames[i].pc);
      }
      stacks_[w].push_back(std::move(stack));
    }
  }
  void on_memory_written(std::uint64_t, std::span<const std::uint8_t>) noexcept override {}
  void on_mapping_changed(const events::MappingEffect& change) noexcept override {
    if (change.kind == events::MappingChangeKind::kUnmap)
      for (auto* walker : walkers_) walker->unmapped(change.start.value, change.length);
  }
  void on_syscall(std::uint64_t, std::uint64_t, arch::SyscallId, const std::uint64_t (&)[6],
                  std::int64_t) noexcept override {}
  void on_module_loaded(std::uint64_t start, std::uint64_t end, std::uint64_t bias,
                        std::string_view path) noexcept override {
    for (auto* walker : walkers_) walker->module_loaded(start, end, bias, path);
    modules_.add(start, end, std::string(path));
  }
  const std::vector<SyscallStack>& stacks(std::size_t walker) const { return stacks_[walker]; }

 private:
  std::vector<core::GuestStacks*> walkers_;
  std::vector<std::vector<SyscallStack>> stacks_;
  ModuleMap modules_;
};

inline const std::vector<unwind::UnwindMethod> kMethods = {unwind::UnwindMethod::kAuto, unwind::UnwindMethod::kCfi,
                                                            unwind::UnwindMethod::kSFrame,
                                                            unwind::UnwindMethod::kFramePointer};

inline std::vector<std::vector<SyscallStack>> emulated_stacks(const std::string& program) {
  linux_layer::ProcessConfig config;
  config.program = program;
  config.argv = {program};
  config.envp = {"LC_ALL=C"};
  config.diagnostics = nullptr;
  // The guest's stdout is /dev/null, as in the gdb run (stdio asks the
  // terminal only when it is one, which changes the syscalls).
  std::fflush(stdout);
  const int saved_stdout = ::dup(1);
  const int null = ::open("/dev/null", O_WRONLY);
  ::dup2(null, 1);
  auto process = linux_layer::LinuxProcess::create(config);
  std::vector<std::unique_ptr<core::GuestStacks>> owned;
  std::vector<core::GuestStacks*> walkers;
  REQUIRE(process.has_value());
  for (unwind::UnwindMethod method : kMethods) {
    auto stacks = core::GuestStacks::create((*process)->engine(), (*process)->arch(), method);
    REQUIRE(stacks.has_value());
    walkers.push_back(stacks->get());
    owned.push_back(std::move(*stacks));
  }
  StackProbe probe(walkers);
  (*process)->set_observer(&probe);
  const auto outcome = (*process)->run();
  (*process)->set_observer(nullptr);
  process->reset();  // closes the guest's copy of stdout before ours comes back
  ::dup2(saved_stdout, 1);
  ::close(saved_stdout);
  ::close(null);
  CHECK(outcome.kind == linux_layer::RunOutcome::Kind::kExited);
  std::vector<std::vector<SyscallStack>> result;
  for (std::size_t w = 0; w < kMethods.size(); ++w) result.push_back(probe.stacks(w));
  return result;
}

// gdb's stack at every syscall entry of `program` run natively
// (gdb_syscall_stacks.py: catch syscall, backtrace past main and entry), as
// (module, offset) texts.
inline std::vector<SyscallStack> gdb_syscall_stacks(const std::string& program) {
  const std::string script = std::string(TRACECORN_UNWIND_TEST_DIR) + "/gdb_syscall_stacks.py";
  const std::string output = run_tool("gdb -batch -nx -x '" + script + "' --args '" + program + "' 2>/dev/null");
  std::vector<SyscallStack> stacks;
  std::istringstream in(output);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("syscall ", 0) == 0) {
      stacks.push_back({std::stoull(line.substr(8)), {}, {}, {}});
    } else if (line.rfind("frame ", 0) == 0 && !stacks.empty()) {
      stacks.back().frames.push_back(line.substr(6));
    }
  }
  // No FDE covers ld.so's entry point (_start/_dl_start_user): gdb's heuristic
  // unwinder then walks on into the words above the initial stack pointer
  // (argc, argv[0], NULL), which lie in no module. Those are not frames.
  for (auto& stack : stacks)
    while (!stack.frames.empty() && stack.frames.back().rfind("? ", 0) == 0) stack.frames.pop_back();
  return stacks;
}

// How many frames of `stacks` each method found (under auto: SFrame for the
// functions a module's .sframe covers, CFI elsewhere); the checks every
// variant makes: CFI (or on arm EHABI) found some, frame pointers none, SFrame some exactly when
// the program has .sframe.
struct SourceCounts {
  std::size_t sframe = 0, cfi = 0, fp = 0, ehabi = 0, prologue = 0;
};
inline SourceCounts check_frame_sources(const std::vector<SyscallStack>& stacks, bool expect_sframe) {
  SourceCounts counts;
  for (const auto& stack : stacks) {
    for (const auto source : stack.sources) {
      counts.sframe += source == unwind::FrameSource::kSFrame;
      counts.cfi += source == unwind::FrameSource::kCfi;
      counts.fp += source == unwind::FrameSource::kFramePointer;
      counts.ehabi += source == unwind::FrameSource::kEhabi;
      counts.prologue += source == unwind::FrameSource::kPrologue;
    }
  }
  CHECK(counts.cfi + counts.ehabi > 0);  // arm: EHABI is its CFI
  CHECK(counts.fp == 0);
  if (expect_sframe)
    CHECK(counts.sframe > 0);
  else
    CHECK(counts.sframe == 0);
  return counts;
}

}  // namespace tracecorn::unwind::test
