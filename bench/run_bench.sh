#!/usr/bin/env bash
# Role: end-to-end speed of tracecorn against native execution and against
# qemu-user on one CPU-bound workload: busybox sha256sum of a 16 MiB file.
# Not part of ctest; run by hand (or CI, for the record):
#   bench/run_bench.sh [TRACECORN_BINARY]      default build/recorder/cli/tracecorn
# Environment: BUSYBOX (default /bin/busybox), QEMU (default
# /usr/bin/qemu-x86_64-static), BENCH_MIB (input size, default 16).
# BENCH_ARCH=aarch64 runs Debian's arm64 busybox (scripts/fetch_guest_busybox.sh,
# default build/guest-busybox/arm64/busybox) under qemu-aarch64-static and
# tracecorn; there is no native run then (the host is x86-64), so the digests
# are checked against the host's sha256sum and only tracecorn/qemu is a ratio.
#
# Invariants: the input is generated before and outside the timed part and is
# deterministic (no /dev/urandom), so runs on different days hash the same
# bytes; each configuration runs once, wall clock, output to a pipe; the three
# digests must agree, else the figures are printed but the script exits 1;
# the machine (nproc, CPU model, kernel) and the git commit are printed beside
# the figures, as bench/README.md asks.
set -euo pipefail

repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$repo_root/bench/bench_common.sh"
tracecorn=${1:-$repo_root/build/recorder/cli/tracecorn}
arch=${BENCH_ARCH:-x86_64}
if [ "$arch" = x86_64 ]; then
  busybox=${BUSYBOX:-/bin/busybox}
else
  busybox=${BUSYBOX:-$repo_root/build/guest-busybox/$( [ "$arch" = aarch64 ] && echo arm64 || echo "$arch")/busybox}
fi
qemu=${QEMU:-/usr/bin/qemu-$arch-static}
mib=${BENCH_MIB:-16}

for tool in "$tracecorn" "$busybox" "$qemu"; do
  if [ ! -x "$tool" ]; then
    echo "run_bench: $tool is missing or not executable" >&2
    exit 2
  fi
done

workdir=$(mktemp -d "${TMPDIR:-/tmp}/tracecorn-bench-XXXXXX")
trap 'rm -rf "$workdir"' EXIT
input=$workdir/input.bin

# --- input (not timed) --------------------------------------------------------
# 16 MiB of a repeating 64-byte line (bench_common.sh).
if ! bench_input "$input" $((mib * 1024 * 1024)); then
  exit 2
fi

# Runs "$@" once with stdout captured; sets `seconds` and `digest`.
time_one() {
  local start end out
  start=$EPOCHREALTIME
  out=$("$@")
  end=$EPOCHREALTIME
  seconds=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.3f", b - a }')
  digest=${out%% *}
}

if [ "$arch" = x86_64 ]; then
  time_one "$busybox" sha256sum "$input"
  native_s=$seconds native_digest=$digest
else
  time_one sha256sum "$input"  # the reference digest only: another architecture has no native run here
  native_s="n/a" native_digest=$digest
fi
time_one "$qemu" "$busybox" sha256sum "$input"
qemu_s=$seconds qemu_digest=$digest
time_one "$tracecorn" run -- "$busybox" sha256sum "$input"
tracecorn_s=$seconds tracecorn_digest=$digest
# Recording cost on top of the run: blocks and memory accesses into the null sink.
time_one "$tracecorn" record --level blocks --format null -- "$busybox" sha256sum "$input"
record_blocks_s=$seconds record_blocks_digest=$digest
time_one "$tracecorn" record --level mem --format null -- "$busybox" sha256sum "$input"
record_mem_s=$seconds record_mem_digest=$digest

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "inf" }'; }

# --- report -----------------------------------------------------------------
commit=$(bench_commit "$repo_root")
cpu=$(bench_cpu)

echo "workload: $arch busybox sha256sum of a ${mib} MiB file (one run each, wall clock)"
echo "machine:  $(nproc) cores, ${cpu:-unknown CPU}, kernel $(uname -r)"
echo "commit:   $commit"
echo "qemu:     $("$qemu" --version | head -1)"
printf '%-10s %8s s\n' native "$native_s" qemu "$qemu_s" tracecorn "$tracecorn_s"
printf '%-30s %8s s\n' "record --level blocks (null)" "$record_blocks_s" "record --level mem (null)" "$record_mem_s"
if [ "$native_s" != "n/a" ]; then echo "ratio tracecorn/native: $(ratio "$tracecorn_s" "$native_s")x"; fi
echo "ratio tracecorn/qemu:   $(ratio "$tracecorn_s" "$qemu_s")x"
echo "ratio record blocks/run: $(ratio "$record_blocks_s" "$tracecorn_s")x, record mem/run: $(ratio "$record_mem_s" "$tracecorn_s")x"

if [ "$native_digest" != "$qemu_digest" ] || [ "$native_digest" != "$tracecorn_digest" ] ||
   [ "$native_digest" != "$record_blocks_digest" ] || [ "$native_digest" != "$record_mem_digest" ]; then
  echo "run_bench: digests differ: native $native_digest, qemu $qemu_digest, tracecorn $tracecorn_digest," \
    "record blocks $record_blocks_digest, record mem $record_mem_digest" >&2
  exit 1
fi
