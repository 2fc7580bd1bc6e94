# Role: behaviour test of `tracecorn dump --kind/--range/--events` (ctest
# dump_filters). A sample is recorded in each format (UCIR, BAP frames, binary
# trace); the unfiltered dump is the reference: for each filter, the filtered
# dump must be exactly the unfiltered dump's header, then the unfiltered
# entries (an event line "#N kind ..." with its indented lines) that the filter
# selects, worked out here from the printed text alone, then its end line. A bad
# filter must give exit status 125 and a message naming the option.
# Run by CTest: python3 check_dump_filters.py TRACECORN SAMPLE WORK_DIR
import os
import re
import subprocess
import sys

tracecorn, sample, work = sys.argv[1], sys.argv[2], sys.argv[3]
os.makedirs(work, exist_ok=True)
KINDS = ["block", "insn", "read", "write", "regs", "syscall", "fault", "module", "exit", "gap"]


def run(args, expect=0):
    done = subprocess.run([tracecorn] + args, capture_output=True, text=True)
    if done.returncode != expect:
        sys.exit(f"tracecorn {' '.join(args)}: exit status {done.returncode}, expected {expect}: {done.stderr}")
    return done


def split(text):
    """Header lines, entries (seq, kind, addresses, lines) and the end line of a dump."""
    lines = text.splitlines(keepends=True)
    header, entries, end = [], [], []
    for line in lines:
        m = re.match(r"#(\d+) (\w+) ?(.*)", line)
        if m:
            entries.append([int(m.group(1)), m.group(2), m.group(3), [line]])
        elif line.startswith("    ") and entries:
            entries[-1][3].append(line)
        elif entries:
            end.append(line)
        else:
            header.append(line)
    return header, entries, end


def addresses(kind, rest):
    """(points, spans): the addresses an entry is selected by, from its printed text."""
    hexes = [int(h, 16) for h in re.findall(r"0x[0-9a-f]+", rest)]
    if kind in ("block", "insn", "regs", "syscall"):
        return [hexes[0]], []
    if kind in ("read", "write"):  # "0xADDR [s] = 0xVALUE pc 0xPC" or "pc ?"
        pc = re.search(r" pc (0x[0-9a-f]+)$", rest.strip())
        return [hexes[0]] + ([int(pc.group(1), 16)] if pc else []), []
    if kind == "fault":  # "pc 0xP address 0xA ..."
        return hexes[:2], []
    if kind == "module":  # "0xS-0xE bias ..."
        return [], [(hexes[0], hexes[1])]
    return [], []


def expected(reference, kinds=None, rng=None, window=None):
    header, entries, end = reference
    out = "".join(header)
    for seq, kind, rest, lines in entries:
        if kinds is not None and kind not in kinds:
            continue
        if window is not None and not (window[0] <= seq <= window[1]):
            continue
        if rng is not None:
            points, spans = addresses(kind, rest)
            if not any(rng[0] <= p < rng[1] for p in points) and not any(s < rng[1] and e > rng[0] for s, e in spans):
                continue
        out += "".join(lines)
    return out + "".join(end)


checks = 0
for fmt, level in (("ucir", "full"), ("frames", "full"), ("bintrace", "full")):
    trace = os.path.join(work, "trace." + fmt)
    done = subprocess.run([tracecorn, "record", "--format", fmt, "--level", level, "-o", trace, "--", sample],
                          capture_output=True)
    if not os.path.exists(trace):
        sys.exit(f"record {fmt}: {done.stderr}")
    full_text = run(["dump", trace]).stdout
    reference = split(full_text)
    entries = reference[1]
    if len(entries) < 100:
        sys.exit(f"{fmt}: only {len(entries)} events")
    seqs = [e[0] for e in entries]
    kinds_present = sorted({e[1] for e in entries})
    first_insn = next(e for e in entries if e[1] in ("insn", "block"))
    write = next((e for e in entries if e[1] == "write"), None)
    syscall = next(e for e in entries if e[1] == "syscall")
    code = addresses(first_insn[1], first_insn[2])[0][0]
    sys_pc = addresses("syscall", syscall[2])[0][0]
    middle = seqs[len(seqs) // 2]
    cases = [
        (["--kind", "syscall"], dict(kinds={"syscall"})),
        (["--kind", "block,syscall,exit"], dict(kinds={"block", "syscall", "exit"})),
        (["--kind", "mem"], dict(kinds={"read", "write"})),
        (["--kind", "module,fault"], dict(kinds={"module", "fault"})),
        (["--range", f"{code:#x}-{code + 0x80:#x}"], dict(rng=(code, code + 0x80))),
        (["--range", f"{sys_pc - 0x1000:#x}-{sys_pc + 1:#x}"], dict(rng=(sys_pc - 0x1000, sys_pc + 1))),
        (["--events", f"{middle}-{middle + 40}"], dict(window=(middle, middle + 40))),
        (["--events", f"{seqs[-5]}-"], dict(window=(seqs[-5], 1 << 64))),
        (["--events", str(middle)], dict(window=(middle, middle))),
        (["--kind", "insn", "--range", f"{code:#x}-{code + 0x40:#x}", "--events", f"0-{middle}"],
         dict(kinds={"insn"}, rng=(code, code + 0x40), window=(0, middle))),
    ]
    if write:
        address = addresses("write", write[2])[0][0]
        cases.append((["--range", f"{address:#x}-{address + 64:#x}", "--kind", "write"],
                      dict(kinds={"write"}, rng=(address, address + 64))))
    for options, selection in cases:
        got = run(["dump", trace] + options).stdout
        want = expected(reference, **selection)
        if got != want:
            sys.exit(f"{fmt}: dump {' '.join(options)} differs from the unfiltered dump's selection "
                     f"({len(split(got)[1])} entries, expected {len(split(want)[1])})")
        present = selection.get("kinds", set(KINDS)) & set(kinds_present)
        if got == full_text or (present and len(split(got)[1]) == 0):
            sys.exit(f"{fmt}: dump {' '.join(options)} selected nothing or everything: the check proves nothing")
        checks += 1
    # Every kind alone (UCIR, the format with the most kinds): together they are the whole dump.
    if fmt != "ucir":
        continue
    union = set()
    for kind in kinds_present:
        got = run(["dump", trace, "--kind", kind]).stdout
        if got != expected(reference, kinds={kind}):
            sys.exit(f"{fmt}: dump --kind {kind} differs from the unfiltered dump's {kind} entries")
        union |= {e[0] for e in split(got)[1]}
        checks += 1
    if union != set(seqs):
        sys.exit(f"{fmt}: the kinds' dumps do not cover every event")

for options, word in ((["--kind", "syscal"], "--kind"), (["--range", "0x20-0x10"], "--range"),
                      (["--events", "x-3"], "--events")):
    err = run(["dump", os.path.join(work, "trace.ucir")] + options, expect=125).stderr
    if word not in err or not err.startswith("tracecorn: "):
        sys.exit(f"dump {' '.join(options)}: no clear message: {err}")
print(f"dump filters: {checks} filtered dumps equal the unfiltered dumps' selections")
