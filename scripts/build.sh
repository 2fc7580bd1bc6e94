#!/usr/bin/env bash
# Role: configure and build tracecorn (and its samples and tests) into build/.
# Shared by demo.sh and test.sh. Warnings are errors here, so a warning fails CI.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${TRACECORN_BUILD_DIR:-build}
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTRACECORN_WERROR=ON >/dev/null
cmake --build "$build_dir" -j "$(nproc)" "$@"
