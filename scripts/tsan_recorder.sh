#!/usr/bin/env bash
# Role: the recorder's tests that start its drain thread, under ThreadSanitizer
# (scripts/tsan.sh covers the SPSC ring alone). Configures build-tsan-recorder/
# with clang and -DTRACECORN_SANITIZE=thread (cmake/tracecorn_sanitizers.cmake:
# every host target, not the guest samples), builds unit_tests and runs the
# recorder core tests (every level, syscalls, flight recorder dump, a sink that
# fails), the C API's (attach, start, stop, finish, flight recorder dump),
# reading a trace ahead on a thread of its own (recorder/replay/read_ahead.h)
# and BAP frames encoded on several threads (formats/bap/bap_writer.h, on
# formats/common/ordered_jobs.h), with halt_on_error: any race report fails
# the run.
# Called by scripts/test.sh (CI). The tests take about 15 s here; the build
# (clang, 321 steps for unit_tests and the samples) about 16 min on the shared
# 2-core machine under a load of 15, a few minutes on an idle one.
# Usage: scripts/tsan_recorder.sh [doctest options...]
# Environment: TSAN_RECORDER_BUILD_DIR (default build-tsan-recorder).
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${TSAN_RECORDER_BUILD_DIR:-build-tsan-recorder}
CC=clang CXX=clang++ cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g" -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g" \
  -DTRACECORN_SANITIZE=thread >/dev/null
cmake --build "$build_dir" -j "$(nproc)" --target unit_tests guest_samples
TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 ${TSAN_OPTIONS:-}" \
  "$build_dir/tests/unit_tests" "-tc=Recorder:*,CAPI:*,Read ahead:*,BAP frames: encoder threads*,OrderedJobs:*" "-tce=*long runs*" "$@"
