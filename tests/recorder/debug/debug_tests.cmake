# recorder/debug tests (the time-travel debugger), included from
# tests/CMakeLists.txt: doctest cases in unit_tests, and gdb itself against
# `tracecorn debug`, compared with a native gdb session of the same program.
target_sources(unit_tests PRIVATE
  recorder/debug/time_travel_test.cpp
  recorder/debug/gdb_session_test.cpp
  recorder/debug/why_test.cpp)
target_link_libraries(unit_tests PRIVATE tracecorn_debug)
# gdb on `tracecorn debug` against a reference session of the same sample:
# native gdb on the host, gdb-multiarch on qemu-<arch>-static -g for the others
# (check_gdb_session.py says what is compared); one entry per architecture.
add_test(NAME debug_gdb.${TRACECORN_TEST_HOST_ARCHITECTURE} COMMAND /usr/bin/python3
  ${CMAKE_CURRENT_SOURCE_DIR}/recorder/debug/check_gdb_session.py $<TARGET_FILE:tracecorn>
  ${TRACECORN_TEST_HOST_ARCHITECTURE} ${CMAKE_BINARY_DIR}/samples/guest/static/nested_calls
  ${CMAKE_CURRENT_BINARY_DIR}/debug_gdb/${TRACECORN_TEST_HOST_ARCHITECTURE})
foreach(arch IN LISTS TRACECORN_TEST_CROSS_ARCHITECTURES)
  add_test(NAME debug_gdb.${arch} COMMAND /usr/bin/python3
    ${CMAKE_CURRENT_SOURCE_DIR}/recorder/debug/check_gdb_session.py $<TARGET_FILE:tracecorn> ${arch}
    ${CMAKE_BINARY_DIR}/samples/guest-${arch}/static/nested_calls ${CMAKE_CURRENT_BINARY_DIR}/debug_gdb/${arch}
    /usr/bin/qemu-${arch}-static)
  set_tests_properties(debug_gdb.${arch} PROPERTIES SKIP_RETURN_CODE 77)
endforeach()
set_tests_properties(debug_gdb.${TRACECORN_TEST_HOST_ARCHITECTURE} PROPERTIES SKIP_RETURN_CODE 77)
# gdb on `tracecorn debug` over a multi-threaded trace (debug_threads), against
# the trace's own events and a reference backtrace (check_gdb_threads.py).
add_test(NAME debug_gdb_threads.${TRACECORN_TEST_HOST_ARCHITECTURE} COMMAND /usr/bin/python3
  ${CMAKE_CURRENT_SOURCE_DIR}/recorder/debug/check_gdb_threads.py $<TARGET_FILE:tracecorn>
  ${TRACECORN_TEST_HOST_ARCHITECTURE} ${CMAKE_BINARY_DIR}/samples/guest/static/debug_threads
  ${CMAKE_CURRENT_BINARY_DIR}/debug_gdb_threads/${TRACECORN_TEST_HOST_ARCHITECTURE})
set_tests_properties(debug_gdb_threads.${TRACECORN_TEST_HOST_ARCHITECTURE} PROPERTIES SKIP_RETURN_CODE 77)
foreach(arch IN LISTS TRACECORN_TEST_CROSS_ARCHITECTURES)
  add_test(NAME debug_gdb_threads.${arch} COMMAND /usr/bin/python3
    ${CMAKE_CURRENT_SOURCE_DIR}/recorder/debug/check_gdb_threads.py $<TARGET_FILE:tracecorn> ${arch}
    ${CMAKE_BINARY_DIR}/samples/guest-${arch}/static/debug_threads ${CMAKE_CURRENT_BINARY_DIR}/debug_gdb_threads/${arch}
    /usr/bin/qemu-${arch}-static)
  set_tests_properties(debug_gdb_threads.${arch} PROPERTIES SKIP_RETURN_CODE 77)
endforeach()
# The command line: refusals (a blocks-level trace, a bad address, a missing file) and --help.
add_test(NAME debug_cli COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/recorder/debug/check_debug_cli.py
  $<TARGET_FILE:tracecorn> ${CMAKE_BINARY_DIR}/samples/guest/static/hello ${CMAKE_CURRENT_BINARY_DIR}/debug_cli)
# `tracecorn why` on the command line: JSON and text answers on why_flow, refusals.
add_test(NAME why_cli COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/recorder/debug/check_why_cli.py
  $<TARGET_FILE:tracecorn> ${CMAKE_BINARY_DIR}/samples/guest/static/why_flow ${CMAKE_CURRENT_BINARY_DIR}/why_cli)
