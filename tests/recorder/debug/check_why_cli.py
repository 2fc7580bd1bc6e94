#!/usr/bin/env python3
# Role: `tracecorn why` from the command line, on the sample why_flow (the
# sum it writes to sum.bin comes, by construction, from input.bin's offsets
# 4 to 11), recorded at the full level:
#   - --json: valid JSON whose read() leaves name input.bin and exactly the
#     offsets 4 to 11 (the write is found in `tracecorn dump`'s syscalls);
#   - the text tree says "from input.bin at offset";
#   - --reg, --at and --depth are taken; a second run uses the saved index;
#   - refusals, exit status 125 and a message naming the problem: an unknown
#     register, a malformed address, no target, a trace not at level full,
#     an event beyond the end.
# Usage: check_why_cli.py TRACECORN PROGRAM WORK_DIR
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True  # nothing written into the source tree
from why_tree import file_offsets  # noqa: E402

TRACECORN, PROGRAM, WORK = sys.argv[1:4]
os.makedirs(WORK, exist_ok=True)
failures = []


def check(condition, what):
    if not condition:
        failures.append(what)


def run(*args):
    return subprocess.run([TRACECORN, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=300,
                          cwd=WORK)


full = os.path.join(WORK, "why_flow.ucir")
regs = os.path.join(WORK, "why_flow_regs.ucir")
for path, level in ((full, "full"), (regs, "regs")):
    recorded = run("record", "--format", "ucir", "--level", level, "-o", path, "--", PROGRAM)
    if recorded.returncode != 0:
        print("record failed:", recorded.stderr)
        sys.exit(1)
dump = run("dump", "--kind", "syscall", full).stdout
m = re.search(r"^#(\d+) syscall \S+ write\(0x[0-9a-f]+, (0x[0-9a-f]+), 0x4,", dump, re.M)
if not m:
    print("no 4-byte write in the dump:\n" + dump)
    sys.exit(1)
event, buffer = m.group(1), m.group(2)

answer = run("why", full, "--addr", buffer + ":4", "--at", event, "--json")
check(answer.returncode == 0, "why --json: exit %d: %s" % (answer.returncode, answer.stderr))
try:
    tree = json.loads(answer.stdout)
    check(file_offsets(tree, "input.bin") == set(range(4, 12)),
          "why --json: input.bin offsets %s, expected 4..11" % sorted(file_offsets(tree, "input.bin")))
    check(tree.get("source") == "instruction" and "instruction" in tree, "why --json: the root %s" % tree)
except json.JSONDecodeError as error:
    failures.append("why --json is not JSON (%s): %s" % (error, answer.stdout[:500]))
text = run("why", full, "--addr", buffer + ":4", "--at", event)
check(text.returncode == 0 and "from input.bin at offset 4" in text.stdout, "why (text): %s" % text.stdout[:2000])
check("using the saved index" in text.stderr, "the second why did not use the saved index: %s" % text.stderr)
shallow = run("why", full, "--addr", buffer + ":4", "--at", event, "--depth", "1")
check(shallow.returncode == 0 and "input.bin" not in shallow.stdout and "deeper than --depth" in shallow.stdout,
      "why --depth 1: %s" % shallow.stdout)
reg = run("why", full, "--reg", "rax")
check(reg.returncode == 0 and reg.stdout.startswith("rax = "), "why --reg rax: %s %s" % (reg.stdout, reg.stderr))

for args, needle in ((["--reg", "nosuch"], "no register 'nosuch'"), (["--addr", "zz:4"], "--addr wants"),
                     ([], "--reg NAME or --addr"), (["--addr", buffer, "--at", "999999999"], "beyond the trace")):
    refused = run("why", full, *args)
    check(refused.returncode == 125 and needle in refused.stderr,
          "why %s: exit %d, stderr %r (expected 125 and %r)" % (args, refused.returncode, refused.stderr, needle))
refused = run("why", regs, "--reg", "rax")
check(refused.returncode == 125 and "level 'full'" in refused.stderr,
      "why on a regs-level trace: exit %d, %r" % (refused.returncode, refused.stderr))

if failures:
    print("\n".join(failures))
    sys.exit(1)
print("tracecorn why: input.bin offsets 4..11 reached (json and text), depth, --reg, saved index and 6 refusals")
