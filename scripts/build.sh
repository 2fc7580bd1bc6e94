#!/usr/bin/env bash
# Role: configure and build tracecorn (and its samples and tests) into build/.
# Shared by demo.sh and test.sh. Warnings are errors here, so a warning fails CI.
# The C++ code is built with -O2 -g1: line tables (backtraces with file and
# line) without the full debug information, which costs a third of the
# compile time; the guest samples (C) keep CMake's -O2 -g, which the stack
# comparisons with gdb read. For full C++ debug information:
#   TRACECORN_CXX_FLAGS='-O2 -g -DNDEBUG' bash scripts/build.sh
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${TRACECORN_BUILD_DIR:-build}
cxx_flags=${TRACECORN_CXX_FLAGS:--O2 -g1 -DNDEBUG}
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTRACECORN_WERROR=ON \
  "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=$cxx_flags" >/dev/null
cmake --build "$build_dir" -j "$(nproc)" "$@"
