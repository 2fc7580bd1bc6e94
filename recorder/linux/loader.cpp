// Role: implementation of the ELF loader and initial stack (see loader.h).
#include "recorder/linux/loader.h"

#include <unistd.h>

#include <algorithm>
#include <cstring>

namespace tracecorn::linux_layer {
namespace {

// Auxiliary vector tags (include/uapi/linux/auxvec.h).
enum AuxTag : std::uint64_t {
  kAtNull = 0, kAtPhdr = 3, kAtPhent = 4, kAtPhnum = 5, kAtPagesz = 6, kAtBase = 7, kAtFlags = 8,
  kAtEntry = 9, kAtUid = 11, kAtEuid = 12, kAtGid = 13, kAtEgid = 14, kAtPlatform = 15,
  kAtHwcap = 16, kAtClktck = 17, kAtSecure = 23, kAtRandom = 25, kAtHwcap2 = 26, kAtExecfn = 31,
};

constexpr std::uint64_t kClockTicks = 100;  // USER_HZ

int segment_prot(std::uint32_t flags) {
  return ((flags & elf::kPfR) ? kProtRead : 0) | ((flags & elf::kPfW) ? kProtWrite : 0) |
         ((flags & elf::kPfX) ? kProtExec : 0);
}

// Writes the stack from the top down; every push is bounds-checked against the stack mapping.
class StackBuilder {
 public:
  StackBuilder(GuestMemory& memory, std::uint64_t top, std::uint64_t bottom, bool is64, bool little_endian)
      : memory_(memory), sp_(top), bottom_(bottom), word_(is64 ? 8 : 4), little_endian_(little_endian) {}

  Expected<std::uint64_t> push_bytes(const void* data, std::size_t size) {
    if (sp_ - bottom_ < size) return make_error(ErrorCode::kLimit, "arguments and environment do not fit on the stack");
    sp_ -= size;
    if (!memory_.write(sp_, std::span(static_cast<const std::uint8_t*>(data), size)))
      return make_error(ErrorCode::kEmulator, "cannot write the initial stack");
    return sp_;
  }
  Expected<std::uint64_t> push_string(const std::string& text) { return push_bytes(text.c_str(), text.size() + 1); }
  void align_down(std::uint64_t alignment) { sp_ &= ~(alignment - 1); }

  // Encodes words in the guest's size and byte order.
  std::vector<std::uint8_t> encode(const std::vector<std::uint64_t>& words) const {
    std::vector<std::uint8_t> bytes(words.size() * word_);
    for (std::size_t i = 0; i < words.size(); ++i)
      for (unsigned b = 0; b < word_; ++b) {
        const unsigned shift = little_endian_ ? 8 * b : 8 * (word_ - 1 - b);
        bytes[i * word_ + b] = static_cast<std::uint8_t>(words[i] >> shift);
      }
    return bytes;
  }
  std::uint64_t sp() const { return sp_; }
  unsigned word() const { return word_; }

 private:
  GuestMemory& memory_;
  std::uint64_t sp_;
  std::uint64_t bottom_;
  unsigned word_;
  bool little_endian_;
};

Expected<elf::ElfFile> read_interpreter(GuestFs& fs, const std::string& path, std::vector<std::uint8_t>& storage) {
  auto opened = fs.open_for_loader(path);
  if (!opened.ok())
    return make_error(opened.error == ENOENT ? ErrorCode::kNotFound : ErrorCode::kIo,
                      std::string("cannot open the interpreter: ") + std::strerror(opened.error), path);
  HostFd fd(opened.value);
  storage.clear();
  std::uint8_t buffer[65536];
  for (;;) {
    const ssize_t count = ::read(fd.get(), buffer, sizeof buffer);
    if (count < 0) return make_error(ErrorCode::kIo, std::string("read: ") + std::strerror(errno), path);
    if (count == 0) break;
    storage.insert(storage.end(), buffer, buffer + count);
    if (storage.size() > (1u << 30)) return make_error(ErrorCode::kLimit, "interpreter larger than 1 GiB", path);
  }
  return elf::ElfFile::parse(storage, path);
}

}  // namespace

Expected<LoadedImage> map_image(GuestMemory& memory, const elf::ElfFile& file, std::uint64_t bias) {
  LoadedImage image;
  image.path = file.source();
  image.load_bias = bias;
  image.start = file.load_start(kPageSize) + bias;
  image.end = file.load_end(kPageSize) + bias;
  image.entry = file.entry() + bias;
  image.phdr_count = static_cast<std::uint16_t>(file.program_headers().size());
  image.phdr_entry_size = file.phdr_entry_size();

  if (image.end <= image.start) return make_error(ErrorCode::kBadFormat, "empty load image", file.source());
  if (image.end > image.start + (1ull << 36))
    return make_error(ErrorCode::kBadFormat, "load image spans more than 64 GiB", file.source());
  if (const Vma* below = memory.find(image.start))
    return make_error(ErrorCode::kBadFormat, "image overlaps an existing mapping (" + below->name + ")", file.source());
  if (auto above = memory.vmas().lower_bound(image.start); above != memory.vmas().end() && above->first < image.end)
    return make_error(ErrorCode::kBadFormat, "image overlaps an existing mapping (" + above->second.name + ")",
                      file.source());

  const auto bytes = file.file_bytes();
  std::uint64_t mapped_until = image.start;  // segments come in ascending order (checked below)
  for (std::size_t index = 0; index < file.program_headers().size(); ++index) {
    const auto& ph = file.program_headers()[index];
    if (ph.type != elf::kPtLoad || ph.memsz == 0) continue;
    const std::uint64_t seg_start = page_down(ph.vaddr + bias);
    const std::uint64_t seg_end = page_up(ph.vaddr + bias + ph.memsz);
    const int prot = segment_prot(ph.flags);
    // A page shared with the previous segment keeps its mapping and gains this
    // segment's permissions, as the kernel's overlapping mmaps would give.
    std::uint64_t map_from = seg_start;
    if (seg_start < mapped_until) {
      if (seg_end <= mapped_until || mapped_until - seg_start > kPageSize)
        return make_error(ErrorCode::kBadFormat, "PT_LOAD segments overlap or are not in ascending order",
                          file.source(), file.phdr_offset() + index * file.phdr_entry_size());
      const Vma* shared = memory.find(seg_start);
      if (auto status = memory.protect(seg_start, kPageSize, (shared ? shared->prot : 0) | prot); !status)
        return status.error();
      map_from = mapped_until;
    }
    // The file's bytes start at the page holding p_offset; the segment's tail
    // past p_filesz is zero-filled (bss).
    const std::uint64_t file_end = ph.vaddr + bias + ph.filesz;
    const FileBacking backing{file.source(), page_down(ph.offset) + (map_from - seg_start),
                              file_end > map_from ? file_end - map_from : 0};
    if (map_from < seg_end)
      if (auto status = memory.map(map_from, seg_end - map_from, prot, file.source(), backing); !status)
        return make_error(ErrorCode::kEmulator, status.error().message, file.source());
    mapped_until = seg_end;
    if (ph.filesz > 0 && !memory.write(ph.vaddr + bias, bytes.subspan(ph.offset, ph.filesz)))
      return make_error(ErrorCode::kEmulator, "cannot write segment contents", file.source(), ph.offset);
    // The program headers' guest address: PT_PHDR if present, else the segment holding them.
    if (!image.phdr_address && file.phdr_offset() >= ph.offset && file.phdr_offset() < ph.offset + ph.filesz)
      image.phdr_address = ph.vaddr + bias + (file.phdr_offset() - ph.offset);
  }
  for (const auto& ph : file.program_headers())
    if (ph.type == elf::kPtPhdr) image.phdr_address = ph.vaddr + bias;
  return image;
}

Expected<StartInfo> load_program(GuestMemory& memory, GuestFs& fs, const arch::ArchInfo& arch,
                                 const elf::ElfFile& program, const StackInputs& inputs) {
  const auto& layout = arch.layout;
  StartInfo start;

  // Main program: ET_EXEC at its own addresses; ET_DYN with an interpreter at the
  // fixed PIE base (ELF_ET_DYN_BASE); ET_DYN without one (static-pie, or ld.so run
  // directly) top-down in the mmap area, as binfmt_elf places it (load_bias 0, then
  // mmap chooses).
  std::uint64_t bias = 0;
  if (program.type() == elf::kEtDyn) {
    if (program.interpreter()) {
      bias = layout.et_dyn_base - program.load_start(kPageSize);
    } else {
      auto base = memory.find_free(program.load_end(kPageSize) - program.load_start(kPageSize));
      if (!base) return make_error(ErrorCode::kLimit, "no room for the program", program.source());
      bias = *base - program.load_start(kPageSize);
    }
  }
  auto image = map_image(memory, program, bias);
  if (!image) return image.error();
  start.program = *image;
  start.brk_start = image->end;
  start.pc = image->entry;

  if (program.interpreter()) {
    std::vector<std::uint8_t> storage;
    auto interp = read_interpreter(fs, *program.interpreter(), storage);
    if (!interp) return interp.error();
    if (interp->machine() != program.machine() || interp->is_64bit() != program.is_64bit() ||
        interp->little_endian() != program.little_endian())
      return make_error(ErrorCode::kBadFormat, "interpreter is for another architecture", interp->source());
    if (interp->interpreter())
      return make_error(ErrorCode::kBadFormat, "interpreter itself names an interpreter", interp->source());
    const std::uint64_t span = interp->load_end(kPageSize) - interp->load_start(kPageSize);
    auto base = memory.find_free(span);
    if (!base) return make_error(ErrorCode::kLimit, "no room for the interpreter", interp->source());
    auto interp_image = map_image(memory, *interp, *base - interp->load_start(kPageSize));
    if (!interp_image) return interp_image.error();
    start.pc = interp_image->entry;
    start.interpreter = *interp_image;
  }

  // The page the kernel maps at a fixed address (arm's kuser helpers).
  if (const arch::FixedPage* page = arch.fixed_page) {
    if (auto status = memory.map(page->address, kPageSize, kProtRead | kProtExec, std::string(page->name)); !status)
      return status.error();
    if (!memory.write(page->address + page->offset, page->bytes))
      return make_error(ErrorCode::kEmulator, "cannot write the " + std::string(page->name) + " page");
  }

  // Stack.
  const std::uint64_t stack_bottom = layout.stack_top - layout.stack_size;
  if (auto status = memory.map(stack_bottom, layout.stack_size, kProtRead | kProtWrite, "[stack]"); !status)
    return status.error();
  StackBuilder stack(memory, layout.stack_top, stack_bottom, arch.elf_64bit, arch.little_endian);

  // Strings, as binfmt_elf lays them out (ascending: argv, envp, execfn, a null word).
  const std::uint64_t end_marker = 0;
  if (auto pushed = stack.push_bytes(&end_marker, stack.word()); !pushed) return pushed.error();
  auto execfn = stack.push_string(inputs.execfn);
  if (!execfn) return execfn.error();
  std::vector<std::uint64_t> env_addresses(inputs.envp.size()), arg_addresses(inputs.argv.size());
  for (std::size_t i = inputs.envp.size(); i-- > 0;) {
    auto at = stack.push_string(inputs.envp[i]);
    if (!at) return at.error();
    env_addresses[i] = *at;
  }
  for (std::size_t i = inputs.argv.size(); i-- > 0;) {
    auto at = stack.push_string(inputs.argv[i]);
    if (!at) return at.error();
    arg_addresses[i] = *at;
  }
  // The platform string only where the kernel defines ELF_PLATFORM.
  std::uint64_t platform_address = 0;
  if (!arch.platform.empty()) {
    auto platform = stack.push_string(std::string(arch.platform));
    if (!platform) return platform.error();
    platform_address = *platform;
  }
  stack.align_down(16);
  auto random = stack.push_bytes(inputs.random.data(), inputs.random.size());
  if (!random) return random.error();

  std::vector<std::uint64_t> auxv = {
      kAtHwcap, inputs.hwcap,
      kAtPagesz, kPageSize,
      kAtClktck, kClockTicks,
      kAtPhdr, start.program.phdr_address,
      kAtPhent, start.program.phdr_entry_size,
      kAtPhnum, start.program.phdr_count,
      kAtBase, start.interpreter ? start.interpreter->start : 0,  // the interpreter's load address
      kAtFlags, 0,
      kAtEntry, start.program.entry,
      kAtUid, inputs.uid,
      kAtEuid, inputs.euid,
      kAtGid, inputs.gid,
      kAtEgid, inputs.egid,
      kAtSecure, 0,
      kAtRandom, *random,
      kAtHwcap2, 0,
      kAtExecfn, *execfn,
  };
  if (platform_address) auxv.insert(auxv.end(), {kAtPlatform, platform_address});
  auxv.insert(auxv.end(), {kAtNull, 0});
  std::vector<std::uint64_t> table;
  table.push_back(inputs.argv.size());
  table.insert(table.end(), arg_addresses.begin(), arg_addresses.end());
  table.push_back(0);
  table.insert(table.end(), env_addresses.begin(), env_addresses.end());
  table.push_back(0);
  table.insert(table.end(), auxv.begin(), auxv.end());
  const auto encoded = stack.encode(table);
  // The final stack pointer (at argc) must be 16-byte aligned.
  stack.align_down(16);
  const std::uint64_t misalign = (stack.sp() - encoded.size()) % 16;
  if (misalign) {
    std::vector<std::uint8_t> pad(misalign, 0);
    if (auto pushed = stack.push_bytes(pad.data(), pad.size()); !pushed) return pushed.error();
  }
  auto sp = stack.push_bytes(encoded.data(), encoded.size());
  if (!sp) return sp.error();
  start.stack_pointer = *sp;
  return start;
}

}  // namespace tracecorn::linux_layer
