// Role: tests of the format registry (formats/registry.h): every format has one
// descriptor; what a readable format's writer writes is detected as that format
// from its first bytes and opened by content; the one writer factory refuses
// what a format cannot do, and names tracecorn's version in the metadata of
// every format that has a place for it, wherever it is called from (here, as
// convert calls it).
#include <doctest/doctest.h>

#include <filesystem>
#include <set>
#include <string>

#include "formats/bap/bap_reader.h"
#include "formats/bintrace/bintrace_reader.h"
#include "formats/common/byte_stream.h"
#include "formats/registry.h"
#include "tests/formats/sample_recording.h"
#include "tests/formats/test_files.h"
#include "tests/support/error_text.h"

using namespace tracecorn;

namespace {

const std::string kHello = std::string(TRACECORN_SAMPLES_DIR) + "/static/hello";

// Records the hello sample at level full into the writer the registry builds
// for `format`, at `path`. Returns the architecture's name.
std::string record_with_factory(std::string_view format, const std::string& path, bool zstd) {
  std::unique_ptr<events::Sink> writer;
  std::string arch_name;
  auto run = test::record_sample(kHello, core::TraceLevel::kFull,
                                 [&](linux_layer::LinuxProcess& process) -> std::vector<events::Sink*> {
                                   formats::WriterRequest request;
                                   request.path = path;
                                   request.arch = &process.arch();
                                   request.compress_zstd = zstd;
                                   auto opened = formats::open_writer(format, std::move(request));
                                   REQUIRE_MESSAGE(opened.has_value(), tracecorn::test_support::error_text(opened));
                                   writer = std::move(*opened);
                                   arch_name = std::string(process.arch().name);
                                   return {writer.get()};
                                 });
  CHECK(run.finish_error.empty());
  return arch_name;
}

}  // namespace

TEST_CASE("Format registry: one descriptor per format, found by name, readable ones by TraceFormat") {
  std::set<std::string_view> names;
  for (const auto& format : formats::all_formats()) {
    CAPTURE(format.name);
    CHECK(names.insert(format.name).second);
    CHECK(formats::find_format(format.name) == &format);
    CHECK(static_cast<bool>(format.open_writer));
    if (!format.readable) {
      CHECK_FALSE(static_cast<bool>(format.detect));
      continue;
    }
    CHECK(static_cast<bool>(format.detect));
    CHECK(static_cast<bool>(format.open_reader));
    CHECK(&formats::descriptor(*format.readable) == &format);
    CHECK(formats::format_name(*format.readable) == format.name);
  }
  CHECK(names == std::set<std::string_view>{"ucir", "frames", "bintrace", "text", "null", "drcov", "chrome", "tenet"});
  CHECK(formats::find_format("qira") == nullptr);
  CHECK(formats::descriptor(formats::TraceFormat::kBintrace).needs_registers);
  CHECK(formats::descriptor(formats::TraceFormat::kUcir).capabilities().initial_memory);
  CHECK_FALSE(formats::descriptor(formats::TraceFormat::kFrames).capabilities().initial_memory);
}

TEST_CASE("Format registry: each readable format's writer output is detected and opened as that format, plain and zstd") {
  for (const auto& format : formats::all_formats()) {
    if (!format.readable) continue;
    for (const bool zstd : {false, true}) {
      CAPTURE(format.name);
      CAPTURE(zstd);
      const std::string path = test::temp_file("registry", std::string(format.name) + (zstd ? ".zst" : ""));
      const std::string arch_name = record_with_factory(format.name, path, zstd);
      const auto head = formats::read_head(path, 16);
      const formats::FormatDescriptor* detected = formats::detect_format(head);
      REQUIRE(detected != nullptr);
      CHECK(detected == &format);
      for (const auto& other : formats::all_formats())
        if (other.readable && &other != &format) CHECK_FALSE(other.detect(head));
      auto opened = formats::open_trace(path);
      REQUIRE_MESSAGE(opened.has_value(), tracecorn::test_support::error_text(opened));
      CHECK(opened->format == *format.readable);
      CHECK(opened->reader->arch().name == arch_name);
      std::filesystem::remove(path);
    }
  }
}

TEST_CASE("Format registry: the writer factory refuses what a format cannot do, naming it") {
  const auto& arch = arch::x86_64_arch();
  const std::string path = test::temp_file("registry", "refused");
  auto request = [&](bool zstd, const arch::ArchInfo* with) {
    formats::WriterRequest made;
    made.path = path;
    made.arch = with;
    made.compress_zstd = zstd;
    return made;
  };
  auto unknown = formats::open_writer("qira", request(false, &arch));
  REQUIRE_FALSE(unknown.has_value());
  CHECK(unknown.error().code == ErrorCode::kInvalidArgument);
  CHECK(unknown.error().message.find("\"qira\"") != std::string::npos);
  auto tenet_riscv = formats::open_writer("tenet", request(false, &arch::riscv64_arch()));
  REQUIRE_FALSE(tenet_riscv.has_value());
  CHECK(tenet_riscv.error().code == ErrorCode::kUnsupported);
  auto compressed_text = formats::open_writer("text", request(true, &arch));
  REQUIRE_FALSE(compressed_text.has_value());
  CHECK(compressed_text.error().message.find("text format cannot be compressed") != std::string::npos);
  auto no_arch = formats::open_writer("ucir", request(false, nullptr));
  REQUIRE_FALSE(no_arch.has_value());
  CHECK(no_arch.error().code == ErrorCode::kInvalidArgument);
  CHECK_FALSE(std::filesystem::exists(path));
}

TEST_CASE("Format registry: the writers name tracecorn's version in their metadata, also without a program (convert)") {
  const std::string bintrace = test::temp_file("registry", "version.bt");
  const std::string frames = test::temp_file("registry", "version.frames");
  record_with_factory("bintrace", bintrace, false);
  record_with_factory("frames", frames, false);
  auto bt = formats::BintraceReader::open(bintrace);
  REQUIRE_MESSAGE(bt.has_value(), tracecorn::test_support::error_text(bt));
  CHECK((*bt)->metadata().tool_name == "tracecorn");
  CHECK((*bt)->metadata().tool_version == TRACECORN_VERSION);
  auto fr = formats::FramesReader::open(frames);
  REQUIRE_MESSAGE(fr.has_value(), tracecorn::test_support::error_text(fr));
  CHECK((*fr)->meta().tracer_name == "tracecorn");
  CHECK((*fr)->meta().tracer_version == TRACECORN_VERSION);
  std::filesystem::remove(bintrace);
  std::filesystem::remove(frames);
}
