// Role: the unwinder benchmark (issue 7: "stacks per second for 10-frame
// stacks with a warm cache", target >= 1 million/s). It runs a sample guest
// (nested_calls, which recurses 10 deep before a write) under tracecorn's
// Linux layer until the syscall made from the deepest frame, snapshots the
// registers and the whole stack mapping there, and then times
// Unwinder::unwind over that snapshot, 10 frames a stack, for each method that
// can walk it. It prints stacks/s and frames/s with the machine and commit.
//
// Who runs it: a person, by hand (`unwind_bench [--iterations N]`); not a
// ctest test. Single threaded.
//
// Invariants: the guest run, the snapshot and a first (cold) walk happen
// outside the timed part; every timed walk must return exactly 10 frames, the
// same as the first walk (checked after timing: a mismatch exits 1); the
// unwinder reads the snapshot through a MemoryReader (a bounds check and a
// memcpy), as it reads a live guest through uc_mem_read when recording.
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "bench_machine.h"
#include "recorder/core/guest_stacks.h"
#include "recorder/linux/linux_process.h"
#include "recorder/unwind/unwinder.h"

namespace {

using namespace tracecorn;

struct Module {
  std::uint64_t start, end, bias;
  std::string path;
};

// The guest's state at one syscall: registers and the stack mapping's bytes.
struct Snapshot {
  unwind::RegisterSet registers;
  std::uint64_t stack_base = 0;
  std::vector<std::uint8_t> stack;
  std::vector<Module> modules;
  bool taken = false;
};

class SnapshotMemory final : public unwind::MemoryReader {
 public:
  explicit SnapshotMemory(const Snapshot& snapshot) : snapshot_(snapshot) {}
  bool read(std::uint64_t address, void* out, std::size_t size) noexcept override {
    if (address < snapshot_.stack_base || address - snapshot_.stack_base > snapshot_.stack.size() ||
        size > snapshot_.stack.size() - (address - snapshot_.stack_base))
      return false;
    std::memcpy(out, snapshot_.stack.data() + (address - snapshot_.stack_base), size);
    return true;
  }

 private:
  const Snapshot& snapshot_;
};

// Takes the snapshot at the first syscall whose stack is at least `depth` frames deep.
class Snapshooter final : public linux_layer::ProcessObserver {
 public:
  Snapshooter(uc_engine* engine, const arch::ArchInfo& arch, core::GuestStacks& stacks, std::size_t depth)
      : engine_(engine), arch_(arch), stacks_(stacks), depth_(depth) {}
  void on_syscall_enter(std::uint64_t pc, std::uint64_t) noexcept override {
    if (snapshot.taken) return;
    std::vector<unwind::StackFrame> frames(64);
    if (stacks_.walk(pc, frames).depth < depth_) return;
    snapshot.taken = true;
    for (const auto& reg : arch_.registers) {
      if (reg.dwarf < 0 || reg.dwarf >= static_cast<int>(unwind::kMaxRegisters) || reg.size > 8) continue;
      std::uint64_t value = 0;
      uc_reg_read(engine_, reg.uc_id, &value);
      snapshot.registers.set(static_cast<unsigned>(reg.dwarf), value);
    }
    auto config = core::unwinder_config_for(arch_);
    snapshot.registers.set(config->pc_register, pc + arch_.syscall_abi.trap_length);
    const std::uint64_t sp = snapshot.registers.value[config->sp_register];
    snapshot.stack_base = sp & ~std::uint64_t{0xfff};
    snapshot.stack.resize(arch_.layout.stack_top - snapshot.stack_base);
    uc_mem_read(engine_, snapshot.stack_base, snapshot.stack.data(), snapshot.stack.size());
  }
  void on_memory_written(std::uint64_t, std::span<const std::uint8_t>) noexcept override {}
  void on_mapping_changed(const events::MappingEffect& change) noexcept override {
    if (change.kind == events::MappingChangeKind::kUnmap) stacks_.unmapped(change.start.value, change.length);
  }
  void on_syscall(std::uint64_t, std::uint64_t, arch::SyscallId, const std::uint64_t (&)[6],
                  std::int64_t) noexcept override {}
  void on_module_loaded(std::uint64_t start, std::uint64_t end, std::uint64_t bias,
                        std::string_view path) noexcept override {
    stacks_.module_loaded(start, end, bias, path);
    if (!snapshot.taken) snapshot.modules.push_back({start, end, bias, std::string(path)});
  }
  Snapshot snapshot;

 private:
  uc_engine* engine_;
  const arch::ArchInfo& arch_;
  core::GuestStacks& stacks_;
  std::size_t depth_;
};

constexpr std::size_t kDepth = 10;

// Returns false when a timed walk differed from the cold one.
bool bench_one(const char* label, const std::string& program, unwind::UnwindMethod method, std::uint64_t iterations) {
  linux_layer::ProcessConfig config;
  config.program = program;
  config.argv = {program};
  config.diagnostics = nullptr;
  // The guest's output is not the benchmark's: its stdout is /dev/null.
  std::fflush(stdout);
  const int saved_stdout = ::dup(1);
  const int null = ::open("/dev/null", O_WRONLY);
  ::dup2(null, 1);
  auto process = linux_layer::LinuxProcess::create(config);
  if (!process) {
    std::fprintf(stderr, "%s: %s\n", program.c_str(), process.error().to_string().c_str());
    std::exit(2);
  }
  auto stacks = core::GuestStacks::create((*process)->engine(), (*process)->arch(), unwind::UnwindMethod::kAuto);
  Snapshooter shooter((*process)->engine(), (*process)->arch(), **stacks, 14);
  (*process)->set_observer(&shooter);
  (*process)->run();
  (*process)->set_observer(nullptr);
  ::dup2(saved_stdout, 1);
  ::close(saved_stdout);
  ::close(null);
  const Snapshot& snapshot = shooter.snapshot;
  if (!snapshot.taken) {
    std::fprintf(stderr, "%s: no syscall with a deep enough stack\n", program.c_str());
    std::exit(2);
  }
  // A fresh unwinder over the snapshot, with the same modules.
  unwind::Unwinder unwinder(*core::unwinder_config_for((*process)->arch()));
  for (const auto& module : snapshot.modules) (void)unwinder.add_module(module.start, module.end, module.bias, module.path);
  SnapshotMemory memory(snapshot);
  unwind::StackFrame cold[kDepth], frames[kDepth];
  const auto first = unwinder.unwind(snapshot.registers, memory, method, unwind::FirstFrame::kAfterTrap, cold);
  std::size_t sources[4] = {};
  for (std::size_t i = 1; i < first.depth; ++i) ++sources[static_cast<int>(cold[i].source)];
  bool same = first.depth == kDepth;
  const auto start = std::chrono::steady_clock::now();
  std::uint64_t checksum = 0;
  for (std::uint64_t i = 0; i < iterations; ++i) {
    const auto result = unwinder.unwind(snapshot.registers, memory, method, unwind::FirstFrame::kAfterTrap, frames);
    checksum += result.depth + frames[kDepth - 1].pc;
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  same = same && checksum == iterations * (kDepth + cold[kDepth - 1].pc);
  for (std::size_t i = 0; i < kDepth; ++i) same = same && frames[i].pc == cold[i].pc;
  const double stacks_per_second = static_cast<double>(iterations) / seconds;
  std::printf("%-34s %-6s %9.2f M stacks/s %7.1f ns/stack %6.1f ns/frame  (frames by sframe %zu, cfi %zu, fp %zu)%s\n",
              label, std::string(unwind::unwind_method_name(method)).c_str(), stacks_per_second / 1e6,
              1e9 / stacks_per_second, 1e9 / stacks_per_second / kDepth, sources[1], sources[2], sources[3],
              same ? "" : "  MISMATCH");
  return same;
}

}  // namespace

int main(int argc, char** argv) {
  std::uint64_t iterations = 2'000'000;
  for (int i = 1; i + 1 < argc; ++i)
    if (std::string(argv[i]) == "--iterations") iterations = std::strtoull(argv[i + 1], nullptr, 10);
  std::printf("# unwind_bench: %s, load %s, commit %s\n", bench::cpu_model().c_str(), bench::load_average().c_str(),
              bench::commit().c_str());
  std::printf("# %zu-frame stacks at nested_calls' deepest write, warm row cache, %" PRIu64 " walks each\n", kDepth,
              iterations);
  const std::string dir = TRACECORN_UNWIND_SAMPLES_DIR;
  bool ok = true;
  ok &= bench_one("cfi-static (libc.a, CFI)", dir + "/cfi-static/nested_calls", unwind::UnwindMethod::kAuto, iterations);
  ok &= bench_one("cfi-static (libc.a, CFI)", dir + "/cfi-static/nested_calls", unwind::UnwindMethod::kCfi, iterations);
  ok &= bench_one("sframe-static (program: SFrame)", dir + "/sframe-static/nested_calls", unwind::UnwindMethod::kAuto,
                  iterations);
  ok &= bench_one("cfi-dynamic (libc.so.6 + PIE, CFI)", dir + "/cfi-dynamic/nested_calls", unwind::UnwindMethod::kAuto,
                  iterations);
  ok &= bench_one("fp (frame pointers)", dir + "/fp/nested_calls", unwind::UnwindMethod::kFramePointer, iterations);
  return ok ? 0 : 1;
}
