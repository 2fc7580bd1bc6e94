// Role: the stack walk declared in unwinder.h: module lookup, the per-pc row
// cache, and applying a row (CFA, saved registers, return address).
#include "recorder/unwind/unwinder.h"

#include <algorithm>
#include <cstring>

#include "recorder/unwind/dwarf_expression.h"

namespace tracecorn::unwind {

std::optional<UnwindMethod> parse_unwind_method(std::string_view text) {
  if (text == "auto") return UnwindMethod::kAuto;
  if (text == "sframe") return UnwindMethod::kSFrame;
  if (text == "cfi") return UnwindMethod::kCfi;
  if (text == "fp") return UnwindMethod::kFramePointer;
  return std::nullopt;
}

std::string_view unwind_method_name(UnwindMethod method) {
  switch (method) {
    case UnwindMethod::kAuto: return "auto";
    case UnwindMethod::kSFrame: return "sframe";
    case UnwindMethod::kCfi: return "cfi";
    case UnwindMethod::kFramePointer: return "fp";
  }
  return "?";
}

std::string_view frame_source_name(FrameSource source) {
  switch (source) {
    case FrameSource::kInitial: return "initial";
    case FrameSource::kSFrame: return "sframe";
    case FrameSource::kCfi: return "cfi";
    case FrameSource::kFramePointer: return "fp";
    case FrameSource::kEhabi: return "ehabi";
    case FrameSource::kPrologue: return "prologue";
    case FrameSource::kSignalFrame: return "signal";
  }
  return "?";
}

std::string_view stop_reason_name(StopReason reason) {
  switch (reason) {
    case StopReason::kEndOfStack: return "end of stack";
    case StopReason::kOutsideModules: return "pc outside every module";
    case StopReason::kNoUnwindInfo: return "no unwind information";
    case StopReason::kStackNotIncreasing: return "stack pointer not increasing";
    case StopReason::kUnreadableMemory: return "unreadable stack";
    case StopReason::kBadUnwindInfo: return "bad unwind information";
    case StopReason::kDepthLimit: return "depth limit";
    case StopReason::kNoSavedReturnAddress: return "no saved return address";
  }
  return "?";
}

namespace {

// A signal frame as a row: the CFA is the stack pointer the trampoline runs
// on, and every saved register is at its offset from there.
UnwindRow signal_frame_row(const UnwinderConfig& config, std::span<const UnwinderConfig::SavedSlot> saved) {
  UnwindRow row;
  row.cfa.reg = static_cast<std::uint16_t>(config.sp_register);
  row.return_column = static_cast<std::uint16_t>(config.pc_register);
  row.signal_frame = true;
  for (const auto& slot : saved) {
    if (slot.column >= kMaxRegisters || row.rule_count == kMaxRowRules ||
        row.rule_for(slot.column).kind != RuleKind::kUnspecified)
      continue;  // a column beyond the tracked ones, no room left, or a column given twice
    RegisterRule rule;
    rule.kind = RuleKind::kOffset;
    rule.column = slot.column;
    rule.offset = slot.offset;
    std::uint8_t at = row.rule_count++;  // sorted by column
    for (; at > 0 && row.rules[at - 1].column > rule.column; --at) row.rules[at] = row.rules[at - 1];
    row.rules[at] = rule;
  }
  return row;
}

}  // namespace

struct Unwinder::CacheEntry {
  std::uint64_t pc = 0;
  UnwindMethod method = UnwindMethod::kAuto;
  bool return_address = false;
  bool valid = false;
  Lookup lookup = Lookup::kNone;
  FrameSource source = FrameSource::kCfi;
  UnwindRow row;
};

Unwinder::Unwinder(UnwinderConfig config) : config_(config) {
  std::size_t entries = 1;
  while (entries < config_.cache_entries) entries <<= 1;
  cache_.reset(new CacheEntry[entries]);
  cache_mask_ = entries - 1;
  // The frame-pointer convention shared by x86-64 and AArch64: the frame
  // pointer points at the saved frame pointer, the return address is the
  // next word up, and the caller's stack pointer is just above both.
  const auto word = static_cast<std::int64_t>(config_.address_size);
  frame_pointer_row_.cfa.reg = static_cast<std::uint16_t>(config_.fp_register);
  frame_pointer_row_.cfa.offset = 2 * word;
  frame_pointer_row_.return_column = static_cast<std::uint16_t>(config_.pc_register);
  RegisterRule fp_rule, ra_rule;
  fp_rule.kind = ra_rule.kind = RuleKind::kOffset;
  fp_rule.column = static_cast<std::uint16_t>(config_.fp_register);
  fp_rule.offset = -2 * word;
  ra_rule.column = static_cast<std::uint16_t>(config_.pc_register);
  ra_rule.offset = -word;
  frame_pointer_row_.rules[0] = fp_rule;
  frame_pointer_row_.rules[1] = ra_rule;
  frame_pointer_row_.rule_count = 2;
  for (const auto& trampoline : config_.signal_trampolines) {
    if (trampoline.code.empty()) continue;
    trampoline_rows_.emplace_back(trampoline.code, signal_frame_row(config_, trampoline.saved));
  }
}

Unwinder::~Unwinder() = default;

void Unwinder::flush_cache() {
  for (std::size_t i = 0; i <= cache_mask_; ++i) cache_[i].valid = false;
}

Status Unwinder::add_module(std::uint64_t start, std::uint64_t end, std::uint64_t load_bias,
                            const std::string& host_path) {
  std::shared_ptr<const ModuleUnwindInfo> info;
  if (auto found = files_.find(host_path); found != files_.end()) {
    info = found->second;
  } else {
    auto loaded = ModuleUnwindInfo::load(host_path);
    if (!loaded) {
      add_module(start, end, load_bias, std::shared_ptr<const ModuleUnwindInfo>{});
      return loaded.error();
    }
    info = *loaded;
    files_.emplace(host_path, info);
  }
  add_module(start, end, load_bias, std::move(info));
  return ok_status();
}

void Unwinder::add_module(std::uint64_t start, std::uint64_t end, std::uint64_t load_bias,
                          std::shared_ptr<const ModuleUnwindInfo> info) {
  if (end <= start) return;
  for (const Mapping& existing : mappings_)
    if (existing.start == start && existing.bias == load_bias && existing.end >= end && existing.info == info &&
        info)
      return;  // a segment of a module already known (see remove_range)
  std::erase_if(mappings_, [&](const Mapping& m) { return m.start < end && start < m.end; });
  Mapping mapping{start, end, load_bias, std::move(info)};
  auto at = std::lower_bound(mappings_.begin(), mappings_.end(), start,
                             [](const Mapping& m, std::uint64_t value) { return m.start < value; });
  mappings_.insert(at, std::move(mapping));
  flush_cache();
}

void Unwinder::remove_range(std::uint64_t start, std::uint64_t length) {
  const std::uint64_t end = length > ~std::uint64_t{0} - start ? ~std::uint64_t{0} : start + length;
  const auto before = mappings_.size();
  std::erase_if(mappings_, [&](const Mapping& m) { return start <= m.start && m.end <= end; });
  if (mappings_.size() != before) flush_cache();
}

const Unwinder::Mapping* Unwinder::find_mapping(std::uint64_t pc) const {
  if (last_mapping_ < mappings_.size() && pc >= mappings_[last_mapping_].start && pc < mappings_[last_mapping_].end)
    return &mappings_[last_mapping_];
  auto it = std::upper_bound(mappings_.begin(), mappings_.end(), pc,
                             [](std::uint64_t value, const Mapping& m) { return value < m.start; });
  if (it == mappings_.begin()) return nullptr;
  --it;
  if (pc >= it->end) return nullptr;
  last_mapping_ = static_cast<std::size_t>(it - mappings_.begin());
  return &*it;
}

Unwinder::Lookup Unwinder::prologue_row(const Mapping& mapping, std::uint64_t pc, MemoryReader& memory,
                                        UnwindRow& row) {
  if (!mapping.info) return Lookup::kNone;
  const Symbol* symbol = mapping.info->symbols().find(pc - mapping.bias);
  if (!symbol) return Lookup::kNone;
  const std::uint64_t start = symbol->address + mapping.bias;
  if (pc < start) return Lookup::kNone;
  const std::uint64_t limit = pc - start;
  // The code from the start up to the instruction at the limit (4 bytes past
  // it at most), or the readable part of it, a word at a time.
  std::uint8_t code[arch::kMaxPrologueBytes];
  std::size_t size = static_cast<std::size_t>(std::min<std::uint64_t>(limit + 4, sizeof code));
  if (!memory.read(start, code, size)) {
    std::size_t readable = 0;
    while (readable + 2 <= size && memory.read(start + readable, code + readable, 2)) readable += 2;
    size = readable;
  }
  if (size == 0) return Lookup::kNone;
  const std::uint8_t mode = symbol->mode;
  arch::PrologueFrame frame;
  if (!config_.analyze_prologue({code, size}, static_cast<std::size_t>(std::min<std::uint64_t>(limit, sizeof code)),
                                mode, frame))
    return Lookup::kNone;
  row = UnwindRow{};
  row.start = pc - mapping.bias;
  row.end = row.start + 1;
  row.cfa.reg = frame.cfa_register;
  row.cfa.offset = frame.cfa_offset;
  row.return_column = static_cast<std::uint16_t>(config_.pc_register);
  row.return_address_is_value = frame.return_address_is_value;
  auto add_rule = [&](RegisterRule rule) {  // keeps the rules sorted by column
    std::uint8_t at = row.rule_count;
    while (at > 0 && row.rules[at - 1].column > rule.column) {
      row.rules[at] = row.rules[at - 1];
      --at;
    }
    row.rules[at] = rule;
    ++row.rule_count;
  };
  for (std::uint8_t i = 0; i < frame.saved_count; ++i) {
    const auto& saved = frame.saved[i];
    if (saved.reg >= kMaxRegisters || saved.reg == config_.pc_register || saved.reg == config_.sp_register) continue;
    RegisterRule rule;
    rule.kind = RuleKind::kOffset;
    rule.column = saved.reg;
    rule.offset = saved.offset;
    add_rule(rule);
  }
  // The caller's pc: where the return address register was saved, else that register.
  RegisterRule pc_rule;
  pc_rule.column = static_cast<std::uint16_t>(config_.pc_register);
  std::int64_t ra_offset = 0;
  if (frame.saved_at(frame.return_address_register, ra_offset)) {
    pc_rule.kind = RuleKind::kOffset;
    pc_rule.offset = ra_offset;
  } else {
    pc_rule.kind = RuleKind::kRegister;
    pc_rule.reg = frame.return_address_register;
  }
  add_rule(pc_rule);
  return Lookup::kFound;
}

const UnwindRow* Unwinder::trampoline_row(std::uint64_t pc, MemoryReader& memory) const noexcept {
  std::uint8_t code[32];
  for (const auto& [expected, row] : trampoline_rows_) {
    if (expected.size() > sizeof code || !memory.read(pc, code, expected.size())) continue;
    if (std::equal(expected.begin(), expected.end(), code)) return &row;
  }
  return nullptr;
}

Unwinder::Lookup Unwinder::table_error(const Error& error) {
  last_error_ = error.to_string();
  return Lookup::kError;
}

Unwinder::Lookup Unwinder::sframe_row(const ModuleUnwindInfo& info, std::uint64_t file_pc, UnwindRow& row,
                                      FrameSource& source) {
  const SFrameTable* sframe = info.sframe();
  if (!sframe) return Lookup::kNone;
  auto fde = sframe->find_fde(file_pc);
  if (!fde) return table_error(fde.error());
  if (!*fde) return Lookup::kNone;
  auto fre = sframe->find_fre(**fde, file_pc);
  if (!fre) return table_error(fre.error());
  if (!*fre) return Lookup::kNone;
  SFrameRegisters registers;
  registers.sp = static_cast<std::uint16_t>(config_.sp_register);
  registers.fp = static_cast<std::uint16_t>(config_.fp_register);
  registers.return_column = static_cast<std::uint16_t>(config_.pc_register);
  auto found = sframe->row_for(**fre, registers);
  if (!found) return table_error(found.error());
  row = *found;
  source = FrameSource::kSFrame;
  return Lookup::kFound;
}

Unwinder::Lookup Unwinder::cfi_row(const ModuleUnwindInfo& info, std::uint64_t file_pc, UnwindRow& row,
                                   FrameSource& source) {
  for (const CfiTable* table : {info.eh_frame(), info.debug_frame()}) {
    if (!table) continue;
    auto fde = table->find_fde(file_pc);
    if (!fde) return table_error(fde.error());
    if (!*fde) continue;
    auto found = table->row_at(**fde, file_pc);
    if (!found) return table_error(found.error());
    row = *found;
    source = FrameSource::kCfi;
    return Lookup::kFound;
  }
  return Lookup::kNone;
}

Unwinder::Lookup Unwinder::ehabi_row(const ModuleUnwindInfo& info, std::uint64_t file_pc, UnwindMethod method,
                                     UnwindRow& row, FrameSource& source) {
  const EhabiTable* exidx = info.arm_exidx();
  if (!exidx) return Lookup::kNone;
  auto entry = exidx->find_entry(file_pc);
  if (!entry) return table_error(entry.error());
  if (!*entry) return Lookup::kNone;
  // EXIDX_CANTUNWIND: code without tables, where prologue analysis (if
  // any) is the last resort, as gdb's exidx unwinder declines it.
  const bool cant_unwind = (**entry).kind == EhabiEntryKind::kCantUnwind;
  if (cant_unwind && method == UnwindMethod::kAuto && config_.analyze_prologue) return Lookup::kNone;
  auto code = exidx->code(**entry);
  if (!code) return table_error(code.error());
  auto found = exidx->row_for(**entry, *code);
  if (!found) return table_error(found.error());
  row = *found;
  source = FrameSource::kEhabi;
  return Lookup::kFound;
}

Unwinder::Lookup Unwinder::compute_row(const Mapping& mapping, std::uint64_t pc, UnwindMethod method,
                                       bool return_address, MemoryReader& memory, UnwindRow& row,
                                       FrameSource& source) {
  if (return_address) {
    if (const UnwindRow* signal = trampoline_row(pc + 1, memory)) {
      row = *signal;
      source = FrameSource::kSignalFrame;
      return Lookup::kFound;
    }
  }
  if (method == UnwindMethod::kFramePointer) {
    row = frame_pointer_row_;
    source = FrameSource::kFramePointer;
    return Lookup::kFound;
  }
  if (!mapping.info) {
    if (method != UnwindMethod::kAuto) return Lookup::kNone;
    row = frame_pointer_row_;
    source = FrameSource::kFramePointer;
    return Lookup::kFound;
  }
  const std::uint64_t file_pc = pc - mapping.bias;
  const ModuleUnwindInfo& info = *mapping.info;
  if (method == UnwindMethod::kAuto || method == UnwindMethod::kSFrame) {
    const Lookup lookup = sframe_row(info, file_pc, row, source);
    if (lookup != Lookup::kNone || method == UnwindMethod::kSFrame) return lookup;
  }
  if (const Lookup lookup = cfi_row(info, file_pc, row, source); lookup != Lookup::kNone) return lookup;
  if (const Lookup lookup = ehabi_row(info, file_pc, method, row, source); lookup != Lookup::kNone) return lookup;
  if (method == UnwindMethod::kAuto && config_.analyze_prologue) {
    source = FrameSource::kPrologue;
    return prologue_row(mapping, pc, memory, row);
  }
  if (method == UnwindMethod::kAuto) {
    row = frame_pointer_row_;
    source = FrameSource::kFramePointer;
    return Lookup::kFound;
  }
  return Lookup::kNone;
}

Unwinder::Lookup Unwinder::row_for(const Mapping& mapping, std::uint64_t pc, UnwindMethod method,
                                   bool return_address, MemoryReader& memory, const UnwindRow*& row,
                                   FrameSource& source) noexcept {
  CacheEntry& entry = cache_[(pc ^ (pc >> 12) ^ static_cast<std::uint64_t>(method) * 0x9e37) & cache_mask_];
  if (entry.valid && entry.pc == pc && entry.method == method && entry.return_address == return_address) {
    ++stats_.cache_hits;
    row = &entry.row;
    source = entry.source;
    return entry.lookup;
  }
  ++stats_.cache_misses;
  entry.valid = false;
  Lookup lookup = Lookup::kError;
  try {
    lookup = compute_row(mapping, pc, method, return_address, memory, entry.row, entry.source);
  } catch (const std::exception& error) {  // allocation failure while parsing
    last_error_ = error.what();
  }
  if (lookup == Lookup::kError) return lookup;  // errors are not cached: the message is kept fresh
  entry.pc = pc;
  entry.method = method;
  entry.return_address = return_address;
  entry.lookup = lookup;
  entry.valid = true;
  row = &entry.row;
  source = entry.source;
  return lookup;
}

// One unwind(): the registers of the frame being unwound (becoming its
// caller's at each step), the frames written so far, and what gdb's rule
// (unwinder.h) needs to remember of the frames below.
struct Unwinder::Walk {
  // Where each register's value in the current frame lives (gdb's rule, see
  // unwinder.h): still in the register at the stop, in a stack slot, or a
  // computed value (never the same place as anything).
  struct Location {
    enum Kind : std::uint8_t { kValue, kRegister, kMemory } kind = kValue;
    std::uint64_t where = 0;
    bool same_place(const Location& other) const {
      return kind != kValue && kind == other.kind && where == other.where;
    }
  };
  // A caller's register as a rule gives it, applied once every rule of the
  // row has read the callee's values.
  struct Staged {
    std::uint16_t column;
    bool known;
    std::uint64_t value;
    Location location;
  };

  Walk(const UnwinderConfig& unwinder_config, std::string& error_text, const RegisterSet& initial,
       MemoryReader& reader, UnwindMethod walk_method, FirstFrame first, std::span<StackFrame> frames)
      : config(unwinder_config), last_error(error_text), memory(reader), method(walk_method), out(frames),
        regs(initial), pc(initial.value[unwinder_config.pc_register]), exact(first == FirstFrame::kExact),
        native_words(unwinder_config.address_size == 8 && unwinder_config.little_endian) {
    out[0] = {pc, FrameSource::kInitial};
    result.depth = 1;
    for (unsigned i = 0; i < kMaxRegisters; ++i) locations[i] = {Location::kRegister, i};
    expression.memory = &memory;
    expression.address_size = config.address_size;
    expression.little_endian = config.little_endian;
    expression.registers = &regs;
  }

  // Ends the walk: always false, for `return stop(...)`.
  bool stop(StopReason reason) {
    result.stop = reason;
    return false;
  }
  bool expression_failed(const Error& error) {
    last_error = error.to_string();
    return stop(error.code == ErrorCode::kIo ? StopReason::kUnreadableMemory : StopReason::kBadUnwindInfo);
  }
  bool read_word(std::uint64_t address, std::uint64_t& value) const {
    const unsigned word = config.address_size;
    std::uint8_t raw[8] = {};
    if (!memory.read(address, raw, word)) return false;
    if (native_words) {
      std::memcpy(&value, raw, 8);
      return true;
    }
    value = 0;
    for (unsigned i = 0; i < word; ++i)
      value |= static_cast<std::uint64_t>(raw[i]) << (8 * (config.little_endian ? i : word - 1 - i));
    return true;
  }

  bool find_cfa(const UnwindRow& row, std::uint64_t& cfa);
  bool restore_caller_registers(const UnwindRow& row, std::uint64_t cfa, bool& sp_has_rule);
  bool caller_value(const UnwindRow& row, const RegisterRule& rule, std::uint64_t cfa, Staged& staged);
  bool check_saved_return_address(const UnwindRow& row);
  bool check_caller_stack(const UnwindRow& row, std::uint64_t callee_sp, std::uint64_t return_address);

  const UnwinderConfig& config;
  std::string& last_error;
  MemoryReader& memory;
  const UnwindMethod method;
  const std::span<StackFrame> out;
  UnwindResult result;
  RegisterSet regs;
  std::uint64_t pc;
  bool exact;  // look the row up at the pc itself (a fault's frame 0, after a signal frame), else at pc - 1
  bool same_sp_before = false;  // the last step kept the stack pointer (a link-register leaf)
  Location locations[kMaxRegisters];
  Location pc_location;  // of the last frame's pc (frame 0's: none)
  bool last_row_signal = false;
  const bool native_words;  // 8-byte little-endian words: one load
  ExpressionContext expression;
};

bool Unwinder::Walk::find_cfa(const UnwindRow& row, std::uint64_t& cfa) {
  if (row.cfa.is_expression) {
    expression.section_offset = static_cast<std::uint64_t>(row.cfa.expression - row.section_base);
    auto value = evaluate_expression({row.cfa.expression, row.cfa.expression_size}, expression, std::nullopt);
    if (!value) return expression_failed(value.error());
    cfa = *value;
    return true;
  }
  if (!regs.has(row.cfa.reg)) {
    last_error = "the CFA register " + std::to_string(row.cfa.reg) + " is not known in this frame";
    return stop(StopReason::kBadUnwindInfo);
  }
  cfa = regs.value[row.cfa.reg] + static_cast<std::uint64_t>(row.cfa.offset);
  return true;
}

// The caller's registers: unspecified ones keep their values. Every rule
// reads the callee's values, so the new values are staged and applied after
// all of them (in place: no copy of the whole register set).
bool Unwinder::Walk::restore_caller_registers(const UnwindRow& row, std::uint64_t cfa, bool& sp_has_rule) {
  Staged staged[kMaxRowRules];
  std::size_t staged_count = 0;
  bool ra_undefined = false;
  for (const RegisterRule& rule : row.rule_list()) {
    if (rule.kind == RuleKind::kUnspecified || rule.kind == RuleKind::kSameValue) continue;
    if (!caller_value(row, rule, cfa, staged[staged_count])) return false;
    if (rule.kind == RuleKind::kUndefined && rule.column == row.return_column) ra_undefined = true;
    if (rule.column == config.sp_register) sp_has_rule = true;
    ++staged_count;
  }
  if (ra_undefined) return stop(StopReason::kEndOfStack);
  for (std::size_t i = 0; i < staged_count; ++i) {
    if (staged[i].known)
      regs.set(staged[i].column, staged[i].value);
    else
      regs.forget(staged[i].column);
    if (staged[i].column < kMaxRegisters) locations[staged[i].column] = staged[i].location;
  }
  return true;
}

// The value `rule` gives the caller's register, and where it lives.
bool Unwinder::Walk::caller_value(const UnwindRow& row, const RegisterRule& rule, std::uint64_t cfa,
                                  Staged& staged) {
  staged = {rule.column, true, 0, Location{}};
  switch (rule.kind) {
    case RuleKind::kUnspecified: case RuleKind::kSameValue: break;  // not staged (the caller skips them)
    case RuleKind::kUndefined: staged.known = false; break;
    case RuleKind::kOffset:
      staged.location = {Location::kMemory, cfa + static_cast<std::uint64_t>(rule.offset)};
      if (!read_word(staged.location.where, staged.value)) return stop(StopReason::kUnreadableMemory);
      break;
    case RuleKind::kValOffset: staged.value = cfa + static_cast<std::uint64_t>(rule.offset); break;
    case RuleKind::kRegister:
      staged.known = regs.has(static_cast<unsigned>(rule.reg));
      if (staged.known) staged.value = regs.value[rule.reg];
      if (rule.reg < kMaxRegisters) staged.location = locations[rule.reg];
      break;
    case RuleKind::kExpression: case RuleKind::kValExpression: {
      expression.section_offset = static_cast<std::uint64_t>(rule.expression - row.section_base);
      auto computed = evaluate_expression({rule.expression, rule.expression_size}, expression, cfa);
      if (!computed) return expression_failed(computed.error());
      staged.value = *computed;
      if (rule.kind == RuleKind::kExpression) {
        staged.location = {Location::kMemory, staged.value};
        if (!read_word(staged.value, staged.value)) return stop(StopReason::kUnreadableMemory);
      }
      break;
    }
  }
  return true;
}

// gdb's rule: above frame 0, between two ordinary frames, the return address
// cannot come from where the frame below took its own.
bool Unwinder::Walk::check_saved_return_address(const UnwindRow& row) {
  const Location return_location = row.return_column < kMaxRegisters && !row.return_address_is_value
                                       ? locations[row.return_column]
                                       : Location{};
  if (result.depth >= 2 && !row.signal_frame && !last_row_signal && return_location.same_place(pc_location))
    return stop(StopReason::kNoSavedReturnAddress);
  pc_location = return_location;
  last_row_signal = row.signal_frame;
  return true;
}

// A caller's frame lies above its callee's (a signal frame may restore any
// stack pointer: the interrupted one is checked on the next step). A leaf
// that keeps its return address in the link register (aarch64, arm,
// riscv64, mips: CFA = sp + 0, return address column unspecified) leaves
// its caller the same stack pointer: allowed once in a row, and only when
// the return address differs from the pc (otherwise the walk would loop).
bool Unwinder::Walk::check_caller_stack(const UnwindRow& row, std::uint64_t callee_sp,
                                        std::uint64_t return_address) {
  if (row.signal_frame) {
    same_sp_before = false;
    return true;
  }
  const bool has_sp = regs.has(config.sp_register);
  const std::uint64_t caller_sp = has_sp ? regs.value[config.sp_register] : 0;
  const bool same_sp_leaf = has_sp && caller_sp == callee_sp && return_address != pc && !same_sp_before;
  if (!has_sp || (caller_sp <= callee_sp && !same_sp_leaf)) return stop(StopReason::kStackNotIncreasing);
  same_sp_before = caller_sp == callee_sp;
  return true;
}

// The row of the walk's pc and the method that found it; nullptr when the
// walk ends there.
const UnwindRow* Unwinder::frame_row(Walk& walk, FrameSource& source) noexcept {
  const std::uint64_t lookup_pc = walk.exact ? walk.pc : walk.pc - 1;
  const UnwindRow* row = nullptr;
  if (const Mapping* mapping = find_mapping(lookup_pc)) {
    const Lookup lookup = row_for(*mapping, lookup_pc, walk.method, !walk.exact, walk.memory, row, source);
    if (lookup == Lookup::kFound) return row;
    walk.stop(lookup == Lookup::kNone ? StopReason::kNoUnwindInfo : StopReason::kBadUnwindInfo);
    return nullptr;
  }
  // Outside every module: only a signal trampoline of no file (the vDSO's,
  // tracecorn's page) goes on.
  row = walk.exact ? nullptr : trampoline_row(walk.pc, walk.memory);
  if (!row) walk.stop(StopReason::kOutsideModules);
  return row;
}

// One frame: its row, the caller's registers by that row, and the caller's
// pc written as the next frame. False when the walk ends (walk.result.stop).
bool Unwinder::step(Walk& walk) noexcept {
  if (walk.result.depth >= walk.out.size()) return walk.stop(StopReason::kDepthLimit);
  FrameSource source = FrameSource::kCfi;
  const UnwindRow* row = frame_row(walk, source);
  if (!row) return false;
  if (row->signal_frame) source = FrameSource::kSignalFrame;
  std::uint64_t cfa = 0;
  if (!walk.find_cfa(*row, cfa)) return false;
  const std::uint64_t callee_sp = walk.regs.value[config_.sp_register];
  bool sp_has_rule = false;
  if (!walk.restore_caller_registers(*row, cfa, sp_has_rule)) return false;
  RegisterSet& caller = walk.regs;
  if (!caller.has(row->return_column)) {
    last_error_ = "the return address column is not known";
    return walk.stop(StopReason::kBadUnwindInfo);
  }
  std::uint64_t return_address = caller.value[row->return_column];
  if (config_.thumb_bit) return_address &= ~std::uint64_t{1};
  if (!sp_has_rule) caller.set(config_.sp_register, cfa);
  if (return_address == 0) return walk.stop(StopReason::kEndOfStack);
  if (!walk.check_saved_return_address(*row)) return false;
  if (!walk.check_caller_stack(*row, callee_sp, return_address)) return false;
  caller.set(config_.pc_register, return_address);
  walk.exact = row->signal_frame;
  walk.pc = return_address;
  walk.out[walk.result.depth++] = {walk.pc, source};
  return true;
}

UnwindResult Unwinder::unwind(const RegisterSet& initial, MemoryReader& memory, UnwindMethod method, FirstFrame first,
                              std::span<StackFrame> out) noexcept {
  UnwindResult result;
  if (out.empty()) {
    result.stop = StopReason::kDepthLimit;
    return result;
  }
  if (!initial.has(config_.pc_register) || !initial.has(config_.sp_register)) {
    result.stop = StopReason::kBadUnwindInfo;
    last_error_ = "the initial registers lack the pc or the stack pointer";
    return result;
  }
  Walk walk(config_, last_error_, initial, memory, method, first, out);
  while (step(walk)) {
  }
  return walk.result;
}

}  // namespace tracecorn::unwind
