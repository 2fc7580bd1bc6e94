// Role: THE table of the guest architectures the tests cover, one row each,
// with the per-architecture facts the tests use (the link variants their
// samples are built in, the cross toolchain, qemu's CPU, the Go port, BAP
// frames' support, write()'s number, UCIR's arch string, the byte order,
// Debian's name). The doctest files of unit_tests and of
// behaviour_tests iterate it, or filter it ("the architectures with X"), or
// name a deliberate selection of its rows (guest_architectures({...}), which
// only compiles when every name is a row). Its CMake twin, for the ctest
// entries registered per architecture, is tests/architectures.cmake; the
// unit test "Architectures: ..." (tests/support/architectures_test.cpp)
// checks that the two agree.
// Invariant: constant data (constexpr); usable from any thread.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace tracecorn::test_support {

struct GuestArchitecture {
  // tracecorn's name (arch::ArchInfo::name) and qemu-user's (qemu-<name>-static).
  std::string_view name;
  // The host's own architecture: its samples are samples/guest/<variant>/ and
  // run natively; every other one's are samples/guest-<name>/<variant>/
  // (samples/cross.cmake) and run under qemu-<name>-static.
  bool is_host;
  // The link variants its samples are built in (samples/CMakeLists.txt for
  // the host, samples/cross.cmake for the others), in build order.
  std::span<const std::string_view> sample_variants;
  // Debian's cross toolchain prefix: <gnu_triplet>-gcc, -as, -objdump.
  std::string_view gnu_triplet;
  // qemu's -cpu for the CPU Unicorn gives it; empty: qemu's default is the same.
  std::string_view qemu_cpu;
  // Go's GOARCH for it: samples/go.cmake builds into samples/go/<goarch>/.
  std::string_view goarch;
  // BAP frames (formats/bap) define it: it has a frame architecture id.
  bool has_bap_frames;
  // The number of write() in its Linux syscall ABI.
  std::uint64_t write_syscall;
  // UCIR's arch string for it (usercorn's names; formats/ucir/ucir_layout.h):
  // "mips" for both byte orders, which the header's byte order fields tell apart.
  std::string_view ucir_arch;
  // Its data is big endian (UCIR's data byte order field is 1).
  bool big_endian;
  // Debian's name for it (dpkg --print-architecture): busybox-static:<debian_arch>
  // is what scripts/fetch_guest_busybox.sh fetches.
  std::string_view debian_arch;

  bool has_variant(std::string_view variant) const {
    return std::ranges::find(sample_variants, variant) != sample_variants.end();
  }
  // <gnu_triplet>-<tool>: "aarch64-linux-gnu-gcc".
  std::string cross_tool(std::string_view tool) const {
    return std::string(gnu_triplet) + "-" + std::string(tool);
  }
};

namespace sample_variant_lists {
inline constexpr std::string_view kHost[] = {"static", "static-pie", "dynamic"};
// Debian 12's riscv64, armhf and mips glibc have no rcrt1.o: no static-pie there.
inline constexpr std::string_view kStaticAndStaticPie[] = {"static", "static-pie"};
inline constexpr std::string_view kStaticOnly[] = {"static"};
// arm: Thumb-2 (gcc's default) and the program's own code in ARM (-marm).
inline constexpr std::string_view kStaticAndStaticMarm[] = {"static", "static-marm"};
}  // namespace sample_variant_lists

// write(): 1 on x86-64; asm-generic/unistd.h for aarch64 and riscv64; the arm
// EABI and i386 tables number it 4; mips o32's table starts at 4000
// (arch/mips/include/uapi/asm/unistd.h), in both byte orders.
// The order is samples/cross.cmake's (TRACECORN_CROSS_ARCHS), after the host.
inline constexpr std::array<GuestArchitecture, 7> kGuestArchitectures = {{
    {"x86_64", true, sample_variant_lists::kHost, "x86_64-linux-gnu", "", "amd64", true, 1, "x86_64", false, "amd64"},
    {"aarch64", false, sample_variant_lists::kStaticAndStaticPie, "aarch64-linux-gnu", "", "arm64", true, 64,
     "arm64", false, "arm64"},
    {"riscv64", false, sample_variant_lists::kStaticOnly, "riscv64-linux-gnu", "", "riscv64", false, 64,
     "riscv64", false, "riscv64"},
    // qemu's default "max" CPU is an ARMv8 that reports AT_PLATFORM v8l; Unicorn's is an ARMv7.
    {"arm", false, sample_variant_lists::kStaticAndStaticMarm, "arm-linux-gnueabihf", "cortex-a15", "arm", true, 4,
     "arm", false, "armhf"},
    // Debian's i686 compiler; the architecture is named as qemu-i386-static and tracecorn name it.
    {"i386", false, sample_variant_lists::kStaticAndStaticPie, "i686-linux-gnu", "", "386", true, 4,
     "x86", false, "i386"},
    // mips o32, big and little endian; Unicorn 2.0.1's default mips32 CPU is a 74Kf, qemu's a 24Kf.
    {"mips", false, sample_variant_lists::kStaticOnly, "mips-linux-gnu", "74Kf", "mips", true, 4004,
     "mips", true, "mips"},
    {"mipsel", false, sample_variant_lists::kStaticOnly, "mipsel-linux-gnu", "74Kf", "mipsle", true, 4004,
     "mips", false, "mipsel"},
}};

// The row named `name`, or nullptr.
constexpr const GuestArchitecture* find_guest_architecture(std::string_view name) {
  for (const GuestArchitecture& architecture : kGuestArchitectures)
    if (architecture.name == name) return &architecture;
  return nullptr;
}

// The row named `name`; a name that is no row does not compile.
consteval const GuestArchitecture& guest_architecture(std::string_view name) {
  const GuestArchitecture* found = find_guest_architecture(name);
  if (!found) throw "no row of that name in kGuestArchitectures";
  return *found;
}

// A deliberate selection of rows, by name, in the order given (e.g. the
// architectures a slow test samples); a name that is no row does not compile.
template <std::size_t count>
consteval std::array<const GuestArchitecture*, count> guest_architectures(const std::string_view (&names)[count]) {
  std::array<const GuestArchitecture*, count> selected{};
  for (std::size_t i = 0; i < count; ++i) selected[i] = &guest_architecture(names[i]);
  return selected;
}

// The rows `predicate` keeps, in table order: guest_architectures_where<&is_cross>().
template <auto predicate>
consteval auto guest_architectures_where() {
  constexpr auto count = static_cast<std::size_t>(std::ranges::count_if(kGuestArchitectures, predicate));
  std::array<const GuestArchitecture*, count> selected{};
  std::size_t next = 0;
  for (const GuestArchitecture& architecture : kGuestArchitectures)
    if (predicate(architecture)) selected[next++] = &architecture;
  return selected;
}

constexpr bool is_cross(const GuestArchitecture& architecture) { return !architecture.is_host; }

// The host's row (x86_64).
consteval const GuestArchitecture& host_architecture() {
  for (const GuestArchitecture& architecture : kGuestArchitectures)
    if (architecture.is_host) return architecture;
  throw "kGuestArchitectures has no host row";
}

// Every other architecture than the host's (the samples of samples/cross.cmake).
inline constexpr auto kCrossArchitectures = guest_architectures_where<&is_cross>();

// One architecture's samples in one link variant: a folder of samples.
struct SampleBuild {
  const GuestArchitecture* architecture;
  std::string_view variant;
};

// Every (architecture, variant) pair of the table that `predicate` keeps, in
// table order: sample_builds_where<&any_sample_build>().
template <auto predicate>
consteval auto sample_builds_where() {
  constexpr std::size_t count = [] {
    std::size_t n = 0;
    for (const GuestArchitecture& architecture : kGuestArchitectures)
      for (const std::string_view variant : architecture.sample_variants) n += predicate(SampleBuild{&architecture, variant});
    return n;
  }();
  std::array<SampleBuild, count> selected{};
  std::size_t next = 0;
  for (const GuestArchitecture& architecture : kGuestArchitectures)
    for (const std::string_view variant : architecture.sample_variants)
      if (predicate(SampleBuild{&architecture, variant})) selected[next++] = SampleBuild{&architecture, variant};
  return selected;
}

constexpr bool any_sample_build(const SampleBuild&) { return true; }

// A per-build test case's name: "PREFIX: static" for the host's builds,
// "PREFIX: aarch64 static" for the others' (the ctest entries filter on it).
inline std::string sample_build_case_name(std::string_view prefix, const SampleBuild& build) {
  std::string name = std::string(prefix) + ": ";
  if (!build.architecture->is_host) name += std::string(build.architecture->name) + " ";
  return name + std::string(build.variant);
}
constexpr bool is_cross_sample_build(const SampleBuild& build) { return !build.architecture->is_host; }

// The strace comparison (tests/behaviour/strace_test.cpp) runs every variant
// but static-pie: static and dynamic, the loader spectrum's two ends, and
// arm's static-marm (ARM code as well as Thumb-2). tests/architectures.cmake's
// tracecorn_test_strace_compares says the same for the ctest entries.
constexpr bool is_strace_compared(const SampleBuild& build) { return build.variant != "static-pie"; }

}  // namespace tracecorn::test_support
