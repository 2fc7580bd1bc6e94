// Role: implementation of TenetWriter (see tenet_writer.h).
#include "formats/tenet/tenet_writer.h"

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

namespace tracecorn::formats {

namespace {

std::uint64_t little_endian_value(const events::RegisterValue& value) {
  std::uint64_t number = 0;
  for (std::size_t i = 0; i < value.size && i < 8; ++i) number |= std::uint64_t{value.bytes[i]} << (8 * i);
  return number;
}

}  // namespace

Expected<std::unique_ptr<TenetWriter>> TenetWriter::open(const std::string& path, const arch::ArchInfo& arch,
                                                        std::uint64_t* lines_written) {
  const auto& names = arch.format_ids.tenet_registers;
  if (names.empty())
    return make_error(ErrorCode::kUnsupported,
                      "Tenet reads traces of x86-64, i386 and aarch64 only, not " + std::string(arch.name), path);
  std::vector<Register> registers;
  for (const arch::TenetRegister& name : names) {
    const arch::RegisterInfo* info = arch.find_register(name.table_name);
    if (!info) return make_error(ErrorCode::kUnsupported, "no register " + std::string(name.table_name), path);
    registers.push_back({name.tenet_name, static_cast<std::uint16_t>(info - arch.registers.data())});
  }
  std::FILE* file = path == "-" ? stdout : std::fopen(path.c_str(), "w");
  if (!file) return make_error(ErrorCode::kIo, std::string("cannot create: ") + std::strerror(errno), path);
  return std::unique_ptr<TenetWriter>(new TenetWriter(file, path, std::move(registers), lines_written));
}

TenetWriter::~TenetWriter() {
  if (file_ && file_ != stdout) std::fclose(file_);
}

void TenetWriter::begin(const events::TraceInfo& info) { apply(info.initial_registers); }

void TenetWriter::apply(std::span<const events::RegisterValue> changes) {
  for (const events::RegisterValue& change : changes) {
    for (Register& held : registers_) {
      if (held.table_index != change.index) continue;
      const std::uint64_t value = little_endian_value(change);
      held.changed = held.changed || !held.known || held.value != value;
      held.value = value;
      held.known = true;
    }
  }
}

void TenetWriter::touched(bool write, std::uint64_t address, std::span<const std::uint8_t> bytes) {
  if (bytes.empty()) return;
  accesses_.push_back({write, address, {bytes.begin(), bytes.end()}});
}

void TenetWriter::on_event(const events::Event& event) {
  std::visit(
      [&](const auto& p) {
        using T = std::decay_t<decltype(p)>;
        if constexpr (std::is_same_v<T, events::InstructionEvent>) {
          write_line(p.address.value);
        } else if constexpr (std::is_same_v<T, events::RegistersEvent>) {
          saw_registers_ = true;
          apply(p.changes);
        } else if constexpr (std::is_same_v<T, events::MemoryEvent>) {
          saw_memory_ = true;
          std::uint8_t bytes[8] = {};  // the value's bytes in memory order (the three architectures: little endian)
          for (std::size_t i = 0; i < p.size && i < 8; ++i) bytes[i] = static_cast<std::uint8_t>(p.value >> (8 * i));
          touched(event.kind == events::EventKind::kMemoryWrite, p.address.value,
                  std::span(bytes, std::min<std::size_t>(p.size, 8)));
        } else if constexpr (std::is_same_v<T, events::SyscallEvent>) {
          apply(p.register_changes);
          for (const auto& write : p.memory_writes) touched(true, write.address.value, write.bytes);
        } else if constexpr (std::is_same_v<T, events::SignalEvent>) {
          apply(p.register_changes);
          for (const auto& write : p.frame_writes) touched(true, write.address.value, write.bytes);
        } else if constexpr (std::is_same_v<T, events::ThreadEvent>) {
          apply(p.registers);  // a switch: the registers of the thread switched to
        }
      },
      event.payload);
}

void TenetWriter::write_line(std::uint64_t pc) {
  line_.clear();
  Register& program_counter = registers_.back();
  for (Register& held : registers_) {
    if (&held == &program_counter || !held.known || !(held.changed || lines_ == 0)) continue;
    fmt::format_to(std::back_inserter(line_), "{}=0x{:x},", held.tenet_name, held.value);
  }
  for (Register& held : registers_) held.changed = false;
  program_counter.value = pc;
  program_counter.known = true;
  fmt::format_to(std::back_inserter(line_), "{}=0x{:x}", program_counter.tenet_name, pc);
  for (const Access& access : accesses_) {
    fmt::format_to(std::back_inserter(line_), ",{}=0x{:x}:", access.write ? "mw" : "mr", access.address);
    for (const std::uint8_t byte : access.bytes) fmt::format_to(std::back_inserter(line_), "{:02x}", byte);
  }
  accesses_.clear();
  line_.push_back('\n');
  std::fwrite(line_.data(), 1, line_.size(), file_);
  ++lines_;
}

std::string TenetWriter::end(const events::TraceSummary&) {
  if (!file_) return path_ + ": ended twice";
  if (lines_written_) *lines_written_ = lines_;
  std::string error;
  if (!saw_registers_ || !saw_memory_ || lines_ == 0)
    error = path_ + ": a Tenet trace needs every instruction with the registers it changed and the memory it " +
            "read and wrote (record at --level full); this trace has " +
            (lines_ == 0 ? "no instruction events" : !saw_registers_ ? "no register changes" : "no memory accesses");
  const bool failed = std::ferror(file_) != 0 || std::fflush(file_) != 0;
  if (error.empty() && failed) error = path_ + ": write error: " + std::strerror(errno);
  if (file_ != stdout) std::fclose(file_);
  file_ = nullptr;
  return error;
}

}  // namespace tracecorn::formats
