# recorder/python tests (`import tracecorn`), included from tests/CMakeLists.txt:
# pytest (Debian's python3-pytest) over traces the CLI records of a sample,
# one entry per architecture (test_trace_reading.py says what is compared).
if(TARGET tracecorn_python)
  set(python_arches ${TRACECORN_TEST_HOST_ARCHITECTURE} ${TRACECORN_TEST_CROSS_ARCHITECTURES})
  foreach(arch IN LISTS python_arches)
    if(arch STREQUAL TRACECORN_TEST_HOST_ARCHITECTURE)
      set(sample ${CMAKE_BINARY_DIR}/samples/guest/static/hello)
    else()
      set(sample ${CMAKE_BINARY_DIR}/samples/guest-${arch}/static/hello)
    endif()
    add_test(NAME python_reading.${arch}
      COMMAND /usr/bin/python3 -m pytest -q -p no:cacheprovider
        ${CMAKE_CURRENT_SOURCE_DIR}/recorder/python/test_trace_reading.py)
    set_tests_properties(python_reading.${arch} PROPERTIES TIMEOUT 120 ENVIRONMENT
      "PYTHONPATH=$<TARGET_FILE_DIR:tracecorn_python>;TRACECORN=$<TARGET_FILE:tracecorn>;TRACECORN_SAMPLE=${sample};TRACECORN_ARCH=${arch};PYTHONDONTWRITEBYTECODE=1")
  endforeach()
endif()
# tracecorn.attach on an engine of Debian's python3-unicorn, against the C++
# embedding example's trace of the same snippet (test_recording.py).
if(TARGET tracecorn_python AND TARGET embed_example)
  add_test(NAME python_recording
    COMMAND /usr/bin/python3 -m pytest -q -p no:cacheprovider ${CMAKE_CURRENT_SOURCE_DIR}/recorder/python/test_recording.py)
  set_tests_properties(python_recording PROPERTIES TIMEOUT 60 ENVIRONMENT
    "PYTHONPATH=$<TARGET_FILE_DIR:tracecorn_python>;EMBED_EXAMPLE=$<TARGET_FILE:embed_example>;PYTHONDONTWRITEBYTECODE=1")
endif()
# Trace.why() on why_flow, against what the sample's construction says and `tracecorn why --json` (test_why.py).
if(TARGET tracecorn_python)
  add_test(NAME python_why
    COMMAND /usr/bin/python3 -m pytest -q -p no:cacheprovider ${CMAKE_CURRENT_SOURCE_DIR}/recorder/python/test_why.py)
  set_tests_properties(python_why PROPERTIES TIMEOUT 120 ENVIRONMENT
    "PYTHONPATH=$<TARGET_FILE_DIR:tracecorn_python>;TRACECORN=$<TARGET_FILE:tracecorn>;WHY_FLOW=${CMAKE_BINARY_DIR}/samples/guest/static/why_flow;PYTHONDONTWRITEBYTECODE=1")
endif()
# tracecorn.record() of hello against the CLI's own recording and the native run (test_record_program.py).
if(TARGET tracecorn_python)
  add_test(NAME python_record_program
    COMMAND /usr/bin/python3 -m pytest -q -p no:cacheprovider ${CMAKE_CURRENT_SOURCE_DIR}/recorder/python/test_record_program.py)
  set_tests_properties(python_record_program PROPERTIES TIMEOUT 120 ENVIRONMENT
    "PYTHONPATH=$<TARGET_FILE_DIR:tracecorn_python>;TRACECORN=$<TARGET_FILE:tracecorn>;TRACECORN_SAMPLE=${CMAKE_BINARY_DIR}/samples/guest/static/hello;PYTHONDONTWRITEBYTECODE=1")
endif()
