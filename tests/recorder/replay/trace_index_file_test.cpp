// Role: tests of the saved trace index (TraceIndex::save and load,
// recorder/replay/trace_index_file.cpp): a loaded index answers exactly as
// the one built from the trace (states at many events, searches, syscalls,
// mappings); a stale, damaged, truncated or foreign file is refused with the
// reason, never trusted (every single-byte change and every truncation of a
// small one is caught).
// Who runs it: unit_tests, on the doctest thread.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

#include "recorder/replay/trace_index.h"
#include "tests/recorder/replay/replay_test_helpers.h"
#include "tests/support/error_text.h"

using namespace tracecorn;
using replay::TraceIndex;

namespace {

std::unique_ptr<TraceIndex> build_index(const std::string& trace) {
  auto reader = replay::TraceReader::open(trace);
  REQUIRE(reader.has_value());
  replay::TraceIndexOptions options;
  options.checkpoint_interval = 4096;
  auto index = TraceIndex::build(**reader, options);
  REQUIRE_MESSAGE(index.has_value(), tracecorn::test_support::error_text(index));
  return std::move(*index);
}

// Counts what a namer is told.
class CountingNamer final : public formats::AddressNamer {
 public:
  void module_loaded(const events::ModuleLoadEvent&) override { ++calls; }
  void unmapped(std::uint64_t, std::uint64_t) override { ++calls; }
  void file_mapped(std::uint64_t, std::uint64_t, std::string_view) override { ++calls; }
  std::string name(std::uint64_t) override { return {}; }
  int calls = 0;
};

void check_same_answers(TraceIndex& built, TraceIndex& loaded) {
  REQUIRE(loaded.event_count() == built.event_count());
  CHECK(loaded.instructions() == built.instructions());
  CHECK(loaded.checkpoint_count() == built.checkpoint_count());
  REQUIRE(loaded.syscalls().size() == built.syscalls().size());
  for (std::size_t i = 0; i < built.syscalls().size(); ++i) {
    CHECK(loaded.syscalls()[i].name == built.syscalls()[i].name);
    CHECK(loaded.syscalls()[i].call_stack == built.syscalls()[i].call_stack);
    CHECK(loaded.syscalls()[i].memory_writes == built.syscalls()[i].memory_writes);
  }
  CHECK(loaded.first_thread() == built.first_thread());
  REQUIRE(loaded.thread_changes().size() == built.thread_changes().size());
  for (std::size_t i = 0; i < built.thread_changes().size(); ++i) {
    const auto &x = built.thread_changes()[i], &y = loaded.thread_changes()[i];
    CHECK(x.event == y.event);
    CHECK(x.change == y.change);
    CHECK(x.thread == y.thread);
    CHECK(x.from == y.from);
  }
  CountingNamer a, b;
  built.name_mappings(a);
  loaded.name_mappings(b);
  CHECK(a.calls == b.calls);
  const std::size_t registers = built.arch().registers.size();
  for (std::uint64_t event = 0; event <= built.event_count(); event += built.event_count() / 37 + 1) {
    CAPTURE(event);
    REQUIRE(built.seek(event).has_value());
    REQUIRE(loaded.seek(event).has_value());
    for (std::size_t r = 0; r < registers; ++r) {
      const auto x = built.register_value(r), y = loaded.register_value(r);
      REQUIRE(x.has_value() == y.has_value());
      if (x) CHECK(x->bytes == y->bytes);
    }
    if (const auto& calls = built.syscalls(); !calls.empty()) {
      const std::uint64_t address = calls.front().args[1] & ~std::uint64_t{0xfff};
      std::vector<std::uint8_t> m(8192), n(8192);
      CHECK(built.read_memory(address, m) == loaded.read_memory(address, n));
      CHECK(m == n);
    }
    auto i = built.previous_instruction(event), j = loaded.previous_instruction(event);
    REQUIRE(i.has_value());
    REQUIRE(j.has_value());
    CHECK(i->has_value() == j->has_value());
    if (*i) CHECK((*i)->event == (*j)->event);
  }
}

// A sample (nested_calls unless named) recorded at the full level, indexed in small chunks and saved
// beside the trace; both files are removed with it.
struct SavedIndex {
  std::string trace, saved;
  replay::TraceIdentity identity;
  std::unique_ptr<TraceIndex> built;
  ~SavedIndex() {
    std::filesystem::remove(saved);
    std::filesystem::remove(trace);
  }
};

std::unique_ptr<SavedIndex> save_index(const std::string& stem, const std::string& sample = "nested_calls") {
  auto made = std::make_unique<SavedIndex>();
  made->trace = test::replay_temp_path(stem);
  made->saved = made->trace + ".tcindex";
  test::record_files(test::kReplaySamples + "/static/" + sample, core::TraceLevel::kFull,
                     {{replay::TraceFormat::kUcir, made->trace}});
  auto identity = replay::identify_trace(made->trace);
  REQUIRE(identity.has_value());
  made->identity = *identity;
  made->built = build_index(made->trace);
  REQUIRE(made->built->save(made->saved, made->identity).has_value());
  CHECK_FALSE(std::filesystem::exists(made->saved + ".part"));
  return made;
}

}  // namespace

TEST_CASE("Trace index: a saved index loads back and answers as the built one") {
  auto made = save_index("saved-index.ucir");
  auto& built = made->built;
  const auto& identity = made->identity;
  const std::string& saved = made->saved;
  const std::string& trace = made->trace;
  (void)trace;
  SUBCASE("the same answers") {
    auto loaded = TraceIndex::load(saved, identity, built->arch());
    REQUIRE_MESSAGE(loaded.has_value(), tracecorn::test_support::error_text(loaded));
    check_same_answers(*built, **loaded);
  }
}

TEST_CASE("Trace index: a saved index of a threaded trace keeps its threads") {
  auto made = save_index("saved-index-threads.ucir", "debug_threads");
  REQUIRE(made->built->thread_changes().size() >= 4);  // two created, switches, two exited
  auto loaded = TraceIndex::load(made->saved, made->identity, made->built->arch());
  REQUIRE_MESSAGE(loaded.has_value(), tracecorn::test_support::error_text(loaded));
  check_same_answers(*made->built, **loaded);
  for (std::uint64_t event = 0; event <= made->built->event_count(); event += 997)
    CHECK((*loaded)->threads_alive_at(event) == made->built->threads_alive_at(event));
}

TEST_CASE("Malicious: a saved trace index that is stale, cut short or changed anywhere is refused, never trusted") {
  auto made = save_index("saved-index.ucir");
  auto& built = made->built;
  const auto& identity = made->identity;
  const std::string& saved = made->saved;
  const std::string& trace = made->trace;
  SUBCASE("stale: the trace is not the one it was made for") {
    auto other = identity;
    other.mtime_ns += 1;
    auto loaded = TraceIndex::load(saved, other, built->arch());
    REQUIRE_FALSE(loaded.has_value());
    CHECK(loaded.error().message.find("stale") != std::string::npos);
    CHECK(TraceIndex::load(trace + ".missing", identity, built->arch()).error().code == ErrorCode::kNotFound);
  }
  SUBCASE("damaged: every truncation and changed bytes all through the file") {
    std::ifstream in(saved, std::ios::binary);
    const std::vector<char> whole((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const std::string copy = saved + ".copy";
    auto write = [&](const std::vector<char>& bytes) {
      std::ofstream out(copy, std::ios::binary | std::ios::trunc);
      out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    };
    for (std::size_t cut = 0; cut < whole.size(); cut += whole.size() / 97 + 1) {
      write(std::vector<char>(whole.begin(), whole.begin() + static_cast<std::ptrdiff_t>(cut)));
      CHECK_FALSE(TraceIndex::load(copy, identity, built->arch()).has_value());
    }
    for (std::size_t at = 0; at < whole.size(); at += whole.size() / 211 + 1) {
      auto changed = whole;
      changed[at] = static_cast<char>(changed[at] ^ 0x40);
      write(changed);
      auto loaded = TraceIndex::load(copy, identity, built->arch());
      CHECK_MESSAGE(!loaded.has_value(), "a change at byte " << at << " was not caught");
    }
    std::filesystem::remove(copy);
  }
}
