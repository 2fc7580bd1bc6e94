// Role: the DWARF CFI parser and CFA program interpreter declared in cfi.h.
#include "recorder/unwind/cfi.h"

#include <algorithm>
#include <array>
#include <cstdio>

#include "recorder/support/hex.h"
#include "recorder/unwind/byte_reader.h"

namespace tracecorn::unwind {
namespace {

using detail::ByteReader;

// DW_EH_PE_* (LSB 5.0, 10.5): low nibble = format, high bits = application.
constexpr std::uint8_t kPeOmit = 0xff;
constexpr std::uint8_t kPeAbsptr = 0x00, kPeUleb128 = 0x01, kPeUdata2 = 0x02, kPeUdata4 = 0x03, kPeUdata8 = 0x04,
                       kPeSleb128 = 0x09, kPeSdata2 = 0x0a, kPeSdata4 = 0x0b, kPeSdata8 = 0x0c;
constexpr std::uint8_t kPePcrel = 0x10, kPeDatarel = 0x30, kPeAligned = 0x50, kPeIndirect = 0x80;

constexpr unsigned kMaxStateStack = 64;

// Reads a pointer in `encoding`. `field_address` is the address of the field
// (for pcrel), `data_base` the base of datarel (0: datarel is not allowed).
// Returns false with `why` set on failure.
bool read_encoded(ByteReader& in, std::uint8_t encoding, std::uint64_t section_address, unsigned address_size,
                  std::uint64_t data_base, std::uint64_t& value, const char*& why) {
  if (encoding == kPeOmit) {
    why = "omitted pointer read";
    return false;
  }
  const std::uint8_t application = encoding & 0x70;
  if (application == kPeAligned) {
    const std::uint64_t misalign = (section_address + in.offset()) % address_size;
    if (misalign && !in.skip(address_size - misalign)) {
      why = "truncated pointer";
      return false;
    }
  }
  const std::uint64_t field_address = section_address + in.offset();
  std::uint64_t raw = 0;
  std::int64_t signed_raw = 0;
  bool ok = false;
  switch (encoding & 0x0f) {
    case kPeAbsptr: ok = in.read_unsigned(address_size, raw); break;
    case kPeUleb128: ok = in.uleb128(raw); break;
    case kPeUdata2: ok = in.read_unsigned(2, raw); break;
    case kPeUdata4: ok = in.read_unsigned(4, raw); break;
    case kPeUdata8: ok = in.read_unsigned(8, raw); break;
    case kPeSleb128: ok = in.sleb128(signed_raw); raw = static_cast<std::uint64_t>(signed_raw); break;
    case kPeSdata2: ok = in.read_signed(2, signed_raw); raw = static_cast<std::uint64_t>(signed_raw); break;
    case kPeSdata4: ok = in.read_signed(4, signed_raw); raw = static_cast<std::uint64_t>(signed_raw); break;
    case kPeSdata8: ok = in.read_signed(8, signed_raw); raw = static_cast<std::uint64_t>(signed_raw); break;
    default: why = "unknown pointer encoding"; return false;
  }
  if (!ok) {
    why = "truncated pointer";
    return false;
  }
  switch (application) {
    case 0: case kPeAligned: break;
    case kPePcrel: raw += field_address; break;
    case kPeDatarel:
      if (!data_base) {
        why = "datarel pointer outside .eh_frame_hdr";
        return false;
      }
      raw += data_base;
      break;
    default: why = "unsupported pointer application (textrel/funcrel)"; return false;
  }
  (void)kPeIndirect;  // an indirect pointer's value is the address of the pointer; never followed here
  if (address_size == 4) raw &= 0xffffffffu;
  value = raw;
  return true;
}

// The working state of the CFA program.
struct State {
  CfaRule cfa;
  std::array<RegisterRule, kMaxRegisters> registers{};
  std::uint64_t args_size = 0;
  bool ra_signed = false;
};

// DW_CFA_* (DWARF 5, 6.4.2, with the GNU and vendor extensions GCC emits).
// The primary instructions carry an operand in their low six bits and are
// told apart by the top two; the others are whole bytes.
constexpr std::uint8_t kCfaAdvanceLoc = 1, kCfaOffset = 2, kCfaRestore = 3;  // op >> 6
enum CfaOpcode : std::uint8_t {
  kCfaNop = 0x00,
  kCfaSetLoc = 0x01,
  kCfaAdvanceLoc1 = 0x02,
  kCfaAdvanceLoc2 = 0x03,
  kCfaAdvanceLoc4 = 0x04,
  kCfaOffsetExtended = 0x05,
  kCfaRestoreExtended = 0x06,
  kCfaUndefined = 0x07,
  kCfaSameValue = 0x08,
  kCfaRegister = 0x09,
  kCfaRememberState = 0x0a,
  kCfaRestoreState = 0x0b,
  kCfaDefCfa = 0x0c,
  kCfaDefCfaRegister = 0x0d,
  kCfaDefCfaOffset = 0x0e,
  kCfaDefCfaExpression = 0x0f,
  kCfaExpression = 0x10,
  kCfaOffsetExtendedSf = 0x11,
  kCfaDefCfaSf = 0x12,
  kCfaDefCfaOffsetSf = 0x13,
  kCfaValOffset = 0x14,
  kCfaValOffsetSf = 0x15,
  kCfaValExpression = 0x16,
  kCfaMipsAdvanceLoc8 = 0x1d,
  kCfaGnuWindowSave = 0x2d,  // SPARC; AARCH64_negate_ra_state on aarch64
  kCfaGnuArgsSize = 0x2e,
  kCfaGnuNegativeOffsetExtended = 0x2f,
};

// Runs the CFA program of one FDE (its CIE's initial instructions, then its
// own) and hands rows to `visit`: every row with `all_rows`, else the one that
// holds `target_pc`. The instructions are grouped as DWARF 5 6.4.2 groups
// them: row creation (the location), CFA definition, register rules, row state.
class CfaInterpreter {
 public:
  CfaInterpreter(const CfiSection& section, const CieRecord& cie, const FdeRecord& fde, std::uint64_t target_pc,
                 bool all_rows, const std::function<void(const UnwindRow&)>& visit)
      : section_(section), cie_(cie), fde_(fde), target_pc_(target_pc), all_rows_(all_rows), visit_(visit),
        location_(fde.pc_begin) {}

  // The CIE's initial instructions (no advance is meaningful there and no row
  // is emitted); they set the rules DW_CFA_restore returns to.
  Status run_initial_instructions() {
    if (auto status = run(cie_.instructions, cie_.instructions_offset, true); !status) return status;
    initial_ = state_;
    return ok_status();
  }

  // The FDE's instructions, then the last row (up to pc_end) unless the
  // target's row has been emitted already.
  Status run_fde_instructions() {
    if (auto status = run(fde_.instructions, fde_.instructions_offset, false); !status) return status;
    if (done_) return ok_status();
    if (all_rows_ && location_ >= fde_.pc_end) return ok_status();
    return emit_row(fde_.pc_end);
  }

 private:
  Error error(std::string message, std::uint64_t offset, ErrorCode code = ErrorCode::kBadFormat) const {
    return make_error(code, std::move(message), section_.source, offset);
  }
  Error truncated(const ByteReader& in) const {
    return error("CFA instruction is truncated", in.section_offset(), ErrorCode::kTruncated);
  }

  // Runs one instruction list to its end, or until the target row is emitted.
  Status run(std::span<const std::uint8_t> program, std::uint64_t program_offset, bool in_cie) {
    in_cie_ = in_cie;
    ByteReader in(program, section_.little_endian, program_offset);
    while (!in.at_end() && !done_) {
      const std::uint64_t at = in.section_offset();
      std::uint8_t op = 0;
      in.u8(op);
      if (auto status = execute(op, in, at); !status) return status;
    }
    return ok_status();
  }

  // One instruction `op`, read at section offset `at`; `in` is at its operands.
  Status execute(std::uint8_t op, ByteReader& in, std::uint64_t at) {
    const std::uint8_t low = op & 0x3f;
    switch (op >> 6) {
      case kCfaAdvanceLoc: return advance(low, at);
      case kCfaOffset: return offset_rule(low, in, at);
      case kCfaRestore:
        if (in_cie_) return error("DW_CFA_restore in a CIE", at);
        restore(low);
        return ok_status();
      default: break;
    }
    switch (op) {
      case kCfaNop: return ok_status();
      case kCfaSetLoc: case kCfaAdvanceLoc1: case kCfaAdvanceLoc2: case kCfaAdvanceLoc4: case kCfaMipsAdvanceLoc8:
        return move_location(op, in, at);
      case kCfaDefCfa: case kCfaDefCfaSf: case kCfaDefCfaRegister: case kCfaDefCfaOffset: case kCfaDefCfaOffsetSf:
      case kCfaDefCfaExpression:
        return define_cfa(op, in, at);
      case kCfaOffsetExtended: case kCfaRestoreExtended: case kCfaUndefined: case kCfaSameValue: case kCfaRegister:
      case kCfaExpression: case kCfaValExpression: case kCfaOffsetExtendedSf: case kCfaValOffset:
      case kCfaValOffsetSf: case kCfaGnuNegativeOffsetExtended:
        return set_register_rule(op, in, at);
      case kCfaRememberState: case kCfaRestoreState: case kCfaGnuWindowSave: case kCfaGnuArgsSize:
        return change_row_state(op, in, at);
      default: return unknown_instruction(op, at);
    }
  }

  Status unknown_instruction(std::uint8_t op, std::uint64_t at) const {
    char name[8];
    std::snprintf(name, sizeof name, "0x%02x", op);
    return error(std::string("unknown CFA instruction ") + name, at);
  }

  // Row creation: set_loc, advance_loc1/2/4, MIPS_advance_loc8.
  Status move_location(std::uint8_t op, ByteReader& in, std::uint64_t at) {
    if (op == kCfaSetLoc) {
      const char* why = nullptr;
      ByteReader sub(section_.bytes.first(in.section_offset() + in.remaining()), section_.little_endian);
      sub.seek(in.section_offset());
      std::uint64_t target = 0;
      if (!read_encoded(sub, section_.kind == CfiKind::kEhFrame ? cie_.fde_encoding : kPeAbsptr, section_.address,
                        cie_.address_size, 0, target, why))
        return error(std::string("DW_CFA_set_loc: ") + why, at);
      in.skip(sub.offset() - in.section_offset());
      return advance_to(target, at);
    }
    const unsigned size = op == kCfaAdvanceLoc1 ? 1 : op == kCfaAdvanceLoc2 ? 2 : op == kCfaAdvanceLoc4 ? 4 : 8;
    std::uint64_t delta = 0;
    if (!in.read_unsigned(size, delta)) return truncated(in);
    return advance(delta, at);
  }

  // Moves the location forward by `delta` code units.
  Status advance(std::uint64_t delta, std::uint64_t at) {
    const std::uint64_t factor = cie_.code_alignment;
    if (delta != 0 && factor > ~std::uint64_t{0} / delta) return error("location advance overflows", at);
    const std::uint64_t bytes = delta * factor;
    if (bytes > ~std::uint64_t{0} - location_) return error("location advance overflows", at);
    return advance_to(location_ + bytes, at);
  }

  // Moves the location to `new_location`, emitting the row that ends there
  // (every row, or the target's).
  Status advance_to(std::uint64_t new_location, std::uint64_t at) {
    if (in_cie_) return ok_status();
    if (new_location < location_) return error("location moves backwards to " + hex(new_location), at);
    if (new_location == location_) return ok_status();
    if (all_rows_) {
      if (location_ < fde_.pc_end) {
        if (auto status = emit_row(std::min(new_location, fde_.pc_end)); !status) return status;
      }
    } else if (new_location > target_pc_) {
      if (auto status = emit_row(new_location); !status) return status;
      done_ = true;
    }
    location_ = new_location;
    return ok_status();
  }

  // The row [location_, end) as the state gives it.
  Status emit_row(std::uint64_t end) {
    UnwindRow row;
    row.start = location_;
    row.end = end;
    row.cfa = state_.cfa;
    row.return_column = static_cast<std::uint16_t>(cie_.return_column);
    row.signal_frame = cie_.signal_frame;
    row.return_address_signed = state_.ra_signed;
    row.args_size = state_.args_size;
    row.section_base = section_.bytes.data();
    for (unsigned column = 0; column < kMaxRegisters; ++column) {
      if (state_.registers[column].kind == RuleKind::kUnspecified) continue;
      if (row.rule_count >= kMaxRowRules)
        return error("more than " + std::to_string(kMaxRowRules) + " register rules in one row", fde_.offset,
                     ErrorCode::kLimit);
      row.rules[row.rule_count] = state_.registers[column];
      row.rules[row.rule_count].column = static_cast<std::uint16_t>(column);
      ++row.rule_count;
    }
    visit_(row);
    return ok_status();
  }

  // CFA definition: def_cfa, def_cfa_sf, def_cfa_register, def_cfa_offset,
  // def_cfa_offset_sf, def_cfa_expression.
  Status define_cfa(std::uint8_t op, ByteReader& in, std::uint64_t at) {
    std::uint64_t reg = 0, a = 0;
    std::int64_t s = 0, scaled = 0;
    std::span<const std::uint8_t> block;
    switch (op) {
      case kCfaDefCfa:
        if (!in.uleb128(reg) || !in.uleb128(a)) return truncated(in);
        if (reg >= kMaxRegisters) return untracked_cfa_register(reg, at);
        state_.cfa = CfaRule{false, static_cast<std::uint16_t>(reg), 0, static_cast<std::int64_t>(a), nullptr};
        return ok_status();
      case kCfaDefCfaSf:
        if (!in.uleb128(reg) || !in.sleb128(s)) return truncated(in);
        if (reg >= kMaxRegisters) return untracked_cfa_register(reg, at);
        if (!scale_by_data_alignment(s, scaled)) return error("offset overflows", at);
        state_.cfa = CfaRule{false, static_cast<std::uint16_t>(reg), 0, scaled, nullptr};
        return ok_status();
      case kCfaDefCfaRegister:
        if (!in.uleb128(reg)) return truncated(in);
        if (reg >= kMaxRegisters) return untracked_cfa_register(reg, at);
        state_.cfa.is_expression = false;
        state_.cfa.reg = static_cast<std::uint16_t>(reg);
        return ok_status();
      case kCfaDefCfaOffset:
        if (!in.uleb128(a)) return truncated(in);
        state_.cfa.offset = static_cast<std::int64_t>(a);
        return ok_status();
      case kCfaDefCfaOffsetSf:
        if (!in.sleb128(s)) return truncated(in);
        if (!scale_by_data_alignment(s, scaled)) return error("offset overflows", at);
        state_.cfa.offset = scaled;
        return ok_status();
      case kCfaDefCfaExpression:
        if (!in.uleb128(a) || !in.take(a, block)) return truncated(in);
        state_.cfa = CfaRule{true, 0, static_cast<std::uint32_t>(block.size()), 0, block.data()};
        return ok_status();
      default: return unknown_instruction(op, at);
    }
  }

  Error untracked_cfa_register(std::uint64_t reg, std::uint64_t at) const {
    return error("CFA register " + std::to_string(reg) + " is not tracked", at, ErrorCode::kUnsupported);
  }

  // Register rules: offset_extended(_sf), val_offset(_sf),
  // GNU_negative_offset_extended, restore_extended, undefined, same_value,
  // register, expression, val_expression.
  Status set_register_rule(std::uint8_t op, ByteReader& in, std::uint64_t at) {
    std::uint64_t reg = 0, a = 0;
    std::span<const std::uint8_t> block;
    if (!in.uleb128(reg)) return truncated(in);
    switch (op) {
      case kCfaOffsetExtended: return offset_rule(reg, in, at);
      case kCfaOffsetExtendedSf: case kCfaValOffset: case kCfaValOffsetSf: case kCfaGnuNegativeOffsetExtended:
        return factored_offset_rule(op, reg, in, at);
      case kCfaRestoreExtended:
        if (in_cie_) return error("DW_CFA_restore_extended in a CIE", at);
        restore(reg);
        return ok_status();
      case kCfaUndefined: set_rule(reg, RuleKind::kUndefined, 0); return ok_status();
      case kCfaSameValue: set_rule(reg, RuleKind::kSameValue, 0); return ok_status();
      case kCfaRegister:
        if (!in.uleb128(a)) return truncated(in);
        if (a >= kMaxRegisters)
          return error("DW_CFA_register names untracked register " + std::to_string(a), at, ErrorCode::kUnsupported);
        set_rule(reg, RuleKind::kRegister, 0);
        if (reg < kMaxRegisters) state_.registers[reg].reg = a;
        return ok_status();
      case kCfaExpression: case kCfaValExpression:
        if (!in.uleb128(a) || !in.take(a, block)) return truncated(in);
        set_expression(reg, op == kCfaExpression ? RuleKind::kExpression : RuleKind::kValExpression, block);
        return ok_status();
      default: return unknown_instruction(op, at);
    }
  }

  // DW_CFA_offset(_extended): the register is saved at CFA + uleb x data alignment.
  Status offset_rule(std::uint64_t reg, ByteReader& in, std::uint64_t at) {
    std::uint64_t a = 0;
    std::int64_t scaled = 0;
    if (!in.uleb128(a)) return truncated(in);
    if (!scale_by_data_alignment(static_cast<std::int64_t>(a), scaled)) return error("offset overflows", at);
    set_rule(reg, RuleKind::kOffset, scaled);
    return ok_status();
  }

  // offset_extended_sf, val_offset(_sf), GNU_negative_offset_extended: a
  // factored offset, signed or not (negated for the GNU one).
  Status factored_offset_rule(std::uint8_t op, std::uint64_t reg, ByteReader& in, std::uint64_t at) {
    std::int64_t s = 0, scaled = 0;
    if (op == kCfaOffsetExtendedSf || op == kCfaValOffsetSf) {
      if (!in.sleb128(s)) return truncated(in);
    } else {
      std::uint64_t a = 0;
      if (!in.uleb128(a)) return truncated(in);
      s = static_cast<std::int64_t>(a);
      if (op == kCfaGnuNegativeOffsetExtended) s = -s;
    }
    if (!scale_by_data_alignment(s, scaled)) return error("offset overflows", at);
    const bool saved_at_offset = op == kCfaOffsetExtendedSf || op == kCfaGnuNegativeOffsetExtended;
    set_rule(reg, saved_at_offset ? RuleKind::kOffset : RuleKind::kValOffset, scaled);
    return ok_status();
  }

  bool scale_by_data_alignment(std::int64_t value, std::int64_t& out) const {
    return !__builtin_mul_overflow(value, cie_.data_alignment, &out);
  }

  void set_rule(std::uint64_t reg, RuleKind kind, std::int64_t offset) {
    if (reg >= kMaxRegisters) return;  // not tracked (vector registers, aarch64 d8..d15)
    RegisterRule& rule = state_.registers[reg];
    rule.kind = kind;
    rule.offset = offset;
    rule.expression_size = 0;
  }

  void set_expression(std::uint64_t reg, RuleKind kind, std::span<const std::uint8_t> block) {
    if (reg >= kMaxRegisters) return;
    RegisterRule& rule = state_.registers[reg];
    rule.kind = kind;
    rule.expression = block.data();
    rule.expression_size = static_cast<std::uint32_t>(block.size());
  }

  void restore(std::uint64_t reg) {
    if (reg < kMaxRegisters) state_.registers[reg] = initial_.registers[reg];
  }

  // Row state: remember_state, restore_state, GNU_window_save
  // (AARCH64_negate_ra_state), GNU_args_size.
  Status change_row_state(std::uint8_t op, ByteReader& in, std::uint64_t at) {
    std::uint64_t a = 0;
    switch (op) {
      case kCfaRememberState:
        if (saved_.size() >= kMaxStateStack) return error("remember_state nested too deeply", at, ErrorCode::kLimit);
        saved_.push_back(state_);
        return ok_status();
      case kCfaRestoreState:
        if (saved_.empty()) return error("restore_state without remember_state", at);
        // The CFA and args size survive restore_state only in old GCC
        // practice; DWARF says the whole row is restored (as libgcc does).
        state_ = saved_.back();
        saved_.pop_back();
        return ok_status();
      case kCfaGnuWindowSave: state_.ra_signed = !state_.ra_signed; return ok_status();
      case kCfaGnuArgsSize:
        if (!in.uleb128(a)) return truncated(in);
        state_.args_size = a;
        return ok_status();
      default: return unknown_instruction(op, at);
    }
  }

  const CfiSection& section_;
  const CieRecord& cie_;
  const FdeRecord& fde_;
  const std::uint64_t target_pc_;
  const bool all_rows_;
  const std::function<void(const UnwindRow&)>& visit_;
  State state_;
  State initial_;              // after the CIE's instructions: what DW_CFA_restore returns to
  std::vector<State> saved_;   // remember_state's stack
  std::uint64_t location_;     // where the current row starts
  bool in_cie_ = false;        // running the CIE's initial instructions
  bool done_ = false;          // the target row has been emitted
};

}  // namespace

Error CfiTable::error(std::string message, std::uint64_t offset, ErrorCode code) const {
  return make_error(code, std::move(message), section_.source, offset);
}

Expected<CfiTable> CfiTable::create(CfiSection section, std::span<const std::uint8_t> header,
                                    std::uint64_t header_address) {
  if (section.address_size != 4 && section.address_size != 8)
    return make_error(ErrorCode::kUnsupported, "address size " + std::to_string(section.address_size),
                      section.source);
  CfiTable table(std::move(section));
  // .eh_frame_hdr (LSB 5.0, 10.6.2): u8 version (1), u8 eh_frame_ptr_enc,
  // u8 fde_count_enc, u8 table_enc, eh_frame_ptr, fde_count, then fde_count
  // pairs (initial location, FDE address) sorted by location. Only the usual
  // datarel|sdata4 table (8-byte pairs) is searched in place.
  if (!header.empty() && table.section_.kind == CfiKind::kEhFrame) {
    ByteReader in(header, table.section_.little_endian);
    std::uint8_t version = 0, ptr_enc = 0, count_enc = 0, table_enc = 0;
    std::uint64_t eh_frame_ptr = 0, count = 0;
    const char* why = nullptr;
    if (in.u8(version) && in.u8(ptr_enc) && in.u8(count_enc) && in.u8(table_enc) && version == 1 &&
        read_encoded(in, ptr_enc, header_address, table.section_.address_size, header_address, eh_frame_ptr, why) &&
        count_enc != kPeOmit &&
        read_encoded(in, count_enc, header_address, table.section_.address_size, header_address, count, why) &&
        table_enc == (kPeDatarel | kPeSdata4) && eh_frame_ptr == table.section_.address && count > 0 &&
        count <= in.remaining() / 8) {
      table.header_table_ = header.subspan(in.offset(), count * 8);
      table.header_address_ = header_address;
      table.header_table_count_ = count;
    }
  }
  return table;
}

Expected<CfiTable::RawEntry> CfiTable::raw_entry(std::uint64_t offset) const {
  ByteReader in(section_.bytes, section_.little_endian);
  RawEntry entry;
  entry.offset = offset;
  if (!in.seek(offset)) return error("entry offset " + hex(offset) + " lies past the section", offset);
  std::uint32_t length32 = 0;
  if (!in.u32(length32)) return error("entry length is truncated", offset, ErrorCode::kTruncated);
  std::uint64_t length = length32;
  bool dwarf64 = false;
  if (length32 == 0xffffffffu) {
    if (!in.u64(length)) return error("64-bit entry length is truncated", offset, ErrorCode::kTruncated);
    dwarf64 = true;
  }
  if (length == 0) {
    entry.end = in.offset();
    entry.type = EntryType::kTerminator;
    return entry;
  }
  if (length > in.remaining())
    return error("entry length " + hex(length) + " runs past the end of the section", offset, ErrorCode::kTruncated);
  entry.end = in.offset() + length;
  const std::uint64_t id_offset = in.offset();
  std::uint64_t id = 0;
  if (!in.read_unsigned(dwarf64 ? 8 : 4, id) || in.offset() > entry.end)
    return error("entry too short for its CIE id", id_offset, ErrorCode::kTruncated);
  entry.body = in.offset();
  const bool is_cie = section_.kind == CfiKind::kEhFrame ? id == 0
                                                          : id == (dwarf64 ? ~std::uint64_t{0} : 0xffffffffu);
  if (is_cie) {
    entry.type = EntryType::kCie;
    return entry;
  }
  entry.type = EntryType::kFde;
  if (section_.kind == CfiKind::kEhFrame) {
    if (id > id_offset) return error("CIE pointer " + hex(id) + " points before the section", id_offset);
    entry.cie_pointer = id_offset - id;
  } else {
    entry.cie_pointer = id;
  }
  if (entry.cie_pointer >= section_.bytes.size())
    return error("CIE pointer " + hex(entry.cie_pointer) + " lies past the section", id_offset);
  return entry;
}

Expected<CieRecord> CfiTable::parse_cie(const RawEntry& entry) const {
  ByteReader in(section_.bytes.first(entry.end), section_.little_endian);
  in.seek(entry.body);
  CieRecord cie;
  cie.offset = entry.offset;
  cie.address_size = static_cast<std::uint8_t>(section_.address_size);
  auto truncated = [&](const char* what) {
    return error(std::string("CIE ") + what + " is truncated", in.offset(), ErrorCode::kTruncated);
  };
  if (!in.u8(cie.version)) return truncated("version");
  if (cie.version != 1 && cie.version != 3 && cie.version != 4)
    return error("CIE version " + std::to_string(cie.version) + " is not 1, 3 or 4", in.offset() - 1);
  // Augmentation string: NUL-terminated, bounded by the entry.
  for (;;) {
    std::uint8_t c = 0;
    if (!in.u8(c)) return truncated("augmentation string");
    if (c == 0) break;
    if (cie.augmentation.size() >= 16) return error("CIE augmentation string is too long", in.offset());
    cie.augmentation.push_back(static_cast<char>(c));
  }
  if (cie.version == 4) {
    std::uint8_t segment_size = 0;
    if (!in.u8(cie.address_size) || !in.u8(segment_size)) return truncated("address size");
    if (cie.address_size != 4 && cie.address_size != 8)
      return error("CIE address size " + std::to_string(cie.address_size), in.offset() - 2);
    if (segment_size != 0) return error("segmented addresses are not supported", in.offset() - 1, ErrorCode::kUnsupported);
  }
  if (!in.uleb128(cie.code_alignment)) return truncated("code alignment");
  if (!in.sleb128(cie.data_alignment)) return truncated("data alignment");
  if (cie.version == 1) {
    std::uint8_t column = 0;
    if (!in.u8(column)) return truncated("return column");
    cie.return_column = column;
  } else if (!in.uleb128(cie.return_column)) {
    return truncated("return column");
  }
  const std::string& aug = cie.augmentation;
  if (!aug.empty()) {
    if (aug[0] != 'z') {
      // Without 'z' the augmentation data has no length: only the letters we
      // know may appear ("eh" from very old compilers is refused).
      return error("CIE augmentation \"" + aug + "\" without 'z' is not supported", entry.body + 1,
                   ErrorCode::kUnsupported);
    }
    cie.has_augmentation_data = true;
    std::uint64_t length = 0;
    if (!in.uleb128(length)) return truncated("augmentation length");
    std::span<const std::uint8_t> data;
    const std::uint64_t data_offset = in.offset();
    if (!in.take(length, data)) return error("CIE augmentation data runs past the entry", data_offset, ErrorCode::kTruncated);
    ByteReader aug_in(section_.bytes.first(data_offset + length), section_.little_endian);
    aug_in.seek(data_offset);
    for (std::size_t i = 1; i < aug.size(); ++i) {
      const char* why = nullptr;
      switch (aug[i]) {
        case 'L':
          if (!aug_in.u8(cie.lsda_encoding)) return truncated("LSDA encoding");
          break;
        case 'R':
          if (!aug_in.u8(cie.fde_encoding)) return truncated("FDE encoding");
          break;
        case 'P':
          if (!aug_in.u8(cie.personality_encoding)) return truncated("personality encoding");
          if (!read_encoded(aug_in, cie.personality_encoding, section_.address, cie.address_size, 0, cie.personality,
                            why))
            return error(std::string("CIE personality: ") + why, aug_in.offset());
          break;
        case 'S': cie.signal_frame = true; break;
        case 'B': case 'G': break;  // aarch64 pointer-authentication key B, MTE tagged frames: no data
        default:
          // 'z' says how long the data is: the rest can be skipped safely.
          i = aug.size();
          break;
      }
    }
  }
  cie.instructions_offset = in.offset();
  cie.instructions = section_.bytes.subspan(in.offset(), entry.end - in.offset());
  return cie;
}

Expected<const CieRecord*> CfiTable::cached_cie(std::uint64_t offset) const {
  if (auto found = cies_.find(offset); found != cies_.end()) return &found->second;
  auto entry = raw_entry(offset);
  if (!entry) return entry.error();
  if (entry->type != EntryType::kCie)
    return error("the CIE pointer leads to " + std::string(entry->type == EntryType::kFde ? "an FDE" : "a terminator") +
                     ", not a CIE",
                 offset);
  auto cie = parse_cie(*entry);
  if (!cie) return cie.error();
  if (cies_.size() > 4096) cies_.clear();  // bounded (a hostile section could hold many)
  return &cies_.emplace(offset, std::move(*cie)).first->second;
}

Expected<FdeRecord> CfiTable::parse_fde(const RawEntry& entry, const CieRecord& cie) const {
  ByteReader in(section_.bytes.first(entry.end), section_.little_endian);
  in.seek(entry.body);
  FdeRecord fde;
  fde.offset = entry.offset;
  fde.cie_offset = entry.cie_pointer;
  const char* why = nullptr;
  const std::uint8_t encoding = section_.kind == CfiKind::kEhFrame ? cie.fde_encoding : kPeAbsptr;
  if (!read_encoded(in, encoding, section_.address, cie.address_size, 0, fde.pc_begin, why))
    return error(std::string("FDE pc_begin: ") + why, in.offset());
  std::uint64_t range = 0;
  if (!read_encoded(in, encoding & 0x0f, section_.address, cie.address_size, 0, range, why))
    return error(std::string("FDE pc_range: ") + why, in.offset());
  if (range > ~std::uint64_t{0} - fde.pc_begin) return error("FDE range wraps around", entry.body);
  fde.pc_end = fde.pc_begin + range;
  if (cie.has_augmentation_data) {
    std::uint64_t length = 0;
    if (!in.uleb128(length)) return error("FDE augmentation length is truncated", in.offset(), ErrorCode::kTruncated);
    const std::uint64_t data_offset = in.offset();
    if (!in.skip(length)) return error("FDE augmentation data runs past the entry", data_offset, ErrorCode::kTruncated);
    if (cie.lsda_encoding != kPeOmit && length > 0) {
      ByteReader lsda_in(section_.bytes.first(data_offset + length), section_.little_endian);
      lsda_in.seek(data_offset);
      std::uint64_t lsda = 0;
      if (read_encoded(lsda_in, cie.lsda_encoding, section_.address, cie.address_size, 0, lsda, why)) fde.lsda = lsda;
    }
  }
  fde.instructions_offset = in.offset();
  fde.instructions = section_.bytes.subspan(in.offset(), entry.end - in.offset());
  return fde;
}

Expected<CieRecord> CfiTable::cie_at(std::uint64_t offset) const {
  auto cie = cached_cie(offset);
  if (!cie) return cie.error();
  return **cie;
}

Expected<FdeRecord> CfiTable::fde_at(std::uint64_t offset) const {
  auto entry = raw_entry(offset);
  if (!entry) return entry.error();
  if (entry->type != EntryType::kFde) return error("not an FDE", offset);
  auto cie = cached_cie(entry->cie_pointer);
  if (!cie) return cie.error();
  return parse_fde(*entry, **cie);
}

Status CfiTable::for_each(const std::function<void(const CieRecord*, const FdeRecord*)>& visit) const {
  std::uint64_t offset = 0;
  while (offset < section_.bytes.size()) {
    auto entry = raw_entry(offset);
    if (!entry) return entry.error();
    if (entry->type == EntryType::kTerminator) {
      if (section_.kind == CfiKind::kEhFrame) break;
      offset = entry->end;
      continue;
    }
    if (entry->type == EntryType::kCie) {
      auto cie = cached_cie(offset);
      if (!cie) return cie.error();
      visit(*cie, nullptr);
    } else {
      auto cie = cached_cie(entry->cie_pointer);
      if (!cie) return cie.error();
      auto fde = parse_fde(*entry, **cie);
      if (!fde) return fde.error();
      visit(nullptr, &*fde);
    }
    offset = entry->end;
  }
  return ok_status();
}

Status CfiTable::build_index() const {
  if (index_built_) return ok_status();
  index_built_ = true;
  std::vector<IndexEntry> index;
  auto status = for_each([&](const CieRecord*, const FdeRecord* fde) {
    if (fde && fde->pc_end > fde->pc_begin) index.push_back({fde->pc_begin, fde->pc_end, fde->offset});
  });
  // A section that breaks part-way still serves the FDEs before the break.
  std::sort(index.begin(), index.end(), [](const IndexEntry& a, const IndexEntry& b) { return a.pc_begin < b.pc_begin; });
  index_ = std::move(index);
  if (!status) return status;
  return ok_status();
}

Expected<std::optional<FdeRecord>> CfiTable::find_in_header(std::uint64_t pc) const {
  ByteReader in(header_table_, section_.little_endian);
  auto entry = [&](std::uint64_t i, std::int64_t& location, std::int64_t& fde) {
    in.seek(i * 8);
    in.read_signed(4, location);
    in.read_signed(4, fde);
  };
  // Last entry whose initial location <= pc.
  std::uint64_t low = 0, high = header_table_count_;
  while (low < high) {
    const std::uint64_t mid = low + (high - low) / 2;
    std::int64_t location = 0, fde = 0;
    entry(mid, location, fde);
    if (header_address_ + static_cast<std::uint64_t>(location) <= pc)
      low = mid + 1;
    else
      high = mid;
  }
  if (low == 0) return std::optional<FdeRecord>{};
  std::int64_t location = 0, fde_relative = 0;
  entry(low - 1, location, fde_relative);
  const std::uint64_t fde_address = header_address_ + static_cast<std::uint64_t>(fde_relative);
  if (fde_address < section_.address || fde_address - section_.address >= section_.bytes.size())
    return error(".eh_frame_hdr entry points outside .eh_frame: " + hex(fde_address), (low - 1) * 8);
  auto fde = fde_at(fde_address - section_.address);
  if (!fde) return fde.error();
  if (pc < fde->pc_begin || pc >= fde->pc_end) return std::optional<FdeRecord>{};
  return std::optional<FdeRecord>{std::move(*fde)};
}

Expected<std::optional<FdeRecord>> CfiTable::find_fde(std::uint64_t pc) const {
  if (header_table_count_) return find_in_header(pc);
  auto built = build_index();
  (void)built;  // a broken tail still leaves a usable index of what came before it
  auto it = std::upper_bound(index_.begin(), index_.end(), pc,
                             [](std::uint64_t value, const IndexEntry& e) { return value < e.pc_begin; });
  // FDEs may overlap only in malformed sections; look back a few entries.
  for (int back = 0; back < 4 && it != index_.begin(); ++back) {
    --it;
    if (pc >= it->pc_begin && pc < it->pc_end) {
      auto fde = fde_at(it->fde_offset);
      if (!fde) return fde.error();
      return std::optional<FdeRecord>{std::move(*fde)};
    }
  }
  return std::optional<FdeRecord>{};
}

Expected<UnwindRow> CfiTable::row_at(const FdeRecord& fde, std::uint64_t pc) const {
  UnwindRow result;
  bool found = false;
  auto status = execute(fde, pc, false, [&](const UnwindRow& row) {
    result = row;
    found = true;
  });
  if (!status) return status.error();
  if (!found) return error("no row covers " + hex(pc), fde.offset);
  return result;
}

Status CfiTable::rows(const FdeRecord& fde, const std::function<void(const UnwindRow&)>& visit) const {
  return execute(fde, 0, true, visit);
}

// Runs the CIE's initial instructions, then the FDE's (CfaInterpreter). With
// `all_rows`, calls `visit` for every row; else once, with the row holding `target_pc`.
Status CfiTable::execute(const FdeRecord& fde, std::uint64_t target_pc, bool all_rows,
                         const std::function<void(const UnwindRow&)>& visit) const {
  auto cie_or = cached_cie(fde.cie_offset);
  if (!cie_or) return cie_or.error();
  const CieRecord& cie = **cie_or;
  if (cie.return_column >= kMaxRegisters)
    return error("return address column " + std::to_string(cie.return_column) + " is not tracked", cie.offset,
                 ErrorCode::kUnsupported);
  if (cie.code_alignment == 0) return error("code alignment factor 0", cie.offset);

  CfaInterpreter interpreter(section_, cie, fde, target_pc, all_rows, visit);
  if (auto status = interpreter.run_initial_instructions(); !status) return status;
  if (!all_rows && (target_pc < fde.pc_begin || target_pc >= fde.pc_end))
    return error("pc " + hex(target_pc) + " is outside the FDE", fde.offset, ErrorCode::kInvalidArgument);
  return interpreter.run_fde_instructions();
}

}  // namespace tracecorn::unwind
