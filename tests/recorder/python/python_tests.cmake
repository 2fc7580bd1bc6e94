# recorder/python tests (`import tracecorn`), included from tests/CMakeLists.txt:
# pytest (Debian's python3-pytest) files under tests/recorder/python, each
# saying what it compares; the module comes from the build tree (PYTHONPATH).
if(NOT TARGET tracecorn_python)
  return()
endif()

# Adds ctest entry `name` running the pytest file `file` with the variables
# `ARGN` (NAME=VALUE each) besides PYTHONPATH and the CLI's TRACECORN.
function(tracecorn_python_test name file)
  add_test(NAME ${name}
    COMMAND /usr/bin/python3 -m pytest -q -p no:cacheprovider ${CMAKE_CURRENT_SOURCE_DIR}/recorder/python/${file})
  set_tests_properties(${name} PROPERTIES TIMEOUT 120 ENVIRONMENT
    "PYTHONPATH=$<TARGET_FILE_DIR:tracecorn_python>;TRACECORN=$<TARGET_FILE:tracecorn>;PYTHONDONTWRITEBYTECODE=1;${ARGN}")
endfunction()

# Reading and queries over traces the CLI records of hello, one entry per architecture.
foreach(arch IN LISTS TRACECORN_TEST_HOST_ARCHITECTURE TRACECORN_TEST_CROSS_ARCHITECTURES)
  if(arch STREQUAL TRACECORN_TEST_HOST_ARCHITECTURE)
    set(sample ${CMAKE_BINARY_DIR}/samples/guest/static/hello)
  else()
    set(sample ${CMAKE_BINARY_DIR}/samples/guest-${arch}/static/hello)
  endif()
  tracecorn_python_test(python_reading.${arch} test_trace_reading.py TRACECORN_SAMPLE=${sample} TRACECORN_ARCH=${arch})
endforeach()
# tracecorn.attach on an engine of Debian's python3-unicorn, against the C++
# embedding example's trace of the same snippet.
if(TARGET embed_example)
  tracecorn_python_test(python_recording test_recording.py EMBED_EXAMPLE=$<TARGET_FILE:embed_example>)
endif()
# Trace.why() on why_flow, against what the sample's construction says and `tracecorn why --json`.
tracecorn_python_test(python_why test_why.py WHY_FLOW=${CMAKE_BINARY_DIR}/samples/guest/static/why_flow)
# tracecorn.record() of hello against the CLI's own recording and the native run.
tracecorn_python_test(python_record_program test_record_program.py
  TRACECORN_SAMPLE=${CMAKE_BINARY_DIR}/samples/guest/static/hello)
# Trace.column() from the column cache against passes of the reader, on debug_threads (three threads).
tracecorn_python_test(python_column_cache test_column_cache.py
  TRACECORN_SAMPLE=${CMAKE_BINARY_DIR}/samples/guest/static/debug_threads)
