# Role: the ground truth for the cross-architecture stack tests: gdb-multiarch,
# attached to qemu-<arch>-static's gdb stub (qemu-user has no `catch syscall`),
# stops at every trap instruction of the program (each address objdump
# disassembles as the trap: `svc #0x0` on aarch64, `int $0x80` on i386) and prints gdb's own
# backtrace there, past main and past the entry point.
# Who calls it: tests/recorder/unwind/cross_stacks_test.cpp, through
#   QEMU -g SOCKET PROGRAM & gdb-multiarch -batch -nx -x gdb_trap_stacks.py PROGRAM
# with the environment TRACECORN_GDB_TARGET (the socket path), TRACECORN_OBJDUMP
# (the architecture's objdump), TRACECORN_TRAP_REGEX (the disassembly of the
# trap, a Python regex), TRACECORN_TRAP_LENGTH (its size in bytes) and
# TRACECORN_SYSCALL_REGISTER (gdb's name of the syscall number's register).
# A trap length of 0 means arm: 2 bytes in Thumb state (CPSR bit 5), else 4.
# Output (stdout), one block per trap reached:
#   syscall NUMBER                          (the syscall number register: $x8, $eax)
#   frame PC START NAME                     (START: NAME's address, from `info symbol`)
#   frame PC ? ?                            (a pc no symbol covers)
#   sigtramp PC                             (gdb's signal trampoline frame,
#                                            `<signal handler called>`)
# Stops for a signal the program receives (qemu's stub reports them) are not
# traps: gdb passes the signal on and they print nothing.
# The frames are those `backtrace` prints (see the walk below for where
# Python's Frame.older() alone would stop one frame short).
# Frame 0's PC is the address after the trap (where the kernel resumes; the
# convention tracecorn's stacks use); the other PCs are return addresses, each
# looked up at PC - 1 (a call may end a function). Only physical frames are
# printed (not gdb's inline or tail-call frames). Lines gdb prints by itself
# ("Breakpoint N, ...") start with neither word.
# Invariant: static (ET_EXEC) programs only: qemu-user loads a PIE elsewhere
# than Linux (and tracecorn) do, so their addresses would not compare.
import os
import re
import subprocess

import gdb

for setting in ("pagination off", "confirm off", "backtrace past-main on", "backtrace past-entry on",
                "debuginfod enabled off"):
    try:
        gdb.execute("set " + setting)
    except gdb.error:
        pass

program = gdb.current_progspace().filename
listing = subprocess.run([os.environ["TRACECORN_OBJDUMP"], "-d", "--no-show-raw-insn", program],
                         capture_output=True, text=True, check=True).stdout
trap = re.compile(r"^\s*([0-9a-f]+):\s+" + os.environ["TRACECORN_TRAP_REGEX"] + r"\s*$", re.M)
traps = [int(match.group(1), 16) for match in trap.finditer(listing)]
if not traps:
    raise gdb.GdbError("no trap instruction in " + program)
for address in traps:
    gdb.execute("break *0x%x" % address, to_string=True)
trap_length = int(os.environ["TRACECORN_TRAP_LENGTH"])
gdb.execute("target remote " + os.environ["TRACECORN_GDB_TARGET"], to_string=True)

last_stop = [None]
gdb.events.stop.connect(lambda event: last_stop.__setitem__(0, event))
symbol_line = re.compile(r"^(\S+)(?: \+ (\d+))? in section ")


def describe(pc, lookup):
    """'PC START NAME' for the symbol covering `lookup`."""
    text = gdb.execute("info symbol 0x%x" % lookup, to_string=True).strip()
    match = symbol_line.match(text)
    if not match:
        return "%x ? ?" % pc
    offset = int(match.group(2) or 0)
    return "%x %x %s" % (pc, lookup - offset, match.group(1))


while True:
    try:
        gdb.execute("continue", to_string=True)
    except gdb.error:
        break  # the program has exited: the stub closed the connection
    if gdb.selected_inferior().pid == 0:
        break
    if isinstance(last_stop[0], gdb.SignalEvent):
        continue
    print("syscall %d" % int(gdb.parse_and_eval(os.environ["TRACECORN_SYSCALL_REGISTER"])))
    frame = gdb.newest_frame()
    first = True
    level = 0
    while frame is not None:
        if frame.type() == gdb.SIGTRAMP_FRAME:
            print("sigtramp %x" % frame.pc())
            first = False
        elif frame.type() not in (gdb.INLINE_FRAME, gdb.TAILCALL_FRAME):
            if first:
                length = trap_length
                if length == 0:
                    length = 2 if int(gdb.parse_and_eval("$cpsr")) & 0x20 else 4
                print("frame " + describe(frame.pc() + length, frame.pc()))
            else:
                print("frame " + describe(frame.pc(), frame.pc() - 1))
            first = False
        try:
            frame = frame.older()
        except gdb.error:
            # Frame.older() also unwinds one frame further (to tell whether the
            # new frame ends a corrupt stack) and raises when that fails
            # ("PC not saved": gdb's riscv prologue unwinder leaves the caller's
            # ra unknown), dropping a frame `backtrace` prints. Select it by
            # level as `backtrace` reaches it; none there ends the stack.
            try:
                gdb.execute("frame %d" % (level + 1), to_string=True)
                frame = gdb.selected_frame()
            except gdb.error:
                break
            if frame.level() != level + 1:
                break
        level += 1
