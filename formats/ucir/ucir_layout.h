// Role: the on-disk layout of UCIR, usercorn's trace format
// (github.com/lunixbochs/usercorn go/models/trace/PROTOCOL.md; usercorn's own
// flavour in docs/formats/ucir.md): magic, version, op ids and fixed sizes, shared by
// UcirWriter and UcirReader so that they change together.
// Invariants: every multi-byte number is little endian in the spec flavour
// (version 0), which is the only one we write; structures are densely packed.
//
// File (spec flavour, version 0), optionally wrapped whole in one zstd stream
// (our extension, `--compress zstd`; readers detect it by the zstd magic):
//
//   +0   "UCIR"           4 bytes
//   +4   version          u32 LE = 0
//   +8   arch             32 bytes, NUL padded ("x86_64")
//                         usercorn's names: x86_64, x86, arm64, arm, mips
//                         (both byte orders: dorder says which); and our
//                         extension "riscv64" (the spec's string is free and
//                         usercorn has no RISC-V: no other reader exists)
//   +40  os               32 bytes, NUL padded ("linux")
//   +72  corder           u8 (0 little endian, 1 big endian)
//   +73  dorder           u8
//   +74  OP_KEYFRAME pid u64, op_count u32, ops...   (the initial state)
//        OP_FRAME    pid u64, op_count u32, ops...   (one per basic block)
//        OP_KEYFRAME ...                             (every N instructions)
//        ...
//        OP_FRAME    pid u64, op_count u32 = 1, OP_NOP   (only when the
//                    recording was interrupted: our note, see below)
//        OP_FRAME    pid u64, op_count u32 = 0         (the end note)
//
// The interruption note (ours, within the spec): a recording stopped by SIGINT
// or SIGTERM ends with an OP_FRAME whose ops are all OP_NOP (we write one).
// The spec's OP_NOP "does nothing", so usercorn and any spec reader skip it;
// our reader reports it (UcirReader::interrupted()). No frame we write
// otherwise holds only OP_NOPs.
//
// The end note (ours, within the spec): every file we write ends with an
// OP_FRAME of no ops, which any spec reader skips. The format has no length
// or trailer, so without it a file cut exactly between two frames (a killed
// recording, a truncated copy) would read as a whole trace. Our reader takes
// a version 0 file as complete when its last frame is the end note, or (files
// written before the note) the interruption note or a frame holding OP_EXIT;
// otherwise it warns that the trace was cut short. usercorn's own files
// (version 1) have no such note and are taken as they end. No other frame we
// write is empty.
//
// Ops (op u8 first):
//   OP_NOP        -                                             1 byte
//   OP_FRAME/KEY  pid u64, op_count u32, op_count ops           13 bytes + ops
//   OP_JMP        addr u64, size u32                            13
//                 (arm: bit 0 of addr set = Thumb code, as a BX target
//                 says; the block itself starts at addr & ~1)
//   OP_STEP       size u8                                       2
//   OP_REG        num u16 (Unicorn enum), val u64               11
//   OP_SPREG      num u16, size u16, bytes[size]                5 + size
//   OP_MEM_READ   addr u64, size u32                            13
//   OP_MEM_WRITE  addr u64, size u32, bytes[size]               13 + size
//   OP_MEM_MAP    addr u64, size u32, prot u8, off u64, fsize u64,
//                 dlen u16, flen u16, desc[dlen], file[flen]    34 + dlen + flen
//   OP_MEM_UNMAP  addr u64, size u32                            13
//   OP_MEM_PROT   addr u64, size u32, prot u8                   14
//   OP_SYSCALL    num u16, ret u64, argc u8, op_count u16,
//                 (num: an architecture's private call base + n, arm's
//                 0xf0005 set_tls, is stored as 0xf000 + n: kPrivateSyscall)
//                 args u64[argc], op_count ops                  15 + 8*argc + ops
//   OP_EXIT       -                                             1
//   OP_CALLSTACK  depth u16, u64[depth]   (ours, 0x80; only nested in an
//                 OP_SYSCALL; return addresses, innermost first;
//                 omitted by --ucir-strict)                     3 + 8*depth
//   OP_SIGNAL     signal u8 (host number), flags u8 (1: a fault of the
//                 instruction at interrupted_pc), code u32 (si_code, two's
//                 complement), sender_pid u64, fault_address u64,
//                 interrupted_pc u64, handler u64, frame u64, op_count u16,
//                 op_count ops: OP_MEM_WRITE (the frame's bytes, when not
//                 already in the OP_SYSCALL before it) and OP_REG/OP_SPREG
//                 (every register as the handler starts)   (ours, 0x81; a
//                 frame op, after the ops of the last instruction that
//                 completed; omitted by --ucir-strict)         49 + ops
//   OP_THREAD     change u8 (1 created, 2 exited, 3 switched to), tid u64,
//                 from u64 (the parent, or the thread switched from),
//                 exit_code u32, op_count u16, op_count ops: OP_REG/OP_SPREG
//                 (a switch: every register of the thread switched to)
//                 (ours, 0x82; a frame op; omitted by --ucir-strict) 24 + ops
//   OP_PROCESS    change u8 (1 forked, 2 exec'd), pid u64 (the child's; the
//                 process's own for an exec), tlen u16, trace[tlen] (the
//                 trace file that goes on: the child's, or the next image's;
//                 a name without directory, empty when not recorded), dlen
//                 u16, detail[dlen] (a fork: the syscall's name; an exec:
//                 the path it named)   (ours, 0x83; a frame op after the
//                 OP_SYSCALL that did it; omitted by --ucir-strict)
//                                                               14 + tlen + dlen
//
// The pid of OP_FRAME: the thread id of the frame's events (its block's
// thread; a frame holds one thread's events: a switch ends the frame). A
// single-threaded process has one thread whose tid is its pid, so its frames
// all carry the pid, as usercorn's do. OP_KEYFRAME carries the process's pid.
//
// usercorn flavour (version 1 written big endian, read only): after the header,
// a snappy framed stream; OP_MEM_MAP/UNMAP/PROT sizes are u64 and OP_SYSCALL's
// number is u32.
#pragma once

#include <cstdint>

namespace tracecorn::formats::ucir {

inline constexpr char kMagic[4] = {'U', 'C', 'I', 'R'};
// Bump when the layout we write changes (the spec says version 0 is unstable;
// we keep writing 0 as long as we write exactly the spec).
inline constexpr std::uint32_t kVersion = 0;
inline constexpr std::uint32_t kUsercornVersion = 1;  // usercorn's own files (big endian, snappy)
inline constexpr std::size_t kNameBytes = 32;
inline constexpr std::size_t kHeaderBytes = 4 + 4 + kNameBytes + kNameBytes + 1 + 1;
static_assert(kHeaderBytes == 74);

// A compressed file starts with the zstd magic: formats::kZstdMagic (formats/common/byte_stream.h).

// OP_SYSCALL numbers from kPrivateSyscall up stand for
// arch::SyscallAbi::private_base + (num - kPrivateSyscall).
inline constexpr std::uint16_t kPrivateSyscall = 0xf000;

enum Op : std::uint8_t {
  kOpNop = 0,
  kOpFrame = 1,
  kOpKeyframe = 2,
  kOpJmp = 3,
  kOpStep = 4,
  kOpReg = 5,
  kOpSpreg = 6,
  kOpMemRead = 7,
  kOpMemWrite = 8,
  kOpMemMap = 9,
  kOpMemUnmap = 10,
  kOpMemProt = 11,
  kOpSyscall = 12,
  kOpExit = 13,
  // Ours, not usercorn's: the call stack at a syscall, nested in OP_SYSCALL.
  kOpCallstack = 0x80,
  // Ours: a signal delivered to a handler, and a change of guest threads (frame ops).
  kOpSignal = 0x81,
  kOpThread = 0x82,
  // Ours: a fork or an exec (a frame op).
  kOpProcess = 0x83,
};

// Fixed sizes (op byte included) of the ops above, as in the diagram.
inline constexpr std::size_t kFrameHeaderBytes = 1 + 8 + 4;
inline constexpr std::size_t kJmpBytes = 1 + 8 + 4;
inline constexpr std::size_t kStepBytes = 1 + 1;
inline constexpr std::size_t kRegBytes = 1 + 2 + 8;
inline constexpr std::size_t kSpregFixedBytes = 1 + 2 + 2;
inline constexpr std::size_t kMemReadBytes = 1 + 8 + 4;
inline constexpr std::size_t kMemWriteFixedBytes = 1 + 8 + 4;
inline constexpr std::size_t kMemMapFixedBytes = 1 + 8 + 4 + 1 + 8 + 8 + 2 + 2;
inline constexpr std::size_t kMemUnmapBytes = 1 + 8 + 4;
inline constexpr std::size_t kMemProtBytes = 1 + 8 + 4 + 1;
inline constexpr std::size_t kSyscallFixedBytes = 1 + 2 + 8 + 1 + 2;
inline constexpr std::size_t kSyscallArgs = 6;  // we always write the six register arguments
inline constexpr std::size_t kCallstackFixedBytes = 1 + 2;
inline constexpr std::size_t kSignalFixedBytes = 1 + 1 + 1 + 4 + 5 * 8 + 2;
inline constexpr std::size_t kThreadFixedBytes = 1 + 1 + 8 + 8 + 4 + 2;
inline constexpr std::size_t kProcessFixedBytes = 1 + 1 + 8 + 2 + 2;
static_assert(kSignalFixedBytes == 49 && kThreadFixedBytes == 24 && kProcessFixedBytes == 14);
static_assert(kMemMapFixedBytes == 34 && kSyscallFixedBytes == 14);

// Protection bits in OP_MEM_MAP/PROT (the same as PROT_* and UC_PROT_*).
inline constexpr std::uint8_t kProtRead = 1, kProtWrite = 2, kProtExec = 4;

// The largest OP_MEM_WRITE / OP_MEM_READ we write (bigger writes are split).
// The reader refuses a larger one in a spec-flavour file as damage: a length
// field hit by garbage would otherwise read as a file cut short. Bump the
// version if a writer ever needs larger ops.
inline constexpr std::uint32_t kMaxMemOpBytes = 16u << 20;

// The pid we write in every frame when the trace does not say the guest's
// (TraceInfo::process_id 0: a harness's engine has no process).
inline constexpr std::uint64_t kPid = 1;

}  // namespace tracecorn::formats::ucir
