"""`tracecorn.record(argv, ...)`: a program recorded under the emulated Linux from Python.

Run by ctest (python_record_program, tests/recorder/python/python_tests.cmake)
with Debian's /usr/bin/python3 -m pytest and these variables:
  TRACECORN        the CLI, whose own recording is the reference
  TRACECORN_SAMPLE samples/guest's hello (x86-64, static: it also runs natively)
  PYTHONPATH       the build tree's python/ folder (the module, which finds the CLI beside it)
What is compared: the exit status with the native run's; the trace's events,
counted by kind (register events aside: see below), and its syscalls with those of `tracecorn record` run
directly in the same environment; options passed through; refusals.
"""
import os
import re
import subprocess

import pytest

import tracecorn

TRACECORN = os.environ["TRACECORN"]
SAMPLE = os.environ["TRACECORN_SAMPLE"]


def counts(path):
    text = subprocess.run([TRACECORN, "stat", path], check=True, capture_output=True, text=True).stdout
    return {kind: int(n) for kind, n, _ in re.findall(r"^(\w+) +(\d+) +(\d+)$", text, re.M)}


def test_record_equals_the_cli(tmp_path):
    native = subprocess.run([SAMPLE], capture_output=True).returncode
    ours = str(tmp_path / "python.ucir")
    status = tracecorn.record([SAMPLE, "an", "argument"], output=ours, level="full", compress="zstd")
    assert status == native == 3
    reference = str(tmp_path / "cli.ucir")
    cli = subprocess.run([TRACECORN, "record", "--level", "full", "--format", "ucir", "--compress", "zstd", "-o",
                          reference, "--", SAMPLE, "an", "argument"], capture_output=True)
    assert cli.returncode == status
    # Event counts but regs: a register event lists the registers an
    # instruction changed, and the pid and AT_RANDOM (host values, by design)
    # may leave one unchanged in one run and not in the other.
    ours_counts, reference_counts = counts(ours), counts(reference)
    del ours_counts["regs"], reference_counts["regs"]
    assert ours_counts == reference_counts
    assert [s.name for s in tracecorn.open(ours).syscalls()] == [s.name for s in tracecorn.open(reference).syscalls()]


def test_options_pass_through(tmp_path):
    path = str(tmp_path / "main.ucir")
    assert tracecorn.record([SAMPLE], output=path, level="blocks", options=["--only-main"]) == 3
    whole = str(tmp_path / "whole.ucir")
    assert tracecorn.record([SAMPLE], output=whole, level="blocks") == 3
    assert 0 < counts(path)["block"] <= counts(whole)["block"]


def test_refusals(tmp_path):
    with pytest.raises(tracecorn.Error, match="refused"):
        tracecorn.record([SAMPLE], output=str(tmp_path / "x.bin"), level="blocks", format="bintrace")
    with pytest.raises(ValueError):
        tracecorn.record([], output=str(tmp_path / "x.ucir"))
    assert tracecorn.record([str(tmp_path / "missing")], output=str(tmp_path / "y.ucir")) == 127  # as a shell says
