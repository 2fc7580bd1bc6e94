// Role: the EHABI reader declared in ehabi.h: index lookup, extraction of the
// op bytes of both models, the decoder of unwind instructions, and the
// conversion of a decoded sequence into an UnwindRow.
#include "recorder/unwind/ehabi.h"

#include <cstdio>

#include "recorder/support/hex.h"
#include "recorder/unwind/byte_reader.h"

namespace tracecorn::unwind {
namespace {

using detail::ByteReader;

constexpr unsigned kSp = 13, kLr = 14, kPc = 15;  // Arm DWARF numbers of r13..r15
constexpr std::uint64_t kAddressMask = 0xffffffff;  // EHABI tables describe 32-bit code

// The 31-bit signed offset of a prel31 word, added to the word's own address.
std::uint64_t prel31_target(std::uint32_t word, std::uint64_t place) {
  std::int64_t offset = word & 0x7fffffff;
  if (offset & 0x40000000) offset -= 0x80000000LL;
  return (place + static_cast<std::uint64_t>(offset)) & kAddressMask;
}

// One decoded instruction, before it is described or applied.
enum class OpKind : std::uint8_t {
  kVspAdd,      // vsp += delta (delta may be negative)
  kVspSet,      // vsp = r[reg]
  kPopCore,     // pop the core registers of `mask` (bit n: r[n])
  kPopOther,    // pop `delta` bytes of VFP/WMMX registers (not tracked)
  kFinish,
  kRefuse,      // 0x80 0x00: refuse to unwind
  kSpare,       // spare or reserved encodings
};

struct EhabiOp {
  OpKind kind = OpKind::kSpare;
  std::uint8_t length = 1;
  std::int64_t delta = 0;
  std::uint16_t mask = 0;
  std::uint8_t reg = 0;
  std::string text;
};

std::string register_list(std::uint16_t mask) {
  std::string text = "pop {";
  bool first = true;
  for (unsigned reg = 0; reg < 16; ++reg) {
    if (!((mask >> reg) & 1)) continue;
    if (!first) text += ", ";
    text += "r" + std::to_string(reg);
    first = false;
  }
  return text + "}";
}

std::string range_list(const char* prefix, unsigned first, unsigned count) {
  std::string text = "pop {" + std::string(prefix) + std::to_string(first);
  if (count > 1) text += "-" + std::string(prefix) + std::to_string(first + count - 1);
  return text + "}";
}

// Decodes the instruction at `at` of ops[0, size). False when it is cut off
// (or a uleb128 runs over 5 bytes).
bool decode(const std::uint8_t* ops, std::size_t size, std::size_t at, EhabiOp& op) {
  const std::uint8_t byte = ops[at];
  auto second = [&](std::uint8_t& value) {
    if (at + 1 >= size) return false;
    value = ops[at + 1];
    op.length = 2;
    return true;
  };
  op = EhabiOp{};
  if (byte < 0x80) {
    const std::int64_t amount = ((byte & 0x3f) << 2) + 4;
    op.kind = OpKind::kVspAdd;
    op.delta = byte < 0x40 ? amount : -amount;
    op.text = std::string(byte < 0x40 ? "vsp = vsp + " : "vsp = vsp - ") + std::to_string(amount);
    return true;
  }
  if (byte < 0x90) {
    std::uint8_t low = 0;
    if (!second(low)) return false;
    const std::uint16_t mask = static_cast<std::uint16_t>(((byte & 0x0f) << 8 | low) << 4);
    if (mask == 0) {
      op.kind = OpKind::kRefuse;
      op.text = "Refuse to unwind";
    } else {
      op.kind = OpKind::kPopCore;
      op.mask = mask;
      op.text = register_list(mask);
    }
    return true;
  }
  if (byte < 0xa0) {
    const unsigned reg = byte & 0x0f;
    if (reg == 13 || reg == 15) {
      op.text = "[Reserved]";
      return true;
    }
    op.kind = OpKind::kVspSet;
    op.reg = static_cast<std::uint8_t>(reg);
    op.text = "vsp = r" + std::to_string(reg);
    return true;
  }
  if (byte < 0xb0) {
    const unsigned last = 4 + (byte & 0x07);
    std::uint16_t mask = 0;
    for (unsigned reg = 4; reg <= last; ++reg) mask = static_cast<std::uint16_t>(mask | 1u << reg);
    if (byte & 0x08) mask = static_cast<std::uint16_t>(mask | 1u << kLr);
    op.kind = OpKind::kPopCore;
    op.mask = mask;
    op.text = register_list(mask);
    return true;
  }
  std::uint8_t operand = 0;
  switch (byte) {
    case 0xb0:
      op.kind = OpKind::kFinish;
      op.text = "finish";
      return true;
    case 0xb1:
      if (!second(operand)) return false;
      if (operand == 0 || (operand & 0xf0)) {
        op.text = "[Spare]";
      } else {
        op.kind = OpKind::kPopCore;
        op.mask = operand;
        op.text = register_list(operand);
      }
      return true;
    case 0xb2: {
      std::uint64_t value = 0;
      unsigned shift = 0;
      std::size_t next = at + 1;
      for (;;) {
        if (next >= size || shift > 28) return false;
        const std::uint8_t part = ops[next++];
        value |= static_cast<std::uint64_t>(part & 0x7f) << shift;
        shift += 7;
        if (!(part & 0x80)) break;
      }
      op.kind = OpKind::kVspAdd;
      op.length = static_cast<std::uint8_t>(next - at);
      op.delta = static_cast<std::int64_t>(0x204 + (value << 2));
      op.text = "vsp = vsp + " + std::to_string(op.delta);
      return true;
    }
    case 0xb3: case 0xc8: case 0xc9:
      if (!second(operand)) return false;
      {
        const unsigned first = (operand >> 4) + (byte == 0xc8 ? 16 : 0), count = (operand & 0x0f) + 1u;
        op.kind = OpKind::kPopOther;
        op.delta = 8 * count + (byte == 0xb3 ? 4 : 0);  // FSTMFDX stores one more word
        op.text = range_list("D", first, count);
      }
      return true;
    case 0xc6:
      if (!second(operand)) return false;
      op.kind = OpKind::kPopOther;
      op.delta = 8 * ((operand & 0x0f) + 1);
      op.text = range_list("wR", operand >> 4, (operand & 0x0f) + 1u);
      return true;
    case 0xc7:
      if (!second(operand)) return false;
      if (operand == 0 || (operand & 0xf0)) {
        op.text = "[Spare]";
      } else {
        op.kind = OpKind::kPopOther;
        op.text = "pop {";
        for (unsigned reg = 0; reg < 4; ++reg) {
          if (!((operand >> reg) & 1)) continue;
          if (op.delta) op.text += ", ";
          op.text += "wCGR" + std::to_string(reg);
          op.delta += 4;
        }
        op.text += "}";
      }
      return true;
    default: break;
  }
  if (byte >= 0xb8 && byte <= 0xbf) {  // FSTMFDX d8-d[8+n]
    op.kind = OpKind::kPopOther;
    op.delta = 8 * ((byte & 0x07) + 1) + 4;
    op.text = range_list("D", 8, (byte & 0x07) + 1u);
  } else if (byte >= 0xc0 && byte <= 0xc5) {  // wR10-wR[10+n]
    op.kind = OpKind::kPopOther;
    op.delta = 8 * ((byte & 0x07) + 1);
    op.text = range_list("wR", 10, (byte & 0x07) + 1u);
  } else if (byte >= 0xd0 && byte <= 0xd7) {  // VPUSH d8-d[8+n]
    op.kind = OpKind::kPopOther;
    op.delta = 8 * ((byte & 0x07) + 1);
    op.text = range_list("D", 8, (byte & 0x07) + 1u);
  } else {
    op.text = "[Spare]";
  }
  return true;
}

}  // namespace

Error EhabiTable::error(std::string message, std::uint64_t offset, bool in_extab, ErrorCode code) const {
  return make_error(code, "EHABI: " + std::move(message), source_ + (in_extab ? "(.ARM.extab)" : "(.ARM.exidx)"),
                    offset);
}

Expected<EhabiTable> EhabiTable::create(std::span<const std::uint8_t> exidx, std::uint64_t exidx_address,
                                        std::span<const std::uint8_t> extab, std::uint64_t extab_address,
                                        bool little_endian, std::string source) {
  EhabiTable table;
  table.exidx_ = exidx;
  table.extab_ = extab;
  table.exidx_address_ = exidx_address;
  table.extab_address_ = extab_address;
  table.little_endian_ = little_endian;
  table.source_ = std::move(source);
  if (exidx.size() % 8 != 0)
    return table.error("the index is " + std::to_string(exidx.size()) + " bytes, not a multiple of 8-byte entries",
                       exidx.size() - exidx.size() % 8, false, ErrorCode::kTruncated);
  if (exidx.size() / 8 > 0xffffffffu) return table.error("too many entries", 0, false, ErrorCode::kLimit);
  table.entry_count_ = static_cast<std::uint32_t>(exidx.size() / 8);
  return table;
}

Expected<std::uint64_t> EhabiTable::function_at(std::uint32_t index) const {
  ByteReader in(exidx_, little_endian_);
  std::uint32_t word = 0;
  const std::uint64_t offset = std::uint64_t{index} * 8;
  if (!in.seek(offset) || !in.u32(word)) return error("entry " + std::to_string(index) + " is missing", offset, false);
  if (word & 0x80000000u)
    return error("entry " + std::to_string(index) + ": the function word " + hex(word) + " has bit 31 set", offset,
                 false);
  return prel31_target(word, exidx_address_ + offset);
}

Expected<EhabiEntry> EhabiTable::entry(std::uint32_t index) const {
  auto function = function_at(index);
  if (!function) return function.error();
  EhabiEntry entry;
  entry.index = index;
  entry.function = *function;
  entry.end = ~std::uint64_t{0};
  if (index + 1 < entry_count_) {
    auto next = function_at(index + 1);
    if (!next) return next.error();
    entry.end = *next;
  }
  const std::uint64_t offset = std::uint64_t{index} * 8 + 4;
  ByteReader in(exidx_, little_endian_);
  in.seek(offset);
  if (!in.u32(entry.word)) return error("entry " + std::to_string(index) + " is cut", offset, false);
  if (entry.word == kExidxCantUnwind) {
    entry.kind = EhabiEntryKind::kCantUnwind;
  } else if (entry.word & 0x80000000u) {
    entry.kind = EhabiEntryKind::kInline;
    if ((entry.word >> 24) & 0x7f)
      return error("inline entry " + hex(entry.word) + " names personality routine " +
                       std::to_string((entry.word >> 24) & 0x7f) + " (only pr0 fits in the index)",
                   offset, false);
  } else {
    entry.kind = EhabiEntryKind::kExtab;
    entry.extab_address = prel31_target(entry.word, exidx_address_ + offset);
  }
  return entry;
}

Expected<std::optional<EhabiEntry>> EhabiTable::find_entry(std::uint64_t pc) const {
  if (entry_count_ == 0) return std::optional<EhabiEntry>{};
  // The last entry whose function starts at or below the pc.
  std::uint32_t low = 0, high = entry_count_;  // answer in [low, high)
  auto first = function_at(0);
  if (!first) return first.error();
  if (pc < *first) return std::optional<EhabiEntry>{};
  while (high - low > 1) {
    const std::uint32_t middle = low + (high - low) / 2;
    auto function = function_at(middle);
    if (!function) return function.error();
    if (*function <= pc)
      low = middle;
    else
      high = middle;
  }
  auto found = entry(low);
  if (!found) return found.error();
  if (pc < found->function || pc >= found->end) return std::optional<EhabiEntry>{};  // an unsorted table
  return std::optional<EhabiEntry>(*found);
}

Expected<EhabiCode> EhabiTable::code(const EhabiEntry& entry) const {
  EhabiCode code;
  auto take_bytes = [&](std::uint32_t word, unsigned count) {  // the low `count` bytes, most significant first
    for (unsigned i = count; i-- > 0;) code.ops[code.size++] = static_cast<std::uint8_t>(word >> (8 * i));
  };
  switch (entry.kind) {
    case EhabiEntryKind::kCantUnwind: code.cant_unwind = true; return code;
    case EhabiEntryKind::kInline:
      code.offset = std::uint64_t{entry.index} * 8 + 4;
      take_bytes(entry.word, 3);
      return code;
    case EhabiEntryKind::kExtab: break;
  }
  code.in_extab = true;
  const std::uint64_t offset = entry.extab_address - extab_address_;
  const std::uint64_t entry_offset = std::uint64_t{entry.index} * 8 + 4;
  if (entry.extab_address < extab_address_ || offset >= extab_.size())
    return error("entry " + std::to_string(entry.index) + " refers to " + hex(entry.extab_address) +
                     ", outside .ARM.extab",
                 entry_offset, false);
  ByteReader in(extab_, little_endian_);
  in.seek(offset);
  std::uint32_t word = 0;
  if (!in.u32(word)) return error("the table entry is cut", offset, true, ErrorCode::kTruncated);
  code.offset = offset;
  std::uint32_t more_words = 0;
  if (word & 0x80000000u) {
    code.personality_index = static_cast<std::uint8_t>((word >> 24) & 0x0f);
    if ((word >> 28) & 0x7)
      return error("compact model word " + hex(word) + " has bits 28-30 set", offset, true);
    if (code.personality_index == 0) {
      take_bytes(word, 3);
    } else if (code.personality_index <= 2) {
      more_words = (word >> 16) & 0xff;
      take_bytes(word, 2);
    } else {
      return error("personality routine index " + std::to_string(code.personality_index) + " is not pr0, pr1 or pr2",
                   offset, true, ErrorCode::kUnsupported);
    }
  } else {
    code.compact = false;
    code.personality = prel31_target(word, entry.extab_address);
    code.offset = offset + 4;
    if (!in.u32(word)) return error("the generic model entry is cut", offset + 4, true, ErrorCode::kTruncated);
    more_words = word >> 24;
    take_bytes(word, 3);
  }
  if (more_words * std::uint64_t{4} > in.remaining())
    return error(std::to_string(more_words) + " more words of unwind instructions run past the section",
                 in.section_offset(), true, ErrorCode::kTruncated);
  for (std::uint32_t i = 0; i < more_words; ++i) {
    in.u32(word);
    take_bytes(word, 4);
  }
  return code;
}

Status EhabiTable::for_each_instruction(const EhabiCode& code,
                                        const std::function<void(const EhabiInstruction&)>& visit) const {
  EhabiOp op;
  for (std::size_t at = 0; at < code.size; at += op.length) {
    if (!decode(code.ops.data(), code.size, at, op))
      return error("the unwind instruction " + hex(code.ops[at]) + " at op byte " + std::to_string(at) + " is cut",
                   code.offset + at / 4 * 4, code.in_extab, ErrorCode::kTruncated);
    EhabiInstruction instruction;
    instruction.offset = static_cast<std::uint16_t>(at);
    instruction.length = op.length;
    instruction.text = std::move(op.text);
    visit(instruction);
    if (op.kind == OpKind::kFinish) break;
  }
  return ok_status();
}

Expected<UnwindRow> EhabiTable::row_for(const EhabiEntry& entry, const EhabiCode& code) const {
  UnwindRow row;
  row.start = entry.function;
  row.end = entry.end;
  row.cfa.reg = kSp;
  row.return_column = kLr;
  auto end_of_stack = [&] {
    RegisterRule undefined;
    undefined.kind = RuleKind::kUndefined;
    undefined.column = kLr;
    row.rules[0] = undefined;
    row.rule_count = 1;
    return row;
  };
  if (code.cant_unwind) return end_of_stack();
  std::int64_t vsp = 0;        // offset from the base register
  unsigned base = kSp;
  std::uint16_t popped = 0;
  std::array<std::int64_t, 16> slot{};  // where each popped register lies (base + slot)
  EhabiOp op;
  for (std::size_t at = 0; at < code.size; at += op.length) {
    const std::uint64_t where = code.offset + at / 4 * 4;
    if (!decode(code.ops.data(), code.size, at, op))
      return error("the unwind instruction " + hex(code.ops[at]) + " at op byte " + std::to_string(at) + " is cut",
                   where, code.in_extab, ErrorCode::kTruncated);
    if (op.kind == OpKind::kFinish) break;
    if (op.kind == OpKind::kRefuse) return end_of_stack();
    if (op.kind == OpKind::kSpare)
      return error("spare or reserved unwind instruction " + hex(code.ops[at]) + " at op byte " + std::to_string(at),
                   where, code.in_extab);
    if ((popped >> kSp) & 1)
      return error("\"" + op.text + "\" after a pop of r13: the stack pointer is then a loaded value", where,
                   code.in_extab, ErrorCode::kUnsupported);
    switch (op.kind) {
      case OpKind::kVspAdd: case OpKind::kPopOther: vsp += op.delta; break;
      case OpKind::kVspSet:
        if (popped)
          return error("\"" + op.text + "\" after a pop: not a register-plus-offset CFA", where, code.in_extab,
                       ErrorCode::kUnsupported);
        base = op.reg;
        vsp = 0;
        break;
      case OpKind::kPopCore:
        for (unsigned reg = 0; reg < 16; ++reg) {
          if (!((op.mask >> reg) & 1)) continue;
          slot[reg] = vsp;
          popped = static_cast<std::uint16_t>(popped | 1u << reg);
          vsp += 4;
        }
        break;
      default: break;
    }
  }
  row.cfa.reg = static_cast<std::uint16_t>(base);
  row.cfa.offset = vsp;
  for (unsigned reg = 0; reg < 16; ++reg) {
    if (!((popped >> reg) & 1)) continue;
    RegisterRule rule;
    rule.kind = RuleKind::kOffset;
    rule.column = static_cast<std::uint16_t>(reg);
    rule.offset = slot[reg] - vsp;
    row.rules[row.rule_count++] = rule;
  }
  if ((popped >> kPc) & 1) row.return_column = kPc;
  row.signal_frame = ((popped >> kPc) & 1) && ((popped >> kSp) & 1);
  return row;
}

}  // namespace tracecorn::unwind
