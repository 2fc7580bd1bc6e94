#!/usr/bin/env python3
# Role: gdb on `tracecorn debug` over a multi-threaded trace (the sample
# debug_threads at the full level), checked against what nobody in the
# debugger wrote: the trace's own events as `tracecorn dump` prints them (the
# reader, not the index the server uses), and, for the backtrace in a worker,
# a reference session of the same program (native gdb on the host's
# architecture, gdb-multiarch on `qemu-<arch>-static -g` for the others).
# gdb_threads_driver.py drives gdb; compared here:
#   - every worker_step breakpoint hit, forwards: the thread gdb says stopped
#     is the thread the dump shows running that event, and the threads gdb
#     lists are those the dump has created and not exited; each thread's
#     calls come with its own arguments (which: one per thread; k: 1..5 in order);
#   - reverse-continue from the end stops at the same hits in reverse order;
#   - at the first hit, another thread's pc is the next instruction the dump
#     shows it running; three stepi of that thread follow its own next
#     instructions (the others run in between), and three reverse-stepi
#     come back the same way (on mips, never stopping in a branch's delay slot);
#   - the backtrace at the first hit names the reference's functions.
# Usage: check_gdb_threads.py TRACECORN ARCH PROGRAM WORK_DIR [QEMU]
# Exit 0 when all holds; 1 with the differences; 77 (skip) when gdb is missing.
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True  # nothing written into the source tree
from debug_client import failure_list, free_port, gdb_check_arguments, gdb_on_server, record_full  # noqa: E402

TRACECORN, ARCH, PROGRAM, WORK, QEMU, GDB, TIMEOUT = gdb_check_arguments(sys.argv)
REFERENCE_TRY = max(10, TIMEOUT // 12)  # seconds for one reference session
DRIVER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "gdb_threads_driver.py")
failures, check = failure_list()


def gdb_args(connect):
    args = [GDB, "-batch", "-nx", "-ex", "set pagination off", "-ex", "set confirm off", "-ex", "set width 0"]
    if QEMU:
        args += ["-ex", "set architecture auto"]
    return args + ["-ex", connect]


def run(args):
    return subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=TIMEOUT,
                          stdin=subprocess.DEVNULL).stdout


def reference_backtrace():
    commands = ["break worker_step", "continue", "bt"]
    if not QEMU:
        return run(gdb_args("starti") + sum([["-ex", c] for c in commands], []) + [PROGRAM])
    # qemu-user's gdb stub sometimes never reports the breakpoint of a
    # threaded program, or hangs as gdb reads the stopped thread (seen on
    # arm, mips and aarch64; on arm 4 sessions in 10 on a quiet machine): a
    # session that lasts past REFERENCE_TRY seconds (a good one takes about
    # one) is cut and tried again (below).
    port = free_port()
    qemu = subprocess.Popen([QEMU, "-g", str(port), PROGRAM], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        return subprocess.run(gdb_args("target remote 127.0.0.1:%d" % port) + sum([["-ex", c] for c in commands], [])
                              + [PROGRAM], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              timeout=REFERENCE_TRY, stdin=subprocess.DEVNULL).stdout
    except subprocess.TimeoutExpired:
        print("the reference session (gdb on qemu -g) hung: trying again")
        return ""
    finally:
        qemu.kill()
        qemu.wait()


def tracecorn_session(trace, extra):
    return gdb_on_server(TRACECORN, trace, lambda connect: run(gdb_args(connect) + extra + [PROGRAM]), failures,
                         TIMEOUT)


def backtrace_functions(output):
    names = re.findall(r"^#\d+\s+(?:0x[0-9a-f]+ in )?(\S+) \(", output, re.M)
    # Three frames: below start_thread is the C library's clone or clone3, as the kernel (or qemu) offers clone3.
    return names[:names.index("worker_step") + 3] if "worker_step" in names else []


class Dump:
    """The trace's instructions with their threads, and the threads' lives, from `tracecorn dump`."""

    def __init__(self, text):
        self.instructions = []  # (event, pc, thread)
        self.created, self.exited = [], []  # (event, thread)
        self.first = None
        current = None
        pending = []  # instructions before the first thread is known
        for line in text.splitlines():
            m = re.match(r"#(\d+) thread (\d+) (created by|switched from|exited)(?: (\d+))?", line)
            if m:
                event, thread = int(m.group(1)), int(m.group(2))
                if m.group(3) == "created by":
                    self.created.append((event, thread))
                    if self.first is None:
                        self.first = int(m.group(4))
                elif m.group(3) == "exited":
                    self.exited.append((event, thread))
                else:
                    if self.first is None:
                        self.first = int(m.group(4))
                    current = thread
                continue
            m = re.match(r"#(\d+) insn (0x[0-9a-f]+) (\S*)", line)
            if m:
                pending.append((int(m.group(1)), int(m.group(2), 16), current, m.group(3)))
        self.instructions = []
        last = {}  # per thread: its previous instruction's pc and mnemonic
        for e, pc, t, mnemonic in pending:
            t = t if t is not None else self.first
            before = last.get(t)
            last[t] = (pc, mnemonic)
            # gdb steps over a mips branch's delay slot (it never stops there), and so does tracecorn backwards.
            if ARCH.startswith("mips") and before and before[0] + 4 == pc and re.match(r"^(b|j)", before[1]) \
                    and before[1] != "break":
                continue
            self.instructions.append((e, pc, t))

    def thread_at(self, event):
        for e, _, t in self.instructions:
            if e == event:
                return t
        return None

    def alive_at(self, event):
        alive = {self.first} | {t for e, t in self.created if e < event}
        return sorted(alive - {t for e, t in self.exited if e < event})

    def of_after(self, thread, event):
        return [(e, pc) for e, pc, t in self.instructions if t == thread and e > event]


trace = os.path.join(WORK, "debug_threads.ucir")
record_full(TRACECORN, [PROGRAM], trace, TIMEOUT)
dump = Dump(run([TRACECORN, "dump", "--kind", "insn,thread", trace]))
check(dump.first is not None and len(dump.created) == 2, "the dump shows %d threads created" % len(dump.created))

ours = tracecorn_session(trace, ["-x", DRIVER])
# qemu-user's gdb stub sometimes drops the connection while threads start (no backtrace, or one cut short), or
# hangs: try again then, for at most half the test's time.
reference_deadline = time.monotonic() + TIMEOUT // 2
while True:
    reference = reference_backtrace()
    if len(backtrace_functions(reference)) == 3 or time.monotonic() + REFERENCE_TRY > reference_deadline:
        break
with open(os.path.join(WORK, "tracecorn.txt"), "w") as f:
    f.write(ours)
with open(os.path.join(WORK, "reference.txt"), "w") as f:
    f.write(reference)

hits = [line.split()[1:] for line in ours.splitlines() if line.startswith("HIT ")]
check(len(hits) == 10, "%d worker_step hits (10 expected)" % len(hits))
calls = {}  # thread: [(which, k)]
for event, thread, which, k, alive in hits:
    event, thread = int(event), int(thread)
    check(dump.thread_at(event) == thread,
          "hit at event %d: gdb says thread %d, the dump %s" % (event, thread, dump.thread_at(event)))
    listed = sorted(int(t) for t in alive.split(","))
    check(listed == dump.alive_at(event), "hit at event %d: gdb lists threads %s, the dump has %s alive" %
          (event, listed, dump.alive_at(event)))
    calls.setdefault(thread, []).append((int(which), int(k)))
check(len(calls) == 2, "worker_step ran in %d threads (2 expected)" % len(calls))
check(sorted({w for c in calls.values() for w, _ in c}) == [0, 1] and
      all(len({w for w, _ in c}) == 1 and [k for _, k in c] == [1, 2, 3, 4, 5] for c in calls.values()),
      "each thread's arguments: %s" % calls)
check("END" in ours.splitlines(), "continue after the last hit did not reach the trace's end")
reverse = [(int(e), int(t)) for e, t in (line.split()[1:] for line in ours.splitlines() if line.startswith("RHIT "))]
check(reverse == [(int(h[0]), int(h[1])) for h in hits][::-1], "reverse-continue: %s" % reverse)

first_event = int(hits[0][0]) if hits else 0
others = {int(t): int(pc, 16) for t, pc in (line.split()[1:] for line in ours.splitlines() if line.startswith("OTHER "))}
check(sorted(others) == [t for t in dump.alive_at(first_event) if t != int(hits[0][1])] if hits else False,
      "other threads at the first hit: %s" % sorted(others))
for thread, pc in others.items():
    upcoming = dump.of_after(thread, first_event)
    check(upcoming and upcoming[0][1] == pc, "thread %d at the first hit: gdb's pc %x, the dump's next %s" %
          (thread, pc, hex(upcoming[0][1]) if upcoming else None))
steps = [tuple(int(v, 16) if i == 2 else int(v) for i, v in enumerate(line.split()[1:]))
         for line in ours.splitlines() if line.startswith("OSTEP ")]
backs = [tuple(int(v, 16) if i == 2 else int(v) for i, v in enumerate(line.split()[1:]))
         for line in ours.splitlines() if line.startswith("OBACK ")]
stepped = steps[0][1] if steps else None
upcoming = dump.of_after(stepped, first_event) if stepped else []
expected = [(e, stepped, pc) for e, pc in upcoming[1:4]]
check(len(steps) == 3 and steps == expected, "stepi of thread %s: %s, the dump's %s" % (stepped, steps, expected))
expected_back = [(e, stepped, pc) for e, pc in upcoming[:3]][::-1]
check(backs == expected_back, "reverse-stepi of thread %s: %s, the dump's %s" % (stepped, backs, expected_back))

bt_section = re.search(r"^BT\n(.*?)^ENDBT$", ours, re.M | re.S)
ref_bt, our_bt = backtrace_functions(reference), backtrace_functions(bt_section.group(1) if bt_section else "")
check(ref_bt and ref_bt == our_bt, "backtrace at the first hit: reference %s, tracecorn %s" % (ref_bt, our_bt))

if failures:
    print("\n".join(failures))
    print("(sessions in %s)" % WORK)
    sys.exit(1)
print("%s: gdb on tracecorn debug over %d threads: %d hits both ways, %d stepi and reverse-stepi of another "
      "thread, backtrace %s as %s" % (ARCH, len(dump.alive_at(first_event)), len(hits), len(steps), our_bt,
                                      "qemu-user" if QEMU else "native gdb"))
