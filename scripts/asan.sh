#!/usr/bin/env bash
# Role: builds tracecorn with AddressSanitizer and UndefinedBehaviorSanitizer
# and runs the test suite under them. Configures build-asan/ with g++
# (-DTRACECORN_SANITIZE=address,undefined: cmake/tracecorn_sanitizers.cmake adds
# -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
# to every host target; the guest samples stay unsanitized), at -O1 -g, builds
# everything (library, CLI, unit and behaviour tests, samples) and runs ctest
# with ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 and
# UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1: any report fails the run.
# Left out, to keep CI bounded (2 cores): the "*long runs*" test cases and the
# *_long_runs(.<arch>.<variant>) ctests (the same code on longer samples); the formats' round trips
# of the other architectures' samples, unit_tests.ucir_cross and unit_tests.bap_cross (the same
# writers and readers as the host's round trips, on other register tables: the behaviour tests and
# the unit tests of each architecture's recorder still run here); install_consumer and
# fuzz_harness_clang_consumer (their consumers link the installed, sanitized
# libraries without the sanitizer runtime). The behaviour tests' time limits
# are multiplied by 4 (TRACECORN_TEST_TIMEOUT_SCALE) and the others' default is
# 2400 s: the sanitized recorder is several times slower (the unit tests alone
# take about 10 minutes on 2 cores).
# Leaks inside Debian's Unicorn 2.0.1 itself are suppressed
# (scripts/lsan.supp); ours are not.
# Run by hand: CI runs the bounded scripts/ci_sanitized.sh instead (this whole
# pass, a third build of the tree, does not fit CI's 90 minutes on 2 cores).
# Usage: scripts/asan.sh [ctest options...]   e.g. scripts/asan.sh -R unit_tests
# Environment: ASAN_BUILD_DIR (default build-asan).
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
build_dir=${ASAN_BUILD_DIR:-build-asan}
CC=gcc CXX=g++ cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g" -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g" \
  -DTRACECORN_SANITIZE=address,undefined -DTRACECORN_TEST_TIMEOUT_SCALE=4 >/dev/null
cmake --build "$build_dir" -j "$(nproc)"
for busybox_arch in arm64 armhf i386 mipsel; do  # the other architectures' busybox tests: test.sh's copy, or fetched
  if [[ -x build/guest-busybox/$busybox_arch/busybox && ! -e $build_dir/guest-busybox/$busybox_arch/busybox ]]; then
    mkdir -p "$build_dir/guest-busybox/$busybox_arch"
    cp build/guest-busybox/$busybox_arch/busybox "$build_dir/guest-busybox/$busybox_arch/busybox"
  else
    bash scripts/fetch_guest_busybox.sh "$busybox_arch" "$build_dir/guest-busybox" >/dev/null
  fi
done
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:${ASAN_OPTIONS:-}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:${UBSAN_OPTIONS:-}"
export LSAN_OPTIONS="suppressions=$PWD/scripts/lsan.supp:print_suppressions=0:${LSAN_OPTIONS:-}"
cd "$build_dir"
# unit_tests' own ctest entry already excludes "*long runs*" cases.
bash "$repo/scripts/ctest_summary.sh" --output-on-failure -j "$(nproc)" --timeout 2400 -E '(_long_runs($|[.])|^unit_tests[.](ucir|bap)_cross$|^install_consumer$|^fuzz_harness_clang_consumer$)' "$@"
