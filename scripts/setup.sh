#!/usr/bin/env bash
# Role: install what tracecorn needs to build and test, from Debian 12 packages.
# Invariant: idempotent; when every package is already installed it does nothing
# (no apt-get update, no network).
set -euo pipefail

packages=(
  # build
  build-essential cmake ninja-build pkg-config clang
  # clang's libFuzzer runtime (-fsanitize=fuzzer: samples/embed/fuzz_harness.cpp)
  libclang-rt-14-dev
  # libraries tracecorn links against
  libunicorn-dev libcapstone-dev libprotobuf-dev protobuf-compiler libzstd-dev
  libsnappy-dev  # reading usercorn's own UCIR files (snappy framed)
  nettle-dev     # MD5 of the traced binary in BAP frames' meta frame
  doctest-dev libcli11-dev libfmt-dev
  # the Python package (recorder/python): pybind11 for Debian's python3, NumPy for its columns, pytest for its tests
  pybind11-dev python3-dev python3-numpy python3-pytest
  # references the tests compare against (nobody here wrote them)
  busybox-static qemu-user-static gdb binutils coreutils
  strace  # the process tree of a native run (tests/behaviour/processes_test.cpp)
  # other guest architectures: cross compilers for the samples (samples/cross.cmake)
  gcc-aarch64-linux-gnu libc6-dev-arm64-cross gcc-riscv64-linux-gnu libc6-dev-riscv64-cross
  gcc-arm-linux-gnueabihf libc6-dev-armhf-cross
  gcc-i686-linux-gnu libc6-dev-i386-cross
  gcc-mips-linux-gnu libc6-dev-mips-cross gcc-mipsel-linux-gnu libc6-dev-mipsel-cross
  gdb-multiarch  # the aarch64 fault pc against qemu-aarch64-static -g
  lldb  # LLDB against tracecorn debug, and natively (tests/recorder/debug/check_lldb_session.py)
  golang-go  # the Go samples for every architecture (samples/go.cmake): the Go runtime as a guest
  libllvm14  # riscv64 disassembly in text traces (dlopen, formats/text/llvm_disassembler.h)
  python3-protobuf zstd  # an independent decoder of BAP frames; the zstd CLI
  xxd  # the replay CLI test writes damaged traces back from hex
  bsdutils  # script(1): the progress test runs commands on a pseudo-terminal
  dpkg-dev file  # cpack -G DEB: dpkg-shlibdeps finds the package's Depends, CPack runs file(1) on what it packs
  # peers that bench/peers_bench.sh times (not needed to build or test)
  python3-unicorn valgrind
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q '^install ok installed$'; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

echo "setup: installing ${missing[*]}" >&2
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
