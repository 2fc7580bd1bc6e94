"""`tracecorn.attach`: recording an engine of Debian's python3-unicorn.

Run by ctest (tests/recorder/python/python_tests.cmake) with Debian's
/usr/bin/python3 -m pytest and these variables:
  EMBED_EXAMPLE  samples/embed's C++ embedding example, the reference: it
                 runs the same snippet (samples/embed/sum_snippet.h) through
                 the C++ API at level full and prints its text trace
  PYTHONPATH     the build tree's python/ folder (the module)
What is compared: the text trace Python records equals the C++ example's,
line for line; a UCIR recording read back holds the same events and the
state at its end has the snippet's sum; a flight recorder keeps the last
events of a longer run and dumps them in every format; bad arguments raise.
"""
import os
import subprocess

import pytest
import unicorn
from unicorn import x86_const

import tracecorn

EMBED_EXAMPLE = os.environ["EMBED_EXAMPLE"]
CODE, ARRAY, OUTPUT = 0x10000, 0x20000, 0x20100
CODE_BYTES = bytes.fromhex("31c0 31c9 4839f1 7310 4c8b04cf 4c01c0 488904ca 48ffc1 ebeb f4".replace(" ", ""))
VALUES = [3, 1, 4, 1, 5, 9, 2, 6]


def snippet_engine(values=VALUES):
    """The engine of samples/embed/sum_snippet.h: sums `values`, storing running sums."""
    uc = unicorn.Uc(unicorn.UC_ARCH_X86, unicorn.UC_MODE_64)
    uc.mem_map(CODE, 0x1000, unicorn.UC_PROT_READ | unicorn.UC_PROT_EXEC)
    data_bytes = 2 * 8 * len(values)  # the array, then the running sums (within one page for 8 values)
    uc.mem_map(ARRAY, (data_bytes + 0xfff) & ~0xfff, unicorn.UC_PROT_READ | unicorn.UC_PROT_WRITE)
    uc.mem_write(CODE, CODE_BYTES)
    uc.mem_write(ARRAY, b"".join(v.to_bytes(8, "little") for v in values))
    uc.reg_write(x86_const.UC_X86_REG_RDI, ARRAY)
    uc.reg_write(x86_const.UC_X86_REG_RSI, len(values))
    uc.reg_write(x86_const.UC_X86_REG_RDX, ARRAY + 8 * len(values) if len(values) > 8 else OUTPUT)
    return uc


def run(uc):
    uc.emu_start(CODE, CODE + 0x19)
    return uc.reg_read(x86_const.UC_X86_REG_RAX)


def test_text_trace_equals_the_cpp_example(tmp_path):
    reference = subprocess.run([EMBED_EXAMPLE], check=True, capture_output=True, text=True).stdout
    reference_trace = [line for line in reference.splitlines() if line.startswith("#")]
    uc = snippet_engine()
    path = tmp_path / "sum.txt"
    with tracecorn.attach(uc, arch="x86_64", level="full", output=str(path), format="text", program="sum_snippet"):
        assert run(uc) == 31
    assert path.read_text().splitlines() == reference_trace


def test_ucir_read_back(tmp_path):
    uc = snippet_engine()
    path = str(tmp_path / "sum.ucir")
    recorder = tracecorn.attach(uc, arch="x86_64", level="full", output=path, compress="zstd")
    assert run(uc) == 31
    recorder.finish()
    recorder.finish()  # idempotent
    assert recorder.stats["events_by_kind"]["insn"] == 60
    trace = tracecorn.open(path)
    assert trace.arch == "x86_64" and trace.level == "full"
    reads = list(trace.events(kinds="read"))
    assert [e.value for e in reads] == VALUES
    writes = list(trace.events(kinds="write"))
    assert [e.address for e in writes] == [OUTPUT + 8 * i for i in range(8)]
    end = trace.state_at(len(trace))
    assert end.register("rax") == 31
    assert end.read(OUTPUT + 8 * 7, 8) == (31).to_bytes(8, "little")
    assert trace.last_write(OUTPUT + 8 * 3).event == writes[3].index


@pytest.mark.parametrize("trace_format", ["ucir", "frames", "bintrace", "text"])
def test_flight_recorder_dump(tmp_path, trace_format):
    values = list(range(1, 2001))
    uc = snippet_engine(values)
    recorder = tracecorn.attach(uc, arch="x86_64", level="full", flight_recorder=True, ring_bytes=64 << 10)
    assert run(uc) == sum(values)
    path = str(tmp_path / f"last.{trace_format}")
    recorder.dump(path, format=trace_format)
    recorder.finish()
    assert recorder.stats["records_overwritten"] > 0
    if trace_format == "text":
        text = open(path).read()
        assert " gap " in text and "insn 0x10007 jae 0x10019" in text
        return
    trace = tracecorn.open(path)
    kinds = [e.kind for e in trace]
    if "gap" in trace.capabilities["kinds"]:
        assert kinds[0] == "gap"
    sums = [sum(values[:i + 1]) for i in range(len(values))]
    writes = [e.value for e in trace.events(kinds="write")]
    assert writes and writes == sums[-len(writes):]  # the last running sums, in order
    if "read" in trace.capabilities["kinds"]:  # binary trace: no memory reads
        reads = [e.value for e in trace.events(kinds="read")]
        assert reads and reads == values[-len(reads):]


def test_bad_arguments(tmp_path):
    uc = snippet_engine()
    with pytest.raises(tracecorn.Error, match="not a aarch64 engine"):
        tracecorn.attach(uc, arch="aarch64", output=str(tmp_path / "x.ucir"))
    with pytest.raises(tracecorn.Error, match="unknown architecture 'z80'"):
        tracecorn.attach(uc, arch="z80", output=str(tmp_path / "x.ucir"))
    with pytest.raises(ValueError, match="no level 'everything'"):
        tracecorn.attach(uc, arch="x86_64", level="everything", output=str(tmp_path / "x.ucir"))
    with pytest.raises(tracecorn.Error, match="no output file"):
        tracecorn.attach(uc, arch="x86_64")
    with pytest.raises(tracecorn.Error, match="bintrace"):
        tracecorn.attach(uc, arch="x86_64", level="blocks", format="bintrace", output=str(tmp_path / "x.bin"))
    with pytest.raises(tracecorn.Error):
        tracecorn.attach(uc, arch="x86_64", output=str(tmp_path / "no" / "such" / "dir.ucir"))
    with pytest.raises(TypeError):
        tracecorn.attach("not an engine", arch="x86_64", output=str(tmp_path / "x.ucir"))
    recorder = tracecorn.attach(uc, arch="x86_64", output=str(tmp_path / "x.ucir"))
    with pytest.raises(tracecorn.Error, match="flight recorder"):
        recorder.dump(str(tmp_path / "y.ucir"))
    recorder.finish()


@pytest.mark.parametrize("trace_format", ["ucir", "frames", "bintrace"])
def test_mutated_traces_raise_never_crash(tmp_path, trace_format):
    """Damaged files (bytes flipped, cut, zeroed; seeded) raise tracecorn.Error or read: never a crash."""
    import random
    uc = snippet_engine()
    path = str(tmp_path / f"sum.{trace_format}")
    with tracecorn.attach(uc, arch="x86_64", level="full", output=path, format=trace_format):
        run(uc)
    original = open(path, "rb").read()
    generator = random.Random(23)
    outcomes = {"read": 0, "refused": 0}
    for case in range(150):
        data = bytearray(original)
        if case % 3 == 0:
            data = data[: generator.randrange(1, len(data))]
        for _ in range(generator.randrange(1, 8)):
            data[generator.randrange(len(data))] = generator.randrange(256)
        damaged = tmp_path / "damaged"
        damaged.write_bytes(bytes(data))
        try:
            trace = tracecorn.open(str(damaged))
            for event in trace:
                event.registers, event.bytes  # every field made
            trace.state_at(len(trace) // 2).registers
            outcomes["read"] += 1
        except tracecorn.Error as error:
            assert "damaged" in str(error)  # the message names the file
            outcomes["refused"] += 1
    assert outcomes["refused"] > 0


def test_code_written_between_runs(tmp_path):
    """A harness patches add rax, r8 into sub rax, r8 between runs and says so:
    the second run's instructions are the new ones (one more block decoded)."""
    uc = snippet_engine()
    path = tmp_path / "patched.txt"
    recorder = tracecorn.attach(uc, arch="x86_64", level="insns", output=str(path), format="text")
    assert run(uc) == 31
    uc.mem_write(CODE + 0x0d, bytes.fromhex("4c29c0"))
    recorder.code_written(CODE + 0x0d, 3)
    assert run(uc) == (-31) & (2**64 - 1)
    recorder.finish()
    assert recorder.stats["blocks_decoded"] == 4
    at_0d = [line.split(" ", 3)[3] for line in path.read_text().splitlines() if " insn 0x1000d " in line]
    assert [text.split()[0] for text in at_0d] == ["add"] * 8 + ["sub"] * 8
