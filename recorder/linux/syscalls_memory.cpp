// Role: the memory family of syscalls: brk, mmap (anonymous and file-backed),
// munmap, mprotect, mremap, madvise, msync, mincore, mlock.
// File-backed mappings are private copies read from the host file when mapped;
// writes to a MAP_SHARED mapping are not written back to the file (documented
// limit; no program in the test suite relies on it).
// --max-memory: a mapping that would take the guest's mapped total past the cap
// fails with ENOMEM (brk returns the old break), as under RLIMIT_AS; the first
// refusal is named once on stderr.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "recorder/linux/kernel.h"

namespace tracecorn::linux_layer {

using arch::SyscallId;

namespace {
constexpr std::uint64_t kLinuxMapFixedNoReplace = 0x100000;
}

void Kernel::note_memory_limit(const char* syscall) {
  note_once(std::string(syscall) + " refused with ENOMEM: the guest would map more than --max-memory " +
            std::to_string(memory_.limit()) + " bytes");
}

std::int64_t Kernel::do_brk(std::uint64_t address) {
  if (address < brk_start_) return static_cast<std::int64_t>(brk_current_);
  const std::uint64_t old_top = page_up(brk_current_);
  const std::uint64_t new_top = page_up(address);
  if (new_top > old_top) {
    // Grow only into free space, as the kernel does (it refuses to clobber mappings).
    if (auto next = memory_.vmas().lower_bound(old_top); next != memory_.vmas().end() && next->first < new_top)
      return static_cast<std::int64_t>(brk_current_);
    if (!memory_.fits(old_top, new_top - old_top)) {
      note_memory_limit("brk");
      return static_cast<std::int64_t>(brk_current_);
    }
    if (!memory_.map(old_top, new_top - old_top, kProtRead | kProtWrite, "[heap]"))
      return static_cast<std::int64_t>(brk_current_);
  } else if (new_top < old_top) {
    if (!memory_.unmap(new_top, old_top - new_top)) return static_cast<std::int64_t>(brk_current_);
  }
  brk_current_ = address;
  return static_cast<std::int64_t>(brk_current_);
}

std::int64_t Kernel::do_mmap(std::uint64_t address, std::uint64_t length, int prot, int flags, int fd,
                             std::uint64_t offset) {
  flags = static_cast<int>(arch::mmap_flags_to_host(arch_, static_cast<std::uint32_t>(flags)));
  if (length == 0) return -EINVAL;
  if (offset % kPageSize) return -EINVAL;
  const std::uint64_t size = page_up(length);
  if (size < length || size > (1ull << 46)) return -ENOMEM;
  const int type = flags & MAP_TYPE;
  if (type != MAP_PRIVATE && type != MAP_SHARED && type != MAP_SHARED_VALIDATE) return -EINVAL;
  const bool anonymous = flags & MAP_ANONYMOUS;
  const bool fixed = (flags & MAP_FIXED) || (flags & kLinuxMapFixedNoReplace);

  int host = -1;
  std::string name;
  if (!anonymous) {
    FdEntry* entry = fs_.entry(fd);
    if (!entry) return -EBADF;
    host = entry->host_fd;
    const int access = ::fcntl(host, F_GETFL) & O_ACCMODE;
    if (access == O_WRONLY) return -EACCES;
    if (type != MAP_PRIVATE && (prot & PROT_WRITE) && access != O_RDWR) return -EACCES;
    if (type != MAP_PRIVATE && (prot & PROT_WRITE) && fs_.read_only()) {
      note_once("--read-only: a shared writable file mapping refused with EACCES");
      return -EACCES;
    }
    name = entry->guest_path;
  }

  std::uint64_t start = 0;
  if (fixed) {
    if (address % kPageSize) return -EINVAL;
    if (address + size < address || address + size > arch_.layout.stack_top) return -ENOMEM;
    if ((flags & kLinuxMapFixedNoReplace) && !(flags & MAP_FIXED)) {
      if (memory_.find(address)) return -EEXIST;
      if (auto next = memory_.vmas().lower_bound(address); next != memory_.vmas().end() && next->first < address + size)
        return -EEXIST;
    }
    start = address;
  } else {
    // A hint is taken when the range there is free, as Linux does.
    const std::uint64_t hint = page_down(address);
    bool hint_free = hint >= arch_.layout.lowest_mmap && hint + size <= arch_.layout.mmap_top && !memory_.find(hint);
    if (hint_free)
      if (auto next = memory_.vmas().lower_bound(hint); next != memory_.vmas().end() && next->first < hint + size)
        hint_free = false;
    if (address && hint_free) {
      start = hint;
    } else {
      auto found = memory_.find_free(size);
      if (!found) return -ENOMEM;
      start = *found;
    }
  }

  if (!memory_.fits(start, size)) {
    note_memory_limit("mmap");
    return -ENOMEM;
  }
  FileBacking backing;
  if (!anonymous) {
    struct stat file_status {};
    const std::uint64_t file_bytes = ::fstat(host, &file_status) == 0 ? static_cast<std::uint64_t>(file_status.st_size) : 0;
    backing = {name, offset, file_bytes > offset ? std::min(length, file_bytes - offset) : 0};
  }
  if (auto status = memory_.map(start, size, prot & (kProtRead | kProtWrite | kProtExec), name, backing); !status) {
    note_once("mmap failed in the emulator: " + status.error().message);
    return -ENOMEM;
  }
  if (!anonymous) {
    // Copy the file's bytes in; the rest of the last page (and beyond EOF) stays zero.
    std::vector<std::uint8_t> buffer(std::min<std::uint64_t>(size, 1u << 20));
    for (std::uint64_t done = 0; done < length;) {
      const std::uint64_t want = std::min<std::uint64_t>(buffer.size(), length - done);
      const ssize_t got = ::pread(host, buffer.data(), want, static_cast<off_t>(offset + done));
      if (got < 0) {
        (void)memory_.unmap(start, size);  // undoing a fresh map cannot fail usefully
        return -errno;
      }
      if (got == 0) break;
      memory_.write(start + done, std::span(buffer.data(), static_cast<std::size_t>(got)));
      done += static_cast<std::uint64_t>(got);
    }
    // An ELF file mapped from its start is a module being loaded (ld.so maps the
    // whole image first, then its segments over it).
    std::uint8_t magic[4] = {};
    if (observer_ && offset == 0 && memory_.read(start, magic) && std::memcmp(magic, "\x7f" "ELF", 4) == 0)
      observer_->on_module_loaded(start, start + size, start, name);
  }
  return static_cast<std::int64_t>(start);
}

std::int64_t Kernel::do_mremap(std::uint64_t old_address, std::uint64_t old_size, std::uint64_t new_size, int flags,
                               std::uint64_t new_address) {
  if (old_address % kPageSize) return -EINVAL;
  if (flags & ~(MREMAP_MAYMOVE | MREMAP_FIXED | MREMAP_DONTUNMAP)) return -EINVAL;
  if ((flags & MREMAP_FIXED) && !(flags & MREMAP_MAYMOVE)) return -EINVAL;
  old_size = page_up(old_size);
  new_size = page_up(new_size);
  if (new_size == 0) return -EINVAL;
  if (old_size == 0) return -EINVAL;  // duplicating shared mappings is not supported
  if (!memory_.is_mapped(old_address, old_size)) return -EFAULT;
  const Vma* vma = memory_.find(old_address);
  const int prot = vma ? vma->prot : kProtRead | kProtWrite;
  const std::string name = vma ? vma->name : "";
  const FileBacking backing = vma ? FileBacking{vma->file, vma->file_offset, vma->file_size} : FileBacking{};

  if (!(flags & MREMAP_FIXED)) {
    if (new_size <= old_size) {
      if (new_size < old_size && !memory_.unmap(old_address + new_size, old_size - new_size)) return -ENOMEM;
      return static_cast<std::int64_t>(old_address);
    }
    // Grow in place when the pages after it are free.
    const std::uint64_t tail = old_address + old_size;
    bool free_after = !memory_.find(tail) && tail + (new_size - old_size) <= arch_.layout.mmap_top;
    if (free_after)
      if (auto next = memory_.vmas().lower_bound(tail); next != memory_.vmas().end() && next->first < old_address + new_size)
        free_after = false;
    if (free_after) {
      if (!memory_.fits(tail, new_size - old_size)) {
        note_memory_limit("mremap");
        return -ENOMEM;
      }
      if (!memory_.map(tail, new_size - old_size, prot, name)) return -ENOMEM;
      return static_cast<std::int64_t>(old_address);
    }
    if (!(flags & MREMAP_MAYMOVE)) return -ENOMEM;
  }
  std::uint64_t target = 0;
  if (flags & MREMAP_FIXED) {
    if (new_address % kPageSize) return -EINVAL;
    if (new_address < old_address + old_size && old_address < new_address + new_size) return -EINVAL;
    target = new_address;
  } else {
    auto found = memory_.find_free(new_size);
    if (!found) return -ENOMEM;
    target = *found;
  }
  if (!memory_.fits(target, new_size, (flags & MREMAP_DONTUNMAP) ? 0 : old_size)) {
    note_memory_limit("mremap");
    return -ENOMEM;
  }
  std::vector<std::uint8_t> contents(std::min(old_size, new_size));
  if (!memory_.read(old_address, contents)) return -EFAULT;
  if (!memory_.map(target, new_size, prot, name, backing)) return -ENOMEM;
  memory_.write(target, contents);
  if (!(flags & MREMAP_DONTUNMAP)) (void)memory_.unmap(old_address, old_size);
  return static_cast<std::int64_t>(target);
}

std::optional<std::int64_t> Kernel::memory_syscall(SyscallId id, const SyscallArgs& a) {
  switch (id) {
    case SyscallId::brk: return do_brk(a[0]);
    case SyscallId::mmap:
      return do_mmap(a[0], a[1], static_cast<int>(a[2]), static_cast<int>(a[3]), static_cast<int>(a[4]), a[5]);
    case SyscallId::munmap: {
      if (a[0] % kPageSize || a[1] == 0) return -EINVAL;
      if (!memory_.unmap(a[0], page_up(a[1]))) return -EINVAL;
      return 0;
    }
    case SyscallId::mprotect: {
      if (a[0] % kPageSize) return -EINVAL;
      if (a[1] == 0) return 0;
      const int prot = static_cast<int>(a[2]);
      if (prot & ~(kProtRead | kProtWrite | kProtExec | PROT_GROWSDOWN | PROT_GROWSUP)) return -EINVAL;
      if (!memory_.is_mapped(a[0], page_up(a[1]))) return -ENOMEM;
      if (!memory_.protect(a[0], page_up(a[1]), prot & (kProtRead | kProtWrite | kProtExec))) return -ENOMEM;
      return 0;
    }
    case SyscallId::mremap: return do_mremap(a[0], a[1], a[2], static_cast<int>(a[3]), a[4]);
    case SyscallId::madvise: {
      if (a[0] % kPageSize) return -EINVAL;
      if (static_cast<int>(a[2]) == MADV_DONTNEED && a[1]) {
        // Private anonymous pages read back as zero afterwards. Only the
        // pages that are not zero are written (a thread's 8 MiB stack freed
        // by glibc has a few): the others cost the host nothing, and a trace
        // records what changed.
        const std::uint64_t length = page_up(a[1]);
        if (!memory_.is_mapped(a[0], length)) return -ENOMEM;
        const std::vector<std::uint8_t> zeros(kPageSize, 0);
        std::vector<std::uint8_t> page_bytes(kPageSize);
        for (std::uint64_t page = a[0]; page < a[0] + length; page += kPageSize) {
          if (!memory_.read(page, page_bytes) || page_bytes == zeros) continue;
          memory_.write(page, zeros);
        }
      }
      return 0;
    }
    case SyscallId::msync: case SyscallId::mlock: case SyscallId::munlock: return 0;
    case SyscallId::mincore: {
      if (a[0] % kPageSize) return -EINVAL;
      const std::uint64_t pages = page_up(a[1]) / kPageSize;
      if (!memory_.is_mapped(a[0], pages * kPageSize)) return -ENOMEM;
      std::vector<std::uint8_t> resident(pages, 1);
      return copy_out(a[2], resident.data(), resident.size()) ? 0 : -EFAULT;
    }
    default:
      return std::nullopt;
  }
}

}  // namespace tracecorn::linux_layer
