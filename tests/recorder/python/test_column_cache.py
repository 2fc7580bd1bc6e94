"""`import tracecorn`: Trace.column() answered from the column cache.

Run by ctest (tests/recorder/python/python_tests.cmake) with Debian's
/usr/bin/python3 -m pytest and these variables:
  TRACECORN         the tracecorn CLI, which records the traces read here
  TRACECORN_SAMPLE  samples/guest/debug_threads.c built for the host (three
                    threads, so that the thread column changes along the trace)
  PYTHONPATH        the build tree's python/ folder (the module)
What is compared: every column, under selections of kinds, sequence windows
and threads, from a trace opened with the cache (first call: a pass that fills
it; later calls: memory) against the same trace opened without one (a pass of
the reader each time), and a few against the fields of the iterated events;
budgets too small for the data or for anything; a cut trace keeps nothing.
Two traces: the whole run in UCIR+zstd, and its last 256 KiB of events in BAP
frames (a flight recording, whose sequence numbers jump past what it lost).
"""
import os
import shutil
import subprocess

import pytest

import tracecorn

TRACECORN = os.environ["TRACECORN"]
SAMPLE = os.environ["TRACECORN_SAMPLE"]
COLUMNS = ["pc", "address", "size", "value", "seq", "index", "thread", "kind"]
KINDS_WITH = {"pc": ["insn", "block", "read", "write", "syscall", "regs"], "address": ["insn", "read", "write"],
              "size": ["insn", "write"], "value": ["read", "write"]}
TRACES = {"ucir": ["--format", "ucir", "--compress", "zstd"],
          "frames-flight": ["--format", "frames", "--flight-recorder", "--ring-kib", "256"]}


@pytest.fixture(scope="module", params=sorted(TRACES))
def trace_path(request, tmp_path_factory):
    path = str(tmp_path_factory.mktemp("traces") / f"debug_threads.{request.param}")
    subprocess.run([TRACECORN, "record", "--level", "full", *TRACES[request.param], "-o", path, "--", SAMPLE],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return path


@pytest.fixture(scope="module")
def streamed(trace_path):
    """The reference: a handle without a cache reads the file for every column."""
    return tracecorn.open(trace_path, column_cache=0)


def selections(streamed, column):
    """Keyword arguments covering kinds, windows (empty, inside, past the end) and threads."""
    seqs = streamed.column("seq")
    first, last = int(seqs[0]), int(seqs[-1])
    third = (last - first) // 3
    threads = sorted(set(streamed.column("thread").tolist()))
    kinds = [None] + [[kind] for kind in KINDS_WITH.get(column, ["syscall", "insn", "thread"])]
    kinds.append(KINDS_WITH.get(column, ["syscall", "read"])[:2])
    windows = [None, (first + third, first + 2 * third), (first + 5, first + 5), (last, last + 10),
               (last + 1, last + 9), (0, first + 1)]
    result = [{"kinds": k} for k in kinds] + [{"events": w} for w in windows] + [{"thread": t} for t in threads]
    result.append({"thread": 1})  # no such thread
    result.append({"kinds": kinds[1], "events": windows[1], "thread": threads[-1]})
    return [{key: value for key, value in s.items() if value is not None} for s in result]


def test_the_trace_has_what_the_cache_keeps_as_runs(streamed, trace_path):
    assert len(set(streamed.column("thread").tolist())) >= 3  # main and its two workers
    if trace_path.endswith("flight"):
        assert len(set((streamed.column("seq") - streamed.column("index")).tolist())) >= 2
    assert streamed.column_cache_bytes == 0


@pytest.mark.parametrize("column", COLUMNS)
def test_cached_equals_streamed(trace_path, streamed, column):
    cached = tracecorn.open(trace_path)
    cases = selections(streamed, column)
    for selection in cases + cases:  # the first round fills the cache in, the second reads it
        assert cached.column(column, **selection).tolist() == streamed.column(column, **selection).tolist(), selection
    assert cached.column_cache_bytes >= len(streamed)  # a byte per event's kind, at least


def test_cached_equals_events(trace_path):
    cached = tracecorn.open(trace_path)
    cached.column("pc")  # fills the keys and pc in
    writes = list(cached.events(kinds="write"))
    assert cached.column("pc", kinds="write").tolist() == [e.pc for e in writes]
    assert cached.column("seq", kinds="write").tolist() == [e.seq for e in writes]
    assert cached.column("index", kinds="write").tolist() == [e.index for e in writes]
    assert cached.column("thread", kinds="write").tolist() == [e.thread for e in writes]
    tid = writes[-1].thread
    assert cached.column("pc", thread=tid).tolist() == [e.pc for e in cached.events(thread=tid)
                                                        if e.pc is not None]


def test_ranges_read_the_file(trace_path, streamed):
    cached = tracecorn.open(trace_path)
    cached.column("pc")
    syscall_pc = int(streamed.column("pc", kinds="syscall")[0])
    near = {"kinds": "insn", "range": (syscall_pc - 64, syscall_pc + 64)}
    assert cached.column("pc", **near).tolist() == streamed.column("pc", **near).tolist()
    assert len(cached.column("pc", **near)) > 0


@pytest.mark.parametrize("budget", ["none", "keys"])
def test_small_budgets(trace_path, streamed, budget):
    events = len(streamed)
    cached = tracecorn.open(trace_path, column_cache=64 if budget == "none" else events + 4096)
    for column in ("pc", "kind", "value", "pc"):
        assert cached.column(column).tolist() == streamed.column(column).tolist()
        assert cached.column(column, kinds="write").tolist() == streamed.column(column, kinds="write").tolist()
    if budget == "none":
        assert cached.column_cache_bytes == 0
    else:  # the kinds fit, a column of 8 bytes an event does not
        assert events <= cached.column_cache_bytes <= events + 4096


def test_cut_trace_keeps_nothing(trace_path, tmp_path):
    cut = str(tmp_path / "cut.trace")
    shutil.copyfile(trace_path, cut)
    os.truncate(cut, os.path.getsize(trace_path) // 2)
    damaged = tracecorn.open(cut)
    with pytest.raises(tracecorn.Error, match="cut.trace"):
        damaged.column("pc")
    assert damaged.column_cache_bytes == 0
    with pytest.raises(tracecorn.Error, match="cut.trace"):
        damaged.column("pc")
