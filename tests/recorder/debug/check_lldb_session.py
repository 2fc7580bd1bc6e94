#!/usr/bin/env python3
# Role: LLDB (Debian's lldb) on `tracecorn debug`, against LLDB running the
# same program natively: the remote protocol as LLDB speaks it (its own
# qSupported, qHostInfo-less start, register and memory reads through gdb's
# target description). Over the sample nested_calls recorded at the full
# level: a breakpoint on write, continue, the backtrace (functions,
# arguments, source lines), rip there, one `si` and rip after it, a second
# continue and its backtrace; LLDB's own answers natively are the reference
# (the program is static and not position-independent: addresses agree).
# The server must end when LLDB quits.
# Usage: check_lldb_session.py TRACECORN PROGRAM WORK_DIR
# Exit 0 when all holds; 1 with the differences; 77 (skip) when lldb is missing.
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True  # nothing written into the source tree
from debug_client import failure_list, gdb_on_server, record_full  # noqa: E402

TRACECORN, PROGRAM, WORK = sys.argv[1:4]
LLDB = shutil.which("lldb")
if not LLDB:
    print("no lldb here: skipped")
    sys.exit(77)
os.makedirs(WORK, exist_ok=True)
TIMEOUT = 120 * int(os.environ.get("TRACECORN_TEST_TIMEOUT_SCALE", "1"))
COMMANDS = ["b write", "{start}", "bt", "register read rip", "si", "register read rip", "c", "bt"]
failures, check = failure_list()


def lldb(start, before=()):
    args = [LLDB, "-b", "-x"]  # -x: no ~/.lldbinit
    for command in list(before) + COMMANDS:
        args += ["-o", command.format(start=start)]
    return subprocess.run(args + [PROGRAM], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=TIMEOUT, stdin=subprocess.DEVNULL).stdout


def answers(output):
    """What LLDB said after the start, without pids, thread names and stack addresses: stop reasons,
    frames (function, arguments, source line) and rip values."""
    found = []
    started = False
    for line in output.splitlines():
        if not started:
            started = "stop reason = breakpoint" in line
        if not started:
            continue
        m = re.search(r"stop reason = (.*)$", line)
        if m and line.lstrip().startswith("* thread"):
            found.append(("stop", m.group(1)))
            continue
        m = re.match(r"\s*\*?\s*frame #(\d+): 0x([0-9a-f]+) (\S+?)(\(.*\))?(?: at (\S+))?(?: \+ \d+)?"
                     r"(?: \[artificial\])?$", line)
        if m:
            arguments = re.sub(r"0x[0-9a-f]{8,}", "ADDR", m.group(4) or "")  # argv and the like differ
            found.append(("frame", int(m.group(1)), m.group(2), m.group(3), arguments, m.group(5)))
            continue
        m = re.match(r"\s*rip = 0x([0-9a-f]+)", line)
        if m:
            found.append(("rip", m.group(1)))
    return found


trace = os.path.join(WORK, "nested_calls.ucir")
record_full(TRACECORN, [PROGRAM], trace, TIMEOUT)


def lldb_on_server(connect):
    port = connect.rsplit(":", 1)[1]
    return lldb("c", ["gdb-remote 127.0.0.1:" + port])


ours = gdb_on_server(TRACECORN, trace, lldb_on_server, failures, TIMEOUT)
reference = lldb("r")
for name, text in (("tracecorn", ours), ("reference", reference)):
    with open(os.path.join(WORK, name + ".txt"), "w") as f:
        f.write(text)
got, expected = answers(ours), answers(reference)
check(len(expected) > 10 and any(a[0] == "frame" and a[3].endswith("`level3") for a in expected),
      "the native LLDB session did not reach write() under level3: %s" % expected)
check(got == expected, "LLDB over tracecorn debug says\n  %s\nnatively\n  %s" % (got, expected))

if failures:
    print("\n".join(failures))
    sys.exit(1)
print("LLDB over tracecorn debug answers as natively: %d stops, frames and registers" % len(got))
