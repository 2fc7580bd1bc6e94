// Role: unit tests of the prologue analysers (arch/prologue.h) over code the
// cross assemblers encode (mips-linux-gnu-as in both byte orders,
// riscv64-linux-gnu-as with and without compressed instructions,
// arm-linux-gnueabihf-as in Thumb): each
// prologue form gdb's scanners know (stack adjustment, register stores, frame
// pointer set-up, large frames), the rules that end a scan (gdb's second
// non-prologue instruction and delay slot on mips, c.li and unknown stores on
// riscv64, calls, branches, epilogues and unplaceable stores in Thumb, the
// byte bounds), the limit (only instructions before the pc
// count), and "Malicious:" inputs (no code, cut instructions, frame sizes
// that wrap around). The stack tests (tests/recorder/unwind/cross_stacks_test.cpp)
// check the same analysers against gdb-multiarch on whole programs.
// Runs on the test thread; needs binutils-mips-linux-gnu,
// binutils-riscv64-linux-gnu and binutils-arm-linux-gnueabihf (scripts/setup.sh).
#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "arch/prologue.h"
#include "tests/recorder/unwind/unwind_test_support.h"

namespace tracecorn::arch {
namespace {

using unwind::test::read_bytes;
using unwind::test::run_tool;

// The .text bytes `assembler` (with `flags`) makes of `source`.
std::vector<std::uint8_t> assemble(const std::string& assembler, const std::string& flags, const std::string& source) {
  const auto dir = std::filesystem::temp_directory_path() / ("tracecorn-prologue-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string stem = (dir / "code").string();
  std::ofstream(stem + ".s") << source << "\n";
  const std::string objcopy = assembler.substr(0, assembler.size() - 2) + "objcopy";
  const std::string output = run_tool(assembler + " " + flags + " -o '" + stem + ".o' '" + stem + ".s' 2>&1 && " +
                                      objcopy + " -O binary -j .text '" + stem + ".o' '" + stem + ".bin' 2>&1");
  INFO(output);
  auto bytes = read_bytes(stem + ".bin");
  std::filesystem::remove_all(dir);
  REQUIRE(!bytes.empty());
  return bytes;
}

struct MipsVariant {
  const char* flags;
  PrologueAnalyzer analyze;
};
const MipsVariant kMipsVariants[] = {{"-EB -march=mips32r2", &analyze_mips_prologue_big},
                                     {"-EL -march=mips32r2", &analyze_mips_prologue_little}};

std::vector<std::uint8_t> mips(const MipsVariant& variant, const std::string& body) {
  return assemble("mips-linux-gnu-as", variant.flags, ".set noreorder\n.set nomacro\n" + body);
}

std::vector<std::uint8_t> riscv(const std::string& body, bool compressed = true) {
  return assemble("riscv64-linux-gnu-as", compressed ? "-march=rv64gc" : "-march=rv64g", body);
}

PrologueFrame analyse(PrologueAnalyzer analyze, const std::vector<std::uint8_t>& code, std::size_t limit) {
  PrologueFrame frame;
  REQUIRE(analyze(code, limit, 0, frame));
  return frame;
}

// The offset from the CFA where `reg` was saved, or -1 (never a real slot: slots are word aligned).
std::int64_t slot(const PrologueFrame& frame, unsigned reg) {
  std::int64_t offset = -1;
  return frame.saved_at(static_cast<std::uint16_t>(reg), offset) ? offset : -1;
}

constexpr unsigned kMipsSp = 29, kMipsS8 = 30, kMipsRa = 31, kMipsGp = 28, kMipsS0 = 16;
constexpr unsigned kRvRa = 1, kRvSp = 2, kRvS0 = 8, kRvS1 = 9;
constexpr unsigned kArmR4 = 4, kArmR5 = 5, kArmR7 = 7, kArmR11 = 11, kArmSp = 13, kArmLr = 14;

std::vector<std::uint8_t> thumb(const std::string& body) {
  return assemble("arm-linux-gnueabihf-as", "-mthumb -march=armv7-a -mfpu=vfpv3-d16", ".syntax unified\n.thumb\n" + body);
}

PrologueFrame analyse_thumb(const std::vector<std::uint8_t>& code, std::size_t limit) {
  PrologueFrame frame;
  REQUIRE(analyze_arm_prologue(code, limit, 1, frame));
  CHECK(frame.return_address_is_value);
  return frame;
}

}  // namespace

TEST_CASE("Prologue mips: gcc's PIC prologue with a frame pointer, in both byte orders") {
  for (const auto& variant : kMipsVariants) {
    CAPTURE(variant.flags);
    const auto code = mips(variant, R"(
      lui $gp,0xa
      addiu $gp,$gp,21504
      addu $gp,$gp,$t9
      addiu $sp,$sp,-80
      sw $gp,16($sp)
      sw $ra,76($sp)
      sw $fp,72($sp)
      move $fp,$sp
      sw $s0,40($sp)
      lw $t9,-32516($gp)
      jalr $t9
      nop
      lw $v0,0($sp))");
    const auto frame = analyse(variant.analyze, code, code.size());
    CHECK(frame.cfa_register == kMipsS8);
    CHECK(frame.cfa_offset == 80);
    CHECK(frame.return_address_register == kMipsRa);
    CHECK(slot(frame, kMipsRa) == -4);
    CHECK(slot(frame, kMipsS8) == -8);
    CHECK(slot(frame, kMipsS0) == -40);
    CHECK(slot(frame, kMipsGp) == -64);
    // Before `sw $ra` ran (the pc at it): sp-based, ra still in its register.
    const auto early = analyse(variant.analyze, code, 5 * 4);
    CHECK(early.cfa_register == kMipsSp);
    CHECK(early.cfa_offset == 80);
    CHECK(slot(early, kMipsRa) == -1);
    CHECK(slot(early, kMipsGp) == -64);
  }
}

TEST_CASE("Prologue mips: the scan ends at the second non-prologue instruction, after a delay slot, at a positive adjustment, at 200 bytes") {
  for (const auto& variant : kMipsVariants) {
    CAPTURE(variant.flags);
    // gdb's rule: one scheduled instruction is allowed, the second ends it.
    auto code = mips(variant, "addiu $sp,$sp,-32\nlw $v0,0($a0)\nsw $ra,28($sp)\nlw $v1,4($a0)\nlw $t9,8($a0)\nsw $s0,24($sp)");
    auto frame = analyse(variant.analyze, code, code.size());
    CHECK(frame.cfa_offset == 32);
    CHECK(slot(frame, kMipsRa) == -4);
    CHECK(slot(frame, kMipsS0) == -1);
    // A branch: its delay slot still counts, nothing after it.
    code = mips(variant, "addiu $sp,$sp,-24\nbal 1f\nsw $ra,20($sp)\nsw $s0,16($sp)\n1: nop");
    frame = analyse(variant.analyze, code, code.size());
    CHECK(slot(frame, kMipsRa) == -4);
    CHECK(slot(frame, kMipsS0) == -1);
    // The epilogue's stack release.
    code = mips(variant, "addiu $sp,$sp,-16\naddiu $sp,$sp,16\nsw $ra,12($sp)");
    frame = analyse(variant.analyze, code, code.size());
    CHECK(frame.cfa_offset == 16);
    CHECK(slot(frame, kMipsRa) == -1);
    // 200 bytes: 60 neutral FP stores, then ra's.
    std::string body = "addiu $sp,$sp,-64\n";
    for (int i = 0; i < 60; ++i) body += "swc1 $f0,0($sp)\n";
    code = mips(variant, body + "sw $ra,60($sp)");
    frame = analyse(variant.analyze, code, code.size());
    CHECK(frame.cfa_offset == 64);
    CHECK(slot(frame, kMipsRa) == -1);
  }
}

TEST_CASE("Prologue mips: `addiu s8,sp,N` with the frame size, large frames through at, and a leaf") {
  for (const auto& variant : kMipsVariants) {
    CAPTURE(variant.flags);
    auto code = mips(variant, "addiu $sp,$sp,-32\nsw $ra,28($sp)\nsw $fp,24($sp)\naddiu $fp,$sp,32\nsw $s0,-12($fp)");
    auto frame = analyse(variant.analyze, code, code.size());
    CHECK(frame.cfa_register == kMipsS8);
    CHECK(frame.cfa_offset == 0);
    CHECK(slot(frame, kMipsRa) == -4);
    CHECK(slot(frame, kMipsS8) == -8);
    CHECK(slot(frame, kMipsS0) == -12);
    // lui/ori of at before the adjustment are prologue instructions (gdb does
    // not add subu's amount: only addiu adjustments count).
    code = mips(variant, "lui $at,1\nori $at,$at,0x10\naddiu $sp,$sp,-8\nsw $ra,4($sp)");
    frame = analyse(variant.analyze, code, code.size());
    CHECK(frame.cfa_offset == 8);
    CHECK(slot(frame, kMipsRa) == -4);
    code = mips(variant, "lw $v0,0($a0)\njr $ra\nnop");
    frame = analyse(variant.analyze, code, code.size());
    CHECK(frame.cfa_register == kMipsSp);
    CHECK(frame.cfa_offset == 0);
    CHECK(frame.saved_count == 0);
  }
}

TEST_CASE("Prologue riscv64: compressed prologue with a frame pointer (c.addi16sp, c.sdsp, addi s0)") {
  const auto code = riscv("addi sp,sp,-64\nsd ra,56(sp)\nsd s0,48(sp)\nsd s1,40(sp)\naddi s0,sp,64\nmv s1,a0\nli a5,0");
  const auto frame = analyse(&analyze_riscv64_prologue, code, code.size());
  CHECK(frame.cfa_register == kRvS0);
  CHECK(frame.cfa_offset == 0);
  CHECK(frame.return_address_register == kRvRa);
  CHECK(slot(frame, kRvRa) == -8);
  CHECK(slot(frame, kRvS0) == -16);
  CHECK(slot(frame, kRvS1) == -24);
  // The pc right after the adjustment: sp-based, ra in its register.
  const auto early = analyse(&analyze_riscv64_prologue, code, 2);
  CHECK(early.cfa_register == kRvSp);
  CHECK(early.cfa_offset == 64);
  CHECK(slot(early, kRvRa) == -1);
}

TEST_CASE("Prologue riscv64: uncompressed forms, a large frame through lui and add, ra moved before its store") {
  auto code = riscv("addi sp,sp,-2032\nsd ra,2024(sp)\nsd s0,2016(sp)", false);
  auto frame = analyse(&analyze_riscv64_prologue, code, code.size());
  CHECK(frame.cfa_register == kRvSp);
  CHECK(frame.cfa_offset == 2032);
  CHECK(slot(frame, kRvRa) == -8);
  CHECK(slot(frame, kRvS0) == -16);
  code = riscv("addi sp,sp,-16\nsd ra,8(sp)\nlui t0,0xfffff\nadd sp,sp,t0\nsd s0,0(sp)", false);
  frame = analyse(&analyze_riscv64_prologue, code, code.size());
  CHECK(frame.cfa_offset == 16 + 4096);
  CHECK(slot(frame, kRvRa) == -8);
  CHECK(slot(frame, kRvS0) == -16 - 4096);
  // ra copied to a5 by c.mv, then stored: the slot holds ra's entry value; a
  // load of it back (ld) keeps tracking it.
  code = riscv("addi sp,sp,-32\nmv a5,ra\nsd a5,24(sp)\nld a4,24(sp)\nsd a4,8(sp)\nsd s0,16(sp)");
  frame = analyse(&analyze_riscv64_prologue, code, code.size());
  CHECK((slot(frame, kRvRa) == -8 || slot(frame, kRvRa) == -24));
  CHECK(slot(frame, kRvS0) == -16);
}

TEST_CASE("Prologue riscv64: c.li and any other instruction end the scan; a store through an unknown s0 forgets every slot; 100 bytes") {
  auto code = riscv("addi sp,sp,-32\nli a5,0\nsd ra,24(sp)");
  auto frame = analyse(&analyze_riscv64_prologue, code, code.size());
  CHECK(frame.cfa_offset == 32);
  CHECK(slot(frame, kRvRa) == -1);
  code = riscv("addi sp,sp,-32\nsd ra,24(sp)\nsd a0,0(s0)");
  frame = analyse(&analyze_riscv64_prologue, code, code.size());
  CHECK(slot(frame, kRvRa) == -1);
  code = riscv("addi sp,sp,-32\nsub a0,a0,a1\nsd ra,24(sp)");
  frame = analyse(&analyze_riscv64_prologue, code, code.size());
  CHECK(slot(frame, kRvRa) == -1);
  std::string body = "addi sp,sp,-32\n";
  for (int i = 0; i < 30; ++i) body += "addi a0,a0,1\n";  // 4 bytes each (rv64g): past 100 bytes
  code = riscv(body + "sd ra,24(sp)", false);
  frame = analyse(&analyze_riscv64_prologue, code, code.size());
  CHECK(slot(frame, kRvRa) == -1);
}

TEST_CASE("Prologue arm: Thumb push, sub sp, r7 as frame pointer, push.w with vpush, str lr pre-indexed, sub.w") {
  auto code = thumb("push {r4, r5, r7, lr}\nsub sp, #16\nadd r7, sp, #0\nstr r0, [sp, #4]\nldr r3, [pc, #8]\nadd r3, pc");
  auto frame = analyse_thumb(code, code.size());
  CHECK(frame.cfa_register == kArmR7);
  CHECK(frame.cfa_offset == 32);
  CHECK(frame.return_address_register == kArmLr);
  CHECK(slot(frame, kArmLr) == -4);
  CHECK(slot(frame, kArmR7) == -8);
  CHECK(slot(frame, kArmR5) == -12);
  CHECK(slot(frame, kArmR4) == -16);
  // The pc at `sub sp`: only the push ran.
  frame = analyse_thumb(code, 2);
  CHECK(frame.cfa_register == kArmSp);
  CHECK(frame.cfa_offset == 16);
  code = thumb("push.w {r4, r5, r6, r7, r8, r9, r10, r11, lr}\nvpush {d8-d9}\nsub sp, #8\nmov r4, r0");
  frame = analyse_thumb(code, code.size());
  CHECK(frame.cfa_register == kArmSp);
  CHECK(frame.cfa_offset == 36 + 16 + 8);
  CHECK(slot(frame, kArmLr) == -4);
  CHECK(slot(frame, kArmR11) == -8);
  CHECK(slot(frame, kArmR4) == -36);
  code = thumb("str lr, [sp, #-4]!\nsub.w sp, sp, #1024\nadd.w r11, sp, #1024");
  frame = analyse_thumb(code, code.size());
  CHECK(frame.cfa_register == kArmR11);
  CHECK(frame.cfa_offset == 4);
  CHECK(slot(frame, kArmLr) == -4);
}

TEST_CASE("Prologue arm: a call, a branch, an epilogue or a store gdb cannot place end the Thumb scan; ARM code is not analysed") {
  auto code = thumb("mov r4, r0\nbl 1f\npush {r4, lr}\n1: nop");
  auto frame = analyse_thumb(code, code.size());
  CHECK(frame.cfa_offset == 0);
  CHECK(slot(frame, kArmLr) == -1);
  code = thumb("cbz r0, 1f\npush {r4, lr}\n1: nop");
  CHECK(slot(analyse_thumb(code, code.size()), kArmLr) == -1);
  code = thumb("push {r4, lr}\npop {r4}\npush {r5}");
  frame = analyse_thumb(code, code.size());
  CHECK(frame.cfa_offset == 8);
  CHECK(slot(frame, kArmR5) == -1);
  code = thumb("str r0, [r3]\npush {r4, lr}");
  frame = analyse_thumb(code, code.size());
  CHECK(frame.cfa_offset == 0);
  CHECK(slot(frame, kArmLr) == -1);
  // Instructions gdb does not know are skipped.
  code = thumb("eors r1, r1\npush {r4, lr}");
  CHECK(slot(analyse_thumb(code, code.size()), kArmLr) == -4);
  code = assemble("arm-linux-gnueabihf-as", "-march=armv7-a", ".arm\npush {r4, lr}");
  CHECK_FALSE(analyze_arm_prologue(code, code.size(), 0, frame));
}

TEST_CASE("Malicious: prologue analysers given no code, cut instructions, a limit past the code, frame sizes that wrap") {
  PrologueFrame frame;
  CHECK_FALSE(analyze_mips_prologue_big({}, 64, 0, frame));
  CHECK_FALSE(analyze_riscv64_prologue({}, 64, 0, frame));
  CHECK_FALSE(analyze_arm_prologue({}, 64, 1, frame));
  const std::uint8_t cut_thumb2[] = {0x2d, 0xe9};  // the first half of `push.w {...}`
  CHECK(analyze_arm_prologue(cut_thumb2, 4, 1, frame));
  CHECK(frame.saved_count == 0);
  const std::uint8_t cut[] = {0x27, 0xbd, 0xff};  // three bytes of `addiu sp,sp,-N`
  CHECK_FALSE(analyze_mips_prologue_big(cut, 64, 0, frame));
  for (const auto& variant : kMipsVariants) {
    // A limit far past the code: only whole instructions of `code` count.
    std::string body;
    for (int i = 0; i < 50; ++i) body += "addiu $sp,$sp,-32768\n";
    const auto code = mips(variant, body);
    const auto whole = analyse(variant.analyze, code, 1 << 20);
    CHECK(whole.cfa_offset == 50 * 32768);  // 200 bytes: all 50
    const std::vector<std::uint8_t> part(code.begin(), code.begin() + 7);
    CHECK(analyse(variant.analyze, part, 1 << 20).cfa_offset == 32768);
  }
  // riscv64: sums wrap around like the registers (no signed overflow).
  std::string body = "lui t0,0x80000\n";
  for (int i = 0; i < 20; ++i) body += "add t0,t0,t0\nadd sp,sp,t0\n";
  const auto code = riscv(body, false);
  CHECK(analyze_riscv64_prologue(code, code.size(), 0, frame));
  // A 32-bit instruction cut after its first half ends the scan.
  const std::uint8_t half[] = {0x13, 0x01};  // the low half of `addi sp,sp,N`
  CHECK(analyze_riscv64_prologue(half, 4, 0, frame));
  CHECK(frame.cfa_offset == 0);
}

}  // namespace tracecorn::arch
