# Unity builds of the product's multi-file libraries and the tracecorn command,
# included by the top-level CMakeLists.txt once every target exists.
#
# Each listed target's sources are compiled a batch at a time as one
# translation unit, so the headers they all include (the standard library,
# fmt, protobuf, Unicorn, Capstone) are parsed and their templates
# instantiated once per batch instead of once per file. It roughly halves the
# compile time of what scripts/demo.sh builds on a 2-core machine.
# Invariant it asks of the code: no two files of one target define the same
# name in an anonymous namespace (a shared helper goes in a header, e.g.
# recorder/support/hex.h, recorder/linux/syscall_helpers.h). CI builds this
# way, so a clash fails there.
# Left out: arch/ (one file per architecture defines kRegisters, kSyscallTable
# and the like by design), the tests and samples (one program per file, or
# doctest cases with file-local helpers), the fuzzers (their own source lists).
# -DTRACECORN_UNITY_BUILD=OFF builds every file on its own (what checks that
# each file includes what it uses; the clang builds of scripts/asan.sh do).
option(TRACECORN_UNITY_BUILD "Compile the product's libraries and CLI in unity batches" ON)

set(tracecorn_unity_targets
  tracecorn tracecorn_linux tracecorn_core tracecorn_replay tracecorn_unwind
  tracecorn_formats tracecorn_format_common tracecorn_format_text tracecorn_format_ucir
  tracecorn_format_bap tracecorn_format_bintrace tracecorn_debug)

if(TRACECORN_UNITY_BUILD)
  foreach(target IN LISTS tracecorn_unity_targets)
    set_target_properties(${target} PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE 8)
    # GCC warns when a class "in a header" has a member of a file-local type;
    # in a unity batch every class is in an included file, so it always would.
    if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
      target_compile_options(${target} PRIVATE -Wno-subobject-linkage)
    endif()
  endforeach()
endif()
