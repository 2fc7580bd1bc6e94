// Role: tests of the Unwinder's prologue-analysis step (unwinder.h, kAuto with
// UnwinderConfig::analyze_prologue) on a memory image: a big-endian MIPS
// program linked by mips-linux-gnu-ld from assembled functions with no unwind
// tables (the return addresses expected are the linker's, read with nm), a
// stack laid out as those prologues leave it, and the hostile cases: a pc no
// symbol covers, code that cannot be read, a frame that never saved its
// return address above frame 0 (gdb's "frame did not save the PC"), and the
// CFI-only method, which must not use prologues.
// Runs on the test thread; needs binutils-mips-linux-gnu (scripts/setup.sh).
#include <doctest/doctest.h>

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "recorder/unwind/unwinder.h"
#include "tests/recorder/unwind/unwind_test_support.h"

using namespace tracecorn::unwind;

namespace {

// Functions without unwind tables: leaf traps; middle saves ra and calls
// leaf; outer saves ra and calls middle; lazy calls leaf without saving ra;
// two nops open .text (ld's _ftext symbol covers them).
const char* const kProgram = R"(
  .set noreorder
  .set nomacro
  .text
  nop
  nop
  .globl pad_end
pad_end:
  .globl outer
  .type outer,@function
outer:
  addiu $sp,$sp,-32
  sw $ra,28($sp)
  jal middle
  nop
  .globl ret_in_outer
ret_in_outer:
  lw $ra,28($sp)
  jr $ra
  addiu $sp,$sp,32
  .size outer,.-outer
  .globl middle
  .type middle,@function
middle:
  lui $gp,0xa
  addiu $sp,$sp,-32
  sw $gp,16($sp)
  sw $ra,28($sp)
  jal leaf
  nop
  .globl ret_in_middle
ret_in_middle:
  lw $ra,28($sp)
  jr $ra
  addiu $sp,$sp,32
  .size middle,.-middle
  .globl lazy
  .type lazy,@function
lazy:
  addiu $sp,$sp,-16
  lw $v0,0($a0)
  jal leaf
  nop
  .globl ret_in_lazy
ret_in_lazy:
  jr $ra
  addiu $sp,$sp,16
  .size lazy,.-lazy
  .globl leaf
  .type leaf,@function
leaf:
  li $v0,4004
  syscall
  .globl after_syscall
after_syscall:
  jr $ra
  nop
  .size leaf,.-leaf
)";

constexpr unsigned kSp = 29, kRa = 31, kPcColumn = 32;

struct Program {
  std::string path;                             // the linked ELF
  std::uint64_t text = 0;                       // .text's address
  std::vector<std::uint8_t> code;               // .text's bytes
  std::map<std::string, std::uint64_t> symbols;  // nm
};

Program build_program(const std::filesystem::path& dir) {
  std::filesystem::create_directories(dir);
  const std::string stem = (dir / "program").string();
  std::ofstream(stem + ".s") << kProgram;
  const std::string output = test::run_tool(
      "mips-linux-gnu-as -EB -march=mips32r2 -o '" + stem + ".o' '" + stem + ".s' 2>&1 && mips-linux-gnu-ld -EB "
      "-Ttext=0x400000 -e outer -o '" + stem + "' '" + stem + ".o' 2>&1 && mips-linux-gnu-objcopy -O binary -j .text '" +
      stem + "' '" + stem + ".bin' 2>&1");
  INFO(output);
  Program program;
  program.path = stem;
  program.code = test::read_bytes(stem + ".bin");
  REQUIRE(!program.code.empty());
  std::istringstream nm(test::run_tool("mips-linux-gnu-nm '" + stem + "'"));
  std::string line;
  while (std::getline(nm, line)) {
    const auto words = test::split_words(line);
    if (words.size() == 3) program.symbols[words[2]] = std::stoull(words[0], nullptr, 16);
  }
  program.text = program.symbols.at("pad_end") - 8;  // two nops before it
  return program;
}

// Big-endian 32-bit guest memory: the code, and stack words.
class ImageMemory final : public MemoryReader {
 public:
  std::uint64_t code_address = 0;
  std::vector<std::uint8_t> code;
  std::map<std::uint64_t, std::uint32_t> words;
  bool read(std::uint64_t address, void* out, std::size_t size) noexcept override {
    auto* bytes = static_cast<std::uint8_t*>(out);
    for (std::size_t i = 0; i < size; ++i) {
      const std::uint64_t at = address + i;
      if (at >= code_address && at - code_address < code.size()) {
        bytes[i] = code[at - code_address];
        continue;
      }
      auto word = words.find(at & ~std::uint64_t{3});
      if (word == words.end()) return false;
      bytes[i] = static_cast<std::uint8_t>(word->second >> (8 * (3 - (at & 3))));
    }
    return true;
  }
};

UnwinderConfig mips_config() {
  UnwinderConfig config;
  config.pc_register = kPcColumn;
  config.sp_register = kSp;
  config.fp_register = 30;
  config.address_size = 4;
  config.little_endian = false;
  config.analyze_prologue = &tracecorn::arch::analyze_mips_prologue_big;
  return config;
}

}  // namespace

TEST_CASE("Unwinder prologue: mips functions without tables unwind by their prologues to the linker's return addresses; hostile cases stop cleanly") {
  const auto dir = std::filesystem::temp_directory_path() / ("tracecorn-prologue-unwind-" + std::to_string(::getpid()));
  const Program program = build_program(dir);
  Unwinder unwinder(mips_config());
  // The module starts 256 bytes (of zeros: `nop`s) before .text, where no
  // symbol is (ld's _ftext marks .text's start).
  constexpr std::uint64_t kHeader = 0x100;
  REQUIRE(unwinder.add_module(program.text - kHeader, program.text + program.code.size(), 0, program.path));
  ImageMemory memory;
  memory.code_address = program.text - kHeader;
  memory.code.assign(kHeader, 0);
  memory.code.insert(memory.code.end(), program.code.begin(), program.code.end());
  // leaf has no frame; middle's frame (32 bytes) holds ra at 28 and gp at 16;
  // outer's (32 bytes above) holds ra 0: the end of the stack.
  constexpr std::uint64_t kSp0 = 0x7fff0000;
  memory.words[kSp0 + 16] = 0x12345678;
  memory.words[kSp0 + 28] = static_cast<std::uint32_t>(program.symbols.at("ret_in_outer"));
  memory.words[kSp0 + 32 + 28] = 0;
  RegisterSet registers;
  registers.set(kPcColumn, program.symbols.at("after_syscall"));
  registers.set(kSp, kSp0);
  registers.set(kRa, program.symbols.at("ret_in_middle"));
  StackFrame frames[16];

  SUBCASE("the walk") {
    const auto result = unwinder.unwind(registers, memory, UnwindMethod::kAuto, FirstFrame::kAfterTrap, frames);
    INFO(unwinder.last_error());
    REQUIRE(result.depth == 3);
    CHECK(result.stop == StopReason::kEndOfStack);
    CHECK(frames[0].pc == program.symbols.at("after_syscall"));
    CHECK(frames[1].pc == program.symbols.at("ret_in_middle"));
    CHECK(frames[2].pc == program.symbols.at("ret_in_outer"));
    CHECK(frames[1].source == FrameSource::kPrologue);
    CHECK(frames[2].source == FrameSource::kPrologue);
    CHECK(frame_source_name(FrameSource::kPrologue) == "prologue");
    // CFI alone has nothing here.
    const auto cfi = unwinder.unwind(registers, memory, UnwindMethod::kCfi, FirstFrame::kAfterTrap, frames);
    CHECK(cfi.depth == 1);
    CHECK(cfi.stop == StopReason::kNoUnwindInfo);
  }
  SUBCASE("a frame above frame 0 that never saved ra ends the stack (gdb: frame did not save the PC)") {
    registers.set(kRa, program.symbols.at("ret_in_lazy"));
    const auto result = unwinder.unwind(registers, memory, UnwindMethod::kAuto, FirstFrame::kAfterTrap, frames);
    REQUIRE(result.depth == 2);
    CHECK(frames[1].pc == program.symbols.at("ret_in_lazy"));
    CHECK(result.stop == StopReason::kNoSavedReturnAddress);
    CHECK(stop_reason_name(result.stop) == "no saved return address");
  }
  SUBCASE("Malicious: a pc before every function symbol") {
    registers.set(kPcColumn, program.text - kHeader + 8);
    const auto result = unwinder.unwind(registers, memory, UnwindMethod::kAuto, FirstFrame::kAfterTrap, frames);
    CHECK(result.depth == 1);
    CHECK(result.stop == StopReason::kNoUnwindInfo);
  }
  SUBCASE("Malicious: code that cannot be read") {
    memory.code.clear();
    const auto result = unwinder.unwind(registers, memory, UnwindMethod::kAuto, FirstFrame::kAfterTrap, frames);
    CHECK(result.depth == 1);
    CHECK(result.stop == StopReason::kNoUnwindInfo);
  }
  SUBCASE("Malicious: a saved return address slot that cannot be read") {
    memory.words.erase(kSp0 + 28);
    const auto result = unwinder.unwind(registers, memory, UnwindMethod::kAuto, FirstFrame::kAfterTrap, frames);
    CHECK(result.depth == 2);
    CHECK(result.stop == StopReason::kUnreadableMemory);
  }
  std::filesystem::remove_all(dir);
}
