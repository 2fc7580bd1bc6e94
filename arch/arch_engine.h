// Role: the engine side of an architecture: Unicorn's and Capstone's ids for it,
// the per-engine CPU support (GuestCpu: the trap into the kernel, TLS, signal
// frames), the Capstone hooks the recorder uses to know what an instruction
// reads, writes and accesses, and the Capstone helpers over them. The facts
// (registers, ABIs, format ids) are in arch/arch_info.h, which this includes.
// Who includes it: arch/'s own sources, the Linux layer, the recorder core and
// the engine helpers (recorder/engine); never the formats nor the unwinder
// (scripts/check_layering.sh enforces it: they use arch/instruction_decoder.h).
// Threads: ArchEngine is a constant table, read from any thread; a GuestCpu
// belongs to one engine and runs on its emulation thread only.
// Invariants: every ArchEngine is a constant with static storage, one per
// ArchInfo (ArchInfo::engine); its hooks are pure functions of their arguments.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include <capstone/capstone.h>
#include <unicorn/unicorn.h>

#include "arch/arch_info.h"
#include "arch/signal_frame.h"
#include "recorder/support/expected.h"

namespace tracecorn::arch {

struct DerivedWrites;  // arch/derived_registers.h

// Per-engine support an architecture installs on a uc_engine: CPU state that
// Linux programs rely on, and the trap into the kernel. Owned by whoever owns
// the engine; must be destroyed before the engine is closed. Not thread safe:
// one instance per engine, used on the emulation thread only.
class GuestCpu {
 public:
  using SyscallCallback = void (*)(void* user) noexcept;

  virtual ~GuestCpu() = default;

  // Installs the hook that calls `callback(user)` at every kernel entry. Inside
  // the callback, `trap_pc()` is the address of the trapping instruction.
  virtual Status install_syscall_trap(SyscallCallback callback, void* user) = 0;

  // Address of the instruction that trapped into the kernel (convention shared by
  // the syscall layer and the unwinder: frame 0 of a syscall is the trap instruction).
  virtual std::uint64_t trap_pc() const = 0;

  // Makes the guest resume at `pc` when the current syscall callback returns.
  virtual void resume_at(std::uint64_t pc) = 0;

  // Register side effects of the kernel entry/exit path (x86-64: rcx = return
  // address, r11 = rflags). Called once per syscall, before the callback returns.
  virtual void apply_kernel_exit_effects() = 0;

  // The AT_HWCAP value Linux would give this CPU.
  virtual std::uint64_t hwcap() const = 0;

  // Sets the thread pointer (TLS base) the way the kernel does for this arch.
  virtual Status set_thread_pointer(std::uint64_t value) = 0;
  virtual std::uint64_t thread_pointer() const = 0;

  // The host signal the kernel would send for CPU exception `interrupt_number`
  // (as Unicorn's UC_HOOK_INTR reports it), or 0 when it is not a fault.
  virtual int signal_for_interrupt(std::uint32_t interrupt_number) const = 0;

  // The address of the instruction that made the memory access to `fault_address`,
  // given the pc Unicorn reports after a memory fault. Unicorn 2.0.1 reports the
  // start of the translation block, not the instruction (upstream #1323, #2040);
  // an architecture that can find the instruction (by decoding the block and
  // evaluating its memory operands) returns it, else `reported_pc`.
  virtual std::uint64_t locate_faulting_instruction(std::uint64_t reported_pc,
                                                    std::uint64_t fault_address) const = 0;

  // Runs, in place of the CPU, the user-mode instruction that raised CPU
  // exception `interrupt_number` where Linux lets a program run it and
  // Unicorn does not (riscv64's rdtime, rdcycle, rdinstret: the kernel opens
  // the counters to user mode); the guest then goes on after it. Returns
  // false (a fault, as before) for any other instruction. From the
  // UC_HOOK_INTR hook, before the exception is taken as a fault.
  virtual bool emulate_refused_instruction(std::uint32_t interrupt_number) {
    (void)interrupt_number;
    return false;
  }

  // The address of the instruction that raised the CPU exception the last
  // signal_for_interrupt() call classified, where Unicorn's pc (`reported_pc`)
  // is not it (mips' break and trap: Unicorn 2.0.1 gives no pc with them);
  // `reported_pc` otherwise, and when the instruction was not found.
  virtual std::uint64_t exception_pc(std::uint64_t reported_pc) const { return reported_pc; }

  // 32-bit x86's set_thread_area(2): installs the TLS descriptor `user_desc`
  // (struct user_desc of <asm/ldt.h>, 16 bytes, little endian) and, when its
  // entry_number is -1, stores the entry chosen into it. Returns 0 or a negative
  // errno; -ENOSYS (38) where the architecture has no such call.
  virtual int set_thread_area(std::span<std::uint8_t, 16> user_desc) {
    (void)user_desc;
    return -38;
  }
  // Loads the thread pointer again from where set_thread_area put it (i386:
  // reloads GS from the GDT, as a new thread's first instruction sees it).
  virtual void reload_thread_pointer() {}

  // Signal delivery (arch/signal_frame.h). Whether this architecture lays out
  // signal frames; without them the Linux layer applies a handled signal's
  // default action and says so once.
  virtual bool has_signal_frames() const { return false; }
  // The pc the guest resumes at when the current syscall returns (the
  // instruction after the trap). Valid inside the syscall callback only.
  virtual std::uint64_t syscall_return_pc() const { return trap_pc(); }
  // Where a restarted syscall resumes (SA_RESTART): its trap instruction, as
  // resume_at() takes it (arm: bit 0 set in Thumb state).
  virtual std::uint64_t syscall_restart_pc() const { return trap_pc(); }
  // Lays out the frame for `request` from the registers now (the interrupted
  // code's state, its pc given as request.resume_pc). Never fails.
  virtual SignalFrame build_signal_frame(const SignalFrameRequest& request) const {
    (void)request;
    return {};
  }
  // Sets the registers the handler starts with: its arguments (signal,
  // &siginfo, &ucontext), the stack pointer and the return address. Not the
  // pc: the caller resumes at request.handler (resume_at() inside a syscall,
  // the next run's start otherwise).
  virtual void enter_signal_handler(const SignalFrameRequest& request, const SignalFrame& frame) {
    (void)request;
    (void)frame;
  }
  // rt_sigreturn (`rt`) or the old sigreturn: reads the frame the stack
  // pointer points into (untrusted guest memory), restores every register it
  // holds except the pc, and returns the pc and the rest. nullopt when the
  // frame cannot be read (Linux then kills the process with SIGSEGV).
  virtual std::optional<SignalReturn> return_from_signal(bool rt) {
    (void)rt;
    return std::nullopt;
  }
};

// What Unicorn and Capstone need to know of an architecture, and the hooks that
// turn Capstone's view of an instruction into ArchInfo::registers indices.
struct ArchEngine {
  uc_arch unicorn_arch;
  uc_mode unicorn_mode;
  cs_arch capstone_arch;  // CS_ARCH_MAX: Capstone cannot decode it (ArchInfo::decode_without_capstone)
  cs_mode capstone_mode;
  // Capstone's mode for the alternate instruction set (ArchInfo::alternate_isa,
  // arm's Thumb); unused without one.
  cs_mode alternate_capstone_mode = CS_MODE_LITTLE_ENDIAN;

  // Creates the per-engine support; sets the CPU state Linux gives a new process.
  Expected<std::unique_ptr<GuestCpu>> (*make_guest_cpu)(uc_engine* engine);

  // The index in ArchInfo::registers of the full register that contains Capstone
  // register `capstone_register` (x86: al, ax, eax -> rax; ymm0 -> xmm0), or -1
  // when the table does not track it. Used to turn Capstone's register access
  // lists into the registers an instruction can change.
  int (*register_index_for_capstone)(unsigned capstone_register);
  // Registers an instruction writes that Capstone's access list leaves out
  // (x86: the flags of `lock cmpxchg`, from the instruction's eflags detail),
  // appended as indices into ArchInfo::registers.
  void (*add_unlisted_writes)(const cs_insn& insn, std::vector<std::uint16_t>& written);
  // Where Capstone gives no access lists at all (MIPS): the registers `insn`
  // reads, by the architecture's operand conventions, appended as indices
  // into ArchInfo::registers; true when they are listed. nullptr: Capstone's
  // lists are the only ones.
  bool (*add_unlisted_reads)(const cs_insn& insn, std::vector<std::uint16_t>& read) = nullptr;

  // How many guest memory reads and writes Unicorn reports for one execution of
  // `insn` (decoded with detail): explicit operands plus implicit stack and
  // string accesses, accesses wider than 8 bytes counting once per 8 bytes.
  // Returns false when the count is not fixed (rep prefixes, fxsave...).
  bool (*count_memory_accesses)(const cs_insn& insn, std::uint8_t& reads, std::uint8_t& writes);

  // The registers `insn` (decoded with detail) uses to form the addresses of its
  // explicit memory operands, as base and as index, appended as indices into
  // ArchInfo::registers (each once). Used by BAP frames' operand_usage base/index flags.
  void (*address_registers)(const cs_insn& insn, std::vector<std::uint16_t>& base, std::vector<std::uint16_t>& index);

  // The instruction semantics behind derived registers (arch/derived_registers.h):
  // fills `out` with the recipe of `insn` (decoded with detail) and returns true
  // when the architecture computes it; nullptr: no recipes (every architecture
  // but x86-64 and i386).
  bool (*describe_derived_writes)(const ArchInfo& arch, const cs_insn& insn, DerivedWrites& out) = nullptr;
};

// The registers `insn` (decoded with detail by `handle`) reads and writes, as
// indices into `arch.registers`: full registers (al -> rax), each once, in
// Capstone's access-list order, the writes followed by the engine's add_unlisted_writes.
// `read` may be null. Registers the table does not track are left out; when
// Capstone cannot give the access lists, only add_unlisted_writes' are given
// (and false is returned: the reads are not known).
bool instruction_registers(const ArchInfo& arch, csh handle, const cs_insn& insn, std::vector<std::uint16_t>* read,
                           std::vector<std::uint16_t>& written);

// The Capstone mode that decodes instruction-set `mode` (0: the engine's
// capstone_mode, 1: its alternate_capstone_mode when the architecture has an
// alternate instruction set; any other value, or 1 without one, gives capstone_mode).
cs_mode capstone_mode_for(const ArchInfo& arch, std::uint8_t mode);
// "" when `engine` emulates `arch` (its Unicorn arch and mode), else why not:
// a recorder on the wrong engine would decode garbage.
std::string engine_mismatch(uc_engine* engine, const ArchInfo& arch);

// The instructions `handle` (opened for `arch`) decodes in `code` at `address`,
// from the start; where it cannot decode, a fixed-width ISA
// (arch.fixed_instruction_size) counts an opaque instruction and goes on,
// others stop. `undecoded` is set to the bytes left undecoded (0: all). Never fails.
std::uint32_t count_instructions(const ArchInfo& arch, csh handle, std::span<const std::uint8_t> code,
                                 std::uint64_t address, std::size_t& undecoded);

// Opens a Capstone handle for every mode of `arch` (one, or two with an
// alternate instruction set) into `handles` (unused entries 0), with detail on
// when `detail`. Returns false (and closes what it opened) when Capstone fails.
bool open_capstone_handles(const ArchInfo& arch, bool detail, std::array<csh, 2>& handles);
void close_capstone_handles(std::array<csh, 2>& handles);

}  // namespace tracecorn::arch
