# Role: behaviour test of signal and thread events in the trace tools (ctest
# signal_dump). signal_handlers is recorded in each format; then:
# `dump --kind signal` prints exactly the unfiltered dump's signal entries
# (the same deliveries, SIGUSR1 and SIGUSR2 to their handlers, in every
# format); `dump --thread TID` with the thread `stat` names prints the whole
# dump, another thread nothing; `stat` counts the deliveries by signal as the
# dump shows them and the events by thread as the dump's end line counts
# them; `convert` carries the signal events into each other format. A bad
# --thread gives exit status 125 and a message naming the option.
# Run by CTest: python3 check_signal_dump.py TRACECORN SAMPLE WORK_DIR
import os
import re
import subprocess
import sys

tracecorn, sample, work = sys.argv[1], sys.argv[2], sys.argv[3]
os.makedirs(work, exist_ok=True)


def run(args, expect=0):
    done = subprocess.run([tracecorn] + args, capture_output=True, text=True)
    if done.returncode != expect:
        sys.exit(f"tracecorn {' '.join(args)}: exit status {done.returncode}, expected {expect}: {done.stderr}")
    return done.stdout


def entries(text):
    """The dump's entries: (kind, first line without its number, indented lines)."""
    out = []
    for line in text.splitlines():
        m = re.match(r"#\d+ (\w+) ?(.*)", line)
        if m:
            out.append([m.group(1), m.group(2), []])
        elif line.startswith("    ") and out:
            out[-1][2].append(line)
    return out


signal_lines = {}
for fmt, ext in (("ucir", "ucir"), ("frames", "frames"), ("bintrace", "bt")):
    trace = os.path.join(work, "signal_handlers." + ext)
    run(["record", "--format", fmt, "--level", "regs", "-o", trace, "--", sample])
    full = run(["dump", trace])
    signals = [e for e in entries(full) if e[0] == "signal"]
    if len(signals) < 20:
        sys.exit(f"{fmt}: {len(signals)} signal entries in the dump, expected at least 20")
    if not all(re.match(r"SIG(USR1|USR2|URG) \(\d+\) code -?\d+ ", e[1]) for e in signals):
        sys.exit(f"{fmt}: unexpected signal entries: {[e[1] for e in signals][:3]}")
    if not all("handler on_" in e[1] for e in signals):
        sys.exit(f"{fmt}: a signal entry does not name its handler: {[e[1] for e in signals][:3]}")
    filtered = entries(run(["dump", "--kind", "signal", trace]))
    if filtered != signals:
        sys.exit(f"{fmt}: dump --kind signal differs from the dump's signal entries")
    signal_lines[fmt] = [re.sub(r" from pid \d+", "", e[1]) for e in signals]  # (each recording has its pid)

    stat = run(["stat", trace])
    counted = dict(re.findall(r"^  (SIG\w+) (\d+)$", stat, re.M))
    shown = {}
    for e in signals:
        name = e[1].split()[0]
        shown[name] = shown.get(name, 0) + 1
    if {k: int(v) for k, v in counted.items()} != shown:
        sys.exit(f"{fmt}: stat counts {counted}, the dump shows {shown}")
    threads = re.search(r"^events by thread:\n((?:  \d+ \d+\n)+)", stat, re.M)
    if not threads:
        sys.exit(f"{fmt}: stat prints no events by thread:\n{stat}")
    by_thread = [tuple(map(int, line.split())) for line in threads.group(1).splitlines()]
    total = int(re.search(r"^# end: (\d+) events", full, re.M).group(1))
    if len(by_thread) != 1 or by_thread[0][1] != total:
        sys.exit(f"{fmt}: events by thread {by_thread}, the dump ends with {total} events")
    tid = by_thread[0][0]
    if run(["dump", "--thread", str(tid), trace]) != full:
        sys.exit(f"{fmt}: dump --thread {tid} (the only thread) differs from the whole dump")
    if entries(run(["dump", "--thread", str(tid + 1), trace])):
        sys.exit(f"{fmt}: dump --thread {tid + 1} (no such thread) printed events")

# The same deliveries in every format (handlers, codes, frames, interrupted pcs; the
# sender's pid is each recording's own).
if not (signal_lines["ucir"] == signal_lines["frames"] == signal_lines["bintrace"]):
    sys.exit("the formats' signal entries differ")
# convert carries them.
source = os.path.join(work, "signal_handlers.ucir")
for fmt, ext in (("frames", "frames"), ("bintrace", "bt")):
    out = os.path.join(work, "converted." + ext)
    run(["convert", source, out, "--format", fmt])
    converted = [re.sub(r" from pid \d+", "", e[1]) for e in entries(run(["dump", "--kind", "signal", out]))]
    # (UCIR has no module loads, so the converted file names no handler)
    if converted != [re.sub(r"; handler .*$", "", line) for line in signal_lines["ucir"]]:
        sys.exit(f"convert to {fmt}: the signal entries differ")

bad = subprocess.run([tracecorn, "dump", "--thread", "x", source], capture_output=True, text=True)
if bad.returncode != 125 or "--thread" not in bad.stderr:
    sys.exit(f"dump --thread x: exit status {bad.returncode}, stderr {bad.stderr!r}")
print("signal_dump: ok")
