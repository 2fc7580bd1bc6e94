#!/usr/bin/env bash
# Role: CI's sanitized stage (called by scripts/test.sh after the ordinary
# suite), bounded for CI's 2 cores and 90 minutes. It builds nothing: it runs
# under AddressSanitizer and UBSan the clang build test.sh has already made
# with -DTRACECORN_SANITIZE=address,undefined (build-clang/: the library, the
# CLI, the unit tests and the fuzzers), where scripts/asan.sh would build the
# whole tree a third time:
#   - in build-clang, with ctest: unit_tests (every unit test but the formats'
#     sample round trips and the long runs: the readers' and parsers' Malicious
#     cases, the emulated kernel, signal frames, replay) and mutated_traces
#     (seeded damaged traces through dump, stat, replay, convert, the exports);
#   - the g++ build's behaviour_tests with TRACECORN_BIN pointing at the
#     sanitized CLI, on the test cases that reach the most of the emulated Linux
#     and the recorder: every x86-64 sample (signals, threads, processes, exec,
#     faults, hostile thread syscalls) against the native run, the static
#     samples of every other architecture against qemu (their syscall tables
#     and signal frames; i386's compat32 calls), Python's threads and xz -T2,
#     every record test, every process-tree test (pipelines, make, asyncio,
#     each process's trace and its replay), a thread schedule recorded twice,
#     the CLI's errors and the interrupted recordings. Two lanes, one per core.
# Any sanitizer report fails the run (abort_on_error, halt_on_error); leaks in
# Debian's Unicorn are suppressed (scripts/lsan.supp), ours are not.
# The whole suite under the sanitizers (g++, every ctest) is scripts/asan.sh,
# run by hand.
# Usage: scripts/ci_sanitized.sh   (after scripts/test.sh's builds)
# Environment: BUILD_DIR (default build), SANITIZED_BUILD_DIR (default build-clang).
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
build_dir=${BUILD_DIR:-build}
sanitized_dir=${SANITIZED_BUILD_DIR:-build-clang}
sanitized_cli=$repo/$sanitized_dir/recorder/cli/tracecorn
behaviour_tests=$repo/$build_dir/tests/behaviour/behaviour_tests
for needed in "$sanitized_cli" "$behaviour_tests"; do
  [[ -x $needed ]] || { echo "ci_sanitized: $needed is missing: run scripts/test.sh's builds first" >&2; exit 2; }
done
if ! grep -q '^TRACECORN_SANITIZE:STRING=address,undefined$' "$sanitized_dir/CMakeCache.txt"; then
  echo "ci_sanitized: $sanitized_dir is not configured with -DTRACECORN_SANITIZE=address,undefined" >&2
  exit 2
fi
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:${ASAN_OPTIONS:-}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:${UBSAN_OPTIONS:-}"
export LSAN_OPTIONS="suppressions=$repo/scripts/lsan.supp:print_suppressions=0:${LSAN_OPTIONS:-}"

(cd "$sanitized_dir" && bash "$repo/scripts/ctest_summary.sh" --output-on-failure -j "$(nproc)" \
  -R '^(unit_tests|mutated_traces)$')

# The behaviour lanes: doctest filters (a comma separates cases). Each lane's
# output goes to its own log, printed whole when the lane fails; a lane still
# running after 25 minutes is killed (a hang must not eat CI's budget).
lanes=(
  "Samples: static,Samples: aarch64 static,Samples: arm static,Samples: riscv64 static,Samples: mips static,Debian: python3 threads and a thread pool,Debian: xz -T2 and zstd -T2 compress with worker threads"
  "Samples: i386 static,Record: *,Processes: *,Threads: *,Survive: SIGINT and SIGTERM finish every format*,Cli: *"
)
logs=$(mktemp -d "${TMPDIR:-/tmp}/tracecorn-ci-sanitized-XXXXXX")
trap 'rm -rf "$logs"' EXIT
pids=()
for index in "${!lanes[@]}"; do
  TRACECORN_BIN=$sanitized_cli TRACECORN_BEHAVIOUR_TIMEOUT=240 timeout --signal=KILL 1500 \
    "$behaviour_tests" --no-colors=true --no-version=true "--test-case=${lanes[$index]}" \
    >"$logs/lane$index.log" 2>&1 &
  pids+=($!)
done
failed=0
for index in "${!pids[@]}"; do
  if wait "${pids[$index]}"; then
    echo "ci_sanitized: behaviour lane $index passed: $(grep -a -E '^\[doctest\] (test cases|assertions):' "$logs/lane$index.log" | tr '\n' ' ')"
  else
    echo "ci_sanitized: behaviour lane $index (${lanes[$index]}) failed:" >&2
    cat "$logs/lane$index.log" >&2
    failed=1
  fi
done
exit "$failed"
