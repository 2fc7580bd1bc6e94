// Role: what execve runs: follows `#!` lines from the file an exec names to
// the ELF file that is loaded, as Linux's binfmt_script does, and checks that
// file before the calling image is given up (so that a missing file, a
// non-executable one or one that is neither ELF nor a script fails the
// execve with the errno Linux gives, and the caller goes on).
// Who calls it: the execve handler (syscalls_exec.cpp) and LinuxProcess::create
// (the program named on tracecorn's command line may be a script too); on the
// emulation thread.
// Rules (fs/binfmt_script.c, fs/exec.c): the first line holds at most 255
// bytes after "#!" (a longer interpreter name: ENOEXEC); the interpreter is
// the first word, the rest of the line (trimmed) one optional argument; the
// new argv is interpreter, [argument], the path the exec named, argv[1:]; at
// most 4 interpreters deep (ELOOP beyond); a file that is not a regular file
// gives EACCES, one without execute permission EACCES, one neither ELF nor
// "#!" ENOEXEC.
#pragma once

#include <string>
#include <vector>

#include "recorder/linux/guest_fs.h"

namespace tracecorn::linux_layer {

struct ExecTarget {
  std::string host_path;           // the ELF file to load, on the host (inside the rootfs when there is one)
  std::vector<std::string> argv;   // what the loaded program gets
  std::string execfn;              // the path the exec named (AT_EXECFN)
};

// Resolves `path` (as the guest named it: relative to its working directory,
// inside the rootfs) with `argv` to the ELF file to load. Errors: a positive errno.
SysResult<ExecTarget> resolve_exec_target(GuestFs& fs, const std::string& path, std::vector<std::string> argv);

}  // namespace tracecorn::linux_layer
