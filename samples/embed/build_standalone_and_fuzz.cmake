# Role: driver of the fuzz_harness_clang_consumer test (cmake -P, run by ctest
# in builds whose compiler is not clang; see CMakeLists.txt). CI builds the tree
# with g++, which has no libFuzzer; this test still fuzzes:
# 1. `cmake --install` the build tree into WORK_DIR/prefix;
# 2. configures samples/embed/standalone against that prefix with clang
#    (C_COMPILER, CXX_COMPILER) and builds fuzz_harness with -fsanitize=fuzzer
#    (clang's objects link with the g++-built static libraries: both use libstdc++);
# 3. runs the standalone build's fuzz_harness_finds_crash test (check_fuzz_crash.cmake).
# Takes ~15-30 s on 2 cores, most of it compiling the harness.
# Inputs (-D): BUILD_DIR, SOURCE_DIR (samples/embed/standalone), WORK_DIR,
# GENERATOR, MAKE_PROGRAM, C_COMPILER, CXX_COMPILER.
cmake_minimum_required(VERSION 3.25)

function(run_step name)
  string(TIMESTAMP started "%s")
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE result OUTPUT_VARIABLE output ERROR_VARIABLE output)
  string(TIMESTAMP ended "%s")
  math(EXPR seconds "${ended} - ${started}")
  if(NOT result EQUAL 0)
    message(FATAL_ERROR "fuzz_harness_clang_consumer: ${name} failed (${result}):\n${ARGN}\n${output}")
  endif()
  message(STATUS "fuzz_harness_clang_consumer: ${name}: ok (${seconds} s)")
  set(step_output "${output}" PARENT_SCOPE)
endfunction()

set(prefix "${WORK_DIR}/prefix")
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")
run_step("cmake --install" "${CMAKE_COMMAND}" --install "${BUILD_DIR}" --prefix "${prefix}")

set(generator_arguments -G "${GENERATOR}")
if(MAKE_PROGRAM)
  list(APPEND generator_arguments "-DCMAKE_MAKE_PROGRAM=${MAKE_PROGRAM}")
endif()
run_step("configure samples/embed with clang" "${CMAKE_COMMAND}" -S "${SOURCE_DIR}" -B "${WORK_DIR}/embed"
  ${generator_arguments} "-DCMAKE_C_COMPILER=${C_COMPILER}" "-DCMAKE_CXX_COMPILER=${CXX_COMPILER}"
  "-DCMAKE_PREFIX_PATH=${prefix}" -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF -DTRACECORN_WERROR=ON)
run_step("build fuzz_harness" "${CMAKE_COMMAND}" --build "${WORK_DIR}/embed" --target fuzz_harness)
run_step("fuzz" "${CMAKE_CTEST_COMMAND}" --test-dir "${WORK_DIR}/embed" -R "^fuzz_harness_finds_crash$"
  --output-on-failure -V)
string(REGEX MATCHALL "fuzz test: [^\n]*" lines "${step_output}")
foreach(line IN LISTS lines)
  message(STATUS "${line}")
endforeach()
