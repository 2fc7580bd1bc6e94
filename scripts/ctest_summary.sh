#!/usr/bin/env bash
# Role: runs ctest with the given options in the current build folder; when a
# test fails, prints after ctest's own report the failed checks of every
# failing test (doctest's ERROR lines with their context, from ctest's
# LastTest.log), so that the end of a long log names what failed and where.
# Exit status: ctest's.
set -uo pipefail
ctest "$@"
status=$?
if [ "$status" -ne 0 ] && [ -f Testing/Temporary/LastTest.log ]; then
  echo "==== failed checks (from $(pwd)/Testing/Temporary/LastTest.log) ===="
  grep -a -B 3 -A 10 -E "(ERROR:|FATAL ERROR|Sanitizer|Test Failed|Test Timeout|Exception)" \
    Testing/Temporary/LastTest.log | tail -n 200
fi
exit "$status"
