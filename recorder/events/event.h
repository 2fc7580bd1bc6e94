// Role: the event model, tracecorn's common language. The recorder's hooks and
// the Linux layer produce events, every trace writer (a Sink) consumes them, every
// trace reader produces them again, and replay compares them.
// Who uses it: sinks receive `const Event&` on the drain thread (or on the
// emulation thread for a flight-recorder dump); nothing here is thread-safe by
// itself, and an Event (with the spans inside it) is valid only during the
// Sink::on_event call that receives it.
// Invariants: sequence numbers start at 0 and count every event the recorder
// produced, including those it had to drop (a Gap event stands where they were,
// and says how many), so sequence numbers never repeat and gaps are visible.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace tracecorn::events {

// Strong types for the values that are easy to mix up.
struct GuestAddress {
  std::uint64_t value = 0;
  friend constexpr bool operator==(GuestAddress, GuestAddress) = default;
  friend constexpr auto operator<=>(GuestAddress, GuestAddress) = default;
};
struct ThreadId {
  std::uint32_t value = 0;
  friend constexpr bool operator==(ThreadId, ThreadId) = default;
};
struct EventSequence {
  std::uint64_t value = 0;
  friend constexpr bool operator==(EventSequence, EventSequence) = default;
};

enum class EventKind : std::uint8_t {
  kBlock = 1,        // a basic block was entered
  kInstruction = 2,  // an instruction was executed (derived from its block)
  kMemoryRead = 3,
  kMemoryWrite = 4,
  kRegisters = 5,    // registers an instruction changed
  kSyscall = 6,
  kFault = 7,
  kModuleLoad = 8,
  kExit = 9,
  kGap = 10,         // events were lost here (count in GapEvent)
  kSignal = 11,      // a signal was delivered to a guest handler (SignalEvent)
  kThread = 12,      // a guest thread was created, exited, or the scheduler switched threads (ThreadEvent)
  kProcess = 13,     // the process forked a child or exec'd a new image (ProcessEvent)
};
// One more than the largest EventKind: the size of a table indexed by kind.
inline constexpr std::size_t kEventKindCount = 14;

std::string_view event_kind_name(EventKind kind);

struct BlockEvent {
  GuestAddress address;
  std::uint32_t size = 0;               // bytes
  std::uint32_t instruction_count = 0;  // as decoded; a fault may end it early (a FaultEvent follows)
  std::span<const std::uint8_t> bytes;  // the block's code
  std::uint8_t mode = 0;                // instruction set (arch::AlternateInstructionSet: arm 0 ARM, 1 Thumb)
  // Read from memory mapped writable: the bytes may be the guest's own (a
  // JIT's), which a trace without the guest's stores holds nowhere else.
  bool from_writable_memory = false;
};

struct InstructionEvent {
  GuestAddress address;
  std::uint32_t size = 0;
  std::span<const std::uint8_t> bytes;
  std::uint32_t index_in_block = 0;
  std::uint8_t mode = 0;  // instruction set, as its block's
};

// Where one instruction lies in its block's bytes.
struct InstructionBounds {
  GuestAddress address;
  std::uint16_t offset = 0;  // from the block's first byte
  std::uint8_t size = 0;
};

// Consecutive instructions of one block handed over at once (Sink::on_instructions):
// stands for instructions.size() InstructionEvents, numbered first_sequence,
// first_sequence + 1, ..., with index_in_block first_index, first_index + 1, ...
struct InstructionRun {
  EventSequence first_sequence;
  ThreadId thread;
  std::span<const std::uint8_t> block_bytes;
  std::span<const InstructionBounds> instructions;
  std::uint32_t first_index = 0;
  std::uint8_t mode = 0;  // instruction set, as the block's (BlockEvent::mode)
};

struct MemoryEvent {
  GuestAddress address;
  std::uint8_t size = 0;        // bytes, 1..8
  std::uint64_t value = 0;      // the loaded or stored value (the number, in its low `size` bytes; in memory
                                // it is in the guest's byte order)
  GuestAddress pc;              // the instruction that made the access (see `pc_known`)
  bool pc_known = false;        // false when the access could not be tied to an instruction
};

// One register's new value; `index` is into arch::ArchInfo::registers.
struct RegisterValue {
  std::uint16_t index = 0;
  std::uint8_t size = 0;                 // bytes (8 for a GPR, 16 for an XMM register...)
  std::array<std::uint8_t, 16> bytes{};  // little endian, `size` bytes used
  std::uint64_t as_u64() const;
};

struct RegistersEvent {
  GuestAddress pc;  // the instruction after which these values hold
  std::span<const RegisterValue> changes;
};

// What the kernel did to the process during a syscall.
struct MemoryWriteEffect {
  GuestAddress address;
  std::span<const std::uint8_t> bytes;
};
enum class MappingChangeKind : std::uint8_t { kMap = 1, kUnmap = 2, kProtect = 3 };
struct MappingEffect {
  MappingChangeKind kind = MappingChangeKind::kMap;
  GuestAddress start;
  std::uint64_t length = 0;
  std::uint32_t prot = 0;  // PROT_* bits after the change
  // kMap only (empty or 0 otherwise): what the new mapping is and what backs it.
  std::string_view name = {};     // "[heap]", "[stack]", a path... ("" for anonymous memory)
  std::string_view file = {};     // the backing file's path ("" when anonymous)
  std::uint64_t file_offset = 0;  // the file offset of the mapping's first byte
  std::uint64_t file_size = 0;    // bytes of the mapping that come from the file (the rest is zero)
};

struct SyscallEvent {
  GuestAddress pc;                  // the trapping instruction
  std::uint64_t number = 0;         // the architecture's syscall number
  std::string_view name;            // the kernel's name ("openat"), or "syscall_N"
  std::uint64_t args[6] = {};
  std::int64_t result = 0;          // the value returned to the guest (negative errno on failure)
  std::span<const MemoryWriteEffect> memory_writes;
  std::span<const MappingEffect> mapping_changes;
  std::span<const RegisterValue> register_changes;  // every register the kernel changed
  std::span<const std::uint64_t> call_stack;        // return addresses, innermost first (filled by the unwinder)
};

struct FaultEvent {
  GuestAddress pc;
  GuestAddress address;  // the faulting memory address, when the fault is a memory access
  std::uint32_t signal = 0;
  std::string_view description;
};

struct ModuleLoadEvent {
  GuestAddress start;
  GuestAddress end;
  std::uint64_t load_bias = 0;
  std::string_view path;
};

struct ExitEvent {
  bool by_signal = false;
  std::int32_t code = 0;    // exit status when !by_signal
  std::int32_t signal = 0;  // host signal number when by_signal
};

// A signal delivered to a guest handler: the kernel wrote the signal frame
// (its bytes are `frame_writes`) and set the registers for the handler
// (`register_changes`). The event's thread is the thread that takes it.
// Where it comes in a trace: after the syscall whose return delivered it (that
// syscall's effects already hold the frame and the handler's registers, as
// the kernel did both in one trap); after the last instruction that completed
// before a fault (`fault`: the faulting instruction did not run, and runs
// again if the handler returns); or between two blocks (a timer's signal:
// the block at `interrupted_pc` runs once the handler returns). In a trace
// the recorder wrote, `register_changes` holds every register of the
// architecture's table, as the handler starts.
struct SignalEvent {
  std::uint32_t signal = 0;           // host signal number
  std::int32_t code = 0;              // si_code (SI_USER, SI_TKILL, SEGV_MAPERR...)
  std::uint64_t sender_pid = 0;       // si_pid for signals sent by a process (0 otherwise)
  GuestAddress fault_address;         // si_addr for faults (0 otherwise)
  GuestAddress interrupted_pc;        // where the interrupted code resumes once the handler returns
  GuestAddress handler;               // the handler's entry point
  GuestAddress frame;                 // the signal frame's address on the guest stack
  bool fault = false;                 // a CPU fault of the instruction at interrupted_pc, which did not complete
  std::span<const MemoryWriteEffect> frame_writes;
  std::span<const RegisterValue> register_changes;
};

// A change of guest threads. The event's thread is the thread it is about
// (created, exited, or switched to).
enum class ThreadChange : std::uint8_t { kCreated = 1, kExited = 2, kSwitched = 3 };
struct ThreadEvent {
  ThreadChange change = ThreadChange::kSwitched;
  ThreadId from;                       // kSwitched: the thread that ran before; kCreated: the parent
  std::int32_t exit_code = 0;          // kExited: the thread's exit status
  std::span<const RegisterValue> registers;  // kSwitched: every register of the thread switched to
  // kSwitched in a block hook: the start of the block the previous thread was
  // entering (it did not run; the thread resumes there). 0 inside a syscall.
  // Not kept by the trace formats (the next block of that thread says it).
  GuestAddress from_pc;
};

// A change of the process tree, in the trace of the process that made it.
// kForked: the process made a child (fork, vfork, clone without CLONE_VM or
// clone3); the event follows the syscall in the parent's trace, and its thread
// is the thread that forked. kExecuted: a successful execve or execveat
// replaced the image; the event follows that syscall and is the image's last
// (the next image has a trace of its own). `trace` names the trace file that
// goes on (the child's first image's, or the next image's): a file name
// without its directory, as the traces of one recording lie in one directory;
// "" when that image is not recorded (a recording to standard output).
enum class ProcessChange : std::uint8_t { kForked = 1, kExecuted = 2 };
struct ProcessEvent {
  ProcessChange change = ProcessChange::kForked;
  std::uint64_t pid = 0;      // kForked: the child's pid; kExecuted: the process's own (it keeps it)
  std::string_view trace;     // the trace file of the child's first image, or of the next image
  std::string_view detail;    // kForked: the syscall ("fork", "vfork", "clone", "clone3"); kExecuted: the path
                              // the exec named, as the guest named it
};

struct GapEvent {
  std::uint64_t lost_events = 0;
  std::string_view reason;
};

using EventPayload = std::variant<BlockEvent, InstructionEvent, MemoryEvent, RegistersEvent, SyscallEvent, FaultEvent,
                                  ModuleLoadEvent, ExitEvent, GapEvent, SignalEvent, ThreadEvent, ProcessEvent>;

struct Event {
  EventSequence sequence;
  // The guest thread the event belongs to: its tid (the process's pid before
  // any kThread event; a harness's engine, with no process: 0). For a kThread
  // event, the thread created, exited or switched to.
  ThreadId thread;
  EventKind kind = EventKind::kBlock;
  EventPayload payload;
};

// One mapped region of guest memory when recording started, with its contents.
struct InitialRegion {
  GuestAddress start;
  std::uint64_t size = 0;           // bytes
  std::uint32_t prot = 0;           // PROT_* bits (R=1 W=2 X=4, as Unicorn's UC_PROT_*)
  std::vector<std::uint8_t> bytes;  // `size` bytes (empty when the contents were not captured)
  std::string name;                 // "[stack]", "[heap]", a module's path... ("" when unknown)
  std::string file;                 // the backing file's path ("" when none or unknown)
  std::uint64_t file_offset = 0;    // the file offset of the region's first byte (when `file` is set)
  std::uint64_t file_size = 0;      // bytes of the region that come from the file
};

// What the caller that mapped guest memory knows of one mapping (the Linux
// layer's view: names, backing files, offsets). Used to describe the regions of
// the initial state; a region inside [start, end) takes its name and file from it.
struct MappedRange {
  GuestAddress start;
  GuestAddress end;  // exclusive
  std::string name;
  std::string file;
  std::uint64_t file_offset = 0;  // of `start`
  std::uint64_t file_size = 0;    // bytes from `start` that come from the file
};

// A file mapped into the guest (the program, its interpreter...), as the caller
// that loaded it knows it. Regions inside [start, end) are named after it.
struct NamedModule {
  GuestAddress start;
  GuestAddress end;  // exclusive
  std::string path;
};

// What a trace is about, given to sinks before the first event.
struct TraceInfo {
  std::string_view arch_name;     // arch::ArchInfo::name
  std::string program;            // the guest program's path, if any
  std::vector<std::string> argv;
  std::string level;              // "blocks", "insns", ...
  // The machine state when recording started, for formats whose traces open with
  // a snapshot (UCIR's first keyframe). Filled by the Recorder at attach() unless
  // RecorderOptions::capture_initial_state is false; empty when not captured.
  bool has_initial_state = false;
  std::vector<RegisterValue> initial_registers;  // every register of the arch table, in table order
  std::vector<InitialRegion> initial_memory;     // every mapped region, by address
  std::vector<NamedModule> modules;              // given by the caller (the CLI: the loaded images)
  std::vector<MappedRange> mapped_ranges;        // given by the caller, by address (names initial regions)
  std::uint64_t process_id = 0;                  // the guest's pid as it sees it (0 when unknown)
};

// Totals, given to sinks after the last event.
struct TraceSummary {
  std::uint64_t events = 0;
  std::uint64_t lost_events = 0;
  std::uint64_t instructions = 0;
  bool interrupted = false;
};

// A consumer of events: a trace writer, the text printer, a test probe.
// Called on one thread at a time (the drain thread, or the emulation thread for
// a flight-recorder dump); begin, then on_event for each event in sequence
// order, then end. A sink reports its own I/O errors from end().
class Sink {
 public:
  virtual ~Sink() = default;
  virtual void begin(const TraceInfo& info) = 0;
  virtual void on_event(const Event& event) = 0;
  // Hands what the sink has written so far to its file (stdio's buffer, a
  // compressor's), so that a SIGKILL from here on loses none of it; a record
  // the sink is still assembling (a UCIR frame, BAP frames' pending
  // instruction) may stay behind. On the thread that calls on_event (or while
  // it waits); errors are reported from end(). The default does nothing.
  virtual void flush() {}
  // Several consecutive events at once (the recorder hands blocks, instructions
  // and memory accesses over this way, one call per batch instead of one per
  // event); the spans are valid during the call only. The default calls
  // on_event for each; a sink overrides it when it can do better.
  virtual void on_events(std::span<const Event> events) {
    for (const Event& event : events) on_event(event);
  }
  // A run of one block's instructions (the recorder hands a block's
  // instructions this way when nothing else happened between them). The default
  // expands it into InstructionEvents for on_event; a sink that can take the
  // instructions of a block at once overrides it.
  virtual void on_instructions(const InstructionRun& run) {
    Event event;
    event.thread = run.thread;
    event.kind = EventKind::kInstruction;
    for (std::size_t i = 0; i < run.instructions.size(); ++i) {
      const InstructionBounds& bounds = run.instructions[i];
      event.sequence = EventSequence{run.first_sequence.value + i};
      event.payload = InstructionEvent{bounds.address, bounds.size, run.block_bytes.subspan(bounds.offset, bounds.size),
                                       static_cast<std::uint32_t>(run.first_index + i), run.mode};
      on_event(event);
    }
  }
  // Returns an empty string on success, else a one-line error naming the file.
  virtual std::string end(const TraceSummary& summary) = 0;
  // True once the sink cannot write any more (a full disk: it drops every later
  // event and end() returns the error). Called on the thread that calls
  // on_event, between events; the recorder then stops the run early.
  virtual bool failed() const { return false; }
};

}  // namespace tracecorn::events
