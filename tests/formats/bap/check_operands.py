#!/usr/bin/python3
# Role: checks that the std_frames tracecorn writes for samples/guest/
# machine_operands.c list what each instruction really reads and writes, with
# the values it really saw. References nobody here wrote: gdb single-stepping
# the routine natively (register and memory values before and after each
# instruction), nm (the routine's addresses), and the table below of what each
# instruction reads and writes, from the Intel SDM's description of each
# instruction (explicit operands, implicit stack, string and flag accesses).
# The frames are decoded by frames_decode.py (Debian's python3-protobuf).
# Usage: check_operands.py TRACECORN SAMPLE WORK_DIR   (exit 1 with the differences)
#
# Compared per instruction of the routine: the address; the pre list's registers
# (names and values before) and memory reads (addresses, widths, values read);
# the post list's registers (values after) and memory writes (values written);
# usage flags (pre: read, post: written, base/index on address registers) and
# no_taint. RFLAGS values are compared on the status and direction flags
# (CF PF AF ZF SF DF OF = 0xcd5): IF and the reserved bits are the emulator's.
# A flag the SDM leaves undefined after an instruction (AF after a shift, say)
# is not compared, there nor in the RFLAGS values read or written after it,
# until an instruction defines it again: CPUs differ there (an AMD EPYC sets
# AF after `shl $4`, Unicorn clears it), and a test must not depend on the
# vendor of the machine it runs on (FLAG_EFFECTS below).
# RIP is read by rip-relative operands and calls (value: the instruction's
# address); no frame lists it as written: the next frame's address is its new
# value (BAP follows control flow from the frames' addresses).
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
FLAGS_MASK = 0xCD5
CF, PF, AF, ZF, SF, DF, OF = 0x1, 0x4, 0x10, 0x40, 0x80, 0x400, 0x800
STATUS = CF | PF | AF | ZF | SF | OF

# The flags each instruction defines and those it leaves undefined, from the
# "Flags Affected" paragraph of each instruction in the Intel SDM volume 2, by
# AT&T mnemonic (a size suffix b/w/l/q is dropped when the bare name is not a
# key). Shifts and rotates: OF is defined for a count of 1 only (flag_effects).
FLAG_EFFECTS = {
    # defined: all six status flags
    "add": (STATUS, 0), "adc": (STATUS, 0), "sub": (STATUS, 0), "sbb": (STATUS, 0), "cmp": (STATUS, 0),
    "neg": (STATUS, 0), "cmps": (STATUS, 0), "scas": (STATUS, 0), "xadd": (STATUS, 0), "cmpxchg": (STATUS, 0),
    "popf": (STATUS | DF, 0),
    "inc": (STATUS & ~CF, 0), "dec": (STATUS & ~CF, 0),  # CF not affected
    # AF undefined
    "and": (STATUS & ~AF, AF), "or": (STATUS & ~AF, AF), "xor": (STATUS & ~AF, AF), "test": (STATUS & ~AF, AF),
    "shl": (CF | PF | ZF | SF | OF, AF), "sal": (CF | PF | ZF | SF | OF, AF),
    "shr": (CF | PF | ZF | SF | OF, AF), "sar": (CF | PF | ZF | SF | OF, AF),
    "shld": (CF | PF | ZF | SF | OF, AF), "shrd": (CF | PF | ZF | SF | OF, AF),
    "rol": (CF | OF, 0), "ror": (CF | OF, 0), "rcl": (CF | OF, 0), "rcr": (CF | OF, 0),
    # more undefined
    "mul": (CF | OF, SF | ZF | AF | PF), "imul": (CF | OF, SF | ZF | AF | PF),
    "div": (0, STATUS), "idiv": (0, STATUS),
    "bsf": (ZF, CF | OF | SF | AF | PF), "bsr": (ZF, CF | OF | SF | AF | PF),
    "bt": (CF, OF | SF | AF | PF), "bts": (CF, OF | SF | AF | PF), "btr": (CF, OF | SF | AF | PF),
    "btc": (CF, OF | SF | AF | PF),
    "lzcnt": (CF | ZF, OF | SF | PF | AF), "tzcnt": (CF | ZF, OF | SF | PF | AF), "popcnt": (STATUS, 0),
    "aaa": (AF | CF, OF | SF | ZF | PF), "aas": (AF | CF, OF | SF | ZF | PF),
    "daa": (CF | AF | SF | ZF | PF, OF), "das": (CF | AF | SF | ZF | PF, OF),
    "aam": (SF | ZF | PF, OF | AF | CF), "aad": (SF | ZF | PF, OF | AF | CF),
    # one flag
    "cld": (DF, 0), "std": (DF, 0), "clc": (CF, 0), "stc": (CF, 0), "cmc": (CF, 0),
    # no flag
    "push": (0, 0), "pop": (0, 0), "mov": (0, 0), "movabs": (0, 0), "lea": (0, 0), "call": (0, 0), "ret": (0, 0),
    "movs": (0, 0), "stos": (0, 0), "lods": (0, 0), "xchg": (0, 0),
}
SHIFTS_AND_ROTATES = {"shl", "sal", "shr", "sar", "shld", "shrd", "rol", "ror", "rcl", "rcr"}


def flag_effects(text):
    """(flags defined, flags left undefined) by the instruction `text` (AT&T syntax)."""
    mnemonic = text.split()[0]
    if mnemonic not in FLAG_EFFECTS and mnemonic[-1:] in ("b", "w", "l", "q"):
        mnemonic = mnemonic[:-1]
    if mnemonic not in FLAG_EFFECTS:
        raise KeyError("check_operands.py: no flags entry for %r: add the SDM's to FLAG_EFFECTS" % text)
    defined, undefined = FLAG_EFFECTS[mnemonic]
    if mnemonic in SHIFTS_AND_ROTATES:
        operands = text.split(None, 1)[1].split(",") if " " in text else []
        if len(operands) >= 2 and operands[0].strip() != "$1":  # a count other than 1 (or in %cl)
            defined, undefined = defined & ~OF, undefined | OF
    return defined, undefined


def undefined_flags_before():
    """For each instruction of EXPECTED, the flags whose value is undefined before it and after it."""
    unknown, spans = 0, []
    for text, *_ in EXPECTED:
        defined, undefined = flag_effects(text)
        after = (unknown & ~defined) | undefined
        spans.append((unknown, after))
        unknown = after
    return spans
REGISTERS = ["rax", "rbx", "rcx", "rdx", "rsi", "rdi", "rbp", "rsp", "r8", "r9", "r10", "r11", "r12", "r13",
             "r14", "r15", "rip", "eflags"]
REGIONS = [("probe_source", 32), ("probe_dest", 48), ("probe_stack", 256), ("probe_results", 32)]

# (instruction, registers read, memory read [(address expression, bytes)], registers written, memory written).
# Address expressions use the registers' values before the instruction.
EXPECTED = [
    ("push $0x202", {"RSP"}, [], {"RSP"}, [("rsp-8", 8)]),
    ("popfq", {"RSP"}, [("rsp", 8)], {"RSP", "RFLAGS"}, []),
    ("movabs $imm, %rax", set(), [], {"RAX"}, []),
    ("mov $imm, %ebx", set(), [], {"RBX"}, []),
    ("lea probe_source(%rip), %rsi", {"RIP"}, [], {"RSI"}, []),
    ("lea probe_dest(%rip), %rdi", {"RIP"}, [], {"RDI"}, []),
    ("mov (%rsi), %rcx", {"RSI"}, [("rsi", 8)], {"RCX"}, []),
    ("mov $1, %r8d", set(), [], {"R8"}, []),
    ("mov (%rsi,%r8,8), %rdx", {"RSI", "R8"}, [("rsi+r8*8", 8)], {"RDX"}, []),
    ("mov %rax, 8(%rdi)", {"RAX", "RDI"}, [], set(), [("rdi+8", 8)]),
    ("mov %rdx, probe_results(%rip)", {"RDX", "RIP"}, [], set(), [("probe_results", 8)]),
    ("push %rax", {"RSP", "RAX"}, [], {"RSP"}, [("rsp-8", 8)]),
    ("pop %r9", {"RSP"}, [("rsp", 8)], {"RSP", "R9"}, []),
    ("call probe_leaf", {"RSP", "RIP"}, [], {"RSP"}, [("rsp-8", 8)]),
    ("lea 1(%rax), %r10", {"RAX"}, [], {"R10"}, []),
    ("ret", {"RSP"}, [("rsp", 8)], {"RSP"}, []),
    ("add %rbx, %rax", {"RAX", "RBX"}, [], {"RAX", "RFLAGS"}, []),
    ("sub %rdx, %rcx", {"RCX", "RDX"}, [], {"RCX", "RFLAGS"}, []),
    ("cmp %rcx, %rax", {"RAX", "RCX"}, [], {"RFLAGS"}, []),
    ("adc $1, %r9", {"R9", "RFLAGS"}, [], {"R9", "RFLAGS"}, []),
    ("shl $4, %r8", {"R8"}, [], {"R8", "RFLAGS"}, []),
    ("cld", set(), [], {"RFLAGS"}, []),
    ("movsq", {"RSI", "RDI", "RFLAGS"}, [("rsi", 8)], {"RSI", "RDI"}, [("rdi", 8)]),
    ("mov $imm, %eax", set(), [], {"RAX"}, []),
    ("stosl", {"RAX", "RDI", "RFLAGS"}, [], {"RDI"}, [("rdi", 4)]),
    ("lodsb", {"RSI", "RFLAGS"}, [("rsi", 1)], {"RAX", "RSI"}, []),
    ("cmpsb", {"RSI", "RDI", "RFLAGS"}, [("rsi", 1), ("rdi", 1)], {"RSI", "RDI", "RFLAGS"}, []),
    ("incq 16(%rdi)", {"RDI"}, [("rdi+16", 8)], {"RFLAGS"}, [("rdi+16", 8)]),
    ("xchg %rcx, 8(%rdi)", {"RCX", "RDI"}, [("rdi+8", 8)], {"RCX"}, [("rdi+8", 8)]),
    ("mov %rax, probe_results+8(%rip)", {"RAX", "RIP"}, [], set(), [("probe_results+8", 8)]),
    ("mov %rcx, probe_results+16(%rip)", {"RCX", "RIP"}, [], set(), [("probe_results+16", 8)]),
    ("mov %r9, probe_results+24(%rip)", {"R9", "RIP"}, [], set(), [("probe_results+24", 8)]),
]
# Address registers (operand_usage base / index), by instruction index.
ADDRESS_REGISTERS = {4: ({"RIP"}, set()), 5: ({"RIP"}, set()), 6: ({"RSI"}, set()), 8: ({"RSI"}, {"R8"}),
                     9: ({"RDI"}, set()), 10: ({"RIP"}, set()), 14: ({"RAX"}, set()),
                     # String instructions: [rsi] and [rdi] are memory operands with those bases.
                     22: ({"RSI", "RDI"}, set()), 24: ({"RDI"}, set()), 25: ({"RSI"}, set()),
                     26: ({"RSI", "RDI"}, set()), 27: ({"RDI"}, set()),
                     28: ({"RDI"}, set()), 29: ({"RIP"}, set()), 30: ({"RIP"}, set()), 31: ({"RIP"}, set())}


def symbols(sample):
    table = {}
    for line in subprocess.run(["nm", sample], check=True, capture_output=True, text=True).stdout.splitlines():
        parts = line.split()
        if len(parts) == 3:
            table[parts[2]] = int(parts[0], 16)
    return table


def native_states(sample, table, work):
    """gdb single-steps the routine natively: the state before each instruction and after the last."""
    states = os.path.join(work, "states.jsonl")
    script = os.path.join(work, "stepper.py")
    with open(script, "w") as out:
        out.write("import gdb, json\n")
        out.write("end = %d\nregs = %r\nregions = %r\n" % (table["probe_end"], REGISTERS,
                                                           [(table[n], s) for n, s in REGIONS]))
        out.write("out = open(%r, 'w')\n" % states)
        out.write(
            "inferior = gdb.selected_inferior()\n"
            "while True:\n"
            "    state = {r: int(gdb.parse_and_eval('$' + r)) & (2**64 - 1) for r in regs}\n"
            "    state['memory'] = [inferior.read_memory(a, s).tobytes().hex() for a, s in regions]\n"
            "    out.write(json.dumps(state) + '\\n')\n"
            "    if state['rip'] == end: break\n"
            "    gdb.execute('stepi', to_string=True)\n"
            "out.close()\n")
    subprocess.run(["gdb", "-batch", "-nx", "-ex", "set pagination off", "-ex", "break probe_begin", "-ex", "run",
                    "-x", script, sample], check=True, capture_output=True, text=True,
                   env={"PATH": "/usr/bin:/bin", "LC_ALL": "C"})
    return [json.loads(line) for line in open(states)]


def frames(tracecorn, sample, work):
    trace = os.path.join(work, "operands.frames")
    run = subprocess.run([tracecorn, "record", "--format", "frames", "-o", trace, "--", sample],
                         capture_output=True, text=True)
    if run.returncode != 0:
        raise SystemExit("record failed (%d): %s" % (run.returncode, run.stderr))
    decoded = subprocess.run([sys.executable, os.path.join(HERE, "frames_decode.py"), trace], check=True,
                             capture_output=True, text=True).stdout
    result = []
    for line in decoded.splitlines():
        fields = line.split("\t")
        if fields[0] != "std":
            continue
        lists = {}
        for part in fields[4:7]:  # pre=, post=, un= (fields[7] is mode=)
            name, _, body = part.partition("=")
            ops = []
            for text in filter(None, body.split(",")):
                where, bits, flags, value = text.split("/")
                ops.append((where, int(bits), flags, bytes.fromhex(value)))
            lists[name] = ops
        result.append((int(fields[1], 16), lists))
    return result


def main():
    tracecorn, sample, work = sys.argv[1:4]
    os.makedirs(work, exist_ok=True)
    table = symbols(sample)
    states = native_states(sample, table, work)
    recorded = frames(tracecorn, sample, work)
    start = next(i for i, (address, _) in enumerate(recorded) if address == table["probe_begin"])
    routine = recorded[start:start + len(EXPECTED)]
    errors = []
    if len(states) != len(EXPECTED) + 1:
        errors.append("gdb stepped %d instructions, the table has %d" % (len(states) - 1, len(EXPECTED)))

    def memory(state, address, size):
        for (name, length), dump in zip(REGIONS, state["memory"]):
            base = table[name]
            if base <= address and address + size <= base + length:
                return bytes.fromhex(dump)[address - base:address - base + size]
        return None

    def register(state, name, flags_mask):
        key = "eflags" if name == "RFLAGS" else name.lower()
        value = state[key]
        return value & flags_mask if name == "RFLAGS" else value

    undefined = undefined_flags_before()

    def evaluate(expression, state):
        names = dict((r, state[r]) for r in REGISTERS)
        names.update((n, table[n]) for n, _ in REGIONS)
        return eval(expression, {"__builtins__": {}}, names) & (2**64 - 1)

    for i, (text, read, mem_read, written, mem_written) in enumerate(EXPECTED):
        if i >= len(routine) or i + 1 >= len(states):
            errors.append("%d %s: missing" % (i, text))
            continue
        before, after = states[i], states[i + 1]
        address, lists = routine[i]
        where = "%d %s at %#x" % (i, text, address)
        if address != before["rip"]:
            errors.append("%s: frame address, native pc %#x" % (where, before["rip"]))
            continue
        pre_regs = {op[0]: op for op in lists["pre"] if not op[0].startswith("@")}
        post_regs = {op[0]: op for op in lists["post"] if not op[0].startswith("@")}
        pre_mem = [op for op in lists["pre"] if op[0].startswith("@")]
        post_mem = [op for op in lists["post"] if op[0].startswith("@")]
        if set(pre_regs) != read:
            errors.append("%s: registers read %s, expected %s" % (where, sorted(pre_regs), sorted(read)))
        if set(post_regs) != written:
            errors.append("%s: registers written %s, expected %s" % (where, sorted(post_regs), sorted(written)))
        base, index = ADDRESS_REGISTERS.get(i, (set(), set()))
        mask_before, mask_after = (FLAGS_MASK & ~undefined[i][0]), (FLAGS_MASK & ~undefined[i][1])
        for name, (_, bits, flags, value) in pre_regs.items():
            native = register(before, name, mask_before)
            got = int.from_bytes(value, "little") & (mask_before if name == "RFLAGS" else 2**64 - 1)
            if got != native or bits != 64:
                errors.append("%s: %s before = %#x/%d bits, native %#x" % (where, name, got, bits, native))
            expected_flags = "r" + ("i" if name in index else "") + ("b" if name in base else "") + "n"
            if flags != expected_flags:
                errors.append("%s: %s usage %s, expected %s" % (where, name, flags, expected_flags))
        for name, (_, bits, flags, value) in post_regs.items():
            native = register(after, name, mask_after)
            got = int.from_bytes(value, "little") & (mask_after if name == "RFLAGS" else 2**64 - 1)
            if got != native or flags != "wn":
                errors.append("%s: %s after = %#x (%s), native %#x" % (where, name, got, flags, native))
        for kind, expected, ops, state, usage in (("read", mem_read, pre_mem, before, "rn"),
                                                  ("written", mem_written, post_mem, after, "wn")):
            # In the emulator's order of access (cmpsb loads [rdi] first): compared as sets.
            want = sorted((evaluate(e, before), size) for e, size in expected)
            ops = sorted(ops, key=lambda op: int(op[0][1:], 16))
            got = [(int(op[0][1:], 16), op[1] // 8) for op in ops]
            if got != want:
                errors.append("%s: memory %s %s, expected %s" % (where, kind, [(hex(a), s) for a, s in got],
                                                                  [(hex(a), s) for a, s in want]))
                continue
            for (addr, size), op in zip(got, ops):
                native = memory(state, addr, size)
                if native != op[3] or op[2] != usage:
                    errors.append("%s: memory %s at %#x = %s (%s), native %s" % (
                        where, kind, addr, op[3].hex(), op[2], native.hex() if native else None))
    if errors:
        print("\n".join(errors))
        return 1
    print("%d instructions: operands and values match the native run" % len(EXPECTED))
    return 0


if __name__ == "__main__":
    sys.exit(main())
