# Role: behaviour test of replaying a library trace (ctest fuzz_trace_replays):
# the fuzz harness (fuzz_replay, the g++ build) runs a good input then its
# crashing input with a flight recorder at level full and dumps UCIR; then
# fuzz_trace_replay re-runs the crashing input on the harness's engine set-up
# and must match the dump (with a large ring, whose dump still holds the end
# of the good input's run, and with a small one, whose ring overwrote the start
# of the crashing run); a dump whose first write to the record buffer was
# edited by one byte (the value 'A' of the input copied by `mov [rdx+r9], r10b`,
# found by its UCIR OP_MEM_WRITE op: formats/ucir/ucir_layout.h) must diverge
# at that instruction's event, which `tracecorn dump` of the edited file names.
# Run by CTest: python3 check_fuzz_trace_replay.py FUZZ_REPLAY FUZZ_TRACE_REPLAY TRACECORN CRASH_INPUT WORK_DIR
import os
import re
import struct
import subprocess
import sys

harness, replayer, tracecorn, crash_input, work = sys.argv[1:6]
os.makedirs(work, exist_ok=True)
good = os.path.join(work, "good.bin")
with open(good, "wb") as f:
    f.write(b"TC\x01\x04WXYZ")  # a valid record: the parser returns
RECORD_BUFFER = 0x40000 + 0x1000 - 64


def record(ring, name):
    trace = os.path.join(work, name)
    env = dict(os.environ, TRACECORN_CRASH_TRACE=trace, TRACECORN_FUZZ_LEVEL="full", TRACECORN_FUZZ_RING=str(ring))
    done = subprocess.run([harness, good, crash_input], env=env, capture_output=True, text=True)
    if done.returncode == 0 or "flight-recorder trace written" not in done.stderr:
        sys.exit(f"the harness did not crash and dump: {done.returncode} {done.stderr}")
    return trace


def replay(trace, expect):
    done = subprocess.run([replayer, trace, crash_input], capture_output=True, text=True)
    if done.returncode != expect:
        sys.exit(f"fuzz_trace_replay {trace}: exit status {done.returncode}, expected {expect}: {done.stdout}{done.stderr}")
    return done.stdout


big = record(1 << 20, "crash-big.ucir")
out = replay(big, 0)
m = re.search(r"replay matches: (\d+) steps compared at level full; not compared: (\d+) trace steps before the run "
              r"\(earlier inputs\), (\d+) steps of the run", out)
if not m or int(m.group(1)) < 300 or int(m.group(2)) == 0 or int(m.group(3)) != 0:
    sys.exit(f"large ring: unexpected report: {out}")
print(out.strip())

small = record(4096, "crash-small.ucir")
out = replay(small, 0)
m = re.search(r"replay matches: (\d+) steps .*: (\d+) trace steps before the run \(earlier inputs\), (\d+) steps", out)
if not m or int(m.group(1)) == 0 or int(m.group(3)) == 0:
    sys.exit(f"small ring: unexpected report: {out}")
print(out.strip())

# One byte edited: the first write of 'A' into the record buffer.
data = bytearray(open(big, "rb").read())
pattern = bytes([8]) + struct.pack("<QI", RECORD_BUFFER, 1) + b"A"
at = data.find(pattern)
if at < 0 or data.find(pattern, at + 1) >= 0:
    sys.exit("the write of 'A' to the record buffer is not in the UCIR file exactly once")
data[at + len(pattern) - 1] ^= 0x01
edited = os.path.join(work, "crash-edited.ucir")
with open(edited, "wb") as f:
    f.write(data)
dump = subprocess.run([tracecorn, "dump", edited], capture_output=True, text=True, check=True).stdout
write_line = re.search(rf"^#(\d+) write {RECORD_BUFFER:#x} \[1\] = 0x40 ", dump, re.M)
if not write_line:
    sys.exit("the edited write is not in the dump")
insns = [int(n) for n in re.findall(r"^#(\d+) insn ", dump[:write_line.start()], re.M)]
expected_event = insns[-1]
out = replay(edited, 1)
if f"event {expected_event}, pc {0x10039:#x}: the memory written" not in out:
    sys.exit(f"the divergence is not reported at event {expected_event} (mov [rdx+r9], r10b): {out}")
print(out.strip())
