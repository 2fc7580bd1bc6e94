#!/usr/bin/env bash
# Role: trace size per instruction of the binary trace formats on the
# busybox sha256sum workload of run_bench.sh (a smaller input: a full-level
# trace of the 16 MiB run would be over 100 GB), at --level full, plain and
# zstd: bytes of the file / instructions recorded (tracecorn --stats).
# Not part of ctest; run by hand:
#   bench/trace_size_bench.sh [TRACECORN_BINARY]     default build/recorder/cli/tracecorn
# Environment: BUSYBOX (default /bin/busybox), BENCH_KIB (input size, default 64),
# FORMATS (default "frames ucir").
# Invariants: the input is the same deterministic line as run_bench.sh's; every
# recorded run must print the digest coreutils' sha256sum gives, else exit 1;
# the machine and the commit are printed beside the figures (bench/README.md).
set -euo pipefail

repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$repo_root/bench/bench_common.sh"
tracecorn=${1:-$repo_root/build/recorder/cli/tracecorn}
busybox=${BUSYBOX:-/bin/busybox}
kib=${BENCH_KIB:-64}
formats=${FORMATS:-frames ucir}

workdir=$(mktemp -d "${TMPDIR:-/tmp}/tracecorn-size-XXXXXX")
trap 'rm -rf "$workdir"' EXIT
input=$workdir/input.bin
bench_input "$input" $((kib * 1024))
expected=$(sha256sum "$input" | cut -d' ' -f1)
echo "workload: busybox sha256sum of a ${kib} KiB file, tracecorn record --level full"
echo "machine:  $(nproc) cores, $(bench_cpu), kernel $(uname -r)"
echo "commit:   $(bench_commit "$repo_root")"
printf '%-8s %-6s %14s %14s %10s %9s\n' format comp instructions bytes bytes/insn seconds
status=0
for format in $formats; do
  for compress in none zstd; do
    trace=$workdir/trace.$format.$compress
    start=$EPOCHREALTIME
    out=$("$tracecorn" record --stats --format "$format" --level full --compress "$compress" -o "$trace" -- \
      "$busybox" sha256sum "$input" 2>"$workdir/stderr")
    end=$EPOCHREALTIME
    if [ "${out%% *}" != "$expected" ]; then
      echo "trace_size_bench: $format/$compress printed '${out%% *}', expected $expected" >&2
      status=1
    fi
    instructions=$(sed -n 's/^tracecorn: \([0-9]*\) instructions,.*/\1/p' "$workdir/stderr")
    bytes=$(stat -c %s "$trace")
    printf '%-8s %-6s %14s %14s %10s %9s\n' "$format" "$compress" "$instructions" "$bytes" \
      "$(awk -v b="$bytes" -v i="$instructions" 'BEGIN { printf "%.1f", b / i }')" \
      "$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.2f", b - a }')"
    rm -f "$trace"
  done
done
exit $status
