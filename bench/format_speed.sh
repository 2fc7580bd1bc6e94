#!/usr/bin/env bash
# Role: what recording into each format costs, as a ratio against
# `tracecorn run` measured in the same run: busybox sha256sum of a
# deterministic input (run_bench.sh's line), recorded at each level into
# each format, plain and zstd, with zstd's workers at --jobs 0 (compression
# on the drain thread) and at the default (the cores but one at regs and
# full, none below). One run per row, wall clock; the file's size beside it.
# The `run` row, a fraction of a second that moved from 0.13 to 0.30 s
# between runs of this script, is the fastest of 5 runs (so the ratios err
# low, never high).
# Not part of ctest; run by hand:
#   bench/format_speed.sh [TRACECORN_BINARY]     default build/recorder/cli/tracecorn
# Environment: BUSYBOX (default /bin/busybox), BENCH_KIB (input size, default
# 1024), ROWS (a subset of the rows below, as "level:format:compress:jobs"
# words; jobs "default" leaves --jobs out).
# Invariants: every run must print the digest coreutils' sha256sum gives,
# else the script exits 1; the machine and the commit are printed beside the
# figures (bench/README.md); the traces are removed as soon as measured
# (a full-level plain trace of 1 MiB would be several GB, so full is zstd only).
set -euo pipefail

repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$repo_root/bench/bench_common.sh"
tracecorn=${1:-$repo_root/build/recorder/cli/tracecorn}
busybox=${BUSYBOX:-/bin/busybox}
kib=${BENCH_KIB:-1024}
default_rows="blocks:null:none:- blocks:ucir:none:- blocks:ucir:zstd:0 blocks:ucir:zstd:default
mem:null:none:- mem:ucir:zstd:0 mem:ucir:zstd:default
full:null:none:- full:ucir:zstd:0 full:ucir:zstd:default full:bintrace:zstd:0 full:bintrace:zstd:default
full:frames:zstd:0 full:frames:zstd:default"
rows=${ROWS:-$default_rows}

workdir=$(mktemp -d "${TMPDIR:-/tmp}/tracecorn-format-speed-XXXXXX")
trap 'rm -rf "$workdir"' EXIT
input=$workdir/input.bin
bench_input "$input" $((kib * 1024))
expected=$(sha256sum "$input" | cut -d' ' -f1)

echo "workload: busybox sha256sum of a ${kib} KiB file"
echo "machine:  $(nproc) cores, $(bench_cpu), kernel $(uname -r)"
echo "commit:   $(bench_commit "$repo_root")"

status=0
# Runs "$@" (a tracecorn command line ending in the workload), checks the
# digest, prints the wall-clock seconds.
timed() {
  local start end out
  start=$EPOCHREALTIME
  out=$("$@" "$busybox" sha256sum "$input" 2>"$workdir/stderr") || true
  end=$EPOCHREALTIME
  if [ "${out%% *}" != "$expected" ]; then
    echo "format_speed: '$*' printed '${out%% *}', expected $expected; stderr: $(head -c 300 "$workdir/stderr")" >&2
    status=1
  fi
  awk -v a="$start" -v b="$end" 'BEGIN { printf "%.2f", b - a }'
}

run_seconds=$(timed "$tracecorn" run --)
for _ in 1 2 3 4; do
  again=$(timed "$tracecorn" run --)
  run_seconds=$(awk -v a="$run_seconds" -v b="$again" 'BEGIN { print (b < a ? b : a) }')
done
printf '%-6s %-9s %-5s %-7s %9s %9s %14s\n' level format comp jobs seconds "run/time" bytes
printf '%-6s %-9s %-5s %-7s %9s %9s %14s\n' run - - - "$run_seconds" 1 -
for row in $rows; do
  IFS=: read -r level format compress jobs <<<"$row"
  trace=$workdir/trace
  args=(record --level "$level" --format "$format" -o "$trace")
  [ "$compress" = zstd ] && args+=(--compress zstd)
  [ "$jobs" != "-" ] && [ "$jobs" != default ] && args+=(--jobs "$jobs")
  seconds=$(timed "$tracecorn" "${args[@]}" --)
  bytes=-
  [ -f "$trace" ] && bytes=$(stat -c %s "$trace")
  rm -f "$trace"
  printf '%-6s %-9s %-5s %-7s %9s %9s %14s\n' "$level" "$format" "$compress" "$jobs" "$seconds" \
    "$(awk -v r="$run_seconds" -v s="$seconds" 'BEGIN { printf "%.3f", r / s }')" "$bytes"
done
exit $status
