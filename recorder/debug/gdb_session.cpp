// Role: implementation of GdbSession (gdb_session.h): packet dispatch, the
// target description, registers, memory, points, resumes and monitor commands.
#include "recorder/debug/gdb_session.h"

#include <algorithm>
#include <charconv>

#include <fmt/format.h>

namespace tracecorn::debug {
namespace {

constexpr std::string_view kError = "E01";        // a malformed request
constexpr std::string_view kReadOnly = "E02";     // the trace cannot be changed
constexpr std::string_view kUnknownMemory = "E14";  // EFAULT: bytes the trace does not know
constexpr std::size_t kMaxReadBytes = kMaxPacketBytes / 2 - 16;

bool starts_with(std::string_view text, std::string_view prefix) { return text.substr(0, prefix.size()) == prefix; }

// "ADDR,LENGTH" in hex.
bool parse_address_length(std::string_view text, std::uint64_t& address, std::uint64_t& length) {
  const auto comma = text.find(',');
  if (comma == std::string_view::npos) return false;
  return parse_hex_number(text.substr(0, comma), address) && parse_hex_number(text.substr(comma + 1), length);
}

std::string hex_text(std::string_view text) {
  return to_hex(std::span(reinterpret_cast<const std::uint8_t*>(text.data()), text.size()));
}

}  // namespace

int gdb_signal_number(std::uint32_t host_signal) {
  // gdb numbers signals as include/gdb/signals.def does (the old BSD order);
  // Linux's first 31 differ in places.
  static constexpr int kLinuxToGdb[32] = {0,  1,  2,  3,  4,  5,  6,  10, 8,  9,  30, 11, 31, 13, 14, 15,
                                          0,  20, 19, 17, 18, 21, 22, 16, 24, 25, 26, 27, 28, 23, 32, 12};
  if (host_signal < 32) return kLinuxToGdb[host_signal];
  if (host_signal == 32) return 77;                                 // GDB_SIGNAL_REALTIME_32
  if (host_signal <= 63) return 45 + static_cast<int>(host_signal) - 33;  // GDB_SIGNAL_REALTIME_33..63
  if (host_signal == 64) return 78;                                 // GDB_SIGNAL_REALTIME_64
  return 143;                                                        // GDB_SIGNAL_UNKNOWN
}

std::string target_description(const arch::GdbTarget& target) {
  std::string xml = fmt::format(
      "<?xml version=\"1.0\"?><!DOCTYPE target SYSTEM \"gdb-target.dtd\"><target version=\"1.0\">"
      "<architecture>{}</architecture><osabi>GNU/Linux</osabi>",
      target.architecture);
  std::size_t number = 0;
  for (const auto& feature : target.features) {
    xml += fmt::format("<feature name=\"{}\">{}", feature.name, feature.types_xml);
    for (const auto& reg : feature.registers)
      xml += fmt::format("<reg name=\"{}\" bitsize=\"{}\" type=\"{}\" regnum=\"{}\"/>", reg.name, reg.bits, reg.type,
                         number++);
    xml += "</feature>";
  }
  return xml + "</target>";
}

std::vector<std::uint8_t> initial_auxv(const replay::TraceIndex& index, std::uint64_t sp, bool wide, bool little_endian) {
  const std::size_t word = wide ? 8 : 4;
  auto read_word = [&](std::uint64_t address, std::uint64_t& value) {
    std::uint8_t bytes[8] = {};
    if (index.read_memory(address, std::span(bytes, word)) != word) return false;
    value = 0;
    for (std::size_t i = 0; i < word; ++i) value |= std::uint64_t{bytes[little_endian ? i : word - 1 - i]} << (8 * i);
    return true;
  };
  std::uint64_t argc = 0, value = 0;
  if (!read_word(sp, argc) || argc > 1u << 20) return {};
  std::uint64_t at = sp + word * (argc + 2);  // argc, argv[], NULL
  for (int envp = 0; envp < 1 << 20; ++envp, at += word) {
    if (!read_word(at, value)) return {};
    if (value == 0) break;
  }
  at += word;
  std::vector<std::uint8_t> auxv;
  for (int entry = 0; entry < 512; ++entry, at += 2 * word) {
    std::uint64_t type = 0;
    if (!read_word(at, type) || !read_word(at + word, value)) return {};
    std::vector<std::uint8_t> pair(2 * word);
    index.read_memory(at, pair);
    auxv.insert(auxv.end(), pair.begin(), pair.end());
    if (type == 0) return auxv;  // AT_NULL
  }
  return {};
}

GdbSession::GdbSession(TimeTravel& travel, formats::AddressNamer* namer)
    : travel_(travel), namer_(namer), arch_(travel.index().arch()) {
  if (arch_.gdb) {
    travel.set_watch_before_write(arch_.gdb->watchpoint_before_write);
    target_xml_ = target_description(*arch_.gdb);
    for (const auto& feature : arch_.gdb->features) {
      for (const auto& reg : feature.registers) {
        const auto* info = reg.table_name.empty() ? nullptr : arch_.find_register(reg.table_name);
        table_index_.push_back(info ? static_cast<int>(info - arch_.registers.data()) : -1);
        gdb_bits_.push_back(reg.bits);
      }
    }
  }
  if (const auto sp = arch_.register_index(arch_.sp_reg)) {
    if (auto value = travel.register_value(*sp)) {
      std::uint64_t address = 0;
      for (std::size_t b = 0; b < value->size && b < 8; ++b) address |= std::uint64_t{value->bytes[b]} << (8 * b);
      auxv_ = initial_auxv(travel.index(), address, arch_.elf_64bit, arch_.little_endian);
    }
  }
}

GdbSession::Output GdbSession::handle(const ClientItem& item) {
  Output output;
  switch (item.kind) {
    case ClientItem::Kind::kAck: return output;
    case ClientItem::Kind::kNack: output.bytes = last_reply_; return output;
    case ClientItem::Kind::kBadChecksum: output.bytes = no_ack_ ? "" : "-"; return output;
    case ClientItem::Kind::kInterrupt:
      // Every resume has answered before the next byte is read: nothing runs to
      // interrupt, and the stop reply gdb waits for after a Ctrl-C is the one
      // already sent (another would answer gdb's next packet).
      return output;
    case ClientItem::Kind::kTooLong:
      output.bytes = (no_ack_ ? "" : "+") + frame_packet(kError);
      break;
    case ClientItem::Kind::kPacket: {
      const bool acked = !no_ack_;
      std::string reply = answer(item.payload);
      output.bytes = (acked ? "+" : "") + frame_packet(reply);
      break;
    }
  }
  last_reply_ = output.bytes.substr(output.bytes.find('$') == std::string::npos ? 0 : output.bytes.find('$'));
  output.close = closed_;
  return output;
}

std::string GdbSession::answer(std::string_view packet) {
  if (packet.empty()) return "";
  const std::string_view rest = packet.substr(1);
  switch (packet[0]) {
    case '?': return stop_reply(last_stop_);
    case 'g': return read_registers();
    case 'p': return read_register(rest);
    case 'm': return read_memory(rest);
    case 'G': case 'P': case 'M': case 'X': return std::string(kReadOnly);
    case 'Z': return change_point(rest, true);
    case 'z': return change_point(rest, false);
    case 'c': case 'C': return resume(Direction::kForward, false);
    case 's': case 'S': return resume(Direction::kForward, true);
    case 'b':
      if (rest == "c") return resume(Direction::kBackward, false);
      if (rest == "s") return resume(Direction::kBackward, true);
      return "";
    case 'H': return set_thread(rest);
    case 'T': {
      std::uint32_t thread = 0;
      return parse_thread(rest, thread) && thread != 0 && travel_.thread_alive(thread) ? "OK" : std::string(kError);
    }
    case 'D': closed_ = true; return "OK";
    case 'k': closed_ = true; return "OK";
    case 'q': case 'Q': return query(packet);
    case 'v':
      if (rest == "MustReplyEmpty") return "";
      if (rest == "Cont?") return "vCont;c;C;s;S";
      if (starts_with(rest, "Cont;")) return resume_vcont(rest.substr(5));
      if (starts_with(rest, "Kill")) { closed_ = true; return "OK"; }
      return "";
    default: return "";
  }
}

std::string GdbSession::query(std::string_view packet) {
  if (starts_with(packet, "qSupported"))
    return fmt::format("PacketSize={:x};QStartNoAckMode+;qXfer:features:read{};qXfer:auxv:read{};"
                       "ReverseContinue+;ReverseStep+;QCatchSyscalls+;swbreak+;hwbreak+;vContSupported+",
                       kMaxPacketBytes, target_xml_.empty() ? "-" : "+", auxv_.empty() ? "-" : "+");
  if (packet == "QStartNoAckMode") { no_ack_ = true; return "OK"; }
  if (packet == "qC") return fmt::format("QC{:x}", travel_.current_thread());
  if (packet == "qfThreadInfo") return thread_list();
  if (packet == "qsThreadInfo") return "l";
  if (packet == "qAttached") return "1";
  if (starts_with(packet, "qSymbol")) return "OK";
  if (starts_with(packet, "qThreadExtraInfo,")) {
    std::uint32_t thread = 0;
    if (!parse_thread(packet.substr(17), thread)) return std::string(kError);
    return hex_text(thread == travel_.current_thread() ? "running here" : "switched out");
  }
  if (starts_with(packet, "qXfer:")) return transfer(packet.substr(6));
  if (starts_with(packet, "QCatchSyscalls:")) return catch_syscalls(packet.substr(15));
  if (starts_with(packet, "qRcmd,")) return monitor(packet.substr(6));
  return "";
}

std::string GdbSession::transfer(std::string_view request) const {
  // <object>:read:<annex>:<offset>,<length>
  const std::string_view object = request.substr(0, request.find(':'));
  if (object.size() == request.size()) return std::string(kError);
  std::string_view rest = request.substr(object.size() + 1);
  if (!starts_with(rest, "read:")) return "";
  rest.remove_prefix(5);
  const auto colon = rest.find(':');
  if (colon == std::string_view::npos) return std::string(kError);
  const std::string_view annex = rest.substr(0, colon);
  std::uint64_t offset = 0, length = 0;
  if (!parse_address_length(rest.substr(colon + 1), offset, length)) return std::string(kError);
  std::string_view data;
  if (object == "features" && !target_xml_.empty()) {
    if (annex != "target.xml") return "E00";
    data = target_xml_;
  } else if (object == "auxv" && !auxv_.empty()) {
    data = std::string_view(reinterpret_cast<const char*>(auxv_.data()), auxv_.size());
  } else {
    return "";
  }
  if (offset >= data.size()) return "l";
  const std::size_t take = static_cast<std::size_t>(std::min<std::uint64_t>({length, data.size() - offset, kMaxReadBytes}));
  return (offset + take < data.size() ? "m" : "l") + std::string(data.substr(offset, take));
}

std::string GdbSession::register_hex(std::size_t gdb_number) const {
  const std::size_t bytes = gdb_bits_[gdb_number] / 8;
  const int table = table_index_[gdb_number];
  std::optional<events::RegisterValue> value;
  if (table >= 0 && (general_thread_ == 0 || general_thread_ == travel_.current_thread())) {
    value = travel_.register_value(static_cast<std::size_t>(table));
  } else if (table >= 0) {
    auto other = travel_.thread_register_value(static_cast<std::size_t>(table), general_thread_);
    if (other) value = *other;
  }
  if (!value) return std::string(2 * bytes, 'x');
  std::vector<std::uint8_t> out(bytes, 0);  // little endian, zero-extended or cut to gdb's width
  std::copy_n(value->bytes.begin(), std::min<std::size_t>(bytes, value->size), out.begin());
  if (!arch_.little_endian) std::reverse(out.begin(), out.end());
  return to_hex(out);
}

std::string GdbSession::read_registers() const {
  if (gdb_bits_.empty()) return std::string(kError);
  if (general_thread_ != 0 && !travel_.thread_alive(general_thread_)) return std::string(kError);
  std::string hex;
  for (std::size_t n = 0; n < gdb_bits_.size(); ++n) hex += register_hex(n);
  return hex;
}

std::string GdbSession::read_register(std::string_view number) const {
  std::uint64_t n = 0;
  if (!parse_hex_number(number, n) || n >= gdb_bits_.size()) return std::string(kError);
  return register_hex(static_cast<std::size_t>(n));
}

std::string GdbSession::read_memory(std::string_view arguments) const {
  std::uint64_t address = 0, length = 0;
  if (!parse_address_length(arguments, address, length)) return std::string(kError);
  std::vector<std::uint8_t> bytes(static_cast<std::size_t>(std::min<std::uint64_t>(length, kMaxReadBytes)));
  const std::size_t known = travel_.read_memory(address, bytes);
  if (known == 0 && !bytes.empty()) return std::string(kUnknownMemory);
  return to_hex(std::span(bytes).first(known));
}

std::string GdbSession::change_point(std::string_view packet, bool insert) {
  // TYPE,ADDR,KIND (and conditions after ';', which are not supported)
  if (packet.size() < 2 || packet[1] != ',') return std::string(kError);
  const char type = packet[0];
  std::string_view rest = packet.substr(2, packet.find(';') == std::string_view::npos ? std::string_view::npos
                                                                                        : packet.find(';') - 2);
  std::uint64_t address = 0, kind = 0;
  if (!parse_address_length(rest, address, kind)) return std::string(kError);
  if (type == '0' || type == '1') {
    if (insert) travel_.breakpoints().insert(address);
    else travel_.breakpoints().erase(address);
    return "OK";
  }
  if (type == '2' || type == '3' || type == '4') {
    if (kind == 0 || kind > 4096) return std::string(kError);
    const WatchKind watch = type == '2' ? WatchKind::kWrite : type == '3' ? WatchKind::kRead : WatchKind::kAccess;
    // Reads are in the trace only at levels mem and full.
    if (watch != WatchKind::kWrite && !travel_.index().memory_tracked()) return "";
    if (insert) travel_.watchpoints().insert({address, kind, watch});
    else travel_.watchpoints().erase({address, kind, watch});
    return "OK";
  }
  return "";
}

bool GdbSession::parse_thread(std::string_view text, std::uint32_t& thread) {
  if (text == "-1" || text == "0") {
    thread = 0;
    return true;
  }
  std::uint64_t value = 0;
  if (!parse_hex_number(text, value) || value == 0 || value > UINT32_MAX) return false;
  thread = static_cast<std::uint32_t>(value);
  return true;
}

std::string GdbSession::set_thread(std::string_view arguments) {
  std::uint32_t thread = 0;
  if (arguments.empty() || (arguments[0] != 'g' && arguments[0] != 'c') || !parse_thread(arguments.substr(1), thread))
    return std::string(kError);
  if (thread != 0 && !travel_.thread_alive(thread)) return std::string(kError);
  (arguments[0] == 'g' ? general_thread_ : continue_thread_) = thread;
  return "OK";
}

std::string GdbSession::thread_list() const {
  std::string list = "m";
  for (const std::uint32_t thread : travel_.threads()) list += fmt::format("{}{:x}", list.size() > 1 ? "," : "", thread);
  return list;
}

std::string GdbSession::resume(Direction direction, bool single_step, std::uint32_t thread) {
  if (thread == 0) thread = continue_thread_;
  if (thread == 0 || !travel_.thread_alive(thread)) thread = travel_.current_thread();
  auto stop = single_step ? travel_.step(direction, thread) : travel_.resume(direction);
  if (!stop) return std::string(kError);
  last_stop_ = *stop;
  general_thread_ = 0;  // as gdb assumes after a stop (its record_currthread): the stopped thread's
  return stop_reply(*stop);
}

std::string GdbSession::resume_vcont(std::string_view actions) {
  // ACTION[:THREAD] separated by ';'. A step of one thread wins (the others
  // run meanwhile, as recorded); otherwise everything continues.
  if (actions.empty()) return std::string(kError);
  bool any_continue = false;
  while (!actions.empty()) {
    const std::string_view action = actions.substr(0, actions.find(';'));
    actions.remove_prefix(std::min(actions.size(), action.size() + 1));
    const auto colon = action.find(':');
    const std::string_view verb = action.substr(0, colon);
    std::uint32_t thread = 0;
    if (colon != std::string_view::npos && !parse_thread(action.substr(colon + 1), thread)) return std::string(kError);
    if (verb == "s" || (verb.size() == 3 && verb[0] == 'S')) return resume(Direction::kForward, true, thread);
    if (verb == "c" || (verb.size() == 3 && verb[0] == 'C')) any_continue = true;
    else return std::string(kError);
  }
  return any_continue ? resume(Direction::kForward, false) : std::string(kError);
}

std::string GdbSession::catch_syscalls(std::string_view arguments) {
  if (arguments == "0") {
    travel_.catch_syscalls(false, {});
    return "OK";
  }
  if (arguments.empty() || arguments[0] != '1') return std::string(kError);
  std::vector<std::uint64_t> numbers;
  arguments.remove_prefix(1);
  while (!arguments.empty()) {
    if (arguments[0] != ';') return std::string(kError);
    arguments.remove_prefix(1);
    const auto end = std::min(arguments.find(';'), arguments.size());
    std::uint64_t number = 0;
    if (!parse_hex_number(arguments.substr(0, end), number)) return std::string(kError);
    numbers.push_back(number);
    arguments.remove_prefix(end);
  }
  travel_.catch_syscalls(true, std::move(numbers));
  return "OK";
}

std::string GdbSession::stop_reply(const Stop& stop) const {
  const std::string thread = fmt::format("thread:{:x};", travel_.current_thread());
  switch (stop.kind) {
    case Stop::Kind::kStep: return "T05" + thread;
    case Stop::Kind::kBreakpoint: return "T05" + thread + "swbreak:;";
    case Stop::Kind::kWatchpoint:
      return fmt::format("T05{}{}:{:x};", thread,
                         stop.watch == WatchKind::kWrite ? "watch" : stop.watch == WatchKind::kRead ? "rwatch" : "awatch",
                         stop.address);
    case Stop::Kind::kSyscallEntry: return fmt::format("T05{}syscall_entry:{:x};", thread, stop.number);
    case Stop::Kind::kSyscallReturn: return fmt::format("T05{}syscall_return:{:x};", thread, stop.number);
    case Stop::Kind::kSignal: return fmt::format("T{:02x}{}", gdb_signal_number(stop.signal), thread);
    case Stop::Kind::kBegin: return "T05" + thread + "replaylog:begin;";
    case Stop::Kind::kEnd: return "T05" + thread + "replaylog:end;";
  }
  return "T05" + thread;
}

}  // namespace tracecorn::debug
