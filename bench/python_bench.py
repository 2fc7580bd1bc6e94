#!/usr/bin/env python3
# Role: the Python package's reading speed (`import tracecorn`): busybox
# sha256sum of an N KiB file (default 64) recorded at a level (default full)
# into UCIR+zstd, then timed: `tracecorn stat` on it (the C++ reader, for
# scale), len() (a native pass), iterating every event as Python objects,
# iterating one kind with a native filter, and column("pc") as a NumPy array:
# without the column cache (a pass of the reader), the first call with it (the
# pass that fills it), and again (from memory), and a second column.
# Prints events/s and values/s, and each time as a ratio of stat's.
# Not a test: it measures, it does not pass or fail.
# Usage: /usr/bin/python3 bench/python_bench.py [TRACECORN] (default
#   build/recorder/cli/tracecorn; the module from build/python or PYTHONPATH);
#   BENCH_KIB=N, BENCH_LEVEL=blocks|insns|mem|regs|full
import os
import subprocess
import sys
import tempfile
import time

TRACECORN = sys.argv[1] if len(sys.argv) > 1 else "build/recorder/cli/tracecorn"
sys.path.insert(0, "build/python")  # run from the repository's root, or with PYTHONPATH set
import tracecorn  # noqa: E402

KIB = int(os.environ.get("BENCH_KIB", "64"))
LEVEL = os.environ.get("BENCH_LEVEL", "full")
CODE_KIND = "block" if LEVEL == "blocks" else "insn"  # the kind the pc column is read from


def timed(action):
    started = time.perf_counter()
    result = action()
    return result, time.perf_counter() - started


def main():
    with tempfile.TemporaryDirectory() as work:
        data = os.path.join(work, "data")
        with open(data, "wb") as f:
            f.write(bytes(range(256)) * (4 * KIB))
        path = os.path.join(work, "trace.ucir")
        subprocess.run([TRACECORN, "record", "--level", LEVEL, "--format", "ucir", "--compress", "zstd", "-o", path,
                        "--", "/bin/busybox", "sha256sum", data], check=True, stdout=subprocess.DEVNULL)
        _, stat_time = timed(lambda: subprocess.run([TRACECORN, "stat", path], check=True,
                                                             stdout=subprocess.DEVNULL))
        trace = tracecorn.open(path)
        count, len_time = timed(lambda: len(trace))
        iterated, iterate_time = timed(lambda: sum(1 for _ in trace))
        assert iterated == count
        insns, filter_time = timed(lambda: sum(1 for _ in trace.events(kinds=CODE_KIND)))
        uncached = tracecorn.open(path, column_cache=0)
        column, column_time = timed(lambda: uncached.column("pc", kinds=CODE_KIND))
        assert len(column) == insns
        _, filling_time = timed(lambda: trace.column("pc", kinds=CODE_KIND))
        cached, cached_time = timed(lambda: trace.column("pc", kinds=CODE_KIND))
        assert (cached == column).all()
        writes, write_pass_time = timed(lambda: trace.column("address", kinds="write"))
        _, writes_time = timed(lambda: trace.column("address", kinds="write"))
        print(f"busybox sha256sum of {KIB} KiB at --level {LEVEL}: {count} events, {insns} {CODE_KIND} events, "
              f"{os.path.getsize(path)} bytes (UCIR+zstd); column cache {trace.column_cache_bytes} bytes")
        rows = [("tracecorn stat (C++ reader)", stat_time, count, "events"),
                ("len(trace) (native pass)", len_time, count, "events"),
                ("for event in trace", iterate_time, count, "events"),
                (f"trace.events(kinds='{CODE_KIND}')", filter_time, count, "events read"),
                (f"column('pc', kinds='{CODE_KIND}'), no cache", column_time, insns, "values"),
                ("the same, filling the cache", filling_time, insns, "values"),
                ("the same, from the cache", cached_time, insns, "values"),
                ("column('address', kinds='write'), a pass", write_pass_time, len(writes), "values"),
                ("the same, from the cache", writes_time, len(writes), "values")]
        for label, seconds, amount, unit in rows:
            print(f"  {label:<42} {seconds:7.2f} s  {amount / seconds / 1e6:6.2f} M {unit}/s  "
                  f"{seconds / stat_time:5.2f}x stat")


if __name__ == "__main__":
    main()
