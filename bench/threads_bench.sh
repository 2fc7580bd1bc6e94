#!/usr/bin/env bash
# Role: what guest threads cost under tracecorn. Runs bench/thread_work (the
# same sum over ITERATIONS, done by 1, 2, 4 and 8 guest threads) natively,
# under `tracecorn run` and under `tracecorn record --level blocks --format
# null`, and prints each run's wall time, its guest instruction count (from
# --stats) and its cost per instruction against the single-threaded run of the
# same mode: the ratio is the scheduler's price (quantum switches, futex waits
# on the contended mutex, one register context per thread).
# Not part of ctest; run by hand:
#   bench/threads_bench.sh [TRACECORN_BINARY]   default build/recorder/cli/tracecorn
# Environment: ITERATIONS (default 20000000), THREAD_WORK (default
# build/bench/thread_work).
# Invariants: every run must print the same sum, else the script exits 1 after
# the table; each cell runs once, wall clock; the machine and commit are
# printed beside the figures, as bench/README.md asks.
set -euo pipefail

repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
tracecorn=${1:-$repo_root/build/recorder/cli/tracecorn}
thread_work=${THREAD_WORK:-$repo_root/build/bench/thread_work}
iterations=${ITERATIONS:-20000000}
for tool in "$tracecorn" "$thread_work"; do
  if [ ! -x "$tool" ]; then
    echo "threads_bench: $tool is missing or not executable" >&2
    exit 2
  fi
done

workdir=$(mktemp -d "${TMPDIR:-/tmp}/tracecorn-threads-bench-XXXXXX")
trap 'rm -rf "$workdir"' EXIT

# Runs "$@" once; sets seconds, sum (the program's "sum" line) and
# instructions (tracecorn's --stats line, or "n/a").
time_one() {
  local start end
  start=$EPOCHREALTIME
  "$@" >"$workdir/out" 2>"$workdir/err"
  end=$EPOCHREALTIME
  seconds=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.3f", b - a }')
  sum=$(cat "$workdir/out")
  instructions=$(sed -n 's/^tracecorn: \([0-9]*\) instructions.*/\1/p' "$workdir/err")
  instructions=${instructions:-n/a}
}

reference_sum=""
mismatch=0
check_sum() {
  if [ -z "$reference_sum" ]; then reference_sum=$sum; fi
  if [ "$sum" != "$reference_sum" ]; then
    echo "threads_bench: $1 printed '$sum', expected '$reference_sum'" >&2
    mismatch=1
  fi
}

echo "machine: $(nproc) cores, $(sed -n 's/^model name\t*: //p' /proc/cpuinfo | head -1), $(uname -r)"
echo "commit:  $(git -C "$repo_root" rev-parse --short HEAD 2>/dev/null || echo unknown)"
echo "workload: thread_work THREADS $iterations"
printf '%-8s %-8s %10s %14s %12s %10s\n' mode threads seconds instructions ns/instr vs_1_thread
for mode in native run record_blocks; do
  base_ns=""
  for threads in 1 2 4 8; do
    case $mode in
      native) time_one "$thread_work" "$threads" "$iterations" ;;
      run) time_one "$tracecorn" run --stats -- "$thread_work" "$threads" "$iterations" ;;
      record_blocks) time_one "$tracecorn" record --stats --level blocks --format null -- \
        "$thread_work" "$threads" "$iterations" ;;
    esac
    check_sum "$mode with $threads threads"
    if [ "$instructions" = n/a ]; then
      printf '%-8s %-8s %10s %14s %12s %10s\n' "$mode" "$threads" "$seconds" n/a n/a n/a
      continue
    fi
    ns=$(awk -v s="$seconds" -v n="$instructions" 'BEGIN { printf "%.3f", s * 1e9 / n }')
    base_ns=${base_ns:-$ns}
    ratio=$(awk -v a="$ns" -v b="$base_ns" 'BEGIN { printf "%.2f", a / b }')
    printf '%-8s %-8s %10s %14s %12s %10s\n' "$mode" "$threads" "$seconds" "$instructions" "$ns" "$ratio"
  done
done
exit "$mismatch"
