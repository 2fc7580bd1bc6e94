#!/usr/bin/env bash
# Role: the README's first command. Installs what is missing (scripts/setup.sh),
# builds only what the demo runs (the tracecorn command and one sample
# program, samples/guest/nested_calls.c as a dynamically linked PIE), then
# records the sample into a UCIR trace and shows what is in it
# (scripts/demo_trace.sh: stat, the dump around a syscall with its call stack,
# replay) and where the trace is: build/demo/nested_calls.ucir.
# The sample prints a few words and makes write() calls from several call
# depths; the guest runs with an empty environment, so nothing of the host's
# environment is printed.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
echo "== building tracecorn and the sample (build/)"
bash scripts/build.sh --target tracecorn guest_nested_calls_dynamic >/dev/null
bash scripts/demo_trace.sh build/recorder/cli/tracecorn build/samples/guest/dynamic/nested_calls build/demo
