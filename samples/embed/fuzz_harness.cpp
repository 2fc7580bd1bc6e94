// Role: a libFuzzer harness that fuzzes a guest function (a small, buggy,
// length-prefixed record parser written in x86-64 machine code, below) in a
// Unicorn engine, with tracecorn's flight recorder always on. When the guest
// faults, the harness reports the fault to the recorder the way tracecorn's
// Linux layer does (the exact faulting instruction, the address, SIGSEGV),
// dumps the flight recorder's last events as a text trace, and only then
// aborts, so that libFuzzer saves the crashing input beside a trace of the
// instructions that led to the crash.
//
// Who runs it: libFuzzer (clang -fsanitize=fuzzer), or, in builds without
// libFuzzer, fuzz_replay_main.cpp, which feeds it files (a crash reproducer);
// the tests fuzz_harness_finds_crash and fuzz_harness_replays_crash
// (check_fuzz_crash.cmake) check the dumped trace.
// Threads: libFuzzer's one fuzzing thread. The flight recorder has no drain
// thread: records stay in its ring until dump().
// Global state: libFuzzer's entry points take no context, so the harness is one
// function-local static created on the first input; the guest edge counters
// must be a global in the section libFuzzer reads (see guest_edge_counters).
//
// Environment:
//   TRACECORN_CRASH_TRACE   where the trace goes on a crash (default ./crash-trace.txt)
//   TRACECORN_FUZZ_LEVEL    the recording level (default insns; blocks, mem, regs, full)
//   TRACECORN_FUZZ_RING     the flight recorder's size in bytes (default 16384)
//
// Per input: the engine, its mappings, the translated code and the recorder are
// reused; the harness writes the input, resets four registers and runs. The
// flight recorder thus also holds the end of earlier inputs' runs, before the
// crashing one (each run starts with a block at kParserAddress).
//
// The guest: parse_record(rdi = input, rsi = size, rdx = record buffer of 64
// bytes) -> eax = sum of the record's bytes, or -1 when the input is rejected.
// Input format: 'T' 'C' 0x01, a length byte, then the record. The bug: the
// length is checked as a signed byte (0x80..0xff pass as negative) but used as
// an unsigned one, so the copy runs past the 64-byte buffer, which ends at a
// page boundary, into unmapped memory: a write fault at kFaultingStore.
//
//   0x00  b8 ff ff ff ff        mov   eax, -1
//   0x05  48 83 fe 04           cmp   rsi, 4
//   0x09  72 3b                 jb    reject
//   0x0b  80 3f 54              cmp   byte ptr [rdi], 'T'
//   0x0e  75 36                 jne   reject
//   0x10  80 7f 01 43           cmp   byte ptr [rdi + 1], 'C'
//   0x14  75 30                 jne   reject
//   0x16  80 7f 02 01           cmp   byte ptr [rdi + 2], 1
//   0x1a  75 2a                 jne   reject
//   0x1c  0f be 4f 03           movsx ecx, byte ptr [rdi + 3]   ; the length, signed: the bug
//   0x20  83 f9 40              cmp   ecx, 64
//   0x23  7f 21                 jg    reject
//   0x25  0f b6 4f 03           movzx ecx, byte ptr [rdi + 3]   ; ... used unsigned
//   0x29  45 31 c9              xor   r9d, r9d
//   0x2c  31 c0                 xor   eax, eax
//   0x2e  49 39 c9              cmp   r9, rcx                   ; copy:
//   0x31  74 12                 je    done
//   0x33  46 0f b6 54 0f 04     movzx r10d, byte ptr [rdi + r9 + 4]
//   0x39  46 88 14 0a           mov   byte ptr [rdx + r9], r10b ; kFaultingStore
//   0x3d  44 01 d0              add   eax, r10d
//   0x40  49 ff c1              inc   r9
//   0x43  eb e9                 jmp   copy
//   0x45  c3                    ret                             ; done
//   0x46  c3                    ret                             ; reject
#include <algorithm>
#include <csignal>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include <unicorn/unicorn.h>

#include "formats/text/text_writer.h"
#include "recorder/core/recorder.h"

namespace {

using namespace tracecorn;

constexpr std::uint8_t kParserCode[] = {
    0xb8, 0xff, 0xff, 0xff, 0xff, 0x48, 0x83, 0xfe, 0x04, 0x72, 0x3b, 0x80, 0x3f, 0x54, 0x75, 0x36,
    0x80, 0x7f, 0x01, 0x43, 0x75, 0x30, 0x80, 0x7f, 0x02, 0x01, 0x75, 0x2a, 0x0f, 0xbe, 0x4f, 0x03,
    0x83, 0xf9, 0x40, 0x7f, 0x21, 0x0f, 0xb6, 0x4f, 0x03, 0x45, 0x31, 0xc9, 0x31, 0xc0, 0x49, 0x39,
    0xc9, 0x74, 0x12, 0x46, 0x0f, 0xb6, 0x54, 0x0f, 0x04, 0x46, 0x88, 0x14, 0x0a, 0x44, 0x01, 0xd0,
    0x49, 0xff, 0xc1, 0xeb, 0xe9, 0xc3, 0xc3,
};

// Guest memory: one page each. The record buffer is the last 64 bytes of its
// page, and the page after it is unmapped.
constexpr std::uint64_t kPageSize = 0x1000;
constexpr std::uint64_t kParserAddress = 0x10000;
constexpr std::uint64_t kFaultingStore = kParserAddress + 0x39;
constexpr std::uint64_t kReturnAddress = kParserAddress + 0x800;  // a hlt; the emulation stops before it
constexpr std::uint64_t kInputAddress = 0x20000;
constexpr std::size_t kInputCapacity = 4 * kPageSize;  // longer inputs are cut (libFuzzer's default -max_len is 4096)
constexpr std::uint64_t kRecordBuffer = 0x40000 + kPageSize - 64;
constexpr std::uint64_t kStackTop = 0x60000 + kPageSize;
constexpr std::uint64_t kMaxInstructions = 1 << 16;  // the parser needs at most ~1300

#ifdef TRACECORN_EXPECTED_FAULT_PC
static_assert(kFaultingStore == TRACECORN_EXPECTED_FAULT_PC, "the tests expect the fault at this address");
#endif

// Guest edge coverage for libFuzzer: it reads every byte of this section as a
// coverage counter, clears them before each input, and keeps inputs that make
// new ones non-zero. Without it libFuzzer would see only the host's coverage,
// which is the same for every input. One counter per hashed (previous block,
// block) pair, AFL style.
constexpr std::size_t kEdgeCounterCount = 1 << 12;
[[gnu::section("__libfuzzer_extra_counters"), gnu::used]] std::uint8_t guest_edge_counters[kEdgeCounterCount];

struct HarnessConfig {
  std::string crash_trace_path = "crash-trace.txt";
  core::TraceLevel level = core::TraceLevel::kInstructions;
  std::size_t ring_bytes = 16 << 10;
};

// What the fault hooks saw during one run.
struct GuestFault {
  bool seen = false;
  int signal = 0;
  std::uint64_t address = 0;
  bool memory = false;
  const char* what = "";
};

std::string hex(std::uint64_t value) {
  char buffer[24];
  std::snprintf(buffer, sizeof buffer, "0x%llx", static_cast<unsigned long long>(value));
  return buffer;
}

const char* access_name(uc_mem_type type) {
  switch (type) {
    case UC_MEM_READ_UNMAPPED: return "read of unmapped memory";
    case UC_MEM_WRITE_UNMAPPED: return "write to unmapped memory";
    case UC_MEM_FETCH_UNMAPPED: return "execution of unmapped memory";
    case UC_MEM_READ_PROT: return "read of protected memory";
    case UC_MEM_WRITE_PROT: return "write to read-only memory";
    case UC_MEM_FETCH_PROT: return "execution of non-executable memory";
    default: return "invalid memory access";
  }
}

class ParserHarness {
 public:
  static Expected<std::unique_ptr<ParserHarness>> create(const HarnessConfig& config) {
    std::unique_ptr<ParserHarness> harness(new ParserHarness(config));
    if (auto status = harness->init(); !status) return status.error();
    return harness;
  }

  ~ParserHarness() {
    recorder_.reset();  // removes its hooks: before the engine goes
    for (uc_hook hook : hooks_) uc_hook_del(engine_, hook);
    cpu_.reset();
    if (engine_) uc_close(engine_);
  }
  ParserHarness(const ParserHarness&) = delete;
  ParserHarness& operator=(const ParserHarness&) = delete;

  // Runs the parser on `input` (untrusted: any bytes). Returns normally when the
  // guest returns; dumps the trace and aborts the process when it faults.
  void run(const std::uint8_t* input, std::size_t size) {
    size = std::min(size, kInputCapacity);
    // The parser may read past the input (another bug); stale bytes from a longer
    // earlier input would make runs depend on their order.
    if (size) uc_mem_write(engine_, kInputAddress, input, size);
    if (previous_size_ > size) uc_mem_write(engine_, kInputAddress + size, zeros_.data(), previous_size_ - size);
    previous_size_ = size;

    const std::uint64_t rsp = kStackTop - 8, rdi = kInputAddress, rsi = size, rdx = kRecordBuffer;
    uc_mem_write(engine_, rsp, &kReturnAddress, sizeof kReturnAddress);
    uc_reg_write(engine_, UC_X86_REG_RSP, &rsp);
    uc_reg_write(engine_, UC_X86_REG_RDI, &rdi);
    uc_reg_write(engine_, UC_X86_REG_RSI, &rsi);
    uc_reg_write(engine_, UC_X86_REG_RDX, &rdx);
    fault_ = GuestFault{};
    previous_edge_ = 0;

    const uc_err err = uc_emu_start(engine_, kParserAddress, kReturnAddress, 0, kMaxInstructions);
    if (fault_.seen || err != UC_ERR_OK) crash(err);
  }

 private:
  explicit ParserHarness(const HarnessConfig& config) : config_(config), zeros_(kInputCapacity, 0) {}

  Status init() {
    const arch::ArchInfo& arch = arch::x86_64_arch();
    if (uc_open(arch.unicorn_arch, arch.unicorn_mode, &engine_) != UC_ERR_OK)
      return make_error(ErrorCode::kEmulator, "cannot open a Unicorn engine");
    // The CPU state Linux gives a process, and the fault locator (see crash()).
    auto cpu = arch.make_guest_cpu(engine_);
    if (!cpu) return cpu.error();
    cpu_ = std::move(*cpu);

    static constexpr std::uint8_t kHlt = 0xf4;
    if (uc_mem_map(engine_, kParserAddress, kPageSize, UC_PROT_READ | UC_PROT_EXEC) != UC_ERR_OK ||
        uc_mem_map(engine_, kInputAddress, kInputCapacity, UC_PROT_READ) != UC_ERR_OK ||
        uc_mem_map(engine_, kRecordBuffer & ~(kPageSize - 1), kPageSize, UC_PROT_READ | UC_PROT_WRITE) != UC_ERR_OK ||
        uc_mem_map(engine_, kStackTop - kPageSize, kPageSize, UC_PROT_READ | UC_PROT_WRITE) != UC_ERR_OK ||
        uc_mem_write(engine_, kParserAddress, kParserCode, sizeof kParserCode) != UC_ERR_OK ||
        uc_mem_write(engine_, kReturnAddress, &kHlt, 1) != UC_ERR_OK)
      return make_error(ErrorCode::kEmulator, "cannot map the guest");

    if (!add_hook(UC_HOOK_MEM_INVALID, reinterpret_cast<void*>(&on_invalid_memory)) ||
        !add_hook(UC_HOOK_INTR, reinterpret_cast<void*>(&on_interrupt)) ||
        !add_hook(UC_HOOK_BLOCK, reinterpret_cast<void*>(&on_block)))
      return make_error(ErrorCode::kEmulator, "cannot add the harness's hooks");

    core::RecorderOptions options;
    options.level = config_.level;
    options.policy = core::RingPolicy::kFlightRecorder;
    options.ring_bytes = config_.ring_bytes;
    events::TraceInfo info;
    info.program = "fuzz_harness: parse_record";
    auto recorder = core::Recorder::attach(engine_, arch, options, {}, std::move(info));
    if (!recorder) return recorder.error();
    recorder_ = std::move(*recorder);
    return ok_status();
  }

  bool add_hook(int type, void* callback) {
    uc_hook hook = 0;
    if (uc_hook_add(engine_, &hook, type, callback, this, 1, 0) != UC_ERR_OK) return false;
    hooks_.push_back(hook);
    return true;
  }

  static void on_block(uc_engine*, std::uint64_t address, std::uint32_t, void* user) noexcept {
    auto* self = static_cast<ParserHarness*>(user);
    const std::uint64_t current = ((address >> 4) ^ (address << 8)) & (kEdgeCounterCount - 1);
    std::uint8_t& counter = guest_edge_counters[current ^ self->previous_edge_];
    if (counter != 0xff) ++counter;
    self->previous_edge_ = current >> 1;
  }

  static bool on_invalid_memory(uc_engine*, uc_mem_type type, std::uint64_t address, int, std::int64_t,
                                void* user) noexcept {
    auto* self = static_cast<ParserHarness*>(user);
    if (!self->fault_.seen) self->fault_ = GuestFault{true, SIGSEGV, address, true, access_name(type)};
    return false;  // the access fails: uc_emu_start returns an error
  }

  static void on_interrupt(uc_engine* engine, std::uint32_t number, void* user) noexcept {
    auto* self = static_cast<ParserHarness*>(user);
    if (!self->fault_.seen) {
      const int signal = self->cpu_->signal_for_interrupt(number);
      self->fault_ = GuestFault{true, signal ? signal : SIGILL, 0, false, "CPU exception"};
    }
    uc_emu_stop(engine);
  }

  // The guest crashed: tell the recorder as tracecorn does (fault at the exact
  // instruction, then the end of the process by a signal), dump, and abort.
  [[noreturn]] void crash(uc_err err) {
    std::uint64_t pc = 0;
    uc_reg_read(engine_, UC_X86_REG_RIP, &pc);
    GuestFault fault = fault_;
    if (!fault.seen)  // no hook saw it: an invalid instruction, or an instruction limit
      fault = GuestFault{true, err == UC_ERR_INSN_INVALID ? SIGILL : SIGSEGV, 0, false, uc_strerror(err)};
    // Unicorn 2.0.1 reports the start of the translation block after a memory
    // fault (upstream #1323, #2040); the arch's locator finds the instruction.
    if (fault.memory) pc = cpu_->locate_faulting_instruction(pc, fault.address);
    const std::string description = std::string("killed by SIG") + sigabbrev_np(fault.signal) + ": " + fault.what +
                                    (fault.memory ? " at address " + hex(fault.address) : "") + ", pc " + hex(pc);
    recorder_->fault(pc, fault.address, static_cast<std::uint32_t>(fault.signal), description);
    recorder_->exited(true, 0, fault.signal);

    std::string dump_error;
    try {
      auto writer = formats::TextWriter::open(config_.crash_trace_path, arch::x86_64_arch());
      dump_error = writer ? recorder_->dump(**writer) : writer.error().to_string();
    } catch (const std::exception& error) {  // TextWriter throws when a write fails (fmt::print)
      dump_error = config_.crash_trace_path + ": " + error.what();
    }  // the writer has closed the file: before abort()
    std::fprintf(stderr, "fuzz_harness: guest %s\n", description.c_str());
    if (dump_error.empty())
      std::fprintf(stderr, "fuzz_harness: flight-recorder trace written to %s\n", config_.crash_trace_path.c_str());
    else
      std::fprintf(stderr, "fuzz_harness: cannot write the flight-recorder trace: %s\n", dump_error.c_str());
    std::abort();  // libFuzzer catches SIGABRT and saves the input
  }

  HarnessConfig config_;
  std::vector<std::uint8_t> zeros_;
  uc_engine* engine_ = nullptr;
  std::unique_ptr<arch::GuestCpu> cpu_;
  std::vector<uc_hook> hooks_;
  std::unique_ptr<core::Recorder> recorder_;
  GuestFault fault_;
  std::uint64_t previous_edge_ = 0;
  std::size_t previous_size_ = 0;
};

// Reads the environment; exits with a message on a bad value (a usage error, at start-up).
HarnessConfig config_from_environment() {
  HarnessConfig config;
  if (const char* path = std::getenv("TRACECORN_CRASH_TRACE"); path && *path) config.crash_trace_path = path;
  if (const char* name = std::getenv("TRACECORN_FUZZ_LEVEL"); name && *name) {
    const auto level = core::parse_trace_level(name);
    if (!level) {
      std::fprintf(stderr, "fuzz_harness: TRACECORN_FUZZ_LEVEL: unknown level \"%s\"\n", name);
      std::exit(2);
    }
    config.level = *level;
  }
  if (const char* bytes = std::getenv("TRACECORN_FUZZ_RING"); bytes && *bytes) {
    char* end = nullptr;
    config.ring_bytes = std::strtoull(bytes, &end, 0);
    if (*end != '\0') {
      std::fprintf(stderr, "fuzz_harness: TRACECORN_FUZZ_RING: not a number: \"%s\"\n", bytes);
      std::exit(2);
    }
  }
  return config;
}

ParserHarness& harness() {
  static const std::unique_ptr<ParserHarness> instance = [] {
    auto created = ParserHarness::create(config_from_environment());
    if (!created) {
      std::fprintf(stderr, "fuzz_harness: %s\n", created.error().to_string().c_str());
      std::exit(2);
    }
    return std::move(*created);
  }();
  return *instance;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  harness();  // set-up errors show before the first input
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  harness().run(data, size);
  return 0;
}
