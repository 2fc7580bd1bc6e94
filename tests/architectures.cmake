# Role: the CMake twin of tests/support/architectures.h, the table of the guest
# architectures the tests cover: for the ctest entries registered per
# architecture (tests/behaviour/CMakeLists.txt's Samples and Strace entries,
# recorder/replay/replay_tests.cmake's replay_long_runs.<arch>.<variant>).
# Included by tests/CMakeLists.txt, and by tests/behaviour/CMakeLists.txt when
# it is configured on its own. The unit test "Architectures: ..."
# (tests/support/architectures_test.cpp) checks that both tables agree.
#
#   TRACECORN_TEST_HOST_ARCHITECTURE            x86_64: the host's samples, run natively
#   TRACECORN_TEST_CROSS_ARCHITECTURES          the others, in samples/cross.cmake's order
#   TRACECORN_TEST_SAMPLE_VARIANTS_<arch>       the link variants its samples are built in
#   TRACECORN_TEST_ARCHITECTURE_TABLE           "<arch>:<variant>,<variant>|..." for that check
#   tracecorn_test_strace_compares(variant out) whether the strace comparison runs `variant`
include_guard(GLOBAL)

set(TRACECORN_TEST_HOST_ARCHITECTURE x86_64)
set(TRACECORN_TEST_CROSS_ARCHITECTURES aarch64 riscv64 arm i386 mips mipsel)
set(TRACECORN_TEST_SAMPLE_VARIANTS_x86_64 static static-pie dynamic)
set(TRACECORN_TEST_SAMPLE_VARIANTS_aarch64 static static-pie)
set(TRACECORN_TEST_SAMPLE_VARIANTS_riscv64 static)
set(TRACECORN_TEST_SAMPLE_VARIANTS_arm static static-marm)
set(TRACECORN_TEST_SAMPLE_VARIANTS_i386 static static-pie)
set(TRACECORN_TEST_SAMPLE_VARIANTS_mips static)
set(TRACECORN_TEST_SAMPLE_VARIANTS_mipsel static)

set(architecture_rows "")
foreach(arch IN LISTS TRACECORN_TEST_HOST_ARCHITECTURE TRACECORN_TEST_CROSS_ARCHITECTURES)
  list(JOIN TRACECORN_TEST_SAMPLE_VARIANTS_${arch} "," variants)
  list(APPEND architecture_rows "${arch}:${variants}")
endforeach()
list(JOIN architecture_rows "|" TRACECORN_TEST_ARCHITECTURE_TABLE)

# The strace comparison (tests/behaviour/strace_test.cpp) runs every variant
# but static-pie: static and dynamic, the loader spectrum's two ends, and arm's
# static-marm (ARM code as well as Thumb-2).
function(tracecorn_test_strace_compares variant result)
  if(variant STREQUAL "static-pie")
    set(${result} FALSE PARENT_SCOPE)
  else()
    set(${result} TRUE PARENT_SCOPE)
  endif()
endfunction()

# The host's samples are built in TRACECORN_GUEST_VARIANTS (samples/CMakeLists.txt)
# and cross-built for TRACECORN_CROSS_ARCHS (samples/cross.cmake): the tests
# must cover the same architectures in the same variants.
if(DEFINED TRACECORN_GUEST_VARIANTS AND NOT TRACECORN_GUEST_VARIANTS STREQUAL TRACECORN_TEST_SAMPLE_VARIANTS_${TRACECORN_TEST_HOST_ARCHITECTURE})
  message(FATAL_ERROR "tests/architectures.cmake gives the host the variants ${TRACECORN_TEST_SAMPLE_VARIANTS_${TRACECORN_TEST_HOST_ARCHITECTURE}}, "
                      "samples/CMakeLists.txt builds ${TRACECORN_GUEST_VARIANTS}: update the tests' tables")
endif()
if(DEFINED TRACECORN_CROSS_ARCHS)
  if(NOT TRACECORN_CROSS_ARCHS STREQUAL TRACECORN_TEST_CROSS_ARCHITECTURES)
    message(FATAL_ERROR "tests/architectures.cmake covers ${TRACECORN_TEST_CROSS_ARCHITECTURES}, "
                        "samples/cross.cmake builds ${TRACECORN_CROSS_ARCHS}: update the tests' tables "
                        "(tests/architectures.cmake and tests/support/architectures.h)")
  endif()
  foreach(arch IN LISTS TRACECORN_CROSS_ARCHS)
    if(NOT TRACECORN_CROSS_VARIANTS_${arch} STREQUAL TRACECORN_TEST_SAMPLE_VARIANTS_${arch})
      message(FATAL_ERROR "tests/architectures.cmake gives ${arch} the variants ${TRACECORN_TEST_SAMPLE_VARIANTS_${arch}}, "
                          "samples/cross.cmake builds ${TRACECORN_CROSS_VARIANTS_${arch}}: update the tests' tables")
    endif()
  endforeach()
endif()
