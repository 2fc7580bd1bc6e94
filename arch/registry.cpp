// Role: the list of supported architectures and lookups over it.
// Adding an architecture: add its accessor to kArchs. Nothing else changes.
#include "arch/arch.h"

#include <algorithm>

namespace tracecorn::arch {

const RegisterInfo* ArchInfo::find_register(std::string_view register_name) const {
  for (const auto& reg : registers)
    if (reg.name == register_name) return &reg;
  return nullptr;
}

std::optional<std::size_t> ArchInfo::register_index(int uc_id) const {
  for (std::size_t i = 0; i < registers.size(); ++i)
    if (registers[i].uc_id == uc_id) return i;
  return std::nullopt;
}

bool instruction_registers(const ArchInfo& arch, csh handle, const cs_insn& insn, std::vector<std::uint16_t>* read,
                           std::vector<std::uint16_t>& written) {
  auto add = [&](std::vector<std::uint16_t>& list, unsigned capstone_register) {
    const int index = arch.engine->register_index_for_capstone(capstone_register);
    if (index < 0) return;
    const auto value = static_cast<std::uint16_t>(index);
    if (std::find(list.begin(), list.end(), value) == list.end()) list.push_back(value);
  };
  cs_regs read_list{}, written_list{};
  std::uint8_t read_count = 0, written_count = 0;
  const bool listed = cs_regs_access(handle, &insn, read_list, &read_count, written_list, &written_count) == CS_ERR_OK;
  if (listed) {
    if (read)
      for (std::uint8_t i = 0; i < read_count; ++i) add(*read, read_list[i]);
    for (std::uint8_t i = 0; i < written_count; ++i) add(written, written_list[i]);
  }
  arch.engine->add_unlisted_writes(insn, written);
  if (!listed && read && arch.engine->add_unlisted_reads) return arch.engine->add_unlisted_reads(insn, *read);
  return listed;
}

cs_mode capstone_mode_for(const ArchInfo& arch, std::uint8_t mode) {
  return mode == 1 && arch.alternate_isa ? arch.engine->alternate_capstone_mode : arch.engine->capstone_mode;
}

std::uint32_t count_instructions(const ArchInfo& arch, csh handle, std::span<const std::uint8_t> code,
                                 std::uint64_t address, std::size_t& undecoded) {
  if (arch.decode_without_capstone) {  // riscv64: the architecture's own decoder, no Capstone handle
    EncodedInstruction decoded;
    std::size_t offset = 0;
    std::uint32_t count = 0;
    while (offset < code.size() && arch.decode_without_capstone(code.subspan(offset), decoded) && decoded.size) {
      offset += decoded.size;
      ++count;
    }
    undecoded = code.size() - offset;
    return count;
  }
  cs_insn* insn = cs_malloc(handle);
  const std::uint8_t* cursor = code.data();
  std::size_t remaining = code.size();
  std::uint32_t count = 0;
  const std::size_t width = arch.fixed_instruction_size;
  while (remaining > 0) {
    if (insn && cs_disasm_iter(handle, &cursor, &remaining, &address, insn)) {
      ++count;
    } else if (width && remaining >= width) {  // an opaque instruction, as the recorder counts it
      ++count;
      cursor += width;
      remaining -= width;
      address += width;
    } else {
      break;
    }
  }
  if (insn) cs_free(insn, 1);
  undecoded = remaining;
  return count;
}

bool open_capstone_handles(const ArchInfo& arch, bool detail, std::array<csh, 2>& handles) {
  handles = {0, 0};
  const std::size_t modes = arch.alternate_isa ? 2 : 1;
  for (std::size_t mode = 0; mode < modes; ++mode) {
    if (cs_open(arch.engine->capstone_arch, capstone_mode_for(arch, static_cast<std::uint8_t>(mode)), &handles[mode]) !=
        CS_ERR_OK) {
      handles[mode] = 0;
      close_capstone_handles(handles);
      return false;
    }
    if (detail && cs_option(handles[mode], CS_OPT_DETAIL, CS_OPT_ON) != CS_ERR_OK) {
      close_capstone_handles(handles);
      return false;
    }
  }
  return true;
}

void close_capstone_handles(std::array<csh, 2>& handles) {
  for (csh& handle : handles)
    if (handle) cs_close(&handle);
  handles = {0, 0};
}

std::uint64_t translate_flags(std::span<const FlagValue> table, std::uint64_t flags, bool to_host) {
  std::uint64_t out = flags;
  for (const auto& entry : table) out &= ~std::uint64_t{to_host ? entry.guest : entry.host};
  for (const auto& entry : table)
    if (flags & (to_host ? entry.guest : entry.host)) out |= to_host ? entry.host : entry.guest;
  return out;
}

std::uint64_t open_flags_to_host(const ArchInfo& arch, std::uint64_t guest_flags) {
  return translate_flags(arch.open_flags, guest_flags, true);
}

std::uint64_t open_flags_to_guest(const ArchInfo& arch, std::uint64_t host_flags) {
  return translate_flags(arch.open_flags, host_flags, false);
}

std::uint64_t mmap_flags_to_host(const ArchInfo& arch, std::uint64_t guest_flags) {
  return translate_flags(arch.mmap_flags, guest_flags, true);
}

namespace {
// One number through a {guest, host} table (see SignalAbi::numbers): listed
// in the source column -> its pair; listed only in the target column -> 0
// (the target side gives that number another meaning); else unchanged.
std::uint64_t translate_number(std::span<const FlagValue> table, std::uint64_t number, bool to_host) {
  for (const auto& entry : table)
    if ((to_host ? entry.guest : entry.host) == number) return to_host ? entry.host : entry.guest;
  for (const auto& entry : table)
    if ((to_host ? entry.host : entry.guest) == number) return 0;
  return number;
}

std::uint64_t translate_signal_set(const ArchInfo& arch, std::uint64_t set, bool to_host) {
  std::uint64_t out = 0;
  for (int signal = 1; signal <= 64; ++signal) {
    if (!(set & (1ull << (signal - 1)))) continue;
    const auto other = translate_number(arch.signal_abi.numbers, static_cast<std::uint64_t>(signal), to_host);
    if (other >= 1 && other <= 64) out |= 1ull << (other - 1);
  }
  return out;
}

std::optional<std::uint64_t> translate_request(std::span<const FlagValue> table, std::uint64_t request, bool to_host) {
  if (table.empty()) return request;
  for (const auto& entry : table)
    if ((to_host ? entry.guest : entry.host) == request) return to_host ? entry.host : entry.guest;
  return std::nullopt;
}
}  // namespace

int signal_to_host(const ArchInfo& arch, int guest_signal) {
  return guest_signal <= 0 ? 0
                           : static_cast<int>(translate_number(arch.signal_abi.numbers,
                                                               static_cast<std::uint64_t>(guest_signal), true));
}

int signal_to_guest(const ArchInfo& arch, int host_signal) {
  return host_signal <= 0 ? 0
                          : static_cast<int>(translate_number(arch.signal_abi.numbers,
                                                              static_cast<std::uint64_t>(host_signal), false));
}

std::uint64_t signal_set_to_host(const ArchInfo& arch, std::uint64_t guest_set) {
  return translate_signal_set(arch, guest_set, true);
}

std::uint64_t signal_set_to_guest(const ArchInfo& arch, std::uint64_t host_set) {
  return translate_signal_set(arch, host_set, false);
}

int rlimit_resource_to_host(const ArchInfo& arch, int guest_resource) {
  if (guest_resource < 0) return guest_resource;  // invalid either way: the caller refuses it
  return static_cast<int>(translate_number(arch.rlimit_resources, static_cast<std::uint64_t>(guest_resource), true));
}

std::optional<std::uint64_t> ioctl_request_to_host(const ArchInfo& arch, std::uint64_t guest_request) {
  return translate_request(arch.ioctl_requests, guest_request, true);
}

std::optional<std::uint64_t> ioctl_request_to_guest(const ArchInfo& arch, std::uint64_t host_request) {
  return translate_request(arch.ioctl_requests, host_request, false);
}

std::span<const ArchInfo* const> all_archs() {
  static const ArchInfo* const kArchs[] = {&x86_64_arch(), &aarch64_arch(), &riscv64_arch(), &arm_arch(), &i386_arch(),
                                              &mips_arch(),   &mipsel_arch()};
  return kArchs;
}

const ArchInfo* find_arch(std::string_view name) {
  for (const ArchInfo* info : all_archs())
    if (info->name == name) return info;
  return nullptr;
}

std::string arch_names() {
  std::string names;
  for (const ArchInfo* info : all_archs()) names += (names.empty() ? "" : ", ") + std::string(info->name);
  return names;
}

std::string engine_mismatch(uc_engine* engine, const ArchInfo& arch) {
  int engine_arch = 0, engine_mode = 0;
  if (uc_ctl_get_arch(engine, &engine_arch) != UC_ERR_OK || uc_ctl_get_mode(engine, &engine_mode) != UC_ERR_OK)
    return "cannot query the engine's architecture";
  if (engine_arch != static_cast<int>(arch.engine->unicorn_arch) ||
      engine_mode != static_cast<int>(arch.engine->unicorn_mode))
    return "the engine is not a " + std::string(arch.name) + " engine (Unicorn arch " + std::to_string(engine_arch) +
           ", mode " + std::to_string(engine_mode) + ")";
  return "";
}

const ArchInfo* find_arch_for_elf(std::uint16_t elf_machine, bool is_64bit, bool little_endian) {
  for (const ArchInfo* info : all_archs())
    if (info->elf_machine == elf_machine && info->elf_64bit == is_64bit &&
        info->little_endian == little_endian)
      return info;
  return nullptr;
}

}  // namespace tracecorn::arch
