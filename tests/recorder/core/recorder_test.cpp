// Role: behaviour tests of the recorder on real guest programs from samples/:
// register diffs against a brute-force comparison of the whole register file
// after every instruction, memory attribution at `mem` level against the exact
// pcs of `full`, agreement of the levels, syscall effects, the flight recorder,
// and several recorders at once on several threads.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstring>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "recorder/session/process_recording.h"
#include "recorder/core/recorder.h"
#include "recorder/linux/linux_process.h"

using namespace tracecorn;

namespace {

const std::string kSamples = TRACECORN_SAMPLES_DIR;

// An event copied out of the sink call (spans are only valid during the call).
struct StoredEvent {
  events::EventKind kind;
  std::uint64_t sequence = 0;
  std::uint64_t address = 0;  // block/insn/memory address, syscall/fault pc
  std::uint64_t pc = 0;       // memory: the attributed instruction; registers: the instruction
  bool pc_known = false;
  std::uint64_t value = 0;
  std::uint64_t number = 0;
  std::uint8_t mode = 0;  // block/insn: instruction set (arm: 1 = Thumb)
  std::uint16_t first_halfword = 0;  // insn: its first two bytes, little endian (arm: spots IT instructions)
  std::vector<events::RegisterValue> registers;
  std::vector<std::pair<std::uint64_t, std::vector<std::uint8_t>>> memory_writes;
  std::uint32_t thread = 0;
};

class ProbeSink final : public events::Sink {
 public:
  void begin(const events::TraceInfo&) override {}
  void on_event(const events::Event& event) override {
    StoredEvent stored;
    stored.kind = event.kind;
    stored.sequence = event.sequence.value;
    stored.thread = event.thread.value;
    std::visit(
        [&](const auto& payload) {
          using T = std::decay_t<decltype(payload)>;
          if constexpr (std::is_same_v<T, events::BlockEvent> || std::is_same_v<T, events::InstructionEvent>) {
            stored.address = payload.address.value;
            stored.mode = payload.mode;
            if constexpr (std::is_same_v<T, events::BlockEvent>) stored.number = payload.instruction_count;
            if constexpr (std::is_same_v<T, events::InstructionEvent>)
              if (payload.bytes.size() >= 2)
                stored.first_halfword = static_cast<std::uint16_t>(payload.bytes[0] | payload.bytes[1] << 8);
          } else if constexpr (std::is_same_v<T, events::MemoryEvent>) {
            stored.address = payload.address.value;
            stored.pc = payload.pc.value;
            stored.pc_known = payload.pc_known;
            stored.value = payload.value;
          } else if constexpr (std::is_same_v<T, events::RegistersEvent>) {
            stored.pc = payload.pc.value;
            stored.registers.assign(payload.changes.begin(), payload.changes.end());
          } else if constexpr (std::is_same_v<T, events::SyscallEvent>) {
            stored.address = payload.pc.value;
            stored.number = payload.number;
            stored.registers.assign(payload.register_changes.begin(), payload.register_changes.end());
            for (const auto& write : payload.memory_writes)
              stored.memory_writes.push_back({write.address.value, {write.bytes.begin(), write.bytes.end()}});
          } else if constexpr (std::is_same_v<T, events::FaultEvent>) {
            stored.address = payload.pc.value;
            stored.value = payload.address.value;
          } else if constexpr (std::is_same_v<T, events::SignalEvent>) {
            stored.address = payload.handler.value;
            stored.pc = payload.interrupted_pc.value;
            stored.pc_known = payload.fault;
            stored.number = payload.signal;
            stored.registers.assign(payload.register_changes.begin(), payload.register_changes.end());
            for (const auto& write : payload.frame_writes)
              stored.memory_writes.push_back({write.address.value, {write.bytes.begin(), write.bytes.end()}});
          } else if constexpr (std::is_same_v<T, events::ThreadEvent>) {
            stored.number = static_cast<std::uint64_t>(payload.change);
            stored.value = payload.from.value;
            stored.registers.assign(payload.registers.begin(), payload.registers.end());
          }
        },
        event.payload);
    stored_.push_back(std::move(stored));
  }
  void flush() override { stored_at_flush_.push_back(stored_.size()); }
  std::string end(const events::TraceSummary& summary) override {
    summary_ = summary;
    return "";
  }
  std::vector<std::size_t> stored_at_flush_;  // events stored at each flush()
  std::vector<StoredEvent> stored_;
  events::TraceSummary summary_;
};

// Brute force: reads the whole register file before every instruction and keeps
// what changed since the previous instruction (rip aside: it is implied by the
// instruction sequence), i.e. the changes made by the previous instruction.
// On arm it also keeps CPSR before each instruction (`flags`).
struct FullRegisterProbe {
  using Changes = std::map<std::uint16_t, std::vector<std::uint8_t>>;
  const arch::ArchInfo* arch = nullptr;
  std::vector<std::array<std::uint8_t, 16>> previous;
  std::vector<std::pair<std::uint64_t, Changes>> changes_by_instruction;  // (instruction pc, its changes)
  std::vector<std::uint32_t> flags;  // arm: CPSR before each hooked instruction, in hook order
  std::uint64_t previous_pc = 0;
  static void on_code(uc_engine* engine, std::uint64_t address, std::uint32_t, void* user) {
    auto* self = static_cast<FullRegisterProbe*>(user);
    std::vector<std::array<std::uint8_t, 16>> file(self->arch->registers.size());
    for (std::size_t i = 0; i < file.size(); ++i) uc_reg_read(engine, self->arch->registers[i].uc_id, file[i].data());
    if (const auto* cpsr = self->arch->find_register("cpsr")) {
      std::uint32_t value = 0;
      std::memcpy(&value, file[static_cast<std::size_t>(cpsr - self->arch->registers.data())].data(), 4);
      self->flags.push_back(value);
    }
    if (!self->previous.empty()) {
      Changes changes;
      for (std::size_t i = 0; i < file.size(); ++i) {
        const auto& info = self->arch->registers[i];
        if (info.uc_id == self->arch->pc_reg) continue;
        if (std::memcmp(file[i].data(), self->previous[i].data(), info.size) != 0)
          changes[static_cast<std::uint16_t>(i)] = std::vector<std::uint8_t>(file[i].begin(), file[i].begin() + info.size);
      }
      self->changes_by_instruction.push_back({self->previous_pc, std::move(changes)});
    }
    self->previous = std::move(file);
    self->previous_pc = address;
  }
};

struct Recording {
  ProbeSink sink;
  std::unique_ptr<linux_layer::LinuxProcess> process;
  std::unique_ptr<core::Recorder> recorder;
  linux_layer::RunOutcome outcome;
};

void fix_at_random(linux_layer::LinuxProcess& process);

// Forwards to the recorder's glue; after each getrandom, overwrites the bytes
// the host gave the guest with fixed ones (the syscall event keeps the host's),
// so that two runs of a program compute the same values.
class FixedRandomGlue final : public linux_layer::ProcessObserver {
 public:
  FixedRandomGlue(session::ProcessRecording& glue, uc_engine* engine) : glue_(glue), engine_(engine) {}
  void on_syscall_enter(std::uint64_t pc, std::uint64_t number) noexcept override { glue_.on_syscall_enter(pc, number); }
  void on_memory_written(std::uint64_t address, std::span<const std::uint8_t> bytes) noexcept override {
    glue_.on_memory_written(address, bytes);
  }
  void on_mapping_changed(const events::MappingEffect& change) noexcept override { glue_.on_mapping_changed(change); }
  void on_syscall(std::uint64_t pc, std::uint64_t number, arch::SyscallId id, const std::uint64_t (&args)[6],
                  std::int64_t result) noexcept override {
    glue_.on_syscall(pc, number, id, args, result);
    if (id != arch::SyscallId::getrandom || result <= 0) return;
    const std::vector<std::uint8_t> fixed(static_cast<std::size_t>(result), 0x5a);
    uc_mem_write(engine_, args[0], fixed.data(), fixed.size());
  }
  void on_module_loaded(std::uint64_t start, std::uint64_t end, std::uint64_t load_bias,
                        std::string_view path) noexcept override {
    glue_.on_module_loaded(start, end, load_bias, path);
  }

 private:
  session::ProcessRecording& glue_;
  uc_engine* engine_;
};

// `deterministic`: AT_RANDOM and getrandom's bytes fixed (fix_at_random, FixedRandomGlue).
std::unique_ptr<Recording> record(const std::string& program, core::RecorderOptions options,
                                  FullRegisterProbe* probe = nullptr, std::vector<std::string> argv = {},
                                  bool deterministic = false) {
  auto result = std::make_unique<Recording>();
  linux_layer::ProcessConfig config;
  config.program = program;
  config.argv = argv.empty() ? std::vector<std::string>{program} : argv;
  config.envp = {"LC_ALL=C"};
  config.diagnostics = nullptr;
  auto process = linux_layer::LinuxProcess::create(config);
  REQUIRE(process.has_value());
  result->process = std::move(*process);
  auto recorder = core::Recorder::attach(result->process->engine(), result->process->arch(), options,
                                         {&result->sink}, events::TraceInfo{});
  REQUIRE(recorder.has_value());
  result->recorder = std::move(*recorder);
  uc_hook probe_hook = 0;
  if (probe) {
    probe->arch = &result->process->arch();
    uc_hook_add(result->process->engine(), &probe_hook, UC_HOOK_CODE,
                reinterpret_cast<void*>(&FullRegisterProbe::on_code), probe, 1, 0);
  }
  session::ProcessRecording glue(*result->recorder);
  FixedRandomGlue fixed(glue, result->process->engine());
  if (deterministic) fix_at_random(*result->process);
  result->process->set_observer(deterministic ? static_cast<linux_layer::ProcessObserver*>(&fixed) : &glue);
  result->outcome = result->process->run();
  result->process->set_observer(nullptr);
  if (probe_hook) uc_hook_del(result->process->engine(), probe_hook);
  glue.finish_run(result->outcome);
  if (options.policy == core::RingPolicy::kLossless) CHECK(result->recorder->finish().empty());
  return result;
}

// The memory events of a recording, in order.
std::vector<const StoredEvent*> memory_accesses(const Recording& recording) {
  std::vector<const StoredEvent*> accesses;
  for (const auto& event : recording.sink.stored_)
    if (event.kind == events::EventKind::kMemoryRead || event.kind == events::EventKind::kMemoryWrite)
      accesses.push_back(&event);
  return accesses;
}

// Whether arm condition `cond` (A8.3) holds for CPSR `flags`.
bool condition_holds(unsigned cond, std::uint32_t flags) {
  const bool n = flags >> 31 & 1, z = flags >> 30 & 1, c = flags >> 29 & 1, v = flags >> 28 & 1;
  bool result = true;
  switch (cond >> 1) {
    case 0: result = z; break;
    case 1: result = c; break;
    case 2: result = n; break;
    case 3: result = v; break;
    case 4: result = c && !z; break;
    case 5: result = n == v; break;
    case 6: result = !z && n == v; break;
    default: return true;
  }
  return (cond & 1) && cond != 15 ? !result : result;
}

// Unicorn 2.0.1 runs no UC_HOOK_CODE for a Thumb instruction inside an IT block
// whose condition fails (its hook sits in the skipped code; ARM-state
// conditional instructions do get it), while the recorder counts it: the
// architecture executes it as a no-op. This walks the recorded instructions
// beside the hooked ones and accepts a recorded instruction the hook did not
// see only when it is Thumb, in the block of an IT instruction before it
// (0xbfXY, Y != 0), and its condition (ITSTATE = firstcond:mask, A7.3.3) fails
// on the flags the probe read before the next hooked instruction.
struct AlignedInstruction {
  std::uint64_t pc;
  FullRegisterProbe::Changes changes;
  std::size_t probe_index;  // the hooked instruction it is (SIZE_MAX: skipped)
};

std::vector<AlignedInstruction> align_with_probe(const Recording& recording, const FullRegisterProbe& probe,
                                                 std::size_t& skipped, std::string& problem) {
  const auto& arch = recording.process->arch();
  std::vector<AlignedInstruction> out;
  std::size_t hooked = 0;
  unsigned itstate = 0;
  skipped = 0;
  const std::size_t hook_count = probe.changes_by_instruction.size() + 1;
  auto hook_pc = [&](std::size_t j) {
    return j < probe.changes_by_instruction.size() ? probe.changes_by_instruction[j].first : probe.previous_pc;
  };
  for (const auto& event : recording.sink.stored_) {
    if (event.kind == events::EventKind::kInstruction) {
      const unsigned cond = itstate >> 4;
      const bool in_it = itstate != 0;
      if (in_it) itstate = (itstate & 7) == 0 ? 0 : (itstate & 0xe0) | ((itstate << 1) & 0x1f);
      if (event.mode == 1 && (event.first_halfword & 0xff00) == 0xbf00 && (event.first_halfword & 0xf) != 0)
        itstate = event.first_halfword & 0xff;
      if (hooked < hook_count && hook_pc(hooked) == event.address) {
        out.push_back({event.address, {}, hooked++});
        continue;
      }
      const bool explained = event.mode == 1 && in_it && hooked < probe.flags.size() &&
                             !condition_holds(cond, probe.flags[hooked]);
      if (!explained && problem.empty())
        problem = "recorded instruction at pc " + std::to_string(event.address) + " has no UC_HOOK_CODE run";
      ++skipped;
      out.push_back({event.address, {}, SIZE_MAX});
    } else if ((event.kind == events::EventKind::kRegisters || event.kind == events::EventKind::kSyscall) &&
               !out.empty()) {
      for (const auto& value : event.registers) {
        if (arch.registers[value.index].uc_id == arch.pc_reg) continue;
        out.back().changes[value.index] = std::vector<std::uint8_t>(value.bytes.begin(), value.bytes.begin() + value.size);
      }
    }
  }
  if (hooked != hook_count && problem.empty())
    problem = std::to_string(hook_count - hooked) + " hooked instructions were not recorded";
  return out;
}

// Compares, instruction by instruction, the register changes the events report
// (registers events, and a syscall's register changes) with the brute-force
// changes. Returns the number of instructions that differ and describes the first.
std::size_t compare_register_changes(const Recording& recording, const FullRegisterProbe& probe, std::string& first) {
  const auto& arch = recording.process->arch();
  std::size_t skipped = 0;
  std::string problem;
  const auto recorded = align_with_probe(recording, probe, skipped, problem);
  CHECK_MESSAGE(problem.empty(), problem);
  // The probe sees instruction k's changes at instruction k+1: the last one has none to compare.
  std::size_t differing = 0;
  for (const auto& instruction : recorded) {
    const bool skipped_one = instruction.probe_index == SIZE_MAX;
    if (!skipped_one && instruction.probe_index >= probe.changes_by_instruction.size()) continue;
    const FullRegisterProbe::Changes none;
    const auto& expected = skipped_one ? none : probe.changes_by_instruction[instruction.probe_index].second;
    if (instruction.changes != expected) {
      if (first.empty()) {
        first = "instruction at pc " + std::to_string(instruction.pc) + ": expected changes to";
        for (const auto& [index, bytes] : expected) first += " " + std::string(arch.registers[index].name);
        first += "; recorded";
        for (const auto& [index, bytes] : instruction.changes) first += " " + std::string(arch.registers[index].name);
      }
      ++differing;
    }
  }
  return differing;
}


// Records `program` at the regs level (with `options`' other settings) beside
// `probe`, a UC_HOOK_CODE that reads every register after every instruction,
// and checks that the guest exited and the recorded changes equal the probe's.
// Registers are derived where the recorder can (derive_registers, as the CLI
// records: x86 only), so the comparison checks the derived values too.
// Returns the recording for further checks.
std::unique_ptr<Recording> check_regs_against_brute_force(const std::string& program, FullRegisterProbe& probe,
                                                          core::RecorderOptions options = {}) {
  options.level = core::TraceLevel::kRegisters;
  options.derive_registers = true;
  auto recording = record(program, options, &probe);
  CHECK(recording->outcome.kind == linux_layer::RunOutcome::Kind::kExited);
  std::string first;
  const std::size_t differing = compare_register_changes(*recording, probe, first);
  CHECK_MESSAGE(differing == 0, first);
  return recording;
}

// The brute-force comparison on x86 samples of `directory`, with derived
// values: most values came from the recipes (arch/derived_registers.h), which the
// comparison checks against Unicorn after every instruction; at least
// 1/`min_share` of the instructions must have been derived.
void check_x86_brute_force_with_derived_values(const std::string& directory, std::uint64_t min_share) {
  for (const std::string sample : {"hello", "floating", "dup_pipe", "nested_calls", "file_io"}) {
    CAPTURE(sample);
    FullRegisterProbe probe;
    auto recording = check_regs_against_brute_force(directory + "/" + sample, probe);
    const auto stats = recording->recorder->stats();
    MESSAGE(sample << ": writes derived for " << stats.registers_derived << " of " << stats.instructions
                   << " instructions");
    CHECK(stats.registers_derived * min_share > stats.instructions);
  }
}

}  // namespace

TEST_CASE("Recorder: regs-level diffs match a brute-force comparison of every register after every instruction") {
  check_x86_brute_force_with_derived_values(kSamples + "/static", 4);
}

TEST_CASE("Recorder: i386 regs-level diffs match a brute-force comparison, with derived values") {
  check_x86_brute_force_with_derived_values(kSamples + "-i386/static", 5);
}

namespace {

// Records each program at `mem` and at `full` level: the same accesses, each
// attributed at `mem` to the instruction the full level's exact pcs name (or
// left unattributed: at most `max_unknown_percent`).
void check_mem_attribution(const std::vector<std::string>& programs, std::size_t max_unknown_percent = 1) {
  core::RecorderOptions mem_options, full_options;
  mem_options.level = core::TraceLevel::kMemory;
  full_options.level = core::TraceLevel::kFull;
  for (const std::string& program : programs) {
    CAPTURE(program);
    std::vector<std::string> argv = {program};
    auto mem = record(program, mem_options, nullptr, argv);
    auto full = record(program, full_options, nullptr, argv);
    const auto mem_accesses = memory_accesses(*mem), full_accesses = memory_accesses(*full);
    REQUIRE(mem_accesses.size() == full_accesses.size());
    std::size_t unknown = 0, wrong = 0;
    for (std::size_t i = 0; i < mem_accesses.size(); ++i) {
      CHECK(mem_accesses[i]->address == full_accesses[i]->address);
      CHECK(full_accesses[i]->pc_known);
      if (!mem_accesses[i]->pc_known)
        ++unknown;
      else if (mem_accesses[i]->pc != full_accesses[i]->pc && ++wrong <= 3)
        MESSAGE("access " << i << " to " << std::hex << full_accesses[i]->address << " by pc " << full_accesses[i]->pc
                          << " attributed to " << mem_accesses[i]->pc << std::dec);
      if (!mem_accesses[i]->pc_known && unknown <= 3)
        MESSAGE("access " << i << " to " << std::hex << full_accesses[i]->address << " by pc " << full_accesses[i]->pc
                          << " not attributed" << std::dec);
    }
    MESSAGE(program << ": " << mem_accesses.size() << " accesses, " << unknown << " not attributed");
    CHECK(mem_accesses.size() > 1000);
    CHECK(wrong == 0);
    CHECK(unknown * 100 <= mem_accesses.size() * max_unknown_percent);
  }
}

}  // namespace

// The producer collects register changes in batches of at most one ring record;
// with the smallest ring a record holds 496 bytes, so batches are cut every few
// instructions and an instruction that may write over 20 registers is written
// alone (kRegisters). The events must not change.
TEST_CASE("Recorder: regs-level diffs match the brute-force comparison with the smallest ring too") {
  FullRegisterProbe probe;
  core::RecorderOptions options;
  options.ring_bytes = 4096;
  auto recording = check_regs_against_brute_force(kSamples + "/static/floating", probe, options);
  CHECK(recording->recorder->stats().records_lost == 0);
}

TEST_CASE("Recorder: mem-level attribution agrees with the exact pcs of the full level") {
  check_mem_attribution({kSamples + "/static/hello", kSamples + "/static/floating", kSamples + "/static/dup_pipe"});
}

TEST_CASE("Recorder: every level counts the same instructions, and insns expands exactly the blocks") {
  std::uint64_t expected = 0;
  for (auto level : {core::TraceLevel::kBlocks, core::TraceLevel::kInstructions, core::TraceLevel::kMemory,
                     core::TraceLevel::kRegisters, core::TraceLevel::kFull}) {
    core::RecorderOptions options;
    options.level = level;
    auto recording = record(kSamples + "/static/hello", options);
    const auto stats = recording->recorder->stats();
    if (!expected) expected = stats.instructions;
    CHECK(stats.instructions == expected);
    CHECK(stats.records_lost == 0);
    if (level == core::TraceLevel::kInstructions) {
      std::uint64_t from_blocks = 0, insns = 0;
      for (const auto& event : recording->sink.stored_) insns += event.kind == events::EventKind::kInstruction;
      (void)from_blocks;
      CHECK(insns == expected);
    }
    // Sequence numbers are dense and ordered.
    for (std::size_t i = 0; i < recording->sink.stored_.size(); ++i) CHECK(recording->sink.stored_[i].sequence == i);
  }
  CHECK(expected > 5000);
}

// arm: the cross-built samples (samples/cross.cmake), Thumb-2 as Debian's gcc
// emits by default ("static") and ARM ("static-marm", with glibc's Thumb-2).
namespace {
const char* const kArmVariants[] = {"static", "static-marm"};
std::string arm_sample(const std::string& variant, const std::string& name) {
  return kSamples + "-arm/" + variant + "/" + name;
}
}  // namespace

TEST_CASE("Recorder: arm regs-level diffs match a brute-force comparison, in ARM and in Thumb code") {
  for (const std::string variant : kArmVariants) {
    for (const std::string sample : {"hello", "floating", "dup_pipe", "file_io"}) {
      CAPTURE(variant);
      CAPTURE(sample);
      FullRegisterProbe probe;
      auto recording = check_regs_against_brute_force(arm_sample(variant, sample), probe);
      std::size_t thumb = 0, arm = 0;
      for (const auto& event : recording->sink.stored_)
        if (event.kind == events::EventKind::kInstruction) (event.mode ? thumb : arm) += 1;
      CHECK(thumb > 1000);  // glibc is Thumb-2 in both variants
      if (variant == "static-marm") CHECK(arm > 10);
    }
  }
}

namespace {
// Records `program` at every level beside a UC_HOOK_CODE probe: the recorder
// counts the same instructions at every level, each level with instruction
// events names the hooked instructions in order (plus arm's skipped IT slots,
// align_with_probe), and the count is the hooked ones plus those. Returns the
// skipped instructions of the insns level.
std::size_t check_counts_against_code_hook(const std::string& program) {
  std::uint64_t expected = 0;
  std::size_t skipped_at_insns = 0;
  for (auto level : {core::TraceLevel::kInstructions, core::TraceLevel::kBlocks, core::TraceLevel::kMemory,
                     core::TraceLevel::kRegisters, core::TraceLevel::kFull}) {
    CAPTURE(core::trace_level_name(level));
    FullRegisterProbe probe;  // its UC_HOOK_CODE sees every instruction Unicorn hooks
    core::RecorderOptions options;
    options.level = level;
    auto recording = record(program, options, &probe);
    CHECK(recording->outcome.kind == linux_layer::RunOutcome::Kind::kExited);
    const auto stats = recording->recorder->stats();
    CHECK(stats.records_lost == 0);
    const std::uint64_t hooked = probe.changes_by_instruction.size() + 1;
    CHECK(hooked > 5000);
    if (level == core::TraceLevel::kBlocks) {
      CHECK(stats.instructions == expected);  // no instruction events to align: as the insns level
      continue;
    }
    std::size_t skipped = 0;
    std::string problem;
    align_with_probe(*recording, probe, skipped, problem);
    CHECK_MESSAGE(problem.empty(), problem);
    CHECK(stats.instructions == hooked + skipped);
    if (!expected) {
      expected = stats.instructions;
      skipped_at_insns = skipped;
    }
    CHECK(stats.instructions == expected);
  }
  return skipped_at_insns;
}
}  // namespace

TEST_CASE("Recorder: arm instruction counts at every level equal a UC_HOOK_CODE count plus skipped IT slots") {
  for (const std::string variant : kArmVariants) {
    CAPTURE(variant);
    check_counts_against_code_hook(arm_sample(variant, "nested_calls"));
  }
}

TEST_CASE("Recorder: arm mem-level attribution agrees with the exact pcs of the full level") {
  core::RecorderOptions mem_options, full_options;
  mem_options.level = core::TraceLevel::kMemory;
  full_options.level = core::TraceLevel::kFull;
  for (const std::string variant : kArmVariants) {
    for (const std::string sample : {"hello", "floating", "dup_pipe"}) {
      CAPTURE(variant);
      CAPTURE(sample);
      const std::string program = arm_sample(variant, sample);
      auto mem = record(program, mem_options);
      auto full = record(program, full_options);
      const auto mem_accesses = memory_accesses(*mem), full_accesses = memory_accesses(*full);
      REQUIRE(mem_accesses.size() == full_accesses.size());
      std::size_t unknown = 0, wrong = 0;
      for (std::size_t i = 0; i < mem_accesses.size(); ++i) {
        CHECK(full_accesses[i]->pc_known);
        if (!mem_accesses[i]->pc_known)
          ++unknown;
        else if (mem_accesses[i]->pc != full_accesses[i]->pc && ++wrong <= 3)
          MESSAGE("access " << i << " to " << std::hex << full_accesses[i]->address << " by pc "
                            << full_accesses[i]->pc << " attributed to " << mem_accesses[i]->pc << std::dec);
      }
      MESSAGE(variant << " " << sample << ": " << mem_accesses.size() << " accesses, " << unknown << " not attributed");
      CHECK(wrong == 0);
      // Conditional transfers (in IT blocks: they may not run) have no fixed count,
      // so the rest of their block is left unattributed: about 7% of accesses here.
      CHECK(unknown * 100 <= mem_accesses.size() * 10);
    }
  }
}

// riscv64: no Capstone; arch/riscv64.cpp's own RV64GC decoder gives the
// instruction boundaries, written registers and memory access counts.
namespace {
std::string riscv64_sample(const std::string& name) { return kSamples + "-riscv64/static/" + name; }
}  // namespace

TEST_CASE("Recorder: riscv64 regs-level diffs match a brute-force comparison of x0-x31, f0-f31 and fcsr") {
  for (const std::string sample : {"hello", "floating", "dup_pipe", "file_io"}) {
    CAPTURE(sample);
    FullRegisterProbe probe;
    auto recording = check_regs_against_brute_force(riscv64_sample(sample), probe);
    CHECK(probe.changes_by_instruction.size() > 1000);
    if (sample == "floating") {  // the FP file is compared too: the sample changes it
      std::size_t fp_changes = 0;
      for (const auto& [pc, changes] : probe.changes_by_instruction)
        for (const auto& [index, bytes] : changes) fp_changes += recording->process->arch().registers[index].name[0] == 'f';
      CHECK(fp_changes > 10);
    }
  }
}

TEST_CASE("Recorder: riscv64 instruction counts at every level equal a UC_HOOK_CODE count") {
  CHECK(check_counts_against_code_hook(riscv64_sample("nested_calls")) == 0);  // no IT blocks: nothing skipped
}

// sc (0 or 2 accesses) has no fixed count: it ends its block (a bnez follows), so
// every access stays attributed.
TEST_CASE("Recorder: riscv64 mem-level attribution agrees with the exact pcs of the full level") {
  check_mem_attribution({riscv64_sample("hello"), riscv64_sample("floating"), riscv64_sample("dup_pipe"),
                         riscv64_sample("nested_calls")});
}

// mips o32, big and little endian (samples/cross.cmake): a branch and its delay
// slot are one Unicorn block, and Capstone 4 gives no access lists for MIPS
// (arch/mips.cpp derives the writes from the operands).
namespace {
const char* const kMipsArchs[] = {"mips", "mipsel"};
}  // namespace

TEST_CASE("Recorder: mips regs-level diffs match a brute-force comparison, in both byte orders") {
  for (const std::string arch : kMipsArchs) {
    for (const std::string sample : {"hello", "floating", "dup_pipe", "file_io"}) {
      CAPTURE(arch);
      CAPTURE(sample);
      FullRegisterProbe probe;
      check_regs_against_brute_force(kSamples + "-" + arch + "/static/" + sample, probe);
    }
  }
}

TEST_CASE("Recorder: mips instruction counts at every level equal a UC_HOOK_CODE count") {
  for (const std::string arch : kMipsArchs) {
    CAPTURE(arch);
    CHECK(check_counts_against_code_hook(kSamples + "-" + arch + "/static/nested_calls") == 0);  // no IT blocks
  }
}

// sc (no fixed count) leaves the rest of its block unattributed: at most 5%.
TEST_CASE("Recorder: mips mem-level attribution agrees with the exact pcs of the full level") {
  for (const std::string arch : kMipsArchs)
    check_mem_attribution({kSamples + "-" + arch + "/static/hello", kSamples + "-" + arch + "/static/dup_pipe"}, 5);
}

TEST_CASE("Recorder: a syscall carries what the kernel wrote and the registers it changed") {
  core::RecorderOptions options;
  auto recording = record("/bin/busybox", options, nullptr, {"busybox", "head", "-c", "200", "/proc/version"});
  bool found = false;
  for (const auto& event : recording->sink.stored_) {
    if (event.kind != events::EventKind::kSyscall || event.number != 0 /* read */ || event.memory_writes.empty())
      continue;
    const std::string data(event.memory_writes[0].second.begin(), event.memory_writes[0].second.end());
    if (data.rfind("Linux version", 0) == 0) found = true;
    bool rax = false;
    for (const auto& value : event.registers) rax |= recording->process->arch().registers[value.index].name == "rax";
    CHECK(rax);
  }
  CHECK(found);
}

TEST_CASE("Recorder: the flight recorder keeps the last events, ending at the faulting instruction") {
  core::RecorderOptions options;
  options.level = core::TraceLevel::kInstructions;
  options.policy = core::RingPolicy::kFlightRecorder;
  options.ring_bytes = 16 << 10;  // small enough that the run overwrites (block runs take ~4 bytes per block)
  auto recording = record(kSamples + "/static/segfault", options);
  REQUIRE(recording->outcome.kind == linux_layer::RunOutcome::Kind::kSignaled);
  ProbeSink dumped;
  CHECK(recording->recorder->dump(dumped).empty());
  CHECK(recording->recorder->finish().empty());
  REQUIRE(dumped.stored_.size() > 10);
  CHECK(dumped.stored_.front().kind == events::EventKind::kGap);
  CHECK(recording->recorder->stats().records_overwritten > 0);
  // The last events: the instruction before the fault, the fault at the exact pc, the exit.
  const auto& events = dumped.stored_;
  REQUIRE(events.back().kind == events::EventKind::kExit);
  const auto& fault = events[events.size() - 2];
  REQUIRE(fault.kind == events::EventKind::kFault);
  CHECK(fault.address == recording->outcome.pc);
  const auto& last_instruction = events[events.size() - 3];
  CHECK(last_instruction.kind == events::EventKind::kInstruction);
  CHECK(last_instruction.address < fault.address);
}

namespace {

// A sink whose disk fills up after `capacity` events: it drops the rest, says
// so through failed(), and end() returns the error (as the format writers do).
class FillingSink final : public events::Sink {
 public:
  explicit FillingSink(std::uint64_t capacity) : capacity_(capacity) {}
  void begin(const events::TraceInfo&) override {}
  void on_event(const events::Event&) override {
    if (accepted_ < capacity_) ++accepted_;
    else ++dropped_;
  }
  std::string end(const events::TraceSummary&) override { return failed() ? "trace: No space left on device" : ""; }
  bool failed() const override { return dropped_ != 0; }
  std::uint64_t accepted_ = 0, dropped_ = 0;

 private:
  std::uint64_t capacity_;
};

}  // namespace

TEST_CASE("Recorder: a sink that cannot write stops the run early, and finish reports its error") {
  // An endless guest, bounded only by the instruction limit: without the early
  // stop the run goes on to the limit.
  constexpr std::uint64_t kLimit = 200'000'000;
  linux_layer::ProcessConfig config;
  config.program = "/bin/busybox";
  config.argv = {"busybox", "sh", "-c", "while :; do :; done"};
  config.envp = {"LC_ALL=C"};
  config.diagnostics = nullptr;
  config.max_instructions = kLimit;
  auto process = linux_layer::LinuxProcess::create(config);
  REQUIRE(process.has_value());
  FillingSink sink(10'000);
  core::RecorderOptions options;
  options.level = core::TraceLevel::kInstructions;
  auto recorder = core::Recorder::attach((*process)->engine(), (*process)->arch(), options, {&sink}, events::TraceInfo{});
  REQUIRE(recorder.has_value());
  session::ProcessRecording glue(**recorder);
  (*process)->set_observer(&glue);
  const auto outcome = (*process)->run();
  (*process)->set_observer(nullptr);
  glue.finish_run(outcome);
  CHECK((*recorder)->finish() == "trace: No space left on device");
  CHECK((*recorder)->sink_failed());
  CHECK((*recorder)->stop_requested());
  const auto stats = (*recorder)->stats();
  CHECK(sink.accepted_ == 10'000);
  // Stopped once the drain thread saw the failure: far before the limit (the
  // ring holds at most its 64 MiB of records beyond the failure point).
  CHECK(stats.instructions < kLimit / 2);
}

namespace {

// Overwrites the 16 AT_RANDOM bytes of a 64-bit process that has not run yet
// (found through its auxv, above argc, argv and envp at the stack pointer)
// with fixed ones: glibc's stack guard and pointer mangling come from them, so
// that two runs of a program then compute, and record, the same values.
void fix_at_random(linux_layer::LinuxProcess& process) {
  uc_engine* engine = process.engine();
  std::uint64_t sp = 0;
  REQUIRE(uc_reg_read(engine, process.arch().sp_reg, &sp) == UC_ERR_OK);
  auto word = [&](std::uint64_t address) {
    std::uint64_t value = 0;
    REQUIRE(uc_mem_read(engine, address, &value, 8) == UC_ERR_OK);
    return value;
  };
  std::uint64_t at = sp + 8 * (word(sp) + 2);  // past argc, argv[] and its NULL
  while (word(at) != 0) at += 8;                // envp[]
  for (at += 8; word(at) != 0; at += 16) {      // auxv pairs up to AT_NULL
    if (word(at) != 25) continue;               // AT_RANDOM
    const std::uint8_t fixed[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
    REQUIRE(uc_mem_write(engine, word(at + 8), fixed, sizeof fixed) == UC_ERR_OK);
    return;
  }
  FAIL("no AT_RANDOM in the auxv");
}

// Everything a recording's events say: kind, sequence, addresses, pcs, values,
// syscall numbers, instruction set, register values, a syscall's memory writes
// (their bytes aside where they are the host's: getrandom's, and the struct
// stat of fstat/newfstatat/statx, whose st_size and times change between two
// runs when stdout is a file that the guests' output makes grow).
constexpr std::uint64_t kGetrandom = 318;  // x86-64
bool writes_host_bytes(std::uint64_t number) {
  constexpr std::uint64_t kFstat = 5, kNewfstatat = 262, kStatx = 332;  // x86-64
  return number == kGetrandom || number == kFstat || number == kNewfstatat || number == kStatx;
}
std::vector<std::string> fingerprint(const Recording& recording) {
  std::vector<std::string> lines;
  for (const auto& event : recording.sink.stored_) {
    std::string line = std::to_string(static_cast<int>(event.kind)) + " #" + std::to_string(event.sequence) + " " +
                       std::to_string(event.address) + " " + std::to_string(event.pc) + (event.pc_known ? "k" : "") +
                       " " + std::to_string(event.value) + " " + std::to_string(event.number) + " " +
                       std::to_string(event.mode);
    for (const auto& value : event.registers) {
      line += " r" + std::to_string(value.index) + "=";
      for (std::size_t b = 0; b < value.size; ++b) line += std::to_string(value.bytes[b]) + ".";
    }
    for (const auto& write : event.memory_writes) {
      line += " w" + std::to_string(write.first) + "+" + std::to_string(write.second.size()) + "=";
      if (writes_host_bytes(event.number)) continue;  // getrandom: FixedRandomGlue replaces them after
      for (const auto byte : write.second) line += std::to_string(byte) + ".";
    }
    lines.push_back(std::move(line));
  }
  return lines;
}

}  // namespace

// The library's "no global state" promise: four engines, each with its own
// recorder, ring and drain thread, run at once on four threads (one at each
// level, small rings so that they wrap and stall); each must record exactly
// what the same program records alone (AT_RANDOM and getrandom's bytes fixed
// in both runs). Also run under ThreadSanitizer by
// scripts/tsan_recorder.sh, where a race between the recorders fails the run.
TEST_CASE("Recorder: several recorders on several engines at once record what each records alone") {
  struct Job {
    std::string program;
    core::TraceLevel level;
  };
  const std::vector<Job> jobs = {{"static/hello", core::TraceLevel::kRegisters},
                                 {"static/nested_calls", core::TraceLevel::kMemory},
                                 {"static/floating", core::TraceLevel::kFull},
                                 {"static/hello", core::TraceLevel::kInstructions}};
  auto options_for = [](const Job& job) {
    core::RecorderOptions options;
    options.level = job.level;
    options.ring_bytes = 64u << 10;
    return options;
  };
  std::vector<std::vector<std::string>> alone, together(jobs.size());
  std::vector<events::TraceSummary> alone_summary, together_summary(jobs.size());
  for (const auto& job : jobs) {
    const auto recording = record(kSamples + "/" + job.program, options_for(job), nullptr, {}, true);
    alone.push_back(fingerprint(*recording));
    alone_summary.push_back(recording->sink.summary_);
  }
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < jobs.size(); ++i)
    threads.emplace_back([&, i] {
      const auto recording = record(kSamples + "/" + jobs[i].program, options_for(jobs[i]), nullptr, {}, true);
      together[i] = fingerprint(*recording);
      together_summary[i] = recording->sink.summary_;
    });
  for (auto& thread : threads) thread.join();
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    CAPTURE(jobs[i].program);
    CAPTURE(core::trace_level_name(jobs[i].level));
    CHECK(alone[i].size() > 1000);
    CHECK(together[i].size() == alone[i].size());
    std::size_t same = 0;
    while (same < alone[i].size() && same < together[i].size() && alone[i][same] == together[i][same]) ++same;
    CHECK_MESSAGE(same == alone[i].size(), "event ", same, ": alone '", (same < alone[i].size() ? alone[i][same] : ""),
                  "' together '", (same < together[i].size() ? together[i][same] : ""), "'");
    CHECK(together_summary[i].events == alone_summary[i].events);
    CHECK(together_summary[i].instructions == alone_summary[i].instructions);
    CHECK(together_summary[i].lost_events == 0);
  }
}

namespace {

// An x86-64 engine of the test's own (as a harness has): `code` mapped at
// kSnippetCode in one read-write-execute page, the given registers set, and a
// recorder attached with `options` (no initial-state capture) into a ProbeSink.
constexpr std::uint64_t kSnippetCode = 0x1000;
struct SnippetRecording {
  SnippetRecording(std::span<const std::uint8_t> code, std::initializer_list<std::pair<int, std::uint64_t>> registers,
                   core::RecorderOptions options) {
    REQUIRE(uc_open(UC_ARCH_X86, UC_MODE_64, &engine) == UC_ERR_OK);
    REQUIRE(uc_mem_map(engine, kSnippetCode, 0x1000, UC_PROT_ALL) == UC_ERR_OK);
    REQUIRE(uc_mem_write(engine, kSnippetCode, code.data(), code.size()) == UC_ERR_OK);
    for (const auto& [id, value] : registers) uc_reg_write(engine, id, &value);
    options.capture_initial_state = false;
    auto attached = core::Recorder::attach(engine, arch::x86_64_arch(), options, {&sink}, events::TraceInfo{});
    REQUIRE(attached.has_value());
    recorder = std::move(*attached);
  }
  ~SnippetRecording() {
    recorder.reset();
    uc_close(engine);
  }
  SnippetRecording(const SnippetRecording&) = delete;
  SnippetRecording& operator=(const SnippetRecording&) = delete;

  // (pc, value) of every recorded change of rax, in order.
  std::vector<std::pair<std::uint64_t, std::uint64_t>> rax_changes() const {
    const arch::ArchInfo& arch = arch::x86_64_arch();
    const auto rax_index = static_cast<std::uint16_t>(arch.find_register("rax") - arch.registers.data());
    std::vector<std::pair<std::uint64_t, std::uint64_t>> changes;
    for (const auto& event : sink.stored_) {
      if (event.kind != events::EventKind::kRegisters) continue;
      for (const auto& value : event.registers) {
        if (value.index != rax_index) continue;
        std::uint64_t v = 0;
        std::memcpy(&v, value.bytes.data(), 8);
        changes.emplace_back(event.pc, v);
      }
    }
    return changes;
  }

  uc_engine* engine = nullptr;
  ProbeSink sink;
  std::unique_ptr<core::Recorder> recorder;
};

using PcValues = std::vector<std::pair<std::uint64_t, std::uint64_t>>;

}  // namespace

namespace {

// `add rax, rbx` twice from rax = 1, rbx = 2, at the regs level with derived
// values; between the two runs rax becomes 100 and `between` tells the
// recorder. The values recorded must follow: 3, 5, then 102, 104.
std::unique_ptr<SnippetRecording> run_add_twice(const std::function<void(core::Recorder&)>& between) {
  const std::uint8_t code[] = {0x48, 0x01, 0xd8, 0x48, 0x01, 0xd8, 0x90};  // add rax, rbx; add rax, rbx; nop
  core::RecorderOptions options;
  options.level = core::TraceLevel::kRegisters;
  options.derive_registers = true;
  auto run = std::make_unique<SnippetRecording>(code, std::initializer_list<std::pair<int, std::uint64_t>>{
                                                          {UC_X86_REG_RAX, 1}, {UC_X86_REG_RBX, 2}},
                                                options);
  REQUIRE(uc_emu_start(run->engine, kSnippetCode, kSnippetCode + 7, 0, 0) == UC_ERR_OK);
  const std::uint64_t rax = 100;
  uc_reg_write(run->engine, UC_X86_REG_RAX, &rax);
  between(*run->recorder);
  REQUIRE(uc_emu_start(run->engine, kSnippetCode, kSnippetCode + 7, 0, 0) == UC_ERR_OK);
  CHECK(run->recorder->finish().empty());
  const PcValues expected = {{kSnippetCode, 3}, {kSnippetCode + 3, 5}, {kSnippetCode, 102}, {kSnippetCode + 3, 104}};
  CHECK(run->rax_changes() == expected);
  return run;
}

}  // namespace

// A harness that owns its engine records with derive_registers and writes a
// register between two runs: after Recorder::registers_changed() the values the
// recorder derives start from the written one (the recorder reads the whole
// register file again at the next block).
TEST_CASE("Recorder: derived register values follow a register the caller writes between runs") {
  const auto run = run_add_twice([](core::Recorder& recorder) { recorder.registers_changed(); });
  CHECK(run->recorder->stats().registers_derived >= 4);
}

// --start-at in the middle of a block, at the regs level: the start instruction's
// own change is recorded, and the values derived after it start from it.
TEST_CASE("Recorder: regs level from a start address inside a block records the start instruction and derives from it") {
  // mov eax, 1; add rax, rbx (the start); add rax, rbx; nop
  const std::uint8_t code[] = {0xb8, 0x01, 0x00, 0x00, 0x00, 0x48, 0x01, 0xd8, 0x48, 0x01, 0xd8, 0x90};
  for (const bool derive : {false, true}) {
    CAPTURE(derive);
    core::RecorderOptions options;
    options.level = core::TraceLevel::kRegisters;
    options.derive_registers = derive;
    options.start_at = kSnippetCode + 5;
    SnippetRecording run(code, {{UC_X86_REG_RBX, 2}}, options);
    REQUIRE(uc_emu_start(run.engine, kSnippetCode, kSnippetCode + sizeof code, 0, 0) == UC_ERR_OK);
    CHECK(run.recorder->finish().empty());
    const PcValues expected = {{kSnippetCode + 5, 3}, {kSnippetCode + 8, 5}};
    CHECK(run.rax_changes() == expected);
  }
}

// A guest that rewrites an instruction it has already run (add rax, rbx becomes
// sub rax, rbx on the second pass): the recorder must forget its decode, as
// Unicorn drops its translation, so the second pass is recorded as the new
// instruction with its real result, derived or read.
// The regs level and below compare the bytes of blocks on writable pages; mem
// and full see the write itself.
TEST_CASE("Recorder: code the guest rewrites after running it is decoded again (every level, derived or read)") {
  std::vector<std::uint8_t> code(0x1d, 0x90);
  const std::uint8_t add[] = {0x48, 0x01, 0xd8, 0xeb, 0x0b};  // 0x1000: add rax, rbx; jmp 0x1010
  // 0x1010: mov byte [rip-0x16], 0x29 (0x1001: add -> sub); dec rcx; jnz 0x1000; nop
  const std::uint8_t rewrite[] = {0xc6, 0x05, 0xea, 0xff, 0xff, 0xff, 0x29, 0x48, 0xff, 0xc9, 0x75, 0xe4, 0x90};
  std::copy(std::begin(add), std::end(add), code.begin());
  std::copy(std::begin(rewrite), std::end(rewrite), code.begin() + 0x10);
  const core::TraceLevel levels[] = {core::TraceLevel::kRegisters, core::TraceLevel::kFull,
                                     core::TraceLevel::kInstructions, core::TraceLevel::kMemory};
  for (const int variant : {0, 1, 2, 3, 4, 6}) {
    const bool derive = variant & 1;
    const auto level = levels[variant / 2];
    CAPTURE(derive);
    CAPTURE(variant);
    core::RecorderOptions options;
    options.level = level;
    options.derive_registers = derive;
    SnippetRecording run(code, {{UC_X86_REG_RAX, 1}, {UC_X86_REG_RBX, 2}, {UC_X86_REG_RCX, 2}}, options);
    REQUIRE(uc_emu_start(run.engine, kSnippetCode, kSnippetCode + 0x1d, 0, 0) == UC_ERR_OK);
    CHECK(run.recorder->finish().empty());
    std::uint64_t rax = 0;
    uc_reg_read(run.engine, UC_X86_REG_RAX, &rax);
    CHECK(rax == 1);  // 1 + 2 - 2
    std::vector<std::uint16_t> first_halfwords;  // of the instructions recorded at 0x1000
    for (const auto& event : run.sink.stored_)
      if (event.kind == events::EventKind::kInstruction && event.address == kSnippetCode)
        first_halfwords.push_back(event.first_halfword);
    CHECK(first_halfwords == std::vector<std::uint16_t>{0x0148, 0x2948});
    if (core::level_has_registers(level)) {
      PcValues at_start;  // rax recorded for the instruction at 0x1000
      for (const auto& change : run.rax_changes())
        if (change.first == kSnippetCode) at_start.push_back(change);
      CHECK(at_start == PcValues{{kSnippetCode, 3}, {kSnippetCode, 1}});
    }
  }
}

// The scheduler's side of the contract, as a harness can drive it: a switch
// between runs gives the events after it the new thread, records every
// register, and the recorder's register copy (derive_registers) follows the
// switched-to thread's values.
TEST_CASE("Recorder: a thread switch gives later events the new thread, every register, and a fresh register copy") {
  const auto run = run_add_twice([](core::Recorder& recorder) {  // rax = 100: the other thread's registers
    events::ThreadEvent created, switched;
    created.change = events::ThreadChange::kCreated;
    switched.change = events::ThreadChange::kSwitched;
    recorder.thread_event(events::ThreadId{77}, created);
    recorder.thread_event(events::ThreadId{77}, switched);
  });
  const auto& stored = run->sink.stored_;
  const auto first_switch = std::find_if(stored.begin(), stored.end(), [](const StoredEvent& e) {
    return e.kind == events::EventKind::kThread && e.number == 3;
  });
  REQUIRE(first_switch != stored.end());
  CHECK(first_switch->thread == 77);
  CHECK(first_switch->registers.size() == arch::x86_64_arch().registers.size());
  const auto& arch = arch::x86_64_arch();
  const auto rax_index = static_cast<std::uint16_t>(arch.find_register("rax") - arch.registers.data());
  std::uint64_t switched_rax = 0;
  std::memcpy(&switched_rax, first_switch->registers[rax_index].bytes.data(), 8);
  CHECK(switched_rax == 100);
  std::size_t before = 0, after = 0;
  for (auto it = stored.begin(); it != stored.end(); ++it) {
    if (it->kind == events::EventKind::kThread) continue;
    if (it < first_switch) before += it->thread == 0;  // (a harness's engine: no process, thread 0)
    else after += it->thread == 77;
  }
  CHECK(before >= 3);
  CHECK(after >= 3);
  CHECK(before + after + 2 == stored.size());
  // The created thread's event is about thread 77 but does not switch to it.
  CHECK(std::prev(first_switch)->kind == events::EventKind::kThread);
  CHECK(std::prev(first_switch)->number == 1);
}

// Timer signals delivered at a block boundary: the block the kernel left for
// the handler is not in the trace (its block hook had recorded it), the block
// before ran whole, the handler's block follows, and the event carries the
// frame and every register, the pc being the handler's.
TEST_CASE("Recorder: a timer's signal between two blocks is recorded after the last block that ran, with its frame") {
  core::RecorderOptions options;
  options.level = core::TraceLevel::kInstructions;
  const std::string program = kSamples + "/static/signal_timers";
  auto recording = record(program, options, nullptr, {program});
  const auto& arch = recording->process->arch();
  const auto& stored = recording->sink.stored_;
  std::size_t at_blocks = 0, at_syscalls = 0, signals = 0;
  for (std::size_t i = 0; i < stored.size(); ++i) {
    if (stored[i].kind != events::EventKind::kSignal) continue;
    ++signals;
    CHECK(stored[i].number == SIGALRM);
    REQUIRE(stored[i].registers.size() == arch.registers.size());
    for (const auto& value : stored[i].registers)
      if (arch.registers[value.index].uc_id == arch.pc_reg) CHECK(value.as_u64() == stored[i].address);
    REQUIRE(i + 1 < stored.size());
    CHECK(stored[i + 1].kind == events::EventKind::kBlock);
    CHECK(stored[i + 1].address == stored[i].address);  // the handler
    if (stored[i].memory_writes.empty()) {  // delivered as a syscall returned: the frame is the syscall's,
      REQUIRE(i > 0);                        // and so are the handler's registers, its pc among them
      REQUIRE(stored[i - 1].kind == events::EventKind::kSyscall);
      bool pc_said = false;
      for (const auto& value : stored[i - 1].registers)
        if (arch.registers[value.index].uc_id == arch.pc_reg) {
          CHECK(value.as_u64() == stored[i].address);  // (not the engine's pc inside its syscall hook)
          pc_said = true;
        }
      CHECK(pc_said);
      ++at_syscalls;
      continue;
    }
    ++at_blocks;
    std::size_t block = i, instructions = 0;
    while (block > 0 && stored[block - 1].kind != events::EventKind::kBlock)
      instructions += stored[--block].kind == events::EventKind::kInstruction;
    REQUIRE(block > 0);
    CHECK(instructions == stored[block - 1].number);  // the block before ran whole
  }
  CHECK(signals >= 3);
  CHECK(at_blocks >= 1);
  CHECK(at_syscalls >= 1);
}

// Block interrupts (what delivers another process's signal to a guest busy
// in a loop): another thread asks, Recorder::interrupt_next_block, and the
// block hook calls the handler at the start of a block, once per request,
// on the fast path (blocks) and the full one (regs). Run under
// ThreadSanitizer by scripts/tsan_recorder.sh.
TEST_CASE("Recorder: interrupt_next_block from another thread calls the handler at the start of the next block") {
  // L0: inc rax; jmp L1 / L1: cmp rax, rbx; jne L0 / nop: two blocks, spun until stopped.
  const std::uint8_t code[] = {0x48, 0xff, 0xc0, 0xeb, 0x00, 0x48, 0x39, 0xd8, 0x75, 0xf6, 0x90};
  for (const core::TraceLevel level : {core::TraceLevel::kBlocks, core::TraceLevel::kRegisters}) {
    CAPTURE(core::trace_level_name(level));
    core::RecorderOptions options;
    options.level = level;
    SnippetRecording run(code, {{UC_X86_REG_RAX, 0}, {UC_X86_REG_RBX, std::uint64_t{1} << 62}}, options);
    constexpr int kRequests = 20;
    std::atomic<int> served{0};
    std::vector<std::uint64_t> addresses;  // (the emulation thread's)
    run.recorder->set_block_interrupt_handler([&](std::uint64_t address) {
      addresses.push_back(address);
      if (served.fetch_add(1) + 1 == kRequests) uc_emu_stop(run.engine);
    });
    std::thread asker([&] {
      for (int request = 0; request < kRequests; ++request) {
        const int before = served.load();
        run.recorder->interrupt_next_block();
        for (int wait = 0; wait < 5000 && served.load() == before; ++wait)
          std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
    });
    const uc_err err = uc_emu_start(run.engine, kSnippetCode, kSnippetCode + sizeof code - 1, 30'000'000, 0);
    asker.join();
    CHECK(err == UC_ERR_OK);
    CHECK(served.load() == kRequests);  // each request once: none lost, none called twice
    for (const std::uint64_t address : addresses) CHECK((address == kSnippetCode || address == kSnippetCode + 5));
    CHECK(run.recorder->finish().empty());
  }
}

TEST_CASE("Recorder: flush_to_files hands the sinks every block recorded so far, then flushes them") {
  // L0: inc rax; jmp L1 / L1: cmp rax, rbx; jne L0 / nop: two blocks, run 1000 instructions at a time.
  const std::uint8_t code[] = {0x48, 0xff, 0xc0, 0xeb, 0x00, 0x48, 0x39, 0xd8, 0x75, 0xf6, 0x90};
  core::RecorderOptions options;
  options.level = core::TraceLevel::kBlocks;
  SnippetRecording run(code, {{UC_X86_REG_RAX, 0}, {UC_X86_REG_RBX, std::uint64_t{1} << 62}}, options);
  std::uint64_t entered = 0;  // blocks the engine entered (this hook comes after the recorder's)
  uc_hook counter = 0;
  auto count_block = +[](uc_engine*, std::uint64_t, std::uint32_t, void* user) { ++*static_cast<std::uint64_t*>(user); };
  REQUIRE(uc_hook_add(run.engine, &counter, UC_HOOK_BLOCK, reinterpret_cast<void*>(count_block), &entered, 1, 0) ==
          UC_ERR_OK);
  std::uint64_t pc = kSnippetCode;
  for (int round = 1; round <= 5; ++round) {
    CAPTURE(round);
    REQUIRE(uc_emu_start(run.engine, pc, kSnippetCode + sizeof code - 1, 0, 1000) == UC_ERR_OK);
    uc_reg_read(run.engine, UC_X86_REG_RIP, &pc);
    run.recorder->flush_to_files();
    REQUIRE(run.sink.stored_at_flush_.size() == static_cast<std::size_t>(round));
    std::uint64_t blocks = 0;
    for (std::size_t i = 0; i < run.sink.stored_at_flush_.back(); ++i)
      blocks += run.sink.stored_[i].kind == events::EventKind::kBlock;
    CHECK(blocks == entered);  // none left in the ring or in a run of block ids
  }
  uc_hook_del(run.engine, counter);
  CHECK(run.recorder->finish().empty());
}
