#!/usr/bin/env bash
# Role: the peers of the recorder's `mem` level on one guest run, busybox
# sha256sum of a 1 MiB file: native; tracecorn run (no recording: the Unicorn
# floor); Debian's python3-unicorn with a minimal loader and no hooks; the same
# recording every block and memory access from Python hooks into a binary file
# (bench/py_unicorn_mem_tracer.py, the way Python Unicorn frameworks trace); and
# valgrind --tool=lackey --trace-mem=yes writing its trace to a file.
# Not part of ctest; run by hand:
#   bench/peers_bench.sh [--bytes N] [TRACECORN_BINARY]
#     --bytes N   input size for the two Python rows only (default 1048576);
#                 when smaller than 1 MiB they also run on an empty input and
#                 their times are extrapolated linearly to 1 MiB, marked
#                 EXTRAPOLATED in the output.
#     TRACECORN_BINARY  default build/recorder/cli/tracecorn; the row is skipped
#                 if it is missing.
# Environment: BUSYBOX (default /bin/busybox), PYTHON (default /usr/bin/python3,
# Debian's, which has python3-unicorn; the python3 first on PATH may not),
# VALGRIND (default valgrind), NATIVE_RUNS (default 5).
#
# Invariants: the input is generated before and outside the timed part and is
# deterministic; rows are wall clock including process start-up; native is the
# best of NATIVE_RUNS runs (it takes milliseconds), the Python run without hooks
# (and, with --bytes, each run on the empty input) the best of 3, every other
# row one run; Python runs before lackey, whose 1 GB log would disturb it; every
# digest must equal coreutils' sha256sum of the same input, else the figures
# are printed and the script exits 1; trace files go to a temporary directory
# (about 1.5 GB at the peak) and are deleted; the machine and the git commit are
# printed beside the figures.
set -euo pipefail

repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$repo_root/bench/bench_common.sh"
python_bytes=1048576
tracecorn=$repo_root/build/recorder/cli/tracecorn
while [ $# -gt 0 ]; do
  case $1 in
    --bytes) python_bytes=$2; shift 2 ;;
    -h|--help) sed -n '2,/^# Environment/p' "${BASH_SOURCE[0]}"; exit 0 ;;
    *) tracecorn=$1; shift ;;
  esac
done
busybox=${BUSYBOX:-/bin/busybox}
python=${PYTHON:-/usr/bin/python3}
valgrind=${VALGRIND:-valgrind}
native_runs=${NATIVE_RUNS:-5}
tracer=$repo_root/bench/py_unicorn_mem_tracer.py
mib_bytes=1048576

if [ ! -x "$busybox" ]; then echo "peers_bench: $busybox is missing" >&2; exit 2; fi
if ! "$python" -c 'import unicorn' 2>/dev/null; then
  echo "peers_bench: $python has no unicorn module (apt-get install python3-unicorn)" >&2; exit 2
fi
if ! command -v "$valgrind" >/dev/null; then echo "peers_bench: valgrind is missing" >&2; exit 2; fi
if [ "$python_bytes" -lt 1 ] || [ "$python_bytes" -gt "$mib_bytes" ]; then
  echo "peers_bench: --bytes must be between 1 and $mib_bytes" >&2; exit 2
fi

workdir=$(mktemp -d "${TMPDIR:-/tmp}/tracecorn-peers-XXXXXX")
trap 'rm -rf "$workdir"' EXIT

load_at_start=$(cut -d' ' -f1-3 /proc/loadavg)  # other work skews every figure

# --- inputs (not timed) -------------------------------------------------------
input=$workdir/input.bin
bench_input "$input" "$mib_bytes"
py_input=$input
if [ "$python_bytes" -lt "$mib_bytes" ]; then
  py_input=$workdir/input_small.bin
  head -c "$python_bytes" "$input" >"$py_input"
fi
expected=$(sha256sum "$input"); expected=${expected%% *}
py_expected=$(sha256sum "$py_input"); py_expected=${py_expected%% *}

# Runs "$@" once with stdout captured; sets `seconds` and `digest`.
time_one() {
  local start end out
  start=$EPOCHREALTIME
  out=$("$@")
  end=$EPOCHREALTIME
  seconds=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.3f", b - a }')
  digest=${out%% *}
}

# Runs "$@" N times (N = $1) and keeps the best time; sets `seconds`, `digest`.
time_best() {
  local n=$1 best=""
  shift
  for _ in $(seq "$n"); do
    time_one "$@"
    best=$(awk -v a="$seconds" -v b="$best" 'BEGIN { print (b == "" || a < b) ? a : b }')
  done
  seconds=$best
}

failures=()
check_digest() {  # name got want
  if [ "$2" != "$3" ]; then failures+=("$1: digest $2, expected $3"); fi
}

# --- timed runs ---------------------------------------------------------------
time_best "$native_runs" "$busybox" sha256sum "$input"
check_digest native "$digest" "$expected"
native_s=$(awk -v a="$seconds" 'BEGIN { printf "%.4f", a }')

tracecorn_s=""
if [ -x "$tracecorn" ]; then
  time_one "$tracecorn" run -- "$busybox" sha256sum "$input"
  tracecorn_s=$seconds
  check_digest tracecorn "$digest" "$expected"
  # The recorder at the level these peers record (blocks + memory accesses with
  # values), into the null sink (recording cost only) and into a text file.
  time_one "$tracecorn" record --level mem --format null -- "$busybox" sha256sum "$input"
  record_null_s=$seconds
  check_digest tracecorn-record-null "$digest" "$expected"
  time_one "$tracecorn" record --level mem --format text -o "$workdir/trace.txt" -- "$busybox" sha256sum "$input"
  record_text_s=$seconds
  check_digest tracecorn-record-text "$digest" "$expected"
  record_text_bytes=$(stat -c %s "$workdir/trace.txt")
  rm -f "$workdir/trace.txt"
fi

time_best 3 "$python" "$tracer" --no-trace "$busybox" sha256sum "$py_input"
py_bare_raw_s=$seconds
check_digest python-bare "$digest" "$py_expected"

py_trace=$workdir/py_trace.bin
time_one "$python" "$tracer" --trace "$py_trace" "$busybox" sha256sum "$py_input"
py_trace_raw_s=$seconds
check_digest python-tracer "$digest" "$py_expected"
py_records=$(( $(stat -c %s "$py_trace") / 24 ))
py_trace_bytes=$(stat -c %s "$py_trace")
rm -f "$py_trace"
sync  # the trace's write-back must not land in the next timed run

# Python rows, extrapolated to the 1 MiB input when --bytes made it smaller:
# t(1 MiB) = t(empty) + (t(N) - t(empty)) x 1 MiB / N, with t(empty) measured
# on an empty input (interpreter start-up, loading, busybox's own start-up).
extrapolate() {  # raw_seconds empty_seconds
  awk -v t="$1" -v t0="$2" -v a="$mib_bytes" -v n="$python_bytes" \
    'BEGIN { printf "%.3f", t0 + (t - t0) * a / n }'
}
py_bare_s=$py_bare_raw_s py_trace_s=$py_trace_raw_s py_bare_note="-" py_trace_note=""
if [ "$python_bytes" -lt "$mib_bytes" ]; then
  : >"$workdir/empty.bin"
  empty_expected=$(sha256sum "$workdir/empty.bin"); empty_expected=${empty_expected%% *}
  time_best 3 "$python" "$tracer" --no-trace "$busybox" sha256sum "$workdir/empty.bin"
  py_bare_empty_s=$seconds
  check_digest python-bare-empty "$digest" "$empty_expected"
  time_best 3 "$python" "$tracer" --trace "$py_trace" "$busybox" sha256sum "$workdir/empty.bin"
  py_trace_empty_s=$seconds
  check_digest python-tracer-empty "$digest" "$empty_expected"
  rm -f "$py_trace"
  py_bare_s=$(extrapolate "$py_bare_raw_s" "$py_bare_empty_s")
  py_trace_s=$(extrapolate "$py_trace_raw_s" "$py_trace_empty_s")
  py_bare_note="EXTRAPOLATED: ${py_bare_raw_s} s on ${python_bytes} bytes, ${py_bare_empty_s} s on 0 bytes"
  py_trace_note=" (counts for ${python_bytes} bytes); EXTRAPOLATED: ${py_trace_raw_s} s on ${python_bytes} bytes, ${py_trace_empty_s} s on 0 bytes"
fi

lackey_log=$workdir/lackey.log
time_one "$valgrind" --tool=lackey --trace-mem=yes --log-file="$lackey_log" "$busybox" sha256sum "$input"
lackey_s=$seconds
check_digest lackey "$digest" "$expected"
lackey_lines=$(wc -l <"$lackey_log")
lackey_bytes=$(stat -c %s "$lackey_log")
rm -f "$lackey_log"

# --- report -------------------------------------------------------------------
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.1fx", a / b; else print "-" }'; }
commit=$(bench_commit "$repo_root")
cpu=$(bench_cpu)

echo "workload: busybox sha256sum of a 1 MiB file ($busybox)"
echo "machine:  $(nproc) cores, ${cpu:-unknown CPU}, kernel $(uname -r), load average $load_at_start at start"
echo "commit:   $commit"
echo "tools:    $("$valgrind" --version), python3-unicorn $("$python" -c 'import unicorn; print(unicorn.__version__)') on $("$python" --version 2>&1)"
echo "timing:   wall clock incl. process start-up; native best of $native_runs, python no-hooks best of 3, others one run"
printf '%-34s %10s %11s %12s  %s\n' "peer" "seconds" "x native" "x tracecorn" "output"
row() { printf '%-34s %10s %11s %12s  %s\n' "$1" "$2" "$(ratio "$2" "$native_s")" \
  "$( [ -n "$tracecorn_s" ] && ratio "$2" "$tracecorn_s" || echo -)" "$3"; }
row "native" "$native_s" "-"
if [ -n "$tracecorn_s" ]; then
  row "tracecorn run (no recording)" "$tracecorn_s" "-"
  row "tracecorn record --level mem (null sink)" "$record_null_s" "-"
  row "tracecorn record --level mem (text file)" "$record_text_s" "$record_text_bytes bytes"
fi
row "python3-unicorn, no hooks" "$py_bare_s" "$py_bare_note"
row "python3-unicorn mem+block tracer" "$py_trace_s" "$py_records records, $py_trace_bytes bytes$py_trace_note"
row "valgrind lackey --trace-mem=yes" "$lackey_s" "$lackey_lines lines, $lackey_bytes bytes"
echo "x tracecorn = seconds / the tracecorn run row (Unicorn with the Linux layer, nothing recorded)"

if [ ${#failures[@]} -gt 0 ]; then
  printf 'peers_bench: %s\n' "${failures[@]}" >&2
  exit 1
fi
