// Role: implementation of GdbSession (gdb_session.h): packet dispatch, the
// target description, registers, memory, points, resumes and monitor commands.
#include "recorder/debug/gdb_session.h"

#include "recorder/debug/auxiliary_vector.h"
#include "recorder/replay/process_tree.h"

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

namespace {

constexpr std::uint64_t kCloneVfork = 0x4000;  // CLONE_VFORK, the same on every architecture

std::uint64_t stack_pointer(const TimeTravel& travel, const arch::ArchInfo& arch) {
  std::uint64_t address = 0;
  if (const auto sp = arch.register_index(arch.sp_reg))
    if (auto value = travel.register_value(*sp))
      for (std::size_t b = 0; b < value->size && b < 8; ++b) address |= std::uint64_t{value->bytes[b]} << (8 * b);
  return address;
}

}  // namespace

GdbSession::GdbSession(TimeTravel& travel, formats::AddressNamer* namer) {
  auto first = std::make_unique<Process>();
  attach_travel(*first, travel, namer, true);
  first->pid = std::max<std::uint32_t>(travel.current_thread(), 1);  // the first thread's tid is the pid
  processes_.push_back(std::move(first));
  current_ = general_ = processes_.front().get();
}

GdbSession::GdbSession(std::unique_ptr<DebuggedImage> first, std::string trace, ImageOpener opener)
    : GdbSession(*first->travel, first->namer.get()) {
  opener_ = std::move(opener);
  processes_.front()->image = std::move(first);
  processes_.front()->trace = std::move(trace);
}

GdbSession::~GdbSession() = default;

void GdbSession::attach_travel(Process& process, TimeTravel& travel, formats::AddressNamer* namer, bool at_entry) {
  process.travel = &travel;
  process.namer = namer;
  const arch::ArchInfo& arch = travel.index().arch();
  RegisterMap& map = process.registers;
  map = RegisterMap{&arch, "", {}, {}};
  if (arch.gdb) {
    travel.set_watch_before_write(arch.gdb->watchpoint_before_write);
    map.target_xml = target_description(*arch.gdb);
    for (const auto& feature : arch.gdb->features) {
      for (const auto& reg : feature.registers) {
        const auto* info = reg.table_name.empty() ? nullptr : arch.find_register(reg.table_name);
        map.table_index.push_back(info ? static_cast<int>(info - arch.registers.data()) : -1);
        map.gdb_bits.push_back(reg.bits);
      }
    }
  }
  // A forked child's trace starts at the fork's return, not at an entry: it keeps its parent's (a copy).
  if (at_entry) process.auxv = auxiliary_vector(travel.index(), stack_pointer(travel, arch));
  travel.report_process_changes(fork_events_ || vfork_events_ || exec_events_);
  travel.catch_syscalls(catch_syscalls_, caught_numbers_);
  process.last_stop = Stop{};
}

bool GdbSession::open(Process& process) {
  if (process.travel) return true;
  if (process.detached || !opener_ || process.trace.empty()) return false;
  auto image = opener_(process.trace);
  if (!image || !(*image)->travel) return false;
  attach_travel(process, *(*image)->travel, (*image)->namer.get(), false);
  process.image = std::move(*image);
  process.travel->breakpoints() = process.inherited_breakpoints;
  return true;
}

GdbSession::Process* GdbSession::find(std::uint64_t pid) {
  for (auto& process : processes_)
    if (process->pid == pid && !process->detached) return process.get();
  return nullptr;
}

bool GdbSession::has_thread(const Process& process, std::uint32_t tid) const {
  // A child not opened yet is as the fork left it: one thread, its pid.
  return process.travel ? process.travel->thread_alive(tid) : tid == process.pid;
}

GdbSession::Process* GdbSession::resolve(const ThreadRef& ref, bool need_trace) {
  Process* process = nullptr;
  if (ref.pid != 0) {
    process = find(ref.pid);
  } else if (ref.tid == 0 || has_thread(*current_, ref.tid)) {
    process = current_;
  } else {  // a bare tid: the process that has it
    for (auto& other : processes_)
      if (!other->detached && has_thread(*other, ref.tid)) process = other.get();
  }
  if (!process || (need_trace && !open(*process))) return nullptr;
  if (ref.tid != 0 && !has_thread(*process, ref.tid)) return nullptr;
  return process;
}

std::string GdbSession::thread_id(std::uint64_t pid, std::uint32_t tid) const {
  return multiprocess_ ? fmt::format("p{:x}.{:x}", pid, tid) : fmt::format("{:x}", tid);
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
    case '?': return stop_reply(*current_, current_->last_stop);
    // What reads the trace opens it (a child gdb only selected, or detaches, is never read).
    case 'g': return open(*general_) ? read_registers() : std::string(kError);
    case 'p': return open(*general_) ? read_register(rest) : std::string(kError);
    case 'm': return open(*general_) ? read_memory(rest) : std::string(kError);
    case 'G': case 'P': case 'M': case 'X': return std::string(kReadOnly);
    case 'Z': return change_point(rest, true);
    case 'z': return change_point(rest, false);
    case 'c': case 'C': return resume(Direction::kForward, false, ThreadRef{});
    case 's': case 'S': return resume(Direction::kForward, true, ThreadRef{});
    case 'b':
      if (rest == "c") return resume(Direction::kBackward, false, ThreadRef{});
      if (rest == "s") return resume(Direction::kBackward, true, ThreadRef{});
      return "";
    case 'H': return set_thread(rest);
    case 'T': {
      ThreadRef thread;
      return parse_thread(rest, thread) && thread.tid != 0 && resolve(thread, false) ? "OK" : std::string(kError);
    }
    case 'D': return detach(rest);
    case 'k': closed_ = true; return "OK";
    case 'q': case 'Q': return query(packet);
    case 'v':
      if (rest == "MustReplyEmpty") return "";
      if (rest == "Cont?") return "vCont;c;C;s;S";
      if (starts_with(rest, "Cont;")) return resume_vcont(rest.substr(5));
      if (starts_with(rest, "Kill")) return detach(rest.substr(4));
      return "";
    default: return "";
  }
}

std::string GdbSession::detach(std::string_view arguments) {
  // D, or D;PID (vKill;PID): that process leaves the session, which ends
  // with the last one.
  if (!arguments.empty() && arguments[0] == ';') {
    std::uint64_t pid = 0;
    if (!parse_hex_number(arguments.substr(1), pid)) return std::string(kError);
    Process* process = find(pid);
    if (!process) return std::string(kError);
    process->detached = true;
    auto left = std::find_if(processes_.begin(), processes_.end(), [](const auto& p) { return !p->detached; });
    if (left == processes_.end()) {
      closed_ = true;
      return "OK";
    }
    if (current_->detached) current_ = left->get();
    if (general_->detached) general_ = current_, general_thread_ = 0;
    return "OK";
  }
  closed_ = true;
  return "OK";
}

std::string GdbSession::supported(std::string_view features) {
  // The client's features: "multiprocess+;fork-events+;...".
  auto offered = [&](std::string_view feature) {
    for (std::string_view rest = features; !rest.empty();) {
      const std::string_view item = rest.substr(0, rest.find(';'));
      if (item == feature) return true;
      rest.remove_prefix(std::min(rest.size(), item.size() + 1));
    }
    return false;
  };
  multiprocess_ = offered("multiprocess+");
  // Following processes needs process ids in thread-ids; an exec, the next image's trace.
  fork_events_ = multiprocess_ && offered("fork-events+");
  vfork_events_ = multiprocess_ && offered("vfork-events+");
  exec_events_ = multiprocess_ && opener_ && offered("exec-events+");
  for (auto& process : processes_)
    if (process->travel) process->travel->report_process_changes(fork_events_ || vfork_events_ || exec_events_);
  std::string reply = fmt::format(
      "PacketSize={:x};QStartNoAckMode+;qXfer:features:read{};qXfer:auxv:read{};"
      "ReverseContinue+;ReverseStep+;QCatchSyscalls+;swbreak+;hwbreak+;vContSupported+",
      kMaxPacketBytes, general_->registers.target_xml.empty() ? "-" : "+", general_->auxv.empty() ? "-" : "+");
  if (multiprocess_) reply += ";multiprocess+";
  if (fork_events_) reply += ";fork-events+";
  if (vfork_events_) reply += ";vfork-events+";
  if (exec_events_) reply += ";exec-events+";
  return reply;
}

std::string GdbSession::query(std::string_view packet) {
  if (starts_with(packet, "qSupported")) return supported(packet.size() > 11 ? packet.substr(11) : "");
  if (packet == "QStartNoAckMode") { no_ack_ = true; return "OK"; }
  if (packet == "qC") return "QC" + thread_id(current_->pid, current_->travel->current_thread());
  if (packet == "qfThreadInfo") return thread_list();
  if (packet == "qsThreadInfo") return "l";
  if (packet == "qAttached") return "1";
  if (starts_with(packet, "qSymbol")) return "OK";
  if (starts_with(packet, "qThreadExtraInfo,")) {
    ThreadRef thread;
    if (!parse_thread(packet.substr(17), thread)) return std::string(kError);
    const Process* process = resolve(thread, false);
    if (!process) return std::string(kError);
    const bool running = !process->travel || thread.tid == 0 || thread.tid == process->travel->current_thread();
    return hex_text(running ? "running here" : "switched out");
  }
  if (starts_with(packet, "qXfer:")) return transfer(packet.substr(6));
  if (starts_with(packet, "QCatchSyscalls:")) return catch_syscalls(packet.substr(15));
  if (starts_with(packet, "qRcmd,")) return open(*general_) ? monitor(packet.substr(6)) : std::string(kError);
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
  if (object == "features" && !general_->registers.target_xml.empty()) {
    if (annex != "target.xml") return "E00";
    data = general_->registers.target_xml;
  } else if (object == "auxv" && !general_->auxv.empty()) {
    data = std::string_view(reinterpret_cast<const char*>(general_->auxv.data()), general_->auxv.size());
  } else {
    return "";
  }
  if (offset >= data.size()) return "l";
  const std::size_t take = static_cast<std::size_t>(std::min<std::uint64_t>({length, data.size() - offset, kMaxReadBytes}));
  return (offset + take < data.size() ? "m" : "l") + std::string(data.substr(offset, take));
}

std::string GdbSession::register_hex(std::size_t gdb_number) const {
  const RegisterMap& map = general_->registers;
  const std::size_t bytes = map.gdb_bits[gdb_number] / 8;
  const int table = map.table_index[gdb_number];
  std::optional<events::RegisterValue> value;
  if (table >= 0 && (general_thread_ == 0 || general_thread_ == travel().current_thread())) {
    value = travel().register_value(static_cast<std::size_t>(table));
  } else if (table >= 0) {
    auto other = travel().thread_register_value(static_cast<std::size_t>(table), general_thread_);
    if (other) value = *other;
  }
  if (!value) return std::string(2 * bytes, 'x');
  std::vector<std::uint8_t> out(bytes, 0);  // little endian, zero-extended or cut to gdb's width
  std::copy_n(value->bytes.begin(), std::min<std::size_t>(bytes, value->size), out.begin());
  if (!arch().little_endian) std::reverse(out.begin(), out.end());
  return to_hex(out);
}

std::string GdbSession::read_registers() const {
  if (general_->registers.gdb_bits.empty()) return std::string(kError);
  if (general_thread_ != 0 && !travel().thread_alive(general_thread_)) return std::string(kError);
  std::string hex;
  for (std::size_t n = 0; n < general_->registers.gdb_bits.size(); ++n) hex += register_hex(n);
  return hex;
}

std::string GdbSession::read_register(std::string_view number) const {
  std::uint64_t n = 0;
  if (!parse_hex_number(number, n) || n >= general_->registers.gdb_bits.size()) return std::string(kError);
  return register_hex(static_cast<std::size_t>(n));
}

std::string GdbSession::read_memory(std::string_view arguments) const {
  std::uint64_t address = 0, length = 0;
  if (!parse_address_length(arguments, address, length)) return std::string(kError);
  std::vector<std::uint8_t> bytes(static_cast<std::size_t>(std::min<std::uint64_t>(length, kMaxReadBytes)));
  const std::size_t known = travel().read_memory(address, bytes);
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
    // A child not opened yet keeps them until it is (gdb removes its parent's from it as it detaches it).
    auto& points = general_->travel ? travel().breakpoints() : general_->inherited_breakpoints;
    if (insert) points.insert(address);
    else points.erase(address);
    return "OK";
  }
  if (type == '2' || type == '3' || type == '4') {
    if (kind == 0 || kind > 4096 || !open(*general_)) return std::string(kError);
    const WatchKind watch = type == '2' ? WatchKind::kWrite : type == '3' ? WatchKind::kRead : WatchKind::kAccess;
    // Reads are in the trace only at levels mem and full.
    if (watch != WatchKind::kWrite && !travel().index().memory_tracked()) return "";
    if (insert) travel().watchpoints().insert({address, kind, watch});
    else travel().watchpoints().erase({address, kind, watch});
    return "OK";
  }
  return "";
}

bool GdbSession::parse_thread(std::string_view text, ThreadRef& thread) {
  // TID, or pPID.TID, pPID, pPID.-1 (all its threads); -1 (all) and 0 (any) as 0.
  auto number = [](std::string_view part, std::uint64_t& value, std::uint64_t most) {
    if (part == "-1" || part == "0") {
      value = 0;
      return true;
    }
    return parse_hex_number(part, value) && value != 0 && value <= most;
  };
  thread = ThreadRef{};
  std::uint64_t tid = 0;
  if (!text.empty() && text[0] == 'p') {
    text.remove_prefix(1);
    const auto dot = text.find('.');
    if (!number(text.substr(0, dot), thread.pid, UINT64_MAX)) return false;
    if (dot == std::string_view::npos) return true;
    text.remove_prefix(dot + 1);
  }
  if (!number(text, tid, UINT32_MAX)) return false;
  thread.tid = static_cast<std::uint32_t>(tid);
  return true;
}

std::string GdbSession::set_thread(std::string_view arguments) {
  ThreadRef thread;
  if (arguments.empty() || (arguments[0] != 'g' && arguments[0] != 'c') || !parse_thread(arguments.substr(1), thread))
    return std::string(kError);
  Process* process = resolve(thread, false);
  if (!process) return std::string(kError);
  if (arguments[0] == 'g') {
    general_ = process;
    general_thread_ = thread.tid;
  } else {
    continue_thread_ = ThreadRef{process->pid, thread.tid};
  }
  return "OK";
}

std::string GdbSession::thread_list() const {
  std::string list = "m";
  auto add = [&](const Process& process) {
    if (process.detached) return;
    const auto threads = process.travel ? process.travel->threads() : std::vector<std::uint32_t>{
                                                                          static_cast<std::uint32_t>(process.pid)};
    for (const std::uint32_t thread : threads) list += (list.size() > 1 ? "," : "") + thread_id(process.pid, thread);
  };
  add(*current_);
  for (auto& process : processes_)
    if (process.get() != current_) add(*process);
  return list;
}

Expected<Stop> GdbSession::resume_process(Process& process, Direction direction, bool single_step,
                                          std::uint32_t thread) {
  if (direction == Direction::kForward && process.vfork_done_pending) {
    // The vforked child has exec'd or ended (its parent's vfork has returned in the trace): say so first.
    process.vfork_done_pending = false;
    Stop done;
    done.kind = Stop::Kind::kVforkDone;
    return done;
  }
  for (;;) {
    auto stop = single_step ? process.travel->step(direction, thread) : process.travel->resume(direction);
    if (!stop || (stop->kind != Stop::Kind::kForked && stop->kind != Stop::Kind::kExecuted)) return stop;
    if (auto followed = follow_change(process, *stop)) return *followed;
  }
}

std::optional<Stop> GdbSession::follow_change(Process& process, const Stop& stop) {
  replay::TraceIndex& index = process.travel->index();
  const auto& change = index.process_changes().at(stop.number);
  if (stop.kind == Stop::Kind::kForked) {
    // A vfork: the syscall's name, or clone with CLONE_VFORK (how glibc vforks where there is no vfork syscall).
    const replay::SyscallRecord* call = index.syscall_before(change.event);
    const bool vfork = change.detail == "vfork" || (call && call->name == "clone" && (call->args[0] & kCloneVfork));
    // Not followed, or passed again (after going back) with the child still kept: gdb knows it already.
    if (!(vfork ? vfork_events_ : fork_events_) || find(change.pid)) return std::nullopt;
    auto child = std::make_unique<Process>();
    child->pid = change.pid;
    if (auto path = replay::trace_named_beside(process.trace, change.trace); path && !process.trace.empty())
      child->trace = *path;
    child->inherited_breakpoints = process.travel->breakpoints();
    child->auxv = process.auxv;            // memory is a copy: the same auxiliary vector
    child->registers = process.registers;  // and the same architecture
    processes_.push_back(std::move(child));
    process.vfork_done_pending = vfork;
    Stop reported = stop;
    reported.kind = vfork ? Stop::Kind::kVforked : Stop::Kind::kForked;
    reported.address = change.pid;
    return reported;
  }
  // An exec: on into the next image's trace, at its first instruction. Not
  // followed, or not recorded: the trace ends at the exec.
  if (!exec_events_ || process.trace.empty()) return std::nullopt;
  auto path = replay::trace_named_beside(process.trace, change.trace);
  if (!path) return std::nullopt;
  auto image = opener_(*path);
  if (!image || !(*image)->travel) return std::nullopt;
  const std::string named = change.detail;  // (the old image, its index with it, goes below)
  attach_travel(process, *(*image)->travel, (*image)->namer.get(), true);
  process.image = std::move(*image);
  // gdb loads the file the stop names: the host's path where the trace says it
  // (the exec named it relative to the guest's directory, which gdb may not share).
  std::string program = process.image->program;
  if (program.empty() && process.image->index) program = mapped_program(*process.image->index, process.auxv);
  if (program.empty()) program = named;
  process.trace = *path;
  process.program = program;
  Stop executed;
  executed.kind = Stop::Kind::kExecuted;
  return executed;
}

std::string GdbSession::resume(Direction direction, bool single_step, ThreadRef target) {
  if (target.pid == 0 && target.tid == 0) target = continue_thread_;
  Process* process = resolve(target, true);
  if (!process) process = resolve(ThreadRef{target.pid, 0}, true);
  if (!process) process = current_;
  std::uint32_t thread = target.tid;
  if (thread == 0 || !process->travel->thread_alive(thread)) thread = process->travel->current_thread();
  auto stop = resume_process(*process, direction, single_step, thread);
  if (!stop) return std::string(kError);
  process->last_stop = *stop;
  current_ = general_ = process;
  general_thread_ = 0;  // as gdb assumes after a stop (its record_currthread): the stopped thread's
  return stop_reply(*process, *stop);
}

std::string GdbSession::resume_vcont(std::string_view actions) {
  // ACTION[:THREAD] separated by ';'. A step of one thread wins (the others
  // run meanwhile, as recorded); otherwise the process of the first action
  // that names one (the current process when none does) continues.
  if (actions.empty()) return std::string(kError);
  bool any_continue = false;
  ThreadRef continued;
  while (!actions.empty()) {
    const std::string_view action = actions.substr(0, actions.find(';'));
    actions.remove_prefix(std::min(actions.size(), action.size() + 1));
    const auto colon = action.find(':');
    const std::string_view verb = action.substr(0, colon);
    ThreadRef thread;
    if (colon != std::string_view::npos && !parse_thread(action.substr(colon + 1), thread)) return std::string(kError);
    if (verb == "s" || (verb.size() == 3 && verb[0] == 'S')) return resume(Direction::kForward, true, thread);
    if (verb == "c" || (verb.size() == 3 && verb[0] == 'C')) {
      if (!any_continue) continued = ThreadRef{thread.pid, 0};
      any_continue = true;
    } else {
      return std::string(kError);
    }
  }
  if (!any_continue) return std::string(kError);
  if (continued.pid == 0) continued.pid = current_->pid;
  return resume(Direction::kForward, false, continued);
}

std::string GdbSession::catch_syscalls(std::string_view arguments) {
  if (arguments == "0") {
    catch_syscalls_ = false;
    caught_numbers_.clear();
    for (auto& process : processes_)
      if (process->travel) process->travel->catch_syscalls(false, {});
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
  catch_syscalls_ = true;
  caught_numbers_ = std::move(numbers);
  for (auto& process : processes_)
    if (process->travel) process->travel->catch_syscalls(true, caught_numbers_);
  return "OK";
}

std::string GdbSession::stop_reply(const Process& process, const Stop& stop) const {
  const std::string thread = "thread:" + thread_id(process.pid, process.travel->current_thread()) + ";";
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
    case Stop::Kind::kForked: case Stop::Kind::kVforked:
      return fmt::format("T05{}:{};{}", stop.kind == Stop::Kind::kForked ? "fork" : "vfork",
                         thread_id(stop.address, static_cast<std::uint32_t>(stop.address)), thread);
    case Stop::Kind::kVforkDone: return "T05vforkdone:;" + thread;
    case Stop::Kind::kExecuted: return "T05exec:" + hex_text(process.program) + ";" + thread;
  }
  return "T05" + thread;
}

}  // namespace tracecorn::debug
