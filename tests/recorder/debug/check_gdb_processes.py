#!/usr/bin/env python3
# Role: gdb on `tracecorn debug` over a recorded process tree (the sample
# debug_processes at the full level: a fork whose child execs the sample
# again, then a vfork), checked against what nobody in the debugger wrote:
#   - the trace's own fork events (`tracecorn dump --kind process`): the
#     pids gdb names at `catch fork` and `catch vfork`, and the inferiors
#     detach-on-fork off keeps;
#   - the sample's source: child_step(7) in the forked child, exec_step(3) in
#     the image its exec starts (catch exec names the program by its host
#     path, however the exec named it), parent_step(1) in the parent;
#     reverse-stepi at the exec'd image's first instruction and
#     reverse-continue in a child stop at the start of their trace; the
#     child's trace served on its own has its parent's auxiliary vector
#     (gdb relocates a PIE by it) and stops in child_step(7);
#   - on the host's architecture, a native gdb session of the same program
#     with the same commands (follow-fork-mode child; the default, following
#     the parent): the same stops in the same order, the same functions,
#     arguments and backtraces (pids aside); and a real program, Debian's
#     busybox sh running a pipeline then exec'ing its last command, followed
#     through its two forks and its exec as native gdb follows it, the
#     children it detaches never read (no index made for their traces).
#     qemu-user's gdb stub follows no forks, so the other architectures are
#     checked against the trace alone.
# Usage: check_gdb_processes.py TRACECORN ARCH PROGRAM WORK_DIR [QEMU]
# Exit 0 when all holds; 1 with the differences; 77 (skip) when gdb is missing.
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True  # nothing written into the source tree
from debug_client import failure_list, gdb_check_arguments, gdb_on_server, record_full  # noqa: E402

TRACECORN, ARCH, PROGRAM, WORK, QEMU, GDB, TIMEOUT = gdb_check_arguments(sys.argv)
failures, check = failure_list()
BUSYBOX = "/bin/busybox"  # Debian's busybox-static

FOLLOW_CHILD = ["catch fork", "catch exec", "set follow-fork-mode child", "break child_step", "break exec_step",
                "continue", "continue", "bt", "continue", "bt 1", "continue", "bt"]
FOLLOW_PARENT = ["catch vfork", "break parent_step", "continue", "bt", "continue", "bt"]
# Ours only: native gdb would hang here (the parent waits for the child gdb holds).
KEEP_BOTH = ["set detach-on-fork off", "break child_step", "break parent_step", "continue", "info inferiors",
             "inferior 2", "continue", "bt", "reverse-continue", "reverse-stepi", "inferior 1", "bt"]
AT_EXEC = ["catch exec", "set follow-fork-mode child", "continue", "reverse-stepi", "stepi", "info inferiors"]
# The forked child's trace served on its own: its auxiliary vector is found on its stack (gdb relocates a PIE by it).
CHILD_ALONE = ["info auxv", "break child_step", "continue", "bt"]
ROOT_AUXV = ["info auxv"]


def gdb_args(connect, commands):
    args = [GDB, "-batch", "-nx", "-ex", "set pagination off", "-ex", "set confirm off", "-ex", "set width 0"]
    if QEMU:
        args += ["-ex", "set architecture auto"]
    return args + ["-ex", connect] + sum([["-ex", c] for c in commands], []) + [PROGRAM]


def run(args):
    return subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=TIMEOUT,
                          stdin=subprocess.DEVNULL).stdout


def ours(trace, commands):
    return gdb_on_server(TRACECORN, trace, lambda connect: run(gdb_args(connect, commands)), failures, TIMEOUT)


def stops(output):
    """What gdb said at each stop, without pids, addresses, thread numbers and entry values: ("fork", function),
    ("vfork", function), ("exec", program, function), ("break", function, arguments), ("frame", function)."""
    found = []
    for line in output.splitlines():
        m = re.search(r"Catchpoint \d+ \((v?fork)ed process \d+\), (?:0x[0-9a-f]+ in )?(\S+) \(", line)
        if m:
            found.append((m.group(1), m.group(2)))
            continue
        m = re.search(r"Catchpoint \d+ \(exec'd (\S+)\), (?:0x[0-9a-f]+ in )?(\S+) \(", line)
        if m:
            found.append(("exec", m.group(1), m.group(2)))
            continue
        m = re.search(r"Breakpoint [\d.]+, (\S+) \(([^)]*)\)", line)
        if m:
            # "n=n@entry=7" where the value at entry is known too, "n=7" elsewhere (i386, mips).
            found.append(("break", m.group(1), re.sub(r"(\w+)=\1@entry=", r"\1=", m.group(2))))
            continue
        m = re.match(r"#\d+\s+(?:0x[0-9a-f]+ in )?(\S+) \(", line)
        if m:
            found.append(("frame", m.group(1)))
    return found


def caught_pids(output, kind):
    return [int(p) for p in re.findall(r"Catchpoint \d+ \(%sed process (\d+)\)" % kind, output)]


trace = os.path.join(WORK, "debug_processes.ucir")
for name in os.listdir(WORK) if os.path.isdir(WORK) else []:
    if name.startswith("debug_processes.ucir"):
        os.remove(os.path.join(WORK, name))  # a tree from an earlier run
record_full(TRACECORN, [PROGRAM], trace, TIMEOUT)
processes = run([TRACECORN, "dump", "--kind", "process", trace])
forks = re.findall(r"^#\d+ process forked child (\d+) \((\w+)\)", processes, re.M)
check(len(forks) == 2, "the dump shows %d forks (2 expected): %s" % (len(forks), forks))
fork_child, vfork_child = (int(forks[0][0]), int(forks[1][0])) if len(forks) == 2 else (0, 0)
first = re.search(r", pid (\d+);", processes)
root = int(first.group(1)) if first else 0

sessions = {"follow-child": FOLLOW_CHILD, "follow-parent": FOLLOW_PARENT, "keep-both": KEEP_BOTH, "at-exec": AT_EXEC}
outputs = {name: ours(trace, commands) for name, commands in sessions.items()}
outputs["root-auxv"] = ours(trace, ROOT_AUXV)
outputs["child-alone"] = ours("%s.%d" % (trace, fork_child), CHILD_ALONE)
for name, text in outputs.items():
    with open(os.path.join(WORK, name + ".txt"), "w") as f:
        f.write(text)

# Following the child: the fork, child_step(7) in it, the exec into the sample again, exec_step(3) there.
child = outputs["follow-child"]
check(caught_pids(child, "fork") == [fork_child], "follow-child: catch fork names %s, the dump %d" %
      (caught_pids(child, "fork"), fork_child))
got = [s for s in stops(child) if s[0] != "frame"]
check(len(got) == 4 and got[0][0] == "fork" and got[1] == ("break", "child_step", "n=7") and
      got[2][0] == "exec" and os.path.realpath(got[2][1]) == os.path.realpath(PROGRAM) and
      got[3] == ("break", "exec_step", "n=3"), "follow-child stops: %s" % got)
check("is executing new program: " in child, "follow-child: gdb did not load the exec'd program")
# Following the parent: the child detached, parent_step(1), then the vfork.
parent = outputs["follow-parent"]
check("[Detaching after fork from child process %d]" % fork_child in parent,
      "follow-parent: gdb did not detach child %d" % fork_child)
got = [s for s in stops(parent) if s[0] != "frame"]
check(len(got) == 2 and got[0] == ("break", "parent_step", "n=1") and got[1][0] == "vfork",
      "follow-parent stops: %s" % got)
check(caught_pids(parent, "vfork") == [vfork_child], "follow-parent: catch vfork names %s, the dump %d" %
      (caught_pids(parent, "vfork"), vfork_child))
# Both kept: each moves on its own; the child's trace starts at its fork's return.
both = outputs["keep-both"]
inferiors = sorted(int(p) for p in re.findall(r"^\*?\s+\d+\s+process (\d+)", both, re.M))
check(inferiors == sorted([root, fork_child]), "keep-both: info inferiors lists %s, the dump has %s" %
      (inferiors, sorted([root, fork_child])))
got = [s for s in stops(both) if s[0] == "break"]
check(got == [("break", "parent_step", "n=1"), ("break", "child_step", "n=7")],
      "keep-both: the parent's and the child's stops: %s" % got)
check("No more reverse-execution history." in both, "keep-both: reverse-continue in the child did not reach the "
      "start of its trace")
check(re.search(r"^#0\s+parent_step \(n=(n@entry=)?1\)", both, re.M) is not None,
      "keep-both: back in inferior 1, the parent is not where it stopped")
# At the exec'd image's first instruction: nothing earlier in its trace.
at_exec = outputs["at-exec"]
check(at_exec.count("No more reverse-execution history.") == 1, "at-exec: reverse-stepi at the new image's start")

# The child's trace alone: the same auxiliary vector as its parent's, and child_step(7) where the source says.
auxv_lines = [re.findall(r"^\d+\s+AT_\w+.*$", outputs[name], re.M) for name in ("root-auxv", "child-alone")]
check(len(auxv_lines[0]) > 5 and auxv_lines[0] == auxv_lines[1],
      "the child's trace alone: info auxv %s, its parent's %s" % (auxv_lines[1], auxv_lines[0]))
check(("break", "child_step", "n=7") in stops(outputs["child-alone"]) and
      re.search(r"^#1 .* in main ", outputs["child-alone"], re.M) is not None,
      "the child's trace alone: no stop in child_step(7) called from main")

if not QEMU:
    # The same commands on the program itself under native gdb.
    for name in ("follow-child", "follow-parent"):
        reference = run(gdb_args("starti", sessions[name]))
        with open(os.path.join(WORK, name + ".reference.txt"), "w") as f:
            f.write(reference)
        check(stops(reference) == stops(outputs[name]), "%s: native gdb's stops %s, tracecorn's %s" %
              (name, stops(reference), stops(outputs[name])))

if not QEMU and os.path.exists(BUSYBOX):
    # A real program's tree: sh forks the pipeline's two commands, waits, then execs the last command.
    shell = [BUSYBOX, "sh", "-c", "echo hello | %s wc -c; %s true" % (BUSYBOX, BUSYBOX)]
    sh_trace = os.path.join(WORK, "sh.ucir")
    for name in os.listdir(WORK):
        if name.startswith("sh.ucir"):
            os.remove(os.path.join(WORK, name))
    record_full(TRACECORN, shell, sh_trace, TIMEOUT)
    sh_children = re.findall(r"^#\d+ process forked child (\d+) \(\w+\), trace (\S+)",
                             run([TRACECORN, "dump", "--kind", "process", sh_trace]), re.M)
    sh_forks = [int(pid) for pid, _ in sh_children]
    args = [GDB, "-batch", "-nx", "-ex", "set pagination off", "-ex", "set confirm off"]

    def shell_commands(start):  # native gdb runs the program, ours continues the trace
        return sum([["-ex", c] for c in ["catch fork", "catch exec", start, "continue", "continue"]], [])

    sh_ours = gdb_on_server(TRACECORN, sh_trace,
                            lambda connect: run(args + ["-ex", connect] + shell_commands("continue") + [BUSYBOX]),
                            failures, TIMEOUT)
    sh_native = run(args + shell_commands("run") + ["--args"] + shell)
    for name, text in (("sh", sh_ours), ("sh.reference", sh_native)):
        with open(os.path.join(WORK, name + ".txt"), "w") as f:
            f.write(text)
    kinds = [s[0] for s in stops(sh_ours) if s[0] != "frame"]
    check(kinds == ["fork", "fork", "exec"], "busybox sh: stops %s (fork, fork, exec expected)" % kinds)
    check(caught_pids(sh_ours, "fork") == sh_forks, "busybox sh: catch fork names %s, the dump %s" %
          (caught_pids(sh_ours, "fork"), sh_forks))
    # gdb detached both children at their forks: their traces were never read (no index made beside them).
    indexed = [name for _, name in sh_children if os.path.exists(os.path.join(WORK, name + ".tcindex"))]
    check(len(sh_children) == 2 and not indexed, "busybox sh: the detached children's traces were read: %s" % indexed)
    native_kinds = [s[0] for s in stops(sh_native) if s[0] != "frame"]
    check(native_kinds == kinds, "busybox sh: native gdb stops at %s, tracecorn's at %s" % (native_kinds, kinds))

if failures:
    print("\n".join(failures))
    sys.exit(1)
print("gdb over the process tree of %s (%s): forks, vfork, exec and both inferiors as expected" % (PROGRAM, ARCH))
