// Role: unit tests of the guest architectures' tables (arch/aarch64.cpp, arch/mips.cpp,
// arch/riscv64.cpp, arch/linux_generic.cpp, arch/x86_64.cpp's stat) against
// references nobody here wrote: the syscall numbers and open flags against the
// cross compilers' kernel headers (<arch>-linux-gnu-gcc -E -dM), the `struct stat` layout
// against offsetof() in a program built by the cross compiler and run under
// qemu-aarch64-static, the DWARF numbers against the AADWARF64 table, and
// x86-64's stat encoding against the host's own struct stat; i386's table
// against gcc-i686-linux-gnu's <asm/unistd_32.h>, its packed stat64 under
// qemu-i386-static, its DWARF numbers against GNU as and readelf.
// Runs on the test thread; needs gcc-aarch64-linux-gnu and qemu-user-static
// (scripts/setup.sh installs both).
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <functional>
#include <optional>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <doctest/doctest.h>

#include <unicorn/mips.h>

#include "arch/arch.h"
#include "tests/support/architectures.h"

namespace tracecorn::arch {
namespace {

// `arch`'s cross compiler, from the tests' table (tests/support/architectures.h):
// "aarch64-linux-gnu-gcc", "i686-linux-gnu-gcc".
std::string cross_gcc(const ArchInfo& arch) {
  const test_support::GuestArchitecture* row = test_support::find_guest_architecture(arch.name);
  REQUIRE_MESSAGE(row != nullptr, arch.name << " is no row of tests/support/architectures.h");
  return row->cross_tool("gcc");
}

// qemu-user for `arch`: "qemu-aarch64-static".
std::string qemu_static(const ArchInfo& arch) { return "qemu-" + std::string(arch.name) + "-static"; }

std::string run_command(const std::string& command) {
  std::string output;
  if (FILE* pipe = ::popen(command.c_str(), "r")) {
    char buffer[4096];
    std::size_t got = 0;
    while ((got = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) output.append(buffer, got);
    ::pclose(pipe);
  }
  return output;
}

// The integer macros `header` defines for the aarch64 cross compiler, with
// macro-to-macro aliases resolved (__NR_fstat -> __NR3264_fstat -> 80).
std::map<std::string, long> cross_macros(const std::string& header, const std::string& prefix_regex,
                                         const std::string& compiler = cross_gcc(aarch64_arch())) {
  const std::string text = run_command("echo '#include <" + header + ">' | " + compiler + " -E -dM - 2>/dev/null");
  std::map<std::string, std::string> raw;
  std::istringstream lines(text);
  std::string line;
  const std::regex define("^#define (\\w+) (.+)$");
  std::smatch match;
  while (std::getline(lines, line))
    if (std::regex_match(line, match, define)) raw[match[1]] = match[2];
  std::map<std::string, long> values;
  const std::regex wanted(prefix_regex);
  // A value is a number, another macro, or "(BASE + N)" (arm's __NR_SYSCALL_BASE).
  const std::regex sum("^\\(\\s*(\\w+)\\s*\\+\\s*(\\w+)\\s*\\)$");
  std::function<std::optional<long>(std::string, int)> evaluate = [&](std::string v, int depth) -> std::optional<long> {
    if (depth > 6) return std::nullopt;
    if (raw.count(v)) return evaluate(raw[v], depth + 1);
    std::smatch parts;
    if (std::regex_match(v, parts, sum)) {
      const auto left = evaluate(parts[1], depth + 1), right = evaluate(parts[2], depth + 1);
      if (left && right) return *left + *right;
      return std::nullopt;
    }
    char* end = nullptr;
    const long number = std::strtol(v.c_str(), &end, 0);
    if (v.empty() || !end || *end != '\0') return std::nullopt;
    return number;
  };
  for (const auto& entry : raw) {
    if (!std::regex_match(entry.first, wanted)) continue;
    if (const auto number = evaluate(entry.second, 0)) values[entry.first] = *number;
  }
  return values;
}

}  // namespace

namespace {

// `arch`'s table against `compiler`'s <asm/unistd.h>: every number it maps
// names that syscall there and, when `complete`, every syscall tracecorn knows
// that the header has is mapped (arm leaves some out on purpose).
void check_syscall_numbers(const ArchInfo& arch, const std::string& compiler, bool complete = true) {
  CAPTURE(compiler);
  const auto numbers = cross_macros("asm/unistd.h", "__NR_\\w+", compiler);
  REQUIRE_MESSAGE(numbers.size() > 250, compiler << " is missing (scripts/setup.sh installs it)");
  int checked = 0;
  for (std::size_t id = 0; complete && id + 1 < kSyscallIdCount; ++id) {
    const std::string name(syscall_name(static_cast<SyscallId>(id)));
    const auto found = numbers.find("__NR_" + name);
    if (found == numbers.end()) continue;  // not in the generic table (open, stat, fork, arch_prctl...)
    CAPTURE(name);
    CHECK(arch.syscall_id(static_cast<std::uint64_t>(found->second)) == static_cast<SyscallId>(id));
    ++checked;
  }
  if (complete) CHECK(checked > 140);
  // And every number we map names that syscall in the header.
  for (std::uint64_t number = 0; number < 5000; ++number) {  // mips o32: 4000 + n
    const SyscallId id = arch.syscall_id(number);
    if (id == SyscallId::unknown) continue;
    CAPTURE(number);
    const auto found = numbers.find("__NR_" + std::string(syscall_name(id)));
    // fchmodat2 (Linux 6.6) is newer than Debian 12's headers (6.1); from 424 up
    // every architecture shares one number (scripts/syscall.tbl), so 452 holds.
    if (found == numbers.end() && id == SyscallId::fchmodat2 && number == 452) continue;
    // o32's getrlimit is the word-sized call tracecorn names ugetrlimit (as arm's).
    if (found == numbers.end() && id == SyscallId::ugetrlimit && numbers.count("__NR_getrlimit")) {
      CHECK(numbers.at("__NR_getrlimit") == static_cast<long>(number));
      continue;
    }
    // i386's old mmap (arguments in memory) is __NR_mmap there; the kernel calls it old_mmap.
    if (found == numbers.end() && id == SyscallId::old_mmap) {
      CHECK(numbers.at("__NR_mmap") == static_cast<long>(number));
      continue;
    }
    REQUIRE(found != numbers.end());
    CHECK(found->second == static_cast<long>(number));
  }
}

}  // namespace

TEST_CASE("Arch aarch64, riscv64: syscall numbers are those of the cross compilers' <asm/unistd.h>") {
  check_syscall_numbers(aarch64_arch(), cross_gcc(aarch64_arch()));
  check_syscall_numbers(riscv64_arch(), cross_gcc(riscv64_arch()));
}

TEST_CASE("Arch arm: every syscall number it maps is the one <asm/unistd.h> gives that name") {
  check_syscall_numbers(arm_arch(), cross_gcc(arm_arch()), false);
  CHECK(arm_arch().syscall_id(0xf0005) == SyscallId::set_tls);
  // Left out on purpose: 32-bit struct layouts with no converter (see arch/arm.cpp).
  CHECK(arm_arch().syscall_id(116) == SyscallId::unknown);  // sysinfo
  CHECK(arm_arch().syscall_id(108) == SyscallId::unknown);  // fstat (old struct stat)
}

TEST_CASE("Arch i386: every syscall number it maps is the one <asm/unistd_32.h> gives that name") {
  check_syscall_numbers(i386_arch(), cross_gcc(i386_arch()), false);
  // Left out on purpose: 32-bit struct layouts with no converter (see arch/i386.cpp).
  CHECK(i386_arch().syscall_id(108) == SyscallId::unknown);  // fstat (old struct stat)
  CHECK(i386_arch().syscall_id(13) == SyscallId::unknown);   // time (32-bit time_t)
}

TEST_CASE("Arch aarch64: open flags translate as <asm/fcntl.h> defines them on both sides") {
  const auto guest = cross_macros("asm/fcntl.h", "O_\\w+");
  REQUIRE_MESSAGE(guest.count("O_DIRECTORY"), "aarch64-linux-gnu-gcc is missing (scripts/setup.sh installs it)");
  const std::string host_text = run_command("echo '#include <asm/fcntl.h>' | gcc -E -dM - 2>/dev/null");
  int checked = 0;
  for (const auto& entry : guest) {
    const std::string& name = entry.first;
    const long guest_value = entry.second;
    const std::regex host_define("#define " + name + " (0[0-7]*|[1-9][0-9]*)\\b");
    std::smatch match;
    if (!std::regex_search(host_text, match, host_define)) continue;
    const auto host_value = static_cast<std::uint64_t>(std::strtol(match[1].str().c_str(), nullptr, 0));
    if (host_value == 0 || (host_value & (host_value - 1))) continue;  // O_RDONLY, O_ACCMODE, multi-bit aliases
    CAPTURE(name);
    CHECK(open_flags_to_host(aarch64_arch(), static_cast<std::uint64_t>(guest_value)) == host_value);
    CHECK(open_flags_to_guest(aarch64_arch(), host_value) == static_cast<std::uint64_t>(guest_value));
    ++checked;
  }
  CHECK(checked >= 12);
}

namespace {

// Builds a program printing offsetof()/sizeof of `struct_name` from <asm/stat.h>
// with `compiler`, runs it under `qemu`, and checks `arch`'s encoder puts each
// field there.
// `encode_dev` is how the kernel stores st_dev/st_rdev there (identity but on mips).
void check_stat_layout(const ArchInfo& arch, const std::string& compiler, const std::string& qemu,
                       const std::string& struct_name,
                       std::function<std::uint64_t(std::uint64_t)> encode_dev = [](std::uint64_t dev) { return dev; }) {
  CAPTURE(compiler);
  char dir_template[] = "/tmp/tracecorn-stat-XXXXXX";
  REQUIRE(::mkdtemp(dir_template) != nullptr);
  const std::string dir = dir_template;
  {
    std::ofstream source(dir + "/offsets.c");
    source << "#include <stddef.h>\n#include <stdio.h>\n#include <asm/stat.h>\n"
              "#define F(f) printf(#f \" %zu %zu\\n\", offsetof(struct " << struct_name << ", f), sizeof(((struct "
           << struct_name << "*)0)->f));\n"
              "int main(void) { F(st_dev) F(st_ino) F(st_mode) F(st_nlink) F(st_uid) F(st_gid) F(st_rdev)\n"
              "F(st_size) F(st_blksize) F(st_blocks) F(st_atime) F(st_atime_nsec) F(st_mtime) F(st_mtime_nsec)\n"
              "F(st_ctime) F(st_ctime_nsec) printf(\"size %zu\\n\", sizeof(struct " << struct_name << ")); return 0; }\n";
  }
  const std::string output =
      run_command(compiler + " -static -o " + dir + "/offsets " + dir + "/offsets.c && " + qemu + " " + dir + "/offsets");
  run_command("rm -rf " + dir);
  REQUIRE_MESSAGE(output.find("size ") != std::string::npos,
                  "could not build or run the offsets program (" << compiler << ", qemu-user-static)");

  // Encode distinct values, then read each field back at the reference offset.
  const FileStatus status{0x1111111111111101, 0x2222222222222202, 0x33333303, 0x44444404, 0x55555505,
                          0x66666606,         0x7777777777777707, 0x8888888888888808, 0x99999909,
                          0xaaaaaaaaaaaaaa0a, 0xbbbbbbbbbbbbbb0b, 0xcccccccccccccc0c, 0xdddddddddddddd0d,
                          0xeeeeeeeeeeeeee0e, 0x0f0f0f0f0f0f0f0f, 0x1010101010101010};
  const std::map<std::string, std::uint64_t> expected = {
      {"st_dev", encode_dev(status.dev)}, {"st_ino", status.ino},
      {"st_mode", status.mode},        {"st_nlink", status.nlink},
      {"st_uid", status.uid},          {"st_gid", status.gid},
      {"st_rdev", encode_dev(status.rdev)}, {"st_size", status.size},
      {"st_blksize", status.blksize},  {"st_blocks", status.blocks},
      {"st_atime", status.atime_sec},  {"st_atime_nsec", status.atime_nsec},
      {"st_mtime", status.mtime_sec},  {"st_mtime_nsec", status.mtime_nsec},
      {"st_ctime", status.ctime_sec},  {"st_ctime_nsec", status.ctime_nsec}};
  std::array<std::uint8_t, kMaxStatBytes> bytes{};
  const std::size_t size = arch.encode_stat(status, bytes);
  std::istringstream lines(output);
  std::string name;
  std::size_t offset = 0, width = 0;
  int fields = 0;
  while (lines >> name) {
    if (name == "size") {
      lines >> offset;
      CHECK(size == offset);
      continue;
    }
    lines >> offset >> width;
    CAPTURE(name);
    REQUIRE(expected.count(name));
    REQUIRE(offset + width <= size);
    std::uint64_t value = 0;
    for (std::size_t b = 0; b < width; ++b)
      value |= std::uint64_t{bytes[offset + b]} << (8 * (arch.little_endian ? b : width - 1 - b));
    const std::uint64_t mask = width == 8 ? ~std::uint64_t{0} : (std::uint64_t{1} << (8 * width)) - 1;
    CHECK(value == (expected.at(name) & mask));
    ++fields;
  }
  CHECK(fields == 16);
}

}  // namespace

TEST_CASE("Arch aarch64, arm: struct stat encodings match offsetof() in programs run under qemu") {
  check_stat_layout(aarch64_arch(), cross_gcc(aarch64_arch()), qemu_static(aarch64_arch()), "stat");
  check_stat_layout(arm_arch(), cross_gcc(arm_arch()), qemu_static(arm_arch()), "stat64");
}

TEST_CASE("Arch i386: struct stat64 (packed) matches offsetof() in a program run under qemu-i386") {
  check_stat_layout(i386_arch(), cross_gcc(i386_arch()), qemu_static(i386_arch()), "stat64");
}

TEST_CASE("Arch x86_64: struct stat encoding is the host's own struct stat") {
  struct stat info {};
  REQUIRE(::stat("/", &info) == 0);
  const FileStatus status{info.st_dev, info.st_ino, info.st_mode, info.st_nlink, info.st_uid, info.st_gid,
                          info.st_rdev, static_cast<std::uint64_t>(info.st_size),
                          static_cast<std::uint64_t>(info.st_blksize), static_cast<std::uint64_t>(info.st_blocks),
                          static_cast<std::uint64_t>(info.st_atim.tv_sec), static_cast<std::uint64_t>(info.st_atim.tv_nsec),
                          static_cast<std::uint64_t>(info.st_mtim.tv_sec), static_cast<std::uint64_t>(info.st_mtim.tv_nsec),
                          static_cast<std::uint64_t>(info.st_ctim.tv_sec), static_cast<std::uint64_t>(info.st_ctim.tv_nsec)};
  std::array<std::uint8_t, kMaxStatBytes> bytes{};
  REQUIRE(x86_64_arch().encode_stat(status, bytes) == sizeof info);
  CHECK(std::memcmp(bytes.data(), &info, sizeof info) == 0);
}

TEST_CASE("Arch riscv64: registers carry the psABI DWARF numbers; no AT_PLATFORM; UCIR name only; its own decoder") {
  const ArchInfo& arch = riscv64_arch();
  const std::map<std::string, int> dwarf = {{"zero", 0}, {"ra", 1}, {"sp", 2}, {"tp", 4}, {"a0", 10},
                                            {"a7", 17}, {"t6", 31}, {"ft0", 32}, {"fa0", 42}, {"ft11", 63}};
  for (const auto& entry : dwarf) {
    CAPTURE(entry.first);
    const RegisterInfo* reg = arch.find_register(entry.first);
    REQUIRE(reg != nullptr);
    CHECK(reg->dwarf == entry.second);
  }
  CHECK(arch.syscall_abi.number_reg == arch.find_register("a7")->uc_id);
  CHECK(arch.platform.empty());
  CHECK(arch.uname_machine == "riscv64");
  CHECK(arch.format_ids.ucir_arch == "riscv64");  // tracecorn's name: usercorn has no RISC-V
  CHECK(arch.format_ids.bap_architecture == 0);
  CHECK(arch.format_ids.bintrace == nullptr);
  CHECK(static_cast<bool>(arch.decode_without_capstone));  // Capstone 4 has no RISC-V
  CHECK(arch.decoding_unsupported.empty());
  CHECK(find_arch_for_elf(243, true, true) == &arch);
}

TEST_CASE("Arch aarch64: registers carry the AADWARF64 numbers and the syscall ABI") {
  const ArchInfo& arch = aarch64_arch();
  // "DWARF for the Arm 64-bit Architecture", table 3.
  const std::map<std::string, int> dwarf = {{"x0", 0}, {"x8", 8}, {"x29", 29}, {"x30", 30}, {"sp", 31},
                                            {"pc", 32}, {"tpidr_el0", 36}, {"v0", 64}, {"v8", 72}, {"v31", 95}};
  for (const auto& entry : dwarf) {
    const std::string& name = entry.first;
    const int number = entry.second;
    CAPTURE(name);
    const RegisterInfo* reg = arch.find_register(name);
    REQUIRE(reg != nullptr);
    CHECK(reg->dwarf == number);
  }
  CHECK(arch.syscall_abi.number_reg == arch.find_register("x8")->uc_id);
  CHECK(arch.syscall_abi.return_reg == arch.find_register("x0")->uc_id);
  CHECK(find_arch_for_elf(183, true, true) == &arch);
  CHECK(find_arch_for_elf(183, true, false) == nullptr);
}

}  // namespace tracecorn::arch

namespace tracecorn::arch {

TEST_CASE("Arch i386: DWARF numbers are the ones GNU as gives the registers' names (readelf decodes them)") {
  // Every table register with a DWARF number, as a .cfi_offset directive; the
  // assembler numbers it and readelf prints "rN (name)" for each.
  const ArchInfo& arch = i386_arch();
  char dir_template[] = "/tmp/tracecorn-i386-dwarf-XXXXXX";
  REQUIRE(::mkdtemp(dir_template) != nullptr);
  const std::string dir = dir_template;
  std::vector<std::pair<std::string, int>> expected;
  {
    std::ofstream source(dir + "/regs.s");
    source << ".text\nf:\n.cfi_startproc\n";
    for (const auto& reg : arch.registers) {
      if (reg.dwarf == kNoDwarfNumber) continue;
      std::string name(reg.name);
      if (name == "fpcw") name = "fcw";
      if (name == "fpsw") name = "fsw";
      const std::string operand = name.rfind("st", 0) == 0 ? "st(" + name.substr(2) + ")" : name;
      source << ".cfi_offset %" << operand << ", -8\n";
      expected.emplace_back(name, reg.dwarf);
    }
    source << "ret\n.cfi_endproc\n";
  }
  const std::string output = run_command("i686-linux-gnu-as -o " + dir + "/regs.o " + dir + "/regs.s && " +
                                          "readelf --debug-dump=frames " + dir + "/regs.o");
  run_command("rm -rf " + dir);
  const std::regex line("DW_CFA_offset: r(\\d+) \\((\\w+)\\) at cfa-8");
  std::vector<std::pair<std::string, int>> seen;
  for (auto it = std::sregex_iterator(output.begin(), output.end(), line); it != std::sregex_iterator(); ++it)
    seen.emplace_back((*it)[2], std::stoi((*it)[1]));
  REQUIRE_MESSAGE(!seen.empty(), "i686-linux-gnu-as or readelf gave nothing (scripts/setup.sh installs them)");
  CHECK(seen == expected);
  CHECK(expected.size() == 35);
  CHECK(arch.syscall_abi.number_reg == arch.find_register("eax")->uc_id);
  CHECK(arch.syscall_abi.arg_regs[0] == arch.find_register("ebx")->uc_id);
  CHECK(arch.syscall_abi.arg_regs[5] == arch.find_register("ebp")->uc_id);
  CHECK(arch.platform == "i686");
  CHECK(arch.uname_machine == "i686");
  CHECK(find_arch_for_elf(3, false, true) == &arch);
  CHECK(arch.format_ids.bintrace == nullptr);
}

}  // namespace tracecorn::arch

namespace tracecorn::arch {

TEST_CASE("Arch i386: Malicious: set_thread_area refuses entries outside TLS, and runs out after three") {
  uc_engine* engine = nullptr;
  REQUIRE(uc_open(UC_ARCH_X86, UC_MODE_32, &engine) == UC_ERR_OK);
  {
    auto cpu = i386_arch().engine->make_guest_cpu(engine);
    REQUIRE(cpu.has_value());
    auto desc = [](std::uint32_t entry, std::uint32_t base, std::uint32_t flags) {
      std::array<std::uint8_t, 16> bytes{};
      const std::uint32_t words[4] = {entry, base, 0xfffff, flags};
      for (unsigned w = 0; w < 4; ++w)
        for (unsigned b = 0; b < 4; ++b) bytes[4 * w + b] = static_cast<std::uint8_t>(words[w] >> (8 * b));
      return bytes;
    };
    for (const std::uint32_t entry : {0u, 5u, 11u, 15u, 0x7fffffffu, 0xfffffffeu}) {
      CAPTURE(entry);
      auto bytes = desc(entry, 0x1000, 0x51);
      CHECK((*cpu)->set_thread_area(bytes) == -EINVAL);
    }
    auto conforming = desc(12, 0x1000, 0x51 | (3u << 1));  // contents 3, present: refused as Linux does
    CHECK((*cpu)->set_thread_area(conforming) == -EINVAL);
    // entry -1 picks the free TLS entries 12, 13, 14 in turn and writes the choice back.
    for (std::uint32_t expected = 12; expected <= 14; ++expected) {
      auto bytes = desc(0xffffffffu, 0x1000 * expected, 0x51);
      REQUIRE((*cpu)->set_thread_area(bytes) == 0);
      CHECK(bytes[0] == expected);
    }
    auto full = desc(0xffffffffu, 0x9000, 0x51);
    CHECK((*cpu)->set_thread_area(full) == -ESRCH);
    // The base of entry 13 is what GS then gives as the thread pointer.
    std::uint32_t selector = 13 * 8 + 3;
    REQUIRE(uc_reg_write(engine, UC_X86_REG_GS, &selector) == UC_ERR_OK);
    CHECK((*cpu)->thread_pointer() == 0x1000 * 13);
  }
  uc_close(engine);
}

}  // namespace tracecorn::arch

namespace tracecorn::arch {

TEST_CASE("Arch mips: every o32 syscall number it maps is the one <asm/unistd.h> gives that name") {
  check_syscall_numbers(mips_arch(), cross_gcc(mips_arch()), false);
  check_syscall_numbers(mipsel_arch(), cross_gcc(mipsel_arch()), false);
  // Below __NR_Linux (4000) nothing is an o32 call.
  CHECK(mips_arch().syscall_id(4) == SyscallId::unknown);
  CHECK(mips_arch().syscall_id(4004) == SyscallId::write);
  // Left out on purpose (see arch/mips.cpp): old struct stat, pipe's v0/v1 result.
  CHECK(mips_arch().syscall_id(4108) == SyscallId::unknown);  // fstat
  CHECK(mips_arch().syscall_id(4042) == SyscallId::unknown);  // pipe
}

TEST_CASE("Arch mips: struct stat64 in both byte orders matches offsetof() under qemu-mips and qemu-mipsel") {
  // fs/stat.c cp_new_stat64: mips stores new_encode_dev(), the 32-bit encoding.
  const auto new_encode_dev = [](std::uint64_t dev) {
    const std::uint64_t major = ((dev >> 8) & 0xfff) | ((dev >> 32) & ~0xfffull);
    const std::uint64_t minor = (dev & 0xff) | ((dev >> 12) & 0xffffff00);
    return ((minor & 0xff) | (major << 8) | ((minor & ~0xffull) << 12)) & 0xffffffff;
  };
  check_stat_layout(mips_arch(), cross_gcc(mips_arch()), qemu_static(mips_arch()), "stat64", new_encode_dev);
  check_stat_layout(mipsel_arch(), cross_gcc(mipsel_arch()), qemu_static(mipsel_arch()), "stat64", new_encode_dev);
}

TEST_CASE("Arch mips: open and mmap flags translate as the cross compiler's headers define them") {
  // _GNU_SOURCE: O_DIRECT, O_DIRECTORY, O_NOFOLLOW... are defined only then.
  const auto host = cross_macros("fcntl.h", "O_\\w+", "gcc -D_GNU_SOURCE");
  const auto host_mman = cross_macros("sys/mman.h", "MAP_\\w+", "gcc -D_GNU_SOURCE");
  for (const ArchInfo* arch : {&mips_arch(), &mipsel_arch()}) {
    const std::string compiler =
        cross_gcc(*arch) + " -D_GNU_SOURCE";
    const auto guest = cross_macros("fcntl.h", "O_\\w+", compiler);
    REQUIRE_MESSAGE(guest.size() > 10, compiler << " is missing (scripts/setup.sh installs it)");
    int checked = 0;
    for (const char* name : {"O_APPEND", "O_DSYNC", "O_NONBLOCK", "O_CREAT", "O_TRUNC", "O_EXCL", "O_NOCTTY",
                             "O_LARGEFILE", "O_DIRECT", "O_DIRECTORY", "O_NOFOLLOW", "O_CLOEXEC", "O_SYNC"}) {
      CAPTURE(name);
      REQUIRE(guest.count(name));
      const auto guest_value = static_cast<std::uint64_t>(guest.at(name));
      // The host's O_LARGEFILE is 0 in 64-bit <fcntl.h>: the kernel's is 0100000.
      const std::uint64_t host_value = std::string(name) == "O_LARGEFILE" ? 0100000 : static_cast<std::uint64_t>(host.at(name));
      CHECK(open_flags_to_host(*arch, guest_value) == host_value);
      CHECK(open_flags_to_guest(*arch, host_value) == guest_value);
      ++checked;
    }
    CHECK(checked == 13);
    const auto guest_mman = cross_macros("sys/mman.h", "MAP_\\w+", compiler);
    for (const char* name : {"MAP_SHARED", "MAP_PRIVATE", "MAP_FIXED", "MAP_ANONYMOUS", "MAP_NORESERVE",
                             "MAP_GROWSDOWN", "MAP_DENYWRITE", "MAP_EXECUTABLE", "MAP_LOCKED", "MAP_POPULATE",
                             "MAP_NONBLOCK", "MAP_STACK", "MAP_HUGETLB"}) {
      CAPTURE(name);
      REQUIRE(guest_mman.count(name));
      REQUIRE(host_mman.count(name));
      CHECK(mmap_flags_to_host(*arch, static_cast<std::uint64_t>(guest_mman.at(name))) ==
            static_cast<std::uint64_t>(host_mman.at(name)));
    }
  }
}

// The values of the C expressions `names` (macros of `header`, which may be
// computed ones like _IOR(...)) as `compiler` evaluates them: compiled with -S
// into an array of 32-bit words, read back from the assembly's .word/.long
// lines. Empty when the compiler fails.
std::map<std::string, std::uint32_t> cross_constants(const std::string& compiler, const std::string& header,
                                                     const std::vector<std::string>& names) {
  std::string source = "#include <" + header + ">\nunsigned int values[] = {";
  for (const auto& name : names) source += "(unsigned int)(" + name + "),";
  source += "};\n";
  const std::string text = run_command("printf '%s' '" + source + "' | " + compiler + " -x c -S -o - - 2>/dev/null");
  std::map<std::string, std::uint32_t> values;
  std::istringstream lines(text);
  std::string line;
  const std::regex word("^\\s*\\.(word|long|4byte)\\s+(-?\\d+)\\s*$");
  std::smatch match;
  std::size_t index = 0;
  while (std::getline(lines, line) && index < names.size())
    if (std::regex_match(line, match, word))
      values[names[index++]] = static_cast<std::uint32_t>(std::stoll(match[2]));
  if (index != names.size()) values.clear();
  return values;
}

TEST_CASE("Arch mips: signal numbers, rlimit resources and ioctl requests translate as the headers define them") {
  const std::vector<std::string> signals = {
      "SIGHUP",  "SIGINT",  "SIGQUIT", "SIGILL",  "SIGTRAP", "SIGABRT", "SIGBUS",    "SIGFPE",  "SIGKILL",
      "SIGUSR1", "SIGSEGV", "SIGUSR2", "SIGPIPE", "SIGALRM", "SIGTERM", "SIGCHLD",   "SIGCONT", "SIGSTOP",
      "SIGTSTP", "SIGTTIN", "SIGTTOU", "SIGURG",  "SIGXCPU", "SIGXFSZ", "SIGVTALRM", "SIGPROF", "SIGWINCH",
      "SIGIO",   "SIGPWR",  "SIGSYS",  "__SIGRTMIN"};
  const std::vector<std::string> resources = {"RLIMIT_CPU",    "RLIMIT_FSIZE",  "RLIMIT_DATA",   "RLIMIT_STACK",
                                              "RLIMIT_CORE",   "RLIMIT_RSS",    "RLIMIT_NPROC",  "RLIMIT_NOFILE",
                                              "RLIMIT_MEMLOCK", "RLIMIT_AS",    "RLIMIT_LOCKS",  "RLIMIT_SIGPENDING",
                                              "RLIMIT_MSGQUEUE", "RLIMIT_NICE", "RLIMIT_RTPRIO", "RLIMIT_RTTIME"};
  // The requests the Linux layer serves (recorder/linux/syscalls_file.cpp).
  const std::vector<std::string> requests = {"TCGETS",    "TCSETS",   "TCSETSW", "TCSETSF", "TIOCGWINSZ", "TIOCSWINSZ",
                                             "TIOCGPGRP", "FIONREAD", "FIONBIO", "FIOCLEX", "FIONCLEX"};
  const auto host_signals = cross_constants("gcc", "signal.h", signals);
  const auto host_resources = cross_constants("gcc", "sys/resource.h", resources);
  const auto host_requests = cross_constants("gcc", "sys/ioctl.h", requests);
  REQUIRE(host_signals.size() == signals.size());
  REQUIRE(host_resources.size() == resources.size());
  REQUIRE(host_requests.size() == requests.size());
  CHECK(host_requests.at("TIOCGWINSZ") == 0x5413);  // the reader itself: a value known by heart
  for (const ArchInfo* arch : {&mips_arch(), &mipsel_arch()}) {
    const std::string compiler = cross_gcc(*arch);
    CAPTURE(compiler);
    const auto guest_signals = cross_constants(compiler, "signal.h", signals);
    const auto guest_resources = cross_constants(compiler, "sys/resource.h", resources);
    const auto guest_requests = cross_constants(compiler, "sys/ioctl.h", requests);
    REQUIRE_MESSAGE(guest_signals.size() == signals.size(), compiler << " is missing (scripts/setup.sh installs it)");
    REQUIRE(guest_resources.size() == resources.size());
    REQUIRE(guest_requests.size() == requests.size());
    CHECK(guest_requests.at("TCGETS") == 0x540d);
    int differ = 0;
    for (const auto& name : signals) {
      CAPTURE(name);
      const auto guest = static_cast<int>(guest_signals.at(name)), host = static_cast<int>(host_signals.at(name));
      CHECK(signal_to_host(*arch, guest) == host);
      CHECK(signal_to_guest(*arch, host) == guest);
      CHECK(signal_set_to_host(*arch, 1ull << (guest - 1)) == 1ull << (host - 1));
      CHECK(signal_set_to_guest(*arch, 1ull << (host - 1)) == 1ull << (guest - 1));
      differ += guest != host;
    }
    CHECK(differ == 18);
    // The numbers one side has and the other lacks: mips' SIGEMT, the host's SIGSTKFLT.
    CHECK(cross_constants(compiler, "signal.h", {"SIGEMT"}).at("SIGEMT") == 7);
    CHECK(signal_to_host(*arch, 7) == 0);
    CHECK(signal_to_guest(*arch, static_cast<int>(cross_constants("gcc", "signal.h", {"SIGSTKFLT"}).at("SIGSTKFLT"))) == 0);
    CHECK(signal_set_to_host(*arch, 1ull << 6) == 0);
    for (const auto& name : resources) {
      CAPTURE(name);
      CHECK(rlimit_resource_to_host(*arch, static_cast<int>(guest_resources.at(name))) ==
            static_cast<int>(host_resources.at(name)));
    }
    CHECK(cross_constants(compiler, "sys/resource.h", {"RLIM_INFINITY"}).at("RLIM_INFINITY") ==
          arch->rlimit_infinity32);
    for (const auto& name : requests) {
      CAPTURE(name);
      CHECK(ioctl_request_to_host(*arch, guest_requests.at(name)) == std::optional<std::uint64_t>(host_requests.at(name)));
      CHECK(ioctl_request_to_guest(*arch, host_requests.at(name)) == std::optional<std::uint64_t>(guest_requests.at(name)));
    }
    // A request mips does not list has no meaning, even where the host's
    // numbers give it one (mips' TCGETA 0x5401 is the host's TCGETS).
    CHECK_FALSE(ioctl_request_to_host(*arch, 0x5401).has_value());
  }
}

TEST_CASE("Arch mips: struct termios converts as the cross compiler's <asm/termbits.h> lays it out") {
  const std::vector<std::string> indices = {"VINTR", "VQUIT",    "VERASE",   "VKILL",   "VEOF",   "VTIME",
                                            "VMIN",  "VSWTC",    "VSTART",   "VSTOP",   "VSUSP",  "VEOL",
                                            "VREPRINT", "VDISCARD", "VWERASE", "VLNEXT", "VEOL2", "NCCS"};
  const std::vector<std::string> local = {"ISIG",    "ICANON",  "ECHO",   "ECHOE",  "ECHOK",  "ECHONL", "NOFLSH",
                                          "TOSTOP",  "ECHOCTL", "ECHOPRT", "ECHOKE", "FLUSHO", "PENDIN", "IEXTEN"};
  std::vector<std::string> names = indices;
  names.insert(names.end(), local.begin(), local.end());
  names.push_back("sizeof(struct termios)");
  const auto host = cross_constants("gcc", "asm/termbits.h", names);
  REQUIRE(host.size() == names.size());
  REQUIRE(host.at("sizeof(struct termios)") == kHostTermiosBytes);
  for (const ArchInfo* arch : {&mips_arch(), &mipsel_arch()}) {
    const std::string compiler = cross_gcc(*arch);
    CAPTURE(compiler);
    const auto guest = cross_constants(compiler, "asm/termbits.h", names);
    REQUIRE(guest.size() == names.size());
    REQUIRE((arch->termios_to_guest != nullptr));
    REQUIRE((arch->termios_to_host != nullptr));
    CHECK(arch->termios_bytes == guest.at("sizeof(struct termios)"));
    std::uint32_t host_flags = 0;
    for (const auto& name : local) host_flags |= host.at(name);
    std::array<std::uint8_t, kHostTermiosBytes> host_bytes{};
    for (std::size_t b = 0; b < 4; ++b) {
      host_bytes[b] = static_cast<std::uint8_t>(0x11 * (b + 1));  // c_iflag: passes unchanged
      host_bytes[12 + b] = static_cast<std::uint8_t>(host_flags >> (8 * b));
    }
    host_bytes[16] = 3;  // c_line
    for (std::size_t i = 0; i + 1 < indices.size(); ++i) host_bytes[17 + host.at(indices[i])] = static_cast<std::uint8_t>(100 + i);
    std::array<std::uint8_t, kMaxTermiosBytes> guest_bytes{};
    REQUIRE(arch->termios_to_guest(host_bytes, guest_bytes) == arch->termios_bytes);
    auto guest_word = [&](std::size_t at) {
      std::uint32_t value = 0;
      for (std::size_t b = 0; b < 4; ++b)
        value |= std::uint32_t{guest_bytes[at + b]} << (8 * (arch->little_endian ? b : 3 - b));
      return value;
    };
    CHECK(guest_word(0) == 0x44332211u);
    std::uint32_t expected_flags = 0;
    for (const auto& name : local) expected_flags |= guest.at(name);
    CHECK(guest_word(12) == expected_flags);
    CHECK(guest_bytes[16] == 3);
    for (std::size_t i = 0; i + 1 < indices.size(); ++i) {
      CAPTURE(indices[i]);
      CHECK(guest_bytes[17 + guest.at(indices[i])] == 100 + i);
    }
    // And back, one local flag at a time.
    for (const auto& name : local) {
      CAPTURE(name);
      guest_bytes.fill(0);
      for (std::size_t b = 0; b < 4; ++b)
        guest_bytes[12 + b] = static_cast<std::uint8_t>(guest.at(name) >> (8 * (arch->little_endian ? b : 3 - b)));
      std::array<std::uint8_t, kHostTermiosBytes> back{};
      arch->termios_to_host(guest_bytes, back);
      const std::uint32_t value = back[12] | back[13] << 8 | back[14] << 16 | static_cast<std::uint32_t>(back[15]) << 24;
      CHECK(value == host.at(name));
    }
  }
  CHECK((x86_64_arch().termios_to_guest == nullptr));
  CHECK((aarch64_arch().termios_to_guest == nullptr));
}

TEST_CASE("Arch: the other guests number signals, rlimit resources and ioctl requests as the host does") {
  const std::vector<std::string> names = {"SIGBUS", "SIGUSR1", "SIGUSR2", "SIGCHLD", "SIGSTOP", "SIGSYS", "SIGPWR"};
  const auto host = cross_constants("gcc", "signal.h", names);
  REQUIRE(host.size() == names.size());
  // Every other guest but mips o32's two byte orders (their own numbers: the mips cases above).
  for (const ArchInfo* arch : {&aarch64_arch(), &arm_arch(), &i386_arch(), &riscv64_arch()}) {
    const std::string compiler = cross_gcc(*arch);
    CAPTURE(compiler);
    const auto guest = cross_constants(compiler, "signal.h", names);
    REQUIRE(guest.size() == names.size());
    for (const auto& name : names) CHECK(guest.at(name) == host.at(name));
    CHECK(arch->signal_abi.numbers.empty());
    CHECK(arch->rlimit_resources.empty());
    CHECK(arch->ioctl_requests.empty());
    CHECK(ioctl_request_to_host(*arch, 0x5401) == std::optional<std::uint64_t>(0x5401));
    CHECK(signal_to_host(*arch, 10) == 10);
  }
  // 32-bit x86 and arm's word-sized getrlimit: RLIM_INFINITY is ~0 there.
  CHECK(cross_constants(cross_gcc(i386_arch()), "sys/resource.h", {"RLIM_INFINITY"}).at("RLIM_INFINITY") ==
        i386_arch().rlimit_infinity32);
  CHECK(cross_constants(cross_gcc(arm_arch()), "sys/resource.h", {"RLIM_INFINITY"}).at("RLIM_INFINITY") ==
        arm_arch().rlimit_infinity32);
}

// Linux's signal for a break or trap instruction (arch/mips/kernel/traps.c:
// do_bp reads break's 20-bit code, swapping gas's `break n` (n at bit 16)
// back; do_tr the register forms' 10-bit code, 0 for the immediate forms;
// do_trap_or_bp sends SIGFPE for codes 6 and 7, SIGTRAP for the others).
// Each case is a block assembled by mips-linux-gnu-as, run in Unicorn with
// a0 = 0, a1 = 1; the signal MipsGuestCpu gives must be Linux's.
TEST_CASE("Arch mips: break and trap instructions give Linux's signal for their code (SIGFPE for 6 and 7)") {
  char dir_template[] = "/tmp/tracecorn-mips-traps-XXXXXX";
  REQUIRE(::mkdtemp(dir_template) != nullptr);
  const std::string dir = dir_template;
  struct Case {
    const char* code;
    int signal;
    unsigned index;  // of the instruction that traps (exception_pc)
  };
  const Case cases[] = {
      {"break 7", SIGFPE, 0},                  // gas: code at bit 16, Linux swaps it back
      {"break 0, 7", SIGFPE, 0},               // code at bit 6
      {"break 6", SIGFPE, 0},                  // BRK_OVERFLOW
      {"break 0", SIGTRAP, 0},
      {"break 5", SIGTRAP, 0},
      {"teq $4, $0, 7", SIGFPE, 0},            // gcc's division check: a0 == 0
      {"tne $5, $0, 6", SIGFPE, 0},
      {"tge $5, $4, 5", SIGTRAP, 0},
      {"teq $0, $0", SIGTRAP, 0},              // __builtin_trap
      {"teqi $4, 0", SIGTRAP, 0},              // immediate forms have no code
      {"tltu $4, $5, 7", SIGFPE, 0},
      // The first trap whose condition holds is the one that trapped.
      {"teq $5, $0, 5\n addiu $6, $6, 1\n teq $4, $0, 7", SIGFPE, 2},
      {"tne $4, $0, 7\n nop\n teq $4, $0, 3", SIGTRAP, 2},
      {"addiu $6, $6, 1\n addiu $6, $6, 1\n break 7", SIGFPE, 2},
      // A reserved instruction (opcode 0x3b before R6) ends its block: SIGILL
      // at the block's last instruction (Unicorn reports no pc for it either).
      {".word 0xec000000", SIGILL, 0},
      {"addiu $6, $6, 1\n addiu $6, $6, 1\n .word 0xec000000", SIGILL, 2},
  };
  for (const ArchInfo* arch : {&mips_arch(), &mipsel_arch()}) {
    for (const auto& c : cases) {
      CAPTURE(arch->name);
      CAPTURE(c.code);
      const std::string source = dir + "/t.s", object = dir + "/t.o", binary = dir + "/t.bin";
      {
        std::ofstream out(source);
        out << ".set noreorder\n.text\n" << c.code << "\nnop\n";
      }
      const std::string output =
          run_command("mips-linux-gnu-as -mips32r2 " + std::string(arch->little_endian ? "-EL" : "-EB") + " -o " +
                      object + " " + source + " 2>&1 && mips-linux-gnu-objcopy -O binary -j .text " + object + " " +
                      binary + " 2>&1");
      std::ifstream in(binary, std::ios::binary);
      const std::vector<char> code((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      REQUIRE_MESSAGE(code.size() >= 8, "mips-linux-gnu-as failed (scripts/setup.sh installs it)\n" << output);

      uc_engine* engine = nullptr;
      REQUIRE(uc_open(arch->engine->unicorn_arch, arch->engine->unicorn_mode, &engine) == UC_ERR_OK);
      {
        auto cpu = arch->engine->make_guest_cpu(engine);
        REQUIRE(cpu.has_value());
        constexpr std::uint64_t kBase = 0x400000;
        REQUIRE(uc_mem_map(engine, kBase, 0x1000, UC_PROT_ALL) == UC_ERR_OK);
        REQUIRE(uc_mem_write(engine, kBase, code.data(), code.size()) == UC_ERR_OK);
        std::uint64_t zero = 0, one = 1;
        uc_reg_write(engine, UC_MIPS_REG_A0, &zero);
        uc_reg_write(engine, UC_MIPS_REG_A1, &one);
        struct Seen {
          GuestCpu* cpu;
          int signal = 0;
        } seen{cpu->get()};
        uc_hook hook = 0;
        auto on_interrupt = +[](uc_engine* uc, std::uint32_t number, void* user) {
          auto* state = static_cast<Seen*>(user);
          if (state->signal == 0) state->signal = state->cpu->signal_for_interrupt(number);
          uc_emu_stop(uc);
        };
        REQUIRE(uc_hook_add(engine, &hook, UC_HOOK_INTR, reinterpret_cast<void*>(on_interrupt), &seen, 1, 0) ==
                UC_ERR_OK);
        uc_emu_start(engine, kBase, kBase + code.size(), 0, 0);
        CHECK(seen.signal == c.signal);
        CHECK((*cpu)->exception_pc(0) == kBase + 4 * c.index);
        uc_hook_del(engine, hook);
      }
      uc_close(engine);
    }
  }
  std::filesystem::remove_all(dir);
}

// The o32 signal frames of arch/mips_signal.cpp in both byte orders: where
// the registers, the mask, siginfo and uc_stack go (offsets as the cross
// compilers' headers give them: sigcontext at 24 in struct sigframe, rs_uc at
// 152 in struct rt_sigframe, sc_pc 8, sc_regs 16, sc_mdhi 552, sc_mdlo 560,
// the mask 592 after the sigcontext), the handler's registers, and sigreturn
// reading an edited frame back.
TEST_CASE("Arch mips: sigframe and rt_sigframe are Linux's o32 layouts in the guest's byte order") {
  for (const ArchInfo* arch : {&mips_arch(), &mipsel_arch()}) {
    for (const bool rt : {false, true}) {
      CAPTURE(arch->name);
      CAPTURE(rt);
      REQUIRE(arch->signal_abi.sigreturn_trampoline.size() == 16);
      CHECK_FALSE(arch->signal_abi.has_sa_restorer);
      CHECK(arch->signal_abi.sa_siginfo == 8);
      uc_engine* engine = nullptr;
      REQUIRE(uc_open(arch->engine->unicorn_arch, arch->engine->unicorn_mode, &engine) == UC_ERR_OK);
      {
        auto cpu = arch->engine->make_guest_cpu(engine);
        REQUIRE(cpu.has_value());
        GuestCpu& guest = **cpu;
        CHECK(guest.has_signal_frames());
        for (int i = 1; i < 32; ++i) {
          std::uint64_t value = 0x1000u + static_cast<unsigned>(i);
          uc_reg_write(engine, UC_MIPS_REG_0 + i, &value);
        }
        std::uint64_t hi = 0xaaaa5555, lo = 0x5555aaaa;
        uc_reg_write(engine, UC_MIPS_REG_HI, &hi);
        uc_reg_write(engine, UC_MIPS_REG_LO, &lo);
        SignalFrameRequest request;
        request.guest_signal = 16;
        request.handler = 0x400100;
        request.guest_flags = rt ? 8 : 0;
        request.return_address = 0x7fff0000;
        request.saved_mask = 0x0000000300008001ull;
        request.stack_top = 0x7ff00000;
        request.saved_altstack = {0x500000, 2, 0x10000};
        request.siginfo[0] = 0x5a;
        request.resume_pc = 0x400200;
        const SignalFrame frame = guest.build_signal_frame(request);
        const std::size_t size = rt ? 784 : 632, sc = rt ? 152 + 24 : 24, mask = sc + 592;
        REQUIRE(frame.bytes.size() == size);
        CHECK(frame.address == ((0x7ff00000 - 32 - size) & ~std::uint64_t{7}));
        const FrameReader reader(frame.bytes, arch->little_endian);
        CHECK(reader.get(sc + 8, 8) == 0x400200);                   // sc_pc
        CHECK(reader.get(sc + 16, 8) == 0);                         // sc_regs[0]
        CHECK(reader.get(sc + 16 + 8 * 29, 8) == 0x1000u + 29);     // sp
        CHECK(reader.get(sc + 16 + 8 * 31, 8) == 0x1000u + 31);     // ra
        CHECK(reader.get(sc + 552, 8) == hi);
        CHECK(reader.get(sc + 560, 8) == lo);
        CHECK(reader.get(sc + 540, 4) == 1);                        // sc_used_math, as qemu-user writes it
        CHECK(reader.get(mask, 4) == 0x8001);
        CHECK(reader.get(mask + 4, 4) == 3);
        CHECK(reader.get(mask + 8, 8) == 0);
        if (rt) {
          CHECK(frame.bytes[24] == 0x5a);                           // rs_info
          CHECK(reader.get(152 + 8, 4) == 0x500000);                // uc_stack: ss_sp, ss_size, ss_flags
          CHECK(reader.get(152 + 12, 4) == 0x10000);
          CHECK(reader.get(152 + 16, 4) == 2);
        }
        // Big endian: the 32-bit value sits in the 64-bit slot's second word.
        CHECK(frame.bytes[sc + 8 + (arch->little_endian ? 2 : 5)] == 0x40);

        guest.enter_signal_handler(request, frame);
        auto reg = [&](int id) {
          std::uint64_t value = 0;
          uc_reg_read(engine, id, &value);
          return value;
        };
        CHECK(reg(UC_MIPS_REG_A0) == 16);
        CHECK(reg(UC_MIPS_REG_A1) == (rt ? frame.address + 24 : 0));
        CHECK(reg(UC_MIPS_REG_A2) == frame.address + (rt ? 152 : 24));
        CHECK(reg(UC_MIPS_REG_SP) == frame.address);
        CHECK(reg(UC_MIPS_REG_RA) == 0x7fff0000u + (rt ? 8 : 0));  // rt_sigreturn's pair, or sigreturn's
        CHECK(reg(UC_MIPS_REG_T9) == 0x400100);

        // The handler edits the frame; sigreturn reads it back from sp.
        std::vector<std::uint8_t> edited = frame.bytes;
        FrameWriter writer(edited, arch->little_endian);
        writer.put(sc + 8, 8, 0x400300);
        writer.put(sc + 16 + 8 * 16, 8, 0x12345678);
        writer.put(mask, 4, 0x4);
        REQUIRE(uc_mem_map(engine, frame.address & ~std::uint64_t{0xfff}, 0x2000, UC_PROT_ALL) == UC_ERR_OK);
        REQUIRE(uc_mem_write(engine, frame.address, edited.data(), edited.size()) == UC_ERR_OK);
        const std::optional<SignalReturn> back = guest.return_from_signal(rt);
        REQUIRE(back.has_value());
        CHECK(back->pc == 0x400300);
        CHECK(back->saved_mask == 0x0000000300000004ull);
        CHECK(back->has_altstack == rt);
        if (rt) CHECK((back->altstack.sp == 0x500000 && back->altstack.size == 0x10000 && back->altstack.flags == 2));
        CHECK(reg(UC_MIPS_REG_16) == 0x12345678);
        CHECK(reg(UC_MIPS_REG_SP) == 0x1000u + 29);
        CHECK(reg(UC_MIPS_REG_HI) == hi);
      }
      uc_close(engine);
    }
  }
  // The trampoline: li v0, 4119; syscall; li v0, 4193; syscall.
  CHECK(mips_arch().signal_abi.sigreturn_trampoline[3] == 0x17);
  CHECK(mipsel_arch().signal_abi.sigreturn_trampoline[8] == 0x61);
}

TEST_CASE("Arch mips: DWARF numbers of the saved registers are the ones GCC's CFI gives them") {
  // A function that saves $16 (s0), $fp and $31 (ra) under -fno-omit-frame-pointer:
  // GCC's .cfi_offset directives number them.
  char dir_template[] = "/tmp/tracecorn-mips-dwarf-XXXXXX";
  REQUIRE(::mkdtemp(dir_template) != nullptr);
  const std::string dir = dir_template;
  {
    std::ofstream source(dir + "/f.c");
    source << "long g(long); long f(long x) { long a = g(x); long b = g(a); return a + b + g(b); }\n";
  }
  const std::string output = run_command("mips-linux-gnu-gcc -O2 -fno-omit-frame-pointer -fasynchronous-unwind-tables "
                                         "-S -o - " + dir + "/f.c");
  run_command("rm -rf " + dir);
  const std::regex line("\\.cfi_offset (\\d+), ");
  std::vector<int> seen;
  for (auto it = std::sregex_iterator(output.begin(), output.end(), line); it != std::sregex_iterator(); ++it)
    seen.push_back(std::stoi((*it)[1]));
  std::sort(seen.begin(), seen.end());
  REQUIRE_MESSAGE(seen.size() == 3, "mips-linux-gnu-gcc gave no CFI (scripts/setup.sh installs it)\n" << output);
  for (const ArchInfo* arch : {&mips_arch(), &mipsel_arch()}) {
    CHECK(seen == std::vector<int>{arch->find_register("s0")->dwarf, arch->find_register("fp")->dwarf,
                                   arch->find_register("ra")->dwarf});
    CHECK(arch->find_register("sp")->dwarf == 29);
    CHECK(arch->find_register("hi")->dwarf == 64);  // GCC's mips_dwarf_regno: HI/LO follow the 32 FPRs
    CHECK(arch->find_register("lo")->dwarf == 65);
    CHECK(arch->find_register("pc")->dwarf == 66);  // GCC mips.h: DWARF_ALT_FRAME_RETURN_COLUMN
    CHECK(arch->syscall_abi.number_reg == arch->find_register("v0")->uc_id);
    CHECK(arch->syscall_abi.register_arguments == 4);
    CHECK(arch->syscall_abi.stack_arguments_offset == 16);
    CHECK(arch->uname_machine == "mips");
    CHECK(arch->format_ids.bintrace == nullptr);
  }
  CHECK(find_arch_for_elf(8, false, false) == &mips_arch());
  CHECK(find_arch_for_elf(8, false, true) == &mipsel_arch());
  CHECK(mips_arch().format_ids.ucir_arch == "mips");
  CHECK(mipsel_arch().format_ids.ucir_arch == "mips");  // the UCIR header's byte order fields tell them apart
}

}  // namespace tracecorn::arch
