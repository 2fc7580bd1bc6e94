# Role: what the scripts that drive `tracecorn debug` share (check_gdb_session.py,
# check_gdb_threads.py, check_gdb_processes.py, check_lldb_session.py,
# check_debug_cli.py, bench/debug_bench.py): finding the line that says where
# the server listens, after any lines about its saved index; a free local
# port; recording the trace to serve; a gdb session against a server over a
# trace; and the gdb checks' common start (their arguments, the gdb to use,
# the skip when it is missing, the list of failures).
import os
import re
import shutil
import socket
import subprocess
import sys


def read_until_listening(server):
    """The line of `tracecorn debug` that says where it listens ("" and all it said when it ended first)."""
    lines = []
    while True:
        line = server.stderr.readline()
        lines.append(line)
        if not line or "listening on" in line:
            return line if line else "".join(lines)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def record_full(tracecorn, command, trace, timeout):
    """Records `command` (a list: the program and its arguments) at the full level into the UCIR trace `trace`
    (and, for a process tree, the traces beside it); prints why and exits 1 when the recording fails."""
    recorded = subprocess.run([tracecorn, "record", "--format", "ucir", "--level", "full", "-o", trace, "--"] + command,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, timeout=timeout)
    if recorded.returncode != 0:
        print("record of %s failed:" % command[0], recorded.stderr)
        sys.exit(1)


def gdb_on_server(tracecorn, trace, run_gdb, failures, timeout):
    """Starts `tracecorn debug` over `trace`, returns run_gdb("target remote ...")'s output; the
    server must end when gdb detaches. Problems go to `failures`."""
    server = subprocess.Popen([tracecorn, "debug", "--listen", "127.0.0.1:0", trace], stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True)
    try:
        line = read_until_listening(server)
        m = re.search(r"listening on 127\.0\.0\.1:(\d+)", line)
        if not m:
            failures.append("tracecorn debug did not start: " + line + server.stderr.read())
            return ""
        return run_gdb("target remote 127.0.0.1:" + m.group(1))
    finally:
        try:
            server.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            server.kill()
            failures.append("tracecorn debug did not end when gdb detached")


def gdb_check_arguments(argv):
    """A gdb check's arguments, TRACECORN ARCH PROGRAM WORK_DIR [QEMU], as (tracecorn, arch, program, work,
    qemu, gdb, timeout): gdb-multiarch when a qemu runs the reference session, else gdb; exits 77 (ctest's
    skip) when it is missing. Makes WORK_DIR; the timeout scales with TRACECORN_TEST_TIMEOUT_SCALE."""
    tracecorn, arch, program, work = argv[1:5]
    qemu = argv[5] if len(argv) > 5 else ""
    gdb = shutil.which("gdb-multiarch" if qemu else "gdb")
    if not gdb:
        print("no gdb here: skipped")
        sys.exit(77)
    os.makedirs(work, exist_ok=True)
    timeout = 120 * int(os.environ.get("TRACECORN_TEST_TIMEOUT_SCALE", "1"))
    return tracecorn, arch, program, work, qemu, gdb, timeout


def failure_list():
    """(failures, check): check(condition, what) adds `what` to failures when the condition does not hold."""
    failures = []

    def check(condition, what):
        if not condition:
            failures.append(what)

    return failures, check
