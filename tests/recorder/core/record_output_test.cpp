// Role: tests of the recorder's record output (recorder/core/record_output.h)
// on a real ring, read back as the drain thread reads it: a run longer than
// the ring's records hold is split into runs of at most what one record
// carries, every id kept in order; the block run and the register batch leave
// in execution order (blocks before the item that follows them, as markers;
// a run before any other record); a record that cannot be written is counted
// and a kGap record says so before the next one; a failed sink turns the
// block hook's fast path off at the next run written.
#include <doctest/doctest.h>

#include <cstring>
#include <vector>

#include "recorder/core/record_output.h"

using namespace tracecorn;
using namespace tracecorn::core;

namespace {

struct ReadRecord {
  RecordKind kind;
  std::uint16_t aux;
  std::vector<std::uint8_t> body;  // after the header
};

std::vector<ReadRecord> read_back(ring::SpscRing& ring) {
  ring.publish();
  std::vector<ReadRecord> records;
  ring.consume([&](std::span<const std::byte> bytes) {
    RecordHeader header{};
    std::memcpy(&header, bytes.data(), sizeof header);
    const auto* body = reinterpret_cast<const std::uint8_t*>(bytes.data()) + sizeof header;
    records.push_back({header.kind, header.aux, std::vector<std::uint8_t>(body, body + bytes.size() - sizeof header)});
  });
  return records;
}

std::unique_ptr<ring::SpscRing> small_ring() {
  ring::RingOptions options;
  options.capacity_bytes = ring::SpscRing::kMinCapacity;  // records of at most 504 bytes: 124 ids
  auto ring = ring::SpscRing::create(options);
  REQUIRE(ring.has_value());
  return std::move(*ring);
}

std::uint64_t word(const std::vector<std::uint8_t>& bytes, std::size_t at) {
  std::uint64_t value = 0;
  std::memcpy(&value, bytes.data() + at, 8);
  return value;
}

}  // namespace

TEST_CASE("Record output: a long run is split into what one record holds, every block in order") {
  auto ring = small_ring();
  std::atomic<bool> fast{true}, failed{false};
  RecordOutput output(fast, failed);
  output.attach(*ring);
  for (std::uint32_t id = 0; id < 300; ++id) output.append_block(id);
  output.write_pending();
  std::vector<std::uint32_t> ids;
  for (const ReadRecord& record : read_back(*ring)) {
    REQUIRE(record.kind == RecordKind::kBlockRun);
    CHECK(record.aux >= 1);
    CHECK(record.aux <= (ring->max_record_size() - sizeof(BlockRunRecord)) / 4);
    for (std::uint16_t i = 0; i < record.aux; ++i) {
      std::uint32_t id = 0;
      std::memcpy(&id, record.body.data() + i * 4u, 4);
      ids.push_back(id);
    }
  }
  REQUIRE(ids.size() == 300);
  for (std::uint32_t id = 0; id < 300; ++id) CHECK(ids[id] == id);
  CHECK(fast.load());  // no sink failed
  CHECK(output.records_lost() == 0);
}

TEST_CASE("Record output: blocks go before the register item after them, a run before any other record") {
  auto ring = small_ring();
  std::atomic<bool> fast{true}, failed{false};
  RecordOutput output(fast, failed);
  output.attach(*ring);
  output.append_block(7);
  output.append_block(8);
  std::uint8_t* item = output.make_room_for_item(sizeof(RegisterBatchItem) + 16);
  const std::uint64_t words[4] = {0x401000, 1, 0x0000000000020005, 42};  // pc, count 1, entry head, value
  std::memcpy(item, words, sizeof words);
  output.add_item(item + sizeof words);
  output.append_block(9);
  auto* stop = output.reserve<StopRecord>(RecordKind::kStop, 0, 0);
  REQUIRE(stop != nullptr);
  stop->pc = 0x401234;
  output.commit();
  const auto records = read_back(*ring);
  REQUIRE(records.size() == 3);
  // The batch: two block markers, then the item.
  CHECK(records[0].kind == RecordKind::kRegisterBatch);
  REQUIRE(records[0].body.size() == 3 * sizeof(RegisterBatchItem) + 16);
  CHECK(word(records[0].body, 0) == 7);
  CHECK((word(records[0].body, 8) & 0xffff) == kBlockMarkerCount);
  CHECK(word(records[0].body, 16) == 8);
  CHECK(word(records[0].body, 32) == 0x401000);
  CHECK(word(records[0].body, 56) == 42);
  // Then the run of block 9, then the record.
  CHECK(records[1].kind == RecordKind::kBlockRun);
  CHECK(records[1].aux == 1);
  CHECK(records[2].kind == RecordKind::kStop);
  CHECK(word(records[2].body, 0) == 0x401234);
}

TEST_CASE("Record output: a record that cannot be written is counted, and a gap record comes before the next") {
  auto ring = small_ring();
  std::atomic<bool> fast{true}, failed{false};
  RecordOutput output(fast, failed);
  output.attach(*ring);
  CHECK(output.reserve_bytes(ring->max_record_size() + 8) == nullptr);  // larger than the ring allows
  output.count_lost(2);  // (a block that could not be read, twice)
  CHECK(output.records_lost() == 3);
  auto* record = output.reserve<StopRecord>(RecordKind::kStop, 0, 0);
  REQUIRE(record != nullptr);
  output.commit();
  const auto records = read_back(*ring);
  REQUIRE(records.size() == 2);
  CHECK(records[0].kind == RecordKind::kGap);
  CHECK(word(records[0].body, 0) == 3);
  CHECK(records[1].kind == RecordKind::kStop);
}

TEST_CASE("Record output: a run written after a sink failed turns the block hook's fast path off") {
  auto ring = small_ring();
  std::atomic<bool> fast{true}, failed{false};
  RecordOutput output(fast, failed);
  output.attach(*ring);
  output.append_block(1);
  output.write_pending();
  CHECK(fast.load());
  failed = true;
  output.append_block(2);
  output.write_pending();
  CHECK_FALSE(fast.load());
  CHECK(read_back(*ring).size() == 2);
}
