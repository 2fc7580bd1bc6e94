# Role: behaviour test of the progress line (ctest trace_progress): run under a
# pseudo-terminal by util-linux's `script -qec`, dump (to a file), stat,
# convert, the drcov export and replay draw "tracecorn: WHAT: N events, X of Y
# MiB read" on stderr and erase it; run with pipes, they print no progress
# at all, and their output equals the terminal run's with the progress
# removed (a dump redirected to a file is the same bytes either way).
# Run by CTest: python3 check_progress.py TRACECORN SAMPLE WORK_DIR
import os
import re
import shlex
import subprocess
import sys

tracecorn, sample, work = sys.argv[1], sys.argv[2], sys.argv[3]
os.makedirs(work, exist_ok=True)
trace = os.path.join(work, "trace.ucir")
subprocess.run([tracecorn, "record", "--format", "ucir", "--level", "full", "-o", trace, "--", sample],
               capture_output=True)
if not os.path.exists(trace):
    sys.exit("record failed")
size_mib = os.path.getsize(trace) / (1024 * 1024)
PROGRESS = re.compile(r"\rtracecorn: ([a-z: ]+): (\d+) events, ([0-9.]+) of ([0-9.]+) MiB read \(\d+%\)\x1b\[K")
ERASE = "\r\x1b[K"


def on_terminal(command):
    """The transcript of `command` run by a shell on a pseudo-terminal, and its exit status."""
    done = subprocess.run(["script", "-qec", command, "/dev/null"], capture_output=True, stdin=subprocess.DEVNULL)
    return done.stdout.decode(errors="replace"), done.returncode


def quoted(*args):
    return " ".join(shlex.quote(a) for a in args)


cases = [
    ("stat", ["stat", trace], None, 0),
    ("dump", ["dump", trace], os.path.join(work, "dump.txt"), 0),
    ("convert", ["convert", trace, os.path.join(work, "out.frames"), "--format", "frames"], None, 0),
    ("drcov", ["convert", trace, os.path.join(work, "out.drcov"), "--format", "drcov"], None, 0),
    ("replay: comparing", ["replay", trace, "--", sample], None, 0),
]
for label, args, stdout_file, status in cases:
    command = quoted(tracecorn, *args) + (" > " + shlex.quote(stdout_file) if stdout_file else "")
    transcript, got = on_terminal(command)
    if got != status:
        sys.exit(f"{label}: exit status {got} on a terminal: {transcript}")
    lines = [m for m in PROGRESS.finditer(transcript) if m.group(1) == label]
    if not lines:
        sys.exit(f"{label}: no progress line on a terminal: {transcript!r}")
    last = lines[-1]
    if int(last.group(2)) <= 0 or abs(float(last.group(4)) - size_mib) > 0.06 or \
            float(last.group(3)) > float(last.group(4)) + 0.05:
        sys.exit(f"{label}: implausible progress: {last.group(0)!r} (file {size_mib:.2f} MiB)")
    if ERASE not in transcript[last.end():]:
        sys.exit(f"{label}: the progress line is not erased")
    cleaned = PROGRESS.sub("", transcript).replace(ERASE, "").replace("\r\n", "\n")
    # The same command with pipes: no progress, and the same output.
    piped = subprocess.run([tracecorn] + args, capture_output=True, text=True)
    if piped.returncode != status:
        sys.exit(f"{label}: exit status {piped.returncode} with pipes")
    if "\x1b" in piped.stderr or "\r" in piped.stderr or "MiB read" in piped.stderr:
        sys.exit(f"{label}: progress printed into a pipe: {piped.stderr!r}")
    if stdout_file:
        with open(stdout_file) as f:
            if f.read() != piped.stdout:
                sys.exit(f"{label}: the dump redirected to a file on a terminal differs from the piped one")
        if cleaned != piped.stderr:
            sys.exit(f"{label}: stderr differs: {cleaned!r} vs {piped.stderr!r}")
    elif label in ("stat", "replay: comparing") and cleaned != piped.stdout + piped.stderr:
        sys.exit(f"{label}: the output differs once the progress is removed: {cleaned!r} vs {piped.stdout!r}")
print(f"progress: {len(cases)} commands show it on a terminal and never in pipes")
