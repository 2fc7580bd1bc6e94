// Role: InstructionDecoder (arch/instruction_decoder.h) over Capstone: one handle
// per instruction-set mode and one preallocated cs_insn, so that decoding
// allocates nothing per instruction. The engine's hooks (arch/arch_engine.h)
// turn Capstone's detail into register indices.
#include "arch/instruction_decoder.h"

#include "arch/arch_engine.h"

namespace tracecorn::arch {

struct InstructionDecoder::Impl {
  const ArchInfo& arch;
  std::array<csh, 2> handles{};  // per mode (arch::open_capstone_handles); all 0 without Capstone
  cs_insn* insn = nullptr;       // both modes' handles are of one Capstone arch

  explicit Impl(const ArchInfo& info) : arch(info) {}
  ~Impl() {
    if (insn) cs_free(insn, 1);
    close_capstone_handles(handles);
  }
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;

  csh handle_for(std::uint8_t mode) const { return handles[mode == 1 && handles[1] ? 1 : 0]; }

  // Decodes one instruction into `insn`; false when the bytes are not one.
  bool decode(std::span<const std::uint8_t> code, std::uint64_t address, std::uint8_t mode) {
    const csh handle = handle_for(mode);
    if (!handle || !insn) return false;
    const std::uint8_t* cursor = code.data();
    std::size_t size = code.size();
    return cs_disasm_iter(handle, &cursor, &size, &address, insn);
  }
};

Expected<std::unique_ptr<InstructionDecoder>> InstructionDecoder::open(const ArchInfo& arch, bool register_detail) {
  auto impl = std::make_unique<Impl>(arch);
  if (arch.decode_without_capstone)  // its own decoder (sizes and registers): no Capstone handle
    return std::unique_ptr<InstructionDecoder>(new InstructionDecoder(std::move(impl)));
  if (!open_capstone_handles(arch, register_detail, impl->handles))
    return make_error(ErrorCode::kUnsupported, "Capstone cannot decode " + std::string(arch.name));
  impl->insn = cs_malloc(impl->handles[0]);
  return std::unique_ptr<InstructionDecoder>(new InstructionDecoder(std::move(impl)));
}

InstructionDecoder::InstructionDecoder(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
InstructionDecoder::~InstructionDecoder() = default;

std::optional<InstructionDecoder::Text> InstructionDecoder::disassemble(std::span<const std::uint8_t> code,
                                                                        std::uint64_t address, std::uint8_t mode) {
  if (!impl_->decode(code, address, mode)) return std::nullopt;
  return Text{impl_->insn->mnemonic, impl_->insn->op_str};
}

std::size_t InstructionDecoder::instruction_size(std::span<const std::uint8_t> code, std::uint64_t address,
                                                 std::uint8_t mode) {
  if (impl_->arch.decode_without_capstone) {
    EncodedInstruction decoded;
    return impl_->arch.decode_without_capstone(code, decoded) ? decoded.size : 0;
  }
  return impl_->decode(code, address, mode) ? impl_->insn->size : 0;
}

std::uint32_t InstructionDecoder::count_instructions(std::span<const std::uint8_t> code, std::uint64_t address,
                                                     std::uint8_t mode, std::size_t& undecoded) {
  return arch::count_instructions(impl_->arch, impl_->handle_for(mode), code, address, undecoded);
}

bool InstructionDecoder::registers(std::span<const std::uint8_t> code, std::uint64_t address, std::uint8_t mode,
                                   Registers& out) {
  if (impl_->arch.decode_without_capstone) {
    EncodedInstruction decoded;
    if (!impl_->arch.decode_without_capstone(code, decoded)) return false;
    out.read.insert(out.read.end(), decoded.read.begin(), decoded.read.begin() + decoded.read_count);
    out.written.insert(out.written.end(), decoded.written.begin(), decoded.written.begin() + decoded.written_count);
    if (decoded.base_register >= 0) out.base.push_back(static_cast<std::uint16_t>(decoded.base_register));
    out.reads_listed = true;
    return true;
  }
  if (!impl_->decode(code, address, mode)) return false;
  out.reads_listed = instruction_registers(impl_->arch, impl_->handle_for(mode), *impl_->insn, &out.read, out.written);
  impl_->arch.engine->address_registers(*impl_->insn, out.base, out.index);
  return true;
}

}  // namespace tracecorn::arch
