# Role: what the scripts that drive `tracecorn debug` share (check_gdb_session.py,
# check_gdb_threads.py, check_debug_cli.py, bench/debug_bench.py): finding the
# line that says where the server listens, after any lines about its saved
# index; a free local port; and a gdb session against a server over a trace.
import re
import socket
import subprocess


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
