// Role: LinuxProcess: wires the ELF file, the architecture, the engine, the
// kernel and the loader together, and runs the guest (see linux_process.h).
// Faults: memory faults are caught by a UC_HOOK_MEM_*_INVALID hook (address and
// kind recorded) and CPU exceptions by UC_HOOK_INTR; the run then ends as the
// kernel would end it: killed by SIGSEGV/SIGILL/SIGFPE..., exit status 128+signal.
#include "recorder/linux/linux_process.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <csignal>
#include <cstring>

#include "recorder/elf/elf_file.h"
#include "recorder/linux/exec_image.h"
#include "recorder/linux/kernel.h"
#include "recorder/linux/loader.h"
#include "recorder/engine/instruction_counter.h"

namespace tracecorn::linux_layer {
namespace {

// What the fault hooks saw; read after uc_emu_start returns.
struct FaultRecord {
  bool seen = false;
  int signal = 0;
  int code = 0;  // si_code: SEGV_MAPERR 1 or SEGV_ACCERR 2; the CPU exceptions' own
  std::uint64_t address = 0;
  std::uint64_t pc = 0;
  std::string what;
};

const char* access_name(uc_mem_type type) {
  switch (type) {
    case UC_MEM_READ_UNMAPPED: return "read of unmapped memory";
    case UC_MEM_WRITE_UNMAPPED: return "write to unmapped memory";
    case UC_MEM_FETCH_UNMAPPED: return "execution of unmapped memory";
    case UC_MEM_READ_PROT: return "read of protected memory";
    case UC_MEM_WRITE_PROT: return "write to read-only memory";
    case UC_MEM_FETCH_PROT: return "execution of non-executable memory";
    default: return "invalid memory access";
  }
}

std::string hex(std::uint64_t value) {
  char buffer[24];
  std::snprintf(buffer, sizeof buffer, "0x%llx", static_cast<unsigned long long>(value));
  return buffer;
}

}  // namespace

// Hook state that must outlive the hooks: owned by the process, freed after them.
struct LinuxProcessHooks {
  FaultRecord fault;
  arch::GuestCpu* cpu = nullptr;
  Kernel* kernel = nullptr;
  uc_hook memory_hook = 0;
  uc_hook interrupt_hook = 0;
  uc_hook block_hook = 0;  // installed once the guest arms a real-time timer

  static void on_block(uc_engine*, std::uint64_t address, std::uint32_t, void* user) noexcept {
    static_cast<LinuxProcessHooks*>(user)->kernel->on_block(address);
  }

  static bool on_invalid_memory(uc_engine* engine, uc_mem_type type, std::uint64_t address, int, std::int64_t,
                                void* user) noexcept {
    auto* self = static_cast<LinuxProcessHooks*>(user);
    if (!self->fault.seen) {
      self->fault.seen = true;
      self->fault.signal = SIGSEGV;
      // SEGV_ACCERR (2) for a protection fault, also in a PROT_NONE mapping
      // Unicorn does not have mapped (GuestMemory's Vma::in_engine); else SEGV_MAPERR.
      const bool protection = type == UC_MEM_READ_PROT || type == UC_MEM_WRITE_PROT || type == UC_MEM_FETCH_PROT ||
                              self->kernel->memory().find(address) != nullptr;
      self->fault.code = protection ? 2 : 1;
      self->fault.address = address;
      self->fault.what = access_name(type);
      (void)engine;
    }
    return false;  // let the access fail: uc_emu_start returns the error
  }

  static void on_interrupt(uc_engine* engine, std::uint32_t number, void* user) noexcept {
    auto* self = static_cast<LinuxProcessHooks*>(user);
    if (self->cpu->emulate_refused_instruction(number)) return;  // (riscv64's rdtime)
    const int signal = self->cpu->signal_for_interrupt(number);
    if (signal == 0) return;  // not a fault: the architecture's syscall trap (aarch64 svc) handles it
    if (!self->fault.seen) {
      self->fault.seen = true;
      self->fault.signal = signal;
      // FPE_INTDIV, ILL_ILLOPC, BUS_ADRALN are 1; a breakpoint's SIGTRAP is SI_KERNEL on x86.
      self->fault.code = signal == SIGTRAP ? 0x80 : 1;
      self->fault.what = "CPU exception " + std::to_string(number);
    }
    uc_emu_stop(engine);
  }
};

std::uint64_t default_max_memory() {
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page_size = ::sysconf(_SC_PAGESIZE);
  constexpr std::uint64_t kFloor = 256ull << 20;
  if (pages <= 0 || page_size <= 0) return kFloor;
  return std::max(kFloor, static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page_size) / 2);
}

int RunOutcome::host_exit_status() const {
  switch (kind) {
    case Kind::kExited: return exit_code & 0xff;
    case Kind::kSignaled: return 128 + signal;
    case Kind::kInstructionLimit: case Kind::kTimeout: case Kind::kStopped: return 124;
    case Kind::kEmulatorError: return 125;
  }
  return 125;
}

namespace {

// The program's ELF file, read and validated (a missing file, a directory, a bad ELF: the error).
Expected<elf::ElfFile> load_program_file(const std::string& path) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0)
    return make_error(errno == ENOENT ? ErrorCode::kNotFound : ErrorCode::kIo, std::strerror(errno), path);
  if (S_ISDIR(info.st_mode)) return make_error(ErrorCode::kInvalidArgument, "is a directory", path);
  return elf::ElfFile::load(path);
}

// The architecture `program` (read from `path`) runs as; kUnsupported naming those tracecorn runs.
Expected<const arch::ArchInfo*> arch_of_program(const elf::ElfFile& program, const std::string& path) {
  const arch::ArchInfo* arch = arch::find_arch_for_elf(program.machine(), program.is_64bit(), program.little_endian());
  if (!arch) {
    std::string supported;
    for (const auto* known : arch::all_archs()) supported += (supported.empty() ? "" : ", ") + std::string(known->name);
    return make_error(ErrorCode::kUnsupported,
                      "ELF machine " + std::to_string(program.machine()) + (program.is_64bit() ? " (64-bit, " : " (32-bit, ") +
                          (program.little_endian() ? "little endian)" : "big endian)") +
                          " is not supported; supported: " + supported,
                      path, 18);
  }
  return arch;
}

// The program named on the command line may be a `#!` script: its
// interpreter runs, with the argv binfmt_script gives (exec_image.h).
Status follow_script(ProcessConfig& config) {
  int fd = ::open(config.program.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ok_status();  // load_program_file names the problem
  char magic[2] = {};
  const bool script = ::pread(fd, magic, 2, 0) == 2 && magic[0] == '#' && magic[1] == '!';
  ::close(fd);
  if (!script) return ok_status();
  auto fs = GuestFs::create(config.rootfs, config.program);
  if (!fs) return fs.error();
  auto target = resolve_exec_target(*fs, config.program, config.argv.empty() ? std::vector{config.program} : config.argv);
  if (!target.ok())
    return make_error(target.error == ENOENT ? ErrorCode::kNotFound : ErrorCode::kBadFormat,
                      std::string("cannot run the script: ") + std::strerror(target.error), config.program);
  config.program = target.value.host_path;
  config.argv = target.value.argv;
  return ok_status();
}

}  // namespace

Expected<const arch::ArchInfo*> LinuxProcess::program_arch(const std::string& path) {
  auto program = load_program_file(path);
  if (!program) return program.error();
  return arch_of_program(*program, path);
}

Expected<std::unique_ptr<LinuxProcess>> LinuxProcess::create(ProcessConfig config) {
  // An exec'd image: the program, its argv and envp are the exec's.
  std::optional<InheritedState> inherited;
  if (config.inherited_state_fd >= 0) {
    auto state = read_inherited_state(std::exchange(config.inherited_state_fd, -1));
    if (!state) return state.error();
    config.program = state->program;
    config.argv = state->argv;
    config.envp = state->envp;
    inherited = std::move(*state);
  } else if (auto script = follow_script(config); !script) {
    return script.error();
  }
  auto program = load_program_file(config.program);
  if (!program) return program.error();
  auto found = arch_of_program(*program, config.program);
  if (!found) return found.error();
  const arch::ArchInfo* arch = *found;

  std::unique_ptr<LinuxProcess> process(new LinuxProcess());
  process->arch_ = arch;
  if (config.argv.empty()) config.argv.push_back(config.program);
  process->config_ = std::move(config);
  const ProcessConfig& cfg = process->config_;

  if (const uc_err err = uc_open(arch->engine->unicorn_arch, arch->engine->unicorn_mode, &process->engine_); err != UC_ERR_OK)
    return make_error(ErrorCode::kEmulator, std::string("uc_open: ") + uc_strerror(err));
  auto cpu = arch->engine->make_guest_cpu(process->engine_);
  if (!cpu) return cpu.error();
  process->cpu_ = std::move(*cpu);

  char resolved[PATH_MAX];
  std::string exe_path = ::realpath(cfg.program.c_str(), resolved) ? resolved : cfg.program;
  auto fs = GuestFs::create(cfg.rootfs, exe_path);
  if (!fs) return fs.error();
  fs->set_read_only(cfg.read_only);
  if (fs->has_rootfs())
    if (auto view = fs->guest_view_of_host_path(exe_path)) exe_path = *view;
  process->kernel_ = std::make_unique<Kernel>(process->engine_, *arch, *process->cpu_, std::move(*fs), cfg);
  if (inherited) process->kernel_->apply_inherited_state(*inherited);

  Kernel* kernel = process->kernel_.get();
  auto trap = [](void* user) noexcept { static_cast<Kernel*>(user)->on_trap(); };
  if (auto status = process->cpu_->install_syscall_trap(trap, kernel); !status) return status.error();

  StackInputs inputs;
  inputs.argv = cfg.argv;
  inputs.envp = cfg.envp;
  inputs.execfn = inherited && !inherited->execfn.empty() ? inherited->execfn : cfg.program;
  if (::getrandom(inputs.random.data(), inputs.random.size(), 0) != static_cast<ssize_t>(inputs.random.size()))
    return make_error(ErrorCode::kIo, "getrandom failed for AT_RANDOM");
  inputs.hwcap = process->cpu_->hwcap();
  inputs.uid = ::getuid();
  inputs.euid = ::geteuid();
  inputs.gid = ::getgid();
  inputs.egid = ::getegid();
  auto start = load_program(kernel->memory(), kernel->fs(), *arch, *program, inputs);
  if (!start) return start.error();
  if (const std::uint64_t limit = kernel->memory().limit(); limit && kernel->memory().mapped_bytes() > limit)
    return make_error(ErrorCode::kLimit,
                      "the program's images and stack need " + std::to_string(kernel->memory().mapped_bytes()) +
                          " bytes, more than --max-memory " + std::to_string(limit),
                      cfg.program);
  kernel->set_program_break(start->brk_start);
  if (!kernel->map_sigreturn_trampoline())
    return make_error(ErrorCode::kLimit, "no room for the signal trampoline page", cfg.program);
  process->images_.push_back({start->program.start, start->program.end, start->program.load_bias, start->program.path});
  if (start->interpreter)
    process->images_.push_back({start->interpreter->start, start->interpreter->end, start->interpreter->load_bias,
                                start->interpreter->path});
  process->entry_pc_ = start->pc;
  std::uint64_t sp = start->stack_pointer;
  if (uc_reg_write(process->engine_, arch->sp_reg, &sp) != UC_ERR_OK)
    return make_error(ErrorCode::kEmulator, "cannot set the stack pointer");
  // The pc too, before anything reads the initial state: on arm an entry with
  // bit 0 set also sets CPSR.T (Unicorn's pc write), so the state recorded at
  // attach says Thumb as the first instruction runs.
  std::uint64_t pc = start->pc;
  if (uc_reg_write(process->engine_, arch->pc_reg, &pc) != UC_ERR_OK)
    return make_error(ErrorCode::kEmulator, "cannot set the program counter");

  auto hooks = std::make_unique<LinuxProcessHooks>();
  hooks->cpu = process->cpu_.get();
  hooks->kernel = process->kernel_.get();
  if (uc_hook_add(process->engine_, &hooks->memory_hook, UC_HOOK_MEM_INVALID,
                  reinterpret_cast<void*>(&LinuxProcessHooks::on_invalid_memory), hooks.get(), 1, 0) != UC_ERR_OK ||
      uc_hook_add(process->engine_, &hooks->interrupt_hook, UC_HOOK_INTR,
                  reinterpret_cast<void*>(&LinuxProcessHooks::on_interrupt), hooks.get(), 1, 0) != UC_ERR_OK)
    return make_error(ErrorCode::kEmulator, "cannot install the fault hooks");
  process->hooks_ = std::move(hooks);
  if (cfg.max_instructions) {
    auto counter = engine::InstructionCounter::attach(process->engine_, *arch);
    if (!counter) return counter.error();
    process->counter_ = std::move(*counter);
    process->kernel_->set_instruction_counter(process->counter_.get());
  }
  return process;
}

LinuxProcess::~LinuxProcess() {
  if (engine_ && hooks_) {
    uc_hook_del(engine_, hooks_->memory_hook);
    uc_hook_del(engine_, hooks_->interrupt_hook);
    if (hooks_->block_hook) uc_hook_del(engine_, hooks_->block_hook);
  }
  counter_.reset();
  kernel_.reset();
  cpu_.reset();
  if (engine_) uc_close(engine_);
}

std::vector<events::MappedRange> LinuxProcess::mapped_ranges() const {
  std::vector<events::MappedRange> ranges;
  for (const auto& [start, vma] : kernel_->memory().vmas())
    ranges.push_back({events::GuestAddress{vma.start}, events::GuestAddress{vma.end}, vma.name, vma.file,
                      vma.file_offset, vma.file_size});
  return ranges;
}

Status LinuxProcess::adopt_memory_layout(std::span<const events::InitialRegion> regions) {
  constexpr std::uint64_t kPage = 4096;
  // A trace is input: a region past the address space, or larger than any a
  // process maps, is refused rather than mapped page by page.
  constexpr std::uint64_t kLargestRegion = std::uint64_t{1} << 36;
  GuestMemory& memory = kernel_->memory();
  // A page the guest's memory map lacks may still be the engine's: the
  // architecture's own (i386's GDT page at the top of the address space).
  auto mapped = [&](std::uint64_t page) {
    std::uint8_t byte = 0;
    return memory.is_mapped(page, kPage) || uc_mem_read(engine_, page, &byte, 1) == UC_ERR_OK;
  };
  for (const events::InitialRegion& region : regions) {
    if (region.size > kLargestRegion || region.start.value > UINT64_MAX - region.size - kPage) {
      char range[64];
      std::snprintf(range, sizeof range, "%#llx (%llu bytes)", static_cast<unsigned long long>(region.start.value),
                    static_cast<unsigned long long>(region.size));
      return make_error(ErrorCode::kBadFormat, std::string("the trace's region at ") + range +
                                                   " lies outside any address space a process has");
    }
    const std::uint64_t start = region.start.value & ~(kPage - 1);
    const std::uint64_t end = (region.start.value + region.size + kPage - 1) & ~(kPage - 1);
    for (std::uint64_t page = start; page < end; page += kPage) {
      if (mapped(page)) continue;
      std::uint64_t run_end = page + kPage;  // the unmapped pages from here, mapped at once
      while (run_end < end && !mapped(run_end)) run_end += kPage;
      if (auto result = memory.map(page, run_end - page, static_cast<int>(region.prot), region.name); !result) {
        char range[64];
        std::snprintf(range, sizeof range, "%#llx-%#llx", static_cast<unsigned long long>(page),
                      static_cast<unsigned long long>(run_end));
        return make_error(ErrorCode::kEmulator, std::string("cannot map the trace's region ") + range + " (" +
                                                    (region.name.empty() ? "anonymous" : region.name) +
                                                    "): " + result.error().to_string());
      }
      page = run_end - kPage;
    }
    if (region.name == "[heap]") kernel_->adopt_program_break(region.start.value + region.size);
  }
  return ok_status();
}

std::uint64_t LinuxProcess::guest_pid() const { return static_cast<std::uint64_t>(::getpid()); }
std::uint64_t LinuxProcess::image_serial() const { return kernel_->image_serial(); }
std::uint64_t LinuxProcess::tree_root_pid() const { return kernel_->tree_root_pid(); }

void LinuxProcess::post_host_signal(int signal, int code, std::uint64_t sender_pid, std::uint64_t sender_uid,
                                    int child_status) noexcept {
  SignalOrigin origin;
  origin.child_status = child_status;
  origin.code = code;
  origin.pid = sender_pid;
  origin.uid = sender_uid;
  kernel_->post_host_signal(signal, origin);
}

std::uint64_t LinuxProcess::syscall_count() const { return kernel_->syscall_count(); }

void LinuxProcess::set_observer(ProcessObserver* observer) {
  kernel_->set_observer(observer);
  if (observer)
    for (const auto& image : images_) observer->on_module_loaded(image.start, image.end, image.bias, image.path);
}

void LinuxProcess::set_syscall_source(SyscallSource* source) { kernel_->set_syscall_source(source); }

void LinuxProcess::request_stop() {
  kernel_->request_stop();
  // (a recording stops at the next block's start instead: see stop_outside_kills_at_blocks)
  if (!kernel_->fatal_signals_stop_at_blocks()) uc_emu_stop(engine_);
}

void LinuxProcess::stop_outside_kills_at_blocks() { kernel_->stop_fatal_signals_at_blocks(); }

RunOutcome LinuxProcess::run() {
  // (after the recorder's hooks: its block hook sees a block before this one can end the run there)
  if (kernel_->fatal_signals_stop_at_blocks() && !install_block_hooks())
    return outcome_of(UC_ERR_HOOK, std::chrono::steady_clock::duration{});
  const auto started = std::chrono::steady_clock::now();
  const std::uint64_t timeout_us = static_cast<std::uint64_t>(config_.timeout.count());
  std::uint64_t begin = entry_pc_;
  while (true) {
    hooks_->fault = FaultRecord{};
    // A run after a signal's delivery gets what is left of the limits.
    std::uint64_t run_timeout_us = 0;
    if (timeout_us) {
      const auto spent = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - started);
      run_timeout_us = timeout_us > static_cast<std::uint64_t>(spent.count()) ? timeout_us - spent.count() : 1;
    }
    std::uint64_t run_count = config_.max_instructions;
    if (run_count && counter_) {
      const std::uint64_t done = counter_->instructions();
      run_count = run_count > done ? run_count - done : 1;
    }
    const uc_err err = uc_emu_start(engine_, begin, UINT64_MAX, run_timeout_us, run_count);
    if (const std::optional<std::uint64_t> stopped_at = kernel_->take_block_stop_pc()) {
      const std::uint64_t pc = resumable_pc(*stopped_at);
      uc_reg_write(engine_, arch_->pc_reg, &pc);
    }
    RunOutcome outcome = outcome_of(err, std::chrono::steady_clock::now() - started);
    if (const std::optional<std::uint64_t> next = restart_after_signal(outcome, err)) {
      begin = *next;
      continue;
    }
    // A signal's default action may have ended the process meanwhile.
    if (kernel_->termination().ended) outcome = outcome_of(err, std::chrono::steady_clock::now() - started);
    return outcome;
  }
}

std::optional<std::uint64_t> LinuxProcess::restart_after_signal(const RunOutcome& outcome, uc_err err) {
  if (kernel_->termination().ended) return std::nullopt;
  // A stop the signal watcher asked for: a signal from another process whose
  // default action ends this one, which runs without syscalls. Should its
  // disposition have changed meanwhile (a syscall in between), the run goes
  // on and the signal waits for the next syscall's return.
  const bool watcher_stop = err == UC_ERR_OK && !hooks_->fault.seen && kernel_->take_fatal_signal_stop();
  if (watcher_stop && kernel_->end_by_fatal_host_signal()) return std::nullopt;
  // A stop the kernel asked for from a syscall (the pc is exact there): the
  // block hook that delivers timer signals goes in, and the run goes on.
  if (err == UC_ERR_OK && !hooks_->fault.seen && kernel_->take_block_hook_request()) {
    if (!install_block_hooks()) return std::nullopt;
    return resumable_pc(outcome.pc);
  }
  if (watcher_stop) return resumable_pc(outcome.pc);
  if (outcome.kind == RunOutcome::Kind::kSignaled && outcome.is_fault && !kernel_->termination().ended) {
    const int code = hooks_->fault.seen ? hooks_->fault.code : (outcome.signal == SIGSEGV ? 0x80 : 1);
    return kernel_->deliver_fault(outcome.signal, code, outcome.fault_address, outcome.pc);
  }
  return std::nullopt;
}

bool LinuxProcess::install_block_hooks() {
  bool added = false;
  if (!hooks_->block_hook) {
    if (uc_hook_add(engine_, &hooks_->block_hook, UC_HOOK_BLOCK, reinterpret_cast<void*>(&LinuxProcessHooks::on_block),
                    hooks_.get(), 1, 0) != UC_ERR_OK)
      return false;
    added = true;
    kernel_->note_block_hook_installed();
  }
  if (kernel_->wants_instruction_counter()) {
    if (!counter_) {
      auto counter = engine::InstructionCounter::attach(engine_, *arch_);
      if (!counter) return false;
      counter_ = std::move(*counter);
      added = true;
    }
    kernel_->set_instruction_counter(counter_.get());
  }
  // Blocks translated before a hook would not call it: drop the translations
  // of executable memory (a whole flush, UC_CTL_TB_FLUSH, clears Unicorn's
  // 1 GiB code buffer: seconds).
  if (added)
    for (const auto& [start, vma] : kernel_->memory().vmas())
      if (vma.prot & PROT_EXEC) uc_ctl_remove_cache(engine_, vma.start, vma.end);
  return true;
}

std::uint64_t LinuxProcess::resumable_pc(std::uint64_t pc) const {
  // Unicorn's pc does not say the instruction set; a run started at an even
  // address on arm runs ARM code, so a Thumb pc gets its bit 0 back.
  const arch::AlternateInstructionSet* alternate = arch_->alternate_isa;
  if (!alternate || !alternate->address_bit0) return pc;
  std::uint64_t mode = 0;
  uc_reg_read(engine_, alternate->uc_register, &mode);
  return (mode & alternate->mask) ? pc | 1 : pc;
}

RunOutcome LinuxProcess::outcome_of(uc_err err, std::chrono::steady_clock::duration elapsed) const {
  RunOutcome outcome;
  std::uint64_t pc = 0;
  uc_reg_read(engine_, arch_->pc_reg, &pc);
  outcome.pc = pc;
  const std::uint64_t timeout_us = static_cast<std::uint64_t>(config_.timeout.count());
  const Termination& end = kernel_->termination();
  const FaultRecord& fault = hooks_->fault;
  if (end.ended) {
    outcome.kind = end.by_signal ? RunOutcome::Kind::kSignaled : RunOutcome::Kind::kExited;
    outcome.exit_code = end.exit_code;
    outcome.signal = end.signal;
    outcome.description = end.description;
    return outcome;
  }
  if (fault.seen) {
    pc = fault.signal == SIGSEGV ? cpu_->locate_faulting_instruction(pc, fault.address) : cpu_->exception_pc(pc);
    outcome.pc = pc;
    outcome.kind = RunOutcome::Kind::kSignaled;
    outcome.is_fault = true;
    outcome.signal = fault.signal;
    outcome.fault_address = fault.address;
    outcome.description = std::string("killed by SIG") + sigabbrev_np(fault.signal) + ": " + fault.what +
                          (fault.signal == SIGSEGV ? " at address " + hex(fault.address) : "") + ", pc " + hex(pc);
    return outcome;
  }
  switch (err) {
    case UC_ERR_OK:
      break;
    case UC_ERR_INSN_INVALID:
      outcome.kind = RunOutcome::Kind::kSignaled;
      outcome.is_fault = true;
      outcome.signal = SIGILL;
      outcome.description = "killed by SIGILL: invalid or unsupported instruction at pc " + hex(pc);
      return outcome;
    case UC_ERR_READ_UNMAPPED: case UC_ERR_WRITE_UNMAPPED: case UC_ERR_FETCH_UNMAPPED:
    case UC_ERR_READ_PROT: case UC_ERR_WRITE_PROT: case UC_ERR_FETCH_PROT:
    case UC_ERR_READ_UNALIGNED: case UC_ERR_WRITE_UNALIGNED: case UC_ERR_FETCH_UNALIGNED:
    case UC_ERR_EXCEPTION:
      outcome.kind = RunOutcome::Kind::kSignaled;
      outcome.is_fault = true;
      outcome.signal = SIGSEGV;
      outcome.description = std::string("killed by SIGSEGV: ") + uc_strerror(err) + " at pc " + hex(pc);
      return outcome;
    default:
      outcome.kind = RunOutcome::Kind::kEmulatorError;
      outcome.description = std::string("emulator error: ") + uc_strerror(err) + " at pc " + hex(pc);
      return outcome;
  }
  // Unicorn returned without an exit: a limit, or an instruction that halts it.
  if (timeout_us && elapsed >= config_.timeout) {
    outcome.kind = RunOutcome::Kind::kTimeout;
    outcome.description = "stopped: --timeout reached at pc " + hex(pc);
    return outcome;
  }
  if (config_.max_instructions) {
    outcome.kind = RunOutcome::Kind::kInstructionLimit;
    outcome.description = "stopped: --max-insns " + std::to_string(config_.max_instructions) + " reached at pc " + hex(pc);
    return outcome;
  }
  // `hlt` (glibc's last resort in abort) and other privileged instructions end
  // emulation in Unicorn; in a Linux process they raise #GP, that is SIGSEGV.
  outcome.kind = RunOutcome::Kind::kSignaled;
  outcome.is_fault = true;
  outcome.signal = SIGSEGV;
  outcome.description = "killed by SIGSEGV: privileged instruction (hlt) at pc " + hex(pc);
  return outcome;
}

}  // namespace tracecorn::linux_layer
