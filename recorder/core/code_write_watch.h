// Role: the recorder's watch on code it decoded from writable memory, for the
// levels that have no memory hook (blocks, insns, regs): Unicorn write hooks
// limited to the pages that hold such code, so that a guest store into
// decoded code is seen when it happens instead of comparing every block's
// bytes at every entry. Unicorn 2.0.1 takes its slow path for every guest
// store already, so a hook limited to a few pages costs other stores one
// range check each.
// Threads: emulation thread only (hooks are added and removed there, in a
// block hook or between runs).
// Invariants: the watched ranges are disjoint, page aligned and not adjacent
// (neighbours are merged into one hook), at most kMaxRanges of them (beyond,
// the nearest gap is watched too); each range has exactly one live hook,
// removed with it.
#pragma once

#include <cstdint>
#include <map>
#include <utility>

#include <unicorn/unicorn.h>

namespace tracecorn::core {

class CodeWriteWatch {
 public:
  // Called before a watched guest store (Unicorn's UC_HOOK_MEM_WRITE callback).
  using WriteCallback = void (*)(uc_engine*, uc_mem_type, std::uint64_t address, int size, std::int64_t value,
                                 void* user);

  CodeWriteWatch() = default;
  CodeWriteWatch(const CodeWriteWatch&) = delete;
  CodeWriteWatch& operator=(const CodeWriteWatch&) = delete;
  ~CodeWriteWatch() { clear(); }

  // Watching starts: stores into watched pages call `callback(…, user)`.
  void attach(uc_engine* engine, WriteCallback callback, void* user) noexcept {
    engine_ = engine;
    callback_ = callback;
    user_ = user;
  }
  bool attached() const noexcept { return callback_ != nullptr; }

  // Watches the pages of [address, address + size). False when Unicorn refuses
  // the hook (the pages are then not watched: compare the code's bytes instead).
  bool watch(std::uint64_t address, std::uint64_t size) noexcept;
  // Stops watching the pages of [start, end) (unmapped or made read-only).
  void unwatch(std::uint64_t start, std::uint64_t end) noexcept;
  // Removes every hook (detach).
  void clear() noexcept;

  std::size_t ranges() const noexcept { return ranges_.size(); }
  // The most hooks at a time (each guest store checks every hook).
  static constexpr std::size_t kMaxRanges = 16;

 private:
  static constexpr std::uint64_t kPageMask = 0xfff;
  struct Range {
    std::uint64_t last = 0;  // inclusive
    uc_hook hook = 0;
  };
  using Ranges = std::map<std::uint64_t, Range>;  // first byte -> the range
  // The ranges that overlap or adjoin [first, last] (inclusive bounds, as
  // Unicorn bounds hooks), as [begin, end) of ranges_.
  std::pair<Ranges::iterator, Ranges::iterator> touching(std::uint64_t first, std::uint64_t last) noexcept;
  void widen_to_bound(std::uint64_t& first, std::uint64_t& last) noexcept;

  uc_engine* engine_ = nullptr;
  WriteCallback callback_ = nullptr;
  void* user_ = nullptr;
  Ranges ranges_;
};

}  // namespace tracecorn::core
