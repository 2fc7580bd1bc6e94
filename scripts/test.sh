#!/usr/bin/env bash
# Role: the README's second command, and what CI runs (.ci/run). Installs what is
# missing, builds with g++ (warnings are errors), builds the library, the CLI,
# the unit tests and the fuzzers again with clang 14 (warnings are errors) under
# AddressSanitizer and UBSan, runs the fuzzers briefly, the ring's and the
# recorder's threads under ThreadSanitizer, the whole suite through ctest, then
# the sanitized stage (scripts/ci_sanitized.sh: the unit tests and a selection
# of behaviour tests under the clang build's sanitizers). First of all,
# scripts/check_tree.sh: no stray large file, no path outside the repository;
# then scripts/check_layering.sh: formats and the unwinder without Unicorn or
# Capstone, nothing below the CLI including it, no cycle between folders.
# The whole suite under the sanitizers is scripts/asan.sh, run by hand: on CI's
# 2 cores a third build of the tree and the suite under ASan took past the 90
# minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
# Each stage's wall time, printed again at the end (whatever the exit status),
# so that the tail of a long CI log says where the time went.
stage_times=""
stage_started=$SECONDS
stage_done() {
  stage_times+="  $1: $((SECONDS - stage_started)) s"$'\n'
  echo "[test.sh] $1 took $((SECONDS - stage_started)) s (${SECONDS} s in all)" >&2
  stage_started=$SECONDS
}
trap 'printf "[test.sh] stages (%s s in all):\n%s" "$SECONDS" "$stage_times" >&2' EXIT
bash scripts/check_tree.sh
bash scripts/check_layering.sh
bash scripts/setup.sh
bash scripts/build.sh
stage_done "setup and g++ build"
bash scripts/fetch_guest_busybox.sh arm64 build/guest-busybox >/dev/null  # Debian's busybox for the aarch64
bash scripts/fetch_guest_busybox.sh armhf build/guest-busybox >/dev/null  # and arm behaviour tests
bash scripts/fetch_guest_busybox.sh i386 build/guest-busybox >/dev/null   # and i386 behaviour tests
bash scripts/fetch_guest_busybox.sh mipsel build/guest-busybox >/dev/null # and mipsel behaviour tests
# clang 14, sanitized: the library, the CLI, the unit tests and the fuzzers (the
# behaviour tests build once, with g++, and drive either CLI). File by file, not
# in unity batches: that checks that each file includes what it uses.
CC=clang CXX=clang++ cmake -S . -B build-clang -G Ninja -DTRACECORN_WERROR=ON -DTRACECORN_UNITY_BUILD=OFF \
  -DTRACECORN_SANITIZE=address,undefined -DTRACECORN_TEST_TIMEOUT_SCALE=4 >/dev/null
cmake --build build-clang -j "$(nproc)" --target tracecorn unit_tests ucir_reader_fuzzer bintrace_reader_fuzzer \
  bap_reader_fuzzer unwind_fuzzer ehabi_fuzzer elf_loader_fuzzer bintrace_spool_fuzzer riscv64_decoder_fuzzer \
  prologue_fuzzer gdb_session_fuzzer trace_index_fuzzer
stage_done "clang build (ASan+UBSan)"
# The libFuzzer targets (the UCIR, binary trace and BAP frames readers; the
# unwinder's SFrame, CFI, EHABI and DW_OP parsers; the ELF parser and loader;
# the binary trace's events spool; the riscv64 decoder; the prologue analysers; the debug
# server's session; the saved trace index; clang only), each for a bounded number of runs.
(cd build-clang && ctest --output-on-failure -R "_fuzzer_smoke$")
stage_done "fuzzer smoke runs"
bash scripts/tsan.sh  # the SPSC ring's tests under ThreadSanitizer (clang)
bash scripts/tsan_recorder.sh  # the recorder's and C API's drain-thread tests under ThreadSanitizer (clang)
stage_done "ThreadSanitizer builds and tests"
(cd build && bash ../scripts/ctest_summary.sh --output-on-failure -j "$(nproc)" --timeout 300)
stage_done "the suite (ctest)"
bash scripts/ci_sanitized.sh  # unit and behaviour tests under AddressSanitizer and UBSan
stage_done "the sanitized tests"
