// Role: small pieces the Linux layer's syscall files share: a syscall argument
// word as the C int the kernel reads, a host call's result as the guest sees
// it, and clone(2)'s flags. Header-only, pure; any thread.
#pragma once

#include <cerrno>
#include <cstdint>

namespace tracecorn::linux_layer {

// A syscall argument word as the int the kernel reads from its low 32 bits.
inline int as_int(std::uint64_t value) { return static_cast<int>(static_cast<std::int32_t>(value)); }

// A host call's result as the guest sees it: the value, or -errno when it failed.
inline std::int64_t host_result(long result) { return result < 0 ? -errno : result; }

// clone(2)'s flags (include/uapi/linux/sched.h), the same bits on every architecture.
inline constexpr std::uint64_t kCloneVm = 0x100, kCloneFs = 0x200, kCloneFiles = 0x400, kCloneSighand = 0x800,
                               kCloneVfork = 0x4000, kCloneThread = 0x10000, kCloneSettls = 0x80000,
                               kCloneParentSettid = 0x100000, kCloneChildCleartid = 0x200000,
                               kCloneChildSettid = 0x1000000;

}  // namespace tracecorn::linux_layer
