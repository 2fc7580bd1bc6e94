# Role: the install test's driver (cmake -P), run by ctest (tests/install/CMakeLists.txt).
# 1. `cmake --install` the build tree into WORK_DIR/prefix;
# 2. configures and builds tests/install/consumer (C++, find_package(tracecorn))
#    against that prefix alone, and runs consumer_cpp;
# 3. builds consumer.c with the C compiler and `pkg-config --cflags --libs
#    tracecorn` (PKG_CONFIG_PATH = the prefix), and runs consumer_c.
# Any failing step fails the test with its output. Takes ~10-20 s on 2 cores.
# Inputs (-D): BUILD_DIR, SOURCE_DIR (tests/install), WORK_DIR, GENERATOR,
# MAKE_PROGRAM, C_COMPILER, CXX_COMPILER.
cmake_minimum_required(VERSION 3.25)

foreach(variable BUILD_DIR SOURCE_DIR WORK_DIR GENERATOR C_COMPILER CXX_COMPILER)
  if(NOT DEFINED ${variable})
    message(FATAL_ERROR "run_install_test.cmake: -D${variable}=... is required")
  endif()
endforeach()

# Runs a command; fails the test with its output unless it exits 0.
function(run_step name)
  string(TIMESTAMP started "%s")
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE result OUTPUT_VARIABLE output ERROR_VARIABLE output)
  string(TIMESTAMP ended "%s")
  math(EXPR seconds "${ended} - ${started}")
  if(NOT result EQUAL 0)
    message(FATAL_ERROR "install test: ${name} failed (${result}):\n${ARGN}\n${output}")
  endif()
  message(STATUS "install test: ${name}: ok (${seconds} s)")
  set(step_output "${output}" PARENT_SCOPE)
endfunction()

set(prefix "${WORK_DIR}/prefix")
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")

run_step("cmake --install" "${CMAKE_COMMAND}" --install "${BUILD_DIR}" --prefix "${prefix}")
foreach(expected include/tracecorn/recorder/core/recorder.h include/tracecorn/recorder/capi/tracecorn.h
        lib/cmake/tracecorn/tracecorn-config.cmake lib/pkgconfig/tracecorn.pc)
  if(NOT EXISTS "${prefix}/${expected}")
    message(FATAL_ERROR "install test: ${expected} was not installed")
  endif()
endforeach()

# C++: the CMake package.
set(generator_arguments -G "${GENERATOR}")
if(MAKE_PROGRAM)
  list(APPEND generator_arguments "-DCMAKE_MAKE_PROGRAM=${MAKE_PROGRAM}")
endif()
run_step("configure the C++ consumer" "${CMAKE_COMMAND}" -S "${SOURCE_DIR}/consumer" -B "${WORK_DIR}/consumer"
  ${generator_arguments} "-DCMAKE_CXX_COMPILER=${CXX_COMPILER}" -DCMAKE_BUILD_TYPE=Release
  "-DCMAKE_PREFIX_PATH=${prefix}" -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF)
run_step("build the C++ consumer" "${CMAKE_COMMAND}" --build "${WORK_DIR}/consumer")
execute_process(COMMAND "${WORK_DIR}/consumer/consumer_cpp" WORKING_DIRECTORY "${WORK_DIR}"
  RESULT_VARIABLE result OUTPUT_VARIABLE output ERROR_VARIABLE output)
if(NOT result EQUAL 0 OR NOT output MATCHES "consumer_cpp: ok")
  message(FATAL_ERROR "install test: consumer_cpp failed (${result}):\n${output}")
endif()
message(STATUS "install test: ${output}")

# C: pkg-config and the C compiler, as a Makefile would do it.
find_program(PKG_CONFIG_EXECUTABLE NAMES pkg-config pkgconf REQUIRED)
set(ENV{PKG_CONFIG_PATH} "${prefix}/lib/pkgconfig")
run_step("pkg-config" "${PKG_CONFIG_EXECUTABLE}" --cflags --libs tracecorn)
string(STRIP "${step_output}" flags)
separate_arguments(flags UNIX_COMMAND "${flags}")
run_step("build the C consumer" "${C_COMPILER}" -std=c11 -Wall -Wextra -Wpedantic -Werror
  "${SOURCE_DIR}/consumer/consumer.c" ${flags} -o "${WORK_DIR}/consumer_c")
execute_process(COMMAND "${WORK_DIR}/consumer_c" WORKING_DIRECTORY "${WORK_DIR}"
  RESULT_VARIABLE result OUTPUT_VARIABLE output ERROR_VARIABLE output)
if(NOT result EQUAL 0 OR NOT output MATCHES "consumer_c: ok")
  message(FATAL_ERROR "install test: consumer_c failed (${result}):\n${output}")
endif()
message(STATUS "install test: ${output}")

# Python: the module where Debian's python3 looks under this prefix
# (lib/python3.X/dist-packages), imported from there alone; its record()
# runs the installed tracecorn command (PREFIX/bin).
file(GLOB python_modules "${prefix}/lib/python3*/dist-packages/tracecorn.*.so")
if(python_modules)
  list(GET python_modules 0 python_module)
  get_filename_component(python_dir "${python_module}" DIRECTORY)
  run_step("import tracecorn" "${CMAKE_COMMAND}" -E env "PYTHONPATH=${python_dir}" /usr/bin/python3 -c
    "import tracecorn, sys, os; assert tracecorn.__file__.startswith(sys.argv[1]); \
trace = os.path.join(sys.argv[1], 'true.ucir'); \
assert tracecorn.record(['/bin/true'], output=trace) == 0 and len(tracecorn.open(trace)) > 0; \
print(tracecorn.__version__)" "${prefix}")
elseif(EXISTS "${BUILD_DIR}/python")
  message(FATAL_ERROR "install test: the build has a Python module, and it was not installed under ${prefix}")
endif()
file(REMOVE_RECURSE "${WORK_DIR}")
