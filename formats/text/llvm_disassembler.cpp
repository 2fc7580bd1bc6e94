// Role: implementation of LlvmDisassembler (see llvm_disassembler.h).
#include "formats/text/llvm_disassembler.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <cctype>
#include <vector>

namespace tracecorn::formats {

namespace {
// The C API's signatures (llvm-c/Disassembler.h, llvm-c/Target.h of LLVM 14);
// the contexts are opaque pointers.
using InitializeTarget = void (*)();
using CreateDisasmCpuFeatures = void* (*)(const char* triple, const char* cpu, const char* features, void* info,
                                          int tag_type, void* get_op_info, void* symbol_lookup);
}  // namespace

Expected<std::unique_ptr<LlvmDisassembler>> LlvmDisassembler::open(const arch::LlvmTarget& target) {
  std::unique_ptr<LlvmDisassembler> disassembler(new LlvmDisassembler());
  disassembler->library_ = ::dlopen(kLibrary, RTLD_LAZY | RTLD_LOCAL);
  if (!disassembler->library_)
    return make_error(ErrorCode::kUnsupported,
                      fmt::format("cannot open {} (apt-get install libllvm14): {}", kLibrary, ::dlerror()));
  auto symbol = [&](const std::string& name) { return ::dlsym(disassembler->library_, name.c_str()); };
  const std::string prefix = "LLVMInitialize" + std::string(target.target);
  const std::vector<std::string> initializers = {prefix + "TargetInfo", prefix + "TargetMC", prefix + "Disassembler"};
  for (const std::string& name : initializers) {
    void* function = symbol(name);
    if (!function) return make_error(ErrorCode::kUnsupported, fmt::format("{} has no {}", kLibrary, name));
    reinterpret_cast<InitializeTarget>(function)();
  }
  auto* create = reinterpret_cast<CreateDisasmCpuFeatures>(symbol("LLVMCreateDisasmCPUFeatures"));
  disassembler->disassemble_ = reinterpret_cast<Disassemble>(symbol("LLVMDisasmInstruction"));
  disassembler->dispose_ = reinterpret_cast<Dispose>(symbol("LLVMDisasmDispose"));
  if (!create || !disassembler->disassemble_ || !disassembler->dispose_)
    return make_error(ErrorCode::kUnsupported, fmt::format("{} lacks the disassembler C API", kLibrary));
  const std::string triple(target.triple), features(target.features);
  disassembler->context_ = create(triple.c_str(), "", features.c_str(), nullptr, 0, nullptr, nullptr);
  if (!disassembler->context_)
    return make_error(ErrorCode::kUnsupported, fmt::format("{} has no disassembler for {}", kLibrary, triple));
  return disassembler;
}

LlvmDisassembler::~LlvmDisassembler() {
  if (context_) dispose_(context_);
  if (library_) ::dlclose(library_);
}

std::string LlvmDisassembler::disassemble(std::span<const std::uint8_t> bytes, std::uint64_t address,
                                          std::size_t& size) const {
  // LLVMDisasmInstruction takes a non-const pointer but only reads `bytes.size()` bytes.
  std::vector<std::uint8_t> copy(bytes.begin(), bytes.end());
  char text[256] = {};
  size = copy.empty() ? 0 : disassemble_(context_, copy.data(), copy.size(), address, text, sizeof text);
  if (size == 0) return "";
  // LLVM prints "\tmnemonic\toperands": one space between, none before.
  std::string out;
  for (const char* c = text; *c; ++c) {
    if (*c == '\t') {
      if (!out.empty() && out.back() != ' ') out += ' ';
    } else {
      out += *c;
    }
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

}  // namespace tracecorn::formats
