#!/usr/bin/env bash
# Role: the test of scripts/check_layering.sh (ctest: layering_check_catches_bad_includes),
# so that the check cannot pass silently: it must accept this tree as it is, and
# refuse each kind of stray include put into a copy of it, naming what it found:
#  - a Unicorn or Capstone include reaching a format (through a shared header)
#    and the unwinder (through the arch umbrella header);
#  - the recorder core including the CLI;
#  - the event model including the recorder core (a cycle between folders).
# Works on copies under a temporary directory; never touches the tree.
# Usage: tests/scripts/check_layering_test.sh
set -euo pipefail
source_root=$(cd "$(dirname "$0")/../.." && pwd)
check="$source_root/scripts/check_layering.sh"
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
failures=0

fresh_copy() {  # fresh_copy NAME: a copy of the checked folders in $scratch/NAME
  mkdir -p "$scratch/$1"
  cp -r "$source_root/arch" "$source_root/recorder" "$source_root/formats" "$scratch/$1/"
  echo "$scratch/$1"
}

# expect_refusal NAME FILE LINE TEXT...: LINE appended to FILE in a fresh copy
# must fail the check with every TEXT in its report.
expect_refusal() {
  local name=$1 file=$2 line=$3
  shift 3
  local copy report status=0
  copy=$(fresh_copy "$name")
  printf '%s\n' "$line" >>"$copy/$file"
  report=$(bash "$check" "$copy" 2>&1) || status=$?
  if [[ $status -eq 0 ]]; then
    echo "FAIL $name: the check accepted '$line' in $file" >&2
    failures=$((failures + 1))
    return
  fi
  for text in "$@"; do
    if [[ $report != *"$text"* ]]; then
      echo "FAIL $name: the report does not say '$text':" >&2
      echo "$report" >&2
      failures=$((failures + 1))
      return
    fi
  done
  echo "ok   $name: refused, naming ${*}"
}

if report=$(bash "$check" "$(fresh_copy clean)" 2>&1); then
  echo "ok   clean: $report"
else
  echo "FAIL clean: the check refuses the tree as it is:" >&2
  echo "$report" >&2
  failures=$((failures + 1))
fi

expect_refusal capstone_in_format formats/common/byte_stream.h '#include <capstone/capstone.h>' \
  "reaches formats/ucir/ucir_reader.cpp" "formats/common/byte_stream.h" "<capstone/capstone.h>"
expect_refusal engine_in_unwinder recorder/unwind/cfi.h '#include "arch/arch.h"' \
  "reaches recorder/unwind/cfi.cpp" "arch/arch.h" "arch/arch_engine.h"
expect_refusal unicorn_in_facts arch/arch_info.h '#include <unicorn/unicorn.h>' \
  "reaches arch/arch_info.h" "<unicorn/unicorn.h>"
expect_refusal cli_in_core recorder/core/recorder.cpp '#include "recorder/cli/stack_display.h"' \
  "recorder/core/recorder.cpp includes recorder/cli/stack_display.h" "nothing below the CLI"
expect_refusal folder_cycle recorder/events/event.cpp '#include "recorder/core/recorder.h"' \
  "recorder/core, recorder/events include each other in a cycle" \
  "recorder/events/event.cpp includes recorder/core/recorder.h"

if [[ $failures -ne 0 ]]; then
  echo "$failures case(s) failed" >&2
  exit 1
fi
