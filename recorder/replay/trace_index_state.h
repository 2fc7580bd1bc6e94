// Role: the trace index's machine state (TraceIndex::State and its pages), for
// the index's own files: trace_index.cpp builds and seeks it,
// trace_index_file.cpp saves and loads it (with the saved file's magic and
// checksum, which the saved-index fuzzer uses too). Not a public header.
// Invariants: a page is shared between checkpoints until written (copy on
// write); a byte with no page is known zero inside a mapped range and
// unknown outside.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <span>
#include <unordered_map>
#include <vector>

#include "recorder/replay/trace_index.h"

namespace tracecorn::replay {

inline constexpr std::uint64_t kPageBytes = 4096;

// The saved index's file (trace_index_file.cpp has the layout): its magic
// and version, the header's size, and the checksum of its two parts (the
// delta log and the tables), which the parser's fuzzer computes too.
inline constexpr char kSavedIndexMagic[8] = {'T', 'C', 'I', 'D', 'X', 0, 0, 3};
inline constexpr std::size_t kSavedIndexHeaderBytes = 8 + 8 * 3 + 8 * 5;  // magic, identity, delta offset/size/hash, meta size/hash
// A quick 64-bit checksum (not cryptographic: it catches damage, not intent).
class SavedIndexHash {
 public:
  void add(std::span<const std::uint8_t> bytes) {
    for (const std::uint8_t b : bytes) {
      word_ |= std::uint64_t{b} << (8 * filled_);
      if (++filled_ == 8) mix();
    }
  }
  std::uint64_t finish() {
    if (filled_) mix();
    return hash_;
  }

 private:
  void mix() {
    hash_ = (hash_ ^ word_) * 0x9e3779b97f4a7c15ull;
    hash_ ^= hash_ >> 29;
    word_ = 0, filled_ = 0;
  }
  std::uint64_t hash_ = 0x243f6a8885a308d3ull, word_ = 0;
  int filled_ = 0;
};

struct TraceIndex::Page {
  std::array<std::uint8_t, kPageBytes> bytes{};
  std::array<std::uint64_t, kPageBytes / 64> known{};  // one bit per byte
};

// The machine state: registers (table order) and memory. Pages are shared with
// checkpoints and copied before their first write (copy on write); a byte with
// no page is known to be zero inside a mapped range and unknown outside.
struct TraceIndex::State {
  std::vector<events::RegisterValue> registers;
  std::vector<bool> known;
  std::uint64_t pc = 0;
  bool pc_known = false;
  std::unordered_map<std::uint64_t, std::shared_ptr<Page>> pages;
  std::map<std::uint64_t, std::uint64_t> mapped;  // start -> end (exclusive), disjoint

  bool in_mapping(std::uint64_t address) const {
    auto it = mapped.upper_bound(address);
    if (it == mapped.begin()) return false;
    --it;
    return address < it->second;
  }
  Page& writable(std::uint64_t number) {
    auto& slot = pages[number];
    if (!slot) {
      slot = std::make_shared<Page>();
      if (in_mapping(number * kPageBytes)) slot->known.fill(~0ull);  // (mappings are page aligned)
    } else if (slot.use_count() > 1) {
      slot = std::make_shared<Page>(*slot);
    }
    return *slot;
  }
  void write(std::uint64_t address, std::span<const std::uint8_t> bytes) {
    std::size_t done = 0;
    while (done < bytes.size()) {
      const std::uint64_t at = address + done;
      const std::uint64_t offset = at % kPageBytes;
      const std::size_t n = std::min<std::uint64_t>(bytes.size() - done, kPageBytes - offset);
      Page& page = writable(at / kPageBytes);
      std::memcpy(page.bytes.data() + offset, bytes.data() + done, n);
      for (std::size_t i = offset; i < offset + n; ++i) page.known[i / 64] |= 1ull << (i % 64);
      done += n;
    }
  }
  void drop_pages(std::uint64_t start, std::uint64_t end) {
    if ((end - start) / kPageBytes < pages.size()) {
      for (std::uint64_t n = start / kPageBytes; n * kPageBytes < end; ++n) pages.erase(n);
    } else {
      std::erase_if(pages, [&](const auto& entry) { return entry.first * kPageBytes >= start && entry.first * kPageBytes < end; });
    }
  }
  void unmap_range(std::uint64_t start, std::uint64_t end) {
    std::vector<std::pair<std::uint64_t, std::uint64_t>> keep;
    for (auto it = mapped.begin(); it != mapped.end();) {
      if (it->second <= start || it->first >= end) {
        ++it;
        continue;
      }
      if (it->first < start) keep.push_back({it->first, start});
      if (it->second > end) keep.push_back({end, it->second});
      it = mapped.erase(it);
    }
    for (const auto& [s, e] : keep) mapped[s] = e;
  }
  void map(std::uint64_t start, std::uint64_t length, bool fresh) {
    const std::uint64_t end = start + length < start ? ~0ull : start + length;
    drop_pages(start, end);
    unmap_range(start, end);
    if (fresh) mapped[start] = end;
  }
  std::size_t read(std::uint64_t address, std::span<std::uint8_t> out) const {
    std::fill(out.begin(), out.end(), 0);
    for (std::size_t i = 0; i < out.size(); ++i) {
      const std::uint64_t at = address + i;
      auto it = pages.find(at / kPageBytes);
      if (it == pages.end()) {
        if (!in_mapping(at)) return i;
        continue;
      }
      const std::size_t offset = at % kPageBytes;
      if (!(it->second->known[offset / 64] >> (offset % 64) & 1)) return i;
      out[i] = it->second->bytes[offset];
    }
    return out.size();
  }
};

}  // namespace tracecorn::replay
