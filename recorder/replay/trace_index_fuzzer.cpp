// Role: libFuzzer harness for the saved trace index (untrusted: a file beside
// the trace that may be stale, damaged or someone else's). The input is a
// u32 (little endian) delta log size, the delta log, then the tables; the
// harness wraps them in a saved index whose checksums and identity match, so
// that the parser proper (TraceIndex::load's tables, then seek's delta log)
// sees every mutation instead of the checksum refusing it. A file that loads
// is then questioned (seeks, registers, memory, threads, searches): no crash,
// hang or sanitizer report. Built with clang only (recorder/replay/CMakeLists.txt);
// CTest runs it briefly as trace_index_fuzzer_smoke. Seed: the index saved
// for formats/ucir/fuzz_seeds/tiny.ucir (recorder/replay/fuzz_seeds).
// Threads: libFuzzer's one.
#include <sys/mman.h>
#include <unistd.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "recorder/replay/trace_index.h"
#include "recorder/replay/trace_index_state.h"
#include "recorder/replay/trace_reader.h"

namespace {

using tracecorn::replay::TraceIdentity;
using tracecorn::replay::TraceIndex;

const tracecorn::arch::ArchInfo& fuzz_arch() {
  static const std::unique_ptr<tracecorn::replay::TraceReader> reader = [] {
    auto opened = tracecorn::replay::TraceReader::open(TRACECORN_INDEX_FUZZ_TRACE);
    if (!opened) __builtin_trap();
    return std::move(*opened);
  }();
  return reader->arch();
}

void put_u64(std::vector<std::uint8_t>& out, std::uint64_t value) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<std::uint8_t>(value >> (8 * i)));
}

std::uint64_t hash_of(std::span<const std::uint8_t> bytes) {
  tracecorn::replay::SavedIndexHash hash;
  hash.add(bytes);
  return hash.finish();
}

// The saved index file for `identity` around the two parts (trace_index_file.cpp's layout).
std::vector<std::uint8_t> saved_index(const TraceIdentity& identity, std::span<const std::uint8_t> delta,
                                      std::span<const std::uint8_t> meta) {
  std::vector<std::uint8_t> file(std::begin(tracecorn::replay::kSavedIndexMagic),
                                 std::end(tracecorn::replay::kSavedIndexMagic));
  put_u64(file, identity.size);
  put_u64(file, static_cast<std::uint64_t>(identity.mtime_ns));
  put_u64(file, identity.content_hash);
  put_u64(file, tracecorn::replay::kSavedIndexHeaderBytes);
  put_u64(file, delta.size());
  put_u64(file, hash_of(delta));
  put_u64(file, meta.size());
  put_u64(file, hash_of(meta));
  file.insert(file.end(), delta.begin(), delta.end());
  file.insert(file.end(), meta.begin(), meta.end());
  return file;
}

// Asks a loaded index what the debugger and `why` ask, at a few positions.
void question(TraceIndex& index) {
  const std::uint64_t count = index.event_count();
  for (const std::uint64_t event : {std::uint64_t{0}, count / 2, count}) {
    if (!index.seek(event)) continue;
    for (std::size_t reg = 0; reg < 4; ++reg) (void)index.register_value(reg);
    (void)index.pc();
    std::array<std::uint8_t, 16> bytes{};
    (void)index.read_memory(0x1000, bytes);
    (void)index.thread_at(event);
    (void)index.threads_alive_at(event);
    (void)index.instructions_before(event);
  }
  (void)index.next_instruction(0);
  (void)index.previous_instruction(count);
  (void)index.previous_write(count, 0x2000, 4);
  (void)index.next_access(0, 0x2000, 4, TraceIndex::kReadsAndWrites);
  (void)index.accesses_in(0, count);
  (void)index.register_history(0);
  (void)index.previous_register_write(0, count);
  (void)index.first_reads();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 4) return 0;
  std::uint32_t delta_size = 0;
  std::memcpy(&delta_size, data, 4);
  const std::span<const std::uint8_t> rest(data + 4, size - 4);
  delta_size = static_cast<std::uint32_t>(delta_size % (rest.size() + 1));
  const TraceIdentity identity{303, 1, 0x5eed};
  const auto file = saved_index(identity, rest.first(delta_size), rest.subspan(delta_size));
  // In a memory file, named by its /proc path (load() opens a path).
  const int fd = ::memfd_create("saved-index", 0);
  if (fd < 0) __builtin_trap();
  if (::write(fd, file.data(), file.size()) != static_cast<ssize_t>(file.size())) __builtin_trap();
  const std::string path = "/proc/self/fd/" + std::to_string(fd);
  if (auto index = TraceIndex::load(path, identity, fuzz_arch())) question(**index);
  ::close(fd);
  return 0;
}
