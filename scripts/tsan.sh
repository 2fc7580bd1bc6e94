#!/usr/bin/env bash
# Role: runs the SpscRing unit tests under ThreadSanitizer. Configures
# tests/recorder/ring/tsan (a standalone project: the ring, its tests and
# doctest's main, nothing else) with clang into build-tsan/, builds
# ring_tsan_tests and runs it; any race report fails the run (halt_on_error).
# Called by scripts/test.sh (CI); takes well under a minute.
# Usage: scripts/tsan.sh [doctest options...]   e.g. scripts/tsan.sh -tc='*stress*'
# Environment: TSAN_BUILD_DIR (default build-tsan), RING_TSAN_STRESS_RECORDS
# (records in the stress test, default 1000000).
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${TSAN_BUILD_DIR:-build-tsan}
CC=clang CXX=clang++ cmake -S tests/recorder/ring/tsan -B "$build_dir" -G Ninja \
  -DCMAKE_BUILD_TYPE= -DRING_TSAN_STRESS_RECORDS="${RING_TSAN_STRESS_RECORDS:-1000000}" >/dev/null
cmake --build "$build_dir" -j "$(nproc)" --target ring_tsan_tests
TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 ${TSAN_OPTIONS:-}" \
  "$build_dir/ring_tsan_tests" "$@"
