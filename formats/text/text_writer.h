// Role: the text sink: prints every event as one readable line (instructions
// disassembled with Capstone; riscv64's with LLVM, see llvm_disassembler.h), so that a recording is useful before any binary
// format is chosen: `tracecorn record --format text`.
// Who calls it: the recorder's drain thread (Sink interface), one thread at a time.
// Invariants: one event per line, in sequence order, each starting with
// "#<sequence> <kind>"; syscall effects are indented lines under their syscall.
// Output errors (disk full) are remembered and returned by end(), naming the file.
#pragma once

#include <cstdio>
#include <functional>
#include <memory>
#include <string>

#include <capstone/capstone.h>

#include "arch/arch.h"
#include "recorder/events/event.h"
#include "recorder/support/expected.h"

namespace tracecorn::formats {

class LlvmDisassembler;  // formats/text/llvm_disassembler.h (not installed: an implementation detail)

// Names code addresses for the call stacks printed under syscalls (the CLI
// gives one over the unwinder's symbolizer). Fed the trace's module and unmap
// events in order; called on the sink's thread only.
class AddressNamer {
 public:
  virtual ~AddressNamer() = default;
  virtual void module_loaded(const events::ModuleLoadEvent& module) = 0;
  virtual void unmapped(std::uint64_t start, std::uint64_t length) = 0;
  // A file mapped from its first byte at [start, end), as a trace's mapping
  // records say it (initial regions, syscall maps): for traces without module
  // events (UCIR). Default: ignored.
  virtual void file_mapped(std::uint64_t start, std::uint64_t end, std::string_view path) {
    (void)start, (void)end, (void)path;
  }
  // "write+0x17 (/usr/lib/x86_64-linux-gnu/libc.so.6)", or "" when unknown.
  virtual std::string name(std::uint64_t address) = 0;
};

// Tells `namer` what a trace maps, in the trace's order: the files mapped from
// their first byte in the initial state (each over its run of adjacent regions),
// then, per event, a module load or a syscall's mapping changes (after the
// syscall: its stack was taken before the kernel ran). Used by every reader of a
// trace that names addresses (the text writer, `tracecorn stat`).
void name_initial_mappings(AddressNamer& namer, const events::TraceInfo& info);
void name_event_mappings(AddressNamer& namer, const events::Event& event);

class TextWriter final : public events::Sink {
 public:
  // Writes to `path` ("-" for stdout).
  static Expected<std::unique_ptr<TextWriter>> open(const std::string& path, const arch::ArchInfo& arch);
  ~TextWriter() override;
  TextWriter(const TextWriter&) = delete;
  TextWriter& operator=(const TextWriter&) = delete;

  // With a namer, each syscall's stack is printed one frame a line, named
  // ("    at 0x7ffff7e9e887 write+0x17 (/usr/lib/.../libc.so.6)"), and block
  // and fault lines end with the name of their address ("#7 block 0x401000
  // size 12 insns 3 main+0x10 (/tmp/a.out)", "...: SIGSEGV; at main+0x14
  // (/tmp/a.out)") when it has one; without, the stack is one line of
  // addresses ("    stack 0x... 0x...") and nothing is named. Call before begin().
  void set_address_namer(std::unique_ptr<AddressNamer> namer) { namer_ = std::move(namer); }
  // Prints only the events `filter` accepts (`tracecorn dump --kind/--range/--events`);
  // the others still tell the address namer about modules and mappings. Call before begin().
  void set_filter(std::function<bool(const events::Event&)> filter) { filter_ = std::move(filter); }

  void begin(const events::TraceInfo& info) override;
  void on_event(const events::Event& event) override;
  std::string end(const events::TraceSummary& summary) override;
  bool failed() const override { return !write_error_.empty(); }

 private:
  TextWriter(std::FILE* file, std::string path, const arch::ArchInfo& arch);
  void print_event(const events::Event& event);
  // Tells the namer about a module load or a syscall's mapping changes.
  void follow_mappings(const events::Event& event);
  // " NAME" for `address` when the namer knows it, else "".
  std::string name_suffix(std::uint64_t address, std::string_view before = " ");
  std::string disassemble(const events::InstructionEvent& instruction);
  std::string register_list(std::span<const events::RegisterValue> values) const;

  std::FILE* file_;
  std::string path_;
  const arch::ArchInfo& arch_;
  std::array<csh, 2> capstone_{};  // one per instruction-set mode (arch::open_capstone_handles)
  cs_insn* insn_ = nullptr;
  std::unique_ptr<LlvmDisassembler> llvm_;  // architectures without Capstone (arch::ArchInfo::llvm_target), when libLLVM loads
  bool owns_file_ = true;
  std::string write_error_;  // the first write error; reported by end()
  std::unique_ptr<AddressNamer> namer_;
  std::function<bool(const events::Event&)> filter_;
};

}  // namespace tracecorn::formats
