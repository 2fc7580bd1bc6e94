#!/usr/bin/python3
# Role: an independent decoder of BAP frames traces for the tests: Debian's
# python3-protobuf on a .proto this script generates from its own field table
# (bap-frames' piqi schema as docs/formats/bap-frames.md gives it, plus tracecorn's
# fields from 1000, written out here, not taken from formats/bap/frames.proto),
# compiled with protoc at run time. It also walks the container itself (header,
# meta frame, u64-size-prefixed frames, the TOC) and checks it: frames end
# exactly at T, their count is n, and the TOC has ceil(n/m) entries where entry
# k is the offset of frame k*m.
# Usage: frames_decode.py FILE (plain, not zstd). Prints one line per frame
# (tab-separated, described in describe()); exits 1 with a message on stderr
# when the container or a frame is wrong.
import os
import struct
import subprocess
import sys
import tempfile

# message -> [(label, type, name, number)]; list types are `repeated T elem = 1`.
SCHEMA = {
    "frame": [("optional", "std_frame", "std_frame", 1), ("optional", "syscall_frame", "syscall_frame", 2),
              ("optional", "exception_frame", "exception_frame", 3),
              ("optional", "taint_intro_frame", "taint_intro_frame", 4),
              ("optional", "modload_frame", "modload_frame", 5), ("optional", "key_frame", "key_frame", 6)],
    "std_frame": [("required", "uint64", "address", 1), ("required", "uint64", "thread_id", 2),
                  ("required", "bytes", "rawbytes", 3), ("required", "operand_value_list", "operand_pre_list", 4),
                  ("optional", "operand_value_list", "operand_post_list", 5), ("optional", "string", "mode", 6),
                  ("optional", "operand_value_list", "tracecorn_unattributed", 1000)],
    "operand_value_list": [("repeated", "operand_info", "elem", 1)],
    "operand_info": [("required", "operand_info_specific", "operand_info_specific", 1),
                     ("required", "sint32", "bit_length", 2), ("required", "operand_usage", "operand_usage", 3),
                     ("required", "taint_info", "taint_info", 4), ("required", "bytes", "value", 5)],
    "operand_info_specific": [("optional", "mem_operand", "mem_operand", 1),
                              ("optional", "reg_operand", "reg_operand", 2)],
    "reg_operand": [("required", "string", "name", 1)],
    "mem_operand": [("required", "uint64", "address", 1)],
    "operand_usage": [("required", "bool", "read", 1), ("required", "bool", "written", 2),
                      ("required", "bool", "index", 3), ("required", "bool", "base", 4)],
    "taint_info": [("optional", "bool", "no_taint", 1), ("optional", "uint64", "taint_id", 2),
                   ("optional", "bool", "taint_multiple", 3)],
    "syscall_frame": [("required", "uint64", "address", 1), ("required", "uint64", "thread_id", 2),
                      ("required", "uint64", "number", 3), ("required", "argument_list", "argument_list", 4),
                      ("repeated", "uint64", "tracecorn_call_stack", 1000),
                      ("optional", "sint64", "tracecorn_result", 1001)],
    "argument_list": [("repeated", "sint64", "elem", 1)],
    "exception_frame": [("required", "uint64", "exception_number", 1), ("optional", "uint64", "thread_id", 2),
                        ("optional", "uint64", "from_addr", 3), ("optional", "uint64", "to_addr", 4),
                        ("optional", "uint64", "tracecorn_fault_address", 1000),
                        ("optional", "string", "tracecorn_description", 1001),
                        ("optional", "uint64", "tracecorn_lost_events", 1002)],
    "taint_intro_frame": [("required", "taint_intro_list", "taint_intro_list", 1)],
    "taint_intro_list": [("repeated", "taint_intro", "elem", 1)],
    "taint_intro": [("required", "uint64", "addr", 1), ("required", "uint64", "taint_id", 2),
                    ("optional", "bytes", "value", 3), ("optional", "string", "source_name", 4),
                    ("optional", "uint64", "offset", 5)],
    "modload_frame": [("required", "string", "module_name", 1), ("required", "uint64", "low_address", 2),
                      ("required", "uint64", "high_address", 3)],
    "key_frame": [("required", "tagged_value_lists", "tagged_value_lists", 1)],
    "tagged_value_lists": [("repeated", "tagged_value_list", "elem", 1)],
    "tagged_value_list": [("required", "value_source_tag", "value_source_tag", 1),
                          ("required", "value_list", "value_list", 2)],
    "value_source_tag": [("optional", "bool", "no_thread_id", 1), ("optional", "uint64", "thread_id", 2)],
    "value_list": [("repeated", "value_info", "elem", 1)],
    "value_info": [("required", "operand_info_specific", "operand_info_specific", 1),
                   ("required", "sint32", "bit_length", 2), ("optional", "taint_info", "taint_info", 3),
                   ("required", "bytes", "value", 4)],
    "meta_frame": [("required", "tracer", "tracer", 1), ("required", "target", "target", 2),
                   ("required", "fstats", "fstats", 3), ("required", "string", "user", 4),
                   ("required", "string", "host", 5), ("required", "double", "time", 6)],
    "tracer": [("required", "string", "name", 1), ("repeated", "string", "args", 2),
               ("repeated", "string", "envp", 3), ("required", "string", "version", 4)],
    "target": [("required", "string", "path", 1), ("repeated", "string", "args", 2),
               ("repeated", "string", "envp", 3), ("required", "bytes", "md5sum", 4)],
    "fstats": [("required", "sint32", "size", 1), ("required", "double", "atime", 2),
               ("required", "double", "mtime", 3), ("required", "double", "ctime", 4)],
}
MAGIC = 7456879624156307493


def fail(message):
    sys.stderr.write("frames_decode: " + message + "\n")
    sys.exit(1)


def load_schema(directory):
    lines = ['syntax = "proto2";', "package pydecode;"]
    for message, fields in SCHEMA.items():
        lines.append("message %s {" % message)
        for label, kind, name, number in fields:
            packed = " [packed = true]" if name == "tracecorn_call_stack" else ""
            lines.append("  %s %s %s = %d%s;" % (label, kind, name, number, packed))
        lines.append("}")
    with open(os.path.join(directory, "pydecode.proto"), "w") as out:
        out.write("\n".join(lines) + "\n")
    subprocess.run(["protoc", "--python_out=" + directory, "-I" + directory, "pydecode.proto"], check=True)
    sys.path.insert(0, directory)
    import pydecode_pb2
    return pydecode_pb2


def operand(info):
    spec = info.operand_info_specific
    where = ("@%x" % spec.mem_operand.address) if spec.HasField("mem_operand") else spec.reg_operand.name
    usage = info.operand_usage
    flags = "".join(c for c, on in zip("rwib", (usage.read, usage.written, usage.index, usage.base)) if on)
    if info.taint_info.no_taint:
        flags += "n"
    return "%s/%d/%s/%s" % (where, info.bit_length, flags or "-", info.value.hex())


def describe(pb, frame):
    """std ADDR THREAD RAW pre=OPS post=OPS un=OPS mode=MODE (- when absent); syscall ADDR THREAD NUMBER ARGS result=R stack=S;
    exception NUMBER THREAD FROM FAULT LOST DESCRIPTION; modload NAME LOW HIGH; key COUNT; taint."""
    kind = None
    for name in ("std_frame", "syscall_frame", "exception_frame", "taint_intro_frame", "modload_frame", "key_frame"):
        if frame.HasField(name):
            kind = name
    if kind == "std_frame":
        f = frame.std_frame
        ops = lambda values: ",".join(operand(i) for i in values.elem)
        return "std\t%x\t%d\t%s\tpre=%s\tpost=%s\tun=%s\tmode=%s" % (
            f.address, f.thread_id, f.rawbytes.hex(), ops(f.operand_pre_list), ops(f.operand_post_list),
            ops(f.tracecorn_unattributed), f.mode if f.HasField("mode") else "-")
    if kind == "syscall_frame":
        f = frame.syscall_frame
        return "syscall\t%x\t%d\t%d\t%s\tresult=%d\tstack=%s" % (
            f.address, f.thread_id, f.number, ",".join(str(a) for a in f.argument_list.elem), f.tracecorn_result,
            ",".join("%x" % a for a in f.tracecorn_call_stack))
    if kind == "exception_frame":
        f = frame.exception_frame
        return "exception\t%d\t%d\t%x\t%x\t%d\t%s" % (f.exception_number, f.thread_id, f.from_addr,
                                                       f.tracecorn_fault_address, f.tracecorn_lost_events,
                                                       f.tracecorn_description)
    if kind == "modload_frame":
        f = frame.modload_frame
        return "modload\t%s\t%x\t%x" % (f.module_name, f.low_address, f.high_address)
    if kind == "key_frame":
        count = sum(len(l.value_list.elem) for l in frame.key_frame.tagged_value_lists.elem)
        return "key\t%d" % count
    if kind == "taint_intro_frame":
        return "taint"
    fail("a frame with no kind set")


def main():
    if len(sys.argv) != 2:
        fail("usage: frames_decode.py FILE")
    data = open(sys.argv[1], "rb").read()
    if len(data) < 48:
        fail("shorter than the header")
    magic, version, arch, mach, n, toc = struct.unpack_from("<6Q", data, 0)
    if magic != MAGIC:
        fail("bad magic %d" % magic)
    with tempfile.TemporaryDirectory() as directory:
        pb = load_schema(directory)
        at = 48
        print("header\t%d\t%d\t%d\t%d\t%d" % (version, arch, mach, n, toc))
        if version >= 2:
            (size,) = struct.unpack_from("<Q", data, at)
            meta = pb.meta_frame()
            meta.ParseFromString(data[at + 8:at + 8 + size])
            print("meta\t%s\t%s\t%s\t%s\t%d\t%d\t%s\t%s" % (
                meta.tracer.name, meta.tracer.version, meta.target.path, " ".join(meta.target.args),
                len(meta.target.envp), meta.fstats.size, meta.target.md5sum.hex(), meta.user))
            at += 8 + size
        offsets = []
        while at < toc:
            (size,) = struct.unpack_from("<Q", data, at)
            if at + 8 + size > toc:
                fail("frame %d at %d runs past T = %d" % (len(offsets), at, toc))
            frame = pb.frame()
            frame.ParseFromString(data[at + 8:at + 8 + size])
            offsets.append(at)
            print(describe(pb, frame))
            at += 8 + size
        if at != toc:
            fail("frames end at %d, T = %d" % (at, toc))
        if len(offsets) != n:
            fail("n = %d, the file has %d frames" % (n, len(offsets)))
        (m,) = struct.unpack_from("<Q", data, toc)
        entries = list(struct.unpack_from("<%dQ" % ((len(data) - toc - 8) // 8), data, toc + 8))
        expected = [offsets[k * m] for k in range((n + m - 1) // m)]
        if entries != expected:
            fail("TOC %s, expected %s (m = %d)" % (entries, expected, m))
        print("toc\t%d\t%d" % (m, len(entries)))


if __name__ == "__main__":
    main()
