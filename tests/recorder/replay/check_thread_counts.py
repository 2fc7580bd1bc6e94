# Role: behaviour test of the per-thread counts of the trace tools (ctest
# thread_counts). The threads sample (eight guest threads, a thread blocked in
# read(), pthread_kill) is recorded in UCIR and BAP frames at the blocks
# level, robust_mutex (three threads, one dying with a lock) in the binary
# trace (which needs the regs level); `stat`'s "events by
# thread" must equal a brute-force count over the whole `dump`: every entry
# belongs to the thread that runs when it is printed (the process's pid until
# the first "thread T switched from F" entry, then T), except a thread entry,
# which belongs to the thread it names ("thread T created by F", "thread T
# switched from F", "thread T exited"). `dump --thread T` must print exactly
# that thread's entries (checked for the first, second and last thread, to
# keep the run to seconds), so the filter and the counts agree.
# Run by CTest: python3 check_thread_counts.py TRACECORN SAMPLES_DIR WORK_DIR
# (SAMPLES_DIR: the static guest samples).
import collections
import os
import re
import subprocess
import sys

tracecorn, samples, work = sys.argv[1], sys.argv[2], sys.argv[3]
os.makedirs(work, exist_ok=True)


def run(args):
    done = subprocess.run([tracecorn] + args, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"tracecorn {' '.join(args)}: exit status {done.returncode}: {done.stderr}")
    return done.stdout


def entries_by_thread(dump, first_thread):
    """Brute force: each '#N kind ...' entry of the dump, by the thread it belongs to."""
    running, by_thread = first_thread, collections.defaultdict(list)
    for line in dump.splitlines():
        m = re.match(r"#(\d+) (\w+) ?(.*)", line)
        if not m:
            continue
        owner = running
        if m.group(2) == "thread":
            named = re.match(r"(\d+) (created by|switched from|exited)", m.group(3))
            if not named:
                sys.exit(f"a thread entry this check does not know: {line}")
            owner = int(named.group(1))
            if named.group(2) == "switched from":
                running = owner
        by_thread[owner].append(line)
    return by_thread


CASES = (("threads", "ucir", "ucir", "blocks", 9), ("threads", "frames", "frames", "blocks", 9),
         ("robust_mutex", "bintrace", "bt", "regs", 3))
for name, fmt, ext, level, fewest_threads in CASES:
    sample = os.path.join(samples, name)
    trace = os.path.join(work, f"{name}.{ext}")
    recorded = subprocess.run([tracecorn, "record", "--format", fmt, "--level", level, "-o", trace, "--", sample],
                              capture_output=True, text=True)
    if recorded.returncode != 0:
        sys.exit(f"{fmt}: recording {sample} failed ({recorded.returncode}): {recorded.stderr}")
    stat = run(["stat", trace])
    table = re.search(r"^events by thread:\n((?:  \d+ \d+\n)+)", stat, re.M)
    if not table:
        sys.exit(f"{fmt}: stat prints no events by thread:\n{stat}")
    counted = {int(tid): int(count) for tid, count in (line.split() for line in table.group(1).splitlines())}
    pid = re.search(r"pid (\d+)", run(["dump", "--events", "0-0", trace]))
    first = int(pid.group(1)) if pid else min(counted)
    dump = run(["dump", trace])
    brute = entries_by_thread(dump, first)
    brute_counts = {tid: len(lines) for tid, lines in brute.items()}
    if len(counted) < fewest_threads:
        sys.exit(f"{fmt}: stat names {len(counted)} threads, {name} runs at least {fewest_threads}: {counted}")
    if counted != brute_counts:
        sys.exit(f"{fmt}: stat's events by thread {counted} differ from the dump's {brute_counts}")
    tids = sorted(brute)
    for tid in sorted({tids[0], tids[1], tids[-1]}):
        lines = brute[tid]
        filtered = [line for line in run(["dump", "--thread", str(tid), trace]).splitlines()
                    if re.match(r"#\d+ ", line)]
        if filtered != lines:
            sys.exit(f"{fmt}: dump --thread {tid} prints {len(filtered)} entries, the brute-force count {len(lines)}")
    print(f"{name} in {fmt}: {len(counted)} threads, {sum(counted.values())} events, stat equals the dump's count")
    os.remove(trace)
