// Role: implementation of the data-flow query (why.h): an Explainer walks back
// from a value to its writers through the trace index, one node per value.
#include "recorder/debug/why.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "formats/text/llvm_disassembler.h"

namespace tracecorn::debug {
namespace {

using Source = WhyNode::Source;

class Explainer {
 public:
  Explainer(replay::TraceIndex& index, arch::InstructionDecoder& decoder, formats::AddressNamer* namer,
            const WhyOptions& options)
      : index_(index),
        decoder_(decoder),
        namer_(namer),
        options_(options),
        arch_(index.arch()),
        pc_index_(arch_.register_index(arch_.pc_reg)),
        sp_index_(arch_.register_index(arch_.sp_reg)),
        mode_index_(arch_.alternate_isa ? arch_.register_index(arch_.alternate_isa->uc_register) : std::nullopt) {
    // Capstone cannot show riscv64's instructions: Debian's LLVM can, where installed.
    if (options.instruction_text) llvm_ = options.instruction_text;
    else if (arch_.decode_without_capstone && arch_.llvm_target)
      if (auto llvm = formats::LlvmDisassembler::open(*arch_.llvm_target)) {
        own_llvm_ = std::move(*llvm);
        llvm_ = own_llvm_.get();
      }
  }

  WhyNode explain_register(std::size_t reg, std::uint64_t at, unsigned depth);
  std::vector<WhyNode> explain_memory(std::uint64_t address, std::uint64_t length, std::uint64_t at, unsigned depth);
  const Status& status() const { return status_; }

 private:
  struct Piece {
    std::uint64_t start, end;
    std::optional<replay::MemoryWriteRecord> writer;
  };
  void fail(const Error& error) {
    if (status_) status_ = error;
  }
  bool out_of_budget(WhyNode& node, unsigned depth) {
    if (depth > 0 && nodes_ < options_.max_nodes) return false;
    node.cut = true;
    return true;
  }
  std::vector<Piece> writers_of(std::uint64_t address, std::uint64_t length, std::uint64_t at);
  WhyNode piece_node(const Piece& piece, std::uint64_t at, unsigned depth);
  void explain_instruction(WhyNode& node, std::uint64_t write_event, unsigned depth);
  void add_inputs(WhyNode& node, const replay::InstructionRecord& instruction, std::span<const std::uint8_t> code,
                  std::uint8_t mode, unsigned depth);
  std::uint8_t mode_at() const;
  void describe_syscall_bytes(WhyNode& node, const replay::SyscallRecord& call, std::uint64_t address);
  std::string read_string(std::uint64_t address, std::uint64_t at);
  std::optional<std::uint64_t> llseek_result(const replay::SyscallRecord& call) const;
  const replay::SyscallRecord* syscall_at(std::uint64_t event) const;
  bool signal_at(std::uint64_t event) const;
  const replay::ThreadChangeRecord* switch_at(std::uint64_t event) const;

  replay::TraceIndex& index_;
  arch::InstructionDecoder& decoder_;
  formats::AddressNamer* namer_;
  std::unique_ptr<formats::LlvmDisassembler> own_llvm_;  // opened here when the caller gave none
  formats::LlvmDisassembler* llvm_ = nullptr;          // the text of instructions Capstone cannot decode
  WhyOptions options_;
  const arch::ArchInfo& arch_;
  std::optional<std::size_t> pc_index_, sp_index_, mode_index_;  // in the register table
  unsigned nodes_ = 0;
  std::set<std::uint64_t> seen_;  // the instruction events explained
  Status status_ = ok_status();
};

std::vector<std::uint8_t> register_bytes(const events::RegisterValue& value) {
  return {value.bytes.begin(), value.bytes.begin() + std::min<std::size_t>(value.size, value.bytes.size())};
}

const replay::SyscallRecord* Explainer::syscall_at(std::uint64_t event) const {
  const auto& calls = index_.syscalls();
  auto it = std::lower_bound(calls.begin(), calls.end(), event,
                             [](const replay::SyscallRecord& call, std::uint64_t e) { return call.event < e; });
  return it != calls.end() && it->event == event ? &*it : nullptr;
}

bool Explainer::signal_at(std::uint64_t event) const {
  const auto& signals = index_.signals();
  return std::any_of(signals.begin(), signals.end(), [&](const replay::SignalRecord& s) { return s.event == event; });
}

const replay::ThreadChangeRecord* Explainer::switch_at(std::uint64_t event) const {
  const auto& changes = index_.thread_changes();
  auto it = std::lower_bound(changes.begin(), changes.end(), event,
                             [](const replay::ThreadChangeRecord& c, std::uint64_t e) { return c.event < e; });
  for (; it != changes.end() && it->event == event; ++it)
    if (it->change == events::ThreadChange::kSwitched) return &*it;
  return nullptr;
}

WhyNode Explainer::explain_register(std::size_t reg, std::uint64_t at, unsigned depth) {
  ++nodes_;
  WhyNode node;
  node.target = WhyTarget{true, reg, 0, 0};
  for (std::uint64_t before = at;;) {
    auto write = index_.previous_register_write(reg, before);
    if (!write) {
      fail(write.error());
      return node;
    }
    if (!*write) {  // never written: the initial state's value, if it had one
      if (auto status = index_.seek(before); !status) fail(status.error());
      const auto value = index_.register_value(reg);
      node.source = value ? Source::kInitialRegister : Source::kUnknown;
      if (value) node.value = register_bytes(*value);
      return node;
    }
    node.value = register_bytes((*write)->value);
    node.event = (*write)->event;
    if (const auto* call = syscall_at(node.event)) {
      node.source = Source::kSyscall;
      node.syscall = call->name.empty() ? "syscall " + std::to_string(call->number) : call->name;
      return node;
    }
    if (signal_at(node.event)) {
      node.source = Source::kSignal;
      return node;
    }
    if (const auto* change = switch_at(node.event)) {
      // The value the thread was switched in with: its value when it was switched out.
      const auto& changes = index_.thread_changes();
      auto out = std::find_if(std::make_reverse_iterator(changes.begin() + (change - changes.data())), changes.rend(),
                              [&](const replay::ThreadChangeRecord& c) {
                                return c.change == events::ThreadChange::kSwitched && c.from == change->thread;
                              });
      if (out == changes.rend()) {
        node.source = Source::kThreadStart;
        return node;
      }
      before = out->event;
      continue;
    }
    explain_instruction(node, node.event, depth);
    return node;
  }
}

// The writers of [address, address + length) before event `at`, one piece per writer (or none: initial).
std::vector<Explainer::Piece> Explainer::writers_of(std::uint64_t address, std::uint64_t length, std::uint64_t at) {
  std::vector<Piece> pieces;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> open{{address, address + length}};
  while (!open.empty()) {
    const auto [start, end] = open.back();
    open.pop_back();
    auto write = index_.previous_write(at, start, end - start);
    if (!write) {
      fail(write.error());
      return pieces;
    }
    if (!*write) {
      pieces.push_back({start, end, std::nullopt});
      continue;
    }
    const std::uint64_t from = std::max(start, (*write)->address);
    const std::uint64_t to = std::min(end, (*write)->address + (*write)->bytes.size());
    pieces.push_back({from, to, std::move(*write)});
    if (start < from) open.push_back({start, from});
    if (to < end) open.push_back({to, end});
  }
  std::sort(pieces.begin(), pieces.end(), [](const Piece& a, const Piece& b) { return a.start < b.start; });
  return pieces;
}

std::vector<WhyNode> Explainer::explain_memory(std::uint64_t address, std::uint64_t length, std::uint64_t at,
                                               unsigned depth) {
  std::vector<WhyNode> nodes;
  for (const Piece& piece : writers_of(address, length, at)) nodes.push_back(piece_node(piece, at, depth));
  return nodes;
}

WhyNode Explainer::piece_node(const Piece& piece, std::uint64_t at, unsigned depth) {
  ++nodes_;
  WhyNode node;
  node.target = WhyTarget{false, 0, piece.start, piece.end - piece.start};
  if (!piece.writer) {
    if (auto status = index_.seek(at); !status) fail(status.error());
    node.value.resize(piece.end - piece.start);
    const std::size_t known = index_.read_memory(piece.start, node.value);
    node.value.resize(known);
    node.symbol = namer_ ? namer_->name(piece.start) : "";
    node.source = known == 0 ? Source::kUnknown : node.symbol.empty() ? Source::kInitialMemory : Source::kInitialImage;
    return node;
  }
  const auto& write = *piece.writer;
  const auto first = write.bytes.begin() + static_cast<std::ptrdiff_t>(piece.start - write.address);
  node.value.assign(first, first + static_cast<std::ptrdiff_t>(piece.end - piece.start));
  node.event = write.event;
  if (const auto* call = syscall_at(write.event)) {
    describe_syscall_bytes(node, *call, piece.start);
    return node;
  }
  if (signal_at(write.event)) {
    node.source = Source::kSignal;
    return node;
  }
  explain_instruction(node, write.event, depth);
  return node;
}

std::uint8_t Explainer::mode_at() const {
  if (!mode_index_) return 0;
  const auto value = index_.register_value(*mode_index_);
  return value && (value->as_u64() & arch_.alternate_isa->mask) ? 1 : 0;
}

// `node` was written by the instruction before event `write_event`: name it, then what it read.
void Explainer::explain_instruction(WhyNode& node, std::uint64_t write_event, unsigned depth) {
  auto instruction = index_.previous_instruction(write_event + 1);
  if (!instruction) return fail(instruction.error());
  if (!*instruction) {  // a write before the first instruction: the trace does not say by what
    node.source = Source::kUnknown;
    return;
  }
  node.source = Source::kInstruction;
  node.event = (*instruction)->event;
  node.pc = (*instruction)->pc;
  node.symbol = namer_ ? namer_->name(node.pc) : "";
  if (auto status = index_.seek(node.event); !status) return fail(status.error());
  std::uint8_t code[16] = {};
  const std::size_t known = index_.read_memory(node.pc, code);
  const std::uint8_t mode = mode_at();
  if (auto text = decoder_.disassemble(std::span(code, known), node.pc, mode)) {
    node.instruction = std::string(text->mnemonic) + (text->operands.empty() ? "" : " " + std::string(text->operands));
  } else if (llvm_) {
    std::size_t size = 0;
    std::string llvm_text = llvm_->disassemble(std::span(code, known), node.pc, size);
    if (size) node.instruction = std::move(llvm_text);
  }
  if (!seen_.insert(node.event).second) {
    node.seen_before = true;
    return;
  }
  add_inputs(node, **instruction, std::span(code, known), mode, depth);
}

// What `instruction` (its bytes `code`) read: its data registers' and loaded bytes' writers.
void Explainer::add_inputs(WhyNode& node, const replay::InstructionRecord& instruction,
                           std::span<const std::uint8_t> code, std::uint8_t mode, unsigned depth) {
  arch::InstructionDecoder::Registers used;
  if (!decoder_.registers(code, instruction.pc, mode, used)) return;  // not an instruction: a leaf
  if (!used.reads_listed)
    return fail(make_error(ErrorCode::kInvalidArgument,
                           "the instruction decoder does not list the registers " + std::string(arch_.name) +
                               " instructions read, so `why` cannot follow them"));
  auto next = index_.next_instruction(instruction.event + 1);
  if (!next) return fail(next.error());
  auto accesses = index_.accesses_in(instruction.event, *next ? (*next)->event : index_.event_count());
  if (!accesses) return fail(accesses.error());
  const bool touches_memory = !accesses->empty();
  const bool target_register = node.target.is_register;
  auto is_data = [&](std::uint16_t reg) {
    if (reg == pc_index_) return false;
    if (target_register && reg == node.target.register_index) return true;
    if (!touches_memory) return true;  // lea, mov rbp, rsp: registers are the value
    const bool address = reg == sp_index_ ||
                         std::find(used.base.begin(), used.base.end(), reg) != used.base.end() ||
                         std::find(used.index.begin(), used.index.end(), reg) != used.index.end();
    return !address;
  };
  std::vector<std::uint16_t> data;
  std::copy_if(used.read.begin(), used.read.end(), std::back_inserter(data), is_data);
  const bool reads_memory =
      std::any_of(accesses->begin(), accesses->end(), [](const replay::MemoryAccessRecord& a) { return !a.write; });
  if (data.empty() && !reads_memory) {
    node.source = Source::kImmediate;
    return;
  }
  if (out_of_budget(node, depth)) return;
  for (const std::uint16_t reg : data) node.inputs.push_back(explain_register(reg, instruction.event, depth - 1));
  for (const auto& access : *accesses) {
    if (access.write) continue;
    auto pieces = explain_memory(access.address, access.length, instruction.event, depth - 1);
    std::move(pieces.begin(), pieces.end(), std::back_inserter(node.inputs));
  }
}

std::string Explainer::read_string(std::uint64_t address, std::uint64_t at) {
  if (auto status = index_.seek(at); !status) return "";
  std::vector<std::uint8_t> bytes(4096);
  bytes.resize(index_.read_memory(address, bytes));
  const auto end = std::find(bytes.begin(), bytes.end(), 0);
  return end == bytes.end() ? "" : std::string(bytes.begin(), end);
}

// The offset _llseek wrote to its result pointer (a 64-bit word in the guest's byte order).
std::optional<std::uint64_t> Explainer::llseek_result(const replay::SyscallRecord& call) const {
  for (const auto& [address, bytes] : call.memory_writes) {
    if (address != call.args[3] || bytes.size() != 8) continue;
    std::uint64_t value = 0;
    for (std::size_t i = 0; i < 8; ++i) value |= std::uint64_t{bytes[arch_.little_endian ? i : 7 - i]} << (8 * i);
    return value;
  }
  return std::nullopt;
}

// A kernel write: the syscall, and for a read from a file, the file and the offset of the byte at `address`.
void Explainer::describe_syscall_bytes(WhyNode& node, const replay::SyscallRecord& call, std::uint64_t address) {
  node.source = Source::kSyscall;
  node.syscall = call.name.empty() ? "syscall " + std::to_string(call.number) : call.name;
  const bool positional = call.name == "pread64";
  if (call.name != "read" && !positional) return;
  const std::uint64_t fd = call.args[0], buffer = call.args[1];
  if (address < buffer) return;
  // The file: the last open that gave this fd; its offset: what moved it since.
  const auto& calls = index_.syscalls();
  const auto here = calls.begin() + (&call - calls.data());
  auto opened = std::find_if(std::make_reverse_iterator(here), calls.rend(), [&](const replay::SyscallRecord& c) {
    return (c.name == "openat" || c.name == "open" || c.name == "creat") && c.result >= 0 &&
           static_cast<std::uint64_t>(c.result) == fd;
  });
  std::uint64_t offset = 0;
  if (opened != calls.rend()) {
    node.file = read_string(opened->name == "openat" ? opened->args[1] : opened->args[0], opened->event);
  } else if (fd <= 2) {
    node.file = fd == 0 ? "<stdin>" : "<fd " + std::to_string(fd) + ">";
  } else {
    return;
  }
  for (auto it = opened == calls.rend() ? calls.begin() : opened.base(); it != here; ++it) {
    if (it->args[0] != fd || it->result < 0) continue;
    if (it->name == "read" || it->name == "readv" || it->name == "write" || it->name == "writev")
      offset += static_cast<std::uint64_t>(it->result);
    else if (it->name == "lseek")
      offset = static_cast<std::uint64_t>(it->result);
    else if (it->name == "_llseek")  // 32-bit: the new offset is written to *args[3]
      offset = llseek_result(*it).value_or(offset);
  }
  node.file_offset = (positional ? call.args[3] : offset) + (address - buffer);
}

}  // namespace

std::string why_unsupported(const replay::TraceIndex& index) {
  if (!index.saw(events::EventKind::kInstruction) || !index.saw(events::EventKind::kRegisters) ||
      !index.saw(events::EventKind::kMemoryRead))
    return "`why` needs the values every instruction read and wrote: a trace recorded at level 'full' "
           "(tracecorn record --level full)";
  return "";
}

Expected<WhyNode> explain(replay::TraceIndex& index, arch::InstructionDecoder& decoder, formats::AddressNamer* namer,
                          const WhyTarget& target, std::uint64_t at, const WhyOptions& options) {
  if (const std::string missing = why_unsupported(index); !missing.empty())
    return make_error(ErrorCode::kInvalidArgument, missing);
  if (at > index.event_count())
    return make_error(ErrorCode::kInvalidArgument, fmt::format("event {} is beyond the trace's {} events", at,
                                                               index.event_count()));
  if (!target.is_register && (target.length == 0 || target.length > 4096))
    return make_error(ErrorCode::kInvalidArgument, "explain 1 to 4096 bytes at a time");
  Explainer explainer(index, decoder, namer, options);
  WhyNode root;
  if (target.is_register) {
    root = explainer.explain_register(target.register_index, at, options.depth);
  } else {
    auto pieces = explainer.explain_memory(target.address, target.length, at, options.depth);
    if (pieces.size() == 1) {
      root = std::move(pieces.front());
    } else {
      root.target = target;
      root.source = Source::kPieces;
      for (const auto& piece : pieces) root.value.insert(root.value.end(), piece.value.begin(), piece.value.end());
      root.inputs = std::move(pieces);
    }
  }
  if (!explainer.status()) return explainer.status().error();
  return root;
}

}  // namespace tracecorn::debug
