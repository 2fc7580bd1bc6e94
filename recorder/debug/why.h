// Role: "where did this value come from" over a recorded trace (`tracecorn
// why`, `monitor why`): the data flow back from a register or memory bytes at
// an event to where the bytes entered the program. For the value asked about,
// the last writer before the event: an instruction (then, recursively, the
// values it read: its data registers, from the decoder's access lists, and
// the memory it loaded, from the trace's read events), a syscall (for read,
// pread64 and the like, the file and the offset each byte came from), a
// signal delivery, the initial state (the program image, the initial stack,
// an initial register), or the instruction itself (an immediate: it read no
// data). Registers that only form an address (a base, an index, the stack
// pointer of a push or pop) are not data: the answer follows values, not
// pointers. A thread switch is looked through: a register a thread was
// switched in with is explained by its value when that thread was switched out.
// Bounds: `depth` levels of writers, `max_nodes` nodes in all; a writer met
// again is shown once and folded ("seen above").
// Needs a full-level trace (instructions' register changes and memory
// accesses) and an architecture whose decoder lists the registers an
// instruction reads (not yet riscv64 and mips with Debian's Capstone 4).
// Who calls it: the CLI's why command and GdbSession's monitor; one thread
// (the index is not thread safe; explain() moves its position).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "arch/instruction_decoder.h"
#include "formats/address_namer.h"
#include "formats/text/llvm_disassembler.h"
#include "recorder/replay/trace_index.h"
#include "recorder/support/expected.h"

namespace tracecorn::debug {

// What to explain: a register (its arch table index) or memory bytes.
struct WhyTarget {
  bool is_register = false;
  std::size_t register_index = 0;
  std::uint64_t address = 0, length = 0;
};

struct WhyOptions {
  unsigned depth = 16;       // levels of writers below the value asked about
  unsigned max_nodes = 2000;  // nodes in all
  // The text of instructions Capstone cannot decode (riscv64), kept by a
  // caller that asks many times (the debugger's monitor); null: explain()
  // opens Debian's LLVM itself when the architecture needs it (a dlopen and
  // target set-up, about 0.1 s).
  formats::LlvmDisassembler* instruction_text = nullptr;
};

// One value and where it came from.
struct WhyNode {
  enum class Source : std::uint8_t {
    kInstruction,     // written by the instruction at `pc` (event `event`); `inputs`: what it read
    kImmediate,       // written by an instruction that read no data: the value is in the instruction
    kSyscall,         // written by the kernel in syscall `syscall` (`file`, `file_offset` when known)
    kSignal,          // written by a signal's delivery (the frame, the handler's registers)
    kThreadStart,     // a register a new thread started with
    kInitialImage,    // in the initial memory: a module's bytes (`file`, `file_offset` when known)
    kInitialMemory,   // in the initial memory, not from a file (the initial stack, anonymous memory)
    kInitialRegister, // an initial register value
    kUnknown,         // the trace does not know (nothing recorded wrote it, and it was not in the initial state)
    kPieces,          // bytes with several writers: `inputs` has one node per piece
  };
  WhyTarget target;
  std::vector<std::uint8_t> value;  // the bytes explained (a register's little-endian; memory's as in memory)
  Source source = Source::kUnknown;
  std::uint64_t event = 0;          // the writer's event
  std::uint64_t pc = 0;             // kInstruction/kImmediate: the writer
  std::string instruction;          // its disassembly
  std::string symbol;               // where the pc is ("main+0x12 (/path)"), "" when unknown
  std::string syscall;              // kSyscall: its name
  std::string file;                 // kSyscall/kInitialImage: the file the bytes came from, "" when unknown
  std::optional<std::uint64_t> file_offset;  // of the node's first byte in `file`
  bool seen_before = false;         // this writer is explained above: not again
  bool cut = false;                 // the depth or node bound stopped here
  std::vector<WhyNode> inputs;
};

// Explains `target` as it is at event `at` (the state before that event).
// Fails (kInvalidArgument) when the trace or the architecture cannot answer
// (naming what is missing), or with the index's error.
Expected<WhyNode> explain(replay::TraceIndex& index, arch::InstructionDecoder& decoder, formats::AddressNamer* namer,
                          const WhyTarget& target, std::uint64_t at, const WhyOptions& options = {});

// Whether `index`'s trace and architecture can answer: a message naming what is missing, or "".
std::string why_unsupported(const replay::TraceIndex& index);

// The tree as text (one line per node, indented), and as JSON.
std::string why_text(const WhyNode& root, const arch::ArchInfo& arch);
std::string why_json(const WhyNode& root, const arch::ArchInfo& arch);

}  // namespace tracecorn::debug
