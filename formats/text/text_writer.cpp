// Role: implementation of the text sink (see text_writer.h).
#include "formats/text/text_writer.h"

#include "formats/text/llvm_disassembler.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

namespace tracecorn::formats {

using events::EventKind;

Expected<std::unique_ptr<TextWriter>> TextWriter::open(const std::string& path, const arch::ArchInfo& arch) {
  std::FILE* file = path == "-" ? stdout : std::fopen(path.c_str(), "we");
  if (!file) return make_error(ErrorCode::kIo, std::string("cannot open for writing: ") + std::strerror(errno), path);
  std::unique_ptr<TextWriter> writer(new TextWriter(file, path, arch));
  writer->owns_file_ = path != "-";
  if (!arch.decoding_unsupported.empty())
    return make_error(ErrorCode::kUnsupported,
                      std::string(arch.name) + " cannot be disassembled: " + std::string(arch.decoding_unsupported),
                      path);
  if (arch.decode_without_capstone) {
    // No Capstone for it: LLVM's disassembler when Debian's libLLVM is there,
    // else ".insn 0x..." (objdump's spelling of an encoding it cannot name).
    if (arch.llvm_target) {
      auto llvm = LlvmDisassembler::open(*arch.llvm_target);
      if (llvm) writer->llvm_ = std::move(*llvm);
    }
    return writer;
  }
  auto decoder = arch::InstructionDecoder::open(arch, false);
  if (!decoder) return make_error(ErrorCode::kEmulator, "cs_open failed for " + std::string(arch.name), path);
  writer->decoder_ = std::move(*decoder);
  return writer;
}

namespace {

// " after N bytes were written": what the file holds (its size when it is a
// regular one), for write errors such as a full disk.
std::string bytes_in(std::FILE* file) {
  struct stat status {};
  if (fstat(fileno(file), &status) == 0 && S_ISREG(status.st_mode))
    return " after " + std::to_string(status.st_size) + " bytes were written";
  return "";
}

}  // namespace

TextWriter::TextWriter(std::FILE* file, std::string path, const arch::ArchInfo& arch)
    : file_(file), path_(std::move(path)), arch_(arch) {}

TextWriter::~TextWriter() {
  // decoder_ and llvm_ close themselves.
  if (file_ && owns_file_) std::fclose(file_);
}

void TextWriter::begin(const events::TraceInfo& info) {
  if (namer_) name_initial_mappings(*namer_, info);
  try {
    fmt::print(file_, "# tracecorn text trace: arch {}, level {}, program {}\n", info.arch_name, info.level,
               info.program);
  } catch (const std::exception& error) {
    write_error_ = path_ + ": write error: " + error.what() + bytes_in(file_);
  }
}

std::string TextWriter::disassemble(const events::InstructionEvent& instruction) {
  const std::uint64_t address = instruction.address.value;
  if (arch_.decode_without_capstone) {
    if (llvm_) {
      std::size_t decoded_size = 0;
      std::string text = llvm_->disassemble(instruction.bytes, address, decoded_size);
      return decoded_size ? text : "(undecodable)";
    }
    arch::EncodedInstruction encoded;
    if (!arch_.decode_without_capstone(instruction.bytes, encoded)) return "(undecodable)";
    std::uint32_t word = 0;
    for (std::size_t i = encoded.size; i-- > 0;) word = word << 8 | instruction.bytes[i];
    return fmt::format(".insn {:#0{}x}", word, 2 + 2 * encoded.size);
  }
  const auto text = decoder_->disassemble(instruction.bytes, address, instruction.mode);
  if (!text) return "(undecodable)";
  return fmt::format("{} {}", text->mnemonic, text->operands);
}

std::string TextWriter::register_list(std::span<const events::RegisterValue> values) const {
  std::string text;
  for (const auto& value : values) {
    const auto& info = arch_.registers[value.index];
    text += fmt::format(" {}=0x", info.name);
    for (int i = value.size - 1; i >= 0; --i) {
      if (value.size > 8 || i < 8) text += fmt::format("{:02x}", value.bytes[static_cast<std::size_t>(i)]);
    }
  }
  return text;
}

void TextWriter::on_event(const events::Event& event) {
  // fmt::print throws std::system_error on a write error (a full disk); that must
  // not escape on the drain thread: the first error is kept and end() reports it.
  if (!write_error_.empty()) return;
  try {
    if (filter_ && !filter_(event)) return follow_mappings(event);
    print_event(event);
  } catch (const std::exception& error) {
    write_error_ = path_ + ": write error: " + error.what() + bytes_in(file_);
  }
}

void TextWriter::print_event(const events::Event& event) {
  const std::uint64_t seq = event.sequence.value;
  switch (event.kind) {
    case EventKind::kBlock: {
      const auto& block = std::get<events::BlockEvent>(event.payload);
      fmt::print(file_, "#{} block {:#x} size {} insns {}{}\n", seq, block.address.value, block.size,
                 block.instruction_count, name_suffix(block.address.value));
      break;
    }
    case EventKind::kInstruction: {
      const auto& insn = std::get<events::InstructionEvent>(event.payload);
      fmt::print(file_, "#{} insn {:#x} {}\n", seq, insn.address.value, disassemble(insn));
      break;
    }
    case EventKind::kMemoryRead:
    case EventKind::kMemoryWrite: {
      const auto& memory = std::get<events::MemoryEvent>(event.payload);
      fmt::print(file_, "#{} {} {:#x} [{}] = {:#x}{}\n", seq, event.kind == EventKind::kMemoryRead ? "read" : "write",
                 memory.address.value, memory.size, memory.value,
                 memory.pc_known ? fmt::format(" pc {:#x}", memory.pc.value) : std::string(" pc ?"));
      break;
    }
    case EventKind::kRegisters: {
      const auto& registers = std::get<events::RegistersEvent>(event.payload);
      fmt::print(file_, "#{} regs {:#x}{}\n", seq, registers.pc.value, register_list(registers.changes));
      break;
    }
    case EventKind::kSyscall: {
      const auto& call = std::get<events::SyscallEvent>(event.payload);
      fmt::print(file_, "#{} syscall {:#x} {}({:#x}, {:#x}, {:#x}, {:#x}, {:#x}, {:#x}) = {}\n", seq, call.pc.value,
                 call.name, call.args[0], call.args[1], call.args[2], call.args[3], call.args[4], call.args[5],
                 call.result);
      for (const auto& write : call.memory_writes)
        fmt::print(file_, "    wrote {:#x} [{} bytes]\n", write.address.value, write.bytes.size());
      for (const auto& change : call.mapping_changes) {
        const char* what = change.kind == events::MappingChangeKind::kMap     ? "map"
                           : change.kind == events::MappingChangeKind::kUnmap ? "unmap"
                                                                              : "protect";
        fmt::print(file_, "    {} {:#x}-{:#x} prot {}{}{}\n", what, change.start.value, change.start.value + change.length,
                   change.prot, change.name.empty() ? "" : " " + std::string(change.name),
                   change.file.empty() ? "" : fmt::format(" (file {} offset {:#x}, {:#x} bytes)", change.file,
                                                          change.file_offset, change.file_size));
      }
      if (!call.register_changes.empty()) fmt::print(file_, "    regs{}\n", register_list(call.register_changes));
      if (namer_) {
        for (const auto pc : call.call_stack) {
          const std::string name = namer_->is_signal_trampoline(pc) ? "<signal handler called>" : namer_->name(pc);
          fmt::print(file_, "    at {:#x}{}{}\n", pc, name.empty() ? "" : " ", name);
        }
        follow_mappings(event);  // the stack was taken before the kernel ran: mapping changes apply after it
      } else if (!call.call_stack.empty()) {
        std::string stack;
        for (const auto pc : call.call_stack) stack += fmt::format(" {:#x}", pc);
        fmt::print(file_, "    stack{}\n", stack);
      }
      break;
    }
    case EventKind::kFault: {
      const auto& fault = std::get<events::FaultEvent>(event.payload);
      fmt::print(file_, "#{} fault pc {:#x} address {:#x} signal {}: {}{}\n", seq, fault.pc.value, fault.address.value,
                 fault.signal, fault.description, name_suffix(fault.pc.value, "; at "));
      break;
    }
    case EventKind::kModuleLoad: {
      const auto& module = std::get<events::ModuleLoadEvent>(event.payload);
      follow_mappings(event);
      fmt::print(file_, "#{} module {:#x}-{:#x} bias {:#x} {}\n", seq, module.start.value, module.end.value,
                 module.load_bias, module.path);
      break;
    }
    case EventKind::kExit: {
      const auto& exit = std::get<events::ExitEvent>(event.payload);
      if (exit.by_signal)
        fmt::print(file_, "#{} exit signal {}\n", seq, exit.signal);
      else
        fmt::print(file_, "#{} exit status {}\n", seq, exit.code);
      break;
    }
    case EventKind::kGap: {
      const auto& gap = std::get<events::GapEvent>(event.payload);
      fmt::print(file_, "#{} gap {} events lost: {}\n", seq, gap.lost_events, gap.reason);
      break;
    }
    case EventKind::kSignal: print_signal(seq, std::get<events::SignalEvent>(event.payload)); break;
    case EventKind::kThread: print_thread(seq, event.thread, std::get<events::ThreadEvent>(event.payload)); break;
    case EventKind::kProcess: print_process(seq, std::get<events::ProcessEvent>(event.payload)); break;
  }
}

void TextWriter::print_process(std::uint64_t seq, const events::ProcessEvent& change) {
  const std::string trace = change.trace.empty() ? std::string("not recorded") : "trace " + std::string(change.trace);
  if (change.change == events::ProcessChange::kForked)
    fmt::print(file_, "#{} process forked child {} ({}), {}\n", seq, change.pid, change.detail, trace);
  else
    fmt::print(file_, "#{} process {} exec {}, {}\n", seq, change.pid, change.detail, trace);
}

void TextWriter::print_signal(std::uint64_t seq, const events::SignalEvent& signal) {
  const char* abbrev = signal.signal > 0 && signal.signal < 65 ? sigabbrev_np(static_cast<int>(signal.signal)) : nullptr;
  std::string origin = signal.fault ? fmt::format(" fault address {:#x}", signal.fault_address.value)
                       : signal.sender_pid ? fmt::format(" from pid {}", signal.sender_pid)
                                           : std::string();
  fmt::print(file_, "#{} signal {} ({}) code {}{} at {:#x} handler {:#x} frame {:#x}{}\n", seq,
             abbrev ? std::string("SIG") + abbrev : std::string("?"), signal.signal, signal.code, origin,
             signal.interrupted_pc.value, signal.handler.value, signal.frame.value,
             name_suffix(signal.handler.value, "; handler "));
  for (const auto& write : signal.frame_writes)
    fmt::print(file_, "    wrote {:#x} [{} bytes]\n", write.address.value, write.bytes.size());
  if (!signal.register_changes.empty()) fmt::print(file_, "    regs{}\n", register_list(signal.register_changes));
}

void TextWriter::print_thread(std::uint64_t seq, events::ThreadId thread, const events::ThreadEvent& change) {
  switch (change.change) {
    case events::ThreadChange::kCreated:
      fmt::print(file_, "#{} thread {} created by {}\n", seq, thread.value, change.from.value);
      break;
    case events::ThreadChange::kExited:
      fmt::print(file_, "#{} thread {} exited status {}\n", seq, thread.value, change.exit_code);
      break;
    case events::ThreadChange::kSwitched:
      fmt::print(file_, "#{} thread {} switched from {}\n", seq, thread.value, change.from.value);
      break;
    default: fmt::print(file_, "#{} thread {} change {}\n", seq, thread.value, static_cast<int>(change.change));
  }
  if (!change.registers.empty()) fmt::print(file_, "    regs{}\n", register_list(change.registers));
}

void TextWriter::follow_mappings(const events::Event& event) {
  if (namer_) name_event_mappings(*namer_, event);
}

std::string TextWriter::name_suffix(std::uint64_t address, std::string_view before) {
  if (!namer_) return "";
  std::string name = namer_->name(address);
  return name.empty() ? name : std::string(before) + name;
}

void TextWriter::flush() {
  struct stat status {};  // a regular file only: a pipe's reader may be stopped (the write could block)
  if (write_error_.empty() && fstat(fileno(file_), &status) == 0 && S_ISREG(status.st_mode))
    std::fflush(file_);  // (a failure shows in ferror, which end() reports)
}

std::string TextWriter::end(const events::TraceSummary& summary) {
  if (!write_error_.empty()) return write_error_;
  try {
    fmt::print(file_, "# end: {} events, {} instructions, {} lost{}\n", summary.events, summary.instructions,
             summary.lost_events, summary.interrupted ? ", interrupted" : "");
  } catch (const std::exception& error) {
    return path_ + ": write error: " + error.what() + bytes_in(file_);
  }
  const bool failed = std::ferror(file_) != 0 || std::fflush(file_) != 0;
  if (failed) return path_ + ": write error: " + std::strerror(errno) + bytes_in(file_);
  return "";
}

}  // namespace tracecorn::formats
