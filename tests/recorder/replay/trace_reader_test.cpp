// Role: tests of the one reader API (recorder/replay/trace_reader.h): every
// format, plain and zstd, is recognized by content (whatever the file is
// called) and gives back the recorded events of the kinds it carries, in
// order; capabilities match what each format's own reader says; files that are
// not traces, empty or damaged give errors with a byte offset.
#include <doctest/doctest.h>

#include <fstream>

#include "recorder/support/hex.h"
#include "tests/formats/roundtrip_helpers.h"
#include "tests/recorder/replay/replay_test_helpers.h"
#include "tests/support/error_text.h"

using namespace tracecorn;
using replay::TraceFormat;
using replay::TraceReader;

namespace {

void write_bytes(const std::string& path, const std::vector<char>& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::vector<char> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

}  // namespace

TEST_CASE("Trace reader: every format, plain and zstd, chosen by content, gives the recorded events") {
  const std::string program = test::kReplaySamples + "/static/hello";
  std::vector<test::FileToWrite> files;
  for (const auto format : {TraceFormat::kUcir, TraceFormat::kFrames, TraceFormat::kBintrace})
    for (const bool zstd : {false, true})
      files.push_back({format, test::replay_temp_path(std::string(replay::trace_format_name(format)) +
                                                      (zstd ? "-z" : "") + ".trace"), zstd});
  test::CopySink probe([](events::EventKind) { return true; });
  test::record_files(program, core::TraceLevel::kFull, files, {&probe});
  REQUIRE(probe.events_.size() > 1000);
  for (const auto& file : files) {
    CAPTURE(file.path);
    auto reader = TraceReader::open(file.path);  // the name says nothing of the format
    REQUIRE_MESSAGE(reader.has_value(), tracecorn::test_support::error_text(reader));
    CHECK((*reader)->format() == file.format);
    CHECK((*reader)->arch().name == "x86_64");
    CHECK((*reader)->describe().rfind("# ", 0) == 0);
    const auto& caps = (*reader)->capabilities();
    test::CopySink read([](events::EventKind) { return true; });
    const auto status = (*reader)->read_all(read);
    REQUIRE_MESSAGE(status.has_value(), tracecorn::test_support::error_text(status));
    CHECK((*reader)->index() == read.events_.size());
    // The recorded events of the kinds the format carries, in the same order.
    std::vector<const test::Copied*> expected;
    for (const auto& event : probe.events_)
      if (caps.carries(event.kind)) expected.push_back(&event);
    REQUIRE(expected.size() == read.events_.size());
    std::size_t differing = 0;
    for (std::size_t i = 0; i < expected.size(); ++i) {
      const auto& a = *expected[i];
      const auto& b = read.events_[i];
      bool same = a.kind == b.kind;
      if (same && (a.kind == events::EventKind::kInstruction || a.kind == events::EventKind::kBlock))
        same = a.address == b.address;
      if (same && a.kind == events::EventKind::kSyscall)
        same = a.value == b.value && a.result == b.result && a.writes == b.writes;
      if (same && a.kind == events::EventKind::kMemoryWrite) same = a.address == b.address && a.value == b.value;
      if (!same && differing++ == 0) FAIL_CHECK("first difference at event " << i);
    }
    CHECK(differing == 0);
    // Capabilities are the format readers' own.
    CHECK(caps.carries(events::EventKind::kBlock) == (file.format == TraceFormat::kUcir));
    CHECK(caps.carries(events::EventKind::kMemoryRead) == (file.format != TraceFormat::kBintrace));
    CHECK(caps.initial_memory == (file.format != TraceFormat::kFrames));
    CHECK(!caps.cannot_carry.empty());
  }
  for (const auto& file : files) std::filesystem::remove(file.path);
}

TEST_CASE("Malicious: trace reader given no trace, an empty file, a truncated or damaged trace") {
  const std::string path = test::replay_temp_path("bad");
  SUBCASE("missing") {
    auto reader = TraceReader::open(path + "-missing");
    REQUIRE(!reader.has_value());
    CHECK(reader.error().code == ErrorCode::kNotFound);
  }
  SUBCASE("not a trace: the first bytes are named, at offset 0") {
    write_bytes(path, {'#', '!', '/', 'b', 'i', 'n'});
    auto reader = TraceReader::open(path);
    REQUIRE(!reader.has_value());
    CHECK(reader.error().code == ErrorCode::kBadFormat);
    CHECK(reader.error().offset == 0u);
    CHECK(reader.error().message.find("23 21 2f 62 69 6e") != std::string::npos);
  }
  SUBCASE("empty") {
    write_bytes(path, {});
    auto reader = TraceReader::open(path);
    REQUIRE(!reader.has_value());
    CHECK(reader.error().message.find("empty") != std::string::npos);
  }
  SUBCASE("every format cut short or damaged: an error or a warning with a byte offset, never a crash") {
    const std::string program = test::kReplaySamples + "/static/hello";
    std::vector<test::FileToWrite> files = {{TraceFormat::kUcir, path + ".u"}, {TraceFormat::kFrames, path + ".f"},
                                            {TraceFormat::kBintrace, path + ".b"}};
    test::record_files(program, core::TraceLevel::kFull, files);
    for (const auto& file : files) {
      CAPTURE(file.path);
      const auto bytes = read_bytes(file.path);
      REQUIRE(bytes.size() > 20000);
      // Cut in the middle of the events: either open fails or reading reports where it ended.
      write_bytes(path, std::vector<char>(bytes.begin(), bytes.begin() + static_cast<long>(bytes.size() * 2 / 3)));
      auto reader = TraceReader::open(path);
      if (!reader.has_value()) {
        CHECK(reader.error().offset.has_value());
      } else {
        test::CopySink sink([](events::EventKind) { return true; });
        const auto status = (*reader)->read_all(sink);
        const bool reported = !status.has_value() ? status.error().offset.has_value()
                                                  : (*reader)->warning().find("offset") != std::string::npos;
        CHECK(reported);
      }
      // One byte flipped every 97 bytes past the headers: no crash, and a damaged file says where.
      auto damaged = bytes;
      for (std::size_t i = 4096; i < damaged.size(); i += 97) damaged[i] = static_cast<char>(damaged[i] ^ 0x5a);
      write_bytes(path, damaged);
      auto reopened = TraceReader::open(path);
      if (reopened.has_value()) {
        test::CopySink sink([](events::EventKind) { return true; });
        const auto status = (*reopened)->read_all(sink);
        if (!status.has_value()) CHECK(status.error().offset.has_value());
      } else {
        CHECK(reopened.error().offset.has_value());
      }
      std::filesystem::remove(file.path);
    }
  }
  std::filesystem::remove(path);
}

// A BAP frames file cut exactly between two frames (a kill between two
// writes) says where its frames end, as one cut inside a frame does.
TEST_CASE("Malicious: a BAP frames file cut between two frames names the offset where its frames end") {
  const std::string path = test::replay_temp_path("cut-between");
  std::vector<test::FileToWrite> files = {{TraceFormat::kFrames, path + ".f"}};
  test::record_files(test::kReplaySamples + "/static/hello", core::TraceLevel::kFull, files);
  const auto bytes = read_bytes(files[0].path);
  // Cut inside a frame first: the warning gives the end of the last whole frame.
  const auto warning_of = [&](std::size_t size) {
    write_bytes(path, std::vector<char>(bytes.begin(), bytes.begin() + static_cast<long>(size)));
    auto reader = TraceReader::open(path);
    REQUIRE(reader.has_value());
    test::CopySink sink([](events::EventKind) { return true; });
    REQUIRE((*reader)->read_all(sink).has_value());
    return (*reader)->warning();
  };
  // (A cut may fall between two frames by chance: the next bytes then.)
  const std::string marker = "which ends at offset 0x";
  std::string inside;
  std::size_t found = std::string::npos;
  for (std::size_t cut = bytes.size() / 2; found == std::string::npos && cut < bytes.size() / 2 + 64; ++cut)
    found = (inside = warning_of(cut)).find(marker);
  REQUIRE_MESSAGE(found != std::string::npos, inside);
  const std::size_t boundary = std::stoull(inside.substr(found + marker.size()), nullptr, 16);
  REQUIRE(boundary > 0);
  REQUIRE(boundary < bytes.size());
  const std::string between = warning_of(boundary);
  CHECK_MESSAGE(between.find("the file ends between two frames, at offset " + tracecorn::hex(boundary)) !=
                    std::string::npos,
                between);
  std::filesystem::remove(files[0].path);
  std::filesystem::remove(path);
}
