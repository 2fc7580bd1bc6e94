// Role: the facts tracecorn knows about one guest architecture (names, register
// numbering, DWARF numbers, syscall ABI and numbers, signal ABI, struct layouts,
// format ids), as data that needs neither Unicorn nor Capstone. Only arch/ knows
// architectures: the Linux layer, the recorder, the formats and the unwinder read
// these tables and never switch on an architecture. Formats and the unwinder
// include this header (and arch/instruction_decoder.h), never arch/arch_engine.h:
// scripts/check_layering.sh fails the build when Unicorn or Capstone reaches them.
// The engine side of each architecture (CPU set-up, Capstone hooks) is its
// ArchEngine (arch/arch_engine.h), reached through ArchInfo::engine.
// Adding an architecture = one new file here (see x86_64.cpp) plus one line in
// registry.cpp; no other code changes.
// Threads: constant tables, read from any thread.
// Invariants: every ArchInfo is a constant with static storage; register tables
// list each register once; `registers[i].uc_id` are valid Unicorn ids for the
// engine's unicorn_arch (plain ints here: Unicorn's numbering, not its header).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>
#include <string>
#include <string_view>

#include "arch/linux_syscall_ids.h"
#include "arch/prologue.h"
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
  // clone(2)'s argument order: (flags, stack, parent_tid, tls, child_tid) on
  // the architectures with CONFIG_CLONE_BACKWARDS (i386, arm, aarch64,
  // riscv64, mips), else (flags, stack, parent_tid, child_tid, tls) (x86-64).
  bool clone_tls_before_child_tid = false;
  // CLONE_SETTLS's argument is a struct user_desc, as set_thread_area takes (i386).
  bool clone_tls_is_user_desc = false;
  // struct epoll_event is packed (12 bytes: events, then data at offset 4) on
  // x86-64 and i386 (__EPOLL_PACKED in <sys/epoll.h>); elsewhere data is at 8.
  bool epoll_event_packed = false;
};

struct BintraceMachine;  // below
struct ArchEngine;       // arch/arch_engine.h: the Unicorn and Capstone side

// Per-format identifiers (filled as each format lands; empty/zero = the format has no id).
struct TenetRegister {
  std::string_view tenet_name;  // "rax", "fp"
  std::string_view table_name;  // RegisterInfo::name ("rax", "x29")
};

struct FormatIds {
  std::string_view ucir_arch;        // UCIR header arch string ("x86_64")
  std::uint64_t bap_architecture;    // bap-frames frame_architecture
  std::uint64_t bap_machine;         // BFD mach number
  std::uint32_t bintrace_magic;      // binary trace v1.0 machine magic ('x641')
  const BintraceMachine* bintrace = nullptr;  // binary trace v1.0 machine description (nullptr: none)
  // Why there is no binary trace description although a magic exists (shown by
  // the writer's and the reader's refusals); empty otherwise.
  std::string_view bintrace_missing = {};
  // Tenet's text trace (github.com/gaasedelen/tenet, tracers/README.md): the
  // registers its architecture definition parses, as {Tenet's name, the
  // table's name}, the program counter last; empty when Tenet reads no trace
  // of this architecture.
  std::span<const TenetRegister> tenet_registers = {};
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

// A page Linux maps into every process of the architecture at a fixed
// address, read-only and executable (arm's vectors page, whose top holds the
// "kuser helpers" old ARM code and Go's runtime call: cmpxchg, the memory
// barrier, get_tls, their count; Documentation/arch/arm/kernel_user_helpers.rst).
struct FixedPage {
  std::uint64_t address;               // page aligned
  std::uint64_t offset;                // where `bytes` go in the page (the rest is zero)
  std::span<const std::uint8_t> bytes;
  std::string_view name;               // as /proc/PID/maps names it ("[vectors]")
};

// An architecture with two instruction sets the CPU switches between (arm: ARM
// and Thumb). Mode 0 is the architecture's own, mode 1 this one's (Capstone's
// modes for each: ArchEngine::capstone_mode, ArchEngine::alternate_capstone_mode).
// The CPU is in mode 1 when `uc_register` (a Unicorn register id, read at a
// block's start) has any bit of `mask` set. Events and formats carry the mode per
// block and instruction.
struct AlternateInstructionSet {
  int uc_register;
  std::uint64_t mask;
  std::string_view names[2];  // each mode's name in traces ("ARM", "Thumb"), BAP's std_frame.mode
  // The unwinder's view: the trap instruction's size in mode 1 (0: the same as
  // SyscallAbi::trap_length), and whether code addresses of mode 1 carry bit 0
  // (arm interworking: a Thumb return address in lr is odd).
  std::uint8_t trap_length = 0;
  bool address_bit0 = false;
};

// Where a signal frame keeps one interrupted register: one word (the ABI's
// size, guest byte order) at `offset` bytes from the stack pointer the
// handler returns with, the sp a sigreturn trampoline runs on. `uc_id` names
// the register as ArchInfo::registers does (its pc_reg for the pc).
struct SavedRegisterSlot {
  int uc_id;
  std::int32_t offset;
};

// A signal trampoline as gdb recognises one (its *_linux_sigtramp and
// tramp_frame matchers): the instructions at the address a handler returns
// to, and where the frame that trampoline unwinds keeps the interrupted
// registers (the kernel's sigcontext/ucontext layout, taken from the frame
// builders in arch/*_signal.cpp).
struct SignalTrampoline {
  std::span<const std::uint8_t> code;
  std::span<const SavedRegisterSlot> saved;
  bool rt = true;  // returns from an rt frame (rt_sigreturn), else from an old one (sigreturn)
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
  std::uint32_t sa_siginfo = 4;  // SA_SIGINFO (mips: 8)
  std::uint32_t sa_nocldwait = 2;  // SA_NOCLDWAIT (mips: 0x10000); the other SA_ flags are the same everywhere
  // siginfo_t's first three ints are signo, code, errno (mips) instead of signo, errno, code.
  bool siginfo_code_before_errno = false;
  // si_code of a POSIX timer's signal: SI_TIMER, -2 (mips: -3, its SI_ASYNCIO and SI_TIMER are swapped).
  int si_timer_code = -2;
  // The instructions of a sigreturn trampoline (rt_sigreturn), in guest byte
  // order, for handlers installed without SA_RESTORER: what the kernel's vDSO
  // (aarch64, riscv64) or signal page holds. Empty: the C library always gives
  // a restorer (x86, arm), and a handler without one gets none.
  std::span<const std::uint8_t> sigreturn_trampoline = {};
  // stack_t is { ss_sp, ss_size, ss_flags } (mips) instead of { ss_sp, ss_flags, ss_size }.
  bool stack_size_before_flags = false;
  std::uint32_t min_signal_stack = 2048;  // MINSIGSTKSZ (aarch64: 5120)
  // Every signal trampoline a handler may return to (glibc's restorers, the
  // kernel's vDSO or sigpage code, tracecorn's trampoline page), for the
  // unwinder to step through a signal frame. Empty: none known.
  std::span<const SignalTrampoline> trampolines = {};
};

// One instruction decoded from its encoding alone, for an architecture Capstone
// cannot decode (ArchInfo::decode_without_capstone): what the recorder needs of
// it, nothing more. Indices are into ArchInfo::registers.
struct EncodedInstruction {
  static constexpr std::size_t kMaxWritten = 3;  // riscv: rd, plus fcsr (FP flags), plus sp/ra at most
  std::uint8_t size = 0;                          // bytes; 0: not an instruction of the supported ISA
  std::uint8_t written_count = 0;                 // registers the instruction can write (x0 left out)
  std::array<std::uint16_t, kMaxWritten> written{};
  // The registers whose values it uses (x0 left out: it reads as zero; the
  // pc, and the rounding mode in fcsr, left out too), as indices into
  // ArchInfo::registers: what `why` follows.
  static constexpr std::size_t kMaxRead = 3;  // riscv: rs1, rs2, rs3
  std::uint8_t read_count = 0;
  std::array<std::uint16_t, kMaxRead> read{};
  // Guest memory reads and writes Unicorn reports for one execution (as
  // ArchEngine::count_memory_accesses); `memory_count_fixed` false when it varies
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

// How gdb sees the architecture over its remote protocol (the gdb manual's
// "Target Descriptions" and "Standard Target Features"): the architecture
// name of the target description, its features in order, and for each
// register gdb's name, width and type and the table register it shows. gdb's
// register numbers are the registers' positions in this order. A register
// with no table register (or one a trace has not told) is "unavailable" to
// gdb, never a zero. Used by the time-travel debugger (recorder/debug/).
struct GdbRegister {
  std::string_view name;        // gdb's name ("eflags", "cpsr")
  std::uint16_t bits;           // gdb's width; the table value is zero-extended or cut to it
  std::string_view type;        // a gdb predefined type or one the feature defines ("int64", "i386_eflags")
  std::string_view table_name;  // RegisterInfo::name it shows ("rflags"); empty: the trace never has it
};
struct GdbFeature {
  std::string_view name;        // "org.gnu.gdb.i386.core"
  std::string_view types_xml;   // the <flags>, <vector> and <union> elements its registers' types need
  std::span<const GdbRegister> registers;
};
struct GdbTarget {
  std::string_view architecture;  // the description's <architecture> ("i386:x86-64")
  std::span<const GdbFeature> features;
  // gdb's have_nonsteppable_watchpoint for it: a watchpoint stops before the
  // writing instruction completes and gdb steps over it itself (arm, aarch64,
  // mips, riscv); false: the stop comes after the write (x86).
  bool watchpoint_before_write = true;
};

struct ArchInfo {
  std::string_view name;          // "x86_64"
  // Why tracecorn cannot decode this architecture's instructions (so cannot
  // record it); empty when it can.
  std::string_view decoding_unsupported = {};
  // Every instruction's size in bytes where the ISA has one width the recorder
  // can step over when Capstone cannot decode an instruction (mips: 4); 0:
  // undecodable bytes end the block's decoding.
  std::uint8_t fixed_instruction_size = 0;
  // The size of a branch's delay slot, the instruction after a branch that runs
  // before the branch takes effect (mips: 4); 0: no delay slots. With one,
  // `has_delay_slot` says whether the instruction `bytes` (its encoding, guest
  // byte order) is a branch or jump followed by a delay slot.
  std::uint8_t branch_delay_slot = 0;
  bool (*has_delay_slot)(std::span<const std::uint8_t> bytes) = nullptr;
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
  const FixedPage* fixed_page = nullptr;  // nullptr: none
  FormatIds format_ids;
  // How gdb sees it (the time-travel debugger); nullptr: `tracecorn debug` does not serve it yet.
  const GdbTarget* gdb = nullptr;

  // Maps this architecture's syscall number to the neutral id (SyscallId::unknown if none).
  SyscallId (*syscall_id)(std::uint64_t number);
  // The engine side: Unicorn's and Capstone's ids for this architecture, the
  // CPU set-up and the Capstone hooks (arch/arch_engine.h). Never null.
  const ArchEngine* engine = nullptr;

  // Set when Capstone has no decoder for the architecture (the engine's
  // capstone_arch is then CS_ARCH_MAX and its Capstone hooks answer "unknown"): decodes the
  // instruction at the start of `bytes` (untrusted guest memory, any length)
  // into `out`. Returns false, with out.size 0, when the bytes are not an
  // instruction (or are cut short); never reads past `bytes`. nullptr: Capstone
  // decodes this architecture.
  bool (*decode_without_capstone)(std::span<const std::uint8_t> bytes, EncodedInstruction& out) = nullptr;

  // Whether the instruction `bytes` (its whole encoding, as an instruction
  // event carries it) reads a clock of the host's (x86's rdtsc and rdtscp,
  // riscv64's rdtime, rdcycle, rdinstret): its result is an input, which a
  // replay takes from the registers the trace recorded after it. nullptr: none.
  bool (*reads_host_clock)(std::span<const std::uint8_t> bytes) = nullptr;

  // Where the text format gets disassembly when Capstone cannot give it; nullptr: Capstone does.
  const LlvmTarget* llvm_target = nullptr;

  // The unwinder's last resort for code no unwind table covers: reads a
  // function's prologue as gdb's heuristic unwinder for this architecture
  // does (arch/prologue.h). nullptr: none (x86-64, aarch64, i386).
  PrologueAnalyzer analyze_prologue = nullptr;

  // Finds a register by canonical name; nullptr if this architecture has none.
  const RegisterInfo* find_register(std::string_view register_name) const;
  // The index in `registers` of the register Unicorn numbers `uc_id` (pc_reg,
  // sp_reg...); nullopt when the table has none.
  std::optional<std::size_t> register_index(int uc_id) const;
};

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
// The architecture tracecorn calls `name` ("x86_64"), or nullptr.
const ArchInfo* find_arch(std::string_view name);
// "x86_64, aarch64, ...": every architecture's name, for messages.
std::string arch_names();

// Defined by each architecture's file.
const ArchInfo& x86_64_arch();
const ArchInfo& aarch64_arch();
const ArchInfo& riscv64_arch();
const ArchInfo& arm_arch();
const ArchInfo& i386_arch();
const ArchInfo& mips_arch();    // big endian
const ArchInfo& mipsel_arch();  // little endian

}  // namespace tracecorn::arch
