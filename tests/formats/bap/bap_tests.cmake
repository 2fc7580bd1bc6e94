# BAP frames (formats/bap) tests, included from tests/CMakeLists.txt: golden
# bytes, malicious inputs, the direct encoder against the generated code and
# round trips in unit_tests (the round trips also decode a trace with
# frames_decode.py, Debian's python3-protobuf), and the
# operand check of the machine_operands sample against gdb (check_operands.py).
target_sources(unit_tests PRIVATE formats/bap/bap_test.cpp formats/bap/bap_roundtrip_test.cpp formats/bap/bap_encoders_test.cpp
  formats/bap/frames_wire_test.cpp)
# frames_wire_test compares the direct encoder's bytes with the generated code's.
target_link_libraries(unit_tests PRIVATE tracecorn_format_bap tracecorn_bap_frames_proto)
target_compile_definitions(unit_tests PRIVATE
  TRACECORN_BAP_DECODER="${CMAKE_CURRENT_SOURCE_DIR}/formats/bap/frames_decode.py")
# heap and stdio_buffered, compared as they stream: their own ctest, beside the rest.
add_test(NAME bap_roundtrip_long_runs COMMAND unit_tests "-tc=BAP frames long runs*")
set_tests_properties(bap_roundtrip_long_runs PROPERTIES TIMEOUT 1200)
add_test(NAME bap_operands
  COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/formats/bap/check_operands.py $<TARGET_FILE:tracecorn>
          ${CMAKE_BINARY_DIR}/samples/guest/static/machine_operands ${CMAKE_CURRENT_BINARY_DIR}/bap_operands)
# `tracecorn record --format frames` then `tracecorn dump`, plain, zstd and cut short.
add_test(NAME frames_cli COMMAND ${CMAKE_COMMAND} -DTRACECORN=$<TARGET_FILE:tracecorn>
  -DSAMPLE=${CMAKE_BINARY_DIR}/samples/guest/static/hello -DWORK_DIR=${CMAKE_CURRENT_BINARY_DIR}/frames_cli
  -P ${CMAKE_CURRENT_SOURCE_DIR}/formats/bap/check_frames_cli.cmake)
