# libFuzzer targets, one per parser of untrusted bytes (clang 14 only).
#
# tracecorn_add_fuzzer(NAME SOURCES src... [LIBRARIES lib...] SEEDS dir RUNS n MAX_LEN bytes)
# builds NAME from SOURCES (compiled into it, so that libFuzzer's coverage and
# the sanitizers instrument them) with -fsanitize=fuzzer,address,undefined, and
# adds the ctest NAME_smoke: RUNS inputs (seed 1) of at most MAX_LEN bytes, from
# the SEEDS directory; what libFuzzer finds goes to a build-tree corpus, so the
# seeds in the source tree stay as they are. A crash fails the ctest.
# With another compiler, or a clang without libFuzzer, it does nothing.
if(CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  include(CheckCXXSourceCompiles)
  set(CMAKE_REQUIRED_FLAGS -fsanitize=fuzzer)
  check_cxx_source_compiles("
    #include <cstddef>
    #include <cstdint>
    extern \"C\" int LLVMFuzzerTestOneInput(const std::uint8_t*, std::size_t) { return 0; }"
    TRACECORN_HAVE_LIBFUZZER)
  unset(CMAKE_REQUIRED_FLAGS)
endif()

function(tracecorn_add_fuzzer name)
  if(NOT TRACECORN_HAVE_LIBFUZZER)
    return()
  endif()
  cmake_parse_arguments(FUZZ "" "SEEDS;RUNS;MAX_LEN" "SOURCES;LIBRARIES" ${ARGN})
  add_executable(${name} ${FUZZ_SOURCES})
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR})
  target_compile_options(${name} PRIVATE -fsanitize=fuzzer,address,undefined)
  target_link_options(${name} PRIVATE -fsanitize=fuzzer,address,undefined)
  target_link_libraries(${name} PRIVATE ${FUZZ_LIBRARIES})
  tracecorn_warnings(${name})
  file(MAKE_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/${name}_corpus)
  add_test(NAME ${name}_smoke
    COMMAND ${name} -runs=${FUZZ_RUNS} -max_len=${FUZZ_MAX_LEN} -seed=1 ${CMAKE_CURRENT_BINARY_DIR}/${name}_corpus
            ${FUZZ_SEEDS})
  set_tests_properties(${name}_smoke PROPERTIES LABELS fuzz)
endfunction()
