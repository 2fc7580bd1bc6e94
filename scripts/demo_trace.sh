#!/usr/bin/env bash
# Role: the demo's recording, shared by scripts/demo.sh and its ctest
# (demo_trace, tests/recorder/cli/check_demo_trace.cmake): records a sample
# program into a UCIR trace at the regs level (every instruction and the
# registers it changed, every syscall with its effects and call stack), then
# prints `tracecorn stat` of it, the `tracecorn dump` lines that lead into its
# first write() syscall with that syscall's call stack, and `tracecorn replay`'s
# verdict, and says where the trace is.
# The guest runs with an empty environment (--clear-env): nothing of the host's
# environment reaches the trace or the output. Builds and installs nothing.
# Usage: scripts/demo_trace.sh TRACECORN SAMPLE OUT_DIR   (writes OUT_DIR/<sample>.ucir)
set -euo pipefail
if [[ $# -ne 3 ]]; then
  echo "usage: $0 TRACECORN SAMPLE OUT_DIR" >&2
  exit 2
fi
tracecorn=$1 sample=$2 out_dir=$3
mkdir -p "$out_dir"
trace="$out_dir/$(basename "$sample").ucir"
rm -f "$trace"

echo "== tracecorn record --clear-env --format ucir --level regs -o $trace -- $sample"
"$tracecorn" record --clear-env --format ucir --level regs -o "$trace" -- "$sample"

echo
echo "== tracecorn stat $trace"
"$tracecorn" stat "$trace"

# The event number of the first write() (dump prints "#N syscall PC write(...)").
write_event=$("$tracecorn" dump --kind syscall "$trace" | sed -n 's/^#\([0-9]*\) syscall [^ ]* write(.*/\1/p' | head -n 1)
if [[ -z $write_event ]]; then
  echo "demo_trace: no write() syscall in $trace" >&2
  exit 1
fi
first=$((write_event > 8 ? write_event - 8 : 0))
echo
echo "== tracecorn dump --events $first-$write_event $trace   (the events up to the first write(), without the header)"
"$tracecorn" dump --events "$first-$write_event" "$trace" | grep -v '^# '

echo
echo "== tracecorn replay $trace"
"$tracecorn" replay "$trace"

echo
echo "The trace is $trace ($(stat -c %s "$trace") bytes). Try:"
echo "  $tracecorn dump --kind syscall $trace | less"
echo "  $tracecorn convert $trace ${trace%.ucir}.json --format chrome   # then open it in ui.perfetto.dev"
