// Role: what tracecorn knows about one guest architecture, as data plus a few
// per-engine hooks. Only arch/ knows architectures: the Linux layer, the recorder
// and the formats read these tables and never switch on an architecture.
// Adding an architecture = one new file here (see x86_64.cpp) plus one line in
// registry.cpp; no other code changes.
// Invariants: every ArchInfo is a constant with static storage; register tables
// list each register once; `registers[i].uc_id` are valid Unicorn ids for `uc_arch`.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>
#include <string_view>

#include <capstone/capstone.h>
#include <unicorn/unicorn.h>

#include "arch/linux_syscall_ids.h"
#include "arch/prologue.h"
#include "arch/signal_frame.h"
#include "recorder/support/expected.h"

namespace tracecorn::arch {

inline constexpr int kNoDwarfNumber = -1;

struct RegisterInfo {
  int uc_id;              // Unicorn register id
  std::string_view name;  // canonical lower-case name ("rax", "xmm0")
  std::uint8_t size;      // bytes
  int dwarf;              // DWARF register number, kNoDwarfNumber if none
};

// How a guest enters the kernel and where arguments live.
struct SyscallAbi {
  int number_reg;
  std::array<int, 6> arg_regs;
  int return_reg;
  std::string_view trap_instruction;  // "syscall", "svc #0", ...
  std::uint8_t trap_length = 0;       // bytes of the trap instruction (the user pc the kernel sees is after it)
  // First number of the architecture's private calls, far above the table's
  // (arm: __ARM_NR_BASE 0xf0000, set_tls = base + 5); 0: none. Formats whose
  // number field is narrower (UCIR's u16) store base + n as 0xf000 + n.
  std::uint64_t private_base = 0;
  // Arguments from index `register_arguments` on are not in arg_regs but in
  // words (the ABI's word size, guest byte order) on the user stack at sp +
  // stack_arguments_offset (mips o32: four registers, the 5th and 6th at sp+16).
  std::uint8_t register_arguments = 6;
  std::uint8_t stack_arguments_offset = 0;
  // set_thread_area(2) takes the thread pointer itself (mips), not i386's
  // struct user_desc.
  bool thread_area_is_pointer = false;
};

struct BintraceMachine;  // below

// Per-format identifiers (filled as each format lands; empty/zero = the format has no id).
struct FormatIds {
  std::string_view ucir_arch;        // UCIR header arch string ("x86_64")
  std::uint64_t bap_architecture;    // bap-frames frame_architecture
  std::uint64_t bap_machine;         // BFD mach number
  std::uint32_t bintrace_magic;      // binary trace v1.0 machine magic ('x641')
  const BintraceMachine* bintrace = nullptr;  // binary trace v1.0 machine description (nullptr: none)
  // Why there is no binary trace description although a magic exists (shown by
  // the writer's and the reader's refusals); empty otherwise.
  std::string_view bintrace_missing = {};
};

// How binary trace v1.0 (REVEN's rvnbintrace, github.com/tetrane/rvnbintrace trace-format.md)
// describes this architecture: the registers it declares, in declaration order
// (register id = position), where each value comes from, the register operations
// of the reference writer, and the static registers (CPUID facts).
struct BintraceRegister {
  enum class Source : std::uint8_t {
    kTable,     // the low `size` bytes of registers[table_index] (zero-extended when the table's is narrower)
    kConstant,  // `constant`: a value a user process cannot see (what Linux gives it; documented per arch)
    kDerived,   // computed from several table registers by BintraceMachine::derive (x86: x87 physical registers)
  };
  std::string_view name;  // the spec's name ("rax", "eflags", "msr_c0000100", "x87r0")
  std::uint16_t size;     // bytes in the file (at most kBintraceMaxRegisterBytes)
  Source source;
  std::uint16_t table_index;  // kTable
  std::uint64_t constant;     // kConstant (little endian, low `size` bytes)
};
inline constexpr std::size_t kBintraceMaxRegisterBytes = 64;  // zmm

struct BintraceStaticRegister {
  std::string_view name;  // "cpuid_pat"
  std::uint8_t value;     // one byte each, as the reference writers store them
};

struct BintraceMachine {
  std::uint32_t magic;                          // 'x641'
  std::span<const BintraceRegister> registers;  // ids 0..n-1 in this order
  // Register operations (reg = reg OP value), as the reference x64 writer
  // declares them: pc += 1..max_pc_step; each flag bit set (OR) and cleared
  // (AND); sp += each of sp_steps (negative steps wrap).
  std::string_view pc_register, sp_register, flags_register;  // names in `registers`
  std::uint8_t max_pc_step;
  std::span<const std::uint8_t> flag_bits;
  std::span<const std::int8_t> sp_steps;
  // Derived registers: `derive` writes the value of registers[index] (a kDerived
  // one) into `out` (its size) from the arch table's values (16 bytes each, table
  // order); `derived_inputs` lists the table indices any derived register reads.
  // `underive` is the inverse: it sets those table registers from the derived
  // registers' values (`values[i]` = registers[i]'s bytes, all of them given).
  void (*derive)(std::span<const std::array<std::uint8_t, 16>> table, std::size_t index, std::span<std::uint8_t> out);
  std::span<const std::uint16_t> derived_inputs;
  void (*underive)(std::span<const std::span<const std::uint8_t>> values, std::span<std::array<std::uint8_t, 16>> table);
  // The static registers, from the CPUID the guest sees. Fails (kEmulator) when
  // the CPU cannot be probed.
  Expected<std::vector<BintraceStaticRegister>> (*static_registers)();
};

// A file's status as the host's stat() gives it, in neutral form; each
// architecture encodes it as its own `struct stat` (ArchInfo::encode_stat).
struct FileStatus {
  std::uint64_t dev, ino, mode, nlink, uid, gid, rdev;
  std::uint64_t size, blksize, blocks;  // size and blocks are signed in the kernel: two's complement
  std::uint64_t atime_sec, atime_nsec, mtime_sec, mtime_nsec, ctime_sec, ctime_nsec;
};
inline constexpr std::size_t kMaxStatBytes = 144;  // the largest struct stat of any supported arch (x86-64)

// An open(2)/fcntl(F_GETFL) flag whose value on a guest architecture differs
// from x86-64's (asm-generic/fcntl.h, the host's): arm64 and arm swap
// O_DIRECT/O_LARGEFILE/O_DIRECTORY/O_NOFOLLOW (arch/arm64/include/uapi/asm/fcntl.h).
// Also serves as one guest/host pair of other numbers that differ (signal
// numbers, ioctl requests: see SignalAbi::numbers and ArchInfo::ioctl_requests).
struct FlagValue {
  std::uint32_t guest;
  std::uint32_t host;
};

// The kernel's struct termios: the host's size (4 flag words, c_line,
// c_cc[19]) and the largest of any guest (mips: c_cc[23]).
inline constexpr std::size_t kHostTermiosBytes = 36;
inline constexpr std::size_t kMaxTermiosBytes = 40;

// Flags translated through a {guest, host} bit table (open_flags,
// mmap_flags, mips' termios c_lflag): listed bits move, others pass
// unchanged. Never fails.
std::uint64_t translate_flags(std::span<const FlagValue> table, std::uint64_t flags, bool to_host);

// One field of a kernel struct: byte offset, width (1, 2, 4 or 8) and value.
struct StructField {
  std::size_t offset;
  std::size_t width;
  std::uint64_t value;
};
// Stores the low `width` bytes of `field.value` at `field.offset` of `out`, in
// the given byte order. The caller guarantees offset + width <= out.size().
inline void store_field(std::span<std::uint8_t> out, const StructField& field, bool little_endian) {
  for (std::size_t b = 0; b < field.width; ++b) {
    const std::size_t shift = 8 * (little_endian ? b : field.width - 1 - b);
    out[field.offset + b] = static_cast<std::uint8_t>(field.value >> shift);
  }
}

// Linux's address-space layout for a process of this architecture (no ASLR, as
// `setarch -R` gives), so that runs are reproducible.
struct AddressSpaceLayout {
  std::uint64_t stack_top;     // first byte above the initial stack
  std::uint64_t stack_size;    // bytes mapped for the main stack
  std::uint64_t mmap_top;      // mmap allocates top-down below this
  std::uint64_t et_dyn_base;   // load address of a position-independent main program
  std::uint64_t lowest_mmap;   // mmap never returns an address below this
};

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

// An architecture with two instruction sets the CPU switches between (arm: ARM
// and Thumb). Mode 0 is ArchInfo::capstone_mode's, mode 1 this one's. The CPU is
// in mode 1 when `uc_register` (read with Unicorn at a block's start) has any bit
// of `mask` set. Events and formats carry the mode per block and instruction.
struct AlternateInstructionSet {
  cs_mode capstone_mode;
  int uc_register;
  std::uint64_t mask;
  std::string_view names[2];  // each mode's name in traces ("ARM", "Thumb"), BAP's std_frame.mode
  // The unwinder's view: the trap instruction's size in mode 1 (0: the same as
  // SyscallAbi::trap_length), and whether code addresses of mode 1 carry bit 0
  // (arm interworking: a Thumb return address in lr is odd).
  std::uint8_t trap_length = 0;
  bool address_bit0 = false;
};

// How the signal syscalls' arguments look where they differ from x86-64's
// (mips: a 128-signal sigset, SIG_BLOCK = 1, struct sigaction with the flags first).
struct SignalAbi {
  std::uint8_t sigset_bytes = 8;       // _NSIG / 8: the size rt_sigaction/rt_sigprocmask require
  std::uint8_t sig_block = 0;          // SIG_BLOCK; SIG_UNBLOCK and SIG_SETMASK follow it
  bool sigaction_flags_first = false;  // struct sigaction { flags; handler; mask } (no restorer)
  // The signal numbers that differ from the host's ({guest, host}; mips:
  // SIGBUS 10 -> 7, SIGUSR1 16 -> 10...). A number in neither column is the
  // same on both; one that is only in the other column has no counterpart
  // (mips' SIGEMT 7, the host's SIGSTKFLT 16). Empty: the host's numbers.
  std::span<const FlagValue> numbers = {};
  // struct sigaction has an sa_restorer word after sa_flags (x86, arm, aarch64:
  // the architecture defines SA_RESTORER); riscv's and mips' have none.
  bool has_sa_restorer = true;
  std::uint32_t sa_siginfo = 4;  // SA_SIGINFO (mips: 8); the other SA_ flags are the same everywhere
  // siginfo_t's first three ints are signo, code, errno (mips) instead of signo, errno, code.
  bool siginfo_code_before_errno = false;
  // The instructions of a sigreturn trampoline (rt_sigreturn), in guest byte
  // order, for handlers installed without SA_RESTORER: what the kernel's vDSO
  // (aarch64, riscv64) or signal page holds. Empty: the C library always gives
  // a restorer (x86, arm), and a handler without one gets none.
  std::span<const std::uint8_t> sigreturn_trampoline = {};
  // stack_t is { ss_sp, ss_size, ss_flags } (mips) instead of { ss_sp, ss_flags, ss_size }.
  bool stack_size_before_flags = false;
  std::uint32_t min_signal_stack = 2048;  // MINSIGSTKSZ (aarch64: 5120)
};

// One instruction decoded from its encoding alone, for an architecture Capstone
// cannot decode (ArchInfo::decode_without_capstone): what the recorder needs of
// it, nothing more. Indices are into ArchInfo::registers.
struct EncodedInstruction {
  static constexpr std::size_t kMaxWritten = 3;  // riscv: rd, plus fcsr (FP flags), plus sp/ra at most
  std::uint8_t size = 0;                          // bytes; 0: not an instruction of the supported ISA
  std::uint8_t written_count = 0;                 // registers the instruction can write (x0 left out)
  std::array<std::uint16_t, kMaxWritten> written{};
  // Guest memory reads and writes Unicorn reports for one execution (as
  // ArchInfo::count_memory_accesses); `memory_count_fixed` false when it varies
  // (riscv's sc: none when it fails, a read and a write when it succeeds).
  std::uint8_t memory_reads = 0;
  std::uint8_t memory_writes = 0;
  bool memory_count_fixed = true;
  std::int16_t base_register = -1;  // the register an explicit memory operand's address starts from, -1: none
  std::int32_t memory_offset = 0;   // what the instruction adds to base_register's value to form the address
};

// How Debian's libLLVM names the disassembler of an architecture Capstone 4
// cannot disassemble (formats/text/llvm_disassembler.h).
struct LlvmTarget {
  std::string_view target;    // "RISCV": LLVMInitialize<target>TargetInfo, ...TargetMC, ...Disassembler
  std::string_view triple;    // "riscv64-unknown-linux-gnu"
  std::string_view features;  // "+m,+a,+f,+d,+c": the extensions the guest CPU has
};

struct ArchInfo {
  std::string_view name;          // "x86_64"
  uc_arch unicorn_arch;
  uc_mode unicorn_mode;
  cs_arch capstone_arch;
  cs_mode capstone_mode;
  // Why tracecorn cannot decode this architecture's instructions (so cannot
  // record it); empty when it can.
  std::string_view decoding_unsupported = {};
  // Every instruction's size in bytes where the ISA has one width the recorder
  // can step over when Capstone cannot decode an instruction (mips: 4); 0:
  // undecodable bytes end the block's decoding.
  std::uint8_t fixed_instruction_size = 0;
  // Set when the CPU has a second instruction set (arm's Thumb); nullptr: one mode.
  const AlternateInstructionSet* alternate_isa = nullptr;
  std::uint16_t elf_machine;      // EM_*
  bool elf_64bit;
  bool little_endian;
  std::string_view platform;      // AT_PLATFORM string; empty: the kernel gives none (riscv)
  std::string_view uname_machine;  // uname(2)'s machine field
  std::span<const RegisterInfo> registers;
  int pc_reg;
  int sp_reg;
  int fp_reg;
  // The DWARF column the unwinder keeps the pc in when the ABI numbers no pc
  // (riscv64); kNoDwarfNumber: the pc's own number in `registers` serves.
  int unwind_pc_column = kNoDwarfNumber;
  SyscallAbi syscall_abi;
  // 32-bit ABIs only: a 64-bit syscall argument split over two registers
  // starts at an even argument index (arm EABI, mips o32), skipping one.
  bool aligned_argument_pairs = false;
  SignalAbi signal_abi = {};
  // The open flags whose values differ from the host's (empty: none).
  std::span<const FlagValue> open_flags;
  // The mmap flags whose values differ from the host's (empty: none; mips).
  std::span<const FlagValue> mmap_flags = {};
  // ioctl(2) requests, when the architecture numbers them its own way (mips:
  // TCGETS 0x540d, _IOC direction bits at 29-31): every request the Linux layer
  // serves, {guest, host}; a request not listed has no meaning here (ENOTTY).
  // Empty: the host's numbers.
  std::span<const FlagValue> ioctl_requests = {};
  // getrlimit/prlimit64 resource numbers that differ from the host's ({guest,
  // host}, a permutation: mips' RLIMIT_NOFILE is 5, the host's 7); empty: the same.
  std::span<const FlagValue> rlimit_resources = {};
  // The kernel's struct termios (TCGETS/TCSETS*) where the guest's differs
  // from the host's (asm-generic: c_iflag, c_oflag, c_cflag, c_lflag words,
  // c_line, c_cc[19]: kHostTermiosBytes, little endian): `termios_to_guest`
  // writes the guest's form of `host` into `out` and returns its size;
  // `termios_to_host` reads the guest's form (`guest`, that size) back. Never
  // fail. nullptr: the host's layout, bytes copied as they are.
  std::size_t (*termios_to_guest)(std::span<const std::uint8_t, kHostTermiosBytes> host,
                                  std::span<std::uint8_t, kMaxTermiosBytes> out) = nullptr;
  void (*termios_to_host)(std::span<const std::uint8_t, kMaxTermiosBytes> guest,
                          std::span<std::uint8_t, kHostTermiosBytes> host) = nullptr;
  std::size_t termios_bytes = kHostTermiosBytes;  // the guest's sizeof(struct termios) as the kernel copies it
  // RLIM_INFINITY of the word-sized getrlimit of a 32-bit ABI: larger limits
  // read as this (mips o32: 0x7fffffff, arch/mips/include/uapi/asm/resource.h).
  std::uint32_t rlimit_infinity32 = 0xffffffff;
  // Encodes `status` as the `struct stat` that fstat/newfstatat write for this
  // architecture into `out`; returns the number of bytes used (never fails).
  std::size_t (*encode_stat)(const FileStatus& status, std::span<std::uint8_t, kMaxStatBytes> out);
  AddressSpaceLayout layout;
  FormatIds format_ids;

  // Maps this architecture's syscall number to the neutral id (SyscallId::unknown if none).
  SyscallId (*syscall_id)(std::uint64_t number);
  // Creates the per-engine support; sets the CPU state Linux gives a new process.
  Expected<std::unique_ptr<GuestCpu>> (*make_guest_cpu)(uc_engine* engine);

  // The index in `registers` of the full register that contains Capstone register
  // `capstone_register` (x86: al, ax, eax -> rax; ymm0 -> xmm0), or -1 when the
  // table does not track it. Used to turn Capstone's register access lists into
  // the registers an instruction can change.
  int (*register_index_for_capstone)(unsigned capstone_register);
  // Registers an instruction writes that Capstone's access list leaves out
  // (x86: the flags of `lock cmpxchg`, from the instruction's eflags detail),
  // appended as indices into `registers`.
  void (*add_unlisted_writes)(const cs_insn& insn, std::vector<std::uint16_t>& written);

  // How many guest memory reads and writes Unicorn reports for one execution of
  // `insn` (decoded with detail): explicit operands plus implicit stack and
  // string accesses, accesses wider than 8 bytes counting once per 8 bytes.
  // Returns false when the count is not fixed (rep prefixes, fxsave...).
  bool (*count_memory_accesses)(const cs_insn& insn, std::uint8_t& reads, std::uint8_t& writes);

  // The registers `insn` (decoded with detail) uses to form the addresses of its
  // explicit memory operands, as base and as index, appended as indices into
  // `registers` (each once). Used by BAP frames' operand_usage base/index flags.
  void (*address_registers)(const cs_insn& insn, std::vector<std::uint16_t>& base, std::vector<std::uint16_t>& index);

  // Set when Capstone has no decoder for the architecture (capstone_arch is then
  // CS_ARCH_MAX and the Capstone hooks above answer "unknown"): decodes the
  // instruction at the start of `bytes` (untrusted guest memory, any length)
  // into `out`. Returns false, with out.size 0, when the bytes are not an
  // instruction (or are cut short); never reads past `bytes`. nullptr: Capstone
  // decodes this architecture.
  bool (*decode_without_capstone)(std::span<const std::uint8_t> bytes, EncodedInstruction& out) = nullptr;

  // Where the text format gets disassembly when Capstone cannot give it; nullptr: Capstone does.
  const LlvmTarget* llvm_target = nullptr;

  // The unwinder's last resort for code no unwind table covers: reads a
  // function's prologue as gdb's heuristic unwinder for this architecture
  // does (arch/prologue.h). nullptr: none (x86-64, aarch64, i386).
  PrologueAnalyzer analyze_prologue = nullptr;

  // Finds a register by canonical name; nullptr if this architecture has none.
  const RegisterInfo* find_register(std::string_view register_name) const;
};

// The registers `insn` (decoded with detail by `handle`) reads and writes, as
// indices into `arch.registers`: full registers (al -> rax), each once, in
// Capstone's access-list order, the writes followed by add_unlisted_writes.
// `read` may be null. Registers the table does not track are left out; when
// Capstone cannot give the access lists, only add_unlisted_writes' are given.
void instruction_registers(const ArchInfo& arch, csh handle, const cs_insn& insn, std::vector<std::uint16_t>* read,
                           std::vector<std::uint16_t>& written);

// The Capstone mode that decodes instruction-set `mode` (0: capstone_mode, 1:
// alternate_isa's; any other value, or 1 without an alternate, gives capstone_mode).
cs_mode capstone_mode_for(const ArchInfo& arch, std::uint8_t mode);

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

// Open flags translated between the guest's values and the host's, by
// `arch.open_flags`; bits not listed there pass unchanged. Never fail.
std::uint64_t open_flags_to_host(const ArchInfo& arch, std::uint64_t guest_flags);
std::uint64_t open_flags_to_guest(const ArchInfo& arch, std::uint64_t host_flags);
// mmap flags from the guest's values to the host's, by `arch.mmap_flags`. Never fails.
std::uint64_t mmap_flags_to_host(const ArchInfo& arch, std::uint64_t guest_flags);

// A signal number translated between the guest's numbering and the host's, by
// `arch.signal_abi.numbers`: returns 0 for 0 and when the other side has no
// such signal (mips' SIGEMT). Never fails.
int signal_to_host(const ArchInfo& arch, int guest_signal);
int signal_to_guest(const ArchInfo& arch, int host_signal);
// A set of signals 1-64 (bit n-1 = signal n) translated the same way; signals
// with no counterpart are dropped. Never fail.
std::uint64_t signal_set_to_host(const ArchInfo& arch, std::uint64_t guest_set);
std::uint64_t signal_set_to_guest(const ArchInfo& arch, std::uint64_t host_set);

// A getrlimit/prlimit64 resource number from the guest's numbering to the
// host's, by `arch.rlimit_resources` (unlisted numbers unchanged). Never fails.
int rlimit_resource_to_host(const ArchInfo& arch, int guest_resource);

// An ioctl request translated by `arch.ioctl_requests`: the host's request, or
// nullopt when the guest's is not one the table lists (the layer answers
// ENOTTY); the guest's request for a host one, nullopt when the table has none.
// Unchanged both ways when the table is empty. Never fail.
std::optional<std::uint64_t> ioctl_request_to_host(const ArchInfo& arch, std::uint64_t guest_request);
std::optional<std::uint64_t> ioctl_request_to_guest(const ArchInfo& arch, std::uint64_t host_request);

// The architecture an ELF header names, or nullptr when tracecorn does not support it.
const ArchInfo* find_arch_for_elf(std::uint16_t elf_machine, bool is_64bit, bool little_endian);

// Every supported architecture.
std::span<const ArchInfo* const> all_archs();

// Defined by each architecture's file.
const ArchInfo& x86_64_arch();
const ArchInfo& aarch64_arch();
const ArchInfo& riscv64_arch();
const ArchInfo& arm_arch();
const ArchInfo& i386_arch();
const ArchInfo& mips_arch();    // big endian
const ArchInfo& mipsel_arch();  // little endian

}  // namespace tracecorn::arch
