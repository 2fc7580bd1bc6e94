# Role: driver of the fuzz tests (cmake -P, run by ctest; see CMakeLists.txt).
# MODE=fuzz:   runs the libFuzzer harness (-seed=1 -max_total_time=60) until it
#              finds the parser's crash; checks that libFuzzer saved an input
#              that has the magic "TC\x01" and a "negative" length byte.
# MODE=replay: runs fuzz_replay on INPUT, a known crashing input.
# Either way it then checks the harness's report on stderr and the flight
# recorder's trace (TRACECORN_CRASH_TRACE): its last events are the fault at
# FAULT_PC (the store past the buffer, at FAULT_ADDRESS) and the exit by
# SIGSEGV, preceded by the parser's instructions (in [PARSER_START,
# PARSER_END)), among them earlier executions of the faulting store.
# Inputs (-D): MODE, HARNESS, WORK_DIR, FAULT_PC, FAULT_ADDRESS, PARSER_START,
# PARSER_END, and INPUT for MODE=replay.
cmake_minimum_required(VERSION 3.25)

function(fail message)
  message(FATAL_ERROR "${MODE} test: ${message}")
endfunction()

file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")
set(trace "${WORK_DIR}/crash-trace.txt")
set(ENV{TRACECORN_CRASH_TRACE} "${trace}")

string(TIMESTAMP started "%s")
if(MODE STREQUAL "fuzz")
  execute_process(COMMAND "${HARNESS}" -seed=1 -max_total_time=60 "-artifact_prefix=${WORK_DIR}/"
    WORKING_DIRECTORY "${WORK_DIR}" RESULT_VARIABLE result OUTPUT_VARIABLE output ERROR_VARIABLE output
    TIMEOUT 85)
elseif(MODE STREQUAL "replay")
  execute_process(COMMAND "${HARNESS}" "${INPUT}"
    WORKING_DIRECTORY "${WORK_DIR}" RESULT_VARIABLE result OUTPUT_VARIABLE output ERROR_VARIABLE output
    TIMEOUT 30)
else()
  fail("MODE must be fuzz or replay")
endif()
string(TIMESTAMP ended "%s")
math(EXPR seconds "${ended} - ${started}")

if(result EQUAL 0)
  fail("the harness found no crash in ${seconds} s:\n${output}")
endif()
set(report "fuzz_harness: guest killed by SIGSEGV: write to unmapped memory at address ${FAULT_ADDRESS}, "
           "pc ${FAULT_PC}")
string(JOIN "" report ${report})
if(NOT output MATCHES "${report}\n" OR NOT output MATCHES "flight-recorder trace written to")
  fail("the harness did not report the fault as\n  ${report}\nOutput:\n${output}")
endif()

if(MODE STREQUAL "fuzz")
  if(NOT output MATCHES "libFuzzer: deadly signal")
    fail("libFuzzer did not report the crash:\n${output}")
  endif()
  file(GLOB crashes "${WORK_DIR}/crash-[0-9a-f][0-9a-f]*")
  list(LENGTH crashes crash_count)
  if(NOT crash_count EQUAL 1)
    fail("expected one crash input in ${WORK_DIR}, found ${crash_count}")
  endif()
  file(READ "${crashes}" crash_hex HEX)
  if(NOT crash_hex MATCHES "^544301[89a-f]")
    fail("the saved input ${crash_hex} does not start with TC\\x01 and a length byte >= 0x80")
  endif()
  string(REGEX MATCHALL "#[0-9]+\t[^\n]*exec/s[^\n]*" statuses "${output}")
  set(last_status "")
  if(statuses)
    list(GET statuses -1 last_status)
  endif()
  message(STATUS "fuzz test: crash found in ${seconds} s (${last_status}); input ${crash_hex}")
endif()

if(NOT EXISTS "${trace}")
  fail("no trace at ${trace}")
endif()
file(STRINGS "${trace}" lines REGEX "^#[0-9]")
list(LENGTH lines count)
if(count LESS 10)
  fail("the trace has ${count} events:\n${lines}")
endif()
math(EXPR last "${count} - 1")
math(EXPR before_last "${count} - 2")
list(GET lines ${last} exit_line)
list(GET lines ${before_last} fault_line)
if(NOT exit_line MATCHES "^#[0-9]+ exit signal 11$")
  fail("the trace does not end with the exit by SIGSEGV: ${exit_line}")
endif()
if(NOT fault_line MATCHES "^#[0-9]+ fault pc ${FAULT_PC} address ${FAULT_ADDRESS} signal 11: ")
  fail("the event before the exit is not the fault at pc ${FAULT_PC}, address ${FAULT_ADDRESS}: ${fault_line}")
endif()

# The instructions before the fault: the parser's, the nearest one just before
# the faulting store, and the store itself among the earlier ones.
set(instructions "")
foreach(line IN LISTS lines)
  if(line MATCHES "^#[0-9]+ insn (0x[0-9a-f]+) ")
    list(APPEND instructions "${CMAKE_MATCH_1}")
  endif()
endforeach()
list(LENGTH instructions instruction_count)
if(instruction_count LESS 20)
  fail("only ${instruction_count} instructions in the trace")
endif()
math(EXPR first_checked "${instruction_count} - 20")
list(SUBLIST instructions ${first_checked} 20 last_instructions)
foreach(address IN LISTS last_instructions)
  if(address LESS PARSER_START OR NOT address LESS PARSER_END)
    fail("instruction ${address} before the fault is outside the parser [${PARSER_START}, ${PARSER_END})")
  endif()
endforeach()
list(GET instructions -1 nearest)
if(NOT nearest LESS FAULT_PC)
  fail("the last instruction before the fault, ${nearest}, is not before the faulting store ${FAULT_PC}")
endif()
if(NOT FAULT_PC IN_LIST last_instructions)
  fail("the faulting store ${FAULT_PC} did not run before in the last 20 instructions: ${last_instructions}")
endif()
message(STATUS "${MODE} test: trace ends with ${fault_line}")
