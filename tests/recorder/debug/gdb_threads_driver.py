# Role: the gdb side of check_gdb_threads.py: a script for gdb's Python API,
# run by gdb (-x) connected to `tracecorn debug` over the sample
# debug_threads. It drives the session and prints one line per fact, for
# check_gdb_threads.py to compare with the trace's own events:
#   HIT event thread which k alive    each stop at worker_step, forwards
#   BT ... ENDBT                      the backtrace at the first hit
#   END                               the trace's end reached
#   RHIT event thread                 each stop at worker_step, reverse-continue from the end
#   OTHER thread pc                   another thread's pc at the first hit
#   OSTEP event thread pc             stepi of that other thread, three times
#   OBACK event thread pc             reverse-stepi of it, three times
# Threads are named by their tids (the trace's), events by `monitor when`.
import re

import gdb


def when():
    text = gdb.execute("monitor when", to_string=True)
    m = re.search(r"event (\d+) of .* thread (\d+)", text)
    return (int(m.group(1)), int(m.group(2))) if m else (-1, -1)


def tid(thread):
    pid, lwp, extra = thread.ptid
    return lwp or extra or pid


def alive():
    return ",".join(str(t) for t in sorted(tid(thread) for thread in gdb.selected_inferior().threads()))


def pc():
    return int(gdb.parse_and_eval("$pc")) & 0xFFFFFFFFFFFFFFFF


def hit_line(prefix, with_arguments):
    event, _ = when()
    line = "%s %d %d" % (prefix, event, tid(gdb.selected_thread()))
    if with_arguments:
        line += " %d %d %s" % (int(gdb.parse_and_eval("which")), int(gdb.parse_and_eval("k")), alive())
    print(line)


def at_breakpoint():
    """Whether the stop is at worker_step's breakpoint (else: an end of the trace)."""
    try:
        return gdb.selected_frame().name() == "worker_step" and BREAK_PC in (pc(), None)
    except gdb.error:
        return False


gdb.execute("break worker_step")
BREAK_PC = None  # the first stop's pc
hits = 0
while hits < 20:
    gdb.execute("continue", to_string=True)
    if BREAK_PC is None:
        BREAK_PC = pc()
    if not at_breakpoint():
        print("END")
        break
    hits += 1
    hit_line("HIT", True)
    if hits == 1:
        print("BT\n" + gdb.execute("bt", to_string=True) + "ENDBT")
for _ in range(hits):
    gdb.execute("reverse-continue", to_string=True)
    if not at_breakpoint():
        break
    hit_line("RHIT", False)
# At the first hit again: every other thread's pc, then steps of the other worker (or main).
event, current = when()
others = [thread for thread in gdb.selected_inferior().threads() if tid(thread) != current]
gdb.execute("delete")
for thread in others:
    thread.switch()
    print("OTHER %d %x" % (tid(thread), pc()))
if others:
    chosen = max(others, key=tid)  # the newest thread: the other worker when it is alive
    chosen.switch()
    for command, label in (("stepi", "OSTEP"), ("reverse-stepi", "OBACK")):
        for _ in range(3):
            gdb.execute(command, to_string=True)
            event, shown = when()
            print("%s %d %d %x" % (label, event, tid(gdb.selected_thread()), pc()))
