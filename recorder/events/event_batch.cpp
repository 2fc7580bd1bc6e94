// Role: implementation of EventBatch (see event_batch.h).
#include "recorder/events/event_batch.h"

#include <algorithm>
#include <cstring>
#include <type_traits>

namespace tracecorn::events {

namespace {

constexpr std::size_t kBlockBytes = 256 * 1024;

}  // namespace

void* EventBatch::allocate(std::size_t bytes, std::size_t alignment) {
  for (;;) {
    if (block_ < blocks_.size()) {
      const std::size_t start = (used_ + alignment - 1) & ~(alignment - 1);
      if (start + bytes <= block_sizes_[block_]) {
        used_ = start + bytes;
        stored_bytes_ += bytes;
        return blocks_[block_].get() + start;
      }
      if (used_ != 0) {  // on to the next block
        ++block_;
        used_ = 0;
        continue;
      }
    }
    // No block, or an empty one too small: a new one here.
    // (operator new[] aligns it for any type an event holds.)
    const std::size_t size = std::max(kBlockBytes, bytes);
    blocks_.insert(blocks_.begin() + static_cast<std::ptrdiff_t>(block_), std::make_unique<std::byte[]>(size));
    block_sizes_.insert(block_sizes_.begin() + static_cast<std::ptrdiff_t>(block_), size);
    used_ = 0;
  }
}

template <typename T>
std::span<const T> EventBatch::copy(std::span<const T> items) {
  static_assert(std::is_trivially_copyable_v<T>);
  if (items.empty()) return {};
  void* at = allocate(items.size_bytes(), alignof(T));
  std::memcpy(at, items.data(), items.size_bytes());
  return std::span(static_cast<const T*>(at), items.size());
}

std::string_view EventBatch::copy(std::string_view text) {
  if (text.empty()) return {};
  void* at = allocate(text.size(), 1);
  std::memcpy(at, text.data(), text.size());
  return std::string_view(static_cast<const char*>(at), text.size());
}

void EventBatch::add(const Event& event) {
  Event& copied = events_.emplace_back(event);
  std::visit(
      [this](auto& p) {
        using T = std::decay_t<decltype(p)>;
        if constexpr (std::is_same_v<T, BlockEvent> || std::is_same_v<T, InstructionEvent>) {
          p.bytes = copy(p.bytes);
        } else if constexpr (std::is_same_v<T, RegistersEvent>) {
          p.changes = copy(p.changes);
        } else if constexpr (std::is_same_v<T, SyscallEvent>) {
          p.name = copy(p.name);
          auto writes = copy(p.memory_writes);
          for (auto& write : std::span(const_cast<MemoryWriteEffect*>(writes.data()), writes.size()))
            write.bytes = copy(write.bytes);
          p.memory_writes = writes;
          auto mappings = copy(p.mapping_changes);
          for (auto& mapping : std::span(const_cast<MappingEffect*>(mappings.data()), mappings.size())) {
            mapping.name = copy(mapping.name);
            mapping.file = copy(mapping.file);
          }
          p.mapping_changes = mappings;
          p.register_changes = copy(p.register_changes);
          p.call_stack = copy(p.call_stack);
        } else if constexpr (std::is_same_v<T, FaultEvent>) {
          p.description = copy(p.description);
        } else if constexpr (std::is_same_v<T, ModuleLoadEvent>) {
          p.path = copy(p.path);
        } else if constexpr (std::is_same_v<T, GapEvent>) {
          p.reason = copy(p.reason);
        } else if constexpr (std::is_same_v<T, SignalEvent>) {
          auto writes = copy(p.frame_writes);
          for (auto& write : std::span(const_cast<MemoryWriteEffect*>(writes.data()), writes.size()))
            write.bytes = copy(write.bytes);
          p.frame_writes = writes;
          p.register_changes = copy(p.register_changes);
        } else if constexpr (std::is_same_v<T, ThreadEvent>) {
          p.registers = copy(p.registers);
        } else if constexpr (std::is_same_v<T, ProcessEvent>) {
          p.trace = copy(p.trace);
          p.detail = copy(p.detail);
        } else {
          static_assert(std::is_same_v<T, MemoryEvent> || std::is_same_v<T, ExitEvent>,
                        "a payload with spans or strings must be copied here");
        }
      },
      copied.payload);
}

void EventBatch::clear() {
  events_.clear();
  block_ = 0;
  used_ = 0;
  stored_bytes_ = 0;
}

}  // namespace tracecorn::events
