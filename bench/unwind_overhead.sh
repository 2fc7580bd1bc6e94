#!/usr/bin/env bash
# Role: the recording overhead of call stacks (issue 7): times
# `tracecorn record --format null` on Debian's static busybox with
# --stacks none and with --stacks auto (the default), best of N runs each,
# and prints the syscall count, the wall-clock difference, and the time spent
# unwinding as tracecorn's own --stats measures it (a clock around each stack
# walk: the figure that does not drown in the machine's noise). Run by hand:
#   bash bench/unwind_overhead.sh [RUNS]        (default 5)
# Needs a built tree (build/recorder/cli/tracecorn), /bin/busybox, bash 5, awk.
# Invariant: both configurations run the same command lines in the same
# order, interleaved, so that machine load hits them alike.
set -euo pipefail
cd "$(dirname "$0")/.."
tracecorn=${TRACECORN_BIN:-build/recorder/cli/tracecorn}
busybox=${BUSYBOX:-/bin/busybox}
runs=${1:-5}
echo "# unwind_overhead: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), load $(cut -d' ' -f1-3 /proc/loadavg), commit $(git rev-parse --short HEAD)"
echo "# tracecorn record --format null, best of $runs; busybox $($busybox | head -1 | cut -d' ' -f2)"
printf '%-36s %9s %9s %9s %9s %13s %10s\n' workload syscalls "none (s)" "auto (s)" "wall" "unwinding (s)" "per stack"
best() {  # best wall time of $runs runs of: tracecorn record ... $stacks -- busybox ARGS
  local stacks=$1; shift
  local best=999999
  for ((i = 0; i < runs; i++)); do
    local start=$EPOCHREALTIME
    "$tracecorn" record --format null --stacks "$stacks" -- "$busybox" "$@" >/dev/null 2>&1 || true
    best=$(awk -v s="$start" -v e="$EPOCHREALTIME" -v b="$best" 'BEGIN { t = e - s; print (t < b) ? t : b }')
  done
  echo "$best"
}
workload() {
  local label=$1; shift
  local syscalls
  syscalls=$("$tracecorn" run --stats -- "$busybox" "$@" 2>&1 >/dev/null | sed -n 's/.* instructions, \([0-9]*\) syscalls.*/\1/p')
  local none auto unwinding
  none=$(best none "$@")
  auto=$(best auto "$@")
  # "tracecorn: N call stacks, F frames, S s unwinding (U us a stack)"
  unwinding=$("$tracecorn" record --format null --stats --stacks auto -- "$busybox" "$@" 2>&1 >/dev/null |
              sed -n 's/.* frames, \([0-9.]*\) s unwinding (\([0-9.]*\) us a stack).*/\1 \2/p')
  awk -v l="$label" -v s="$syscalls" -v n="$none" -v a="$auto" -v u="$unwinding" 'BEGIN {
    split(u, w, " ");
    printf "%-36s %9d %9.3f %9.3f %+8.1f%% %13.3f %7.2f us\n", l, s, n, a, (a - n) / n * 100, w[1], w[2] }'
}
workload "ls -lR /usr/share/doc (syscalls)" ls -lR /usr/share/doc
workload "find /usr/include -name '*.h'" find /usr/include -name '*.h'
workload "sha256sum busybox (compute)" sha256sum "$busybox"
workload "gzip -c busybox (compute + I/O)" gzip -c "$busybox"
