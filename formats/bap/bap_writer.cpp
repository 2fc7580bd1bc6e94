// Role: implementation of the BAP frames writer (see bap_writer.h, bap_layout.h).
#include "formats/bap/bap_writer.h"

#include "arch/instruction_decoder.h"

#include <algorithm>
#include <cctype>
#include <unordered_map>
#include <vector>

#include "formats/bap/bap_layout.h"
#include "formats/bap/frames_wire.h"
#include "formats/common/byte_stream.h"
#include "frames.pb.h"

namespace tracecorn::formats {

namespace pb = frames_pb;

namespace {

void put_u64(std::vector<std::uint8_t>& out, std::uint64_t value) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<std::uint8_t>(value >> (8 * i)));
}

void put_u64(std::uint8_t* at, std::uint64_t value) {
  for (int i = 0; i < 8; ++i) at[i] = static_cast<std::uint8_t>(value >> (8 * i));
}

// Frames are staged and handed to the output file (zstd's stream, stdio) this
// many bytes at a time, not one call per frame.
constexpr std::size_t kStagedBytes = 1 << 20;

// What the writer needs to know of one instruction, decoded once per address.
// An instruction's registers (read, written, base, index: register indices).
struct DecodedOperands : arch::InstructionDecoder::Registers {
  std::vector<std::uint8_t> bytes;  // to notice code that changed
  std::vector<bap::OperandUsage> read_usage;  // of each register of `read` (a pre-list operand)
};

void set_no_taint(pb::taint_info* taint) { taint->set_no_taint(true); }

void fill_meta(const FramesMeta& meta, pb::meta_frame& out) {
  auto* tracer = out.mutable_tracer();
  tracer->set_name(meta.tracer_name);
  for (const auto& arg : meta.tracer_args) tracer->add_args(arg);
  for (const auto& env : meta.tracer_envp) tracer->add_envp(env);
  tracer->set_version(meta.tracer_version);
  auto* target = out.mutable_target();
  target->set_path(meta.target_path);
  for (const auto& arg : meta.target_args) target->add_args(arg);
  for (const auto& env : meta.target_envp) target->add_envp(env);
  target->set_md5sum(std::string(meta.target_md5.begin(), meta.target_md5.end()));
  auto* stats = out.mutable_fstats();
  stats->set_size(meta.target_size);
  stats->set_atime(meta.target_atime);
  stats->set_mtime(meta.target_mtime);
  stats->set_ctime(meta.target_ctime);
  out.set_user(meta.user);
  out.set_host(meta.host);
  out.set_time(meta.time);
  if (!meta.level.empty()) out.set_tracecorn_level(meta.level);
}

// The instruction whose std_frame is being built (bap_writer.h), encoded as it
// goes (frames_wire.h): its pre-list registers when it arrives (their values
// before it ran), its memory reads and unattributed accesses as they come,
// its post list when its events are complete. The buffers are reused.
struct PendingInstruction {
  bool active = false;
  std::uint64_t address = 0;
  std::uint64_t thread_id = 0;
  std::uint8_t mode = 0;
  const DecodedOperands* operands = nullptr;  // the decode cache's entry: its bytes are the instruction's
  formats::ByteBuffer pre_list;                   // operand_value_list bodies
  formats::ByteBuffer post_list;
  formats::ByteBuffer unattributed;
  std::vector<events::MemoryEvent> writes;  // go after the post-list registers

  void start(std::uint64_t at, events::ThreadId thread, std::uint8_t instruction_set, const DecodedOperands* decoded) {
    active = true;
    address = at;
    thread_id = thread.value;
    mode = instruction_set;
    operands = decoded;
    pre_list.clear();
    post_list.clear();
    unattributed.clear();
    writes.clear();
  }
};

}  // namespace

struct FramesWriter::State {
  std::unique_ptr<OutputFile> output;
  std::string path;
  const arch::ArchInfo& arch;
  FramesWriterOptions options;
  std::string error;  // the first write error, reported by end()
  std::unique_ptr<arch::InstructionDecoder> decoder;  // with register detail

  std::uint64_t header_file_offset = 0;  // where the 48 header bytes sit in the file (9 inside the raw zstd frame)
  std::uint64_t offset = 0;              // bytes of the (decompressed) file written so far, staged included
  std::uint64_t frames = 0;              // n
  std::vector<std::uint64_t> toc;
  std::uint64_t frames_to_toc_entry = 0;  // counted frames until the next one starts a TOC entry
  std::uint64_t dropped = 0;
  std::uint32_t exit_signal = 0;  // of the exit event, for the interruption note

  std::vector<std::string> names;                              // upper-case register names, arch table order
  std::vector<bap::RegisterOperandEncoder> register_operands;  // each one's operand_info, encoded once
  std::vector<events::RegisterValue> registers;                // last known value of each register
  std::vector<bool> known;                                     // whether registers[i] holds the value
  int pc_index = -1;                                           // the program counter's index in the table
  std::unordered_map<std::uint64_t, DecodedOperands> decoded;  // by address (bit 63: the second instruction set)
  // A direct-mapped front of `decoded` (entries of the map: a node's address
  // holds until the map is cleared), which saves most lookups' hashing.
  struct RecentDecode {
    std::uint64_t key = 0;
    const DecodedOperands* operands = nullptr;
  };
  static constexpr std::size_t kRecentDecodes = 4096;
  std::vector<RecentDecode> recent_decodes = std::vector<RecentDecode>(kRecentDecodes);

  PendingInstruction pending;
  pb::frame frame;         // the other frames, built with the generated code
  formats::ByteBuffer staged;  // frames not handed to the output file yet (kStagedBytes at most, bar one frame)

  State(std::unique_ptr<OutputFile> out, std::string file, const arch::ArchInfo& info, FramesWriterOptions opts)
      : output(std::move(out)), path(std::move(file)), arch(info), options(std::move(opts)) {
    for (const auto& reg : arch.registers) {
      std::string name(reg.name);
      for (char& c : name) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
      register_operands.emplace_back(name, std::min<std::size_t>(reg.size, 16));
      names.push_back(std::move(name));
    }
    for (std::size_t i = 0; i < arch.registers.size(); ++i)
      if (arch.registers[i].uc_id == arch.pc_reg) pc_index = static_cast<int>(i);
    registers.resize(arch.registers.size());
    known.assign(arch.registers.size(), false);
    for (std::size_t i = 0; i < registers.size(); ++i) {
      registers[i].index = static_cast<std::uint16_t>(i);
      registers[i].size = static_cast<std::uint8_t>(std::min<std::size_t>(arch.registers[i].size, 16));
    }
  }

  // Hands the staged bytes to the output file.
  void hand_over() {
    if (staged.empty()) return;
    if (error.empty())
      if (auto problem = output->write(staged.bytes()); !problem.empty()) error = path + ": write error: " + problem;
    staged.clear();
  }

  void write(std::span<const std::uint8_t> bytes) {
    if (!error.empty()) return;
    staged.append(bytes);
    offset += bytes.size();
  }

  // Room for one frame of `size` bytes, after its u64 size (the meta frame is
  // written the same way but not counted).
  std::uint8_t* stage_frame(std::size_t size, bool counted) {
    if (counted) {
      if (frames_to_toc_entry == 0) {
        toc.push_back(offset);
        frames_to_toc_entry = options.frames_per_toc_entry;
      }
      --frames_to_toc_entry;
      ++frames;
    }
    std::uint8_t* at = staged.append(8 + size);
    put_u64(at, size);
    offset += 8 + size;
    return at + 8;
  }

  void frame_staged() {
    if (staged.size() >= kStagedBytes) hand_over();
  }

  void write_message(const google::protobuf::MessageLite& message, bool counted) {
    if (!error.empty()) return;
    const std::size_t size = message.ByteSizeLong();
    message.SerializeWithCachedSizesToArray(stage_frame(size, counted));
    frame_staged();
  }

  // The instruction's operands, decoded once per address, instruction set and bytes.
  const DecodedOperands* decode(std::uint64_t address, std::uint8_t mode, std::span<const std::uint8_t> bytes) {
    const bool alternate = mode == 1 && arch.alternate_isa;  // decoded in the second instruction set
    const std::uint64_t key = address | (std::uint64_t{alternate} << 63);
    RecentDecode& slot = recent_decodes[(key ^ (key >> 12)) % kRecentDecodes];
    if (slot.operands && slot.key == key && std::ranges::equal(bytes, slot.operands->bytes)) return slot.operands;
    const DecodedOperands* operands = find_or_decode(key, address, mode, bytes);
    slot = {key, operands};
    return operands;
  }

  const DecodedOperands* find_or_decode(std::uint64_t key, std::uint64_t address, std::uint8_t mode,
                                        std::span<const std::uint8_t> bytes) {
    auto found = decoded.find(key);
    if (found != decoded.end() && std::ranges::equal(bytes, found->second.bytes)) return &found->second;
    if (decoded.size() > (1u << 20)) {  // bound the cache (self-modifying or huge code)
      decoded.clear();
      std::fill(recent_decodes.begin(), recent_decodes.end(), RecentDecode{});
    }
    DecodedOperands operands;
    operands.bytes.assign(bytes.begin(), bytes.end());
    if (decoder->registers(bytes, address, mode, operands)) {
      // Address registers are read even where Capstone's list leaves them out.
      for (const auto list : {&operands.base, &operands.index})
        for (const std::uint16_t reg : *list)
          if (std::find(operands.read.begin(), operands.read.end(), reg) == operands.read.end())
            operands.read.push_back(reg);
    }
    for (const std::uint16_t reg : operands.read) {
      const bool is_base = std::find(operands.base.begin(), operands.base.end(), reg) != operands.base.end();
      const bool is_index = std::find(operands.index.begin(), operands.index.end(), reg) != operands.index.end();
      operands.read_usage.push_back({.read = true, .written = false, .index = is_index, .base = is_base});
    }
    return &(decoded[key] = std::move(operands));
  }

  // A register operand with the register's last known value (the hot path's,
  // frames_wire.h; its size is the encoder's: apply() keeps every size fixed).
  void encode_register(formats::ByteBuffer& list, std::uint16_t index, bap::OperandUsage usage) {
    register_operands[index].append(list, usage, registers[index].bytes);
  }

  static void encode_memory(formats::ByteBuffer& list, const events::MemoryEvent& access, bool written) {
    const std::size_t size = std::min<std::size_t>(access.size, 8);
    std::uint8_t bytes[8];
    for (std::size_t i = 0; i < size; ++i) bytes[i] = static_cast<std::uint8_t>(access.value >> (8 * i));
    const bap::OperandUsage usage{.read = !written, .written = written, .index = false, .base = false};
    bap::append_operand(list, bap::memory_operand_specific(access.address.value).span(),
                        static_cast<std::int32_t>(size * 8), usage, {bytes, size});
  }

  // A register operand in the generated code's messages (the rarer frames' register changes).
  void add_register(pb::operand_value_list* list, std::uint16_t index, bool written, bool is_base, bool is_index) {
    auto* operand = list->add_elem();
    operand->mutable_operand_info_specific()->mutable_reg_operand()->set_name(names[index]);
    const events::RegisterValue& value = registers[index];
    operand->set_bit_length(static_cast<std::int32_t>(value.size) * 8);
    auto* usage = operand->mutable_operand_usage();
    usage->set_read(!written);
    usage->set_written(written);
    usage->set_index(is_index);
    usage->set_base(is_base);
    set_no_taint(operand->mutable_taint_info());
    operand->set_value(value.bytes.data(), value.size);
  }

  void start_instruction(events::ThreadId thread, const events::InstructionEvent& instruction) {
    finish_instruction();
    const DecodedOperands* operands = decode(instruction.address.value, instruction.mode, instruction.bytes);
    pending.start(instruction.address.value, thread, instruction.mode, operands);
    // The program counter is never recorded as a change (no access list names it
    // as written by straight-line code): it is the instruction's own address.
    if (pc_index >= 0) {
      auto& pc = registers[static_cast<std::size_t>(pc_index)];
      for (std::size_t i = 0; i < 8 && i < pc.size; ++i)
        pc.bytes[i] = static_cast<std::uint8_t>(instruction.address.value >> (8 * i));
      known[static_cast<std::size_t>(pc_index)] = true;
    }
    for (std::size_t i = 0; i < operands->read.size(); ++i)
      if (known[operands->read[i]]) encode_register(pending.pre_list, operands->read[i], operands->read_usage[i]);
  }

  void on_memory(const events::Event& event) {
    const auto& access = std::get<events::MemoryEvent>(event.payload);
    if (!pending.active) {
      ++dropped;  // no instruction to tie it to
      return;
    }
    const bool written = event.kind == events::EventKind::kMemoryWrite;
    if (!access.pc_known || access.pc.value != pending.address)
      encode_memory(pending.unattributed, access, written);
    else if (written)
      pending.writes.push_back(access);  // after the post-list registers, at finish_instruction()
    else
      encode_memory(pending.pre_list, access, false);
  }

  // Writes the pending instruction's frame (post-list registers from the values now known).
  void finish_instruction() {
    if (!pending.active) return;
    pending.active = false;
    constexpr bap::OperandUsage kWritten{.read = false, .written = true, .index = false, .base = false};
    for (const std::uint16_t reg : pending.operands->written)
      if (known[reg]) encode_register(pending.post_list, reg, kWritten);
    for (const auto& access : pending.writes) encode_memory(pending.post_list, access, true);
    if (!error.empty()) return;
    bap::StdFrameFields fields;
    fields.address = pending.address;
    fields.thread_id = pending.thread_id;
    fields.rawbytes = pending.operands->bytes;
    fields.operand_pre_list = pending.pre_list.bytes();
    fields.operand_post_list = pending.post_list.bytes();
    // An architecture with two instruction sets names the instruction's (arm: "ARM", "Thumb").
    if (arch.alternate_isa) fields.mode = arch.alternate_isa->names[pending.mode == 1 ? 1 : 0];
    if (!pending.unattributed.empty()) fields.tracecorn_unattributed = pending.unattributed.bytes();
    const bap::StdFrameSizes sizes = bap::std_frame_sizes(fields);
    bap::write_std_frame(stage_frame(sizes.message, true), fields, sizes);
    frame_staged();
  }

  void apply(std::span<const events::RegisterValue> values) {
    for (const auto& value : values) {
      if (value.index >= registers.size()) continue;
      registers[value.index] = value;
      registers[value.index].size = static_cast<std::uint8_t>(std::min<std::size_t>(arch.registers[value.index].size, 16));
      known[value.index] = true;
    }
  }

  // Registers a signal or a thread switch set, into `list` (and the known state).
  void add_register_changes(pb::operand_value_list* list, std::span<const events::RegisterValue> values) {
    apply(values);
    for (const auto& value : values)
      if (value.index < registers.size()) add_register(list, value.index, true, false, false);
  }

  // A signal delivery: an exception frame with our fields (frames.proto).
  void write_signal(events::ThreadId thread, const events::SignalEvent& signal) {
    finish_instruction();
    frame.Clear();
    auto* out = frame.mutable_exception_frame();
    out->set_exception_number(signal.signal);
    out->set_thread_id(thread.value);
    out->set_from_addr(signal.interrupted_pc.value);
    out->set_to_addr(signal.handler.value);
    out->set_tracecorn_fault_address(signal.fault_address.value);
    out->set_tracecorn_signal_code(signal.code);
    out->set_tracecorn_signal_frame(signal.frame.value);
    out->set_tracecorn_sender_pid(signal.sender_pid);
    out->set_tracecorn_signal_fault(signal.fault);
    for (const auto& write : signal.frame_writes) {
      auto* effect = out->add_tracecorn_memory_writes();
      effect->set_address(write.address.value);
      effect->set_bytes(write.bytes.data(), write.bytes.size());
    }
    add_register_changes(out->mutable_tracecorn_register_changes(), signal.register_changes);
    write_message(frame, true);
  }

  // A thread change: an exception frame numbered 0 with our fields (frames.proto).
  void write_thread(events::ThreadId thread, const events::ThreadEvent& change) {
    finish_instruction();
    frame.Clear();
    auto* out = frame.mutable_exception_frame();
    out->set_exception_number(0);
    out->set_thread_id(thread.value);
    out->set_tracecorn_thread_change(static_cast<std::uint32_t>(change.change));
    out->set_tracecorn_thread_from(change.from.value);
    out->set_tracecorn_thread_exit_code(change.exit_code);
    if (!change.registers.empty())
      add_register_changes(out->mutable_tracecorn_register_changes(), change.registers);
    write_message(frame, true);
  }

  // A fork or an exec: an exception frame numbered 0 with our fields (frames.proto).
  void write_process(events::ThreadId thread, const events::ProcessEvent& change) {
    finish_instruction();
    frame.Clear();
    auto* out = frame.mutable_exception_frame();
    out->set_exception_number(0);
    out->set_thread_id(thread.value);
    out->set_tracecorn_process_change(static_cast<std::uint32_t>(change.change));
    out->set_tracecorn_process_pid(change.pid);
    out->set_tracecorn_process_trace(std::string(change.trace));
    out->set_tracecorn_process_detail(std::string(change.detail));
    write_message(frame, true);
  }

  void write_syscall(events::ThreadId thread, const events::SyscallEvent& call) {
    finish_instruction();
    frame.Clear();
    auto* out = frame.mutable_syscall_frame();
    out->set_address(call.pc.value);
    out->set_thread_id(thread.value);
    out->set_number(call.number);
    auto* args = out->mutable_argument_list();
    for (const std::uint64_t arg : call.args) args->add_elem(static_cast<std::int64_t>(arg));
    for (const std::uint64_t address : call.call_stack) out->add_tracecorn_call_stack(address);
    out->set_tracecorn_result(call.result);
    for (const auto& write : call.memory_writes) {
      auto* effect = out->add_tracecorn_memory_writes();
      effect->set_address(write.address.value);
      effect->set_bytes(write.bytes.data(), write.bytes.size());
    }
    for (const auto& change : call.mapping_changes) {
      auto* effect = out->add_tracecorn_mapping_changes();
      effect->set_kind(static_cast<std::uint32_t>(change.kind));
      effect->set_start(change.start.value);
      effect->set_length(change.length);
      effect->set_prot(change.prot);
    }
    if (!call.register_changes.empty())
      add_register_changes(out->mutable_tracecorn_register_changes(), call.register_changes);
    write_message(frame, true);
  }

  void write_fault(events::ThreadId thread, const events::FaultEvent& fault) {
    finish_instruction();
    frame.Clear();
    auto* out = frame.mutable_exception_frame();
    out->set_exception_number(fault.signal);
    out->set_thread_id(thread.value);
    out->set_from_addr(fault.pc.value);
    out->set_tracecorn_fault_address(fault.address.value);
    out->set_tracecorn_description(std::string(fault.description));
    write_message(frame, true);
  }

  void write_gap(events::ThreadId thread, const events::GapEvent& gap) {
    finish_instruction();
    frame.Clear();
    auto* out = frame.mutable_exception_frame();
    out->set_exception_number(0);
    out->set_thread_id(thread.value);
    out->set_tracecorn_description(std::string(gap.reason));
    out->set_tracecorn_lost_events(gap.lost_events);
    write_message(frame, true);
    known.assign(known.size(), false);  // changes were lost: no register value is certain now
  }

  void write_module(events::ThreadId thread, const events::ModuleLoadEvent& module) {
    finish_instruction();
    frame.Clear();
    auto* out = frame.mutable_modload_frame();
    out->set_module_name(std::string(module.path));
    out->set_low_address(module.start.value);
    out->set_high_address(module.end.value > module.start.value ? module.end.value - 1 : module.start.value);
    out->set_tracecorn_load_bias(module.load_bias);
    if (thread.value) out->set_tracecorn_thread_id(thread.value);  // (absent: 0, a harness's)
    write_message(frame, true);
  }

  void on_exit(events::ThreadId thread, const events::ExitEvent& exit) {
    finish_instruction();
    exit_signal = exit.by_signal ? static_cast<std::uint32_t>(exit.signal) : 0;
    if (!exit.by_signal) {
      ++dropped;  // (the exit_group syscall frame says it)
      return;
    }
    // The death note (frames.proto): what ends the trace, where its last
    // frame may be any instruction (a signal from another process).
    frame.Clear();
    auto* note = frame.mutable_exception_frame();
    note->set_exception_number(exit_signal);
    note->set_thread_id(thread.value);
    note->set_tracecorn_killed(true);
    note->set_tracecorn_description("the process was killed by signal " + std::to_string(exit_signal));
    write_message(frame, true);
  }

  void handle(const events::Event& event) {
    using events::EventKind;
    switch (event.kind) {
      case EventKind::kInstruction:
        return start_instruction(event.thread, std::get<events::InstructionEvent>(event.payload));
      case EventKind::kMemoryRead:
      case EventKind::kMemoryWrite:
        return on_memory(event);
      case EventKind::kRegisters:
        return apply(std::get<events::RegistersEvent>(event.payload).changes);
      case EventKind::kSyscall:
        return write_syscall(event.thread, std::get<events::SyscallEvent>(event.payload));
      case EventKind::kFault:
        return write_fault(event.thread, std::get<events::FaultEvent>(event.payload));
      case EventKind::kGap:
        return write_gap(event.thread, std::get<events::GapEvent>(event.payload));
      case EventKind::kSignal:
        return write_signal(event.thread, std::get<events::SignalEvent>(event.payload));
      case EventKind::kThread:
        return write_thread(event.thread, std::get<events::ThreadEvent>(event.payload));
      case EventKind::kProcess:
        return write_process(event.thread, std::get<events::ProcessEvent>(event.payload));
      case EventKind::kModuleLoad:
        return write_module(event.thread, std::get<events::ModuleLoadEvent>(event.payload));
      case EventKind::kExit:
        return on_exit(event.thread, std::get<events::ExitEvent>(event.payload));
      case EventKind::kBlock:
        return finish_instruction();
    }
  }
};

Expected<std::unique_ptr<FramesWriter>> FramesWriter::open(const std::string& path, const arch::ArchInfo& arch,
                                                           FramesWriterOptions options) {
  if (arch.format_ids.bap_architecture == 0)
    return make_error(ErrorCode::kUnsupported,
                      "bap-frames has no architecture id for " + std::string(arch.name), path);
  if (options.frames_per_toc_entry == 0)
    return make_error(ErrorCode::kInvalidArgument, "frames per TOC entry must be above 0", path);
  auto output = OutputFile::open(path, options.compress_zstd, options.zstd);
  if (!output) return output.error();
  if (!(*output)->seekable())
    return make_error(ErrorCode::kInvalidArgument,
                      "BAP frames need a seekable output file (n and T are patched at the end): give -o FILE", path);
  auto state = std::make_unique<State>(std::move(*output), path, arch, std::move(options));
  auto decoder = arch::InstructionDecoder::open(arch, true);
  if (!decoder) return make_error(ErrorCode::kUnsupported, "Capstone cannot decode " + std::string(arch.name), path);
  state->decoder = std::move(*decoder);
  return std::unique_ptr<FramesWriter>(new FramesWriter(std::move(state)));
}

FramesWriter::FramesWriter(std::unique_ptr<State> state) : state_(std::move(state)) {}
FramesWriter::~FramesWriter() = default;

std::uint64_t FramesWriter::frames_written() const { return state_->frames; }
std::uint64_t FramesWriter::dropped_events() const { return state_->dropped; }
std::uint64_t FramesWriter::bytes_written() const { return state_->offset; }
bool FramesWriter::failed() const { return !state_->error.empty(); }

void FramesWriter::begin(const events::TraceInfo& info) {
  State& s = *state_;
  try {
    std::vector<std::uint8_t> header;
    put_u64(header, bap::kMagic);
    put_u64(header, bap::kVersion);
    put_u64(header, s.arch.format_ids.bap_architecture);
    put_u64(header, s.arch.format_ids.bap_machine);
    put_u64(header, 0);  // n, patched by end()
    put_u64(header, 0);  // T, patched by end()
    if (s.output->compressed()) {
      // The header alone in a raw zstd frame, so that n and T can be patched in place.
      std::vector<std::uint8_t> raw(std::begin(bap::kZstdHeaderFramePrefix), std::end(bap::kZstdHeaderFramePrefix));
      s.header_file_offset = raw.size();
      raw.insert(raw.end(), header.begin(), header.end());
      if (auto problem = s.output->write_raw(raw); !problem.empty()) s.error = s.path + ": write error: " + problem;
      s.offset = header.size();
    } else {
      s.write(header);
    }
    FramesMeta meta;
    if (s.options.meta) {
      meta = *s.options.meta;
    } else {
      meta.tracer_version = s.options.tracer_version;
      meta.target_path = info.program;
      meta.target_args = info.argv;
      (void)collect_host_meta(meta);  // what cannot be read stays empty: the trace is still useful
    }
    if (meta.level.empty()) meta.level = info.level;
    pb::meta_frame meta_frame;
    fill_meta(meta, meta_frame);
    s.write_message(meta_frame, false);
    if (info.has_initial_state && !info.initial_registers.empty()) {
      s.apply(info.initial_registers);
      s.frame.Clear();
      auto* list = s.frame.mutable_key_frame()->mutable_tagged_value_lists()->add_elem();
      list->mutable_value_source_tag()->set_no_thread_id(true);
      auto* values = list->mutable_value_list();
      for (const auto& value : info.initial_registers) {
        if (value.index >= s.registers.size()) continue;
        auto* out = values->add_elem();
        out->mutable_operand_info_specific()->mutable_reg_operand()->set_name(s.names[value.index]);
        const auto& known = s.registers[value.index];
        out->set_bit_length(static_cast<std::int32_t>(known.size) * 8);
        set_no_taint(out->mutable_taint_info());
        out->set_value(known.bytes.data(), known.size);
      }
      s.write_message(s.frame, true);
    }
  } catch (const std::exception& error) {
    if (s.error.empty()) s.error = s.path + ": cannot write the header: " + error.what();
  }
}

void FramesWriter::on_event(const events::Event& event) {
  State& s = *state_;
  if (!s.error.empty()) return;
  try {
    s.handle(event);
  } catch (const std::exception& error) {
    s.error = s.path + ": write error: " + error.what();
  }
}

void FramesWriter::on_events(std::span<const events::Event> events) {
  State& s = *state_;
  try {
    for (const events::Event& event : events) {
      if (!s.error.empty()) return;
      s.handle(event);
    }
  } catch (const std::exception& error) {
    s.error = s.path + ": write error: " + error.what();
  }
}

void FramesWriter::on_instructions(const events::InstructionRun& run) {
  State& s = *state_;
  try {
    for (std::size_t i = 0; i < run.instructions.size(); ++i) {
      if (!s.error.empty()) return;
      const events::InstructionBounds& bounds = run.instructions[i];
      const events::InstructionEvent instruction{bounds.address, bounds.size,
                                                 run.block_bytes.subspan(bounds.offset, bounds.size),
                                                 static_cast<std::uint32_t>(run.first_index + i), run.mode};
      s.start_instruction(run.thread, instruction);
    }
  } catch (const std::exception& error) {
    s.error = s.path + ": write error: " + error.what();
  }
}

void FramesWriter::flush() {
  State& s = *state_;
  if (!s.error.empty() || !s.output) return;
  s.hand_over();
  if (!s.error.empty()) return;
  if (auto problem = s.output->flush(); !problem.empty()) s.error = s.path + ": write error: " + problem;
}

std::string FramesWriter::end(const events::TraceSummary& summary) {
  State& s = *state_;
  if (!s.output) return s.error;
  if (s.error.empty()) {
    try {
      s.finish_instruction();
      if (summary.interrupted) {  // the interruption note (bap_writer.h)
        s.frame.Clear();
        auto* note = s.frame.mutable_exception_frame();
        note->set_exception_number(s.exit_signal);
        note->set_tracecorn_interrupted(true);
        note->set_tracecorn_description("the recording was interrupted");
        s.write_message(s.frame, true);
      }
      const std::uint64_t toc_offset = s.offset;
      std::vector<std::uint8_t> index;
      put_u64(index, s.options.frames_per_toc_entry);
      for (const std::uint64_t entry : s.toc) put_u64(index, entry);
      s.write(index);
      s.hand_over();
      std::vector<std::uint8_t> patch;
      put_u64(patch, s.frames);
      put_u64(patch, toc_offset);
      if (s.error.empty())
        if (auto problem = s.output->patch(s.header_file_offset + bap::kFrameCountOffset, patch); !problem.empty())
          s.error = s.path + ": write error: " + problem;
    } catch (const std::exception& error) {
      s.error = s.path + ": write error: " + error.what();
    }
  }
  const std::string close_error = s.output->close();
  s.output.reset();
  if (s.error.empty() && !close_error.empty()) s.error = s.path + ": write error: " + close_error;
  return s.error;
}

}  // namespace tracecorn::formats
