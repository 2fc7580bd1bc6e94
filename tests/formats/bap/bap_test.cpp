// Role: unit tests of the BAP frames writer and reader on hand-made traces: the
// exact bytes of a tiny trace (header, meta frame, key frame, one std_frame, the
// TOC), with the expected protobuf bytes worked out here from the schema's field
// numbers and wire types (not from our writer or frames.proto); containers of
// versions 1 and 2 and libtrace's TOC layout built by hand; seeking through the
// TOC; zstd (decompressed by the zstd command); and "Malicious:" inputs.
#include <doctest/doctest.h>

#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "formats/bap/bap_reader.h"
#include "formats/bap/bap_writer.h"

#include "tests/formats/test_files.h"
#include "tests/support/error_text.h"
using namespace tracecorn;

namespace {

using test::Bytes;
using test::slurp;

std::string temp_path(const std::string& name) { return test::temp_file("bap", name); }

void put_u64(Bytes& out, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
}

// Protobuf wire encoding from first principles (protobuf.dev/programming-guides/
// encoding): a key is (field << 3 | wire type); wire types 0 varint, 1 64-bit,
// 2 length-delimited; sint32/sint64 are zigzag encoded.
struct Pb {
  Bytes out;
  Pb& varint(std::uint64_t v) {
    while (v >= 0x80) {
      out.push_back(static_cast<std::uint8_t>(v | 0x80));
      v >>= 7;
    }
    out.push_back(static_cast<std::uint8_t>(v));
    return *this;
  }
  Pb& key(int field, int wire) { return varint(static_cast<std::uint64_t>(field) << 3 | static_cast<unsigned>(wire)); }
  Pb& u64(int field, std::uint64_t v) { return key(field, 0).varint(v); }
  Pb& boolean(int field, bool v) { return u64(field, v ? 1 : 0); }
  Pb& s64(int field, std::int64_t v) {
    return u64(field, (static_cast<std::uint64_t>(v) << 1) ^ static_cast<std::uint64_t>(v >> 63));
  }
  Pb& s32(int field, std::int32_t v) {
    return u64(field, static_cast<std::uint32_t>((static_cast<std::uint32_t>(v) << 1) ^ static_cast<std::uint32_t>(v >> 31)));
  }
  Pb& f64(int field, double v) {
    key(field, 1);
    std::uint64_t bits;
    std::memcpy(&bits, &v, 8);
    put_u64(out, bits);
    return *this;
  }
  Pb& bytes(int field, const Bytes& v) {
    key(field, 2).varint(v.size());
    out.insert(out.end(), v.begin(), v.end());
    return *this;
  }
  Pb& text(int field, const std::string& v) { return bytes(field, Bytes(v.begin(), v.end())); }
  Pb& message(int field, const Pb& v) { return bytes(field, v.out); }
};

Bytes le(std::uint64_t v, std::size_t n) {
  Bytes out;
  for (std::size_t i = 0; i < n; ++i) out.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
  return out;
}

// operand_info: operand_info_specific 1 (mem_operand 1 {address 1} | reg_operand 2 {name 1}),
// bit_length 2 (sint32), operand_usage 3 {read 1, written 2, index 3, base 4}, taint_info 4 {no_taint 1}, value 5.
Pb register_operand(const std::string& name, std::uint64_t value, bool written) {
  return Pb()
      .message(1, Pb().message(2, Pb().text(1, name)))
      .s32(2, 64)
      .message(3, Pb().boolean(1, !written).boolean(2, written).boolean(3, false).boolean(4, false))
      .message(4, Pb().boolean(1, true))
      .bytes(5, le(value, 8));
}
Pb memory_operand(std::uint64_t address, std::uint64_t value, bool written) {
  return Pb()
      .message(1, Pb().message(1, Pb().u64(1, address)))
      .s32(2, 64)
      .message(3, Pb().boolean(1, !written).boolean(2, written).boolean(3, false).boolean(4, false))
      .message(4, Pb().boolean(1, true))
      .bytes(5, le(value, 8));
}

Bytes sized(const Bytes& frame) {
  Bytes out;
  put_u64(out, frame.size());
  out.insert(out.end(), frame.begin(), frame.end());
  return out;
}

// The tiny trace: two initial registers, one `push rax` at 0x401000, one module.
struct TinyTrace {
  const arch::ArchInfo& arch = arch::x86_64_arch();
  std::uint16_t index(const char* name) const {
    return static_cast<std::uint16_t>(arch.find_register(name) - arch.registers.data());
  }
  events::TraceInfo info;
  events::RegisterValue rax, rsp, rsp_after;
  formats::FramesMeta meta;
  std::uint8_t code[1] = {0x50};

  static events::RegisterValue value(std::uint16_t index, std::uint64_t v) {
    events::RegisterValue out;
    out.index = index;
    out.size = 8;
    for (std::size_t i = 0; i < 8; ++i) out.bytes[i] = static_cast<std::uint8_t>(v >> (8 * i));
    return out;
  }

  TinyTrace() {
    rax = value(index("rax"), 0x1122334455667788);
    rsp = value(index("rsp"), 0x7000);
    rsp_after = value(index("rsp"), 0x6ff8);
    info.arch_name = arch.name;
    info.has_initial_state = true;
    info.initial_registers = {rax, rsp};
    meta.tracer_args = {"tracecorn", "record"};
    meta.tracer_envp = {"E=1"};
    meta.tracer_version = "0.1";
    meta.target_path = "/bin/x";
    meta.target_args = {"x"};
    meta.target_envp = {"K=V"};
    meta.target_md5 = Bytes(16, 0xab);
    meta.target_size = 1234;
    meta.target_atime = 1.5;
    meta.target_mtime = 2.5;
    meta.target_ctime = 3.5;
    meta.user = "user";
    meta.host = "host";
    meta.time = 1e9;
  }

  void play(events::Sink& sink) {
    sink.begin(info);
    std::uint64_t seq = 0;
    auto send = [&](events::EventKind kind, events::EventPayload payload) {
      events::Event event;
      event.sequence = events::EventSequence{seq++};
      event.kind = kind;
      event.payload = std::move(payload);
      sink.on_event(event);
    };
    send(events::EventKind::kBlock, events::BlockEvent{events::GuestAddress{0x401000}, 1, 1, code});
    send(events::EventKind::kInstruction, events::InstructionEvent{events::GuestAddress{0x401000}, 1, code, 0});
    send(events::EventKind::kMemoryWrite, events::MemoryEvent{events::GuestAddress{0x6ff8}, 8, 0x1122334455667788,
                                                              events::GuestAddress{0x401000}, true});
    send(events::EventKind::kRegisters,
         events::RegistersEvent{events::GuestAddress{0x401000}, std::span<const events::RegisterValue>(&rsp_after, 1)});
    send(events::EventKind::kModuleLoad,
         events::ModuleLoadEvent{events::GuestAddress{0x400000}, events::GuestAddress{0x402000}, 0, "/bin/x"});
    send(events::EventKind::kExit, events::ExitEvent{false, 0, 0});
    CHECK(sink.end({}).empty());
  }

  // The expected frames, from the schema's field numbers.
  Bytes meta_frame() const {
    return Pb()
        .message(1, Pb().text(1, "tracecorn").text(2, "tracecorn").text(2, "record").text(3, "E=1").text(4, "0.1"))
        .message(2, Pb().text(1, "/bin/x").text(2, "x").text(3, "K=V").bytes(4, Bytes(16, 0xab)))
        .message(3, Pb().s32(1, 1234).f64(2, 1.5).f64(3, 2.5).f64(4, 3.5))
        .text(4, "user")
        .text(5, "host")
        .f64(6, 1e9)
        .out;
  }
  Bytes key_frame() const {
    auto info_for = [](const std::string& name, std::uint64_t v) {
      return Pb().message(1, Pb().message(2, Pb().text(1, name))).s32(2, 64).message(3, Pb().boolean(1, true)).bytes(4, le(v, 8));
    };
    const Pb values = Pb().message(1, info_for("RAX", 0x1122334455667788)).message(1, info_for("RSP", 0x7000));
    const Pb list = Pb().message(1, Pb().boolean(1, true)).message(2, values);
    return Pb().message(6, Pb().message(1, Pb().message(1, list))).out;
  }
  Bytes std_frame() const {
    // push rax: reads RSP and RAX (Capstone's order), writes RSP and [rsp-8].
    const Pb pre = Pb().message(1, register_operand("RSP", 0x7000, false)).message(1, register_operand("RAX", 0x1122334455667788, false));
    const Pb post = Pb().message(1, register_operand("RSP", 0x6ff8, true)).message(1, memory_operand(0x6ff8, 0x1122334455667788, true));
    return Pb().message(1, Pb().u64(1, 0x401000).u64(2, 0).bytes(3, {0x50}).message(4, pre).message(5, post)).out;
  }
  Bytes modload_frame() const {
    return Pb().message(5, Pb().text(1, "/bin/x").u64(2, 0x400000).u64(3, 0x401fff).u64(1000, 0)).out;
  }
  Bytes file(std::uint64_t m) const {
    Bytes body = sized(meta_frame());
    const std::uint64_t first = 48 + body.size();
    const Bytes frames[] = {key_frame(), std_frame(), modload_frame()};
    std::vector<std::uint64_t> offsets;
    for (const auto& frame : frames) {
      offsets.push_back(48 + body.size());
      const Bytes one = sized(frame);
      body.insert(body.end(), one.begin(), one.end());
    }
    Bytes out;
    put_u64(out, 7456879624156307493ull);
    put_u64(out, 3);
    put_u64(out, 9);
    put_u64(out, 64);
    put_u64(out, 3);
    put_u64(out, 48 + body.size());
    out.insert(out.end(), body.begin(), body.end());
    put_u64(out, m);
    for (std::uint64_t k = 0; k * m < 3; ++k) put_u64(out, offsets[k * m]);
    (void)first;
    return out;
  }
};

Bytes write_tiny(TinyTrace& tiny, const std::string& path, bool zstd = false, std::uint64_t m = 2) {
  formats::FramesWriterOptions options;
  options.meta = tiny.meta;
  options.compress_zstd = zstd;
  options.frames_per_toc_entry = m;
  auto writer = formats::FramesWriter::open(path, tiny.arch, options);
  REQUIRE(writer.has_value());
  tiny.play(**writer);
  CHECK((*writer)->frames_written() == 3);
  return slurp(path);
}

struct Collected {
  std::vector<events::EventKind> kinds;
  std::vector<std::uint64_t> addresses;
};

Collected read_all(formats::FramesReader& reader) {
  Collected out;
  for (;;) {
    auto more = reader.next([&](const events::Event& event) {
      out.kinds.push_back(event.kind);
      if (event.kind == events::EventKind::kInstruction)
        out.addresses.push_back(std::get<events::InstructionEvent>(event.payload).address.value);
    });
    REQUIRE_MESSAGE(more.has_value(), tracecorn::test_support::error_text(more));
    if (!*more) break;
  }
  return out;
}

// A container built by hand: `version`, n frames (each a modload_frame named
// "m<i>"), and a TOC laid out as `layout` (0 ours, 1 libtrace).
Bytes hand_container(std::uint64_t version, std::uint64_t n, std::uint64_t m, int layout, const Bytes& meta) {
  Bytes body;
  if (version >= 2) {
    const Bytes one = sized(meta);
    body.insert(body.end(), one.begin(), one.end());
  }
  std::vector<std::uint64_t> offsets;
  for (std::uint64_t i = 0; i < n; ++i) {
    offsets.push_back(48 + body.size());
    const Bytes one = sized(Pb().message(5, Pb().text(1, "m" + std::to_string(i)).u64(2, i * 0x1000).u64(3, i * 0x1000 + 0xfff)).out);
    body.insert(body.end(), one.begin(), one.end());
  }
  Bytes out;
  const std::uint64_t header[] = {7456879624156307493ull, version, 9, 64, n, 48 + body.size()};
  for (const std::uint64_t v : header) put_u64(out, v);
  out.insert(out.end(), body.begin(), body.end());
  put_u64(out, m);
  if (layout == 0)
    for (std::uint64_t k = 0; k * m < n; ++k) put_u64(out, offsets[k * m]);
  else
    for (std::uint64_t k = 1; k * m < n; ++k) put_u64(out, offsets[k * m]);
  return out;
}

std::string module_name_after_seek(formats::FramesReader& reader, std::uint64_t index) {
  auto status = reader.seek_frame(index);
  REQUIRE_MESSAGE(status.has_value(), tracecorn::test_support::error_text(status));
  std::string name;
  auto more = reader.next([&](const events::Event& event) {
    if (event.kind == events::EventKind::kModuleLoad) name = std::string(std::get<events::ModuleLoadEvent>(event.payload).path);
  });
  REQUIRE(more.has_value());
  return name;
}

}  // namespace

TEST_CASE("BAP frames: the exact bytes of a tiny trace (header, meta frame, key frame, std_frame, TOC)") {
  TinyTrace tiny;
  const std::string path = temp_path("tiny.frames");
  const Bytes written = write_tiny(tiny, path, false, 2);
  const Bytes expected = tiny.file(2);
  REQUIRE(written.size() == expected.size());
  // Header first (magic 7456879624156307493 = 0x677c28828aaf6025 little endian, version 3, i386 = 9, mach 64).
  CHECK(Bytes(written.begin(), written.begin() + 48) == Bytes(expected.begin(), expected.begin() + 48));
  const Bytes meta = sized(tiny.meta_frame());
  CHECK(Bytes(written.begin() + 48, written.begin() + 48 + static_cast<std::ptrdiff_t>(meta.size())) == meta);
  CHECK(written == expected);
  std::filesystem::remove(path);
}

TEST_CASE("BAP frames: the tiny trace reads back") {
  TinyTrace tiny;
  const std::string path = temp_path("tiny-read.frames");
  write_tiny(tiny, path);
  auto reader = formats::FramesReader::open(path);
  REQUIRE_MESSAGE(reader.has_value(), tracecorn::test_support::error_text(reader));
  CHECK((*reader)->header().version == 3);
  CHECK((*reader)->header().frame_count == 3);
  CHECK((*reader)->header().toc_layout == formats::FramesHeader::TocLayout::kOurs);
  CHECK((*reader)->meta().target_path == "/bin/x");
  CHECK((*reader)->meta().user == "user");
  CHECK((*reader)->meta().target_md5 == Bytes(16, 0xab));
  REQUIRE((*reader)->info().initial_registers.size() == 2);
  std::vector<events::RegisterValue> changes;
  std::vector<events::MemoryEvent> memory;
  std::vector<std::string> modules;
  for (;;) {
    auto more = (*reader)->next([&](const events::Event& event) {
      if (event.kind == events::EventKind::kRegisters) {
        const auto& r = std::get<events::RegistersEvent>(event.payload);
        changes.assign(r.changes.begin(), r.changes.end());
      }
      if (event.kind == events::EventKind::kMemoryWrite) memory.push_back(std::get<events::MemoryEvent>(event.payload));
      if (event.kind == events::EventKind::kModuleLoad)
        modules.emplace_back(std::get<events::ModuleLoadEvent>(event.payload).path);
    });
    REQUIRE(more.has_value());
    if (!*more) break;
  }
  CHECK((*reader)->warning().empty());
  REQUIRE(changes.size() == 1);  // RSP changed; RAX was read, not written
  CHECK(changes[0].index == tiny.index("rsp"));
  CHECK(changes[0].as_u64() == 0x6ff8);
  REQUIRE(memory.size() == 1);
  CHECK(memory[0].address.value == 0x6ff8);
  CHECK(memory[0].value == 0x1122334455667788);
  CHECK(memory[0].pc_known);
  CHECK(modules == std::vector<std::string>{"/bin/x"});
  std::filesystem::remove(path);
}

TEST_CASE("BAP frames: zstd files decompress (zstd command) to the plain file") {
  TinyTrace tiny;
  const std::string plain_path = temp_path("z-plain.frames"), zstd_path = temp_path("z.frames.zst");
  const Bytes plain = write_tiny(tiny, plain_path);
  const Bytes compressed = write_tiny(tiny, zstd_path, true);
  REQUIRE(compressed.size() > 4);
  CHECK(Bytes(compressed.begin(), compressed.begin() + 4) == Bytes{0x28, 0xb5, 0x2f, 0xfd});
  const std::string out = temp_path("z-out.frames");
  REQUIRE(std::system(("zstd -q -d -c " + zstd_path + " > " + out).c_str()) == 0);
  CHECK(slurp(out) == plain);  // the header frame's n and T were patched in place
  auto reader = formats::FramesReader::open(zstd_path);
  REQUIRE(reader.has_value());
  CHECK((*reader)->header().zstd);
  const auto events = read_all(**reader);
  CHECK(events.addresses == std::vector<std::uint64_t>{0x401000});
  CHECK((*reader)->warning().empty());
  for (const auto& p : {plain_path, zstd_path, out}) std::filesystem::remove(p);
}

TEST_CASE("BAP frames: containers of versions 1 and 2, libtrace's TOC layout, seeking through the TOC") {
  TinyTrace tiny;
  for (const int layout : {0, 1}) {
    for (const std::uint64_t version : {1, 2, 3}) {
      CAPTURE(layout);
      CAPTURE(version);
      const Bytes file = hand_container(version, 7, 2, layout, tiny.meta_frame());
      auto reader = formats::FramesReader::from_bytes(file, "hand");
      REQUIRE_MESSAGE(reader.has_value(), tracecorn::test_support::error_text(reader));
      CHECK((*reader)->header().has_meta == (version >= 2));
      CHECK((*reader)->header().toc_layout ==
            (layout == 0 ? formats::FramesHeader::TocLayout::kOurs : formats::FramesHeader::TocLayout::kLibtrace));
      CHECK(module_name_after_seek(**reader, 5) == "m5");
      CHECK((*reader)->toc_used());
      CHECK(module_name_after_seek(**reader, 0) == "m0");
      CHECK(module_name_after_seek(**reader, 6) == "m6");
      CHECK((*reader)->warning().empty());
      CHECK_FALSE((*reader)->seek_frame(7).has_value());
    }
  }
}

TEST_CASE("BAP frames: a TOC that points elsewhere is not used; the frames are read sequentially") {
  TinyTrace tiny;
  Bytes file = hand_container(2, 7, 2, 0, tiny.meta_frame());
  // Entry 2 (frame 4) pointed one byte off: increasing still, but not at a frame.
  const std::size_t entry2 = file.size() - 8 * 2;
  file[entry2] = static_cast<std::uint8_t>(file[entry2] + 1);
  auto reader = formats::FramesReader::from_bytes(file, "hand");
  REQUIRE(reader.has_value());
  CHECK(module_name_after_seek(**reader, 5) == "m5");
  CHECK_FALSE((*reader)->toc_used());
  CHECK((*reader)->warning().find("does not point at a frame") != std::string::npos);
  // A TOC with the wrong number of entries is not used either.
  Bytes short_toc = hand_container(2, 7, 2, 0, tiny.meta_frame());
  short_toc.resize(short_toc.size() - 8);
  auto second = formats::FramesReader::from_bytes(short_toc, "hand");
  REQUIRE(second.has_value());
  CHECK((*second)->header().toc_layout == formats::FramesHeader::TocLayout::kNone);
  CHECK(module_name_after_seek(**second, 6) == "m6");
}

TEST_CASE("BAP frames: a recording that did not finish (T = 0) is read up to its last complete frame") {
  TinyTrace tiny;
  Bytes file = tiny.file(2);
  const std::uint64_t t = 48 + sized(tiny.meta_frame()).size() + sized(tiny.key_frame()).size() +
                          sized(tiny.std_frame()).size() + sized(tiny.modload_frame()).size();
  file.resize(t - 3);  // inside the module frame, no TOC
  std::fill(file.begin() + 32, file.begin() + 48, 0);  // n = T = 0
  auto reader = formats::FramesReader::from_bytes(file, "killed");
  REQUIRE(reader.has_value());
  const auto events = read_all(**reader);
  CHECK(events.addresses == std::vector<std::uint64_t>{0x401000});
  const std::string offset = [&] {
    char text[32];
    std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(t - sized(tiny.modload_frame()).size()));
    return std::string(text);
  }();
  CHECK((*reader)->warning().find("ends inside frame 2 at offset " + offset) != std::string::npos);
  // Cut exactly after a frame: no TOC, a warning, every frame.
  file.resize(t - sized(tiny.modload_frame()).size());
  auto clean = formats::FramesReader::from_bytes(file, "killed");
  REQUIRE(clean.has_value());
  read_all(**clean);
  CHECK((*clean)->warning().find("no TOC (T = 0") != std::string::npos);
}

TEST_CASE("Malicious: bad magic, version, architecture, T, sizes and frames are errors naming the offset") {
  TinyTrace tiny;
  const Bytes good = tiny.file(2);
  auto error_of = [](Bytes bytes) {
    auto reader = formats::FramesReader::from_bytes(std::move(bytes), "bad");
    if (!reader) return reader.error();
    for (;;) {
      auto more = (*reader)->next([](const events::Event&) {});
      if (!more) return more.error();
      if (!*more) break;
    }
    return Error{ErrorCode::kIo, "no error: " + (*reader)->warning(), "", std::nullopt};
  };
  auto patched = [&](std::size_t at, std::uint64_t value) {
    Bytes bytes = good;
    for (int i = 0; i < 8; ++i) bytes[at + static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(value >> (8 * i));
    return bytes;
  };
  Error e = error_of(patched(0, 42));
  CHECK(e.code == ErrorCode::kBadFormat);
  CHECK(e.offset == 0u);
  e = error_of(patched(8, 4));
  CHECK(e.code == ErrorCode::kBadFormat);
  CHECK(e.offset == 8u);
  e = error_of(patched(0x10, 2));
  CHECK(e.code == ErrorCode::kUnsupported);
  e = error_of(patched(0x28, 0x40));  // T before the first frame
  CHECK(e.offset == 0x28u);
  e = error_of(patched(0x30, 1ull << 40));  // the meta frame's size
  CHECK(e.offset == 0x30u);
  const std::size_t first = 48 + sized(tiny.meta_frame()).size();
  e = error_of(patched(first, 1ull << 62));  // a frame's size beyond the limit
  CHECK(e.code == ErrorCode::kBadFormat);
  CHECK(e.offset == first);
  e = error_of(patched(first, sized(tiny.key_frame()).size() + 20));  // runs past the next frame into T
  CHECK(e.offset.has_value());
  // A frame that sets two kinds, and one that is not protobuf.
  Bytes two = tiny.file(2);
  {
    Bytes frame = Pb().message(5, Pb().text(1, "a").u64(2, 0).u64(3, 1)).message(6, Pb().message(1, Pb())).out;
    Bytes body;
    for (const auto& f : {frame}) {
      const Bytes one = sized(f);
      body.insert(body.end(), one.begin(), one.end());
    }
    Bytes head(two.begin(), two.begin() + static_cast<std::ptrdiff_t>(first));
    std::fill(head.begin() + 32, head.begin() + 48, 0);
    head.insert(head.end(), body.begin(), body.end());
    e = error_of(head);
    CHECK(e.message.find("sets 2 kinds") != std::string::npos);
    CHECK(e.offset == first + 8);
    Bytes garbage(head.begin(), head.begin() + static_cast<std::ptrdiff_t>(first));
    const Bytes junk = sized({0xff, 0xff, 0xff});
    garbage.insert(garbage.end(), junk.begin(), junk.end());
    e = error_of(garbage);
    CHECK(e.message.find("does not parse") != std::string::npos);
  }
}

namespace {

// What reading bit-flipped frames gave: the error (if any), how many events came
// before it, whether the reader stopped by itself, and what seek_frame(1) said after.
struct FlipOutcome {
  std::optional<Error> error;
  std::optional<Error> seek_error;
  std::size_t events = 0;
  bool finished = false;
  bool operator==(const FlipOutcome& other) const {
    auto same = [](const std::optional<Error>& a, const std::optional<Error>& b) {
      return a.has_value() == b.has_value() && (!a || a->to_string() == b->to_string());
    };
    return events == other.events && finished == other.finished && same(error, other.error) &&
           same(seek_error, other.seek_error);
  }
};

FlipOutcome read_flipped(const Bytes& bytes) {
  FlipOutcome outcome;
  auto reader = formats::FramesReader::from_bytes(bytes, "flip");
  if (!reader) {
    outcome.error = reader.error();
    outcome.finished = true;
    return outcome;
  }
  for (int guard = 0; guard < 100000; ++guard) {
    auto more = (*reader)->next([&](const events::Event&) { ++outcome.events; });
    if (!more) outcome.error = more.error();
    if (!more || !*more) {
      outcome.finished = true;
      break;
    }
  }
  if (auto seek = (*reader)->seek_frame(1); !seek) outcome.seek_error = seek.error();
  return outcome;
}

}  // namespace

TEST_CASE("Malicious: every truncation and random bit flips of a real trace give frames, a warning or an error") {
  TinyTrace tiny;
  const Bytes good = tiny.file(2);
  for (std::size_t size = 0; size < good.size(); ++size) {
    auto reader = formats::FramesReader::from_bytes(Bytes(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(size)), "cut");
    if (!reader) {
      CHECK(size < 48 + sized(tiny.meta_frame()).size());  // only a cut header or meta frame fails to open
      continue;
    }
    for (;;) {
      auto more = (*reader)->next([](const events::Event&) {});
      if (!more || !*more) break;
    }
  }
  // Bit flips: each read ends by itself, the same way twice, in events (no more
  // than one per byte) or an error naming the file and an offset inside it; a
  // seek back to frame 1 afterwards succeeds or says why. Both outcomes occur.
  std::mt19937 random(12345);
  int errors = 0, clean = 0;
  for (int round = 0; round < 3000; ++round) {
    CAPTURE(round);
    Bytes bytes = good;
    for (int flips = 0; flips < 3; ++flips) bytes[random() % bytes.size()] ^= static_cast<std::uint8_t>(1u << (random() % 8));
    const FlipOutcome outcome = read_flipped(bytes);
    CHECK(outcome.finished);
    CHECK(outcome.events <= bytes.size());
    CHECK(read_flipped(bytes) == outcome);
    for (const std::optional<Error>* error : {&outcome.error, &outcome.seek_error}) {
      if (!*error) continue;
      CAPTURE((*error)->to_string());
      CHECK((*error)->source == "flip");
      CHECK_FALSE((*error)->message.empty());
      if ((*error)->offset) CHECK(*(*error)->offset <= bytes.size());
    }
    ++(outcome.error ? errors : clean);
  }
  CHECK(errors > 300);
  CHECK(clean > 300);
}

TEST_CASE("BAP frames: the writer refuses an output it cannot patch") {
  const auto& arch = arch::x86_64_arch();
  auto writer = formats::FramesWriter::open("/dev/null", arch);
  REQUIRE_FALSE(writer.has_value());
  CHECK(writer.error().code == ErrorCode::kInvalidArgument);
}

// A process killed by a signal (from another process, after any instruction)
// ends its trace with the death note, an exception frame numbered with the
// signal that our reader reports and turns into no event; an exit with a
// status has no frame (the exit_group syscall frame says it). The meta frame
// carries the recording's level.
TEST_CASE("BAP frames: a death by a signal is the death note, an exit with a status no frame; the level is in the meta frame") {
  for (const bool by_signal : {true, false}) {
    CAPTURE(by_signal);
    TinyTrace tiny;
    tiny.info.level = "mem";
    const std::string path = temp_path(by_signal ? "killed.frames" : "exited.frames");
    auto writer = formats::FramesWriter::open(path, tiny.arch, formats::FramesWriterOptions{});
    REQUIRE(writer.has_value());
    (*writer)->begin(tiny.info);
    events::Event event;
    event.kind = events::EventKind::kModuleLoad;
    event.payload = events::ModuleLoadEvent{events::GuestAddress{0x400000}, events::GuestAddress{0x402000}, 0, "/bin/x"};
    (*writer)->on_event(event);
    event.sequence = events::EventSequence{1};
    event.kind = events::EventKind::kExit;
    event.payload = by_signal ? events::ExitEvent{true, 0, 10} : events::ExitEvent{false, 3, 0};
    (*writer)->on_event(event);
    REQUIRE((*writer)->end({}).empty());
    CHECK((*writer)->frames_written() == (by_signal ? 3u : 2u));  // the key frame, the modload (and the note)
    CHECK((*writer)->dropped_events() == (by_signal ? 0u : 1u));

    auto reader = formats::FramesReader::open(path);
    REQUIRE_MESSAGE(reader.has_value(), tracecorn::test_support::error_text(reader));
    CHECK((*reader)->info().level == "mem");
    CHECK((*reader)->meta().level == "mem");
    const Collected read = read_all(**reader);
    CHECK(read.kinds == std::vector<events::EventKind>{events::EventKind::kModuleLoad});
    CHECK((*reader)->killed_by_signal() == (by_signal ? 10u : 0u));
    CHECK_FALSE((*reader)->interrupted());
    CHECK((*reader)->warning().empty());
    std::filesystem::remove(path);
  }
}
