// Role: load an ELF program (and the interpreter it names) into guest memory and
// build the initial stack exactly as Linux's binfmt_elf does: argc, argv, envp,
// auxv, with strings, AT_RANDOM bytes and the platform string above them.
// Who calls it: LinuxProcess::create, on the emulation thread, before the first run.
// Invariants: the main program of an ET_DYN file loads at the layout's
// et_dyn_base, an interpreter top-down in the mmap area (no ASLR: runs are
// reproducible); segments never overlap existing mappings; every error names the
// file and the offset or the reason.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "arch/arch.h"
#include "recorder/elf/elf_file.h"
#include "recorder/linux/guest_fs.h"
#include "recorder/linux/guest_memory.h"
#include "recorder/support/expected.h"

namespace tracecorn::linux_layer {

struct LoadedImage {
  std::string path;
  std::uint64_t load_bias = 0;     // added to every vaddr of the file
  std::uint64_t start = 0;         // first mapped byte
  std::uint64_t end = 0;           // one past the last mapped byte
  std::uint64_t entry = 0;         // biased entry point
  std::uint64_t phdr_address = 0;  // where the program headers are in guest memory
  std::uint16_t phdr_count = 0;
  std::uint16_t phdr_entry_size = 0;
};

struct StartInfo {
  std::uint64_t pc = 0;            // first instruction (interpreter's entry if any)
  std::uint64_t stack_pointer = 0;
  std::uint64_t brk_start = 0;     // initial program break
  LoadedImage program;
  std::optional<LoadedImage> interpreter;
};

// Values the initial stack carries that come from outside the loader.
struct StackInputs {
  std::vector<std::string> argv;
  std::vector<std::string> envp;
  std::string execfn;                       // AT_EXECFN: the path as given
  std::array<std::uint8_t, 16> random{};    // AT_RANDOM bytes
  std::uint64_t hwcap = 0;
  std::uint64_t uid = 0, euid = 0, gid = 0, egid = 0;
};

// Loads `program` (already parsed; its architecture already checked) and, when it
// has PT_INTERP, the interpreter (opened through `fs`, so --rootfs applies).
Expected<StartInfo> load_program(GuestMemory& memory, GuestFs& fs, const arch::ArchInfo& arch,
                                 const elf::ElfFile& program, const StackInputs& inputs);

// Maps one ELF file's PT_LOAD segments at `bias`. Exposed for tests.
Expected<LoadedImage> map_image(GuestMemory& memory, const elf::ElfFile& file, std::uint64_t bias);

}  // namespace tracecorn::linux_layer
