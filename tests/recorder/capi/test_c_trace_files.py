"""The C API's trace files: written by a C harness, read back by a C program.

Run by ctest (c_trace_files, tests/CMakeLists.txt) with Debian's
/usr/bin/python3 -m pytest and these variables:
  TRACECORN        the CLI: records samples, and `tracecorn stat` is the reference count
  EMBED_EXAMPLE_C  samples/embed/embed_example_c.c: records its snippet through the
                   C API only, into a trace file in a format given on its command line
  READ_TRACE_C     samples/embed/read_trace_c.c: reads any trace through the C reader only
  TRACECORN_SAMPLES "ARCH=PATH;..." hello for each architecture
What is compared: read_trace_c's counts per kind with `tracecorn stat`'s (for
traces the C API wrote in UCIR, BAP frames and binary trace, plain and zstd,
and for the CLI's recordings of hello on every architecture); the snippet's
known instruction and store counts; syscall lines with stat's syscalls; and
the errors of a cut file and of a file that is no trace.
"""
import os
import re
import subprocess

import pytest

TRACECORN = os.environ["TRACECORN"]
EMBED_EXAMPLE_C = os.environ["EMBED_EXAMPLE_C"]
READ_TRACE_C = os.environ["READ_TRACE_C"]
SAMPLES = dict(item.split("=", 1) for item in os.environ["TRACECORN_SAMPLES"].split(";") if item)


def stat(path):
    """({kind: count}, {syscall: calls}) as `tracecorn stat` prints them."""
    text = subprocess.run([TRACECORN, "stat", path], check=True, capture_output=True, text=True).stdout
    kinds = {kind: int(count) for kind, count, _ in re.findall(r"^(\w+) +(\d+) +(\d+)$", text, re.M) if int(count)}
    syscalls_text = re.split(r"\n\S", text.split("syscalls:\n", 1)[1], maxsplit=1)[0] if "syscalls:\n" in text else ""
    syscalls = {name: int(count) for name, count in re.findall(r"^  (\w+) (\d+)$", syscalls_text, re.M)}
    return kinds, syscalls


def read_c(path, *extra):
    """(header, {kind: count}, [syscall names], output) as read_trace_c prints them."""
    result = subprocess.run([READ_TRACE_C, path, *extra], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    kinds = {}
    for line in lines:
        match = re.fullmatch(r"([a-z]+) (\d+)", line)
        if match and match.group(1) not in ("events", "registers"):
            kinds[match.group(1)] = int(match.group(2))
    syscalls = [re.match(r"syscall: (\w+)\(", line).group(1) for line in lines if line.startswith("syscall: ")]
    return lines[0], kinds, syscalls, result.stdout


@pytest.mark.parametrize("trace_format", ["ucir", "frames", "bintrace"])
@pytest.mark.parametrize("compress", ["none", "zstd"])
def test_c_harness_trace_reads_back(tmp_path, trace_format, compress):
    path = str(tmp_path / f"sum.{trace_format}")
    subprocess.run([EMBED_EXAMPLE_C, path, trace_format, compress], check=True, stdout=subprocess.DEVNULL)
    header, kinds, _, output = read_c(path)
    assert header.startswith("arch x86_64 level")
    assert kinds["insn"] == 60 and kinds["write"] == 8
    assert kinds == stat(path)[0]
    assert int(re.search(r"^registers (\d+)$", output, re.M).group(1)) > 0


@pytest.mark.parametrize("arch", sorted(SAMPLES))
def test_cli_recordings_read_from_c(tmp_path, arch):
    # BAP frames has no architecture id for riscv64; binary trace is x86-64's
    formats = ["ucir"] + (["frames"] if arch != "riscv64" else []) + (["bintrace"] if arch == "x86_64" else [])
    for trace_format in formats:
        path = str(tmp_path / f"hello.{trace_format}")
        subprocess.run([TRACECORN, "record", "--level", "full", "--format", trace_format, "--compress", "zstd",
                        "-o", path, "--", SAMPLES[arch]], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        header, kinds, syscalls, output = read_c(path)
        # BAP frames cannot tell mips from mipsel (one frame_architecture, no byte order)
        named = "mipsel" if trace_format == "frames" and arch == "mips" else arch
        assert header.startswith(f"arch {named} ")
        stat_kinds, stat_syscalls = stat(path)
        assert kinds == stat_kinds, trace_format
        assert sorted(set(syscalls)) == sorted(stat_syscalls)
        assert len(syscalls) == sum(stat_syscalls.values())
        assert syscalls[-1] == "exit_group"
        assert re.search(r"^syscall: write\(0x1, 0x[0-9a-f]+, 0x1d\) = 29 stack [1-9]", output, re.M), output


def test_bad_files(tmp_path):
    path = str(tmp_path / "sum.ucir")
    subprocess.run([EMBED_EXAMPLE_C, path, "ucir"], check=True, stdout=subprocess.DEVNULL)
    data = open(path, "rb").read()
    cut = tmp_path / "cut.ucir"
    cut.write_bytes(data[: len(data) - 7])
    result = subprocess.run([READ_TRACE_C, str(cut)], capture_output=True, text=True)
    assert result.returncode == 1 and "cut.ucir" in result.stderr and "offset" in result.stderr, result.stderr
    text = tmp_path / "notes.txt"
    text.write_text("no trace here\n" * 4)
    result = subprocess.run([READ_TRACE_C, str(text)], capture_output=True, text=True)
    assert result.returncode == 1 and "not a trace" in result.stderr and "notes.txt" in result.stderr
