#!/usr/bin/env python3
# Role: the time-travel debugger's speed on a long trace, from a client's side
# of the remote protocol (no gdb in the loop, so that the figures are the
# server's): busybox sha256sum of an N MiB file (default 1) recorded at the
# full level into UCIR+zstd, then `tracecorn debug` timed for its first
# answer (index build), a forward continue to the last hit of a breakpoint in
# the hashing loop, a reverse-continue to a breakpoint far back (the first
# hit), a reverse stepi, a write-watchpoint search across the whole trace, and
# `monitor why` of the printed digest's first byte.
# Also prints `tracecorn stat`'s time on the same trace, the reader's own cost,
# for scale. Not a test: it measures, it does not pass or fail.
# Usage: bench/debug_bench.py [TRACECORN] (default build/recorder/cli/tracecorn); BENCH_MIB=N
import os
import re
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "recorder", "debug"))
sys.dont_write_bytecode = True  # nothing written into the source tree
from debug_client import read_until_listening  # noqa: E402

TRACECORN = sys.argv[1] if len(sys.argv) > 1 else "build/recorder/cli/tracecorn"
MIB = int(os.environ.get("BENCH_MIB", "1"))
BUSYBOX = "/bin/busybox"



def packet(payload):
    return b"$%s#%02x" % (payload, sum(payload) % 256)


class Client:
    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # as gdb does
        self.buffer = b""

    def ask(self, payload):
        self.sock.sendall(packet(payload))
        while True:
            m = re.search(rb"\$([^#]*)#..", self.buffer)
            if m:
                self.buffer = self.buffer[m.end():]
                self.sock.sendall(b"+")
                return m.group(1)
            self.buffer += self.sock.recv(65536)


def timed(what, function):
    start = time.monotonic()
    result = function()
    print("%-58s %8.3f s" % (what, time.monotonic() - start))
    return result


with tempfile.TemporaryDirectory() as work:
    data = os.path.join(work, "input")
    with open(data, "wb") as f:
        f.write(bytes((i * 7 + i // 251) & 0xff for i in range(MIB << 20)))
    trace = os.path.join(work, "sha.ucir")
    timed("record --level full --format ucir --compress zstd", lambda: subprocess.run(
        [TRACECORN, "record", "--level", "full", "--format", "ucir", "--compress", "zstd", "-o", trace, "--",
         BUSYBOX, "sha256sum", data], check=True, stdout=subprocess.DEVNULL))
    print("trace: %.1f MB" % (os.path.getsize(trace) / 1e6))
    timed("stat (reading the trace once)", lambda: subprocess.run([TRACECORN, "stat", trace], check=True,
                                                                  stdout=subprocess.DEVNULL))
    start = time.monotonic()
    server = subprocess.Popen([TRACECORN, "debug", "--listen", ":0", trace], stderr=subprocess.PIPE, text=True)
    line = read_until_listening(server)
    client = Client(int(re.search(r"listening on 127\.0\.0\.1:(\d+)", line).group(1)))
    client.ask(b"?")
    print("%-58s %8.3f s   (%s)" % ("debug: first answer (the index built)", time.monotonic() - start, line.strip()))

    def monitor(command):
        return bytes.fromhex(client.ask(b"qRcmd," + command.hex().encode()).decode()).decode().strip()

    first_pc = int(re.search(r"pc (0x[0-9a-f]+)", monitor(b"when")).group(1), 16)
    # The hottest block's pc: the hashing loop, run all through the trace.
    stat = subprocess.run([TRACECORN, "stat", trace], check=True, stdout=subprocess.PIPE, text=True).stdout
    hot = int(re.search(r"hottest blocks.*\n\s+(0x[0-9a-f]+)", stat).group(1), 16)
    client.ask(b"Z0,%x,1" % hot)
    timed("continue to the first hit of the hot loop", lambda: client.ask(b"c"))
    print("   ", monitor(b"when"))
    client.ask(b"z0,%x,1" % hot)
    timed("continue to the end (no breakpoint)", lambda: client.ask(b"c"))
    print("   ", monitor(b"when"))
    client.ask(b"Z0,%x,1" % hot)
    timed("reverse-continue to the last hit of the loop", lambda: client.ask(b"bc"))
    client.ask(b"z0,%x,1" % hot)
    client.ask(b"c")
    # The program's first instruction runs once: reverse-continuing to it crosses the whole trace.
    client.ask(b"Z0,%x,1" % first_pc)
    timed("reverse-continue from the end to the first instruction", lambda: client.ask(b"bc"))
    print("   ", monitor(b"when"))
    client.ask(b"z0,%x,1" % first_pc)
    client.ask(b"c")
    steps = 200
    start = time.monotonic()
    for _ in range(steps):
        client.ask(b"bs")
    print("%-58s %8.3f ms" % ("reverse-stepi from the end, mean of %d" % steps, (time.monotonic() - start) * 1000 / steps))
    # A watchpoint on code (never written): a search across the whole trace that finds nothing.
    monitor(b"seek 0")
    client.ask(b"Z2,%x,4" % first_pc)
    timed("write watchpoint search, start to end (no hit)", lambda: client.ask(b"c"))
    client.ask(b"z2,%x,4" % first_pc)
    client.ask(b"D")
    server.wait()
    print("saved index: %.1f MB" % (os.path.getsize(trace + ".tcindex") / 1e6))
    start = time.monotonic()
    server = subprocess.Popen([TRACECORN, "debug", "--listen", ":0", trace], stderr=subprocess.PIPE, text=True)
    line = read_until_listening(server)
    client = Client(int(re.search(r"listening on 127\.0\.0\.1:(\d+)", line).group(1)))
    client.ask(b"?")
    print("%-58s %8.3f s" % ("debug again: first answer (the saved index loaded)", time.monotonic() - start))
    # `why` of the printed digest's first character: stop at the write syscall's entry, its buffer in rsi.
    client.ask(b"QCatchSyscalls:1;1")
    client.ask(b"c")
    buffer = int.from_bytes(bytes.fromhex(client.ask(b"p4").decode()), "little")
    answer = timed("monitor why of the printed digest's first byte", lambda: monitor(b"why %#x 1" % buffer))
    lines = answer.splitlines()
    print("    %d nodes; %s" % (len(lines), lines[0][:150] if lines else ""))
    client.ask(b"D")
    server.wait()
