// Role: the stack provider tracecorn records with: an adapter that reads a
// live guest's registers and memory from a uc_engine and walks its stack with
// the unwinder (recorder/unwind, which never sees Unicorn itself).
// Who calls it: the Recorder at each syscall (as its StackProvider), and the
// CLI's `run --strace -k` printer; both on the emulation thread. Not thread safe.
// Invariants: the engine outlives this object; modules are opened from the
// host file system at the path `host_path` maps the guest's path to (the CLI
// resolves it inside --rootfs as the Linux layer does; by default the guest's
// path is the host's); a module that cannot be read is
// counted and its frames end the stack; capture() never allocates after the
// first stack (the unwinder's row cache is sized at creation) and never throws.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <unicorn/unicorn.h>

#include "arch/arch.h"
#include "recorder/core/stack_provider.h"
#include "recorder/support/expected.h"
#include "recorder/unwind/unwinder.h"

namespace tracecorn::core {

// The unwinder's view of `arch`: the DWARF numbers of its pc, stack pointer
// and frame pointer, and its signal trampolines with the columns of the
// registers their frames save (arch::SignalAbi::trampolines). Errors:
// kUnsupported when the register table lacks the pc, sp or fp.
Expected<unwind::UnwinderConfig> unwinder_config_for(const arch::ArchInfo& arch);
// The unwinder column of `reg`: its DWARF number, except where the ABI numbers
// no pc (arch::ArchInfo::unwind_pc_column): the pc takes that column and the
// register that owns it gets none (kNoDwarfNumber).
int unwind_column(const arch::ArchInfo& arch, const arch::RegisterInfo& reg);

// Maps a path as the guest names it to the host file to read ("" if none).
using HostPathMapper = std::function<std::string(std::string_view guest_path)>;

class GuestStacks final : public StackProvider {
 public:
  // Errors: the architecture has no DWARF numbers for its pc/sp/fp.
  static Expected<std::unique_ptr<GuestStacks>> create(uc_engine* engine, const arch::ArchInfo& arch,
                                                       unwind::UnwindMethod method, HostPathMapper host_path = {});

  void module_loaded(std::uint64_t start, std::uint64_t end, std::uint64_t load_bias,
                     std::string_view path) noexcept override;
  void unmapped(std::uint64_t start, std::uint64_t length) noexcept override;
  std::size_t capture(std::uint64_t trap_pc, std::span<std::uint64_t> out) noexcept override;

  // Walks the stack at the syscall trapping at `trap_pc` into `out` (frames
  // with the method that found each). Returns the depth and why it stopped.
  unwind::UnwindResult walk(std::uint64_t trap_pc, std::span<unwind::StackFrame> out) noexcept;

  // Where the guest's `path` is on the host.
  std::string host_path(std::string_view guest_path) const;
  std::uint64_t unreadable_modules() const { return unreadable_modules_; }

  // What the walks cost (for --stats and the benchmarks).
  struct Stats {
    std::uint64_t stacks = 0;
    std::uint64_t frames = 0;
    std::uint64_t nanoseconds = 0;  // inside walk(): registers, memory, unwinding
  };
  Stats stats() const { return stats_; }
  const unwind::Unwinder& unwinder() const { return unwinder_; }

 private:
  GuestStacks(uc_engine* engine, const arch::ArchInfo& arch, unwind::UnwinderConfig config,
              unwind::UnwindMethod method, HostPathMapper host_path);

  // Guest memory through uc_mem_read, a page at a time: a stack walk reads a
  // few words from the same few pages, and one uc_mem_read of a page costs
  // about what one of a word does. forget() before each walk (the guest ran).
  class EngineMemory final : public unwind::MemoryReader {
   public:
    explicit EngineMemory(uc_engine* engine) : engine_(engine) {}
    bool read(std::uint64_t address, void* out, std::size_t size) noexcept override;
    void forget() noexcept { used_ = 0; }

   private:
    static constexpr std::uint64_t kPage = 4096;
    static constexpr std::size_t kPages = 4;
    struct Page {
      std::uint64_t base;
      std::uint8_t bytes[kPage];
    };
    uc_engine* engine_;
    Page pages_[kPages];
    std::size_t used_ = 0;
    std::size_t next_victim_ = 0;
  };

  uc_engine* engine_;
  const arch::ArchInfo& arch_;
  unwind::UnwinderConfig config_;
  unwind::UnwindMethod method_;
  HostPathMapper host_path_;
  unwind::Unwinder unwinder_;
  EngineMemory memory_;
  // The registers the unwinder reads (GPRs with DWARF numbers), as batch-read arguments.
  std::vector<int> register_ids_;
  std::vector<unsigned> register_dwarf_;
  std::vector<std::uint64_t> register_values_;
  std::vector<void*> register_pointers_;
  std::vector<unwind::StackFrame> frames_;
  std::uint64_t unreadable_modules_ = 0;
  Stats stats_;
};

}  // namespace tracecorn::core
