// Role: implementation of the BAP frames writer (see bap_writer.h, bap_layout.h).
#include "formats/bap/bap_writer.h"

#include <algorithm>
#include <cctype>
#include <optional>
#include <system_error>
#include <unordered_map>
#include <vector>

#include "formats/bap/bap_layout.h"
#include "formats/bap/frames_wire.h"
#include "formats/bap/instruction_frames.h"
#include "formats/common/byte_stream.h"
#include "formats/common/ordered_jobs.h"
#include "frames.pb.h"

namespace tracecorn::formats {

namespace pb = frames_pb;

namespace {

void put_u64(std::vector<std::uint8_t>& out, std::uint64_t value) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<std::uint8_t>(value >> (8 * i)));
}

// Frames are staged and handed to the output file (zstd's stream, stdio) this
// many bytes at a time, not one call per frame.
constexpr std::size_t kStagedBytes = 1 << 20;

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

// A chunk of the trace for an encoder thread: what the drain thread handed
// the writer, and what the encoder made of it.
struct EncodedChunk {
  bap::FrameInputs inputs;
  ByteBuffer out;                          // the frames, back to back
  std::vector<std::uint64_t> frame_starts;  // where each counted frame begins in `out`
  std::uint64_t dropped = 0;
  bap::KnownRegisters end;  // the register state after the chunk
  std::string error;
};

// How many chunks per encoder thread may be in flight (memory: a chunk's
// frames are about 5 times its inputs, FramesWriterOptions::encoder_chunk_bytes).
constexpr std::size_t kChunksInFlightPerThread = 2;

}  // namespace

struct FramesWriter::State {
  std::unique_ptr<OutputFile> output;
  std::string path;
  const arch::ArchInfo& arch;
  FramesWriterOptions options;
  std::string error;  // the first write error, reported by end()

  std::uint64_t header_file_offset = 0;  // where the 48 header bytes sit in the file (9 inside the raw zstd frame)
  std::uint64_t offset = 0;              // bytes of the (decompressed) file handed to the output so far
  std::uint64_t frames = 0;              // n
  std::vector<std::uint64_t> toc;
  std::uint64_t frames_to_toc_entry = 0;  // counted frames until the next one starts a TOC entry
  std::uint64_t dropped = 0;
  std::uint32_t exit_signal = 0;  // of the exit event, for the interruption note

  std::vector<std::string> names;  // upper-case register names, arch table order
  std::shared_ptr<const std::vector<bap::RegisterOperandEncoder>> register_operands;  // each one's operand_info
  // Encodes the frames on this thread; with encoder threads, it keeps the
  // register state the next chunk starts from and writes the frames of
  // begin() and end().
  std::unique_ptr<bap::InstructionFrames> here;
  pb::frame frame;  // the other frames, built with the generated code
  std::vector<std::uint8_t> serialised;  // a frame for a chunk's inputs

  // Encoder threads (FramesWriterOptions::encoder_threads), each with its own InstructionFrames.
  std::vector<std::unique_ptr<bap::InstructionFrames>> encoder_frames;
  std::unique_ptr<OrderedJobs<EncodedChunk>> encoders;
  std::unique_ptr<EncodedChunk> filling;  // the chunk being filled
  std::vector<std::unique_ptr<EncodedChunk>> spare;

  State(std::unique_ptr<OutputFile> out, std::string file, const arch::ArchInfo& info, FramesWriterOptions opts)
      : output(std::move(out)), path(std::move(file)), arch(info), options(std::move(opts)) {
    auto operands = std::make_shared<std::vector<bap::RegisterOperandEncoder>>();
    for (const auto& reg : arch.registers) {
      std::string name(reg.name);
      for (char& c : name) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
      operands->emplace_back(name, std::min<std::size_t>(reg.size, 16));
      names.push_back(std::move(name));
    }
    register_operands = std::move(operands);
  }

  const events::RegisterValue& register_value(std::uint16_t index) const { return here->registers().values[index]; }

  // Hands the frames encoded (by `out`'s encoder) to the output file: the TOC
  // gets the offsets of every m-th counted frame.
  void hand_over(ByteBuffer& out, std::vector<std::uint64_t>& frame_starts) {
    for (const std::uint64_t start : frame_starts) {
      if (frames_to_toc_entry == 0) {
        toc.push_back(offset + start);
        frames_to_toc_entry = options.frames_per_toc_entry;
      }
      --frames_to_toc_entry;
      ++frames;
    }
    frame_starts.clear();
    if (out.empty()) return;
    if (error.empty())
      if (auto problem = output->write(out.bytes()); !problem.empty()) error = path + ": write error: " + problem;
    offset += out.size();
    out.clear();
  }
  void hand_over() { hand_over(here->out(), here->frame_starts()); }

  // Frames go to the file a MiB at a time, not one call per frame.
  void hand_over_when_staged() {
    if (here->out().size() >= kStagedBytes) hand_over();
  }

  void write(std::span<const std::uint8_t> bytes) {
    if (error.empty()) here->out().append(bytes);
  }

  void write_message(const google::protobuf::MessageLite& message, bool counted) {
    if (!error.empty()) return;
    const std::size_t size = message.ByteSizeLong();
    if (encoders && counted) {  // after the chunk's pending instruction (FrameInputs::add_frame)
      serialised.resize(size);
      message.SerializeWithCachedSizesToArray(serialised.data());
      filling->inputs.add_frame(serialised);
      return;
    }
    message.SerializeWithCachedSizesToArray(here->stage_frame(size, counted));
    hand_over_when_staged();
  }

  void finish_instruction() { here->finish_instruction(); }
  void apply(std::span<const events::RegisterValue> values) { here->apply(values); }

  // A register operand in the generated code's messages (the rarer frames' register changes).
  void add_register(pb::operand_value_list* list, std::uint16_t index, bool written, bool is_base, bool is_index) {
    auto* operand = list->add_elem();
    operand->mutable_operand_info_specific()->mutable_reg_operand()->set_name(names[index]);
    const events::RegisterValue& value = register_value(index);
    operand->set_bit_length(static_cast<std::int32_t>(value.size) * 8);
    auto* usage = operand->mutable_operand_usage();
    usage->set_read(!written);
    usage->set_written(written);
    usage->set_index(is_index);
    usage->set_base(is_base);
    set_no_taint(operand->mutable_taint_info());
    operand->set_value(value.bytes.data(), value.size);
  }

  // Registers a signal or a thread switch set, into `list` (and the known state).
  void add_register_changes(pb::operand_value_list* list, std::span<const events::RegisterValue> values) {
    apply(values);
    for (const auto& value : values)
      if (value.index < arch.registers.size()) add_register(list, value.index, true, false, false);
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
    here->forget_registers();  // changes were lost: no register value is certain now
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

  // The frames of one event, encoded on this thread.
  void handle(const events::Event& event) {
    using events::EventKind;
    switch (event.kind) {
      case EventKind::kInstruction:
        return here->start_instruction(event.thread, std::get<events::InstructionEvent>(event.payload));
      case EventKind::kMemoryRead:
      case EventKind::kMemoryWrite:
        return here->on_memory(std::get<events::MemoryEvent>(event.payload), event.kind == EventKind::kMemoryWrite);
      case EventKind::kRegisters:
        return apply(std::get<events::RegistersEvent>(event.payload).changes);
      case EventKind::kBlock:
        return finish_instruction();
      default:
        return write_other(event);
    }
  }

  // The frames of the rarer events (built with the generated code).
  void write_other(const events::Event& event) {
    using events::EventKind;
    switch (event.kind) {
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
      default:
        return;
    }
  }

  // ---- With encoder threads: the drain thread records each event into the
  // chunk being filled (the rarer frames encoded here, with the register
  // changes they carry), and the encoders make the frames.

  // One event into the chunk being filled. A chunk is handed to the encoders
  // before an event that ends the pending instruction, never between an
  // instruction and its accesses or register changes (instruction_frames.h).
  void record(const events::Event& event) {
    using events::EventKind;
    bap::FrameInputs& inputs = filling->inputs;
    switch (event.kind) {
      case EventKind::kMemoryRead:
      case EventKind::kMemoryWrite:
        return inputs.add_memory(std::get<events::MemoryEvent>(event.payload), event.kind == EventKind::kMemoryWrite);
      case EventKind::kRegisters: {
        const auto& changes = std::get<events::RegistersEvent>(event.payload).changes;
        inputs.add_registers(changes);
        return apply(changes);  // the state the next chunk starts from
      }
      default:
        break;
    }
    submit_when_full();
    bap::FrameInputs& next = filling->inputs;
    switch (event.kind) {
      case EventKind::kInstruction: {
        const auto& instruction = std::get<events::InstructionEvent>(event.payload);
        clear_full_decode_cache();
        return filling->inputs.add_instruction(
            event.thread, instruction, here->decode(instruction.address.value, instruction.mode, instruction.bytes));
      }
      case EventKind::kBlock:
        return next.add_block();
      case EventKind::kExit:
        next.add_block();  // (ends the pending instruction, as on_exit does)
        return write_other(event);
      default:
        break;
    }
    write_other(event);  // its frame (FrameInputs::add_frame), then what it changed
    std::span<const events::RegisterValue> changes;
    if (const auto* call = std::get_if<events::SyscallEvent>(&event.payload)) changes = call->register_changes;
    if (const auto* signal = std::get_if<events::SignalEvent>(&event.payload)) changes = signal->register_changes;
    if (const auto* thread = std::get_if<events::ThreadEvent>(&event.payload)) changes = thread->registers;
    if (!changes.empty()) next.add_registers(changes);
    if (event.kind == EventKind::kGap) next.add_forget_registers();
  }

  void record_run(const events::InstructionRun& run) {
    if (run.instructions.empty()) return;
    submit_when_full();
    clear_full_decode_cache();
    filling->inputs.add_instructions(run, *here);
  }

  // The decode cache (which the chunks' instructions point into) emptied when
  // full, once every chunk recorded so far is encoded: before an instruction.
  void clear_full_decode_cache() {
    if (!here->decode_cache_full()) return;
    submit();
    while (auto done = encoders->take_oldest(true)) take(std::move(done));
    here->clear_decode_cache();
  }

  void submit_when_full() {
    if (filling->inputs.size() >= options.encoder_chunk_bytes) submit();
  }

  // Hands the chunk being filled to the encoders (waiting for the oldest when
  // too many are in flight) and starts the next from the register state now.
  void submit() {
    if (filling->inputs.empty()) return;
    encoders->submit(std::move(filling));
    filling = spare_chunk();
    filling->inputs.start = here->registers();
    const std::size_t most = kChunksInFlightPerThread * encoders->threads();
    while (auto done = encoders->take_oldest(encoders->outstanding() > most)) take(std::move(done));
  }

  std::unique_ptr<EncodedChunk> spare_chunk() {
    if (spare.empty()) return std::make_unique<EncodedChunk>();
    auto chunk = std::move(spare.back());
    spare.pop_back();
    return chunk;
  }

  // An encoded chunk's frames to the file, in order.
  void take(std::unique_ptr<EncodedChunk> chunk) {
    if (!chunk->error.empty() && error.empty()) error = path + ": write error: " + chunk->error;
    hand_over(chunk->out, chunk->frame_starts);
    dropped += chunk->dropped;
    chunk->inputs.clear();
    spare.push_back(std::move(chunk));
  }

  // On an encoder thread.
  void encode(EncodedChunk& chunk, std::size_t worker) noexcept {
    try {
      bap::InstructionFrames& encoder = *encoder_frames[worker];
      encoder.encode(chunk.inputs);
      std::swap(encoder.out(), chunk.out);
      std::swap(encoder.frame_starts(), chunk.frame_starts);
      encoder.out().clear();
      encoder.frame_starts().clear();
      chunk.dropped = encoder.take_dropped();
      chunk.end = encoder.registers();
    } catch (const std::exception& problem) {
      chunk.error = problem.what();
    }
  }

  // Everything recorded so far encoded and handed to the file, bar the items
  // of the instruction not finished yet, which start the next chunk.
  void encode_all_finished() {
    bap::FrameInputs& inputs = filling->inputs;
    const std::size_t finished = inputs.unfinished_from();
    std::unique_ptr<EncodedChunk> rest;
    if (finished > 0 && finished < inputs.size()) {
      rest = spare_chunk();
      inputs.split_at(finished, rest->inputs);
    }
    const bool submitted = finished > 0;
    if (submitted) {
      encoders->submit(std::move(filling));
      filling = rest ? std::move(rest) : spare_chunk();
    }
    std::optional<bap::KnownRegisters> last_end;
    while (auto done = encoders->take_oldest(true)) {
      last_end = done->end;
      take(std::move(done));
    }
    // The unfinished instruction's chunk starts where the last one ended.
    if (submitted && last_end) filling->inputs.start = std::move(*last_end);
  }

  // The encoder threads, each with its own InstructionFrames (the
  // instructions come decoded by `here`); without them (a thread that cannot
  // be started) the frames are encoded on this thread.
  void start_encoders() {
    try {
      for (unsigned i = 0; i < options.encoder_threads; ++i)
        encoder_frames.push_back(bap::InstructionFrames::open_encoder(arch, register_operands));
      filling = spare_chunk();
      filling->inputs.start = here->registers();
      encoders = std::make_unique<OrderedJobs<EncodedChunk>>(
          options.encoder_threads, [this](EncodedChunk& chunk, std::size_t worker) { encode(chunk, worker); });
    } catch (const std::system_error&) {
      encoders.reset();
      encoder_frames.clear();
      filling.reset();
    }
  }

  // Every chunk encoded and handed to the file, and the encoders stopped:
  // what end() writes after it is encoded here.
  void stop_encoders() {
    if (!encoders) return;
    encode_all_finished();
    if (!filling->inputs.empty()) {  // the last instruction's items: no more events will come
      encoders->submit(std::move(filling));
      take(encoders->take_oldest(true));
    }
    encoders.reset();
    encoder_frames.clear();
    filling.reset();
    spare.clear();
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
  auto here = bap::InstructionFrames::open(arch, state->register_operands);
  if (!here) return make_error(here.error().code, here.error().message, path);
  state->here = std::move(*here);
  return std::unique_ptr<FramesWriter>(new FramesWriter(std::move(state)));
}

FramesWriter::FramesWriter(std::unique_ptr<State> state) : state_(std::move(state)) {}
FramesWriter::~FramesWriter() = default;

std::uint64_t FramesWriter::frames_written() const { return state_->frames; }
std::uint64_t FramesWriter::dropped_events() const { return state_->dropped + state_->here->dropped(); }
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
        if (value.index >= s.arch.registers.size()) continue;
        auto* out = values->add_elem();
        out->mutable_operand_info_specific()->mutable_reg_operand()->set_name(s.names[value.index]);
        const auto& known = s.register_value(value.index);
        out->set_bit_length(static_cast<std::int32_t>(known.size) * 8);
        set_no_taint(out->mutable_taint_info());
        out->set_value(known.bytes.data(), known.size);
      }
      s.write_message(s.frame, true);
    }
    s.hand_over();
  } catch (const std::exception& error) {
    if (s.error.empty()) s.error = s.path + ": cannot write the header: " + error.what();
  }
  if (s.options.encoder_threads >= 2 && s.error.empty()) s.start_encoders();
}

void FramesWriter::on_event(const events::Event& event) { on_events({&event, 1}); }

void FramesWriter::on_events(std::span<const events::Event> events) {
  State& s = *state_;
  try {
    for (const events::Event& event : events) {
      if (!s.error.empty()) return;
      if (s.encoders)
        s.record(event);
      else
        s.handle(event);
    }
    if (!s.encoders) s.hand_over_when_staged();
  } catch (const std::exception& error) {
    s.error = s.path + ": write error: " + error.what();
  }
}

void FramesWriter::on_instructions(const events::InstructionRun& run) {
  State& s = *state_;
  if (!s.error.empty()) return;
  try {
    if (s.encoders) return s.record_run(run);
    s.here->start_instructions(run);
    s.hand_over_when_staged();
  } catch (const std::exception& error) {
    s.error = s.path + ": write error: " + error.what();
  }
}

void FramesWriter::flush() {
  State& s = *state_;
  if (!s.error.empty() || !s.output) return;
  try {
    if (s.encoders) s.encode_all_finished();
    s.hand_over();
  } catch (const std::exception& error) {
    s.error = s.path + ": write error: " + error.what();
  }
  if (!s.error.empty()) return;
  if (auto problem = s.output->flush(); !problem.empty()) s.error = s.path + ": write error: " + problem;
}

std::string FramesWriter::end(const events::TraceSummary& summary) {
  State& s = *state_;
  if (!s.output) return s.error;
  if (s.error.empty()) {
    try {
      s.stop_encoders();
      s.finish_instruction();
      if (summary.interrupted) {  // the interruption note (bap_writer.h)
        s.frame.Clear();
        auto* note = s.frame.mutable_exception_frame();
        note->set_exception_number(s.exit_signal);
        note->set_tracecorn_interrupted(true);
        note->set_tracecorn_description("the recording was interrupted");
        s.write_message(s.frame, true);
      }
      s.hand_over();
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
  s.encoders.reset();  // (after a write error: the chunks in flight are dropped)
  const std::string close_error = s.output->close();
  s.output.reset();
  if (s.error.empty() && !close_error.empty()) s.error = s.path + ": write error: " + close_error;
  return s.error;
}

}  // namespace tracecorn::formats
