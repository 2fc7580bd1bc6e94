// Role: implementation of the Chrome trace-event JSON exporter (see chrome_writer.h).
#include "formats/chrome/chrome_writer.h"

#include <cerrno>
#include <cstring>
#include <variant>

#include <fmt/format.h>

namespace tracecorn::formats {
namespace {

std::string json_string(std::string_view text) {
  std::string out = "\"";
  for (const char c : text) {
    if (c == '"' || c == '\\') out += '\\', out += c;
    else if (static_cast<unsigned char>(c) < 0x20) out += fmt::format("\\u{:04x}", static_cast<int>(c));
    else out += c;
  }
  return out + '"';
}

}  // namespace

Expected<std::unique_ptr<ChromeWriter>> ChromeWriter::open(const std::string& path, ChromeWriterOptions options) {
  std::FILE* file = path == "-" ? stdout : std::fopen(path.c_str(), "wbe");
  if (!file) return make_error(ErrorCode::kIo, std::string("cannot open for writing: ") + std::strerror(errno), path);
  return std::unique_ptr<ChromeWriter>(new ChromeWriter(file, path, std::move(options)));
}

ChromeWriter::~ChromeWriter() {
  if (file_ && file_ != stdout) std::fclose(file_);
}

void ChromeWriter::emit(const std::string& record) {
  if (written_++) std::fputs(",\n", file_);
  std::fwrite(record.data(), 1, record.size(), file_);
}

void ChromeWriter::begin(const events::TraceInfo& info) {
  pid_ = info.process_id ? info.process_id : 1;  // 1 when not recorded
  std::fputs("{\"displayTimeUnit\": \"ns\", \"otherData\": {\"timestamps\": \"instructions executed before the event\"},\n"
             "\"traceEvents\": [\n",
             file_);
  emit(fmt::format("{{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": {}, \"tid\": {}, \"args\": {{\"name\": {}}}}}",
                   pid_, pid_, json_string(info.program.empty() ? options_.source_name : info.program)));
}

std::uint64_t ChromeWriter::tid(const events::Event& event) const {
  return event.thread.value ? event.thread.value : pid_;  // (a harness's events have no thread)
}

void ChromeWriter::on_event(const events::Event& event) {
  const std::uint64_t index = index_++;
  std::visit(
      [&](const auto& p) {
        using T = std::decay_t<decltype(p)>;
        if constexpr (std::is_same_v<T, events::InstructionEvent>) {
          ++instructions_;
        } else if constexpr (std::is_same_v<T, events::BlockEvent>) {
          if (!options_.source_has_instructions || instructions_ == 0) instructions_ += p.instruction_count;
        } else if constexpr (std::is_same_v<T, events::SyscallEvent>) {
          std::string stack;
          for (const auto pc : p.call_stack) stack += fmt::format("{}\"{:#x}\"", stack.empty() ? "" : ", ", pc);
          emit(fmt::format("{{\"name\": {}, \"cat\": \"syscall\", \"ph\": \"X\", \"ts\": {}, \"dur\": 1, \"pid\": {}, "
                           "\"tid\": {}, \"args\": {{\"number\": {}, \"args\": [{}], \"result\": {}, \"pc\": \"{:#x}\", "
                           "\"event\": {}, \"stack\": [{}]}}}}",
                           json_string(p.name), instructions_, pid_, tid(event), p.number, fmt::join(p.args, ", "),
                           p.result, p.pc.value, index, stack));
        } else if constexpr (std::is_same_v<T, events::FaultEvent>) {
          emit(fmt::format("{{\"name\": {}, \"cat\": \"fault\", \"ph\": \"i\", \"s\": \"p\", \"ts\": {}, \"pid\": {}, "
                           "\"tid\": {}, \"args\": {{\"pc\": \"{:#x}\", \"address\": \"{:#x}\", \"signal\": {}}}}}",
                           json_string(p.description), instructions_, pid_, tid(event), p.pc.value, p.address.value,
                           p.signal));
        } else if constexpr (std::is_same_v<T, events::ExitEvent>) {
          emit(fmt::format("{{\"name\": \"exit\", \"cat\": \"process\", \"ph\": \"i\", \"s\": \"p\", \"ts\": {}, "
                           "\"pid\": {}, \"tid\": {}, \"args\": {{\"code\": {}, \"by_signal\": {}}}}}",
                           instructions_, pid_, tid(event), p.code, p.by_signal ? "true" : "false"));
        } else if constexpr (std::is_same_v<T, events::SignalEvent>) {
          const char* abbrev = p.signal > 0 && p.signal < 65 ? sigabbrev_np(static_cast<int>(p.signal)) : nullptr;
          emit(fmt::format("{{\"name\": {}, \"cat\": \"signal\", \"ph\": \"i\", \"s\": \"t\", \"ts\": {}, "
                           "\"pid\": {}, \"tid\": {}, \"args\": {{\"signal\": {}, \"code\": {}, \"handler\": \"{:#x}\", "
                           "\"interrupted_pc\": \"{:#x}\", \"frame\": \"{:#x}\", \"fault\": {}, \"event\": {}}}}}",
                           json_string(abbrev ? std::string("SIG") + abbrev : "signal " + std::to_string(p.signal)),
                           instructions_, pid_, tid(event), p.signal, p.code, p.handler.value, p.interrupted_pc.value,
                           p.frame.value, p.fault ? "true" : "false", index));
        } else if constexpr (std::is_same_v<T, events::ThreadEvent>) {
          static constexpr const char* kNames[] = {"thread", "thread created", "thread exited", "thread switch"};
          const auto change = static_cast<std::size_t>(p.change);
          emit(fmt::format("{{\"name\": \"{}\", \"cat\": \"thread\", \"ph\": \"i\", \"s\": \"t\", \"ts\": {}, "
                           "\"pid\": {}, \"tid\": {}, \"args\": {{\"from\": {}, \"exit_code\": {}, \"event\": {}}}}}",
                           kNames[change < 4 ? change : 0], instructions_, pid_, tid(event), p.from.value, p.exit_code,
                           index));
        } else if constexpr (std::is_same_v<T, events::ProcessEvent>) {
          const bool forked = p.change == events::ProcessChange::kForked;
          emit(fmt::format("{{\"name\": \"{}\", \"cat\": \"process\", \"ph\": \"i\", \"s\": \"p\", \"ts\": {}, "
                           "\"pid\": {}, \"tid\": {}, \"args\": {{\"pid\": {}, \"{}\": {}, \"trace\": {}, \"event\": {}}}}}",
                           forked ? "fork" : "exec", instructions_, pid_, tid(event), p.pid, forked ? "syscall" : "program",
                           json_string(std::string(p.detail)), json_string(std::string(p.trace)), index));
        }
      },
      event.payload);
}

std::string ChromeWriter::end(const events::TraceSummary&) {
  std::fputs("\n]}\n", file_);
  if (options_.events_written) *options_.events_written = written_;
  const bool failed = std::ferror(file_) || (file_ != stdout ? std::fclose(file_) != 0 : std::fflush(file_) != 0);
  file_ = nullptr;
  return failed ? path_ + ": write failed" : "";
}

}  // namespace tracecorn::formats
