"""`import tracecorn`: reading traces and querying their state from Python.

Run by ctest (tests/recorder/python/python_tests.cmake), one entry per
architecture, with Debian's /usr/bin/python3 -m pytest and these variables:
  TRACECORN        the tracecorn CLI, which records the traces read here
  TRACECORN_SAMPLE a guest program (samples/) of TRACECORN_ARCH
  TRACECORN_ARCH   its architecture, as tracecorn names it
  PYTHONPATH       the build tree's python/ folder (the module)
What is compared, against references the module does not compute:
  - `tracecorn stat`'s event count and counts per kind, for every format
    (UCIR, BAP frames, binary trace; plain and zstd on the host architecture);
  - the state at an event against the values the events before it carry
    (each register change, each memory write), read in Python;
  - columns against the same field of the iterated events;
  - errors: a file that is no trace, a cut trace (its name and offset, after
    every event before the cut, as many as `tracecorn dump` reads), a byte
    the trace does not know (never a zero).
"""
import os
import re
import subprocess

import numpy
import pytest

import tracecorn

TRACECORN = os.environ["TRACECORN"]
SAMPLE = os.environ["TRACECORN_SAMPLE"]
ARCH = os.environ["TRACECORN_ARCH"]
HOST_FORMATS = [("ucir", "none"), ("ucir", "zstd"), ("frames", "none"), ("bintrace", "zstd")]
FORMATS = HOST_FORMATS if ARCH == "x86_64" else [("ucir", "none")]


def record(directory, trace_format, compress):
    path = os.path.join(directory, f"trace.{trace_format}.{compress}")
    # tracecorn record exits with the guest's status (hello's is 3)
    subprocess.run([TRACECORN, "record", "--level", "full", "--format", trace_format, "--compress", compress,
                    "-o", path, "--", SAMPLE], check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    assert os.path.getsize(path) > 0
    return path


def stat_counts(path):
    """(events, {kind: count}) as `tracecorn stat` prints them."""
    text = subprocess.run([TRACECORN, "stat", path], check=True, capture_output=True, text=True).stdout
    total = int(re.search(r"^(\d+) events, ", text, re.M).group(1))
    kinds = {kind: int(count) for kind, count, _ in re.findall(r"^(\w+) +(\d+) +(\d+)$", text, re.M)}
    return total, {kind: count for kind, count in kinds.items() if count}


@pytest.fixture(scope="module", params=FORMATS, ids=lambda f: f"{f[0]}-{f[1]}")
def trace_path(request, tmp_path_factory):
    return record(tmp_path_factory.mktemp("traces"), *request.param)


@pytest.fixture(scope="module")
def trace(trace_path):
    return tracecorn.open(trace_path)


def test_header(trace, trace_path):
    assert trace.arch == ARCH
    assert trace.level == "full"
    assert trace.path == trace_path
    assert trace.format == os.path.basename(trace_path).split(".")[1]
    assert "syscall" in trace.capabilities["kinds"]
    assert len(trace.register_names) > 8


def test_counts_equal_stat(trace, trace_path):
    total, by_kind = stat_counts(trace_path)
    assert len(trace) == total
    counted = {}
    previous = -1
    for event in trace:
        counted[event.kind] = counted.get(event.kind, 0) + 1
        assert event.index == previous + 1
        previous = event.index
    assert counted == by_kind
    assert previous + 1 == total


def test_filters(trace):
    syscalls = list(trace.events(kinds="syscall"))
    assert syscalls and all(e.kind == "syscall" and len(e.args) == 6 for e in syscalls)
    assert syscalls[-1].name in ("exit_group", "exit")
    assert [s.name for s in trace.syscalls()] == [e.name for e in syscalls]
    assert [s.event for s in trace.syscalls()] == [e.index for e in syscalls]
    first = syscalls[0]
    window = list(trace.events(events=(first.seq, first.seq + 10)))
    assert [e.seq for e in window] == list(range(first.seq, first.seq + 10))
    near = list(trace.events(kinds=["insn"], range=(first.pc - 64, first.pc + 64)))
    assert near and all(first.pc - 64 <= e.pc < first.pc + 64 for e in near)
    assert first.pc in {e.pc for e in near}
    memory = list(trace.events(kinds="mem", events=(0, 5000)))
    assert {e.kind for e in memory} <= {"read", "write"} and memory
    with pytest.raises(ValueError, match="no event kind 'blocks'"):
        trace.events(kinds="blocks")


def test_columns_equal_events(trace):
    pcs = trace.column("pc", kinds=["insn"])
    assert pcs.dtype == numpy.uint64
    assert pcs.tolist() == [e.pc for e in trace.events(kinds="insn")]
    writes = list(trace.events(kinds="write"))
    assert trace.column("address", kinds="write").tolist() == [e.address for e in writes]
    assert trace.column("value", kinds="write").tolist() == [e.value for e in writes]
    assert len(trace.column("index")) == len(trace)
    with pytest.raises(ValueError, match="'syscall' events have no 'value'"):
        trace.column("value", kinds=["syscall"])


def sampled(events, most):
    step = max(1, len(events) // most)
    return events[::step][:most]


def test_state_holds_what_the_events_wrote(trace):
    byte_order = "little" if trace.byte_order == "little" else "big"
    checked = 0
    for event in sampled(list(trace.events(kinds="regs")), 40):
        state = trace.state_at(event.index + 1)
        for name, value in event.registers.items():
            assert state.registers[name] == value, (event, name)
            assert state.register(name) == value
            checked += 1
    for event in sampled(list(trace.events(kinds="write")), 40):
        state = trace.state_at(event.index + 1)
        assert state.read(event.address, event.size) == event.value.to_bytes(event.size, byte_order), event
        write = trace.last_write(event.address, before=event.index + 1)
        assert write is not None and write.event <= event.index
        checked += 1
    assert checked > 40


def test_history(trace):
    sp = {"x86_64": "rsp", "i386": "esp"}.get(ARCH, "sp")
    history = trace.history(reg=sp)
    assert history and [event for event, _ in history] == sorted(event for event, _ in history)
    event, value = history[len(history) // 2]
    assert trace.state_at(event + 1).register(sp) == value
    write = next(iter(trace.events(kinds="write")))
    writes = trace.history(addr=write.address, size=write.size)
    assert writes and writes[0].event <= write.index


def test_unknown_bytes_raise(trace):
    state = trace.state_at(len(trace) // 2)
    with pytest.raises(tracecorn.UnknownValueError, match="not known at event"):
        state.read(0x10, 4)
    with pytest.raises(ValueError):
        state.register("no_such_register")


def test_bad_files(tmp_path, trace_path):
    not_a_trace = tmp_path / "notes.txt"
    not_a_trace.write_text("hello, this is no trace\n" * 10)
    with pytest.raises(tracecorn.Error, match="notes.txt"):
        tracecorn.open(str(not_a_trace))
    with pytest.raises(tracecorn.Error):
        tracecorn.open(str(tmp_path / "missing.ucir"))
    data = open(trace_path, "rb").read()
    cut = tmp_path / "cut.trace"
    cut.write_bytes(data[: len(data) * 3 // 5])
    seen = []
    with pytest.raises(tracecorn.Error, match="cut.trace"):
        for event in tracecorn.open(str(cut)):
            seen.append((event.seq, event.kind, event.pc))
    # Every event before the cut arrives before the error, as many as
    # `tracecorn dump` reads (none where the cut is in the header, as in a
    # binary trace, or in zstd's first block), the whole trace's first events.
    dumped = subprocess.run([TRACECORN, "dump", str(cut)], capture_output=True, text=True).stdout
    end = re.search(r"^# end: (\d+) events", dumped, re.M)
    assert len(seen) == (int(end.group(1)) if end else 0)
    if trace_path.endswith(".none"):
        assert len(seen) > 0
    whole = tracecorn.open(trace_path)
    assert seen == [(e.seq, e.kind, e.pc) for e, _ in zip(whole, range(len(seen)))]


def test_stack_symbols_equal_dump(trace, trace_path):
    """Trace.symbol() names a syscall's stack as `tracecorn dump` does."""
    syscall = next((e for e in trace.events(kinds="syscall") if e.stack), None)
    if syscall is None:
        pytest.skip("no call stacks in this format")
    text = subprocess.run([TRACECORN, "dump", "--kind", "syscall", "--events", f"{syscall.seq}", trace_path],
                          check=True, capture_output=True, text=True).stdout
    dumped = re.findall(r"^\s+at (0x[0-9a-f]+) (.+)$", text, re.M)
    assert dumped, text
    assert [(hex(a), trace.symbol(a)) for a in syscall.stack][:len(dumped)] == dumped
