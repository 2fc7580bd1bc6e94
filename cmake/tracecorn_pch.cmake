# Precompiled headers for the product's static libraries, included by the
# top-level CMakeLists.txt after cmake/tracecorn_unity.cmake.
#
# Every translation unit of the libraries parses much the same standard
# headers and fmt (about a second each on a 2-core machine, once per unity
# batch and once per file of arch/). Here GCC parses them once, into
# tracecorn_pch's precompiled header, and every listed library loads that
# instead (target_precompile_headers REUSE_FROM). What scripts/demo.sh builds
# took 12 to 15% less time with it on a 2-core machine (user CPU 138-148 s
# before, 117-131 s after, runs interleaved).
# Only with GCC and unity builds (scripts/build.sh's): clang's build in
# scripts/test.sh compiles every file on its own and keeps checking that each
# file includes what it uses.
# Invariants: every listed target is a static library of ours (-fPIC, the
# flags the header is built with, sanitizers included) and links fmt::fmt
# (whose FMT_SHARED the header was built with); GCC refuses a precompiled
# header that does not fit a target's flags, and -Winvalid-pch makes that an
# error under -DTRACECORN_WERROR rather than a silently slower build.
# Left out: Unicorn and Capstone (formats/ and the unwinder must not see them:
# scripts/check_layering.sh), protobuf (the generated code is its own
# target), the CLI (an executable: -fPIE, which the -fPIC header does not fit).
option(TRACECORN_PCH "Precompile the standard and fmt headers for the product's libraries (GCC unity builds)" ON)

set(tracecorn_pch_targets
  tracecorn_arch tracecorn_debug tracecorn_unwind tracecorn_elf tracecorn_events tracecorn_linux
  tracecorn_engine tracecorn_ring tracecorn_core tracecorn_guest_stacks tracecorn_symbol_namer
  tracecorn_process_recording tracecorn_program_recording tracecorn_engine_recording tracecorn_capi
  tracecorn_replay tracecorn_format_text tracecorn_format_common tracecorn_format_ucir tracecorn_formats
  tracecorn_format_bintrace tracecorn_format_bap)

if(TRACECORN_PCH AND TRACECORN_UNITY_BUILD AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  file(WRITE "${PROJECT_BINARY_DIR}/tracecorn_pch.cpp" "// The host of the libraries' precompiled header.\n")
  add_library(tracecorn_pch STATIC "${PROJECT_BINARY_DIR}/tracecorn_pch.cpp")
  target_link_libraries(tracecorn_pch PRIVATE fmt::fmt)
  tracecorn_warnings(tracecorn_pch)
  target_precompile_headers(tracecorn_pch PRIVATE
    <algorithm> <array> <atomic> <cerrno> <chrono> <cstddef> <cstdint> <cstdio> <cstring>
    <deque> <functional> <map> <memory> <mutex> <optional> <set> <span> <string> <string_view>
    <thread> <unordered_map> <utility> <variant> <vector> <fmt/format.h>)
  foreach(target IN LISTS tracecorn_pch_targets)
    target_precompile_headers(${target} REUSE_FROM tracecorn_pch)
    target_link_libraries(${target} PRIVATE fmt::fmt)
    target_compile_options(${target} PRIVATE -Winvalid-pch)
  endforeach()
endif()
