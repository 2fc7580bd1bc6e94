#!/usr/bin/env bash
# Role: the soak test of issue 10 (not a ctest: far too long for CI). Records
# busybox sha256sum of a file sized for about SOAK_INSNS guest instructions
# (default 1e9; 1 MiB of input is about 72.5M instructions) in each format, in
# lossless mode, and checks that the recorder's memory stays bounded and that
# every event it produced can be read back:
#   - while recording, every SOAK_INTERVAL seconds, the recorder's VmRSS and
#     VmHWM (/proc/PID/status) and the output's size: printed as a time series
#     (output growth rate in MB/s), then the peak RSS (target: < 256 MiB), the
#     growth rate over the first and the last quarter of the run;
#   - the events the recorder handed to its sink, by kind (`--stats`: "events
#     by kind: ...") against the events `tracecorn stat` reads back from the
#     file, by kind: equal for every kind the format carries (the kinds it
#     cannot carry are left out and listed; "produced" in the summary counts
#     the carried kinds only). For null nothing is written: only the count and
#     memory are reported.
# Usage: bench/soak.sh [TRACECORN_BINARY]    (default build/recorder/cli/tracecorn)
# Environment: SOAK_INSNS (default 1000000000), SOAK_FORMATS (default
#   "null ucir frames bintrace"), SOAK_LEVEL (one level for every format
#   instead of each format's own below, e.g. insns for a 1e9 run that
#   finishes in minutes rather than hours), SOAK_INTERVAL (seconds, default 5),
#   SOAK_DIR (where traces go, default a temporary folder; each trace is
#   removed after it is read), BUSYBOX (default /bin/busybox).
# Exit status: 0 when every format's counts agree and every peak RSS is under
# the target, else 1 (after printing everything).
set -euo pipefail

repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$repo_root/bench/bench_common.sh"
tracecorn=${1:-$repo_root/build/recorder/cli/tracecorn}
busybox=${BUSYBOX:-/bin/busybox}
insns=${SOAK_INSNS:-1000000000}
formats=${SOAK_FORMATS:-null ucir frames bintrace}
interval=${SOAK_INTERVAL:-5}
rss_target_kib=$((256 * 1024))

workdir=$(mktemp -d "${SOAK_DIR:-${TMPDIR:-/tmp}}/tracecorn-soak-XXXXXX")
trap 'rm -rf "$workdir"' EXIT
input=$workdir/input.bin
bytes=$(awk -v n="$insns" 'BEGIN { printf "%d", n / 72.5e6 * 1048576 }')
bench_input "$input" "$bytes"
expected=$(sha256sum "$input" | cut -d' ' -f1)

# The level each format records at: every kind it records is one the format carries.
level_for() {
  if [[ -n ${SOAK_LEVEL:-} ]]; then echo "$SOAK_LEVEL"; return; fi
  case $1 in
    null) echo regs ;;       # the recorder's full work at regs, nothing written
    ucir) echo regs ;;       # blocks, instructions, registers, syscalls
    frames) echo full ;;     # BAP frames need full for complete operands
    bintrace) echo regs ;;   # registers per instruction (no memory writes)
  esac
}
# Event kinds the recorder produces at that level that the format cannot
# carry (each reader's can_carry(), recorder/replay/trace_reader.h): left out
# of the comparison, and listed.
not_carried() {
  case $1 in
    ucir) echo "module" ;;          # UCIR has no module op (its keyframe maps the files)
    frames) echo "block exit" ;;    # BAP frames: no block or exit frame
    bintrace) echo "block read" ;;  # binary trace: no blocks, no memory reads
  esac
}
# "kind count" lines: from `--stats`' "events by kind:" line, or `tracecorn stat`'s table.
kinds_from_stats() { sed -n 's/^tracecorn: events by kind: //p' "$1" | tr ',' '\n' | awk 'NF == 2 { print $1, $2 }' | sort; }
kinds_from_stat() { awk '/^kind / { on = 1; next } /^hottest/ { on = 0 } on && NF >= 2 { print $1, $2 }' "$1" | sort; }

commit=$(bench_commit "$repo_root")
echo "soak: busybox sha256sum of $bytes bytes (about $insns instructions), lossless, zstd where the format has it"
echo "machine: $(nproc) cores, $(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "commit: $commit"
status=0
summary=""
for format in $formats; do
  level=$(level_for "$format")
  trace=$workdir/trace.$format
  compress=(--compress zstd)
  [ "$format" = null ] && { compress=(); trace=/dev/null; }
  echo "== $format --level $level ${compress[*]}"
  start=$EPOCHREALTIME
  "$tracecorn" record --stats --format "$format" --level "$level" "${compress[@]}" -o "$trace" -- \
    "$busybox" sha256sum "$input" >"$workdir/stdout" 2>"$workdir/stderr" &
  pid=$!
  samples=$workdir/samples.$format
  : >"$samples"
  while kill -0 "$pid" 2>/dev/null; do
    now=$(awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')
    rss=$(awk '/^VmRSS:/ { print $2 }' "/proc/$pid/status" 2>/dev/null || true)
    hwm=$(awk '/^VmHWM:/ { print $2 }' "/proc/$pid/status" 2>/dev/null || true)
    size=0
    # A binary trace grows as its events spool (TRACE.events.part) until the end.
    [ "$trace" != /dev/null ] && size=$( { stat -c %s "$trace" "$trace.events.part" 2>/dev/null || true; } | awk '{ s += $1 } END { print s + 0 }')
    # Both read before the process ended, else the columns would shift.
    [ -n "$rss" ] && [ -n "$hwm" ] && echo "$now $rss $hwm $size" >>"$samples"
    sleep "$interval"
  done
  wait "$pid" || { echo "soak: $format: tracecorn exited $?: $(cat "$workdir/stderr")"; status=1; }
  seconds=$(awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')
  if [ "$(cut -d' ' -f1 "$workdir/stdout")" != "$expected" ]; then
    echo "soak: $format: the guest printed '$(cat "$workdir/stdout")', expected $expected"
    status=1
  fi
  produced=$(sed -n 's/^tracecorn: recorded \([0-9]*\) events.*/\1/p' "$workdir/stderr")
  instructions=$(sed -n 's/^tracecorn: \([0-9]*\) instructions,.*/\1/p' "$workdir/stderr")
  stalls=$(sed -n 's/.* \([0-9]*\) producer stalls.*/\1/p' "$workdir/stderr")
  echo "   time(s) VmRSS(KiB) VmHWM(KiB) file(bytes) growth(MB/s)"
  awk 'BEGIN { pt = 0; ps = 0 } { printf "   %7s %10s %10s %11s %12.1f\n", $1, $2, $3, $4, ($1 > pt ? ($4 - ps) / ($1 - pt) / 1e6 : 0); pt = $1; ps = $4 }' "$samples"
  peak=$(awk '{ if ($3 > m) m = $3 } END { print m + 0 }' "$samples")
  # Growth over the first and the last quarter of the samples.
  rates=$(awk '{ t[NR] = $1; s[NR] = $4 } END {
      q = int(NR / 4); if (q < 1) { print "n/a n/a"; exit }
      printf "%.1f %.1f", (s[1 + q] - s[1]) / (t[1 + q] - t[1]) / 1e6, (s[NR] - s[NR - q]) / (t[NR] - t[NR - q]) / 1e6 }' "$samples")
  bytes_out=0
  read_back="-"
  if [ "$format" != null ]; then
    bytes_out=$(stat -c %s "$trace")
    read_start=$EPOCHREALTIME
    "$tracecorn" stat "$trace" >"$workdir/stat" 2>"$workdir/stat.err" || { echo "soak: $format: stat failed: $(cat "$workdir/stat.err")"; status=1; }
    read_seconds=$(awk -v a="$read_start" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')
    read_back=$(sed -n 's/^\([0-9]*\) events, .*/\1/p' "$workdir/stat")
    [ -s "$workdir/stat.err" ] && echo "   stat said: $(cat "$workdir/stat.err")"
    echo "   read back in ${read_seconds}s: $(head -c 2000 "$workdir/stat" | sed -n '2,14p' | tr '\n' ';')"
    # Per kind: every kind the format carries must come back in the same number.
    skipped=$(not_carried "$format")
    kinds_from_stats "$workdir/stderr" >"$workdir/produced.kinds"
    kinds_from_stat "$workdir/stat" >"$workdir/read.kinds"
    comparable=0
    while read -r kind count; do
      case " $skipped " in *" $kind "*) produced=$((produced - count)); continue ;; esac
      comparable=$((comparable + count))
      got=$(awk -v k="$kind" '$1 == k { print $2 }' "$workdir/read.kinds")
      if [ "${got:-0}" != "$count" ]; then
        echo "soak: $format: the recorder produced $count $kind events, the reader read ${got:-0}"
        status=1
      fi
    done <"$workdir/produced.kinds"
    echo "   by kind, produced: $(tr '\n' ' ' <"$workdir/produced.kinds")"
    echo "   by kind, read:     $(tr '\n' ' ' <"$workdir/read.kinds")  (not carried, left out: ${skipped:-none})"
    if [ "$produced" != "$read_back" ]; then
      echo "soak: $format: $produced events of carried kinds produced, $read_back read"
      status=1
    fi
    rm -f "$trace"
  fi
  if [ "$peak" -ge "$rss_target_kib" ]; then
    echo "soak: $format: peak RSS $peak KiB is over the target ($rss_target_kib KiB)"
    status=1
  fi
  line=$(printf '%-9s %-5s %13s %13s %13s %9s %12s %6s %8s %12s' "$format" "$level" "$instructions" "$produced" "$read_back" \
    "$((peak / 1024))" "$bytes_out" "${rates% *}" "${rates#* }" "$seconds/$stalls")
  echo "$line"
  summary+="$line"$'\n'
done
echo
printf '%-9s %-5s %13s %13s %13s %9s %12s %6s %8s %12s\n' format level instructions produced "read back" "peak(MiB)" \
  "file(bytes)" "MB/s<" "MB/s>" "s/stalls"
printf '%s' "$summary"
echo "(MB/s<: output growth over the first quarter of the run; MB/s>: over the last quarter)"
exit $status
