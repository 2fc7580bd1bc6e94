#!/usr/bin/python3
# Role: a peer for the recorder's `mem` level, written the way Python Unicorn
# frameworks trace: a minimal Linux user-mode loader around Debian's
# python3-unicorn (2.0.1) that runs a static x86-64 ELF (busybox) and records
# every memory access (address, size, value) and every basic block from Python
# hooks into a binary file. bench/peers_bench.sh times it against native
# execution and valgrind's lackey; it is a benchmark peer, not part of tracecorn.
#
# Usage: /usr/bin/python3 bench/py_unicorn_mem_tracer.py [--trace FILE | --no-trace]
#            STATIC_ELF [ARG...]
#   e.g.  ... --trace /tmp/t.bin /bin/busybox sha256sum FILE
# Run it with Debian's /usr/bin/python3 (the python3 first on PATH may be
# another install without the unicorn module).
#
# What it implements, and no more: PT_LOAD segments of an ET_EXEC image; a stack
# with argc/argv/envp/auxv (AT_PHDR, AT_PHENT, AT_PHNUM, AT_PAGESZ, AT_ENTRY,
# AT_RANDOM, ...); the CPU state glibc needs on Unicorn 2.0.1 (CR4=0x600,
# FPCW=0x37f, MXCSR=0x1f80; see docs/architectures.md, "Unicorn 2.0.1"); and the
# syscalls static busybox sha256sum makes (as `tracecorn run --syscall-log`
# shows): brk, arch_prctl, set_tid_address, set_robust_list, rseq (ENOSYS),
# prlimit64, readlink(/proc/self/exe), getrandom, mprotect (ignored), prctl,
# getuid, openat (read-only), read, close, newfstatat/fstat, write, exit_group,
# plus anonymous mmap. Any other syscall returns -ENOSYS and is reported on
# stderr.
#
# Trace file: a sequence of 24-byte little-endian records
#   offset 0  u8   kind: 0 = block, 1 = memory read, 2 = memory write
#          1  u8x3 zero
#          4  u32  size (block bytes, or access bytes)
#          8  u64  address
#         16  i64  value (0 for blocks; the value read (UC_HOOK_MEM_READ_AFTER)
#                  or written, truncated to 64 bits by Unicorn)
#
# Invariants: the guest's stdout is the process's stdout (fd 1), so the digest
# is printed there; statistics go to stderr; the exit status is the guest's;
# a guest that stops without calling exit makes this script exit 3.
import os
import struct
import sys
import time

from unicorn import (UC_ARCH_X86, UC_HOOK_BLOCK, UC_HOOK_INSN,
                     UC_HOOK_MEM_READ_AFTER, UC_HOOK_MEM_WRITE, UC_MEM_WRITE,
                     UC_MODE_64, UC_PROT_ALL, UC_PROT_EXEC, UC_PROT_NONE,
                     UC_PROT_READ, UC_PROT_WRITE, Uc)
from unicorn.x86_const import (UC_X86_INS_SYSCALL, UC_X86_REG_CR4,
                               UC_X86_REG_FPCW, UC_X86_REG_FS_BASE,
                               UC_X86_REG_MXCSR, UC_X86_REG_R8, UC_X86_REG_R9,
                               UC_X86_REG_R10, UC_X86_REG_RAX, UC_X86_REG_RDI,
                               UC_X86_REG_RDX, UC_X86_REG_RIP, UC_X86_REG_RSI,
                               UC_X86_REG_RSP)

PAGE = 0x1000
STACK_TOP = 0x7FFFFFFFF000
STACK_SIZE = 8 << 20
MMAP_TOP = 0x7FFFF7FFF000
GUEST_ENV = [b"LC_ALL=C", b"PATH=/usr/bin:/bin"]

ENOENT, EBADF, EINVAL, ENOTTY, ENOSYS = 2, 9, 22, 25, 38
AT_EMPTY_PATH = 0x1000
ARCH_SET_FS = 0x1002

RECORD = struct.Struct("<BxxxIQq")
KIND_BLOCK, KIND_READ, KIND_WRITE = 0, 1, 2


def page_down(x):
    return x & ~(PAGE - 1)


def page_up(x):
    return (x + PAGE - 1) & ~(PAGE - 1)


USAGE = "usage: py_unicorn_mem_tracer.py [--trace FILE | --no-trace] STATIC_ELF [ARG...]"


class Guest:
    """One static ELF process on one Unicorn engine. Not thread safe."""

    def __init__(self, path, argv):
        self.uc = Uc(UC_ARCH_X86, UC_MODE_64)
        self.path = path
        self.exit_status = None
        self.fds = {0: 0, 1: 1, 2: 2}  # guest fd -> host fd
        self.next_fd = 3
        self.mmap_next = MMAP_TOP
        self.unknown_syscalls = {}
        entry, phdr, phnum, phent, image_end = self._load(path)
        self.brk_start = self.brk = self.brk_mapped = page_up(image_end)
        self._set_cpu_state()
        rsp = self._build_stack(argv, entry, phdr, phnum, phent)
        self.uc.reg_write(UC_X86_REG_RSP, rsp)
        self.entry = entry
        self.uc.hook_add(UC_HOOK_INSN, self._on_syscall, None, 1, 0, UC_X86_INS_SYSCALL)

    # --- loading ----------------------------------------------------------
    def _load(self, path):
        with open(path, "rb") as f:
            image = f.read()
        if image[:4] != b"\x7fELF" or image[4] != 2 or image[5] != 1:
            raise SystemExit(f"{path}: not a 64-bit little-endian ELF")
        (e_type, e_machine, _, e_entry, e_phoff, _, _, _, e_phentsize,
         e_phnum) = struct.unpack_from("<HHIQQQIHHH", image, 16)
        if e_type != 2 or e_machine != 62:
            raise SystemExit(f"{path}: only static x86-64 ET_EXEC is supported")
        segments = []
        phdr_addr = None
        for i in range(e_phnum):
            (p_type, p_flags, p_offset, p_vaddr, _, p_filesz, p_memsz,
             _) = struct.unpack_from("<IIQQQQQQ", image, e_phoff + i * e_phentsize)
            if p_type == 1:  # PT_LOAD
                prot = UC_PROT_NONE
                if p_flags & 4:
                    prot |= UC_PROT_READ
                if p_flags & 2:
                    prot |= UC_PROT_WRITE
                if p_flags & 1:
                    prot |= UC_PROT_EXEC
                segments.append((p_vaddr, p_memsz, p_offset, p_filesz, prot))
                if p_offset <= e_phoff < p_offset + p_filesz:
                    phdr_addr = p_vaddr + (e_phoff - p_offset)
            elif p_type == 6:  # PT_PHDR
                phdr_addr = p_vaddr
        # Pages shared by two segments get the union of their protections.
        pages = {}
        for vaddr, memsz, _, _, prot in segments:
            for page in range(page_down(vaddr), page_up(vaddr + memsz), PAGE):
                pages[page] = pages.get(page, 0) | prot
        runs = []  # (start, end, prot), merging adjacent pages of equal protection
        for page in sorted(pages):
            if runs and runs[-1][1] == page and runs[-1][2] == pages[page]:
                runs[-1][1] = page + PAGE
            else:
                runs.append([page, page + PAGE, pages[page]])
        for start, end, prot in runs:
            self.uc.mem_map(start, end - start, prot)
        for vaddr, _, offset, filesz, _ in segments:
            self.uc.mem_write(vaddr, image[offset:offset + filesz])  # ignores protections
        image_end = max(v + m for v, m, _, _, _ in segments)
        return e_entry, phdr_addr or 0, e_phnum, e_phentsize, image_end

    def _set_cpu_state(self):
        # Unicorn 2.0.1 starts with CR4 = 0, FPCW = 0 and MXCSR = 0 (see notes).
        self.uc.reg_write(UC_X86_REG_CR4, 0x600)
        self.uc.reg_write(UC_X86_REG_FPCW, 0x37F)
        self.uc.reg_write(UC_X86_REG_MXCSR, 0x1F80)

    def _build_stack(self, argv, entry, phdr, phnum, phent):
        uc = self.uc
        uc.mem_map(STACK_TOP - STACK_SIZE, STACK_SIZE, UC_PROT_READ | UC_PROT_WRITE)
        sp = STACK_TOP

        def push_bytes(data):
            nonlocal sp
            sp -= len(data)
            uc.mem_write(sp, data)
            return sp

        execfn = push_bytes(self.path.encode() + b"\0")
        argv_ptrs = [push_bytes(a + b"\0") for a in argv]
        env_ptrs = [push_bytes(e + b"\0") for e in GUEST_ENV]
        platform = push_bytes(b"x86_64\0")
        random16 = push_bytes(bytes(range(0x10, 0x20)))  # deterministic AT_RANDOM
        auxv = [(3, phdr), (4, phent), (5, phnum), (6, PAGE), (7, 0), (8, 0),
                (9, entry), (11, 0), (12, 0), (13, 0), (14, 0), (16, 0),
                (17, 100), (23, 0), (25, random16), (31, execfn), (15, platform),
                (0, 0)]
        words = [len(argv)] + argv_ptrs + [0] + env_ptrs + [0]
        for key, value in auxv:
            words += [key, value]
        sp = (sp - 8 * len(words)) & ~0xF
        uc.mem_write(sp, struct.pack(f"<{len(words)}Q", *words))
        return sp

    # --- syscalls -----------------------------------------------------------
    def _read_string(self, address, limit=4096):
        out = b""
        while len(out) < limit:
            at = address + len(out)
            chunk = bytes(self.uc.mem_read(at, min(64, page_up(at + 1) - at)))  # never past the page
            nul = chunk.find(b"\0")
            if nul >= 0:
                return out + chunk[:nul]
            out += chunk
        return out

    def _stat_bytes(self, st):
        return struct.pack("<QQQIIIIQqqq6q3q", st.st_dev, st.st_ino, st.st_nlink,
                           st.st_mode, st.st_uid, st.st_gid, 0, st.st_rdev, st.st_size,
                           st.st_blksize, st.st_blocks, int(st.st_atime), 0,
                           int(st.st_mtime), 0, int(st.st_ctime), 0, 0, 0, 0)

    def _map_anonymous(self, length):
        length = page_up(length)
        self.mmap_next -= length
        self.uc.mem_map(self.mmap_next, length, UC_PROT_ALL)
        return self.mmap_next

    def _on_syscall(self, uc, _user):
        nr = uc.reg_read(UC_X86_REG_RAX)
        a = [uc.reg_read(r) for r in (UC_X86_REG_RDI, UC_X86_REG_RSI, UC_X86_REG_RDX,
                                      UC_X86_REG_R10, UC_X86_REG_R8, UC_X86_REG_R9)]
        try:
            result = self._syscall(nr, a)
        except OSError as e:
            result = -e.errno
        if result is not None:
            uc.reg_write(UC_X86_REG_RAX, result & 0xFFFFFFFFFFFFFFFF)

    def _syscall(self, nr, a):
        uc = self.uc
        if nr == 0:  # read
            if a[0] not in self.fds:
                return -EBADF
            data = os.read(self.fds[a[0]], a[2])
            uc.mem_write(a[1], data)
            return len(data)
        if nr == 1:  # write
            if a[0] not in self.fds:
                return -EBADF
            return os.write(self.fds[a[0]], bytes(uc.mem_read(a[1], a[2])))
        if nr == 3:  # close
            host = self.fds.pop(a[0], None)
            if host is None:
                return -EBADF
            if host > 2:
                os.close(host)
            return 0
        if nr == 5:  # fstat
            if a[0] not in self.fds:
                return -EBADF
            uc.mem_write(a[1], self._stat_bytes(os.fstat(self.fds[a[0]])))
            return 0
        if nr == 9:  # mmap: anonymous only
            if a[4] & 0xFFFFFFFF != 0xFFFFFFFF and not a[3] & 0x20:
                return -ENOSYS
            return self._map_anonymous(a[1])
        if nr in (10, 11):  # mprotect, munmap: protections and unmaps are not modelled
            return 0
        if nr == 12:  # brk
            if a[0] > self.brk:
                end = page_up(a[0])
                if end > self.brk_mapped:
                    uc.mem_map(self.brk_mapped, end - self.brk_mapped, UC_PROT_READ | UC_PROT_WRITE)
                    self.brk_mapped = end
                self.brk = a[0]
            elif a[0] >= self.brk_start:
                self.brk = a[0]
            return self.brk
        if nr == 16:  # ioctl
            return -ENOTTY
        if nr in (39, 186, 218):  # getpid, gettid, set_tid_address
            return 1000
        if nr in (60, 231):  # exit, exit_group
            self.exit_status = a[0] & 0xFF
            uc.emu_stop()
            return None
        if nr == 89:  # readlink
            if self._read_string(a[0]) != b"/proc/self/exe":
                return -ENOENT
            target = os.path.realpath(self.path).encode()[:a[2]]
            uc.mem_write(a[1], target)
            return len(target)
        if nr in (102, 104, 107, 108):  # getuid, getgid, geteuid, getegid
            return 0
        if nr == 157:  # prctl
            return 0
        if nr == 158:  # arch_prctl
            if a[0] == ARCH_SET_FS:
                uc.reg_write(UC_X86_REG_FS_BASE, a[1])
                return 0
            return -EINVAL
        if nr == 257:  # openat, read-only
            if a[2] & 3:
                return -EINVAL
            name = self._read_string(a[1]).decode(errors="surrogateescape")
            host = os.open(name, os.O_RDONLY)
            fd = self.next_fd
            self.next_fd += 1
            self.fds[fd] = host
            return fd
        if nr == 262:  # newfstatat
            name = self._read_string(a[1])
            if not name and a[3] & AT_EMPTY_PATH:
                if a[0] not in self.fds:
                    return -EBADF
                st = os.fstat(self.fds[a[0]])
            else:
                st = os.stat(name)
            uc.mem_write(a[2], self._stat_bytes(st))
            return 0
        if nr == 273:  # set_robust_list
            return 0
        if nr == 302:  # prlimit64(pid, resource, new, old)
            if a[3]:
                soft = 8 << 20 if a[1] == 3 else 0xFFFFFFFFFFFFFFFF
                uc.mem_write(a[3], struct.pack("<QQ", soft, 0xFFFFFFFFFFFFFFFF))
            return 0
        if nr == 318:  # getrandom: deterministic bytes
            uc.mem_write(a[0], bytes((i * 37 + 11) & 0xFF for i in range(a[1])))
            return a[1]
        self.unknown_syscalls[nr] = self.unknown_syscalls.get(nr, 0) + 1
        return -ENOSYS  # rseq (334) and anything else


class Tracer:
    """Records every block and memory access into a buffered binary file."""

    def __init__(self, uc, path):
        self.out = open(path, "wb", buffering=1 << 20)
        self.blocks = 0
        self.reads = 0
        self.writes = 0
        write = self.out.write
        pack = RECORD.pack
        counts = self  # closures below update the counters through it

        def on_block(_uc, address, size, _user):
            counts.blocks += 1
            write(pack(KIND_BLOCK, size, address, 0))

        def on_memory(_uc, access, address, size, value, _user):
            if access == UC_MEM_WRITE:
                counts.writes += 1
                write(pack(KIND_WRITE, size, address, value))  # value arrives as a signed int64
            else:
                counts.reads += 1
                write(pack(KIND_READ, size, address, value))

        uc.hook_add(UC_HOOK_BLOCK, on_block)
        uc.hook_add(UC_HOOK_MEM_WRITE | UC_HOOK_MEM_READ_AFTER, on_memory)

    def close(self):
        self.out.close()


def main(argv):
    trace_path = None
    args = argv[1:]
    while args and args[0].startswith("--"):
        if args[0] == "--trace" and len(args) > 1:
            trace_path = args[1]
            args = args[2:]
        elif args[0] == "--no-trace":
            trace_path = None
            args = args[1:]
        else:
            raise SystemExit(USAGE)
    if not args:
        raise SystemExit(USAGE)
    guest = Guest(args[0], [a.encode() for a in args])
    tracer = Tracer(guest.uc, trace_path) if trace_path else None
    start = time.perf_counter()
    guest.uc.emu_start(guest.entry, 0)
    seconds = time.perf_counter() - start
    if tracer:
        tracer.close()
        print(f"py_unicorn_mem_tracer: {tracer.blocks} blocks, {tracer.reads} reads, "
              f"{tracer.writes} writes, {os.path.getsize(trace_path)} trace bytes, "
              f"emulation {seconds:.3f} s", file=sys.stderr)
    else:
        print(f"py_unicorn_mem_tracer: no hooks, emulation {seconds:.3f} s", file=sys.stderr)
    if guest.unknown_syscalls:
        print(f"py_unicorn_mem_tracer: ENOSYS for syscalls {guest.unknown_syscalls}", file=sys.stderr)
    if guest.exit_status is None:
        rip = guest.uc.reg_read(UC_X86_REG_RIP)
        print(f"py_unicorn_mem_tracer: the guest stopped at {rip:#x} without exiting", file=sys.stderr)
        return 3
    return guest.exit_status


if __name__ == "__main__":
    sys.exit(main(sys.argv))
