#!/usr/bin/python3
# Role: the mutated-trace campaign: a sample is recorded in every readable
# format, then seeded mutations of each file (bit flips, runs of bytes
# overwritten, cuts, bytes inserted or removed) go through every command that
# reads a trace: dump, stat, replay, convert to each format, and the drcov and
# Chrome exports. Each run must end without a crash or a sanitizer report
# (scripts/asan.sh runs this same test on the ASan+UBSan build); a non-zero
# exit must come with a message naming the file; a convert or export that fails
# must leave no output (nor a temporary file beside it), and one that succeeds
# must leave a file (a converted trace that `tracecorn stat` reads).
# Bounded and seeded: MUTANTS mutants per format (a few seconds on the ordinary
# build), drawn with a fixed seed so that CI runs the same campaign each time;
# TRACECORN_MUTATION_SEED draws another (the seed is printed either way).
# Run by CTest: check_mutated_traces.py TRACECORN SAMPLE WORK_DIR
import glob
import os
import random
import shutil
import subprocess
import sys

MUTANTS = 4
DEFAULT_SEED = 25
FORMATS = ["ucir", "frames", "bintrace"]
CONVERSIONS = ["ucir", "frames", "bintrace", "drcov", "chrome", "tenet"]
SANITIZER_WORDS = ["AddressSanitizer", "LeakSanitizer", "UndefinedBehaviorSanitizer", "runtime error:",
                   "ThreadSanitizer"]
# The sanitized build is several times slower (scripts/asan.sh).
TIMEOUT_S = 60 * int(os.environ.get("TRACECORN_TEST_TIMEOUT_SCALE", "1"))


def mutate(data, rng):
    """One seeded mutation of `data`, and a word saying which."""
    data = bytearray(data)
    kind = rng.choice(["flips", "run", "cut", "insert", "delete"])
    if kind == "flips":
        for _ in range(rng.randint(1, 8)):
            at = rng.randrange(len(data))
            data[at] ^= 1 << rng.randrange(8)
    elif kind == "run":
        at = rng.randrange(len(data))
        length = rng.randint(1, 64)
        data[at:at + length] = bytes([rng.choice([0x00, 0xff, rng.randrange(256)])]) * length
    elif kind == "cut":
        del data[rng.randrange(len(data)):]
    elif kind == "insert":
        at = rng.randrange(len(data))
        data[at:at] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 16)))
    else:
        at = rng.randrange(len(data))
        del data[at:at + rng.randint(1, 16)]
    return bytes(data), kind


def run(argv):
    try:
        result = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return None, "", "timed out after %d s" % TIMEOUT_S
    return result.returncode, result.stdout.decode(errors="replace"), result.stderr.decode(errors="replace")


def main():
    tracecorn, sample, work = sys.argv[1:4]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    seed_text = os.environ.get("TRACECORN_MUTATION_SEED")
    seed = int(seed_text, 0) if seed_text else DEFAULT_SEED
    print("mutations drawn with seed %d (TRACECORN_MUTATION_SEED=%d repeats them)" % (seed, seed))
    rng = random.Random(seed)
    failures = []
    runs = 0
    outcomes = {"exit 0": 0, "non-zero": 0}

    for fmt in FORMATS:
        trace = os.path.join(work, "trace." + fmt)
        status, _, err = run([tracecorn, "record", "--format", fmt, "--level", "full", "-o", trace, "--", sample])
        if status != 3:  # the sample exits with 3
            sys.exit("record %s: exit status %s: %s" % (fmt, status, err))
        with open(trace, "rb") as f:
            original = f.read()
        for index in range(MUTANTS):
            data, kind = mutate(original, rng)
            mutant = os.path.join(work, "mutant-%s-%d.%s" % (kind, index, fmt))
            with open(mutant, "wb") as f:
                f.write(data)
            commands = [("dump", [tracecorn, "dump", mutant], None),
                        ("stat", [tracecorn, "stat", mutant], None),
                        ("replay", [tracecorn, "replay", mutant, "--", sample], None)]
            for target in CONVERSIONS:
                out = os.path.join(work, "out-%d-%s.%s" % (index, fmt, target))
                commands.append(("convert " + target, [tracecorn, "convert", mutant, out, "--format", target], out))
            for name, argv, out in commands:
                runs += 1
                status, stdout, stderr = run(argv)
                where = "%s on %s (%s)" % (name, mutant, kind)
                said = stdout + stderr
                if status is None:
                    failures.append("%s: %s" % (where, stderr))
                    continue
                if status < 0:
                    failures.append("%s: killed by signal %d: %s" % (where, -status, stderr[-2000:]))
                    continue
                for word in SANITIZER_WORDS:
                    if word in said:
                        failures.append("%s: a sanitizer report (%s): %s" % (where, word, stderr[-4000:]))
                        break
                outcomes["exit 0" if status == 0 else "non-zero"] += 1
                if status != 0 and mutant not in said:
                    failures.append("%s: exit status %d without a message naming the file: %s" %
                                    (where, status, said[-2000:]))
                if out is None:
                    continue
                left = sorted(glob.glob(glob.escape(out) + "*"))
                if status != 0 and left:
                    failures.append("%s: failed (exit status %d) but left %s" % (where, status, left))
                if status == 0:
                    if left != [out]:
                        failures.append("%s: succeeded but left %s" % (where, left))
                    elif not name.endswith(("drcov", "chrome", "tenet")):
                        check, _, check_err = run([tracecorn, "stat", out])
                        if check != 0:
                            failures.append("%s: succeeded but `stat` of its output exits %s: %s" %
                                            (where, check, check_err[-2000:]))
                for path in left:
                    os.remove(path)
            os.remove(mutant)

    print("%d runs: %d exited 0, %d non-zero with a message naming the file" %
          (runs, outcomes["exit 0"], outcomes["non-zero"]))
    if outcomes["non-zero"] == 0:
        failures.append("no mutant was refused: the mutations do not reach the readers")
    for failure in failures:
        print("FAIL: " + failure)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
