// Role: proves that the direct protobuf encoder of BAP frames (frames_wire.h)
// writes the generated code's bytes, on every architecture with frames (the
// rows of tests/support/architectures.h), two ways:
// - the encoder against the generated code: varied std_frames (register
//   operands of the arch's table, memory operands, every usage combination,
//   optional fields present and absent, empty and long values, varints of
//   every length) are encoded directly and built as `frame` messages; the
//   direct bytes must equal SerializeAsString of the message, and must parse
//   with the generated parser and serialise back to themselves;
// - the writer: varied events (instructions with attributed and unattributed
//   memory accesses, register changes, blocks, faults, gaps; one at a time, in
//   batches and as a block's run of instructions) go through FramesWriter; every
//   frame of the file must parse and serialise back to its own bytes.
// The generated code stays the reference: the tests and the reader decode with
// it. Test thread only.
#include <doctest/doctest.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "arch/arch_info.h"
#include "formats/bap/bap_layout.h"
#include "formats/bap/bap_writer.h"
#include "formats/bap/frames_wire.h"
#include "frames.pb.h"
#include "tests/formats/test_files.h"
#include "tests/support/architectures.h"
#include "tests/support/test_case_per_row.h"

using namespace tracecorn;
namespace pb = tracecorn::frames_pb;
namespace bap = formats::bap;
using test_support::GuestArchitecture;

namespace {

const arch::ArchInfo& arch_named(std::string_view name) {
  for (const arch::ArchInfo* info : arch::all_archs())
    if (info->name == name) return *info;
  FAIL("no arch named " << name);
  return arch::x86_64_arch();
}

std::string upper(std::string_view name) {
  std::string out(name);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

std::string as_string(std::span<const std::uint8_t> bytes) { return {bytes.begin(), bytes.end()}; }

// Values whose varints take 1 to 10 bytes, and their edges.
std::uint64_t varied_u64(std::mt19937_64& random) {
  switch (random() % 6) {
    case 0:
      return 0;
    case 1:
      return random() % 0x80;
    case 2:
      return 0x80 + random() % 0x3f80;
    case 3:
      return ~std::uint64_t{0};
    case 4:
      return std::uint64_t{1} << (random() % 64);
    default:
      return random() >> (random() % 64);
  }
}

std::vector<std::uint8_t> random_bytes(std::mt19937_64& random, std::size_t count) {
  std::vector<std::uint8_t> out(count);
  for (auto& byte : out) byte = static_cast<std::uint8_t>(random());
  return out;
}

// One operand, encoded directly into `list` and added to `message`.
void add_random_operand(std::mt19937_64& random, const arch::ArchInfo& arch, formats::ByteBuffer& list,
                        pb::operand_value_list& message) {
  const bap::OperandUsage usage{(random() & 1) != 0, (random() & 2) != 0, (random() & 4) != 0, (random() & 8) != 0};
  auto* operand = message.add_elem();
  std::vector<std::uint8_t> value;
  std::vector<std::uint8_t> specific;
  std::string name;
  if (random() % 3) {
    const auto& reg = arch.registers[random() % arch.registers.size()];
    name = upper(reg.name);
    if (random() % 16 == 0) name += std::string(random() % 150, 'N');  // names past the encoder's fixed copies
    specific = bap::register_operand_specific(name);
    operand->mutable_operand_info_specific()->mutable_reg_operand()->set_name(name);
    value = random_bytes(random, std::min<std::size_t>(reg.size, 16));
  } else {
    const std::uint64_t address = varied_u64(random);
    const auto encoded = bap::memory_operand_specific(address);
    specific.assign(encoded.bytes, encoded.bytes + encoded.size);
    operand->mutable_operand_info_specific()->mutable_mem_operand()->set_address(address);
    value = random_bytes(random, random() % 9);
  }
  // The writer's widths, and any sint32 (negative, large: every zigzag length).
  const std::int32_t bit_length = random() % 4 ? static_cast<std::int32_t>(value.size() * 8)
                                               : static_cast<std::int32_t>(static_cast<std::uint32_t>(random()));
  // A register at its own width: sometimes through its encoder made once (the writer's way).
  // (Its value's array holds bytes past the value's size, which must not show.)
  if (!name.empty() && bit_length == static_cast<std::int32_t>(value.size() * 8) && random() % 2) {
    bap::RegisterOperandEncoder::Value padded;
    padded.fill(0xee);
    std::copy(value.begin(), value.end(), padded.begin());
    bap::RegisterOperandEncoder(name, value.size()).append(list, usage, padded);
  } else {
    bap::append_operand(list, specific, bit_length, usage, value);
  }
  operand->set_bit_length(bit_length);
  auto* flags = operand->mutable_operand_usage();
  flags->set_read(usage.read);
  flags->set_written(usage.written);
  flags->set_index(usage.index);
  flags->set_base(usage.base);
  operand->mutable_taint_info()->set_no_taint(true);
  operand->set_value(as_string(value));
}

// A list of 0 to 9 operands, both ways.
void random_list(std::mt19937_64& random, const arch::ArchInfo& arch, formats::ByteBuffer& list,
                 pb::operand_value_list& message) {
  list.clear();
  const std::size_t count = random() % 10;
  for (std::size_t i = 0; i < count; ++i) add_random_operand(random, arch, list, message);
}

// One random std_frame: the direct bytes, and the generated code's for the same message.
struct EncodedBothWays {
  std::string direct;
  std::string generated;
};

EncodedBothWays random_std_frame(std::mt19937_64& random, const arch::ArchInfo& arch) {
  formats::ByteBuffer pre, post, unattributed;
  pb::frame message;
  auto* std_frame = message.mutable_std_frame();
  const std::uint64_t address = varied_u64(random), thread_id = varied_u64(random);
  const auto rawbytes = random_bytes(random, random() % 17);
  std_frame->set_address(address);
  std_frame->set_thread_id(thread_id);
  std_frame->set_rawbytes(as_string(rawbytes));
  random_list(random, arch, pre, *std_frame->mutable_operand_pre_list());
  bap::StdFrameFields fields{.address = address,
                             .thread_id = thread_id,
                             .rawbytes = rawbytes,
                             .operand_pre_list = pre.bytes(),
                             .operand_post_list = {},
                             .mode = {},
                             .tracecorn_unattributed = {}};
  if (random() % 8) {
    random_list(random, arch, post, *std_frame->mutable_operand_post_list());
    fields.operand_post_list = post.bytes();
  }
  const std::string_view modes[] = {"ARM", "Thumb", "",
                                    std::string_view("a mode name longer than 127 bytes, so that "
                                                     "its length takes two varint bytes in the "
                                                     "frame, which no real mode name does (over 127)")};
  if (arch.alternate_isa || random() % 4 == 0) {
    fields.mode = arch.alternate_isa ? arch.alternate_isa->names[random() % 2] : modes[random() % 4];
    std_frame->set_mode(std::string(*fields.mode));
  }
  if (random() % 3 == 0) {
    random_list(random, arch, unattributed, *std_frame->mutable_tracecorn_unattributed());
    fields.tracecorn_unattributed = unattributed.bytes();
  }
  EncodedBothWays out;
  const bap::StdFrameSizes sizes = bap::std_frame_sizes(fields);
  out.direct.resize(sizes.message);
  auto* start = reinterpret_cast<std::uint8_t*>(out.direct.data());
  CHECK(bap::write_std_frame(start, fields, sizes) == start + out.direct.size());
  out.generated = message.SerializeAsString();
  return out;
}

void check_encoder_against_generated_code(const GuestArchitecture* row) {
  const arch::ArchInfo& arch = arch_named(row->name);
  std::mt19937_64 random(0x5eed0000 + arch.registers.size());
  for (int i = 0; i < 2000; ++i) {
    CAPTURE(i);
    const EncodedBothWays frame = random_std_frame(random, arch);
    REQUIRE(frame.direct == frame.generated);
    pb::frame parsed;
    REQUIRE(parsed.ParseFromString(frame.direct));  // (fails on a required field left out)
    CHECK(parsed.SerializeAsString() == frame.direct);
  }
}

// Feeds the writer varied events of `arch`, one at a time, in batches and as runs.
class EventFeeder {
 public:
  EventFeeder(const arch::ArchInfo& arch, formats::FramesWriter& writer, std::uint64_t seed)
      : arch_(arch), writer_(writer), random_(seed) {}

  void begin() {
    events::TraceInfo info;
    info.arch_name = arch_.name;
    info.has_initial_state = true;
    for (std::size_t i = 0; i < arch_.registers.size(); ++i) info.initial_registers.push_back(random_register(i));
    writer_.begin(info);
  }

  void play(int instructions) {
    for (int i = 0; i < instructions; ++i) {
      // x86: 1 to 15 bytes; the fixed-width instruction sets: one or two words.
      const bool x86 = arch_.name == "x86_64" || arch_.name == "i386";
      code_ = random_bytes(random_, x86 ? 1 + random_() % 15 : 4 * (1 + random_() % 2));
      address_ = 0x400000 + 4 * (random_() % 4096);
      mode_ = arch_.alternate_isa ? static_cast<std::uint8_t>(random_() % 2) : 0;
      if (random_() % 5 == 0)
        play_run();
      else
        play_one();
    }
  }

 private:
  events::RegisterValue random_register(std::size_t index) {
    events::RegisterValue value;
    value.index = static_cast<std::uint16_t>(index);
    value.size = static_cast<std::uint8_t>(std::min<std::size_t>(arch_.registers[index].size, 16));
    for (auto& byte : value.bytes) byte = static_cast<std::uint8_t>(random_());
    return value;
  }

  events::Event event(events::EventKind kind, events::EventPayload payload) {
    events::Event out;
    out.sequence = events::EventSequence{sequence_++};
    out.thread = events::ThreadId{static_cast<std::uint32_t>(1000 + random_() % 3)};
    out.kind = kind;
    out.payload = std::move(payload);
    return out;
  }

  // The instruction, then its accesses and register changes, as one batch or one by one.
  void play_one() {
    std::vector<events::Event> batch;
    batch.push_back(event(events::EventKind::kInstruction,
                          events::InstructionEvent{events::GuestAddress{address_},
                                                   static_cast<std::uint32_t>(code_.size()), code_, 0, mode_}));
    add_accesses(batch);
    changes_.clear();
    for (std::size_t i = random_() % 4; i > 0; --i)
      changes_.push_back(random_register(random_() % arch_.registers.size()));
    batch.push_back(
        event(events::EventKind::kRegisters, events::RegistersEvent{events::GuestAddress{address_}, changes_}));
    add_rare(batch);
    if (random_() % 2)
      writer_.on_events(batch);
    else
      for (const auto& each : batch) writer_.on_event(each);
  }

  // Memory accesses: attributed reads and writes, and unattributed ones.
  void add_accesses(std::vector<events::Event>& batch) {
    for (std::size_t i = random_() % 5; i > 0; --i) {
      const bool attributed = random_() % 4 != 0;
      const auto kind = random_() % 2 ? events::EventKind::kMemoryRead : events::EventKind::kMemoryWrite;
      batch.push_back(event(kind, events::MemoryEvent{events::GuestAddress{varied_u64(random_)},
                                                      static_cast<std::uint8_t>(1 + random_() % 8), varied_u64(random_),
                                                      events::GuestAddress{attributed ? address_ : address_ + 1},
                                                      attributed || random_() % 2}));
    }
  }

  // Now and then a block, a fault or a gap (the frames around them).
  void add_rare(std::vector<events::Event>& batch) {
    switch (random_() % 40) {
      case 0:
        batch.push_back(event(events::EventKind::kBlock,
                              events::BlockEvent{events::GuestAddress{address_},
                                                 static_cast<std::uint32_t>(code_.size()), 1, code_, mode_}));
        break;
      case 1:
        batch.push_back(event(events::EventKind::kFault, events::FaultEvent{events::GuestAddress{address_},
                                                                            events::GuestAddress{8}, 11, "a fault"}));
        break;
      case 2:
        batch.push_back(event(events::EventKind::kGap, events::GapEvent{7, "lost"}));
        break;
      default:
        break;
    }
  }

  // The code as a block's run of instructions (Sink::on_instructions).
  void play_run() {
    bounds_.clear();
    for (std::uint16_t offset = 0; offset + 2u <= code_.size(); offset = static_cast<std::uint16_t>(offset + 2))
      bounds_.push_back({events::GuestAddress{address_ + offset}, offset, 2});
    events::InstructionRun run;
    run.first_sequence = events::EventSequence{sequence_};
    sequence_ += bounds_.size();
    run.thread = events::ThreadId{1000};
    run.block_bytes = code_;
    run.instructions = bounds_;
    run.mode = mode_;
    writer_.on_instructions(run);
  }

  const arch::ArchInfo& arch_;
  formats::FramesWriter& writer_;
  std::mt19937_64 random_;
  std::uint64_t sequence_ = 0;
  std::vector<std::uint8_t> code_;
  std::uint64_t address_ = 0;
  std::uint8_t mode_ = 0;
  std::vector<events::RegisterValue> changes_;
  std::vector<events::InstructionBounds> bounds_;
};

std::uint64_t u64_at(const test::Bytes& file, std::size_t offset) {
  std::uint64_t value = 0;
  for (int i = 7; i >= 0; --i) value = value << 8 | file[offset + static_cast<std::size_t>(i)];
  return value;
}

// Every frame of a plain frames file, after the meta frame.
std::vector<std::string> frames_of(const test::Bytes& file) {
  std::vector<std::string> frames;
  REQUIRE(file.size() > bap::kHeaderBytes + 8);
  const std::uint64_t toc = u64_at(file, bap::kTocOffsetOffset);
  REQUIRE(toc <= file.size());
  std::size_t at = bap::kHeaderBytes + 8 + u64_at(file, bap::kHeaderBytes);  // past the meta frame
  while (at < toc) {
    REQUIRE(at + 8 <= toc);
    const std::uint64_t size = u64_at(file, at);
    REQUIRE(at + 8 + size <= toc);
    frames.emplace_back(file.begin() + static_cast<std::ptrdiff_t>(at + 8),
                        file.begin() + static_cast<std::ptrdiff_t>(at + 8 + size));
    at += 8 + size;
  }
  CHECK(frames.size() == u64_at(file, bap::kFrameCountOffset));
  return frames;
}

void check_writer_frames_reserialize(const GuestArchitecture* row) {
  const arch::ArchInfo& arch = arch_named(row->name);
  const std::string path = test::temp_file("bap", "wire-" + std::string(row->name) + ".frames");
  {
    auto writer = formats::FramesWriter::open(path, arch);
    REQUIRE(writer);
    EventFeeder feeder(arch, **writer, 0xf00d + arch.registers.size());
    feeder.begin();
    feeder.play(3000);
    REQUIRE((*writer)->end({}).empty());
  }
  const auto frames = frames_of(test::slurp(path));
  std::size_t std_frames = 0, with_operands = 0;
  for (std::size_t i = 0; i < frames.size(); ++i) {
    CAPTURE(i);
    pb::frame parsed;
    REQUIRE(parsed.ParseFromString(frames[i]));
    REQUIRE(parsed.SerializeAsString() == frames[i]);
    if (!parsed.has_std_frame()) continue;
    ++std_frames;
    with_operands +=
        parsed.std_frame().operand_pre_list().elem_size() > 0 && parsed.std_frame().operand_post_list().elem_size() > 0;
  }
  CHECK(std_frames > 2000);
  CHECK(with_operands > 100);
  std::filesystem::remove(path);
}

void check_both(const GuestArchitecture* row) {
  check_encoder_against_generated_code(row);
  check_writer_frames_reserialize(row);
}

constexpr bool has_frames(const GuestArchitecture& row) { return row.has_bap_frames; }
constexpr auto kArchitecturesWithFrames = test_support::guest_architectures_where<&has_frames>();

std::string case_name(const GuestArchitecture* row) {
  return "BAP frames: " + std::string(row->name) + ": the direct std_frame encoder writes the generated code's bytes";
}

}  // namespace

TRACECORN_TEST_CASE_PER_ROW(kArchitecturesWithFrames, case_name, check_both);
