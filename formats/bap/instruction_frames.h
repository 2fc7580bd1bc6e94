// Role: the hot path of the BAP frames writer (bap_writer.h), apart from the
// file: InstructionFrames encodes the std_frame of each instruction from its
// decode, the register values last known and its memory accesses, into a byte
// buffer, and takes the writer's other frames as ready bytes; FrameInputs
// records what it is handed (instructions, accesses, register changes, ready
// frames) so that another thread can encode a chunk of it later
// (FramesWriter's encoder threads).
// Who calls it: FramesWriter, on the drain thread, and its encoder threads;
// each InstructionFrames and each FrameInputs belongs to one thread at a time.
// Invariants: the bytes depend only on what was handed in and the register
// state it started from, never on which object encodes them nor on how the
// inputs were cut into chunks, provided a chunk starts where the previous
// instruction's frame is complete (before an instruction, a block or a ready
// frame: never between an instruction and its accesses or register changes)
// and from the register state that held there. Instructions are decoded on
// the thread that records the inputs, in trace order, by one decoder (on arm
// Capstone's decode of a Thumb instruction depends on the IT instruction
// decoded before it): FrameInputs carries the decodes, which stay valid until
// clear_decode_cache(). The register operands' templates are shared, read only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <unordered_map>
#include <utility>
#include <vector>

#include "arch/arch_info.h"
#include "arch/instruction_decoder.h"
#include "formats/bap/frames_wire.h"
#include "formats/common/byte_buffer.h"
#include "recorder/events/event.h"
#include "recorder/support/expected.h"

namespace tracecorn::formats::bap {

// The register file as the writer knows it: each register's last value and
// whether it is known (bap_writer.h: values are never guessed).
struct KnownRegisters {
  std::vector<events::RegisterValue> values;  // arch table order
  std::vector<std::uint8_t> known;            // 1 where values[i] holds the register's value
};

class FrameInputs;

class InstructionFrames {
 public:
  // `operands`: one encoder per register of `arch`'s table (shared by every
  // InstructionFrames of a writer). Fails when Capstone cannot decode the arch.
  static Expected<std::unique_ptr<InstructionFrames>> open(
      const arch::ArchInfo& arch, std::shared_ptr<const std::vector<RegisterOperandEncoder>> operands);
  // One that only encodes instructions decoded elsewhere (an encoder thread's:
  // start_decoded and encode, never decode), with no Capstone handle.
  static std::unique_ptr<InstructionFrames> open_encoder(
      const arch::ArchInfo& arch, std::shared_ptr<const std::vector<RegisterOperandEncoder>> operands);
  ~InstructionFrames();

  // The frames encoded so far: each one's u64 size and message, back to back;
  // frame_starts() holds where each counted frame begins in out().
  ByteBuffer& out() { return out_; }
  std::vector<std::uint64_t>& frame_starts() { return frame_starts_; }
  // Room for one frame of `size` bytes after its size (counted: a TOC frame).
  std::uint8_t* stage_frame(std::size_t size, bool counted);

  // What the writer knows of one instruction, decoded once per address,
  // instruction set and bytes (the decode cache's entry).
  struct Decoded;
  const Decoded* decode(std::uint64_t address, std::uint8_t mode, std::span<const std::uint8_t> bytes);
  // The cache is emptied when it holds more than a million instructions
  // (self-modifying or huge code): by the caller, when no chunk it recorded
  // is still to be encoded.
  bool decode_cache_full() const { return decoded_.size() > kDecodeCacheLimit; }
  void clear_decode_cache();

  // An instruction starts: decoded here (start_instruction, start_instructions)
  // or by the thread that recorded it (start_decoded).
  void start_instruction(events::ThreadId thread, const events::InstructionEvent& instruction);
  void start_instructions(const events::InstructionRun& run);
  void start_decoded(events::ThreadId thread, std::uint64_t address, std::uint8_t mode, const Decoded* decoded);
  void on_memory(const events::MemoryEvent& access, bool written);
  // Writes the pending instruction's frame, if any.
  void finish_instruction();
  void apply(std::span<const events::RegisterValue> values);
  void forget_registers();  // after a gap: no value is certain

  const KnownRegisters& registers() const { return registers_; }
  void set_registers(const KnownRegisters& registers) { registers_ = registers; }
  // Memory accesses with no instruction to tie them to (not written).
  std::uint64_t dropped() const { return dropped_; }
  std::uint64_t take_dropped() { return std::exchange(dropped_, 0); }

  // Encodes what `inputs` recorded, from the register state it started from;
  // the last instruction's frame is written at the end.
  void encode(const FrameInputs& inputs);

 private:
  static constexpr std::size_t kDecodeCacheLimit = std::size_t{1} << 20;
  struct Pending;
  InstructionFrames(const arch::ArchInfo& arch, std::shared_ptr<const std::vector<RegisterOperandEncoder>> operands,
                    std::unique_ptr<arch::InstructionDecoder> decoder);
  const Decoded* find_or_decode(std::uint64_t key, std::uint64_t address, std::uint8_t mode,
                                std::span<const std::uint8_t> bytes);

  const arch::ArchInfo& arch_;
  std::shared_ptr<const std::vector<RegisterOperandEncoder>> operands_;
  std::unique_ptr<arch::InstructionDecoder> decoder_;
  KnownRegisters registers_;
  int pc_index_ = -1;
  std::unique_ptr<Pending> pending_;
  std::unordered_map<std::uint64_t, std::unique_ptr<Decoded>> decoded_;  // by address (bit 63: second instruction set)
  // A direct-mapped front of decoded_, which saves most lookups' hashing.
  struct RecentDecode {
    std::uint64_t key = 0;
    const Decoded* decoded = nullptr;
  };
  std::vector<RecentDecode> recent_;
  ByteBuffer out_;
  std::vector<std::uint64_t> frame_starts_;
  std::uint64_t dropped_ = 0;
};

// What a chunk of the trace handed the writer, recorded as compact items to
// be encoded later by InstructionFrames::encode, with the register state the
// chunk starts from.
class FrameInputs {
 public:
  // An instruction and its decode (InstructionFrames::decode by the recording
  // thread); a block's run of them, decoded by `frames`.
  void add_instruction(events::ThreadId thread, const events::InstructionEvent& instruction,
                       const InstructionFrames::Decoded* decoded);
  void add_instructions(const events::InstructionRun& run, InstructionFrames& frames);  // a run of none adds nothing
  void add_memory(const events::MemoryEvent& access, bool written);
  void add_registers(std::span<const events::RegisterValue> values);
  void add_block();  // ends the pending instruction
  // A frame encoded elsewhere (its message bytes), after the pending instruction's.
  void add_frame(std::span<const std::uint8_t> message);
  void add_forget_registers();

  // Where the items of the instruction not finished yet begin (the inputs
  // may be cut there): size() when the last instruction is finished (a block
  // or a frame came after it) or there is none.
  std::size_t unfinished_from() const { return unfinished_ == kNone ? items_.size() : unfinished_; }
  std::size_t size() const { return items_.size(); }
  bool empty() const { return items_.empty(); }
  // Moves the items from `at` on into `rest` (emptied first), keeping those before.
  void split_at(std::size_t at, FrameInputs& rest);
  void clear();

  KnownRegisters start;  // the register state at the first item

 private:
  friend class InstructionFrames;
  enum class Item : std::uint8_t { kInstruction, kRun, kMemoryRead, kMemoryWrite, kRegisters, kBlock, kFrame, kForget };
  static constexpr std::size_t kNone = ~std::size_t{0};
  std::uint8_t* add(Item item, std::size_t payload);
  ByteBuffer items_;
  std::size_t unfinished_ = kNone;
};

}  // namespace tracecorn::formats::bap
