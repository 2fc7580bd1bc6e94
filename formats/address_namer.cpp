// Role: feeding an AddressNamer a trace's mappings (see address_namer.h).
#include "formats/address_namer.h"

namespace tracecorn::formats {

using events::EventKind;

void name_initial_mappings(AddressNamer& namer, const events::TraceInfo& info) {
  // Files mapped from their start in the initial state (a program, its
  // interpreter), each over the run of adjacent regions backed by it.
  const auto& regions = info.initial_memory;
  for (std::size_t i = 0; i < regions.size(); ++i) {
    if (regions[i].file.empty() || regions[i].file_offset != 0) continue;
    std::uint64_t end = regions[i].start.value + regions[i].size;
    for (std::size_t j = i + 1; j < regions.size() && regions[j].file == regions[i].file && regions[j].start.value == end;
         ++j)
      end = regions[j].start.value + regions[j].size;
    namer.file_mapped(regions[i].start.value, end, regions[i].file);
  }
}

void name_event_mappings(AddressNamer& namer, const events::Event& event) {
  if (event.kind == EventKind::kModuleLoad) namer.module_loaded(std::get<events::ModuleLoadEvent>(event.payload));
  if (event.kind != EventKind::kSyscall) return;
  for (const auto& change : std::get<events::SyscallEvent>(event.payload).mapping_changes) {
    if (change.kind == events::MappingChangeKind::kUnmap) namer.unmapped(change.start.value, change.length);
    if (change.kind == events::MappingChangeKind::kMap && !change.file.empty() && change.file_offset == 0)
      namer.file_mapped(change.start.value, change.start.value + change.length, change.file);
  }
}

}  // namespace tracecorn::formats
