// Role: the guest's address space: our own table of mappings (VMAs) mirrored
// onto Unicorn regions, plus checked reads and writes of guest memory for the
// syscall layer and the loader.
// Who calls it: the loader and the syscall handlers, on the emulation thread only
// (not thread safe).
// Invariants: every byte Unicorn has mapped belongs to exactly one Vma here and
// has that Vma's protection; Vmas never overlap and are page aligned; an address
// range unmapped here is unmapped in Unicorn too, and so are anonymous PROT_NONE
// Vmas never made accessible (Vma::in_engine). Code that was translated for a
// range is dropped from Unicorn's cache whenever that range is unmapped or
// replaced (Unicorn 2.0.1 otherwise keeps running the stale code).
// Region count: each guest mapping is one Unicorn region; Unicorn 2.0.1 slows
// sharply past ~1,000 regions (upstream #1089/#1414), which glibc and busybox
// programs stay far below; a large-arena scheme can replace this class's
// internals without changing its interface.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <unicorn/unicorn.h>

#include "arch/arch.h"
#include "recorder/support/expected.h"

namespace tracecorn::linux_layer {

inline constexpr std::uint64_t kPageSize = 4096;
inline constexpr std::uint64_t page_down(std::uint64_t value) { return value & ~(kPageSize - 1); }
inline constexpr std::uint64_t page_up(std::uint64_t value) { return (value + kPageSize - 1) & ~(kPageSize - 1); }

// Linux PROT_* values (identical to Unicorn's UC_PROT_* bits).
inline constexpr int kProtRead = 1, kProtWrite = 2, kProtExec = 4;

struct Vma {
  std::uint64_t start = 0;
  std::uint64_t end = 0;  // exclusive
  int prot = 0;
  std::string name;       // "[stack]", "[heap]", a file path, or empty for anonymous
  // What backs it (see FileBacking); empty path for anonymous memory.
  std::string file;
  std::uint64_t file_offset = 0;  // of `start`
  std::uint64_t file_size = 0;    // bytes from `start` that came from the file
  // Whether Unicorn has it mapped: an anonymous PROT_NONE mapping is not
  // (nothing can touch it; reads and writes of it fail as EFAULT), until an
  // mprotect maps it. A thread stack's guard and reservation then cost
  // nothing: Unicorn 2.0.1 copies a whole region to split it.
  bool in_engine = true;
};

// The file behind a mapping: its path, the offset of the mapping's first byte,
// and how many bytes of the mapping come from it (the rest is zero-filled).
struct FileBacking {
  std::string path;
  std::uint64_t offset = 0;
  std::uint64_t size = 0;
};

class ProcessObserver;

class GuestMemory {
 public:
  // Reports every later write(), map(), unmap() and protect() to `observer`
  // (not owned; nullptr stops). The loader runs before one is set.
  void set_observer(ProcessObserver* observer) { observer_ = observer; }

  GuestMemory(uc_engine* engine, const arch::AddressSpaceLayout& layout);

  // Maps [start, start+length) with `prot`, replacing whatever was there (as
  // MAP_FIXED does). start and length must be page aligned. Memory is zeroed
  // (the caller writes a file's bytes in; `backing` only describes them).
  Status map(std::uint64_t start, std::uint64_t length, int prot, std::string name, FileBacking backing = {});
  // Unmaps every mapped page of the range; holes are fine (munmap semantics).
  Status unmap(std::uint64_t start, std::uint64_t length);
  // Changes protection; fails with kInvalidArgument when the range has holes (ENOMEM).
  Status protect(std::uint64_t start, std::uint64_t length, int prot);

  // The highest free range of `length` bytes below the mmap top, as Linux's
  // top-down allocator picks it; nullopt when the address space is full.
  std::optional<std::uint64_t> find_free(std::uint64_t length) const;
  // Whether every page of the range is mapped.
  bool is_mapped(std::uint64_t start, std::uint64_t length) const;
  // The mapping containing `address`, or nullptr.
  const Vma* find(std::uint64_t address) const;

  // Checked accesses: false when any byte is unmapped (the caller answers EFAULT).
  // They ignore page protections, as the kernel's uaccess does for the syscall
  // results it writes into writable buffers.
  bool read(std::uint64_t address, std::span<std::uint8_t> out) const;
  bool write(std::uint64_t address, std::span<const std::uint8_t> data);
  // Reads a NUL-terminated string of at most `max_length` bytes.
  std::optional<std::string> read_string(std::uint64_t address, std::size_t max_length = 4096) const;
  template <typename T>
  bool read_value(std::uint64_t address, T& value) const {
    return read(address, std::span(reinterpret_cast<std::uint8_t*>(&value), sizeof(T)));
  }
  template <typename T>
  bool write_value(std::uint64_t address, const T& value) {
    return write(address, std::span(reinterpret_cast<const std::uint8_t*>(&value), sizeof(T)));
  }

  const std::map<std::uint64_t, Vma>& vmas() const { return vmas_; }
  std::uint64_t mapped_bytes() const;
  // Bytes of [start, start+length) that are mapped now.
  std::uint64_t mapped_bytes_in(std::uint64_t start, std::uint64_t length) const;

  // The cap on mapped bytes (--max-memory; 0: none). map() does not enforce it:
  // the syscall handlers ask fits() first and answer ENOMEM, as Linux does under
  // RLIMIT_AS, and the loader checks the total once the images are mapped.
  void set_limit(std::uint64_t bytes) { limit_ = bytes; }
  std::uint64_t limit() const { return limit_; }
  // Whether mapping [start, start+length) (replacing what is there) while
  // `released` other bytes are unmapped keeps the total within the cap.
  bool fits(std::uint64_t start, std::uint64_t length, std::uint64_t released = 0) const;
  uc_engine* engine() const { return engine_; }

 private:
  // Splits the Vma containing `address` so that a Vma starts exactly there.
  void split_at(std::uint64_t address);
  void forget_translations(std::uint64_t start, std::uint64_t end);

  uc_engine* engine_;
  arch::AddressSpaceLayout layout_;
  std::map<std::uint64_t, Vma> vmas_;  // keyed by start
  std::uint64_t limit_ = 0;
  ProcessObserver* observer_ = nullptr;
};

}  // namespace tracecorn::linux_layer
