// Role: implementation of the section encoders (see bintrace_encode.h).
#include "formats/bintrace/bintrace_encode.h"

#include <algorithm>

#include "formats/bintrace/bintrace_layout.h"

namespace tracecorn::formats::bintrace {

namespace {

// A metadata string: u64 length, then `field` bytes NUL padded (cut to fit).
void put_padded(std::vector<std::uint8_t>& out, std::string_view text, std::size_t field) {
  const std::size_t length = std::min(text.size(), field);
  put_u64(out, length);
  out.insert(out.end(), text.begin(), text.begin() + static_cast<std::ptrdiff_t>(length));
  out.insert(out.end(), field - length, 0);
}

// Patches a u64 section size at `at` (the size excludes its own 8 bytes).
void patch_size(std::vector<std::uint8_t>& out, std::size_t at) {
  const std::uint64_t size = out.size() - at - 8;
  for (int i = 0; i < 8; ++i) out[at + static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(size >> (8 * i));
}

}  // namespace

std::vector<std::uint8_t> encode_head(const HeadStrings& strings, std::uint8_t compression,
                                      const MachineDescription& description, std::span<const MemoryRegion> regions) {
  std::vector<std::uint8_t> out;
  // Metadata.
  put_u64(out, kMetadataMagic);
  put_u32(out, kMetadataVersion);
  put_u32(out, kMetadataTypeTrace);
  put_padded(out, kFormatVersion, kMetadataStringBytes[0]);
  put_padded(out, "tracecorn", kMetadataStringBytes[1]);
  put_padded(out, strings.tool_version, kMetadataStringBytes[2]);
  put_padded(out, strings.tool_info, kMetadataStringBytes[3]);
  put_u64(out, strings.unix_time);
  // Header.
  put_u64(out, 1);
  put_u8(out, compression);
  // Machine description.
  const std::size_t phy = description.physical_address_size;
  const std::size_t at = out.size();
  put_u64(out, 0);
  put_u32(out, description.magic);
  put_u8(out, description.physical_address_size);
  put_u32(out, static_cast<std::uint32_t>(regions.size()));
  for (const auto& region : regions) {
    put_le(out, region.start, phy);
    put_le(out, region.size, phy);
  }
  put_u32(out, static_cast<std::uint32_t>(description.registers.size()));
  for (const auto& reg : description.registers) {
    put_u16(out, reg.id);
    put_u16(out, reg.size);
    put_string(out, reg.name);
  }
  put_u32(out, static_cast<std::uint32_t>(description.operations.size()));
  for (const auto& op : description.operations) {
    put_u8(out, op.id);
    put_u16(out, op.target_id);
    put_u8(out, op.op);
    put_bytes(out, op.value);
  }
  put_u32(out, static_cast<std::uint32_t>(description.statics.size()));
  for (const auto& reg : description.statics) {
    put_string(out, reg.name);
    put_u8(out, static_cast<std::uint8_t>(reg.value.size()));
    put_bytes(out, reg.value);
  }
  patch_size(out, at);
  return out;
}

std::vector<std::uint8_t> encode_initial_registers(const MachineDescription& description,
                                                   std::span<const std::vector<std::uint8_t>> values) {
  std::vector<std::uint8_t> out;
  put_u64(out, 0);
  put_u32(out, static_cast<std::uint32_t>(description.registers.size()));
  for (std::size_t i = 0; i < description.registers.size(); ++i) {
    put_u16(out, description.registers[i].id);
    std::vector<std::uint8_t> value(description.registers[i].size, 0);
    if (i < values.size()) std::copy_n(values[i].begin(), std::min(values[i].size(), value.size()), value.begin());
    put_bytes(out, value);
  }
  patch_size(out, 0);
  return out;
}

void encode_initial_memory(std::span<const MemoryRegion> regions,
                           const std::function<void(std::uint64_t, std::span<std::uint8_t>)>& fill,
                           const std::function<void(std::span<const std::uint8_t>)>& put) {
  std::uint64_t total = 0;
  for (const auto& region : regions) total += region.size;
  std::vector<std::uint8_t> size_field;
  put_u64(size_field, total);
  put(size_field);
  std::vector<std::uint8_t> chunk(1 << 20);
  for (const auto& region : regions) {
    for (std::uint64_t offset = 0; offset < region.size; offset += chunk.size()) {
      const auto length = static_cast<std::size_t>(std::min<std::uint64_t>(chunk.size(), region.size - offset));
      std::fill_n(chunk.begin(), length, std::uint8_t{0});
      fill(region.start + offset, std::span(chunk).first(length));
      put(std::span(chunk).first(length));
    }
  }
}

std::vector<std::uint8_t> encode_events_header(std::uint64_t payload_bytes, std::uint64_t count) {
  std::vector<std::uint8_t> out;
  put_u64(out, 8 + payload_bytes);
  put_u64(out, count);
  return out;
}

std::vector<MemoryRegion> merge_regions(std::vector<MemoryRegion> ranges) {
  std::sort(ranges.begin(), ranges.end(), [](const auto& a, const auto& b) { return a.start < b.start; });
  std::vector<MemoryRegion> merged;
  for (const auto& range : ranges) {
    if (range.size == 0) continue;
    if (!merged.empty() && range.start <= merged.back().start + merged.back().size) {
      const std::uint64_t end = std::max(merged.back().start + merged.back().size, range.start + range.size);
      merged.back().size = end - merged.back().start;
    } else {
      merged.push_back(range);
    }
  }
  return merged;
}

}  // namespace tracecorn::formats::bintrace
