# Role: what the bench scripts share (sourced, not run): the workload's input
# (a repeating 64-byte line: sha256 costs the same whatever the bytes) and
# the machine and commit each report prints beside its figures (bench/README.md).
# Invariants: bench_input leaves exactly the bytes asked for, or fails.

# bench_input FILE BYTES: the deterministic input of run_bench.sh, BYTES long.
# (yes dies of SIGPIPE when head has enough, hence the `|| true` and the size check.)
bench_input() {
  yes 'tracecorn benchmark input, a line of exactly sixty-four bytes.' | head -c "$2" >"$1" || true
  if [ "$(stat -c %s "$1")" -ne "$2" ]; then
    echo "bench: could not create the $2-byte input $1" >&2
    return 2
  fi
}

# bench_commit REPO_ROOT: the short commit, "(dirty tree)" after it when the tree has changes.
bench_commit() {
  local commit
  commit=$(git -C "$1" rev-parse --short HEAD 2>/dev/null || echo "none")
  if [ -n "$(git -C "$1" status --porcelain 2>/dev/null | head -1)" ]; then commit="$commit (dirty tree)"; fi
  echo "$commit"
}

# bench_cpu: the processor's model name.
bench_cpu() {
  local cpu
  cpu=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)
  echo "${cpu:-unknown CPU}"
}
