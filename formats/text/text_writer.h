// Role: the text sink: prints every event as one readable line (instructions
// disassembled with Capstone), so that a recording is useful before any binary
// format is chosen: `tracecorn record --format text`.
// Who calls it: the recorder's drain thread (Sink interface), one thread at a time.
// Invariants: one event per line, in sequence order, each starting with
// "#<sequence> <kind>"; syscall effects are indented lines under their syscall.
// Output errors (disk full) are remembered and returned by end(), naming the file.
#pragma once

#include <cstdio>
#include <memory>
#include <string>

#include <capstone/capstone.h>

#include "arch/arch.h"
#include "recorder/events/event.h"
#include "recorder/support/expected.h"

namespace tracecorn::formats {

class TextWriter final : public events::Sink {
 public:
  // Writes to `path` ("-" for stdout).
  static Expected<std::unique_ptr<TextWriter>> open(const std::string& path, const arch::ArchInfo& arch);
  ~TextWriter() override;
  TextWriter(const TextWriter&) = delete;
  TextWriter& operator=(const TextWriter&) = delete;

  void begin(const events::TraceInfo& info) override;
  void on_event(const events::Event& event) override;
  std::string end(const events::TraceSummary& summary) override;

 private:
  TextWriter(std::FILE* file, std::string path, const arch::ArchInfo& arch);
  void print_event(const events::Event& event);
  std::string disassemble(const events::InstructionEvent& instruction);
  std::string register_list(std::span<const events::RegisterValue> values) const;

  std::FILE* file_;
  std::string path_;
  const arch::ArchInfo& arch_;
  csh capstone_ = 0;
  cs_insn* insn_ = nullptr;
  bool owns_file_ = true;
  std::string write_error_;  // the first write error; reported by end()
};

}  // namespace tracecorn::formats
