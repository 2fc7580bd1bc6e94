// Role: implementation of capture_initial_state (see initial_state.h).
#include "recorder/core/initial_state.h"

#include <algorithm>
#include <cstring>
#include <iterator>

namespace tracecorn::core {

namespace {

std::vector<events::RegisterValue> read_register_table(uc_engine* engine, const arch::ArchInfo& arch) {
  std::vector<events::RegisterValue> values;
  for (std::size_t i = 0; i < arch.registers.size(); ++i) {
    events::RegisterValue value;
    value.index = static_cast<std::uint16_t>(i);
    value.size = static_cast<std::uint8_t>(std::min<std::size_t>(arch.registers[i].size, value.bytes.size()));
    std::uint8_t raw[64] = {};  // Unicorn may write more than the table's size (x87: 10 bytes into a larger buffer)
    uc_reg_read(engine, arch.registers[i].uc_id, raw);
    std::memcpy(value.bytes.data(), raw, value.size);
    values.push_back(value);
  }
  return values;
}

}  // namespace

void capture_initial_state(uc_engine* engine, const arch::ArchInfo& arch, events::TraceInfo& info) {
  info.has_initial_state = true;
  info.initial_registers = read_register_table(engine, arch);
  info.initial_memory.clear();
  uc_mem_region* regions = nullptr;
  std::uint32_t count = 0;
  if (uc_mem_regions(engine, &regions, &count) != UC_ERR_OK) return;
  for (std::uint32_t i = 0; i < count; ++i) {
    events::InitialRegion region;
    region.start = events::GuestAddress{regions[i].begin};
    region.size = regions[i].end - regions[i].begin + 1;  // Unicorn's end is inclusive
    region.prot = regions[i].perms;
    region.bytes.resize(region.size);
    if (uc_mem_read(engine, regions[i].begin, region.bytes.data(), region.size) != UC_ERR_OK) region.bytes.clear();
    describe_region(info, region);
    info.initial_memory.push_back(std::move(region));
  }
  uc_free(regions);
  std::sort(info.initial_memory.begin(), info.initial_memory.end(),
            [](const auto& a, const auto& b) { return a.start < b.start; });
}

void describe_region(const events::TraceInfo& info, events::InitialRegion& region) {
  const std::uint64_t start = region.start.value;
  const auto range = std::upper_bound(info.mapped_ranges.begin(), info.mapped_ranges.end(), start,
                                      [](std::uint64_t address, const auto& r) { return address < r.start.value; });
  if (range != info.mapped_ranges.begin() && start < std::prev(range)->end.value) {
    const auto& holder = *std::prev(range);
    const std::uint64_t skipped = start - holder.start.value;
    region.name = holder.name;
    region.file = holder.file;
    if (!holder.file.empty()) {
      region.file_offset = holder.file_offset + skipped;
      region.file_size = std::min(region.size, holder.file_size > skipped ? holder.file_size - skipped : 0);
    }
    return;
  }
  for (const auto& module : info.modules) {
    if (start >= module.start.value && start < module.end.value) {
      region.file = module.path;
      region.name = module.path;
      return;
    }
  }
}

}  // namespace tracecorn::core
