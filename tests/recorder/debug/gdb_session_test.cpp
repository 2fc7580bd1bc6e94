// Role: tests of the debug server's protocol layers (recorder/debug/): the
// packet parser against hand-made byte streams (checksums, escapes,
// acknowledgements, interrupts, oversized packets, any split of the stream),
// and GdbSession's answers over a real trace (nested_calls, x86-64, full
// level): registers and memory as the trace has them (unknown bytes are
// errors), the target description read back in pieces, read-only refusals,
// acknowledgement modes, threads (debug_threads), and malformed or random
// packets (thread ids and monitor why's arguments among them) answered with
// an error or the empty reply, never a crash (a seeded random campaign).
// Who runs it: unit_tests, on the doctest thread.
#include <doctest/doctest.h>

#include <random>
#include <set>

#include <fmt/format.h>

#include "recorder/debug/gdb_session.h"
#include "recorder/debug/remote_protocol.h"
#include "tests/recorder/replay/replay_test_helpers.h"

using namespace tracecorn;
using debug::ClientItem;
using debug::GdbSession;
using debug::PacketParser;

namespace {

std::vector<ClientItem> parse(std::string_view bytes, std::size_t piece = 0) {
  PacketParser parser;
  std::vector<ClientItem> items;
  const auto* data = reinterpret_cast<const std::uint8_t*>(bytes.data());
  if (piece == 0) piece = bytes.size();
  for (std::size_t at = 0; at < bytes.size(); at += piece)
    parser.feed(std::span(data + at, std::min(piece, bytes.size() - at)), items);
  return items;
}

std::string unhex(const std::string& hex) {
  std::vector<std::uint8_t> bytes;
  REQUIRE(debug::from_hex(hex, bytes));
  return std::string(bytes.begin(), bytes.end());
}

// A sample (nested_calls unless named) recorded at the full level (x86-64),
// indexed, with a session at its first instruction; the trace is removed with it.
struct RecordedSession {
  std::string trace;
  std::vector<std::uint8_t> first_bytes;  // the first instruction's
  std::uint64_t first_pc = 0;
  std::unique_ptr<replay::TraceReader> reader;
  std::unique_ptr<replay::TraceIndex> index;
  std::unique_ptr<debug::TimeTravel> travel;
  std::unique_ptr<GdbSession> session;
  ~RecordedSession() { std::filesystem::remove(trace); }
};

std::unique_ptr<RecordedSession> record_session(const std::string& stem, const std::string& sample = "nested_calls") {
  auto recorded = std::make_unique<RecordedSession>();
  recorded->trace = test::replay_temp_path(stem);
  test::record_files(test::kReplaySamples + "/static/" + sample, core::TraceLevel::kFull,
                     {{replay::TraceFormat::kUcir, recorded->trace}});
  auto first = replay::TraceReader::open(recorded->trace);
  REQUIRE(first.has_value());
  for (bool done = false; !done;) {
    auto more = (*first)->next([&](const events::Event& event) {
      if (const auto* insn = std::get_if<events::InstructionEvent>(&event.payload); insn && !done) {
        recorded->first_pc = insn->address.value;
        recorded->first_bytes.assign(insn->bytes.begin(), insn->bytes.end());
        done = true;
      }
    });
    REQUIRE(more.has_value());
    REQUIRE(*more);
  }
  auto reader = replay::TraceReader::open(recorded->trace);
  REQUIRE(reader.has_value());
  recorded->reader = std::move(*reader);
  auto index = replay::TraceIndex::build(*recorded->reader);
  REQUIRE(index.has_value());
  recorded->index = std::move(*index);
  auto travel = debug::TimeTravel::start(*recorded->index);
  REQUIRE(travel.has_value());
  recorded->travel = std::move(*travel);
  recorded->session = std::make_unique<GdbSession>(*recorded->travel);
  return recorded;
}

}  // namespace

TEST_CASE("Malicious: the debug server's packet parser splits, checks and unescapes any byte stream a client sends") {
  const std::string stream = "+$qSupported:swbreak+#8bgarbage-\x03$m0,4#fd$bad#00$}\x03x#f8";
  for (std::size_t piece : {0, 1, 3, 7}) {
    CAPTURE(piece);
    const auto items = parse(stream, piece);
    REQUIRE(items.size() == 7);
    CHECK(items[0].kind == ClientItem::Kind::kAck);
    CHECK(items[1].kind == ClientItem::Kind::kPacket);
    CHECK(items[1].payload == "qSupported:swbreak+");
    CHECK(items[2].kind == ClientItem::Kind::kNack);
    CHECK(items[3].kind == ClientItem::Kind::kInterrupt);
    CHECK(items[4].kind == ClientItem::Kind::kPacket);
    CHECK(items[4].payload == "m0,4");
    CHECK(items[5].kind == ClientItem::Kind::kBadChecksum);
    CHECK(items[6].kind == ClientItem::Kind::kPacket);
    CHECK(items[6].payload == "#x");  // "}" escapes the next byte: 0x03 ^ 0x20
  }
  // The escape: "}" then the byte XOR 0x20 ("}\x03" is '#').
  const auto escaped = parse(debug::frame_packet("a#b$c}d*e"));
  REQUIRE(escaped.size() == 1);
  CHECK(escaped[0].payload == "a#b$c}d*e");
  // Every byte value survives framing.
  std::string all;
  for (int b = 0; b < 256; ++b) all.push_back(static_cast<char>(b));
  const auto round = parse(debug::frame_packet(all));
  REQUIRE(round.size() == 1);
  CHECK(round[0].payload == all);
  // An oversized packet is one item, and the next packet still parses.
  const auto long_items = parse(debug::frame_packet(std::string(debug::kMaxPacketBytes + 10, 'x')) + "$?#3f");
  REQUIRE(long_items.size() == 2);
  CHECK(long_items[0].kind == ClientItem::Kind::kTooLong);
  CHECK(long_items[1].payload == "?");
  // A checksum that is not hex.
  const auto bad = parse("$g#zz$g#67");
  REQUIRE(bad.size() == 2);
  CHECK(bad[0].kind == ClientItem::Kind::kBadChecksum);
  CHECK(bad[1].payload == "g");
}

TEST_CASE("Debug server: GdbSession answers from the trace: registers, memory, acknowledgements, both ends") {
  auto recorded = record_session("gdb-session.ucir");
  GdbSession& session = *recorded->session;
  const std::uint64_t first_pc = recorded->first_pc;
  const auto& first_bytes = recorded->first_bytes;
  const auto& gdb = *recorded->index->arch().gdb;

  SUBCASE("registers, memory and the target description") {
    std::size_t bits = 0;
    for (const auto& feature : gdb.features)
      for (const auto& reg : feature.registers) bits += reg.bits;
    const std::string registers = session.answer("g");
    CHECK(registers.size() == bits / 4);
    CHECK(session.answer("p10") == fmt::format("{:016x}", __builtin_bswap64(first_pc)));  // rip, little endian
    CHECK(session.answer("p39").find_first_not_of('x') == std::string::npos);              // fiseg: not in traces
    CHECK(session.answer(fmt::format("m{:x},{:x}", first_pc, first_bytes.size())) == debug::to_hex(first_bytes));
    CHECK(session.answer("m0,8") == "E14");
    std::string xml;
    for (std::size_t offset = 0;; offset += 100) {
      const std::string piece = session.answer(fmt::format("qXfer:features:read:target.xml:{:x},64", offset));
      REQUIRE(!piece.empty());
      xml += piece.substr(1, 100);
      if (piece[0] == 'l') break;
      REQUIRE(piece[0] == 'm');
    }
    CHECK(xml.find("<architecture>i386:x86-64</architecture>") != std::string::npos);
    CHECK(session.answer("qXfer:auxv:read::0,1000").size() > 16);
  }
  SUBCASE("acknowledgements, the ends of the trace, and detaching") {
    // The one thread's id is the process's pid, as the trace has it.
    const std::string thread = fmt::format("thread:{:x};", recorded->index->first_thread());
    CHECK(session.answer("qfThreadInfo") == fmt::format("m{:x}", recorded->index->first_thread()));
    auto out = session.handle({ClientItem::Kind::kPacket, "?"});
    CHECK(out.bytes == "+" + debug::frame_packet("T05" + thread));
    CHECK(session.handle({ClientItem::Kind::kNack, {}}).bytes == debug::frame_packet("T05" + thread));
    CHECK(session.handle({ClientItem::Kind::kBadChecksum, {}}).bytes == "-");
    CHECK(session.handle({ClientItem::Kind::kInterrupt, {}}).bytes.empty());  // nothing runs: no second stop reply
    CHECK(session.answer("bs") == "T05" + thread + "replaylog:begin;");
    CHECK(session.answer("c") == "T05" + thread + "replaylog:end;");
    CHECK(unhex(session.answer("qRcmd," + debug::to_hex(std::span(reinterpret_cast<const std::uint8_t*>("when"), 4))))
              .starts_with("event "));
    CHECK(session.handle({ClientItem::Kind::kPacket, "QStartNoAckMode"}).bytes == "+" + debug::frame_packet("OK"));
    CHECK(session.handle({ClientItem::Kind::kPacket, "?"}).bytes.front() == '$');
    auto detach = session.handle({ClientItem::Kind::kPacket, "D"});
    CHECK(detach.close);
  }
}

TEST_CASE("Debug server: threads are the trace's: listed where alive, named in stops, each with its registers") {
  auto recorded = record_session("gdb-session-threads.ucir", "debug_threads");
  GdbSession& session = *recorded->session;
  const replay::TraceIndex& index = *recorded->index;
  const std::uint32_t main_thread = index.first_thread();
  std::vector<std::uint32_t> workers;
  for (const auto& change : index.thread_changes())
    if (change.change == events::ThreadChange::kCreated) workers.push_back(change.thread);
  REQUIRE(workers.size() == 2);
  auto hex = [](std::uint32_t thread) { return fmt::format("{:x}", thread); };
  // At the start: one thread.
  CHECK(session.answer("qfThreadInfo") == "m" + hex(main_thread));
  CHECK(session.answer("qsThreadInfo") == "l");
  CHECK(session.answer("qC") == "QC" + hex(main_thread));
  CHECK(session.answer("T" + hex(main_thread)) == "OK");
  CHECK(session.answer("T" + hex(workers[0])) == "E01");   // not created yet
  CHECK(session.answer("Hg" + hex(workers[0])) == "E01");
  // Run to the first worker's first instruction at a pc no thread ran before (a breakpoint there).
  std::uint64_t worker_pc = 0, worker_sp = 0;
  {
    auto reader = replay::TraceReader::open(recorded->trace);
    REQUIRE(reader.has_value());
    std::set<std::uint64_t> ran;
    for (bool done = false; !done;) {
      auto more = (*reader)->next([&](const events::Event& event) {
        const auto* insn = std::get_if<events::InstructionEvent>(&event.payload);
        if (!insn || done) return;
        if (event.thread.value == workers[0] && !ran.count(insn->address.value))
          worker_pc = insn->address.value, done = true;
        ran.insert(insn->address.value);
      });
      REQUIRE(more.has_value());
      REQUIRE(*more);
    }
  }
  CHECK(session.answer(fmt::format("Z0,{:x},1", worker_pc)) == "OK");
  CHECK(session.answer("vCont;c") == "T05thread:" + hex(workers[0]) + ";swbreak:;");
  CHECK(session.answer("qC") == "QC" + hex(workers[0]));
  const std::string listed = session.answer("qfThreadInfo");
  for (const std::uint32_t thread : {main_thread, workers[0]})
    CHECK_MESSAGE(listed.find(hex(thread)) != std::string::npos, listed);
  const std::string rip = fmt::format("{:016x}", __builtin_bswap64(worker_pc));
  CHECK(session.answer("p10") == rip);
  worker_sp = __builtin_bswap64(std::stoull(session.answer("p7"), nullptr, 16));
  // Another thread's registers: its own stack, not the worker's.
  CHECK(session.answer("Hg" + hex(main_thread)) == "OK");
  CHECK(session.answer("p10") != rip);
  CHECK(__builtin_bswap64(std::stoull(session.answer("p7"), nullptr, 16)) != worker_sp);
  CHECK(session.answer("g").size() > 100);
  // A step of the worker stays in it; a stop makes the stopped thread the general one again (as gdb assumes).
  CHECK(session.answer("vCont;s:" + hex(workers[0])) == "T05thread:" + hex(workers[0]) + ";");
  CHECK(session.answer("p10") != rip);
  CHECK(__builtin_bswap64(std::stoull(session.answer("p7"), nullptr, 16)) - worker_sp < 0x1000);
  // A step back of it returns to the breakpoint; Hc names the thread bs steps.
  CHECK(session.answer("Hc" + hex(workers[0])) == "OK");
  CHECK(session.answer("bs") == "T05thread:" + hex(workers[0]) + ";");
  CHECK(session.answer("p10") == rip);
  // Malformed thread ids.
  for (const char* packet : {"Hg", "Hx1", "Hgzz", "Hg100000000", "T", "Tzz", "vCont;s:zz", "vCont;x", "qThreadExtraInfo,"})
    CHECK_MESSAGE(session.answer(packet).substr(0, 1) == "E", packet);
}

TEST_CASE("Debug server: a client that follows processes gets pPID.TID thread-ids; a wrong one or an unknown pid is an error") {
  auto recorded = record_session("gdb-session-processes.ucir");
  GdbSession& session = *recorded->session;
  const std::uint32_t pid = recorded->index->first_thread();
  const std::string id = fmt::format("p{:x}.{:x}", pid, pid);
  // Without a way to open other traces (this session has none), forks are followed but execs are not.
  const std::string features = session.answer("qSupported:multiprocess+;fork-events+;vfork-events+;exec-events+");
  CHECK(features.find(";multiprocess+") != std::string::npos);
  CHECK(features.find(";fork-events+") != std::string::npos);
  CHECK(features.find(";vfork-events+") != std::string::npos);
  CHECK(features.find("exec-events") == std::string::npos);
  CHECK(session.answer("qC") == "QC" + id);
  CHECK(session.answer("qfThreadInfo") == "m" + id);
  CHECK(session.answer("?") == "T05thread:" + id + ";");
  for (const std::string& good : {"Hg" + id, fmt::format("Hgp{:x}", pid), fmt::format("Hgp{:x}.-1", pid), std::string("Hgp-1.-1"),
                                  std::string("Hgp0.0"), "Hc" + id, "T" + id})
    CHECK_MESSAGE(session.answer(good) == "OK", good);
  for (const std::string& bad : {fmt::format("Hgp{:x}.1", pid + 1), std::string("Hgp"), std::string("Hgpzz.1"), fmt::format("Hgp{:x}.", pid),
                                 fmt::format("Hgp{:x}.zz", pid), std::string("Tp1.1"), fmt::format("D;{:x}", pid + 1), std::string("D;zz"),
                                 std::string("D;"), std::string("vKill;zz"), std::string("vCont;c:pzz.-1")})
    CHECK_MESSAGE(session.answer(bad).substr(0, 1) == "E", bad);
  CHECK_FALSE(session.closed());
  // A step names the process; detaching the last process ends the session.
  CHECK(session.answer("vCont;s:" + id) == "T05thread:" + id + ";");
  CHECK(session.answer(fmt::format("D;{:x}", pid)) == "OK");
  CHECK(session.closed());
}

TEST_CASE("Malicious: the debug server answers read-only, malformed, unknown and random packets with an error or nothing") {
  auto recorded = record_session("gdb-session.ucir");
  GdbSession& session = *recorded->session;

  SUBCASE("read-only, malformed and unknown packets") {
    for (const char* packet : {"G00", "P10=00", "M1000,1:00", "X1000,1:a"}) CHECK(session.answer(packet) == "E02");
    for (const char* packet : {"m", "mzz,4", "m1000", "p", "pzz", "p9999", "Z0", "Z0,zz,1", "Z2,1000,0", "Z2,1000,100000",
                               "qXfer:features:read:foo.xml:0,10", "qXfer:features:read:target.xml:zz", "qXfer:x",
                               "QCatchSyscalls:1;zz", "QCatchSyscalls:2", "qRcmd,zz", "vCont;x", "vCont;", "T2"})
      CHECK_MESSAGE(session.answer(packet).substr(0, 1) == "E", packet);
    CHECK(session.answer("Z3,1000,4") == "OK");  // read and access watchpoints: the trace has the reads
    CHECK(session.answer("z3,1000,4") == "OK");
    CHECK(session.answer("Z4,1000,4") == "OK");
    for (const char* packet : {"bx", "Z5,1000,4", "qUnknown", "vUnknown", "!", "x1000,4"})
      CHECK_MESSAGE(session.answer(packet).empty(), packet);
    CHECK(unhex(session.answer("qRcmd," + debug::to_hex(std::span(reinterpret_cast<const std::uint8_t*>("nonsense"), 8))))
              .find("unknown") != std::string::npos);
  }
  SUBCASE("malformed thread ids and monitor why arguments") {
    for (const char* packet : {"Hg", "Hx1", "Hgzz", "Hg100000000", "Hc-2", "T", "Tzz", "T0", "vCont;s:zz",
                               "vCont;s:100000000", "qThreadExtraInfo,", "qThreadExtraInfo,zz"})
      CHECK_MESSAGE(session.answer(packet).substr(0, 1) == "E", packet);
    auto monitor = [&](std::string_view command) {
      return unhex(session.answer(
          "qRcmd," + debug::to_hex(std::span(reinterpret_cast<const std::uint8_t*>(command.data()), command.size()))));
    };
    // Malformed, unknown or out-of-bounds targets: an explanation, never a crash.
    for (const char* command : {"why zz", "why rax 4", "why 0x1000 0", "why 0x1000 5000", "why 0xffffffffffffffff 8",
                                "why $nosuch", "why 0x10 1 2"})
      CHECK_MESSAGE(!monitor(command).empty(), command);
    CHECK(monitor("why zz").find("neither a register") != std::string::npos);
    CHECK(monitor("why 0x1000 0").find("1 to 4096 bytes") != std::string::npos);
    CHECK(session.answer("g").size() > 100);  // the position is where it was
  }
  SUBCASE("random packets get a reply and leave the session usable") {
    std::mt19937 random(20261127);
    const std::string alphabet = "0123456789abcdefxzgmpMXGZzcsbvCTqQ?;:,.=-+#$}HDk";
    for (int round = 0; round < 3000; ++round) {
      std::string packet;
      const std::size_t length = random() % 40;
      for (std::size_t i = 0; i < length; ++i) packet.push_back(alphabet[random() % alphabet.size()]);
      if (packet.starts_with("D") || packet.starts_with("k") || packet.starts_with("vKill")) continue;
      (void)session.answer(packet);
    }
    CHECK(session.answer("g").size() > 100);
  }
}

TEST_CASE("Debug server: at level regs, memory is known only where it cannot have changed (code, constants)") {
  const std::string trace = test::replay_temp_path("gdb-session-regs.ucir");
  test::record_files(test::kReplaySamples + "/static/nested_calls", core::TraceLevel::kRegisters,
                     {{replay::TraceFormat::kUcir, trace}});
  auto reader = replay::TraceReader::open(trace);
  REQUIRE(reader.has_value());
  auto index = replay::TraceIndex::build(**reader);
  REQUIRE(index.has_value());
  CHECK_FALSE((*index)->memory_tracked());
  auto travel = debug::TimeTravel::start(**index);
  REQUIRE(travel.has_value());
  GdbSession session(**travel);
  const std::uint64_t pc = (*travel)->position().pc;
  CHECK(session.answer(fmt::format("m{:x},4", pc)).size() == 8);  // code
  // The stack: written by instructions the trace does not show.
  const std::string sp_hex = session.answer("p7");
  std::vector<std::uint8_t> sp_bytes;
  REQUIRE(debug::from_hex(sp_hex, sp_bytes));
  std::uint64_t sp = 0;
  for (std::size_t i = 0; i < 8; ++i) sp |= std::uint64_t{sp_bytes[i]} << (8 * i);
  CHECK(session.answer(fmt::format("m{:x},8", sp)) == "E14");
  // No reads in the trace: no read or access watchpoints (gdb says it cannot insert them).
  CHECK(session.answer("Z3,1000,4").empty());
  CHECK(session.answer("Z2,1000,4") == "OK");
  // The auxiliary vector still comes from the recorded initial stack.
  CHECK(session.answer("qXfer:auxv:read::0,100").size() > 16);
  std::filesystem::remove(trace);
}
