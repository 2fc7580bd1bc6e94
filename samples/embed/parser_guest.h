// Role: the fuzz harness's guest and its engine set-up, shared by the harness
// (fuzz_harness.cpp, which records it with a flight recorder) and by the
// program that replays the harness's crash traces against the same set-up
// (fuzz_trace_replay.cpp, through replay::replay_engine_trace). Building the
// engine in one place is what makes a replay re-run the recorded code on the
// recorded memory layout.
// Who calls it: one thread per ParserGuest (Unicorn engines are not shared).
// Invariants: the engine holds the parser's code, the input, record buffer and
// stack pages, the CPU state Linux gives a process (arch::GuestCpu), and two
// hooks that note faults; run() writes the input and the four argument
// registers, so a run depends only on its input (not on earlier inputs).
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
#pragma once

#include <algorithm>
#include <csignal>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <unicorn/unicorn.h>

#include "recorder/core/recorder.h"

namespace tracecorn::samples {

inline constexpr std::uint8_t kParserCode[] = {
    0xb8, 0xff, 0xff, 0xff, 0xff, 0x48, 0x83, 0xfe, 0x04, 0x72, 0x3b, 0x80, 0x3f, 0x54, 0x75, 0x36,
    0x80, 0x7f, 0x01, 0x43, 0x75, 0x30, 0x80, 0x7f, 0x02, 0x01, 0x75, 0x2a, 0x0f, 0xbe, 0x4f, 0x03,
    0x83, 0xf9, 0x40, 0x7f, 0x21, 0x0f, 0xb6, 0x4f, 0x03, 0x45, 0x31, 0xc9, 0x31, 0xc0, 0x49, 0x39,
    0xc9, 0x74, 0x12, 0x46, 0x0f, 0xb6, 0x54, 0x0f, 0x04, 0x46, 0x88, 0x14, 0x0a, 0x44, 0x01, 0xd0,
    0x49, 0xff, 0xc1, 0xeb, 0xe9, 0xc3, 0xc3,
};

// Guest memory: one page each. The record buffer is the last 64 bytes of its
// page, and the page after it is unmapped.
inline constexpr std::uint64_t kPageSize = 0x1000;
inline constexpr std::uint64_t kParserAddress = 0x10000;
inline constexpr std::uint64_t kFaultingStore = kParserAddress + 0x39;
inline constexpr std::uint64_t kReturnAddress = kParserAddress + 0x800;  // a hlt; the emulation stops before it
inline constexpr std::uint64_t kInputAddress = 0x20000;
inline constexpr std::size_t kInputCapacity = 4 * kPageSize;  // longer inputs are cut (libFuzzer's default -max_len is 4096)
inline constexpr std::uint64_t kRecordBuffer = 0x40000 + kPageSize - 64;
inline constexpr std::uint64_t kStackTop = 0x60000 + kPageSize;
inline constexpr std::uint64_t kMaxInstructions = 1 << 16;  // the parser needs at most ~1300

// How a run ended when the guest crashed: what the fault hooks saw, the exact
// faulting instruction, and the description tracecorn's Linux layer would give.
struct GuestCrash {
  int signal = 0;
  std::uint64_t pc = 0;
  std::uint64_t address = 0;
  std::string description;
};

// Tells a recorder about a crash as tracecorn's Linux layer does: the fault at
// the exact instruction, then the end of the process by the signal.
inline void report_crash(core::Recorder& recorder, const GuestCrash& crash) {
  recorder.fault(crash.pc, crash.address, static_cast<std::uint32_t>(crash.signal), crash.description);
  recorder.exited(true, 0, crash.signal);
}

class ParserGuest {
 public:
  // Opens an x86-64 engine and sets the guest up. Fails with kEmulator (or the
  // arch's GuestCpu error) when Unicorn refuses a step.
  static Expected<std::unique_ptr<ParserGuest>> create() {
    std::unique_ptr<ParserGuest> guest(new ParserGuest());
    if (auto status = guest->init(); !status) return status.error();
    return guest;
  }
  ~ParserGuest() {
    for (uc_hook hook : hooks_) uc_hook_del(engine_, hook);
    cpu_.reset();
    if (engine_) uc_close(engine_);
  }
  ParserGuest(const ParserGuest&) = delete;
  ParserGuest& operator=(const ParserGuest&) = delete;

  uc_engine* engine() const { return engine_; }
  const arch::ArchInfo& arch() const { return arch::x86_64_arch(); }

  // Adds a hook of the caller's (the harness's coverage) to the engine; false when Unicorn refuses.
  bool add_hook(int type, void* callback, void* user) {
    uc_hook hook = 0;
    if (uc_hook_add(engine_, &hook, type, callback, user, 1, 0) != UC_ERR_OK) return false;
    hooks_.push_back(hook);
    return true;
  }

  // Runs the parser on `input` (untrusted: any bytes; cut to kInputCapacity).
  // Returns true when the guest returned, false when it crashed (see crash()).
  bool run(const std::uint8_t* input, std::size_t size) {
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
    fault_ = Fault{};

    const uc_err err = uc_emu_start(engine_, kParserAddress, kReturnAddress, 0, kMaxInstructions);
    if (!fault_.seen && err == UC_ERR_OK) return true;
    locate_crash(err);
    return false;
  }
  // The last run's crash (valid after run() returned false).
  const GuestCrash& crash() const { return crash_; }

 private:
  // What the fault hooks saw during one run.
  struct Fault {
    bool seen = false;
    int signal = 0;
    std::uint64_t address = 0;
    bool memory = false;
    const char* what = "";
  };

  ParserGuest() : zeros_(kInputCapacity, 0) {}

  Status init() {
    const arch::ArchInfo& x86 = arch();
    if (uc_open(x86.engine->unicorn_arch, x86.engine->unicorn_mode, &engine_) != UC_ERR_OK)
      return make_error(ErrorCode::kEmulator, "cannot open a Unicorn engine");
    // The CPU state Linux gives a process, and the fault locator (see locate_crash()).
    auto cpu = x86.engine->make_guest_cpu(engine_);
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
    if (!add_hook(UC_HOOK_MEM_INVALID, reinterpret_cast<void*>(&on_invalid_memory), this) ||
        !add_hook(UC_HOOK_INTR, reinterpret_cast<void*>(&on_interrupt), this))
      return make_error(ErrorCode::kEmulator, "cannot add the guest's fault hooks");
    return ok_status();
  }

  static const char* access_name(uc_mem_type type) {
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

  static std::string hex(std::uint64_t value) {
    char buffer[24];
    std::snprintf(buffer, sizeof buffer, "0x%llx", static_cast<unsigned long long>(value));
    return buffer;
  }

  static bool on_invalid_memory(uc_engine*, uc_mem_type type, std::uint64_t address, int, std::int64_t,
                                void* user) noexcept {
    auto* self = static_cast<ParserGuest*>(user);
    if (!self->fault_.seen) self->fault_ = Fault{true, SIGSEGV, address, true, access_name(type)};
    return false;  // the access fails: uc_emu_start returns an error
  }

  static void on_interrupt(uc_engine* engine, std::uint32_t number, void* user) noexcept {
    auto* self = static_cast<ParserGuest*>(user);
    if (!self->fault_.seen) {
      const int signal = self->cpu_->signal_for_interrupt(number);
      self->fault_ = Fault{true, signal ? signal : SIGILL, 0, false, "CPU exception"};
    }
    uc_emu_stop(engine);
  }

  // The exact faulting instruction and the description, into crash_.
  void locate_crash(uc_err err) {
    std::uint64_t pc = 0;
    uc_reg_read(engine_, UC_X86_REG_RIP, &pc);
    Fault fault = fault_;
    if (!fault.seen)  // no hook saw it: an invalid instruction, or an instruction limit
      fault = Fault{true, err == UC_ERR_INSN_INVALID ? SIGILL : SIGSEGV, 0, false, uc_strerror(err)};
    // Unicorn 2.0.1 reports the start of the translation block after a memory
    // fault (upstream #1323, #2040); the arch's locator finds the instruction.
    if (fault.memory) pc = cpu_->locate_faulting_instruction(pc, fault.address);
    crash_ = GuestCrash{fault.signal, pc, fault.address,
                        std::string("killed by SIG") + sigabbrev_np(fault.signal) + ": " + fault.what +
                            (fault.memory ? " at address " + hex(fault.address) : "") + ", pc " + hex(pc)};
  }

  std::vector<std::uint8_t> zeros_;
  uc_engine* engine_ = nullptr;
  std::unique_ptr<arch::GuestCpu> cpu_;
  std::vector<uc_hook> hooks_;
  Fault fault_;
  GuestCrash crash_;
  std::size_t previous_size_ = 0;
};

}  // namespace tracecorn::samples
