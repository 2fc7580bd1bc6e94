# Role: the ground truth for the unwinder's stack tests: runs a program natively
# under gdb (batch mode), stops at every syscall entry (catch syscall) and
# prints gdb's own backtrace there, past main and past the entry point.
# Usage: gdb -batch -nx -x gdb_syscall_stacks.py --args PROGRAM [ARGS...]
# Output (stdout), one block per syscall entry:
#   syscall NUMBER
#   frame MODULE_BASENAME OFFSET_HEX     (offset from the module's lowest mapping)
#   frame ? PC_HEX                       (a pc in no file mapping)
#   frame <signal handler called> MODULE_BASENAME OFFSET_HEX
#                                        (gdb's signal trampoline frame)
# Stops for a signal the program receives are not syscalls: gdb passes the
# signal on and they print nothing. The program's own output goes to /dev/null. Frame 0 is the pc gdb reports at
# the syscall entry: the address after the syscall instruction. Only physical
# frames are printed (not gdb's inline or tail-call frames).
import os
import gdb

for setting in ("pagination off", "confirm off", "backtrace past-main on", "backtrace past-entry on",
                "debuginfod enabled off", "disable-randomization on"):
    try:
        gdb.execute("set " + setting)
    except gdb.error:
        pass
gdb.execute("catch syscall")
last_stop = [None]
gdb.events.stop.connect(lambda event: last_stop.__setitem__(0, event))


def mappings():
    """(start, end, path) of every file mapping, and each file's lowest start."""
    text = gdb.execute("info proc mappings", to_string=True)
    spans, lowest = [], {}
    for line in text.splitlines():
        words = line.split()
        if len(words) < 5 or not words[0].startswith("0x"):
            continue
        path = words[-1] if words[-1].startswith("/") else None
        start, end = int(words[0], 16), int(words[1], 16)
        if path:
            spans.append((start, end, path))
            lowest[path] = min(lowest.get(path, start), start)
    return spans, lowest


def describe(pc, spans, lowest):
    for start, end, path in spans:
        if start <= pc < end:
            return "frame %s %x" % (os.path.basename(path), pc - lowest[path])
    return "frame ? %x" % pc


# Stops alternate between a syscall's entry and its return (exit_group has no
# return: the process is gone after it).
gdb.execute("run > /dev/null", to_string=True)
entering = True
while gdb.selected_inferior().pid != 0:
    if isinstance(last_stop[0], gdb.SignalEvent):  # a signal, not a syscall stop: pass it on
        try:
            gdb.execute("continue", to_string=True)
        except gdb.error:
            break
        continue
    if entering:
        # ld.so tells gdb about new libraries only at its r_debug breakpoint;
        # a syscall made before that (libc's early init) would be unwound
        # without libc's CFI. Re-reading the link map now loads it.
        gdb.execute("sharedlibrary", to_string=True)
        spans, lowest = mappings()
        number = int(gdb.parse_and_eval("$orig_rax"))
        print("syscall %d" % number)
        frame = gdb.newest_frame()
        while frame is not None:
            # Inline and tail-call frames are gdb's reconstructions from debug
            # info (the samples carry -g): no return address of theirs is on
            # the stack, so an unwinder cannot (and should not) report them.
            if frame.type() == gdb.SIGTRAMP_FRAME:
                print(describe(frame.pc(), spans, lowest).replace("frame ", "frame <signal handler called> ", 1))
            elif frame.type() not in (gdb.INLINE_FRAME, gdb.TAILCALL_FRAME):
                print(describe(frame.pc(), spans, lowest))
            try:
                frame = frame.older()
            except gdb.error:
                break
    entering = not entering
    try:
        gdb.execute("continue", to_string=True)
    except gdb.error:
        break
