// Role: the Linux ABI pieces shared by the architectures that use the kernel's
// asm-generic definitions (arm64, riscv64): the syscall numbering of
// include/uapi/asm-generic/unistd.h and the `struct stat` of
// include/uapi/asm-generic/stat.h. Called by those architectures' ArchInfo
// (as function pointers), from any thread: pure functions over constant tables.
#pragma once

#include <cstdint>
#include <span>

#include "arch/arch.h"

namespace tracecorn::arch {

// The neutral id of asm-generic syscall `number`; SyscallId::unknown if none.
SyscallId generic_syscall_id(std::uint64_t number);

// Encodes `status` as asm-generic's 64-bit little-endian `struct stat` (128
// bytes) into `out`; returns 128.
std::size_t generic_encode_stat(const FileStatus& status, std::span<std::uint8_t, kMaxStatBytes> out);

}  // namespace tracecorn::arch
