// Role: the Linux ABI pieces that the asm-generic architectures share (arm64,
// riscv64; see linux_generic.h).
#include "arch/linux_generic.h"

#include <algorithm>
#include <array>

#include "arch/syscall_table.h"

namespace tracecorn::arch {
namespace {

// From the kernel's include/uapi/asm-generic/unistd.h (arm64 uses the generic
// table; __NR3264_* resolved). tests/arch/aarch64_test.cpp checks every entry
// against the aarch64 and riscv64 cross compilers' <asm/unistd.h>.
constexpr SyscallNumber kSyscallNumbers[] = {
    {8, SyscallId::getxattr},         {9, SyscallId::lgetxattr},        {10, SyscallId::fgetxattr},
    {11, SyscallId::listxattr},       {12, SyscallId::llistxattr},      {17, SyscallId::getcwd},
    {74, SyscallId::signalfd4}, {138, SyscallId::rt_sigqueueinfo}, {240, SyscallId::rt_tgsigqueueinfo}, {19, SyscallId::eventfd2},        {20, SyscallId::epoll_create1},   {23, SyscallId::dup},
    {24, SyscallId::dup3},            {25, SyscallId::fcntl},           {29, SyscallId::ioctl},
    {32, SyscallId::flock},           {34, SyscallId::mkdirat},         {35, SyscallId::unlinkat},
    {36, SyscallId::symlinkat},       {37, SyscallId::linkat},          {38, SyscallId::renameat},
    {43, SyscallId::statfs},          {44, SyscallId::fstatfs},         {45, SyscallId::truncate},
    {46, SyscallId::ftruncate},       {47, SyscallId::fallocate},       {48, SyscallId::faccessat},
    {49, SyscallId::chdir},           {50, SyscallId::fchdir},          {52, SyscallId::fchmod},
    {53, SyscallId::fchmodat},        {54, SyscallId::fchownat},        {55, SyscallId::fchown},
    {56, SyscallId::openat},          {57, SyscallId::close},           {59, SyscallId::pipe2},
    {61, SyscallId::getdents64},      {62, SyscallId::lseek},           {63, SyscallId::read},
    {64, SyscallId::write},           {65, SyscallId::readv},           {66, SyscallId::writev},
    {67, SyscallId::pread64},         {68, SyscallId::pwrite64},        {69, SyscallId::preadv},
    {70, SyscallId::pwritev},         {71, SyscallId::sendfile},        {72, SyscallId::pselect6},
    {73, SyscallId::ppoll},           {78, SyscallId::readlinkat},      {79, SyscallId::newfstatat},
    {80, SyscallId::fstat},           {81, SyscallId::sync},            {82, SyscallId::fsync},
    {83, SyscallId::fdatasync},       {88, SyscallId::utimensat},       {93, SyscallId::exit},
    {94, SyscallId::exit_group},      {96, SyscallId::set_tid_address}, {98, SyscallId::futex},
    {99, SyscallId::set_robust_list}, {100, SyscallId::get_robust_list}, {101, SyscallId::nanosleep},
    {102, SyscallId::getitimer},      {103, SyscallId::setitimer},      {112, SyscallId::clock_settime},
    {113, SyscallId::clock_gettime},  {114, SyscallId::clock_getres},   {115, SyscallId::clock_nanosleep},
    {120, SyscallId::sched_getscheduler}, {121, SyscallId::sched_getparam}, {122, SyscallId::sched_setaffinity},
    {123, SyscallId::sched_getaffinity}, {124, SyscallId::sched_yield},  {128, SyscallId::restart_syscall},
    {129, SyscallId::kill},           {130, SyscallId::tkill},          {131, SyscallId::tgkill},
    {132, SyscallId::sigaltstack},    {134, SyscallId::rt_sigaction},   {135, SyscallId::rt_sigprocmask},
    {139, SyscallId::rt_sigreturn}, {133, SyscallId::rt_sigsuspend}, {136, SyscallId::rt_sigpending}, {137, SyscallId::rt_sigtimedwait},   {144, SyscallId::setgid},         {146, SyscallId::setuid},
    {148, SyscallId::getresuid},      {150, SyscallId::getresgid},      {153, SyscallId::times},
    {154, SyscallId::setpgid},        {155, SyscallId::getpgid},        {156, SyscallId::getsid},
    {157, SyscallId::setsid},         {158, SyscallId::getgroups},      {159, SyscallId::setgroups},
    {160, SyscallId::uname},          {163, SyscallId::getrlimit},      {164, SyscallId::setrlimit},
    {165, SyscallId::getrusage},      {166, SyscallId::umask},          {167, SyscallId::prctl},
    {169, SyscallId::gettimeofday},   {172, SyscallId::getpid},         {173, SyscallId::getppid},
    {174, SyscallId::getuid},         {175, SyscallId::geteuid},        {176, SyscallId::getgid},
    {177, SyscallId::getegid},        {178, SyscallId::gettid},         {179, SyscallId::sysinfo},
    {198, SyscallId::socket},         {199, SyscallId::socketpair},     {200, SyscallId::bind},
    {201, SyscallId::listen},         {202, SyscallId::accept},         {203, SyscallId::connect},
    {204, SyscallId::getsockname},    {205, SyscallId::getpeername},    {206, SyscallId::sendto},
    {207, SyscallId::recvfrom},       {208, SyscallId::setsockopt},     {209, SyscallId::getsockopt},
    {210, SyscallId::shutdown},       {211, SyscallId::sendmsg},        {212, SyscallId::recvmsg},
    {214, SyscallId::brk},            {215, SyscallId::munmap},         {216, SyscallId::mremap},
    {220, SyscallId::clone},          {221, SyscallId::execve},         {222, SyscallId::mmap},
    {223, SyscallId::fadvise64},      {226, SyscallId::mprotect},       {227, SyscallId::msync},
    {228, SyscallId::mlock},          {229, SyscallId::munlock},        {232, SyscallId::mincore},
    {233, SyscallId::madvise},        {260, SyscallId::wait4},          {261, SyscallId::prlimit64},
    {276, SyscallId::renameat2},      {278, SyscallId::getrandom},      {279, SyscallId::memfd_create},
    {283, SyscallId::membarrier},     {285, SyscallId::copy_file_range}, {291, SyscallId::statx},
    {293, SyscallId::rseq},           {436, SyscallId::close_range},    {437, SyscallId::openat2},
    {439, SyscallId::faccessat2},     {452, SyscallId::fchmodat2},
    {435, SyscallId::clone3},         {95, SyscallId::waitid},          {434, SyscallId::pidfd_open},
    {424, SyscallId::pidfd_send_signal},
    {140, SyscallId::setpriority},   {141, SyscallId::getpriority},   {147, SyscallId::setresuid},     {149, SyscallId::setresgid},
    {21, SyscallId::epoll_ctl},      {22, SyscallId::epoll_pwait},    {85, SyscallId::timerfd_create}, {86, SyscallId::timerfd_settime},
    {87, SyscallId::timerfd_gettime},         {281, SyscallId::execveat},
    {107, SyscallId::timer_create},   {108, SyscallId::timer_gettime},  {109, SyscallId::timer_getoverrun},
    {110, SyscallId::timer_settime},  {111, SyscallId::timer_delete},
};

constexpr SyscallTable kSyscallTable{kSyscallNumbers};

}  // namespace

SyscallId generic_syscall_id(std::uint64_t number) {
  return kSyscallTable(number);
}


// struct stat of asm-generic/stat.h (arm64, riscv64), 128 bytes, little endian:
//   0 dev u64 | 8 ino u64 | 16 mode u32 | 20 nlink u32 | 24 uid u32 | 28 gid u32
//  32 rdev u64 | 40 pad | 48 size i64 | 56 blksize i32 | 60 pad | 64 blocks i64
//  72 atime | 80 atime_nsec | 88 mtime | 96 mtime_nsec | 104 ctime | 112 ctime_nsec | 120 unused[2]
std::size_t generic_encode_stat(const FileStatus& s, std::span<std::uint8_t, kMaxStatBytes> out) {
  constexpr std::size_t kSize = 128;
  std::fill_n(out.begin(), kSize, std::uint8_t{0});
  const StructField fields[] = {
      {0, 8, s.dev},        {8, 8, s.ino},         {16, 4, s.mode},         {20, 4, s.nlink},
      {24, 4, s.uid},       {28, 4, s.gid},        {32, 8, s.rdev},         {48, 8, s.size},
      {56, 4, s.blksize},   {64, 8, s.blocks},     {72, 8, s.atime_sec},    {80, 8, s.atime_nsec},
      {88, 8, s.mtime_sec}, {96, 8, s.mtime_nsec}, {104, 8, s.ctime_sec},   {112, 8, s.ctime_nsec},
  };
  for (const auto& field : fields) store_field(out, field, true);
  return kSize;
}

}  // namespace tracecorn::arch
