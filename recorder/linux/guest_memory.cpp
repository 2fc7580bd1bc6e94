// Role: implementation of GuestMemory (see guest_memory.h for the invariants).
#include "recorder/linux/guest_memory.h"

#include "recorder/linux/linux_process.h"

#include <algorithm>
#include <cstring>

namespace tracecorn::linux_layer {

GuestMemory::GuestMemory(uc_engine* engine, const arch::AddressSpaceLayout& layout)
    : engine_(engine), layout_(layout) {}

void GuestMemory::split_at(std::uint64_t address) {
  auto it = vmas_.upper_bound(address);
  if (it == vmas_.begin()) return;
  --it;
  Vma& vma = it->second;
  if (vma.start >= address || vma.end <= address) return;
  Vma upper = vma;
  upper.start = address;
  const std::uint64_t lower_length = address - vma.start;
  upper.file_offset += lower_length;
  upper.file_size = vma.file_size > lower_length ? vma.file_size - lower_length : 0;
  vma.file_size = std::min(vma.file_size, lower_length);
  vma.end = address;
  vmas_.emplace(address, std::move(upper));
}

void GuestMemory::forget_translations(std::uint64_t start, std::uint64_t end) {
  uc_ctl_remove_cache(engine_, start, end);
}

Status GuestMemory::map(std::uint64_t start, std::uint64_t length, int prot, std::string name, FileBacking backing) {
  if (length == 0 || start % kPageSize || length % kPageSize || start + length < start)
    return make_error(ErrorCode::kInvalidArgument, "unaligned or empty mapping");
  if (auto status = unmap(start, length); !status) return status;
  const bool in_engine = prot != 0 || !backing.path.empty();
  if (in_engine)
    if (const uc_err err = uc_mem_map(engine_, start, length, static_cast<std::uint32_t>(prot)); err != UC_ERR_OK)
      return make_error(ErrorCode::kEmulator, std::string("uc_mem_map: ") + uc_strerror(err));
  backing.size = std::min(backing.size, length);
  const auto [it, inserted] =
      vmas_.emplace(start, Vma{start, start + length, prot, std::move(name), std::move(backing.path), backing.offset,
                               backing.size, in_engine});
  if (observer_) {
    const Vma& vma = it->second;
    events::MappingEffect change{events::MappingChangeKind::kMap, events::GuestAddress{start}, length,
                                 static_cast<std::uint32_t>(prot)};
    change.name = vma.name;
    change.file = vma.file;
    change.file_offset = vma.file_offset;
    change.file_size = vma.file_size;
    observer_->on_mapping_changed(change);
  }
  return ok_status();
}

Status GuestMemory::unmap(std::uint64_t start, std::uint64_t length) {
  const std::uint64_t end = start + length;
  split_at(start);
  split_at(end);
  if (observer_ && vmas_.lower_bound(start) != vmas_.end() && vmas_.lower_bound(start)->first < end)
    observer_->on_mapping_changed({events::MappingChangeKind::kUnmap, events::GuestAddress{start}, length, 0});
  for (auto it = vmas_.lower_bound(start); it != vmas_.end() && it->first < end;) {
    const Vma& vma = it->second;
    if (vma.prot & kProtExec) forget_translations(vma.start, vma.end);
    if (vma.in_engine)
      if (const uc_err err = uc_mem_unmap(engine_, vma.start, vma.end - vma.start); err != UC_ERR_OK)
        return make_error(ErrorCode::kEmulator, std::string("uc_mem_unmap: ") + uc_strerror(err));
    it = vmas_.erase(it);
  }
  return ok_status();
}

Status GuestMemory::protect(std::uint64_t start, std::uint64_t length, int prot) {
  if (!is_mapped(start, length)) return make_error(ErrorCode::kInvalidArgument, "range not mapped");
  const std::uint64_t end = start + length;
  split_at(start);
  split_at(end);
  for (auto it = vmas_.lower_bound(start); it != vmas_.end() && it->first < end; ++it) {
    Vma& vma = it->second;
    if (vma.prot == prot) continue;
    if ((vma.prot & kProtExec) && !(prot & kProtExec)) forget_translations(vma.start, vma.end);
    const auto length_here = vma.end - vma.start;
    const uc_err err = vma.in_engine ? uc_mem_protect(engine_, vma.start, length_here, static_cast<std::uint32_t>(prot))
                                     : uc_mem_map(engine_, vma.start, length_here, static_cast<std::uint32_t>(prot));
    if (err != UC_ERR_OK)
      return make_error(ErrorCode::kEmulator, std::string(vma.in_engine ? "uc_mem_protect: " : "uc_mem_map: ") +
                                                  uc_strerror(err));
    vma.in_engine = true;
    vma.prot = prot;
  }
  if (observer_)
    observer_->on_mapping_changed(
        {events::MappingChangeKind::kProtect, events::GuestAddress{start}, length, static_cast<std::uint32_t>(prot)});
  return ok_status();
}

std::optional<std::uint64_t> GuestMemory::find_free(std::uint64_t length) const {
  length = page_up(length);
  if (length == 0 || length > layout_.mmap_top) return std::nullopt;
  // Walk the gaps from the top down.
  std::uint64_t gap_end = layout_.mmap_top;
  for (auto it = vmas_.rbegin(); it != vmas_.rend(); ++it) {
    const Vma& vma = it->second;
    if (vma.start >= gap_end) continue;
    if (vma.end < gap_end && gap_end - vma.end >= length) return gap_end - length;
    gap_end = std::min(gap_end, vma.start);
  }
  if (gap_end >= layout_.lowest_mmap + length) return gap_end - length;
  return std::nullopt;
}

const Vma* GuestMemory::find(std::uint64_t address) const {
  auto it = vmas_.upper_bound(address);
  if (it == vmas_.begin()) return nullptr;
  --it;
  return address < it->second.end ? &it->second : nullptr;
}

bool GuestMemory::is_mapped(std::uint64_t start, std::uint64_t length) const {
  std::uint64_t cursor = start;
  const std::uint64_t end = start + length;
  if (end < start) return false;
  while (cursor < end) {
    const Vma* vma = find(cursor);
    if (!vma) return false;
    cursor = vma->end;
  }
  return true;
}

bool GuestMemory::read(std::uint64_t address, std::span<std::uint8_t> out) const {
  if (out.empty()) return true;
  if (!is_mapped(address, out.size())) return false;
  return uc_mem_read(engine_, address, out.data(), out.size()) == UC_ERR_OK;
}

bool GuestMemory::write(std::uint64_t address, std::span<const std::uint8_t> data) {
  if (data.empty()) return true;
  if (!is_mapped(address, data.size())) return false;
  if (uc_mem_write(engine_, address, data.data(), data.size()) != UC_ERR_OK) return false;
  if (observer_) observer_->on_memory_written(address, data);
  return true;
}

std::optional<std::string> GuestMemory::read_string(std::uint64_t address, std::size_t max_length) const {
  std::string result;
  char chunk[256];
  while (result.size() < max_length) {
    // Never read across a page we have not checked.
    const std::uint64_t to_page_end = kPageSize - (address % kPageSize);
    const std::size_t want = static_cast<std::size_t>(std::min<std::uint64_t>(sizeof chunk, to_page_end));
    if (!read(address, std::span(reinterpret_cast<std::uint8_t*>(chunk), want))) return std::nullopt;
    const std::size_t length = strnlen(chunk, want);
    result.append(chunk, length);
    if (length < want) return result.size() <= max_length ? std::optional(result) : std::nullopt;
    address += want;
  }
  return std::nullopt;  // too long
}

std::uint64_t GuestMemory::mapped_bytes() const {
  std::uint64_t total = 0;
  for (const auto& [start, vma] : vmas_) total += vma.end - vma.start;
  return total;
}

std::uint64_t GuestMemory::mapped_bytes_in(std::uint64_t start, std::uint64_t length) const {
  const std::uint64_t end = start + length < start ? UINT64_MAX : start + length;
  std::uint64_t total = 0;
  auto it = vmas_.upper_bound(start);
  if (it != vmas_.begin()) --it;
  for (; it != vmas_.end() && it->second.start < end; ++it) {
    const std::uint64_t from = std::max(start, it->second.start);
    const std::uint64_t to = std::min(end, it->second.end);
    if (to > from) total += to - from;
  }
  return total;
}

bool GuestMemory::fits(std::uint64_t start, std::uint64_t length, std::uint64_t released) const {
  if (limit_ == 0) return true;
  const std::uint64_t now = mapped_bytes();
  const std::uint64_t kept = now - std::min(now, mapped_bytes_in(start, length) + released);
  return length <= limit_ && kept <= limit_ - length;
}

}  // namespace tracecorn::linux_layer
