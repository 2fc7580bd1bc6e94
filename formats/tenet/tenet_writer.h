// Role: the Tenet export, a write-only format: the text trace of the Tenet
// trace explorer for IDA Pro and Binary Ninja (github.com/gaasedelen/tenet,
// tracers/README.md), one line per executed instruction.
// A line is the state as an instruction is about to run, as Tenet's reference
// Pin tracer writes it: the registers that changed since the line before
// (every one of them on the first line), `name=0x...`, the program counter
// last among them, then the memory the instruction before touched, as
// `mr=ADDR:HEX` and `mw=ADDR:HEX` (bytes in memory order). What the kernel
// did in between (a syscall's result and the bytes it wrote, a signal
// handler's registers and frame, a thread switch's registers) joins the
// next line's changes: Tenet has one register file and no syscalls. The
// last instruction's own changes have no line (no instruction follows).
// The registers are Tenet's architecture definition's
// (arch::FormatIds::tenet_registers: x86-64, i386, aarch64); other
// architectures are refused at open. The trace must hold the registers every
// instruction changed and its memory accesses with their values (level
// full): end() fails, naming what is missing, otherwise.
// Who calls it: the trace tools through the format registry's writer factory
// (formats/registry.h), as a Sink fed by a reader; one thread. Write errors
// come back from end(), naming the file.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "arch/arch_info.h"
#include "recorder/events/event.h"
#include "recorder/support/expected.h"

namespace tracecorn::formats {

class TenetWriter final : public events::Sink {
 public:
  // Opens `path` for the trace of an `arch` program. Fails with kUnsupported
  // for an architecture Tenet reads no trace of, kIo when `path` cannot be created.
  // `lines_written`, when given, is set at end() to the lines written.
  static Expected<std::unique_ptr<TenetWriter>> open(const std::string& path, const arch::ArchInfo& arch,
                                                    std::uint64_t* lines_written = nullptr);
  ~TenetWriter() override;
  TenetWriter(const TenetWriter&) = delete;
  TenetWriter& operator=(const TenetWriter&) = delete;

  void begin(const events::TraceInfo& info) override;
  void on_event(const events::Event& event) override;
  std::string end(const events::TraceSummary& summary) override;

 private:
  struct Register {
    std::string_view tenet_name;
    std::uint16_t table_index = 0;
    std::uint64_t value = 0;
    bool known = false, changed = false;
  };
  struct Access {
    bool write = false;
    std::uint64_t address = 0;
    std::vector<std::uint8_t> bytes;
  };
  TenetWriter(std::FILE* file, std::string path, std::vector<Register> registers, std::uint64_t* lines_written)
      : file_(file), path_(std::move(path)), registers_(std::move(registers)), lines_written_(lines_written) {}
  void apply(std::span<const events::RegisterValue> changes);
  void touched(bool write, std::uint64_t address, std::span<const std::uint8_t> bytes);
  // The line of the instruction at `pc`, about to run.
  void write_line(std::uint64_t pc);

  std::FILE* file_;
  std::string path_;
  std::vector<Register> registers_;  // Tenet's, the program counter last
  std::uint64_t* lines_written_;
  std::vector<Access> accesses_;  // since the last line
  std::string line_;
  std::uint64_t lines_ = 0;
  bool saw_registers_ = false, saw_memory_ = false;
};

}  // namespace tracecorn::formats
