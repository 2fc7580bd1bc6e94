# Role: what the scripts that drive `tracecorn debug` share (check_gdb_session.py,
# check_debug_cli.py, bench/debug_bench.py): finding the line that says where
# the server listens, after any lines about its saved index.


def read_until_listening(server):
    """The line of `tracecorn debug` that says where it listens ("" and all it said when it ended first)."""
    lines = []
    while True:
        line = server.stderr.readline()
        lines.append(line)
        if not line or "listening on" in line:
            return line if line else "".join(lines)
