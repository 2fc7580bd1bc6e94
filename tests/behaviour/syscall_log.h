// Role: reads the two syscall traces the strace comparison lines up: qemu's
// `-strace` log (qemu 7.2, written with -D FILE) and tracecorn's
// `--syscall-log FILE`, reducing each to the ordered list of syscall names.
//
// Pure functions; safe from any thread. The logs are untrusted text: lines
// that do not look like a syscall are skipped, never an error.
//
// Formats (only the name is relied on):
//   qemu:      "<pid> <name>(<args>) = <ret>"     e.g. "4021 brk(NULL) = 0x4ac000"
//              "<pid> <name>(<args>)"             exit_group: no result
//              "<pid> Unknown syscall <nr>"       no name in qemu's table
//              "--- SIGSEGV {...} ---"            signals: skipped
//   tracecorn: "<name>(<args>) = <ret>"           e.g. openat(AT_FDCWD, "/etc/passwd", 0x0) = 3
//              "[<tid>] <name>(<args>) = <ret>"  once the process has several threads
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace tracecorn::behaviour {

// Syscall names in order from a qemu -strace log. "Unknown syscall N" lines
// become the kernel's name for N when qemu_unnamed_syscall() knows it, else
// "syscall_N". mips: qemu's "getrlimit" (o32 4076) becomes "ugetrlimit", tracecorn's name for it.
// `arch` is the guest architecture (tracecorn's name) whose numbers the log uses.
std::vector<std::string> parse_qemu_strace(std::string_view log, std::string_view arch = "x86_64");

// Syscall names in order from a tracecorn --syscall-log file.
std::vector<std::string> parse_tracecorn_syscall_log(std::string_view log);

// The kernel's name for syscall `nr` of architecture `arch` among those qemu
// 7.2's strace table lacks (it prints "Unknown syscall N" for them); "" if not
// one of those.
std::string_view qemu_unnamed_syscall(long nr, std::string_view arch = "x86_64");

}  // namespace tracecorn::behaviour
