# Role: the Debian package's test (cmake -P), run by ctest (tests/install/CMakeLists.txt).
# 1. `cpack -G DEB` in the build folder (cmake/tracecorn_packaging.cmake), the
#    package written under WORK_DIR;
# 2. `dpkg -x` of the .deb into WORK_DIR/root (a scratch root: nothing is
#    installed on the machine);
# 3. checks what it holds (the CLI, the static libraries, the headers, the CMake
#    package and tracecorn.pc under usr/) and its Depends (Unicorn and
#    Capstone, from dpkg-shlibdeps);
# 4. runs WORK_DIR/root/usr/bin/tracecorn --version, which must name VERSION.
# Any failing step fails the test with its output. cpack first runs the build's
# "preinstall" target, which is up to date after a build: a few seconds.
# Inputs (-D): BUILD_DIR, WORK_DIR, VERSION.
cmake_minimum_required(VERSION 3.25)

foreach(variable BUILD_DIR WORK_DIR VERSION)
  if(NOT DEFINED ${variable})
    message(FATAL_ERROR "run_deb_test.cmake: -D${variable}=... is required")
  endif()
endforeach()

# Runs a command; fails the test with its output unless it exits 0.
function(run_step name)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE result OUTPUT_VARIABLE output ERROR_VARIABLE error)
  if(NOT result EQUAL 0)
    message(FATAL_ERROR "deb test: ${name} failed (${result}):\n${ARGN}\n${output}\n${error}")
  endif()
  message(STATUS "deb test: ${name}: ok")
  set(step_output "${output}" PARENT_SCOPE)
endfunction()

file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")
cmake_path(GET CMAKE_COMMAND PARENT_PATH cmake_bin)
find_program(CPACK cpack HINTS "${cmake_bin}" REQUIRED)
run_step("cpack -G DEB" "${CPACK}" -G DEB --config "${BUILD_DIR}/CPackConfig.cmake" -B "${WORK_DIR}")
file(GLOB debs "${WORK_DIR}/tracecorn_*.deb")
list(LENGTH debs count)
if(NOT count EQUAL 1)
  message(FATAL_ERROR "deb test: expected one tracecorn_*.deb in ${WORK_DIR}, found: ${debs}")
endif()
list(GET debs 0 deb)
string(REGEX MATCH "tracecorn_${VERSION}_[a-z0-9]+\\.deb$" named "${deb}")
if(NOT named)
  message(FATAL_ERROR "deb test: ${deb} is not named tracecorn_${VERSION}_<arch>.deb")
endif()

run_step("dpkg-deb -f Depends" dpkg-deb -f "${deb}" Depends)
foreach(dependency libunicorn2 libcapstone4)
  string(FIND "${step_output}" "${dependency}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "deb test: Depends does not name ${dependency}: ${step_output}")
  endif()
endforeach()

set(root "${WORK_DIR}/root")
run_step("dpkg -x" dpkg -x "${deb}" "${root}")
foreach(expected usr/bin/tracecorn usr/include/tracecorn/recorder/core/recorder.h
        usr/include/tracecorn/recorder/capi/tracecorn.h)
  if(NOT EXISTS "${root}/${expected}")
    message(FATAL_ERROR "deb test: the package has no ${expected}")
  endif()
endforeach()
set(patterns "usr/lib*/libtracecorn_core.a" "usr/lib*/cmake/tracecorn/tracecorn-config.cmake"
  "usr/lib*/pkgconfig/tracecorn.pc")
if(EXISTS "${BUILD_DIR}/python")  # the module, where Debian's python3 finds it
  list(APPEND patterns "usr/lib/python3/dist-packages/tracecorn.cpython-*.so")
endif()
foreach(pattern IN LISTS patterns)
  string(REPLACE "*" "[^/]*(/[^/]+)?" regex "${pattern}")
  file(GLOB_RECURSE found LIST_DIRECTORIES false RELATIVE "${root}" "${root}/usr/*")
  list(FILTER found INCLUDE REGEX "^${regex}$")
  if(NOT found)
    message(FATAL_ERROR "deb test: the package has no ${pattern}")
  endif()
endforeach()

# The CLI links Debian's shared libraries only (ours are static): no LD_LIBRARY_PATH.
run_step("tracecorn --version" "${root}/usr/bin/tracecorn" --version)
string(FIND "${step_output}" "tracecorn ${VERSION}\n" at)
if(NOT at EQUAL 0)
  message(FATAL_ERROR "deb test: the packaged tracecorn --version says: ${step_output}")
endif()
message(STATUS "deb test: ${deb}: ${step_output}")
