// Role: implementation of the UCIR writer (see ucir_writer.h and ucir_layout.h).
#include "formats/ucir/ucir_writer.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>

#include "formats/common/byte_stream.h"
#include "formats/common/little_endian.h"
#include "formats/ucir/ucir_layout.h"

namespace tracecorn::formats {

namespace {

void put_name(std::vector<std::uint8_t>& out, std::string_view name) {
  std::uint8_t field[ucir::kNameBytes] = {};
  std::memcpy(field, name.data(), std::min(name.size(), ucir::kNameBytes - 1));
  out.insert(out.end(), field, field + ucir::kNameBytes);
}

// OP_MEM_WRITE, split so that each op's size fits its u32.
template <typename Out>
std::uint32_t put_mem_write(Out& out, std::uint64_t address, std::span<const std::uint8_t> bytes) {
  std::uint32_t ops = 0;
  do {
    const std::size_t chunk = std::min<std::size_t>(bytes.size(), ucir::kMaxMemOpBytes);
    put_u8(out, ucir::kOpMemWrite);
    put_u64(out, address);
    put_u32(out, static_cast<std::uint32_t>(chunk));
    put_bytes(out, bytes.first(chunk));
    bytes = bytes.subspan(chunk);
    address += chunk;
    ++ops;
  } while (!bytes.empty());
  return ops;
}

// OP_MEM_MAP (UNMAP, PROT) with a size above 4 GiB: split into chunks that fit the u32.
constexpr std::uint64_t kMaxMapChunk = 0xfffff000u;

// What an OP_MEM_MAP says of its region beyond address, size and prot.
struct MapDescription {
  std::string_view desc;
  std::string_view file;
  std::uint64_t file_offset = 0;  // of the region's first byte
  std::uint64_t file_size = 0;    // bytes from the file
};

// Writes OP_MEM_MAP/UNMAP/PROT for [address, address+size), split into chunks
// of at most kMaxMapChunk (the spec's size is u32); a map chunk's file offset
// and size are the part of the file it holds. Returns the number of ops.
std::uint32_t put_mapping(std::vector<std::uint8_t>& out, std::uint8_t op, std::uint64_t address, std::uint64_t size,
                          std::uint8_t prot, const MapDescription& description = {}) {
  std::uint32_t ops = 0;
  std::uint64_t file_offset = description.file_offset;
  std::uint64_t file_left = description.file_size;
  do {
    const std::uint64_t chunk = std::min(size, kMaxMapChunk);
    put_u8(out, op);
    put_u64(out, address);
    put_u32(out, static_cast<std::uint32_t>(chunk));
    if (op == ucir::kOpMemMap || op == ucir::kOpMemProt) put_u8(out, prot);
    if (op == ucir::kOpMemMap) {
      const std::string_view desc = description.desc, file = description.file;
      const auto dlen = static_cast<std::uint16_t>(std::min<std::size_t>(desc.size(), 0xffff));
      const auto flen = static_cast<std::uint16_t>(std::min<std::size_t>(file.size(), 0xffff));
      const std::uint64_t from_file = std::min(chunk, file_left);
      put_u64(out, file.empty() ? 0 : file_offset);
      put_u64(out, file.empty() ? 0 : from_file);
      put_u16(out, dlen);
      put_u16(out, flen);
      out.insert(out.end(), desc.begin(), desc.begin() + dlen);
      out.insert(out.end(), file.begin(), file.begin() + flen);
      file_offset += chunk;
      file_left -= from_file;
    }
    size -= chunk;
    address += chunk;
    ++ops;
  } while (size);
  return ops;
}

std::uint8_t prot_bits(std::uint32_t prot) { return static_cast<std::uint8_t>(prot & 7u); }

}  // namespace

// Where the bytes go: formats/common/byte_stream.h.
class UcirWriter::Output {
 public:
  explicit Output(std::unique_ptr<OutputFile> file) : file_(std::move(file)) {}
  std::string write(std::span<const std::uint8_t> bytes) { return file_->write(bytes); }
  std::string flush() { return file_->flush(); }
  std::string close() { return file_->close(); }

 private:
  std::unique_ptr<OutputFile> file_;
};

Expected<std::unique_ptr<UcirWriter>> UcirWriter::open(const std::string& path, const arch::ArchInfo& arch,
                                                       UcirWriterOptions options) {
  if (arch.format_ids.ucir_arch.empty())
    return make_error(ErrorCode::kUnsupported, "UCIR has no name for architecture " + std::string(arch.name), path);
  auto file = OutputFile::open(path, options.compress_zstd, options.zstd);
  if (!file) return file.error();
  auto output = std::make_unique<Output>(std::move(*file));
  return std::unique_ptr<UcirWriter>(new UcirWriter(std::move(output), path, arch, std::move(options)));
}

UcirWriter::UcirWriter(std::unique_ptr<Output> output, std::string path, const arch::ArchInfo& arch,
                       UcirWriterOptions options)
    : output_(std::move(output)), path_(std::move(path)), arch_(arch), options_(std::move(options)) {}

UcirWriter::~UcirWriter() = default;

void UcirWriter::write_bytes(std::span<const std::uint8_t> bytes) {
  if (!error_.empty()) return;
  if (auto error = output_->write(bytes); !error.empty()) {
    error_ = path_ + ": write error: " + error;
    return;
  }
  bytes_written_ += bytes.size();
}

void UcirWriter::flush() {
  if (!error_.empty() || !output_) return;
  if (auto error = output_->flush(); !error.empty()) error_ = path_ + ": write error: " + error;
}

template <typename Out>
void UcirWriter::write_register(Out& out, const events::RegisterValue& value) const {
  if (value.index >= arch_.registers.size()) return;
  const auto number = static_cast<std::uint16_t>(arch_.registers[value.index].uc_id);
  if (value.size <= 8) {
    // OP_REG u8, number u16, value u64, at once: the value's little-endian
    // bytes are the u64's, zero-extended.
    std::uint8_t op[1 + 2 + 8] = {ucir::kOpReg};
    std::copy_n(value.bytes.begin(), value.size, store_le(op + 1, number));
    put_bytes(out, std::span<const std::uint8_t>(op, sizeof op));
  } else {
    put_u8(out, ucir::kOpSpreg);
    put_u16(out, number);
    put_u16(out, value.size);
    put_bytes(out, std::span(value.bytes).first(std::min<std::size_t>(value.size, value.bytes.size())));
  }
}

void UcirWriter::begin(const events::TraceInfo& info) {
  try {
    track_registers_in_keyframes_ = info.level == "regs" || info.level == "full";
    gives_written_code_ = info.level != "mem" && info.level != "full";
    pid_ = info.process_id != 0 ? info.process_id : ucir::kPid;
    frame_pid_ = pid_;
    std::vector<std::uint8_t> out;
    out.insert(out.end(), std::begin(ucir::kMagic), std::end(ucir::kMagic));
    put_u32(out, ucir::kVersion);
    put_name(out, arch_.format_ids.ucir_arch);
    put_name(out, options_.os);
    put_u8(out, arch_.little_endian ? 0 : 1);  // code byte order
    put_u8(out, arch_.little_endian ? 0 : 1);  // data byte order
    // The first keyframe: the mappings with their contents, then the registers.
    std::vector<std::uint8_t> ops;
    std::uint32_t count = 0;
    for (const auto& region : info.initial_memory) {
      count += put_mapping(ops, ucir::kOpMemMap, region.start.value, region.size, prot_bits(region.prot),
                           {region.name, region.file, region.file_offset, region.file_size});
      std::span<const std::uint8_t> bytes(region.bytes);
      const auto first = std::find_if(bytes.begin(), bytes.end(), [](std::uint8_t b) { return b != 0; });
      if (first == bytes.end()) continue;
      const auto last = std::find_if(bytes.rbegin(), bytes.rend(), [](std::uint8_t b) { return b != 0; }).base();
      const auto offset = static_cast<std::size_t>(first - bytes.begin());
      count += put_mem_write(ops, region.start.value + offset,
                             bytes.subspan(offset, static_cast<std::size_t>(last - first)));
    }
    registers_.assign(arch_.registers.size(), events::RegisterValue{});
    for (std::size_t i = 0; i < registers_.size(); ++i) {
      registers_[i].index = static_cast<std::uint16_t>(i);
      registers_[i].size = static_cast<std::uint8_t>(std::min<std::size_t>(arch_.registers[i].size, 16));
    }
    for (const auto& value : info.initial_registers) {
      write_register(ops, value);
      ++count;
      if (value.index < registers_.size()) registers_[value.index] = value;
    }
    put_u8(out, ucir::kOpKeyframe);
    put_u64(out, pid_);
    put_u32(out, count);
    out.insert(out.end(), ops.begin(), ops.end());
    write_bytes(out);
  } catch (const std::exception& error) {
    if (error_.empty()) error_ = path_ + ": cannot write the header: " + error.what();
  }
}

void UcirWriter::finish_step() {
  if (pending_step_ < 0) return;
  put_u8(frame_, ucir::kOpStep);
  put_u8(frame_, static_cast<std::uint8_t>(pending_step_));
  ++frame_ops_;
  pending_step_ = -1;
}

// OP_FRAME / OP_KEYFRAME header: op u8, pid u64, op_count u32 (13 bytes).
void UcirWriter::write_frame_header(std::uint8_t op, std::uint32_t op_count) {
  std::vector<std::uint8_t>& header = frame_header_;
  header.clear();
  put_u8(header, op);
  put_u64(header, op == ucir::kOpFrame ? frame_pid_ : pid_);
  put_u32(header, op_count);
  write_bytes(header);
}

void UcirWriter::flush_frame() {
  finish_step();
  if (!frame_open_) return;
  write_frame_header(ucir::kOpFrame, frame_ops_);
  write_bytes(frame_.bytes());
  frame_.clear();
  frame_ops_ = 0;
  frame_open_ = false;
}

void UcirWriter::note_written(std::uint64_t address, std::span<const std::uint8_t> bytes) {
  if (!given_code_.empty()) [[unlikely]] forget_given_code(address, bytes.size());
  if (options_.keyframe_interval == 0) return;
  // A page at a time: one lookup for a store, not one per byte.
  for (std::size_t done = 0; done < bytes.size();) {
    const std::uint64_t at = address + done;
    const std::size_t offset = at % kPageBytes;
    const std::size_t chunk = std::min<std::size_t>(bytes.size() - done, kPageBytes - offset);
    auto& page = dirty_pages_[at / kPageBytes];
    std::copy_n(bytes.begin() + static_cast<std::ptrdiff_t>(done), chunk, page.bytes.begin() + static_cast<std::ptrdiff_t>(offset));
    std::fill_n(page.dirty.begin() + static_cast<std::ptrdiff_t>(offset), chunk, true);
    done += chunk;
  }
}

// A mapping made or removed: what was written there before is gone (a new
// mapping is zero-filled), so the next keyframe must not write it back.
void UcirWriter::forget_written(std::uint64_t address, std::uint64_t size) {
  forget_given_code(address, size);
  for (auto& [number, page] : dirty_pages_) {
    const std::uint64_t start = number * kPageBytes;
    for (std::uint64_t i = 0; i < kPageBytes; ++i)
      if (start + i - address < size) page.dirty[i] = false;
  }
}

// A block from writable memory below the mem level: its bytes, unless the
// reader's memory already holds them from this writer, as an OP_MEM_WRITE
// that opens its frame (the frame is open and empty).
void UcirWriter::give_written_code(const events::BlockEvent& block) {
  const auto given = given_code_.find(block.address.value);
  if (given != given_code_.end() && std::ranges::equal(given->second, block.bytes)) return;
  frame_ops_ += put_mem_write(frame_, block.address.value, block.bytes);
  note_written(block.address.value, block.bytes);  // (keyframes; and drops entries it overlaps)
  given_code_[block.address.value].assign(block.bytes.begin(), block.bytes.end());
}

// The reader's memory changed over [address, address + size): what was given
// for blocks there may be gone.
void UcirWriter::forget_given_code(std::uint64_t address, std::uint64_t size) {
  std::erase_if(given_code_, [&](const auto& entry) {
    return entry.first < address + size && entry.first + entry.second.size() > address;
  });
}

void UcirWriter::track_registers(std::span<const events::RegisterValue> values) {
  for (const auto& value : values)
    if (value.index < registers_.size()) registers_[value.index] = value;
}

void UcirWriter::write_keyframe_if_due() {
  if (options_.keyframe_interval == 0 || instructions_since_keyframe_ < options_.keyframe_interval) return;
  instructions_since_keyframe_ = 0;
  std::vector<std::uint8_t> ops;
  std::uint32_t count = 0;
  // Memory written since the previous keyframe, as runs of written bytes, by address.
  std::map<std::uint64_t, const DirtyPage*> pages;
  for (const auto& [number, page] : dirty_pages_) pages.emplace(number, &page);
  std::vector<std::uint8_t> run;
  std::uint64_t run_start = 0;
  auto end_run = [&] {
    if (!run.empty()) count += put_mem_write(ops, run_start, run);
    run.clear();
  };
  for (const auto& [number, page] : pages) {
    for (std::uint64_t i = 0; i < kPageBytes; ++i) {
      const std::uint64_t at = number * kPageBytes + i;
      if (!page->dirty[i]) {
        end_run();
        continue;
      }
      if (!run.empty() && run_start + run.size() != at) end_run();
      if (run.empty()) run_start = at;
      run.push_back(page->bytes[i]);
    }
  }
  end_run();
  dirty_pages_.clear();
  if (track_registers_in_keyframes_) {
    for (const auto& value : registers_) {
      write_register(ops, value);
      ++count;
    }
  }
  write_frame_header(ucir::kOpKeyframe, count);
  write_bytes(ops);
}

void UcirWriter::on_event(const events::Event& event) {
  if (!error_.empty()) return;
  try {
    handle(event);
  } catch (const std::exception& error) {
    error_ = path_ + ": write error: " + error.what();
  }
}

// A block's run of instructions at once: the same OP_STEPs handle() writes
// for them one event at a time (each instruction closes the step before it
// and leaves its own pending), two bytes each, without building an event per
// instruction.
void UcirWriter::on_instructions(const events::InstructionRun& run) {
  if (!error_.empty() || run.instructions.empty()) return;
  try {
    if (run.thread.value != 0 && run.thread.value != frame_pid_) {
      flush_frame();
      frame_pid_ = run.thread.value;
    }
    finish_step();
    frame_open_ = true;
    const std::size_t closed = run.instructions.size() - 1;
    std::uint8_t* out = frame_.append(2 * closed);
    for (std::size_t i = 0; i < closed; ++i) {
      out[2 * i] = ucir::kOpStep;
      out[2 * i + 1] = run.instructions[i].size;
    }
    frame_ops_ += static_cast<std::uint32_t>(closed);
    pending_step_ = run.instructions.back().size;
  } catch (const std::exception& error) {
    error_ = path_ + ": write error: " + error.what();
  }
}

void UcirWriter::handle(const events::Event& event) {
  using events::EventKind;
  // A frame holds one thread's events, and its pid says which (ucir_layout.h):
  // another thread's event starts a new frame. (A thread event itself may be
  // about another thread; it goes in the running thread's frame.)
  if (event.kind != EventKind::kThread && event.thread.value != 0 && event.thread.value != frame_pid_) {
    flush_frame();
    frame_pid_ = event.thread.value;
  }
  switch (event.kind) {
    case EventKind::kBlock: {
      const auto& block = std::get<events::BlockEvent>(event.payload);
      flush_frame();
      write_keyframe_if_due();
      frame_open_ = true;
      if (block.from_writable_memory && gives_written_code_ && !block.bytes.empty()) [[unlikely]]
        give_written_code(block);
      put_u8(frame_, ucir::kOpJmp);
      // The instruction set travels in bit 0 (Thumb), as in an arm branch target.
      put_u64(frame_, block.address.value | (arch_.alternate_isa && block.mode == 1 ? 1 : 0));
      put_u32(frame_, block.size);
      ++frame_ops_;
      instructions_since_keyframe_ += block.instruction_count;
      return;
    }
    case EventKind::kInstruction: {
      const auto& insn = std::get<events::InstructionEvent>(event.payload);
      finish_step();
      frame_open_ = true;
      pending_step_ = static_cast<int>(std::min<std::uint32_t>(insn.size, 0xff));
      return;
    }
    case EventKind::kMemoryRead:
    case EventKind::kMemoryWrite: {
      const auto& memory = std::get<events::MemoryEvent>(event.payload);
      frame_open_ = true;
      const bool write = event.kind == EventKind::kMemoryWrite;
      // The op at once: OP_MEM_READ/WRITE u8, address u64, size u32, and for a
      // write the bytes in memory (the value in the guest's byte order).
      std::uint8_t op[1 + 8 + 4 + 8];
      op[0] = write ? ucir::kOpMemWrite : ucir::kOpMemRead;
      std::uint8_t* end = store_le(store_le(op + 1, memory.address.value), std::uint32_t{memory.size});
      if (write) {
        std::uint8_t* bytes = end;
        const std::size_t size = std::min<std::size_t>(memory.size, 8);
        for (std::size_t i = 0; i < size; ++i)
          bytes[i] = static_cast<std::uint8_t>(memory.value >> (8 * (arch_.little_endian ? i : size - 1 - i)));
        end += size;
        note_written(memory.address.value, std::span<const std::uint8_t>(bytes, size));
      }
      put_bytes(frame_, std::span<const std::uint8_t>(op, end));
      ++frame_ops_;
      return;
    }
    case EventKind::kRegisters: {
      const auto& registers = std::get<events::RegistersEvent>(event.payload);
      frame_open_ = true;
      for (const auto& value : registers.changes) {
        write_register(frame_, value);
        ++frame_ops_;
      }
      track_registers(registers.changes);
      return;
    }
    case EventKind::kSyscall: {
      const auto& call = std::get<events::SyscallEvent>(event.payload);
      frame_open_ = true;
      std::vector<std::uint8_t> nested;
      std::uint32_t count = 0;
      // Mapping changes first: a new mapping is zero-filled, and the writes that
      // follow (a mapped file's contents) fill it, as a replayer must apply them.
      for (const auto& change : call.mapping_changes) {
        const std::uint8_t op = change.kind == events::MappingChangeKind::kMap     ? ucir::kOpMemMap
                                : change.kind == events::MappingChangeKind::kUnmap ? ucir::kOpMemUnmap
                                                                                   : ucir::kOpMemProt;
        count += put_mapping(nested, op, change.start.value, change.length, prot_bits(change.prot),
                             {change.name, change.file, change.file_offset, change.file_size});
        if (change.kind != events::MappingChangeKind::kProtect) forget_written(change.start.value, change.length);
      }
      for (const auto& write : call.memory_writes) {
        count += put_mem_write(nested, write.address.value, write.bytes);
        note_written(write.address.value, write.bytes);
      }
      for (const auto& value : call.register_changes) {
        write_register(nested, value);
        ++count;
      }
      track_registers(call.register_changes);
      if (!options_.strict && !call.call_stack.empty()) {
        const auto depth = static_cast<std::uint16_t>(std::min<std::size_t>(call.call_stack.size(), 0xffff));
        put_u8(nested, ucir::kOpCallstack);
        put_u16(nested, depth);
        for (std::size_t i = 0; i < depth; ++i) put_u64(nested, call.call_stack[i]);
        ++count;
      }
      // The spec's op_count is a u16: a syscall with more effects than that
      // (never seen: one op per write, map or register) cannot be written whole.
      if (count > 0xffff) {
        ++dropped_;
        return;
      }
      put_u8(frame_, ucir::kOpSyscall);
      // The spec says u16; usercorn's own writer uses u32 (docs/formats/ucir.md).
      // An architecture's private calls (arm's set_tls, 0xf0005) as kPrivateSyscall + n.
      const std::uint64_t base = arch_.syscall_abi.private_base;
      const bool is_private = base && call.number >= base && call.number - base < 0x10000u - ucir::kPrivateSyscall;
      put_u16(frame_, static_cast<std::uint16_t>(is_private ? ucir::kPrivateSyscall + (call.number - base) : call.number));
      put_u64(frame_, static_cast<std::uint64_t>(call.result));
      put_u8(frame_, static_cast<std::uint8_t>(ucir::kSyscallArgs));
      put_u16(frame_, static_cast<std::uint16_t>(count));
      for (const auto arg : call.args) put_u64(frame_, arg);
      put_bytes(frame_, nested);
      ++frame_ops_;
      return;
    }
    case EventKind::kExit: {
      finish_step();
      frame_open_ = true;
      put_u8(frame_, ucir::kOpExit);
      ++frame_ops_;
      flush_frame();
      return;
    }
    case EventKind::kSignal:
      if (options_.strict) {
        ++dropped_;
        return;
      }
      write_signal(std::get<events::SignalEvent>(event.payload));
      return;
    case EventKind::kThread:
      if (options_.strict) {
        ++dropped_;
        return;
      }
      write_thread(event.thread, std::get<events::ThreadEvent>(event.payload));
      return;
    case EventKind::kProcess:
      if (options_.strict) {
        ++dropped_;
        return;
      }
      write_process(std::get<events::ProcessEvent>(event.payload));
      return;
    case EventKind::kFault:
    case EventKind::kModuleLoad:
    case EventKind::kGap:
      // UCIR has no op for these (see the header comment).
      ++dropped_;
      return;
  }
}

// The nested ops of OP_SIGNAL and OP_THREAD: memory writes then registers;
// returns their count. Noted for the keyframes as a syscall's are.
std::uint32_t UcirWriter::put_effects(std::vector<std::uint8_t>& nested,
                                      std::span<const events::MemoryWriteEffect> writes,
                                      std::span<const events::RegisterValue> registers) {
  std::uint32_t count = 0;
  for (const auto& write : writes) {
    count += put_mem_write(nested, write.address.value, write.bytes);
    note_written(write.address.value, write.bytes);
  }
  for (const auto& value : registers) {
    write_register(nested, value);
    ++count;
  }
  track_registers(registers);
  return count;
}

void UcirWriter::write_signal(const events::SignalEvent& signal) {
  std::vector<std::uint8_t> nested;
  const std::uint32_t count = put_effects(nested, signal.frame_writes, signal.register_changes);
  if (count > 0xffff) {
    ++dropped_;
    return;
  }
  frame_open_ = true;
  put_u8(frame_, ucir::kOpSignal);
  put_u8(frame_, static_cast<std::uint8_t>(signal.signal));
  put_u8(frame_, signal.fault ? 1 : 0);
  put_u32(frame_, static_cast<std::uint32_t>(signal.code));
  for (const std::uint64_t value : {signal.sender_pid, signal.fault_address.value, signal.interrupted_pc.value,
                                    signal.handler.value, signal.frame.value})
    put_u64(frame_, value);
  put_u16(frame_, static_cast<std::uint16_t>(count));
  put_bytes(frame_, nested);
  ++frame_ops_;
}

void UcirWriter::write_thread(events::ThreadId thread, const events::ThreadEvent& change) {
  std::vector<std::uint8_t> nested;
  const std::uint32_t count = put_effects(nested, {}, change.registers);
  if (count > 0xffff) {
    ++dropped_;
    return;
  }
  frame_open_ = true;
  put_u8(frame_, ucir::kOpThread);
  put_u8(frame_, static_cast<std::uint8_t>(change.change));
  put_u64(frame_, thread.value);
  put_u64(frame_, change.from.value);
  put_u32(frame_, static_cast<std::uint32_t>(change.exit_code));
  put_u16(frame_, static_cast<std::uint16_t>(count));
  put_bytes(frame_, nested);
  ++frame_ops_;
}

void UcirWriter::write_process(const events::ProcessEvent& change) {
  const std::string_view trace = change.trace.substr(0, 0xffff), detail = change.detail.substr(0, 0xffff);
  frame_open_ = true;
  put_u8(frame_, ucir::kOpProcess);
  put_u8(frame_, static_cast<std::uint8_t>(change.change));
  put_u64(frame_, change.pid);
  put_u16(frame_, static_cast<std::uint16_t>(trace.size()));
  put_bytes(frame_, std::span(reinterpret_cast<const std::uint8_t*>(trace.data()), trace.size()));
  put_u16(frame_, static_cast<std::uint16_t>(detail.size()));
  put_bytes(frame_, std::span(reinterpret_cast<const std::uint8_t*>(detail.data()), detail.size()));
  ++frame_ops_;
}

std::string UcirWriter::end(const events::TraceSummary& summary) {
  if (error_.empty()) {
    try {
      flush_frame();
      if (summary.interrupted) {  // the interruption note (ucir_layout.h): a frame holding one OP_NOP
        write_frame_header(ucir::kOpFrame, 1);
        write_bytes(std::vector<std::uint8_t>{ucir::kOpNop});
      }
      write_frame_header(ucir::kOpFrame, 0);  // the end note (ucir_layout.h): the file is whole
    } catch (const std::exception& error) {
      error_ = path_ + ": write error: " + error.what();
    }
  }
  if (!output_) return error_;
  const std::string close_error = output_->close();
  output_.reset();
  if (error_.empty() && !close_error.empty()) error_ = path_ + ": write error: " + close_error;
  return error_;
}

}  // namespace tracecorn::formats
