# Role: the ground truth for the i386 stack test (stacks_test.cpp): gdb-multiarch
# attached to `qemu-i386-static -g PORT PROGRAM` stops at every `int 0x80` (a
# breakpoint on each one; qemu's gdb stub has no `catch syscall`) and prints
# gdb's backtrace there, past main and past the entry point.
# Usage: gdb-multiarch -batch -nx -ex 'set $base = BASE' -ex 'file PROGRAM'
#          -ex 'target remote :PORT' [-ex 'break *ADDRESS']... -x gdb_int80_stacks.py
# BASE is the program's lowest mapped address (a static, position-dependent
# program: its only module). Output (stdout), one block per syscall entry:
#   syscall NUMBER                     (eax at the int 0x80)
#   frame MODULE_BASENAME OFFSET_HEX   (offset from BASE)
# Frame 0 is printed as the address after the 2-byte `int 0x80`, tracecorn's
# convention for a syscall's frame 0. Only physical frames are printed.
import os
import gdb

for setting in ("pagination off", "confirm off", "backtrace past-main on", "backtrace past-entry on"):
    try:
        gdb.execute("set " + setting)
    except gdb.error:
        pass

base = int(gdb.parse_and_eval("$base"))
module = os.path.basename(gdb.current_progspace().filename)
while True:
    try:
        gdb.execute("continue", to_string=True)
    except gdb.error:
        break
    if gdb.selected_inferior().pid == 0 or not gdb.selected_thread():
        break
    print("syscall %d" % (int(gdb.parse_and_eval("$eax")) & 0xffffffff))
    frame = gdb.newest_frame()
    first = True
    while frame is not None:
        if frame.type() not in (gdb.INLINE_FRAME, gdb.TAILCALL_FRAME):
            pc = frame.pc() + (2 if first else 0)
            print("frame %s %x" % (module, pc - base) if pc >= base else "frame ? %x" % pc)
            first = False
        try:
            frame = frame.older()
        except gdb.error:
            break
