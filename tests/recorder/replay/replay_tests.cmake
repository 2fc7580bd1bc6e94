# recorder/replay tests (one reader API, state at any event, replay, tools),
# included from tests/CMakeLists.txt: doctest cases in unit_tests.
target_sources(unit_tests PRIVATE
  recorder/replay/trace_reader_test.cpp
  recorder/replay/trace_index_test.cpp
  recorder/replay/trace_index_file_test.cpp
  recorder/replay/replayer_test.cpp
  recorder/replay/replayer_cross_test.cpp
  recorder/replay/replayer_threads_test.cpp
  recorder/replay/trace_tools_test.cpp
  recorder/replay/read_ahead_test.cpp)
target_link_libraries(unit_tests PRIVATE tracecorn_replay)
# The commands that read traces back (replay, stat, convert, exports), on good and damaged traces.
add_test(NAME replay_cli COMMAND ${CMAKE_COMMAND} -DTRACECORN=$<TARGET_FILE:tracecorn>
  -DSAMPLE=${CMAKE_BINARY_DIR}/samples/guest/static/hello -DWORK_DIR=${CMAKE_CURRENT_BINARY_DIR}/replay_cli
  -P ${CMAKE_CURRENT_SOURCE_DIR}/recorder/replay/check_replay_cli.cmake)
# Every sample in every format, replayed (about 25 s): its own ctest entry, in parallel with the rest.
add_test(NAME replay_long_runs COMMAND unit_tests "-tc=Replay long runs: every sample*")
# The same per other architecture and link variant of its samples (tests/architectures.cmake; the
# cases are replayer_cross_test.cpp's, one per row of tests/support/architectures.h): one entry each,
# but aarch64's static-pie, which replayer_cross_test.cpp's is_replayed leaves out too.
foreach(arch IN LISTS TRACECORN_TEST_CROSS_ARCHITECTURES)
  foreach(variant IN LISTS TRACECORN_TEST_SAMPLE_VARIANTS_${arch})
    if(arch STREQUAL "aarch64" AND variant STREQUAL "static-pie")
      continue()
    endif()
    add_test(NAME replay_long_runs.${arch}.${variant} COMMAND unit_tests "-tc=Replay long runs: ${arch} ${variant}:*")
  endforeach()
endforeach()
# The thread samples on every architecture, following their recorded schedules (replayer_threads_test.cpp).
add_test(NAME replay_long_runs.threads COMMAND unit_tests "-tc=Replay long runs: threads:*")
# stat's events by thread against a brute-force count over the dump, and dump --thread, in every format.
add_test(NAME thread_counts COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/recorder/replay/check_thread_counts.py
  $<TARGET_FILE:tracecorn> ${CMAKE_BINARY_DIR}/samples/guest/static ${CMAKE_CURRENT_BINARY_DIR}/thread_counts)
# dump's filters (--kind, --range, --events) against the unfiltered dump, in every format.
add_test(NAME dump_filters COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/recorder/replay/check_dump_filters.py
  $<TARGET_FILE:tracecorn> ${CMAKE_BINARY_DIR}/samples/guest/static/hello ${CMAKE_CURRENT_BINARY_DIR}/dump_filters)
# The progress line: on a pseudo-terminal (util-linux's script), never in pipes.
add_test(NAME trace_progress COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/recorder/replay/check_progress.py
  $<TARGET_FILE:tracecorn> ${CMAKE_BINARY_DIR}/samples/guest/static/hello ${CMAKE_CURRENT_BINARY_DIR}/trace_progress)
# The mutated-trace campaign: seeded mutations of a sample's trace in every format through dump,
# stat, replay, convert and the exports; no crash, no sanitizer report (scripts/asan.sh runs it
# too), a message naming the file, no output left by a failed convert or export.
add_test(NAME mutated_traces COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/recorder/replay/check_mutated_traces.py
  $<TARGET_FILE:tracecorn> ${CMAKE_BINARY_DIR}/samples/guest/static/hello ${CMAKE_CURRENT_BINARY_DIR}/mutated_traces)
set_tests_properties(mutated_traces PROPERTIES
  ENVIRONMENT "TRACECORN_TEST_TIMEOUT_SCALE=$<IF:$<BOOL:${TRACECORN_TEST_TIMEOUT_SCALE}>,${TRACECORN_TEST_TIMEOUT_SCALE},1>")
# Signal and thread events in dump (--kind signal, --thread), stat and convert, in every format.
add_test(NAME signal_dump COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/recorder/replay/check_signal_dump.py
  $<TARGET_FILE:tracecorn> ${CMAKE_BINARY_DIR}/samples/guest/static/signal_handlers ${CMAKE_CURRENT_BINARY_DIR}/signal_dump)
