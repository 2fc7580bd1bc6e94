# The unwinder's tests (included by tests/CMakeLists.txt): unit tests in
# unit_tests, comparing with readelf, objdump, gdb and (other architectures,
# cross_stacks_test.cpp) gdb-multiarch on qemu-user's gdb stub.
target_sources(unit_tests PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/cfi_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/cross_stacks_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/dwarf_expression_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/ehabi_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/prologue_unwind_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/sframe_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/signal_stacks_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/stacks_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/symbolizer_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/unwinder_signal_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/unwinder_test.cpp)
target_link_libraries(unit_tests PRIVATE tracecorn_unwind tracecorn_guest_stacks)
target_include_directories(unit_tests PRIVATE ${PROJECT_SOURCE_DIR})
target_compile_definitions(unit_tests PRIVATE
  TRACECORN_UNWIND_SAMPLES_DIR="${TRACECORN_UNWIND_SAMPLES_DIR}"
  TRACECORN_UNWIND_TEST_DIR="${CMAKE_CURRENT_LIST_DIR}"
  TRACECORN_CLI="$<TARGET_FILE:tracecorn>")
add_dependencies(unit_tests unwind_samples tracecorn)
