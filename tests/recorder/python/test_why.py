"""`Trace.why()`: where a value came from, from Python.

Run by ctest (python_why, tests/recorder/python/python_tests.cmake) with
Debian's /usr/bin/python3 -m pytest and these variables:
  TRACECORN  the CLI, which records the sample and answers `why --json`
  WHY_FLOW   samples/guest's why_flow: the 4-byte sum it writes comes, by
             construction, from input.bin's offsets 4 to 11
  PYTHONPATH the build tree's python/ folder (the module)
What is compared: the file offsets the tree reaches (known by construction),
and the whole tree against `tracecorn why --json`, symbol names included (both
name code from the program's symbols); refusals.
"""
import json
import os
import subprocess
import sys

import pytest

import tracecorn

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "debug"))
from why_tree import file_offsets  # noqa: E402

TRACECORN = os.environ["TRACECORN"]
WHY_FLOW = os.environ["WHY_FLOW"]


def nodes(node):
    yield node
    for child in node.get("inputs", []):
        yield from nodes(child)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    work = tmp_path_factory.mktemp("why")
    paths = {}
    for level in ("full", "regs"):
        paths[level] = str(work / f"why_flow.{level}.ucir")
        subprocess.run([TRACECORN, "record", "--format", "ucir", "--level", level, "-o", paths[level], "--", WHY_FLOW],
                       check=True, cwd=work, stdout=subprocess.DEVNULL)
    return work, paths


def test_why_reaches_the_file_bytes(recorded):
    work, paths = recorded
    trace = tracecorn.open(paths["full"])
    write = next(s for s in trace.syscalls() if s.name == "write" and s.args[2] == 4)
    tree = trace.why(addr=write.args[1], size=4, at=write.event)
    assert tree["source"] == "instruction"
    assert file_offsets(tree, "input.bin") == set(range(4, 12))
    cli = subprocess.run([TRACECORN, "why", paths["full"], "--addr", f"{write.args[1]:#x}:4", "--at", str(write.event),
                          "--json"], check=True, capture_output=True, text=True, cwd=work).stdout
    assert tree == json.loads(cli)
    assert any(n.get("symbol", "").startswith("main+") for n in nodes(tree)), "no node named in main"
    assert trace.symbol(tree["pc"]) in tree.get("symbol", "")
    shallow = trace.why(addr=write.args[1], size=4, at=write.event, depth=1)
    assert file_offsets(shallow, "input.bin") == set()
    assert trace.why(reg="rax")["register"] == "rax"


def test_why_refusals(recorded):
    _, paths = recorded
    with pytest.raises(tracecorn.Error, match="level 'full'"):
        tracecorn.open(paths["regs"]).why(reg="rax")
    trace = tracecorn.open(paths["full"])
    with pytest.raises(ValueError, match="no register 'nosuch'"):
        trace.why(reg="nosuch")
    with pytest.raises(ValueError, match="reg=NAME or addr=ADDRESS"):
        trace.why()
    with pytest.raises(tracecorn.Error, match="beyond"):
        trace.why(reg="rax", at=len(trace) + 10)
