# recorder/debug tests (the time-travel debugger), included from
# tests/CMakeLists.txt: doctest cases in unit_tests, and gdb itself against
# `tracecorn debug`, compared with a native gdb session of the same program.
target_sources(unit_tests PRIVATE
  recorder/debug/time_travel_test.cpp
  recorder/debug/gdb_session_test.cpp
  recorder/debug/why_test.cpp)
target_link_libraries(unit_tests PRIVATE tracecorn_debug)
# One gdb check per architecture: NAME.<arch> runs SCRIPT over the static
# build of SAMPLE (for the host's architecture natively, for the others with
# qemu-<arch>-static, which the scripts use for their reference sessions).
function(tracecorn_add_gdb_check name script sample)
  foreach(arch IN LISTS TRACECORN_TEST_HOST_ARCHITECTURE TRACECORN_TEST_CROSS_ARCHITECTURES)
    set(program ${CMAKE_BINARY_DIR}/samples/guest-${arch}/static/${sample})
    set(qemu /usr/bin/qemu-${arch}-static)
    if(arch STREQUAL TRACECORN_TEST_HOST_ARCHITECTURE)
      set(program ${CMAKE_BINARY_DIR}/samples/guest/static/${sample})
      set(qemu "")
    endif()
    add_test(NAME ${name}.${arch} COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/recorder/debug/${script}
      $<TARGET_FILE:tracecorn> ${arch} ${program} ${CMAKE_CURRENT_BINARY_DIR}/${name}/${arch} ${qemu})
    set_tests_properties(${name}.${arch} PROPERTIES SKIP_RETURN_CODE 77)
  endforeach()
endfunction()
# gdb on `tracecorn debug` against a reference session of the same sample:
# native gdb on the host, gdb-multiarch on qemu-<arch>-static -g for the others
# (check_gdb_session.py says what is compared).
tracecorn_add_gdb_check(debug_gdb check_gdb_session.py nested_calls)
# gdb on `tracecorn debug` over a multi-threaded trace (debug_threads), against
# the trace's own events and a reference backtrace (check_gdb_threads.py).
tracecorn_add_gdb_check(debug_gdb_threads check_gdb_threads.py debug_threads)
# gdb on `tracecorn debug` over a recorded process tree (debug_processes: fork,
# exec, vfork): follow-fork-mode, detach-on-fork and catch fork/vfork/exec
# against the trace's fork events and, on the host, native gdb
# (check_gdb_processes.py).
tracecorn_add_gdb_check(debug_gdb_processes check_gdb_processes.py debug_processes)
# ... and the dynamically linked PIE on the host: gdb relocates a child by the
# auxiliary vector it inherits from its parent (its trace starts mid-run).
add_test(NAME debug_gdb_processes.${TRACECORN_TEST_HOST_ARCHITECTURE}.dynamic COMMAND /usr/bin/python3
  ${CMAKE_CURRENT_SOURCE_DIR}/recorder/debug/check_gdb_processes.py $<TARGET_FILE:tracecorn>
  ${TRACECORN_TEST_HOST_ARCHITECTURE} ${CMAKE_BINARY_DIR}/samples/guest/dynamic/debug_processes
  ${CMAKE_CURRENT_BINARY_DIR}/debug_gdb_processes/${TRACECORN_TEST_HOST_ARCHITECTURE}.dynamic)
set_tests_properties(debug_gdb_processes.${TRACECORN_TEST_HOST_ARCHITECTURE}.dynamic PROPERTIES SKIP_RETURN_CODE 77)
# LLDB on `tracecorn debug` against LLDB running the program natively (the host only).
add_test(NAME debug_lldb.${TRACECORN_TEST_HOST_ARCHITECTURE} COMMAND /usr/bin/python3
  ${CMAKE_CURRENT_SOURCE_DIR}/recorder/debug/check_lldb_session.py $<TARGET_FILE:tracecorn>
  ${CMAKE_BINARY_DIR}/samples/guest/static/nested_calls ${CMAKE_CURRENT_BINARY_DIR}/debug_lldb)
set_tests_properties(debug_lldb.${TRACECORN_TEST_HOST_ARCHITECTURE} PROPERTIES SKIP_RETURN_CODE 77)
# The command line: refusals (a blocks-level trace, a bad address, a missing file) and --help.
add_test(NAME debug_cli COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/recorder/debug/check_debug_cli.py
  $<TARGET_FILE:tracecorn> ${CMAKE_BINARY_DIR}/samples/guest/static/hello ${CMAKE_CURRENT_BINARY_DIR}/debug_cli)
# `tracecorn why` on the command line: JSON and text answers on why_flow, refusals.
add_test(NAME why_cli COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/recorder/debug/check_why_cli.py
  $<TARGET_FILE:tracecorn> ${CMAKE_BINARY_DIR}/samples/guest/static/why_flow ${CMAKE_CURRENT_BINARY_DIR}/why_cli)
