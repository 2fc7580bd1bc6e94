#!/usr/bin/env bash
# Role: the repository's hygiene check, run by scripts/test.sh (so by CI) before
# anything is built. Fails (exit 1, naming each offending file) when
#  - a tracked file over 1 MB lies outside the folders meant for fixtures
#    (fixture_dirs below: the fuzzers' seed corpora and samples/embed's crash
#    input), e.g. a trace or a dump committed by mistake;
#  - a tracked file is a run's leftover: a ctest log (Testing/, LastTest.log)
#    or a trace, dump or core file that .gitignore names;
#  - a tracked file points at a path outside the repository where the format
#    notes once lived (the "shared" folder beside a checkout): code, comments
#    and docs cite the upstream specifications by public name and URL instead
#    (docs/formats/).
# Reads the index (git ls-files), so it checks what a commit would hold; needs
# git and a checkout, nothing built. Usage: scripts/check_tree.sh
set -euo pipefail
cd "$(dirname "$0")/.."
if ! git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  echo "check_tree: $(pwd) is not a git checkout: nothing to check against" >&2
  exit 1
fi

max_bytes=$((1024 * 1024))
# Folders whose files may be larger: fixtures, matched as path prefixes.
fixture_dirs=(
  arch/fuzz_seeds/
  formats/bap/fuzz_seeds/
  formats/bintrace/fuzz_seeds/
  formats/bintrace/spool_fuzz_seeds/
  formats/ucir/fuzz_seeds/
  recorder/linux/fuzz_seeds/
  recorder/unwind/fuzz_seeds/
  recorder/unwind/ehabi_fuzz_seeds/
  samples/embed/
)

status=0
while IFS= read -r -d '' path; do
  [[ -f $path ]] || continue  # deleted in the work tree, not yet in the index
  size=$(stat -c %s -- "$path")
  (( size > max_bytes )) || continue
  allowed=no
  for dir in "${fixture_dirs[@]}"; do
    [[ $path == "$dir"* ]] && allowed=yes
  done
  if [[ $allowed == no ]]; then
    echo "check_tree: $path is $size bytes (over 1 MB) outside the fixture folders listed in scripts/check_tree.sh" >&2
    status=1
  fi
done < <(git ls-files -z)

# A run's leftovers, tracked by mistake (git add -A after a ctest in the
# source tree, or a trace written beside the sources).
leftovers=$(git ls-files -i -c --exclude-standard; git ls-files | grep -E '(^|/)Testing/|(^|/)LastTest[^/]*\.log$' || true)
if [[ -n $leftovers ]]; then
  echo "check_tree: these tracked files are a run's leftovers (ignored by .gitignore or ctest logs); remove them:" >&2
  echo "$leftovers" >&2
  status=1
fi

# Paths outside the repository: the pattern is split so that this script does
# not match itself.
outside='\.\./'"shared|shared/"'(specs|notes)|/work/'"shared|shared/"'(ARCHITECTURE|STYLE)\.md'
grep_status=0
matches=$(git grep -n -I -E "$outside" -- . ':!scripts/check_tree.sh') || grep_status=$?
if [[ $grep_status -eq 0 ]]; then
  echo "check_tree: these lines point outside the repository; cite the upstream specification (docs/formats/) instead:" >&2
  echo "$matches" >&2
  status=1
elif [[ $grep_status -ne 1 ]]; then  # 1: no match; anything else: git grep failed
  echo "check_tree: git grep failed (status $grep_status)" >&2
  status=1
fi

exit $status
