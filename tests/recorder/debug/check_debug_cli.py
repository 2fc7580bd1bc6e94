#!/usr/bin/env python3
# Role: `tracecorn debug` on the command line: what it refuses, with a clear
# message and exit status 125 (a trace without instruction events names the
# level it needs; an address that is not HOST:PORT; a file that is not a
# trace; a missing file), its --help, and that a client that connects and
# detaches ends it with status 0, having listened on loopback only.
# Usage: check_debug_cli.py TRACECORN SAMPLE WORK_DIR
import os
import re
import socket
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True  # nothing written into the source tree
from debug_client import read_until_listening  # noqa: E402

TRACECORN, SAMPLE, WORK = sys.argv[1:4]
os.makedirs(WORK, exist_ok=True)
failures = []



def run(*args, timeout=60):
    return subprocess.run([TRACECORN, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL)


def expect_refusal(args, words):
    result = run(*args)
    if result.returncode != 125 or any(w not in result.stderr for w in words):
        failures.append("%s: exit %d, stderr %r (wanted 125 and %s)" % (" ".join(args), result.returncode,
                                                                         result.stderr, words))


blocks = os.path.join(WORK, "blocks.ucir")
full = os.path.join(WORK, "full.ucir")
for level, path in (("blocks", blocks), ("full", full)):
    recorded = run("record", "--format", "ucir", "--level", level, "-o", path, "--", SAMPLE)
    if recorded.returncode != 3:  # hello's own status
        print("record failed (%d):" % recorded.returncode, recorded.stderr)
        sys.exit(1)
not_a_trace = os.path.join(WORK, "not-a-trace")
with open(not_a_trace, "w") as f:
    f.write("hello\n")

expect_refusal(["debug", blocks], ["no instruction events", "'full'", blocks])
expect_refusal(["debug", "--listen", "localhost:99999", full], ["--listen", "99999"])
expect_refusal(["debug", "--listen", "nowhere:12ab", full], ["--listen"])
expect_refusal(["debug", not_a_trace], ["not a trace", not_a_trace])
expect_refusal(["debug", os.path.join(WORK, "missing.ucir")], ["missing.ucir"])
help_text = run("debug", "--help").stdout
if "Example" not in help_text or "--listen" not in help_text:
    failures.append("debug --help: " + help_text)

# A client: the server listens on 127.0.0.1 by default, answers, and ends when the client detaches.
server = subprocess.Popen([TRACECORN, "debug", "--listen", ":0", full], stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True)
line = read_until_listening(server)
m = re.search(r"listening on (\S+):(\d+)", line)
if not m or m.group(1) != "127.0.0.1":
    failures.append("the listening line: " + line)
    server.kill()
else:
    with socket.create_connection(("127.0.0.1", int(m.group(2))), timeout=30) as client:
        client.sendall(b"$?#3f")
        reply = client.recv(100)
        if not reply.startswith(b"+$T05"):
            failures.append("reply to '?': %r" % reply)
        client.sendall(b"+$D#44")
        reply = client.recv(100)
        if b"$OK#9a" not in reply:
            failures.append("reply to 'D': %r" % reply)
    try:
        if server.wait(timeout=30) != 0:
            failures.append("debug exited with %d after the client detached" % server.returncode)
    except subprocess.TimeoutExpired:
        server.kill()
        failures.append("debug did not end after the client detached")



def start_messages(trace):
    """What `tracecorn debug` says before it listens, for a client that detaches at once."""
    server = subprocess.Popen([TRACECORN, "debug", "--listen", ":0", trace], stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True)
    said = []
    while True:
        line = server.stderr.readline()
        said.append(line)
        m = re.search(r"listening on 127\.0\.0\.1:(\d+)", line)
        if m or not line:
            break
    if m:
        with socket.create_connection(("127.0.0.1", int(m.group(1))), timeout=30) as client:
            client.sendall(b"$D#44")
            client.recv(100)
    server.wait(timeout=30)
    return "".join(said)


# The saved index: made on the first start, used on the next, refused once the trace changes.
saved = full + ".tcindex"
if not os.path.exists(saved):
    failures.append("no saved index beside the trace after the first start")
said = start_messages(full)
if "using the saved index" not in said:
    failures.append("second start: " + said)
with open(full, "r+b") as f:  # the same size, other bytes at the end: a different trace
    f.seek(-1, os.SEEK_END)
    last = f.read(1)
    f.seek(-1, os.SEEK_END)
    f.write(bytes([last[0] ^ 0xff]))
said = start_messages(full)
if "stale" not in said or "using the saved index" in said:
    failures.append("after the trace changed: " + said)

if failures:
    print("\n".join(failures))
    sys.exit(1)
print("tracecorn debug: refusals, --help and a detaching client as expected")
