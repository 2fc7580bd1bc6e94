#!/usr/bin/env bash
# Role: the README's first command. Installs what is missing, builds, and runs a
# bundled sample program under `tracecorn run --stats`: the program's own output,
# then tracecorn's one-line summary (instructions, syscalls, time).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh >/dev/null
sample=build/samples/guest/dynamic/argv_env_auxv
echo "== tracecorn run --stats -- $sample hello world"
status=0
build/recorder/cli/tracecorn run --stats -- "$sample" hello world || status=$?
echo "== guest exit status: $status"
