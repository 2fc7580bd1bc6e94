// Role: naming code addresses for people: the symbol namer over the
// unwinder's Symbolizer (formats::AddressNamer), fed a trace's module loads
// and file mappings, which the text format, `tracecorn stat`, `dump`, the
// debugger's `monitor stack`, `why` and the Python package use; and the host
// file behind a guest path (inside a rootfs when one is given).
// Threads: a namer is used by one thread at a time (the sink's or the reader's).
// Invariants: guest paths are looked up inside the rootfs when one is given,
// resolved as the Linux layer resolves them (symlinks stay inside the tree);
// an unreadable module is shown as its path with an offset, never an error.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "formats/address_namer.h"
#include "recorder/core/guest_stacks.h"
#include "recorder/unwind/symbolizer.h"

namespace tracecorn::session {

// The host file behind a guest path: the path itself without a rootfs; with
// one, the file the guest would open there (through a GuestFs of its own, so
// each thread that maps paths gets its own mapper). "" when it cannot be opened.
core::HostPathMapper host_path_mapper(const std::string& rootfs);

class SymbolNamer final : public formats::AddressNamer {
 public:
  explicit SymbolNamer(const std::string& rootfs) : host_path_(host_path_mapper(rootfs)) {}
  void module_loaded(const events::ModuleLoadEvent& module) override;
  void unmapped(std::uint64_t start, std::uint64_t length) override;
  // Reads the file's program headers for its load bias (start minus the page
  // of its lowest PT_LOAD); a file that is not a readable ELF is left unnamed.
  void file_mapped(std::uint64_t start, std::uint64_t end, std::string_view path) override;
  std::string name(std::uint64_t address) override { return symbolizer_.describe(address); }
  // Whether `address` starts a signal trampoline (arch::SignalAbi::trampolines
  // of the file's architecture) in the executable segments of a module named
  // so far: glibc's restorers. tracecorn's own trampoline page is no file and
  // is not in a trace, so it is not recognised here.
  bool is_signal_trampoline(std::uint64_t address) override;

 private:
  // Records the trampolines of the file at `host` mapped with `load_bias` at `start`.
  void find_trampolines(std::uint64_t start, std::uint64_t end, std::uint64_t load_bias, const std::string& host);

  core::HostPathMapper host_path_;
  unwind::Symbolizer symbolizer_;
  // Per module start: its end and its trampolines' addresses. Kept as the
  // symbolizer keeps modules: a partial unmap (ld.so mapping a segment over
  // its reservation) keeps the module, a re-add at the same start keeps the larger end.
  std::map<std::uint64_t, std::pair<std::uint64_t, std::vector<std::uint64_t>>> trampolines_;
};

}  // namespace tracecorn::session
