// Role: implementation of the symbol namer (see symbol_namer.h).
#include "recorder/session/symbol_namer.h"

#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdio>

#include "recorder/elf/elf_file.h"
#include "recorder/linux/guest_fs.h"

namespace tracecorn::session {
namespace {

std::shared_ptr<linux_layer::GuestFs> GuestFs_or_null(const std::string& rootfs) {
  auto fs = linux_layer::GuestFs::create(rootfs, "/");
  if (!fs) return nullptr;
  return std::make_shared<linux_layer::GuestFs>(std::move(*fs));
}

}  // namespace

core::HostPathMapper host_path_mapper(const std::string& rootfs) {
  if (rootfs.empty()) return [](std::string_view guest_path) { return std::string(guest_path); };
  auto fs = GuestFs_or_null(rootfs);
  return [fs](std::string_view guest_path) -> std::string {
    if (!fs) return "";
    auto opened = fs->open_for_loader(std::string(guest_path));
    if (!opened.ok()) return "";
    const int fd = opened.value;
    char link[64], target[PATH_MAX + 1];
    std::snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    const ssize_t length = ::readlink(link, target, PATH_MAX);
    ::close(fd);
    return length > 0 ? std::string(target, static_cast<std::size_t>(length)) : "";
  };
}

void SymbolNamer::module_loaded(const events::ModuleLoadEvent& module) {
  const std::string host = host_path_(module.path);
  (void)symbolizer_.add_module(module.start.value, module.end.value, module.load_bias, host, std::string(module.path));
  find_trampolines(module.start.value, module.end.value, module.load_bias, host);
}

void SymbolNamer::unmapped(std::uint64_t start, std::uint64_t length) {
  symbolizer_.remove_range(start, length);
  const std::uint64_t end = length > ~std::uint64_t{0} - start ? ~std::uint64_t{0} : start + length;
  std::erase_if(trampolines_, [&](const auto& module) { return start <= module.first && module.second.first <= end; });
}

bool SymbolNamer::is_signal_trampoline(std::uint64_t address) {
  for (const auto& [start, module] : trampolines_)
    if (std::find(module.second.begin(), module.second.end(), address) != module.second.end()) return true;
  return false;
}

void SymbolNamer::find_trampolines(std::uint64_t start, std::uint64_t end, std::uint64_t load_bias,
                                   const std::string& host) {
  if (auto known = trampolines_.find(start); known != trampolines_.end() && known->second.first >= end) return;
  auto file = elf::ElfFile::load(host);
  if (!file) return;
  std::vector<std::uint64_t> found;
  const arch::ArchInfo* arch = arch::find_arch_for_elf(file->machine(), file->is_64bit(), file->little_endian());
  if (!arch) return;
  const auto bytes = file->file_bytes();
  for (const auto& segment : file->program_headers()) {
    if (segment.type != elf::kPtLoad || !(segment.flags & elf::kPfX) || segment.offset > bytes.size() ||
        segment.filesz > bytes.size() - segment.offset)
      continue;
    const auto code = bytes.subspan(segment.offset, segment.filesz);
    for (const arch::SignalTrampoline& trampoline : arch->signal_abi.trampolines) {
      for (auto at = code.begin();
           (at = std::search(at, code.end(), trampoline.code.begin(), trampoline.code.end())) != code.end(); ++at) {
        found.push_back(segment.vaddr + static_cast<std::uint64_t>(at - code.begin()) + load_bias);
      }
    }
  }
  trampolines_[start] = {end, std::move(found)};
}

void SymbolNamer::file_mapped(std::uint64_t start, std::uint64_t end, std::string_view path) {
  const std::string guest_path(path);
  const std::string host = host_path_(guest_path);
  if (host.empty()) return;
  auto file = elf::ElfFile::load(host);
  if (!file) return;
  constexpr std::uint64_t kPage = 4096;  // the loader's page (recorder/linux/guest_memory.h)
  (void)symbolizer_.add_module(start, end, start - file->load_start(kPage), host, guest_path);
  find_trampolines(start, end, start - file->load_start(kPage), host);
}

}  // namespace tracecorn::session
