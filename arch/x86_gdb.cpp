// Role: the x86 target descriptions (arch/x86_gdb.h): the registers in gdb's
// order, and the types its core and SSE features define (eflags and mxcsr
// bits, the 128-bit vector union), written from the gdb manual's "i386
// Features" and the register lists gdb's i386 and amd64 code look up.
// Threads: constant tables.
#include "arch/x86_gdb.h"

namespace tracecorn::arch {
namespace {

constexpr std::string_view kEflagsType =
    "<flags id=\"i386_eflags\" size=\"4\">"
    "<field name=\"CF\" start=\"0\" end=\"0\"/><field name=\"\" start=\"1\" end=\"1\"/>"
    "<field name=\"PF\" start=\"2\" end=\"2\"/><field name=\"AF\" start=\"4\" end=\"4\"/>"
    "<field name=\"ZF\" start=\"6\" end=\"6\"/><field name=\"SF\" start=\"7\" end=\"7\"/>"
    "<field name=\"TF\" start=\"8\" end=\"8\"/><field name=\"IF\" start=\"9\" end=\"9\"/>"
    "<field name=\"DF\" start=\"10\" end=\"10\"/><field name=\"OF\" start=\"11\" end=\"11\"/>"
    "<field name=\"NT\" start=\"14\" end=\"14\"/><field name=\"RF\" start=\"16\" end=\"16\"/>"
    "<field name=\"VM\" start=\"17\" end=\"17\"/><field name=\"AC\" start=\"18\" end=\"18\"/>"
    "<field name=\"VIF\" start=\"19\" end=\"19\"/><field name=\"VIP\" start=\"20\" end=\"20\"/>"
    "<field name=\"ID\" start=\"21\" end=\"21\"/></flags>";

constexpr std::string_view kSseTypes =
    "<vector id=\"v4f\" type=\"ieee_single\" count=\"4\"/>"
    "<vector id=\"v2d\" type=\"ieee_double\" count=\"2\"/>"
    "<vector id=\"v16i8\" type=\"int8\" count=\"16\"/>"
    "<vector id=\"v8i16\" type=\"int16\" count=\"8\"/>"
    "<vector id=\"v4i32\" type=\"int32\" count=\"4\"/>"
    "<vector id=\"v2i64\" type=\"int64\" count=\"2\"/>"
    "<union id=\"vec128\"><field name=\"v4_float\" type=\"v4f\"/><field name=\"v2_double\" type=\"v2d\"/>"
    "<field name=\"v16_int8\" type=\"v16i8\"/><field name=\"v8_int16\" type=\"v8i16\"/>"
    "<field name=\"v4_int32\" type=\"v4i32\"/><field name=\"v2_int64\" type=\"v2i64\"/>"
    "<field name=\"uint128\" type=\"uint128\"/></union>"
    "<flags id=\"i386_mxcsr\" size=\"4\">"
    "<field name=\"IE\" start=\"0\" end=\"0\"/><field name=\"DE\" start=\"1\" end=\"1\"/>"
    "<field name=\"ZE\" start=\"2\" end=\"2\"/><field name=\"OE\" start=\"3\" end=\"3\"/>"
    "<field name=\"UE\" start=\"4\" end=\"4\"/><field name=\"PE\" start=\"5\" end=\"5\"/>"
    "<field name=\"DAZ\" start=\"6\" end=\"6\"/><field name=\"IM\" start=\"7\" end=\"7\"/>"
    "<field name=\"DM\" start=\"8\" end=\"8\"/><field name=\"ZM\" start=\"9\" end=\"9\"/>"
    "<field name=\"OM\" start=\"10\" end=\"10\"/><field name=\"UM\" start=\"11\" end=\"11\"/>"
    "<field name=\"PM\" start=\"12\" end=\"12\"/><field name=\"FZ\" start=\"15\" end=\"15\"/></flags>";

// The segment registers, the x87 stack and the x87 control registers, in gdb's
// order after eflags (the same in both modes).
#define TRACECORN_X86_SEGMENTS_AND_X87                                                              \
  {"cs", 32, "int32", "cs"}, {"ss", 32, "int32", "ss"}, {"ds", 32, "int32", "ds"},                  \
      {"es", 32, "int32", "es"}, {"fs", 32, "int32", "fs"}, {"gs", 32, "int32", "gs"},              \
      {"st0", 80, "i387_ext", "st0"}, {"st1", 80, "i387_ext", "st1"}, {"st2", 80, "i387_ext", "st2"}, \
      {"st3", 80, "i387_ext", "st3"}, {"st4", 80, "i387_ext", "st4"}, {"st5", 80, "i387_ext", "st5"}, \
      {"st6", 80, "i387_ext", "st6"}, {"st7", 80, "i387_ext", "st7"}, {"fctrl", 32, "int", "fpcw"},   \
      {"fstat", 32, "int", "fpsw"}, {"ftag", 32, "int", ""}, {"fiseg", 32, "int", ""},             \
      {"fioff", 32, "int", ""}, {"foseg", 32, "int", ""}, {"fooff", 32, "int", ""}, {"fop", 32, "int", ""}

constexpr GdbRegister kCore64[] = {
    {"rax", 64, "int64", "rax"}, {"rbx", 64, "int64", "rbx"}, {"rcx", 64, "int64", "rcx"},
    {"rdx", 64, "int64", "rdx"}, {"rsi", 64, "int64", "rsi"}, {"rdi", 64, "int64", "rdi"},
    {"rbp", 64, "data_ptr", "rbp"}, {"rsp", 64, "data_ptr", "rsp"}, {"r8", 64, "int64", "r8"},
    {"r9", 64, "int64", "r9"}, {"r10", 64, "int64", "r10"}, {"r11", 64, "int64", "r11"},
    {"r12", 64, "int64", "r12"}, {"r13", 64, "int64", "r13"}, {"r14", 64, "int64", "r14"},
    {"r15", 64, "int64", "r15"}, {"rip", 64, "code_ptr", "rip"}, {"eflags", 32, "i386_eflags", "rflags"},
    TRACECORN_X86_SEGMENTS_AND_X87};
constexpr GdbRegister kSse64[] = {
    {"xmm0", 128, "vec128", "xmm0"},   {"xmm1", 128, "vec128", "xmm1"},   {"xmm2", 128, "vec128", "xmm2"},
    {"xmm3", 128, "vec128", "xmm3"},   {"xmm4", 128, "vec128", "xmm4"},   {"xmm5", 128, "vec128", "xmm5"},
    {"xmm6", 128, "vec128", "xmm6"},   {"xmm7", 128, "vec128", "xmm7"},   {"xmm8", 128, "vec128", "xmm8"},
    {"xmm9", 128, "vec128", "xmm9"},   {"xmm10", 128, "vec128", "xmm10"}, {"xmm11", 128, "vec128", "xmm11"},
    {"xmm12", 128, "vec128", "xmm12"}, {"xmm13", 128, "vec128", "xmm13"}, {"xmm14", 128, "vec128", "xmm14"},
    {"xmm15", 128, "vec128", "xmm15"}, {"mxcsr", 32, "i386_mxcsr", "mxcsr"}};
constexpr GdbRegister kLinux64[] = {{"orig_rax", 64, "int", ""}};
constexpr GdbRegister kSegments64[] = {{"fs_base", 64, "int", "fs_base"}, {"gs_base", 64, "int", "gs_base"}};

constexpr GdbRegister kCore32[] = {
    {"eax", 32, "int32", "eax"}, {"ecx", 32, "int32", "ecx"}, {"edx", 32, "int32", "edx"},
    {"ebx", 32, "int32", "ebx"}, {"esp", 32, "data_ptr", "esp"}, {"ebp", 32, "data_ptr", "ebp"},
    {"esi", 32, "int32", "esi"}, {"edi", 32, "int32", "edi"}, {"eip", 32, "code_ptr", "eip"},
    {"eflags", 32, "i386_eflags", "eflags"}, TRACECORN_X86_SEGMENTS_AND_X87};
constexpr GdbRegister kSse32[] = {
    {"xmm0", 128, "vec128", "xmm0"}, {"xmm1", 128, "vec128", "xmm1"}, {"xmm2", 128, "vec128", "xmm2"},
    {"xmm3", 128, "vec128", "xmm3"}, {"xmm4", 128, "vec128", "xmm4"}, {"xmm5", 128, "vec128", "xmm5"},
    {"xmm6", 128, "vec128", "xmm6"}, {"xmm7", 128, "vec128", "xmm7"}, {"mxcsr", 32, "i386_mxcsr", "mxcsr"}};
constexpr GdbRegister kLinux32[] = {{"orig_eax", 32, "int", ""}};

#undef TRACECORN_X86_SEGMENTS_AND_X87

constexpr GdbFeature kFeatures64[] = {{"org.gnu.gdb.i386.core", kEflagsType, kCore64},
                                      {"org.gnu.gdb.i386.sse", kSseTypes, kSse64},
                                      {"org.gnu.gdb.i386.linux", "", kLinux64},
                                      {"org.gnu.gdb.i386.segments", "", kSegments64}};
constexpr GdbFeature kFeatures32[] = {{"org.gnu.gdb.i386.core", kEflagsType, kCore32},
                                      {"org.gnu.gdb.i386.sse", kSseTypes, kSse32},
                                      {"org.gnu.gdb.i386.linux", "", kLinux32}};

}  // namespace

const GdbTarget& x86_64_gdb_target() {
  static constexpr GdbTarget kTarget{"i386:x86-64", kFeatures64, false};
  return kTarget;
}

const GdbTarget& i386_gdb_target() {
  static constexpr GdbTarget kTarget{"i386", kFeatures32, false};
  return kTarget;
}

}  // namespace tracecorn::arch
