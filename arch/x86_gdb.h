// Role: how gdb sees the two x86 guests over its remote protocol: the target
// descriptions of x86-64 ("i386:x86-64") and i386 ("i386"), with gdb's
// register order of its 64bit-core/32bit-core, -sse, -linux and -segments
// features (gdb manual, "i386 Features"). gdb requires every register of
// the core and SSE features by name; those a trace never holds (the x87
// instruction and operand pointers, orig_rax) have no table register and
// read as unavailable.
// Who calls it: arch/x86_64.cpp and arch/i386.cpp (ArchInfo::gdb). Constant
// data, safe from any thread.
#pragma once

#include "arch/arch_info.h"

namespace tracecorn::arch {

const GdbTarget& x86_64_gdb_target();
const GdbTarget& i386_gdb_target();

}  // namespace tracecorn::arch
