// Role: the recorder benchmark (issue "recorder", performance section). It runs
// two x86-64 guest loops, generated in memory, on bare Unicorn with a table of
// hook "configurations" and prints, for each configuration x workload, MIPS and
// the slowdown against bare Unicorn measured in the same run, with the machine
// and the commit above the table (bench/README.md says how to read it).
//
//   store_loop    8 instructions per iteration, one of them an 8-byte store
//                 into a 4 KiB buffer (Unicorn 2.0.1 stores cost ~64 ns, #1970)
//   nostore_loop  8 ALU/branch instructions per iteration, no memory access
//   nostore_loop_rwx  the same, its code mapped read-write-execute as harnesses
//                 (fuzzers, unicornafl, Qiling) map memory: code the guest may
//                 rewrite in place, which the recorder must notice
//
// The baselines (a-g) are what the recorder's levels are compared with: empty
// block, code and memory hooks, and a naive register tracer (a code hook reading
// 18 registers per instruction), which the recorder's `regs` level must beat 3x.
// The recorder's own levels go in the marked place in kConfigurations below.
//
// Who runs it: a person or CI, by hand (`recorder_bench [--quick] [--runs N]
// [--only KEYS]`); it is not a ctest test. Single threaded: one engine at a time,
// all on the main thread.
//
// Invariants:
//  - inputs (machine code) are generated before and outside the timed part;
//    every run gets a fresh engine whose set-up (uc_open, maps, code, the
//    configuration's hooks) and tear-down are untimed; the clock covers
//    uc_emu_start plus the configuration's finish();
//  - instruction counts are known by construction (2 + 8 x iterations) and are
//    checked once per workload, before timing, by a counting UC_HOOK_CODE run on
//    a small iteration count and by Capstone decoding the loop body; after every
//    timed run the hooks' call counts are compared with what the construction
//    predicts, and the final RIP and RCX must be the loop's exit state;
//  - a set-up error from Unicorn is fatal (exit 2); a count mismatch is printed
//    and makes the program exit 1 after the table.
#include "bench_machine.h"
#include "arch/arch.h"
#include "formats/null/null_sink.h"
#include "recorder/core/recorder.h"
#include <algorithm>
#include <array>
#include <chrono>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <sys/utsname.h>
#include <time.h>
#include <thread>
#include <vector>

#include <capstone/capstone.h>
#include <unicorn/unicorn.h>

#ifndef TRACECORN_SOURCE_DIR
#define TRACECORN_SOURCE_DIR "."
#endif

namespace {

using Clock = std::chrono::steady_clock;

// Guest layout: code at kCodeAddress, the store buffer at kDataAddress.
constexpr std::uint64_t kCodeAddress = 0x100000;
constexpr std::uint64_t kDataAddress = 0x200000;
constexpr std::size_t kPageSize = 0x1000;
constexpr std::uint32_t kStoreSlotMask = 0x1ff;  // 512 qwords = the 4 KiB buffer

constexpr std::uint64_t kFullInstructions = 200'000'000;
constexpr std::uint64_t kQuickInstructions = 20'000'000;
constexpr std::uint64_t kCheckIterations = 1000;  // the counted verification run
constexpr std::uint64_t kPrefixInstructions = 2;  // mov ecx, N; mov edi, buffer
constexpr std::uint64_t kBodyInstructions = 8;    // per iteration, dec + jnz included
// A configuration whose first run takes longer than this is run once only.
constexpr double kSlowRunSeconds = 10.0;

[[noreturn]] void die(const char* what, uc_err err) {
  std::fprintf(stderr, "recorder_bench: %s: %s\n", what, uc_strerror(err));
  std::exit(2);
}

void check_uc(uc_err err, const char* what) {
  if (err != UC_ERR_OK) die(what, err);
}

// ---------------------------------------------------------------------------
// Workloads
// ---------------------------------------------------------------------------

struct Workload {
  std::string_view name;
  std::string_view what;
  std::vector<std::uint8_t> code;  // loaded at kCodeAddress
  std::uint64_t begin = 0;         // uc_emu_start's range
  std::uint64_t until = 0;
  std::uint64_t iterations = 0;
  std::uint64_t instructions = 0;  // by construction
  std::uint64_t stores = 0;        // 8-byte guest stores, by construction
  std::size_t body_offset = 0;     // the loop body within `code`
  std::size_t body_size = 0;
  bool writable_code = false;      // code mapped read-write-execute
};

void append(std::vector<std::uint8_t>& code, std::initializer_list<std::uint8_t> bytes) {
  code.insert(code.end(), bytes);
}

void append_u32(std::vector<std::uint8_t>& code, std::uint32_t value) {
  for (int i = 0; i < 4; ++i) code.push_back(static_cast<std::uint8_t>(value >> (8 * i)));
}

// Builds:  mov ecx, iterations ; mov edi, kDataAddress
//   loop:  <6 body instructions> ; dec rcx ; jnz loop
// `with_store` makes the 6th body instruction `mov [rdi+rbx*8], rax`, else
// `sub rdx, rbx`. RBX = RCX & 511, so the store stays inside the 4 KiB buffer.
Workload make_loop(std::string_view name, std::string_view what, bool with_store,
                   std::uint64_t iterations) {
  if (iterations == 0 || iterations > UINT32_MAX) {
    std::fprintf(stderr, "recorder_bench: iteration count %" PRIu64 " out of range\n", iterations);
    std::exit(2);
  }
  Workload w;
  w.name = name;
  w.what = what;
  std::vector<std::uint8_t>& c = w.code;
  append(c, {0xb9});  // mov ecx, imm32 (zero-extends into rcx)
  append_u32(c, static_cast<std::uint32_t>(iterations));
  append(c, {0xbf});  // mov edi, imm32
  append_u32(c, static_cast<std::uint32_t>(kDataAddress));
  w.body_offset = c.size();
  append(c, {0x48, 0x89, 0xcb});                    // mov rbx, rcx
  append(c, {0x81, 0xe3});                          // and ebx, kStoreSlotMask
  append_u32(c, kStoreSlotMask);
  append(c, {0x48, 0x01, 0xc8});                    // add rax, rcx
  append(c, {0x48, 0x31, 0xc2});                    // xor rdx, rax
  append(c, {0x48, 0x8d, 0x04, 0x50});              // lea rax, [rax+rdx*2]
  if (with_store) {
    append(c, {0x48, 0x89, 0x04, 0xdf});            // mov [rdi+rbx*8], rax
  } else {
    append(c, {0x48, 0x29, 0xda});                  // sub rdx, rbx
  }
  append(c, {0x48, 0xff, 0xc9});                    // dec rcx
  const std::size_t after_jnz = c.size() + 2;
  const auto displacement = static_cast<std::int64_t>(w.body_offset) - static_cast<std::int64_t>(after_jnz);
  append(c, {0x75, static_cast<std::uint8_t>(static_cast<std::int8_t>(displacement))});  // jnz loop
  w.body_size = c.size() - w.body_offset;
  w.begin = kCodeAddress;
  w.until = kCodeAddress + c.size();
  w.iterations = iterations;
  w.instructions = kPrefixInstructions + kBodyInstructions * iterations;
  w.stores = with_store ? iterations : 0;
  return w;
}

std::vector<Workload> make_workloads(std::uint64_t target_instructions, std::uint64_t iterations_override = 0) {
  const std::uint64_t iterations =
      iterations_override != 0 ? iterations_override : target_instructions / kBodyInstructions;
  std::vector<Workload> workloads;
  workloads.push_back(make_loop("store_loop", "7 ALU + 1 8-byte store per 8 instructions", true, iterations));
  workloads.push_back(make_loop("nostore_loop", "8 ALU/branch instructions, no memory access", false, iterations));
  workloads.push_back(make_loop("nostore_loop_rwx", "nostore_loop, its code mapped read-write-execute", false, iterations));
  workloads.back().writable_code = true;
  return workloads;
}

// A fresh engine with the workload's code and buffer mapped; RIP/RCX unset.
uc_engine* open_engine(const Workload& w) {
  uc_engine* uc = nullptr;
  check_uc(uc_open(UC_ARCH_X86, UC_MODE_64, &uc), "uc_open");
  const std::size_t code_size = (w.code.size() + kPageSize - 1) / kPageSize * kPageSize;
  const std::uint32_t code_prot = UC_PROT_READ | UC_PROT_EXEC | (w.writable_code ? UC_PROT_WRITE : 0);
  check_uc(uc_mem_map(uc, kCodeAddress, code_size, code_prot), "uc_mem_map code");
  check_uc(uc_mem_map(uc, kDataAddress, kPageSize, UC_PROT_READ | UC_PROT_WRITE), "uc_mem_map data");
  check_uc(uc_mem_write(uc, kCodeAddress, w.code.data(), w.code.size()), "uc_mem_write code");
  return uc;
}

// ---------------------------------------------------------------------------
// Configurations: the hooks a run is measured with.
// ---------------------------------------------------------------------------

// How often each hook kind was called during one run; nullopt = not hooked.
struct HookCounts {
  std::optional<std::uint64_t> blocks;
  std::optional<std::uint64_t> instructions;
  std::optional<std::uint64_t> writes;
  std::optional<std::uint64_t> reads;
};

// What a configuration leaves on an engine for one run. Created by the
// configuration's set_up before the clock starts; finish() is called inside the
// timed part right after uc_emu_start returns; the destructor runs after the
// clock has stopped and removes every hook added with add_hook. Hooks run on the
// emulation (main) thread and must be noexcept.
class Installed {
 public:
  explicit Installed(uc_engine* uc) : uc_(uc) {}
  virtual ~Installed() {
    for (uc_hook hook : hooks_) uc_hook_del(uc_, hook);
  }
  Installed(const Installed&) = delete;
  Installed& operator=(const Installed&) = delete;

  // Whatever must be done for the configuration's output to be complete
  // (drain a ring, flush a writer): timed. Default: nothing.
  virtual void finish() {}
  // Hook call counts, compared with the workload's construction after the run.
  virtual HookCounts counts() const { return {}; }
  // Free text shown beside the configuration's rows (events, bytes written).
  virtual std::string note() const { return {}; }

 protected:
  // Adds a hook over the whole address space; a failure is fatal (set-up error).
  void add_hook(int type, void* callback, void* user) {
    uc_hook hook = 0;
    check_uc(uc_hook_add(uc_, &hook, type, callback, user, 1, 0), "uc_hook_add");
    hooks_.push_back(hook);
  }
  uc_engine* uc_;

 private:
  std::vector<uc_hook> hooks_;
};

// b-f: empty hooks, each of which only counts its calls (one increment, so the
// cost measured is Unicorn's dispatch to a C callback).
class CountingHooks final : public Installed {
 public:
  CountingHooks(uc_engine* uc, bool block, bool code, bool memory) : Installed(uc) {
    if (block) {
      counts_.blocks = 0;
      add_hook(UC_HOOK_BLOCK, reinterpret_cast<void*>(&on_block), this);
    }
    if (code) {
      counts_.instructions = 0;
      add_hook(UC_HOOK_CODE, reinterpret_cast<void*>(&on_code), this);
    }
    if (memory) {
      counts_.writes = 0;
      counts_.reads = 0;
      add_hook(UC_HOOK_MEM_WRITE | UC_HOOK_MEM_READ_AFTER, reinterpret_cast<void*>(&on_memory), this);
    }
  }
  HookCounts counts() const override { return counts_; }

 private:
  static void on_block(uc_engine*, std::uint64_t, std::uint32_t, void* user) noexcept {
    ++*static_cast<CountingHooks*>(user)->counts_.blocks;
  }
  static void on_code(uc_engine*, std::uint64_t, std::uint32_t, void* user) noexcept {
    ++*static_cast<CountingHooks*>(user)->counts_.instructions;
  }
  static void on_memory(uc_engine*, uc_mem_type type, std::uint64_t, int, std::int64_t, void* user) noexcept {
    auto* self = static_cast<CountingHooks*>(user);
    if (type == UC_MEM_WRITE) {
      ++*self->counts_.writes;
    } else {
      ++*self->counts_.reads;
    }
  }
  HookCounts counts_;
};

// g: the naive register tracer. A UC_HOOK_CODE that, before every instruction
// (i.e. after the previous one), reads the 16 GPRs + RIP + RFLAGS with one
// uc_reg_read_batch and compares them with the values it read last time,
// counting the registers that changed. The recorder's `regs` level must be at
// least 3x faster than this.
class NaiveRegisterTracer final : public Installed {
 public:
  static constexpr std::size_t kCount = 18;

  explicit NaiveRegisterTracer(uc_engine* uc) : Installed(uc) {
    for (std::size_t i = 0; i < kCount; ++i) pointers_[i] = &current_[i];
    counts_.instructions = 0;
    add_hook(UC_HOOK_CODE, reinterpret_cast<void*>(&on_code), this);
  }
  HookCounts counts() const override { return counts_; }
  std::string note() const override { return std::to_string(changes_) + " register changes seen"; }

 private:
  static void on_code(uc_engine* uc, std::uint64_t, std::uint32_t, void* user) noexcept {
    auto* self = static_cast<NaiveRegisterTracer*>(user);
    ++*self->counts_.instructions;
    if (uc_reg_read_batch(uc, self->ids_.data(), self->pointers_.data(), static_cast<int>(kCount)) != UC_ERR_OK) {
      ++self->read_failures_;
      return;
    }
    for (std::size_t i = 0; i < kCount; ++i) {
      if (self->current_[i] != self->previous_[i]) {
        ++self->changes_;
        self->previous_[i] = self->current_[i];
      }
    }
  }

  std::array<int, kCount> ids_ = {
      UC_X86_REG_RAX, UC_X86_REG_RBX, UC_X86_REG_RCX, UC_X86_REG_RDX, UC_X86_REG_RSI, UC_X86_REG_RDI,
      UC_X86_REG_RBP, UC_X86_REG_RSP, UC_X86_REG_R8,  UC_X86_REG_R9,  UC_X86_REG_R10, UC_X86_REG_R11,
      UC_X86_REG_R12, UC_X86_REG_R13, UC_X86_REG_R14, UC_X86_REG_R15, UC_X86_REG_RIP, UC_X86_REG_RFLAGS};
  std::array<std::uint64_t, kCount> current_{};
  std::array<std::uint64_t, kCount> previous_{};
  std::array<void*, kCount> pointers_{};
  std::uint64_t changes_ = 0;
  std::uint64_t read_failures_ = 0;
  HookCounts counts_;
};

// The recorder at one level, writing to the null sink; finish() drains the ring
// and is timed. The note gives events and ring bytes per instruction.
class RecorderLevel final : public Installed {
 public:
  // kDerive: RecorderOptions::derive_registers, as the CLI records (the
  // registers are set before attach and only instructions change them here).
  template <tracecorn::core::TraceLevel kLevel, bool kDerive = false>
  static std::unique_ptr<Installed> set_up(uc_engine* uc, const Workload&) {
    auto installed = std::make_unique<RecorderLevel>(uc);
    tracecorn::core::RecorderOptions options;
    options.level = kLevel;
    options.derive_registers = kDerive;
    // RECORDER_BENCH_RING_KIB: the ring's size in KiB (default: the recorder's).
    if (const char* kib = std::getenv("RECORDER_BENCH_RING_KIB")) options.ring_bytes = std::strtoull(kib, nullptr, 10) << 10;
    auto recorder = tracecorn::core::Recorder::attach(uc, tracecorn::arch::x86_64_arch(), options,
                                                      {&installed->sink_}, tracecorn::events::TraceInfo{});
    if (!recorder) {
      std::fprintf(stderr, "recorder_bench: %s\n", recorder.error().to_string().c_str());
      std::exit(2);
    }
    installed->recorder_ = std::move(*recorder);
    return installed;
  }
  explicit RecorderLevel(uc_engine* uc) : Installed(uc) {}
  void finish() override {
    const std::string error = recorder_->finish();
    if (!error.empty()) std::fprintf(stderr, "recorder_bench: %s\n", error.c_str());
  }
  std::string note() const override {
    const auto stats = recorder_->stats();
    const double per_instruction = stats.instructions ? 1.0 / static_cast<double>(stats.instructions) : 0.0;
    char text[160];
    std::snprintf(text, sizeof text, "%.2f events/insn, %.1f ring bytes/insn, %llu stalls, %.0f%% derived",
                  static_cast<double>(stats.events) * per_instruction,
                  static_cast<double>(stats.ring_bytes_written) * per_instruction,
                  static_cast<unsigned long long>(stats.producer_stalls),
                  100.0 * static_cast<double>(stats.registers_derived) * per_instruction);
    return text;
  }

 private:
  tracecorn::formats::NullSink sink_;
  std::unique_ptr<tracecorn::core::Recorder> recorder_;
};

struct Configuration {
  std::string_view key;   // selects it with --only
  std::string_view name;
  std::string_view what;
  // Installs the configuration's hooks on a fresh engine, before the clock starts.
  std::unique_ptr<Installed> (*set_up)(uc_engine* uc, const Workload& workload);
};

// ===========================================================================
// The table of configurations. The first entry must be bare Unicorn: every
// other row's ratio is against it, measured in the same process run.
// ===========================================================================
const Configuration kConfigurations[] = {
    {"a", "bare", "no hooks",
     [](uc_engine* uc, const Workload&) { return std::make_unique<Installed>(uc); }},
    {"b", "block", "empty UC_HOOK_BLOCK",
     [](uc_engine* uc, const Workload&) -> std::unique_ptr<Installed> {
       return std::make_unique<CountingHooks>(uc, true, false, false);
     }},
    {"c", "code", "empty UC_HOOK_CODE",
     [](uc_engine* uc, const Workload&) -> std::unique_ptr<Installed> {
       return std::make_unique<CountingHooks>(uc, false, true, false);
     }},
    {"d", "mem", "empty UC_HOOK_MEM_WRITE + UC_HOOK_MEM_READ_AFTER",
     [](uc_engine* uc, const Workload&) -> std::unique_ptr<Installed> {
       return std::make_unique<CountingHooks>(uc, false, false, true);
     }},
    {"e", "block+mem", "empty block + memory hooks",
     [](uc_engine* uc, const Workload&) -> std::unique_ptr<Installed> {
       return std::make_unique<CountingHooks>(uc, true, false, true);
     }},
    {"f", "code+mem", "empty code + memory hooks (every instruction plus memory)",
     [](uc_engine* uc, const Workload&) -> std::unique_ptr<Installed> {
       return std::make_unique<CountingHooks>(uc, false, true, true);
     }},
    {"g", "naive-regs", "code hook: uc_reg_read_batch of 16 GPRs+rip+rflags, compare",
     [](uc_engine* uc, const Workload&) -> std::unique_ptr<Installed> {
       return std::make_unique<NaiveRegisterTracer>(uc);
     }},

    // ---- the recorder's levels, each with the null sink (no serialisation) ----
    {"r1", "rec-blocks", "tracecorn recorder, level blocks", &RecorderLevel::set_up<tracecorn::core::TraceLevel::kBlocks>},
    {"r2", "rec-insns", "tracecorn recorder, level insns", &RecorderLevel::set_up<tracecorn::core::TraceLevel::kInstructions>},
    {"r3", "rec-mem", "tracecorn recorder, level mem", &RecorderLevel::set_up<tracecorn::core::TraceLevel::kMemory>},
    {"r4", "rec-regs", "tracecorn recorder, level regs", &RecorderLevel::set_up<tracecorn::core::TraceLevel::kRegisters>},
    {"r5", "rec-full", "tracecorn recorder, level full", &RecorderLevel::set_up<tracecorn::core::TraceLevel::kFull>},
    {"r4d", "rec-regs-derive", "level regs, derive_registers (as the CLI)",
     &RecorderLevel::set_up<tracecorn::core::TraceLevel::kRegisters, true>},
    {"r5d", "rec-full-derive", "level full, derive_registers (as the CLI)",
     &RecorderLevel::set_up<tracecorn::core::TraceLevel::kFull, true>},
};

// ---------------------------------------------------------------------------
// Running and checking
// ---------------------------------------------------------------------------

struct RunResult {
  double seconds = 0;
  double emulation_cpu = 0;  // CPU seconds of the emulation thread (the producer)
  double other_cpu = 0;      // CPU seconds of the process's other threads (the recorder's drain thread)
  std::vector<std::string> mismatches;
  std::string note;
};

// CPU seconds on `clock` (a thread or process CPU-time clock). On a shared
// machine wall clock includes waiting for a core; CPU time does not.
double cpu_seconds(clockid_t clock) {
  timespec now{};
  clock_gettime(clock, &now);
  return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) * 1e-9;
}

void compare(std::vector<std::string>& out, const char* what, const std::optional<std::uint64_t>& seen,
             std::uint64_t expected) {
  if (seen && *seen != expected) {
    out.push_back(std::string(what) + " hook called " + std::to_string(*seen) + " times, expected " +
                  std::to_string(expected));
  }
}

// One run: fresh engine, set-up untimed, uc_emu_start + finish() timed,
// checks and tear-down untimed.
RunResult run_once(const Configuration& config, const Workload& w) {
  uc_engine* uc = open_engine(w);
  RunResult result;
  {
    std::unique_ptr<Installed> installed = config.set_up(uc, w);
    const double thread_start = cpu_seconds(CLOCK_THREAD_CPUTIME_ID);
    const double process_start = cpu_seconds(CLOCK_PROCESS_CPUTIME_ID);
    const Clock::time_point start = Clock::now();
    const uc_err err = uc_emu_start(uc, w.begin, w.until, 0, 0);
    installed->finish();
    const Clock::time_point end = Clock::now();
    const double thread_cpu = cpu_seconds(CLOCK_THREAD_CPUTIME_ID) - thread_start;
    const double process_cpu = cpu_seconds(CLOCK_PROCESS_CPUTIME_ID) - process_start;
    check_uc(err, "uc_emu_start");
    result.seconds = std::chrono::duration<double>(end - start).count();
    result.emulation_cpu = thread_cpu;
    result.other_cpu = std::max(0.0, process_cpu - thread_cpu);

    std::uint64_t rip = 0;
    std::uint64_t rcx = 0;
    check_uc(uc_reg_read(uc, UC_X86_REG_RIP, &rip), "uc_reg_read rip");
    check_uc(uc_reg_read(uc, UC_X86_REG_RCX, &rcx), "uc_reg_read rcx");
    if (rip != w.until || rcx != 0) {
      result.mismatches.push_back("final rip/rcx " + std::to_string(rip) + "/" + std::to_string(rcx) +
                                  " is not the loop's exit");
    }
    const HookCounts counts = installed->counts();
    compare(result.mismatches, "code", counts.instructions, w.instructions);
    compare(result.mismatches, "block", counts.blocks, w.iterations);
    compare(result.mismatches, "memory-write", counts.writes, w.stores);
    compare(result.mismatches, "memory-read", counts.reads, 0);
    result.note = installed->note();
  }  // hooks removed here, before the engine closes
  uc_close(uc);
  return result;
}

// The once-per-workload verification: Capstone decodes the loop body (8
// instructions, one store iff the workload stores), then a small iteration
// count runs under a counting code hook and must give 2 + 8 x iterations.
bool verify_construction(const Workload& full) {
  bool ok = true;
  csh cs = 0;
  if (cs_open(CS_ARCH_X86, CS_MODE_64, &cs) != CS_ERR_OK) {
    std::fprintf(stderr, "recorder_bench: cs_open failed\n");
    std::exit(2);
  }
  cs_insn* insns = nullptr;
  const std::size_t decoded =
      cs_disasm(cs, full.code.data() + full.body_offset, full.body_size, kCodeAddress + full.body_offset, 0, &insns);
  std::size_t stores = 0;
  for (std::size_t i = 0; i < decoded; ++i) {
    if (std::string_view(insns[i].mnemonic) == "mov" && std::string_view(insns[i].op_str).starts_with("qword ptr [")) {
      ++stores;
    }
  }
  cs_free(insns, decoded);
  cs_close(&cs);
  if (decoded != kBodyInstructions || stores != (full.stores != 0 ? 1U : 0U)) {
    std::printf("check: %s: Capstone decodes %zu instructions with %zu stores in the loop body: MISMATCH\n",
                std::string(full.name).c_str(), decoded, stores);
    ok = false;
  }

  const std::vector<Workload> small = make_workloads(0, kCheckIterations);
  const Workload& w = full.stores != 0 ? small[0] : small[1];
  const RunResult counted = run_once(kConfigurations[2], w);  // "c": counting UC_HOOK_CODE
  std::printf("check: %-12s loop body %zu instructions (Capstone); %" PRIu64
              " iterations counted by UC_HOOK_CODE = 2 + 8 x %" PRIu64 " = %" PRIu64 ": %s\n",
              std::string(w.name).c_str(), decoded, w.iterations, w.iterations, w.instructions,
              counted.mismatches.empty() ? "ok" : "MISMATCH");
  for (const std::string& m : counted.mismatches) std::printf("       %s\n", m.c_str());
  return ok && counted.mismatches.empty();
}

// ---------------------------------------------------------------------------
// Machine and commit
// ---------------------------------------------------------------------------

using tracecorn::bench::commit;
using tracecorn::bench::cpu_model;
using tracecorn::bench::load_average;

// ---------------------------------------------------------------------------

struct Options {
  bool quick = false;
  int runs = 3;
  std::string only;  // comma-separated keys; empty = all
  std::string workload;  // only this workload (by name); empty = all
};

void usage() {
  std::fprintf(stderr,
               "usage: recorder_bench [--quick] [--runs N] [--only a,c,g] [--workload NAME]\n"
               "  --quick   20M instructions per workload instead of 200M (smoke run)\n"
               "  --runs N  best of N runs per cell (default 3; a cell whose first run\n"
               "            takes over %.0f s is run once)\n"
               "  --only    configuration keys to run (bare always runs)\n"
               "  --workload store_loop|nostore_loop|nostore_loop_rwx: run only that workload\n",
               kSlowRunSeconds);
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--quick") {
      o.quick = true;
    } else if (arg == "--runs" && i + 1 < argc) {
      o.runs = std::atoi(argv[++i]);
      if (o.runs < 1) {
        usage();
        std::exit(2);
      }
    } else if (arg == "--only" && i + 1 < argc) {
      o.only = argv[++i];
    } else if (arg == "--workload" && i + 1 < argc) {
      o.workload = argv[++i];
      if (o.workload != "store_loop" && o.workload != "nostore_loop" && o.workload != "nostore_loop_rwx") {
        usage();
        std::exit(2);
      }
    } else {
      usage();
      std::exit(arg == "--help" || arg == "-h" ? 0 : 2);
    }
  }
  return o;
}

bool selected(const Options& o, const Configuration& c) {
  if (o.only.empty() || &c == &kConfigurations[0]) return true;
  std::size_t start = 0;
  while (start <= o.only.size()) {
    const std::size_t comma = std::min(o.only.find(',', start), o.only.size());
    if (std::string_view(o.only).substr(start, comma - start) == c.key) return true;
    start = comma + 1;
  }
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  const Options options = parse(argc, argv);
  const std::uint64_t target = options.quick ? kQuickInstructions : kFullInstructions;

  // Inputs: generated before anything is timed.
  std::vector<Workload> workloads = make_workloads(target);
  if (!options.workload.empty())
    std::erase_if(workloads, [&](const Workload& w) { return w.name != options.workload; });

  unsigned major = 0;
  unsigned minor = 0;
  uc_version(&major, &minor);
  int cs_major = 0;
  int cs_minor = 0;
  cs_version(&cs_major, &cs_minor);
  utsname uts{};
  uname(&uts);

  std::printf("recorder_bench: hook costs on bare Unicorn, x86-64 guest loops%s\n", options.quick ? " (--quick)" : "");
  std::printf("machine:  %u cores, %s, kernel %s, load average %s at start\n", std::thread::hardware_concurrency(),
              cpu_model().c_str(), uts.release, load_average().c_str());
  std::printf("commit:   %s\n", commit().c_str());
  std::printf("unicorn:  library %u.%u, headers %d.%d.%d   capstone: %d.%d\n", major, minor, UC_VERSION_MAJOR,
              UC_VERSION_MINOR, UC_VERSION_PATCH, cs_major, cs_minor);
  std::printf("timing:   wall clock (steady_clock) around uc_emu_start, best of %d run(s) per cell (runs column;\n"
              "          1 when the first run took over %.0f s); fresh engine per run, set-up untimed\n",
              options.runs, kSlowRunSeconds);
  for (const Workload& w : workloads) {
    std::printf("workload: %-16s %" PRIu64 " instructions = 2 + 8 x %" PRIu64 " iterations, %" PRIu64
                " stores (%s)\n",
                std::string(w.name).c_str(), w.instructions, w.iterations, w.stores, std::string(w.what).c_str());
  }

  bool ok = true;
  for (const Workload& w : workloads) ok = verify_construction(w) && ok;

  std::printf("\n%-3s %-15s %-16s %5s %9s %9s %9s %8s %8s %8s  %s\n", "", "config", "workload", "runs", "best s",
              "MIPS", "x bare", "emu cpu", "x bare", "drain", "what");
  std::vector<double> bare_seconds(workloads.size(), 0.0);
  std::vector<double> bare_cpu(workloads.size(), 0.0);
  for (const Configuration& config : kConfigurations) {
    if (!selected(options, config)) continue;
    for (std::size_t wi = 0; wi < workloads.size(); ++wi) {
      const Workload& w = workloads[wi];
      double best = 0;
      double best_cpu = 0;
      double best_other = 0;
      int runs = 0;
      std::string note;
      std::vector<std::string> mismatches;
      for (int r = 0; r < options.runs; ++r) {
        RunResult result = run_once(config, w);
        ++runs;
        if (r == 0 || result.seconds < best) best = result.seconds;
        if (r == 0 || result.emulation_cpu < best_cpu) best_cpu = result.emulation_cpu;
        if (r == 0 || result.other_cpu < best_other) best_other = result.other_cpu;
        note = result.note;
        for (std::string& m : result.mismatches) mismatches.push_back(std::move(m));
        if (r == 0 && result.seconds > kSlowRunSeconds) break;
      }
      if (&config == &kConfigurations[0]) {
        bare_seconds[wi] = best;
        bare_cpu[wi] = best_cpu;
      }
      const double mips = static_cast<double>(w.instructions) / best / 1e6;
      const double ratio = bare_seconds[wi] > 0 ? best / bare_seconds[wi] : 0.0;
      const double cpu_ratio = bare_cpu[wi] > 0 ? best_cpu / bare_cpu[wi] : 0.0;
      std::string what(config.what);
      if (!note.empty()) what += "; " + note;
      std::printf("%-3s %-15s %-16s %5d %9.3f %9.1f %8.2fx %8.3f %7.2fx %8.3f  %s\n", std::string(config.key).c_str(),
                  std::string(config.name).c_str(), std::string(w.name).c_str(), runs, best, mips, ratio, best_cpu,
                  cpu_ratio, best_other, what.c_str());
      std::fflush(stdout);
      for (const std::string& m : mismatches) std::printf("    MISMATCH: %s\n", m.c_str());
      ok = ok && mismatches.empty();
    }
  }
  std::printf("\nx bare = this cell's best time / bare Unicorn's best time on the same workload, same run\n"
              "emu cpu = least CPU seconds of the emulation thread (the producer) over the runs, and its x bare;\n"
              "drain = least CPU seconds of the other threads (the recorder's drain thread: the consumer)\n");
  if (!ok) {
    std::printf("recorder_bench: some counts did not match the construction (see MISMATCH above)\n");
    return 1;
  }
  return 0;
}
