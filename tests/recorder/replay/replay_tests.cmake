# recorder/replay tests (one reader API, state at any event, replay, tools),
# included from tests/CMakeLists.txt: doctest cases in unit_tests.
target_sources(unit_tests PRIVATE
  recorder/replay/trace_reader_test.cpp
  recorder/replay/trace_index_test.cpp
  recorder/replay/replayer_test.cpp
  recorder/replay/trace_tools_test.cpp)
target_link_libraries(unit_tests PRIVATE tracecorn_replay)
