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

#include "arch/arch_info.h"
#include "arch/instruction_decoder.h"
#include "formats/address_namer.h"
#include "recorder/events/event.h"
#include "recorder/support/expected.h"

namespace tracecorn::formats {

class LlvmDisassembler;  // formats/text/llvm_disassembler.h (not installed: an implementation detail)

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
  // addresses ("    stack 0x... 0x...") and nothing is named. A frame at a
  // signal trampoline the namer recognises is gdb's "    at 0x... <signal
  // handler called>". Call before begin().
  void set_address_namer(std::unique_ptr<AddressNamer> namer) { namer_ = std::move(namer); }
  // Prints only the events `filter` accepts (`tracecorn dump --kind/--range/--events`);
  // the others still tell the address namer about modules and mappings. Call before begin().
  void set_filter(std::function<bool(const events::Event&)> filter) { filter_ = std::move(filter); }

  void begin(const events::TraceInfo& info) override;
  void on_event(const events::Event& event) override;
  void flush() override;  // what is written so far reaches the file (events::Sink::flush)
  std::string end(const events::TraceSummary& summary) override;
  bool failed() const override { return !write_error_.empty(); }

 private:
  TextWriter(std::FILE* file, std::string path, const arch::ArchInfo& arch);
  void print_signal(std::uint64_t seq, const events::SignalEvent& signal);
  void print_thread(std::uint64_t seq, events::ThreadId thread, const events::ThreadEvent& change);
  void print_process(std::uint64_t seq, const events::ProcessEvent& change);
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
  std::unique_ptr<arch::InstructionDecoder> decoder_;  // Capstone's, for the architectures it decodes
  std::unique_ptr<LlvmDisassembler> llvm_;  // architectures without Capstone (arch::ArchInfo::llvm_target), when libLLVM loads
  bool owns_file_ = true;
  std::string write_error_;  // the first write error; reported by end()
  std::unique_ptr<AddressNamer> namer_;
  std::function<bool(const events::Event&)> filter_;
};

}  // namespace tracecorn::formats
