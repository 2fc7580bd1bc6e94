#!/usr/bin/env python3
# Role: gdb itself against `tracecorn debug`, compared with a reference
# session of the same program that nobody here wrote: native gdb (`starti`)
# on the host's architecture, gdb-multiarch on `qemu-<arch>-static -g` for
# the others. The sample is nested_calls (static), recorded at the full level.
# Compared with the reference (the same gdb commands on both):
#   - the backtrace (functions and pcs) at a breakpoint on level3 and on say;
#   - the pcs of eight stepi from level3;
#   - every stop of a write watchpoint on `sink` (the pc after the write and
#     the new value), run forwards to the program's end;
#   - (host only) the number of write() syscalls `catch syscall write` stops at.
# Checked on the trace alone (there is nothing to compare reverse execution with):
#   - reverse-stepi eight times retraces the forward stepi pcs, with the same
#     general registers at each step;
#   - reverse-finish from say lands on the call instruction before the return
#     address the reference's backtrace shows;
#   - reverse-continue with the watchpoint stops, in reverse order, at the
#     instruction just before each forward stop;
#   - "No more reverse-execution history" at both ends, and the session stays.
# Usage: check_gdb_session.py TRACECORN ARCH PROGRAM WORK_DIR [QEMU]
# Exit 0 when all holds; 1 with the differences; 77 (skip) when gdb is missing.
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True  # nothing written into the source tree
from debug_client import failure_list, free_port, gdb_check_arguments, gdb_on_server, record_full  # noqa: E402

TRACECORN, ARCH, PROGRAM, WORK, QEMU, GDB, TIMEOUT = gdb_check_arguments(sys.argv)
failures, check = failure_list()


def pcs_after(output, label="PC"):
    return [int(m, 16) for m in re.findall(r"^%s ([0-9a-f]+)$" % label, output, re.M)]


def section(output, name):
    found = re.findall(r"^%s\n(.*?)^END%s$" % (name, name), output, re.M | re.S)
    return found


def frames(backtrace):
    """(function, pc) per frame; frame 0's pc is the breakpoint's, not shown by bt."""
    out = []
    for line in backtrace.splitlines():
        m = re.match(r"#(\d+)\s+(?:(0x[0-9a-f]+) in )?(\S+) \(", line)
        if m:
            out.append((m.group(3), int(m.group(2), 16) if m.group(2) else None))
    return out


def run_gdb(commands, connect):
    args = [GDB, "-batch", "-nx", "-ex", "set pagination off", "-ex", "set confirm off", "-ex", "set width 0"]
    if ARCH != "x86_64" or QEMU:
        args += ["-ex", "set architecture auto"]
    args += ["-ex", connect]
    for command in commands:
        args += ["-ex", command]
    args.append(PROGRAM)
    result = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=TIMEOUT,
                            stdin=subprocess.DEVNULL)
    return result.stdout


def stepi_commands(count):
    out = []
    for _ in range(count):
        out += ["stepi", 'printf "PC %lx\\n", $pc']
    return out


FORWARD = (["break level3", "continue", 'printf "BT\\n"', "bt", 'printf "ENDBT\\n"', 'printf "AT %lx\\n", $pc']
           + stepi_commands(8)
           + ["delete", "break say", "continue", 'printf "BT\\n"', "bt", 'printf "ENDBT\\n"', "delete",
              "watch sink"]
           + sum([["continue", 'printf "WPC %lx\\n", $pc'] for _ in range(6)], []))


REGISTERS = ['printf "REGS\\n"', "info registers", 'printf "ENDREGS\\n"']


def reference_session(commands):
    if not QEMU:
        return run_gdb(commands, "starti")
    port = free_port()
    qemu = subprocess.Popen([QEMU, "-g", str(port), PROGRAM], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        # qemu-user's gdb stub has no watchpoints: gdb single-steps (software watchpoints, the same stops).
        return run_gdb(["set can-use-hw-watchpoints 0"] + commands, "target remote 127.0.0.1:%d" % port)
    finally:
        qemu.kill()
        qemu.wait()


def tracecorn_session(trace, commands):
    return gdb_on_server(TRACECORN, trace, lambda connect: run_gdb(commands, connect), failures, TIMEOUT)


def watch_stops(output):
    output = output.split("\nREVERSE\n")[0]  # the forward stops only
    values = [int(v) for v in re.findall(r"^New value = (-?\d+)", output, re.M)]
    return list(zip(values, pcs_after(output, "WPC")[:len(values)]))


trace = os.path.join(WORK, "nested_calls.ucir")
record_full(TRACECORN, [PROGRAM], trace, TIMEOUT)

reference = reference_session(FORWARD)
ours = tracecorn_session(trace, FORWARD + [
    # Back from the end: the watchpoint's writes in reverse, then the start.
    'printf "REVERSE\\n"'] + sum([["reverse-continue", 'printf "RPC %lx\\n", $pc', 'x/2i $pc'] for _ in range(6)], []) + [
    "delete", "reverse-stepi", "reverse-stepi", 'printf "START %lx\\n", $pc',
    # Forward steps from level3, then back over them.
    "break level3", "continue", "delete", 'printf "AT %lx\\n", $pc', "info registers"]
    + sum([["stepi", 'printf "FPC %lx\\n", $pc'] + REGISTERS for _ in range(8)], [])
    + sum([["reverse-stepi", 'printf "BPC %lx\\n", $pc'] + REGISTERS for _ in range(8)], [])
    + ["break say", "continue", "delete", 'printf "BT\\n"', "bt", 'printf "ENDBT\\n"', "reverse-finish",
       'printf "CALLER %lx\\n", $pc', "x/2i $pc",
       "continue", "continue", 'printf "END %lx\\n", $pc'])
with open(os.path.join(WORK, "reference.txt"), "w") as f:
    f.write(reference)
with open(os.path.join(WORK, "tracecorn.txt"), "w") as f:
    f.write(ours)

# Backtraces at level3 and say.
ref_bts, our_bts = section(reference, "BT"), section(ours, "BT")
check(len(ref_bts) == 2 and len(our_bts) == 3, "backtraces: %d in the reference, %d here" % (len(ref_bts), len(our_bts)))
for name, ref_bt, our_bt in zip(("level3", "say"), ref_bts, our_bts):
    check(frames(ref_bt) == frames(our_bt) and frames(ref_bt),
          "backtrace at %s: reference %s, tracecorn %s" % (name, frames(ref_bt), frames(our_bt)))
# stepi from level3: the first seven (the eighth enters the strlen the C library chose for the CPU it runs on).
ref_steps, our_steps = pcs_after(reference)[:7], pcs_after(ours)[:7]
check(len(ref_steps) == 7 and ref_steps == our_steps,
      "stepi pcs: reference %s, tracecorn %s" % ([hex(p) for p in ref_steps], [hex(p) for p in our_steps]))
# The watchpoint, forwards.
ref_watch, our_watch = watch_stops(reference), watch_stops(ours)
check(len(ref_watch) >= 2 and ref_watch == our_watch[:len(ref_watch)] and len(our_watch) >= len(ref_watch),
      "watch sink: reference %s, tracecorn %s" % (ref_watch, our_watch))
# The watchpoint, backwards: each stop at the instruction before a forward stop.
reverse_pcs = pcs_after(ours, "RPC")
next_after = [int(a, 16) for a in re.findall(r"^RPC [0-9a-f]+\n.*\n\s+(0x[0-9a-f]+)", ours, re.M)]
forward_pcs = [pc for _, pc in ref_watch]
check(sorted(next_after[:len(forward_pcs)]) == sorted(forward_pcs),
      "reverse watch: stops at %s, next instructions %s, forward stops %s" %
      ([hex(p) for p in reverse_pcs], [hex(p) for p in next_after], [hex(p) for p in forward_pcs]))
check(ours.count("No more reverse-execution history.") >= 3,
      "replaylog at the ends: %d times" % ours.count("No more reverse-execution history."))
# reverse-stepi retraces stepi, registers included.
forward, backward = pcs_after(ours, "FPC"), pcs_after(ours, "BPC")
at = pcs_after(ours, "AT")
check(len(forward) == 8 and len(backward) == 8 and backward == ([at[-1]] + forward[:-1])[::-1][:8] if at else False,
      "reverse-stepi: forward %s, backward %s" % ([hex(p) for p in forward], [hex(p) for p in backward]))


def register_dumps(output, label):
    return re.findall(r"^%s [0-9a-f]+\nREGS\n(.*?)^ENDREGS$" % label, output, re.M | re.S)


forward_regs = register_dumps(ours, "FPC")
backward_regs = register_dumps(ours, "BPC")
if len(forward_regs) == 8 and len(backward_regs) == 8:
    for i in range(7):
        check(backward_regs[i] == forward_regs[6 - i], "registers after reverse-stepi %d differ from stepi %d" % (i + 1, 7 - i))
else:
    failures.append("register dumps: %d forward, %d backward" % (len(forward_regs), len(backward_regs)))
# reverse-finish: the call before say's return address (as this session's own backtrace, compared above, shows it).
caller = pcs_after(ours, "CALLER")
say_frames = frames(our_bts[2]) if len(our_bts) == 3 else []
return_address = say_frames[1][1] if len(say_frames) > 1 else None
check(caller and return_address and 0 < return_address - caller[0] <= 8,
      "reverse-finish from say: at %s, the reference's return address %s" %
      ([hex(p) for p in caller], hex(return_address) if return_address else None))
# syscall catching, host only (qemu 7.2's gdb stub has no QCatchSyscalls).
if not QEMU:
    catch = ["catch syscall write"] + ["continue"] * 12
    ref_catch = reference_session(catch).count("call to syscall write")
    our_catch = tracecorn_session(trace, catch).count("call to syscall write")
    check(ref_catch >= 3 and ref_catch == our_catch, "catch syscall write: reference %d stops, tracecorn %d" %
          (ref_catch, our_catch))

if failures:
    print("\n".join(failures))
    print("(sessions in %s)" % WORK)
    sys.exit(1)
print("%s: gdb on tracecorn debug matches %s: %d watch stops, %d stepi, backtraces %s" %
      (ARCH, "qemu-user" if QEMU else "native gdb", len(ref_watch), len(ref_steps), [f for f, _ in frames(ref_bts[1])]))
