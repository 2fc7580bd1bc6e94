// Role: the records the recorder's hooks write into the ring, and nothing else:
// in-memory layouts shared by the producer (record_output.h and the units that
// write with it) and the consumer (event_assembler.cpp), which change
// together. Not a file format: host byte order, never written to disk as is.
//
// Every record starts with an 8-byte RecordHeader; payloads are 8-byte aligned.
//
//   +------+-------+--------+-----------+
//   | kind | flags |  aux   | thread id |   RecordHeader (8 bytes)
//   |  u8  |  u8   |  u16   |    u32    |
//   +------+-------+--------+-----------+
//   | fixed payload (per kind, below)   |
//   | variable tail (bytes, padded to 8)|
//
// A block is defined once (kBlockDefinition: id, address, size, code bytes)
// before the first kBlockRun that names it; the consumer decodes instructions
// from those bytes. Executed blocks travel in runs: one kBlockRun record names up
// to kMaxBlockRun consecutive blocks by id (4 bytes each), so the block hook
// writes 4 bytes into a local array and touches the ring once per run. A run is
// written out before any other record, so records stay in execution order (a
// memory record follows the run that ends with its block).
// Syscall effects (kSyscallMemoryWrite, kSyscallMapping, kSyscallRegisters) come
// before the kSyscall record they belong to, which closes the group; a signal's
// frame (kSyscallMemoryWrite) and registers (kSyscallRegisters) come before its
// kSignal record the same way, and a thread switch's registers before its kThread.
// The header's thread id is unused: the consumer keeps the current thread
// from the kThread records (events::Event::thread).
// Invariants: records are plain data (trivially copyable); `aux` holds a count
// or a size as each kind documents; sequence numbers are not stored: the
// consumer counts events (see events::Event), which keeps block entries 4 bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <type_traits>

namespace tracecorn::core {

enum class RecordKind : std::uint8_t {
  kBlockDefinition = 1,
  kBlockRun = 2,
  kMemoryRead = 3,
  kMemoryWrite = 4,
  kRegisters = 5,
  kSyscall = 6,
  kSyscallMemoryWrite = 7,
  kSyscallMapping = 8,
  kSyscallRegisters = 9,
  kFault = 10,
  kModuleLoad = 11,
  kExit = 12,
  kGap = 13,
  kStop = 14,  // the emulation stopped at `pc` (a stop condition, a limit): the rest of the block did not run
  kRegisterBatch = 15,  // the register changes of several instructions (regs/full levels), see below
  kSignal = 16,         // a signal delivered to a handler (closes its frame writes and registers)
  kThread = 17,         // a guest thread created, exited or switched to (closes its registers)
  kProcess = 18,        // the process forked or exec'd (events::ProcessEvent), after the syscall's record
};

struct RecordHeader {
  RecordKind kind;
  std::uint8_t flags;
  std::uint16_t aux;
  std::uint32_t thread_id;
};
static_assert(sizeof(RecordHeader) == 8);

// flags: instruction-set mode (arch::AlternateInstructionSet; 0 on one-mode
// architectures). aux: kBlockFromWritableMemory or 0. Tail: `size` code bytes.
inline constexpr std::uint16_t kBlockFromWritableMemory = 1;  // read from a page mapped writable
struct BlockDefinitionRecord {
  RecordHeader header;
  std::uint64_t address;
  std::uint32_t size;
  std::uint32_t id;  // the producer's block id (DecodedBlock::id)
};
static_assert(sizeof(BlockDefinitionRecord) == 24);

// aux: number of blocks (1..kMaxBlockRun). Tail: that many u32 block ids, in
// execution order, padded to 8 bytes. The most frequent record: a run of 256
// blocks is 8 + 1024 bytes, 4.03 bytes per block (a ring too small for that
// gets a long run in several records). (A block's instruction-set mode
// travels in its definition: header.flags.)
//
//   +--------------+------+------+-----+-------------+---------+
//   | RecordHeader | id 0 | id 1 | ... | id (aux-1)  | pad 0/4 |
//   |   8 bytes    | u32  | u32  |     |    u32      |         |
//   +--------------+------+------+-----+-------------+---------+
struct BlockRunRecord {
  RecordHeader header;
};
static_assert(sizeof(BlockRunRecord) == 8);
inline constexpr std::uint16_t kMaxBlockRun = 256;

// aux: access size in bytes. pc: the instruction, or 0 when the producer has no
// instruction hook (the consumer then attributes the access by decoding).
struct MemoryRecord {
  RecordHeader header;
  std::uint64_t address;
  std::uint64_t value;
  std::uint64_t pc;
};
static_assert(sizeof(MemoryRecord) == 32);

// aux: number of RegisterEntry that follow.
struct RegistersRecord {
  RecordHeader header;
  std::uint64_t pc;
};
struct RegisterEntry {
  std::uint16_t index;  // into arch::ArchInfo::registers
  std::uint8_t size;
  std::uint8_t reserved[5];
  std::uint8_t value[16];
};
static_assert(sizeof(RegistersRecord) == 16 && sizeof(RegisterEntry) == 24);

// kRegisterBatch: what kRegisters records would say for consecutive
// instructions, in one record (the regs-level producer collects them in a local
// buffer and writes it before any other record, like a block run), with 8-byte
// values for registers of at most 8 bytes. aux: unused. Tail: items back to back,
// each a RegisterBatchItem and then `count` entries:
//
//   item   +---------+-----------+------------+
//          | pc u64  | count u16 | 6 reserved |                         16 bytes
//          +---------+-----------+------------+
//   entry  +-----------+---------+------------+---------------------------------+
//          | index u16 | size u8 | 5 reserved | value: 8 bytes if size <= 8,    |
//          |           |         |            | else 16 (little end first)      |
//          +-----------+---------+------------+---------------------------------+
//
// An item whose count is kBlockMarkerCount has no entries: it says that the
// block whose id is in `pc` was executed (as a kBlockRun of that one block
// would), so that at the regs level the block between two instructions'
// changes costs no record of its own; memory accesses travel in the batch too
// (below).
struct RegisterBatchItem {
  std::uint64_t pc;
  std::uint16_t count;
  std::uint8_t reserved[6];
};
inline constexpr std::uint16_t kBlockMarkerCount = 0xffff;
// Items whose count is one of these carry a memory access, as a kMemoryRead or
// kMemoryWrite record would (regs and full levels): `pc` is the access's pc,
// reserved[0] its size in bytes, and 16 bytes follow: the address and the value
// (u64 each).
inline constexpr std::uint16_t kMemoryReadMarkerCount = 0xfffe;
inline constexpr std::uint16_t kMemoryWriteMarkerCount = 0xfffd;
struct RegisterBatchEntryHead {
  std::uint16_t index;  // into arch::ArchInfo::registers
  std::uint8_t size;    // the register's size in bytes; the value slot is 8 bytes up to 8, else 16
  std::uint8_t reserved[5];
};
static_assert(sizeof(RegisterBatchItem) == 16 && sizeof(RegisterBatchEntryHead) == 8);
inline constexpr std::size_t register_batch_value_bytes(std::uint8_t size) { return size <= 8 ? 8 : 16; }

// aux: call stack depth; tail: depth u64 return addresses.
struct SyscallRecord {
  RecordHeader header;
  std::uint64_t pc;
  std::uint64_t number;
  std::int64_t result;
  std::uint64_t args[6];
};
static_assert(sizeof(SyscallRecord) == 80);

// A chunk of what the kernel wrote into guest memory; tail: `length` bytes.
struct SyscallMemoryWriteRecord {
  RecordHeader header;
  std::uint64_t address;
  std::uint64_t length;
};

// aux: events::MappingChangeKind; tail: name_length bytes of name, then
// file_length bytes of file (kMap only).
struct SyscallMappingRecord {
  RecordHeader header;
  std::uint64_t start;
  std::uint64_t length;
  std::uint64_t prot;
  std::uint64_t file_offset;
  std::uint64_t file_size;
  std::uint32_t name_length;
  std::uint32_t file_length;
};
static_assert(sizeof(SyscallMappingRecord) == 56);

// aux: description length; tail: description.
struct FaultRecord {
  RecordHeader header;
  std::uint64_t pc;
  std::uint64_t address;
  std::uint64_t signal;
};

// aux: path length; tail: path.
struct ModuleLoadRecord {
  RecordHeader header;
  std::uint64_t start;
  std::uint64_t end;
  std::uint64_t load_bias;
};

// flags: 1 when by signal.
struct ExitRecord {
  RecordHeader header;
  std::int64_t code;
  std::int64_t signal;
};

// flags: kStopAtBlockBoundary when the run stopped at the start of a block
// none of whose instructions ran, its entry taken back: the block before
// ran whole (in a loop of one block, `pc` is that block's start too).
struct StopRecord {
  RecordHeader header;
  std::uint64_t pc;
};
inline constexpr std::uint8_t kStopAtBlockBoundary = 1;

// flags: 1 when the signal is a fault of the instruction at interrupted_pc,
// 2 when it was delivered as a syscall returned (after the kSyscall record).
struct SignalRecord {
  RecordHeader header;
  std::uint64_t signal;
  std::int64_t code;
  std::uint64_t sender_pid;
  std::uint64_t fault_address;
  std::uint64_t interrupted_pc;
  std::uint64_t handler;
  std::uint64_t frame;
};
static_assert(sizeof(SignalRecord) == 64);
inline constexpr std::uint8_t kSignalFault = 1, kSignalAtSyscallReturn = 2;

// aux: events::ThreadChange. flags: kThreadInSyscall when it happened inside
// a syscall (written after the kSyscall record).
struct ThreadRecord {
  RecordHeader header;
  std::uint64_t thread;  // the thread the event is about
  std::uint64_t from;    // ThreadEvent::from
  std::int64_t exit_code;
};
static_assert(sizeof(ThreadRecord) == 32);
inline constexpr std::uint8_t kThreadInSyscall = 1;

// aux: events::ProcessChange. Tail: the trace name's bytes (trace_length),
// then the detail's (detail_length), padded to 8.
struct ProcessRecord {
  RecordHeader header;
  std::uint64_t pid;
  std::uint32_t trace_length;
  std::uint32_t detail_length;
};
static_assert(sizeof(ProcessRecord) == 24);

struct GapRecord {
  RecordHeader header;
  std::uint64_t lost_events;
};

static_assert(std::is_trivially_copyable_v<SyscallRecord> && std::is_trivially_copyable_v<MemoryRecord>);

inline constexpr std::uint32_t padded8(std::uint64_t size) { return static_cast<std::uint32_t>((size + 7) & ~7ull); }

// Reads a record struct from ring bytes (which are 8-byte aligned, so memcpy is free).
template <typename T>
T load_record(std::span<const std::byte> bytes) {
  T value;
  std::memcpy(&value, bytes.data(), sizeof(T));
  return value;
}

}  // namespace tracecorn::core
